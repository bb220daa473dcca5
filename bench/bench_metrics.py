#!/usr/bin/env python
"""chrF, chrF++ and ROUGE: tensortext against sacrebleu, fastchrf, rouge-score and torchmetrics.

Parts, run in one process (each baseline on the host CPU, ours on ``--device``):

* ``chrf``      sentence chrF (and chrF++) of ``B`` pairs of ~``--chars``-character texts: a loop
                of sacrebleu's ``CHRF().sentence_score``, torchmetrics' ``chrf_score`` with
                sentence scores, fastchrf's ``pairwise_chrf`` on ``B`` one-by-one matrices, and
                :func:`~tensortext.chrf.sentence_chrf` from the text (conversion included).
* ``pairwise``  chrF of every pair of ``N`` candidates of ``S`` sentences (MBR's utility
                matrix): ``fastchrf.pairwise_chrf`` against :func:`~tensortext.chrf.pairwise_chrf`.
* ``rouge``     sentence ROUGE-1/2/L of ``B`` pairs of ``--tokens`` tokens: a loop of
                rouge-score's ``RougeScorer.score`` and torchmetrics' ``rouge_score`` against
                :func:`~tensortext.rouge.sentence_rouge`, on token IDs and on text.
* ``cli``       ``sacrebleu REF -i HYP -m bleu chrf`` against ``tensortext bleu REF -i HYP -m bleu
                chrf`` on ``--lines`` lines of text, each a fresh process (start-up included).

Every row checks its scores against the first baseline (the largest absolute difference, on
0..1). Texts are the bundled demo corpus (English MT output and its references).

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_metrics.py --device cpu --threads 1
    PYTHONPATH=src python bench/bench_metrics.py --quick        # smoke test, under a minute

Writes bench/results/metrics-<device-slug>.json and .png.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch

import common

from tensortext.chrf import ChrfConfig, pairwise_chrf, sentence_chrf
from tensortext.padded import pad_ragged, pad_ragged_refs
from tensortext.rouge import RougeConfig, sentence_rouge

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


def demo_lines(name: str) -> list[str]:
    text = resources.files("tensortext").joinpath(f"data/demo/{name}").read_text("utf-8")
    return text.splitlines()


def long_pairs(count: int, chars: int, seed: int) -> tuple[list[str], list[str]]:
    """``count`` (hypothesis, reference) texts of about ``chars`` characters: runs of aligned
    demo lines, joined by spaces."""
    hyps, refs = demo_lines("hyp.txt"), demo_lines("ref.txt")
    rng = random.Random(seed)
    out_h, out_r = [], []
    for _ in range(count):
        start = rng.randrange(len(hyps))
        hyp, ref, line = "", "", start
        while len(hyp) < chars:
            hyp += hyps[line % len(hyps)] + " "
            ref += refs[line % len(refs)] + " "
            line += 1
        out_h.append(hyp.strip())
        out_r.append(ref.strip())
    return out_h, out_r


def perturbed(words: list[str], rng: random.Random) -> str:
    """A sample-like variant of a sentence: a few words dropped, swapped or repeated."""
    out = list(words)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(out))
        action = rng.random()
        if action < 0.4 and len(out) > 2:
            del out[i]
        elif action < 0.7:
            j = rng.randrange(len(out))
            out[i], out[j] = out[j], out[i]
        else:
            out.insert(i, out[i])
    return " ".join(out)


def candidate_lists(sentences: int, num: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    refs = [line for line in demo_lines("ref.txt") if len(line) > 60]
    rows = []
    for _ in range(sentences):
        words = " ".join(rng.choice(refs) for _ in range(2)).split()
        rows.append([perturbed(words, rng) for _ in range(num)])
    return rows


def max_diff(ours: Any, reference: Any) -> float | None:
    """The largest absolute difference, or ``None`` where the two are not the same scores
    (torchmetrics' ROUGE returns corpus means, not sentence scores)."""
    a = np.asarray(ours, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return None
    return float(np.abs(a - b).max()) if a.size else 0.0


def timed_rows(
    part: str,
    fns: dict[str, Callable[[], Any]],
    baseline: str,
    args: argparse.Namespace,
    dev: torch.device,
    extra: dict[str, Any],
) -> list[dict[str, Any]]:
    """Times ``fns`` interleaved; one row each, with its speed-up over and difference from
    ``baseline`` (whose value is the reference scores). The Python baselines take minutes at
    full size: they get no warm-up call and leave the rounds after ``--budget`` seconds (at
    least one sample); ours is warmed up once."""
    warmup = {name: 1 if name.startswith("tensortext") else 0 for name in fns}
    timings, errors = common.time_interleaved(
        fns, warmup=warmup, repeat=args.repeat, device=dev, budget_s=args.budget, min_repeat=1
    )
    rows = []
    base = timings.get(baseline)
    for name in fns:
        row: dict[str, Any] = {"part": part, "impl": name, **extra}
        if name in errors:
            row.update(common.error_fields(errors[name]))
        else:
            timing = timings[name]
            row.update(status="ok", **timing.as_dict())
            if base is not None:
                row["speedup"] = base.median_s / timing.median_s
                row["max_abs_diff"] = max_diff(timing.value, base.value)
        rows.append(row)
        print_row(row)
    return rows


def print_row(row: dict[str, Any]) -> None:
    if row["status"] != "ok":
        print(f"{row['part']:9} {row['impl']:28} {row['status']}: {row.get('reason', '')}")
        return
    speed = common.fmt(row.get("speedup"), ".1f")
    diff = common.fmt(row.get("max_abs_diff"), ".1e")
    print(
        f"{row['part']:9} {row['impl']:28} {row['median_s'] * 1e3:10.2f} ms  x{speed:>7}  "
        f"max|diff| {diff}",
        flush=True,
    )


def bench_chrf(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    from fastchrf import pairwise_chrf as fast_pairwise
    from sacrebleu.metrics import CHRF
    from torchmetrics.functional.text import chrf_score

    hyps, refs = long_pairs(args.pairs, args.chars, seed=0)
    rows = []
    for word_order in (0, 2):
        sacre = CHRF(word_order=word_order)
        config = ChrfConfig(word_order=word_order)
        name = "chrF++" if word_order else "chrF"
        fns: dict[str, Callable[[], Any]] = {
            "sacrebleu loop": lambda s=sacre: [
                s.sentence_score(h, [r]).score / 100 for h, r in zip(hyps, refs, strict=True)
            ],
            # torchmetrics' sentence scores are 0..1 already (and not sacrebleu's numbers).
            "torchmetrics": lambda w=word_order: chrf_score(
                hyps, [[r] for r in refs], n_word_order=w, return_sentence_level_score=True
            )[1],
            "tensortext": lambda c=config: sentence_chrf(hyps, refs, config=c, device=dev).cpu(),
        }
        if word_order == 0:  # fastchrf has no word n-grams
            fns["fastchrf"] = lambda: [
                m[0][0] / 100 for m in fast_pairwise([[h] for h in hyps], [[r] for r in refs])
            ]
        extra = {"metric": name, "pairs": args.pairs, "chars": args.chars}
        rows += timed_rows("chrf", fns, "sacrebleu loop", args, dev, extra)
    return rows


def bench_pairwise(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    from fastchrf import pairwise_chrf as fast_pairwise

    candidates = candidate_lists(args.sentences, args.candidates, seed=1)
    fns: dict[str, Callable[[], Any]] = {
        "fastchrf": lambda: np.asarray(fast_pairwise(candidates, candidates)) / 100,
        "tensortext": lambda: pairwise_chrf(candidates, device=dev).cpu(),
    }
    extra = {"sentences": args.sentences, "candidates": args.candidates}
    return timed_rows("pairwise", fns, "fastchrf", args, dev, extra)


def id_pairs(count: int, tokens: int, seed: int) -> tuple[list[list[int]], list[list[int]]]:
    """Token-ID pairs: Zipf-distributed IDs, each reference a perturbed copy of its hypothesis."""
    rng = np.random.default_rng(seed)
    hyps = [(rng.zipf(1.3, tokens) % 50_000).tolist() for _ in range(count)]
    refs = []
    for hyp in hyps:
        ref = list(hyp)
        for _ in range(tokens // 5):
            ref[int(rng.integers(tokens))] = int(rng.zipf(1.3) % 50_000)
        refs.append(ref)
    return hyps, refs


def bench_rouge(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    from rouge_score.rouge_scorer import RougeScorer
    from torchmetrics.functional.text import rouge_score

    scorer = RougeScorer(list(ROUGE_TYPES))
    config = RougeConfig(rouge_types=ROUGE_TYPES)

    def reference(hyps: list[str], refs: list[str]) -> list[list[list[float]]]:
        out = []
        for hyp, ref in zip(hyps, refs, strict=True):
            scores = scorer.score(ref, hyp)
            out.append([list(scores[key]) for key in ROUGE_TYPES])
        return out

    rows = []
    id_hyps, id_refs = id_pairs(args.pairs, args.tokens, seed=2)
    join = lambda rows: [" ".join(map(str, row)) for row in rows]  # noqa: E731
    text_hyps, text_refs = join(id_hyps), join(id_refs)

    def ours_ids() -> torch.Tensor:
        hyp = pad_ragged(id_hyps, device=dev)
        ref = pad_ragged_refs([[r] for r in id_refs], device=dev)
        return sentence_rouge(hyp, ref, config=config).cpu()

    fns = {"rouge-score loop": lambda: reference(text_hyps, text_refs), "tensortext": ours_ids}
    extra = {"input": "token IDs", "pairs": args.pairs, "tokens": args.tokens}
    rows += timed_rows("rouge", fns, "rouge-score loop", args, dev, extra)

    words_h, words_r = long_pairs(args.pairs, args.tokens * 5, seed=3)

    def torchmetrics_text() -> list[list[list[float]]]:
        scores = rouge_score(
            words_h, words_r, rouge_keys=ROUGE_TYPES, accumulate="best", use_stemmer=False
        )
        return [
            [[float(scores[f"{k}_{m}"])] for m in ("precision", "recall", "fmeasure")]
            for k in ROUGE_TYPES
        ]

    fns = {
        "rouge-score loop": lambda: reference(words_h, words_r),
        "tensortext": lambda: sentence_rouge(words_h, words_r, config=config, device=dev).cpu(),
    }
    if not args.quick:
        fns["torchmetrics (corpus mean)"] = torchmetrics_text
    extra = {"input": "text", "pairs": args.pairs, "words": args.tokens}
    rows += timed_rows("rouge", fns, "rouge-score loop", args, dev, extra)
    return rows


def bench_cli(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    hyps, refs = demo_lines("hyp.txt"), demo_lines("ref.txt")
    rng = random.Random(4)
    order = [rng.randrange(len(hyps)) for _ in range(args.lines)]
    with tempfile.TemporaryDirectory() as tmp:
        hyp_path, ref_path = Path(tmp, "hyp.txt"), Path(tmp, "ref.txt")
        hyp_path.write_text("".join(hyps[i] + "\n" for i in order), encoding="utf-8")
        ref_path.write_text("".join(refs[i] + "\n" for i in order), encoding="utf-8")
        common_args = [str(ref_path), "-i", str(hyp_path), "-m", "bleu", "chrf", "-f", "json"]
        sacrebleu = [sys.executable, "-m", "sacrebleu", *common_args]
        ours = [
            sys.executable,
            "-m",
            "tensortext.cli",
            "bleu",
            *common_args,
            "--device",
            args.device,
        ]

        def run(command: list[str]) -> Callable[[], list[float]]:
            def call() -> list[float]:
                out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
                return [record["score"] / 100 for record in json.loads(out)]

            return call

        fns = {"sacrebleu CLI": run(sacrebleu), "tensortext CLI": run(ours)}
        extra = {"lines": args.lines, "metrics": "bleu chrf"}
        return timed_rows("cli", fns, "sacrebleu CLI", args, dev, extra)


def markdown_report(payload: dict[str, Any]) -> str:
    header = ["part", "workload", "implementation", "median (ms)", "speed-up", "max |diff|"]
    rows = []
    for row in payload["rows"]:
        if row["status"] != "ok":
            continue
        workload = ", ".join(
            f"{key} {row[key]}"
            for key in (
                "metric",
                "input",
                "pairs",
                "chars",
                "tokens",
                "words",
                "sentences",
                "candidates",
                "lines",
            )
            if key in row
        )
        rows.append(
            [
                row["part"],
                workload,
                row["impl"],
                common.fmt(row["median_s"] * 1e3, ".1f"),
                common.fmt(row.get("speedup"), ".1f"),
                common.fmt(row.get("max_abs_diff"), ".1e"),
            ]
        )
    return common.markdown_table(header, rows, "lllrrr")


def plot(payload: dict[str, Any], info: common.DeviceInfo, path: Path) -> Path:
    rows = [row for row in payload["rows"] if row["status"] == "ok"]
    parts = list(dict.fromkeys(row["part"] for row in rows))
    fig, axes = common.new_figure(len(parts), width=5.0)
    for ax, part in zip(axes, parts, strict=True):
        mine = [row for row in rows if row["part"] == part]
        labels = [f"{row['impl']}\n{row.get('metric', row.get('input', ''))}" for row in mine]
        ax.barh(labels, [row["median_s"] for row in mine])
        ax.set_xscale("log")
        ax.set_xlabel("seconds (median, log scale)")
        ax.set_title(part)
    fig.suptitle(f"chrF / ROUGE on {info.name}")
    return common.save_figure(fig, path)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    common.add_arguments(
        parser,
        "metrics",
        threads_help="torch threads on CPU (default: 1)",
        quick_help="small sizes, a smoke test",
        repeat_help="timed rounds per point (default: 5, quick: 2)",
    )
    parser.add_argument("--parts", default="chrf,pairwise,rouge,cli")
    parser.add_argument(
        "--keep-other-parts",
        action="store_true",
        help="keep the rows of the parts not run from the existing result file (rerun one part)",
    )
    parser.add_argument("--pairs", type=int, default=256)
    parser.add_argument("--chars", type=int, default=1000)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--sentences", type=int, default=64)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="timed seconds after which an implementation leaves the rounds (one sample at least)",
    )
    args = common.parse(parser, argv)
    if args.quick:
        args.pairs, args.chars, args.tokens = 16, 300, 128
        args.sentences, args.candidates, args.lines = 4, 8, 2000
    if args.repeat is None:
        args.repeat = 2 if args.quick else 5
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report is not None:
        print(markdown_report(common.read_json(args.report)))
        return 0
    run = common.start(args, cpu_threads=1)
    runners = {
        "chrf": bench_chrf,
        "pairwise": bench_pairwise,
        "rouge": bench_rouge,
        "cli": bench_cli,
    }
    payload: dict[str, Any] = {
        "meta": common.run_metadata(
            run.info, ["sacrebleu", "fastchrf", "rouge-score", "torchmetrics"]
        ),
        "quick": args.quick,
        "rows": [],
    }
    parts = args.parts.split(",")
    if args.keep_other_parts and run.json_path.exists():
        kept = common.read_json(run.json_path)["rows"]
        payload["rows"] = [row for row in kept if row["part"] not in parts]
    for part in parts:
        if run.out_of_time():
            print(f"--time-limit {args.time_limit:g} s reached: {part} not run")
            continue
        payload["rows"] += runners[part](args, run.device)
        common.write_json(run.json_path, payload)
    print(markdown_report(payload))
    print(f"wrote {run.json_path}")
    common.write_plot(args, lambda: plot(payload, run.info, run.png_path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
