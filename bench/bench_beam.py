#!/usr/bin/env python
"""Batched beam search: tensortext vs. Hugging Face ``generate`` (and the paper's Figures 2-3).

Two parts, run in one process and written to one ``beam-<device-slug>.json|png``:

* ``hf``       ``tensortext.decode.hf.generate(model, ...)`` against ``model.generate(...)``
               with the same keywords (``num_beams=K, do_sample=False``...) on the same
               MarianMTModel (random weights, Marian-base size and a tiny one, from marian.py),
               same inputs, timed interleaved.  Both the speed (sentences/s, words/min) and
               whether the outputs are identical (``sequences`` and ``beam_indices`` tensors,
               scores within 1e-5).  This file.
* ``bundled``  the paper's Figures 2-3 with the bundled translator: bench_beam_paper.py.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_beam.py                   # full grid, CUDA if available
    PYTHONPATH=src python bench/bench_beam.py --device cpu --threads 1
    PYTHONPATH=src python bench/bench_beam.py --quick           # smoke test, < 3 minutes on CPU
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import torch
from torch import Tensor

import bench_beam_paper as paper
import common
from marian import (
    MARIANS,
    MAX_NEW_TOKENS,
    QUICK_BASE,
    SOURCE_LENS,
    build_marian,
    hf_hypotheses,
    make_sources,
)

log = logging.getLogger("bench_beam")

SCORE_TOL = 1e-5  # |score difference| above which a sentence counts as a score mismatch
REWARM_BELOW_S = 0.5
TARGET_BEAMS = [4, 12]  # the targets (x HF generate), at --target-batch sentences
FULL_BEAMS = [1, 2, 4, 6, 8, 10, 12]
FULL_BATCHES = [1, 2, 4, 8, 16, 32, 64]
QUICK_BEAMS = [1, 4, 12]
QUICK_BATCHES = [1, 4, 16]
QUICK_CORPUS_BATCHES = [1, 8, 64]


# --------------------------------------------------------------------------- HF vs ours


def words(hyps: Sequence[Sequence[int]], eos_id: int) -> int:
    """Output words: generated tokens without the EOS."""
    return sum(len(h) - (1 if h and h[-1] == eos_id else 0) for h in hyps)


def compare(hf_hyps: list[list[int]], hf_scores: list[float], our_hyps: list[list[int]],
            our_scores: list[float]) -> dict[str, Any]:  # fmt: skip
    """Sentences whose tokens differ, and score differences where the tokens agree."""
    seq_diff = [i for i, (a, b) in enumerate(zip(hf_hyps, our_hyps, strict=True)) if a != b]
    same = sorted(set(range(len(hf_hyps))) - set(seq_diff))
    diffs = [d for i in same if not math.isnan(d := abs(hf_scores[i] - our_scores[i]))]
    score_diff = [i for i in same if abs(hf_scores[i] - our_scores[i]) > SCORE_TOL]
    res: dict[str, Any] = {
        "sentences": len(hf_hyps),
        "sequence_mismatches": len(seq_diff),
        "score_mismatches": len(score_diff),
        "max_abs_score_diff": max(diffs) if diffs else None,
        "identical": not seq_diff and not score_diff,
    }
    first = (seq_diff or score_diff or [None])[0]
    if first is not None:
        a, b = hf_hyps[first], our_hyps[first]
        at = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
        res["first_mismatch"] = {"sentence": first, "first_differing_position": at,
                                 "hf_tokens": a, "ours_tokens": b, "hf_score": hf_scores[first],
                                 "ours_score": our_scores[first]}  # fmt: skip
    return res


def greedy_scores(result: Any, hyps: list[list[int]]) -> list[float]:
    """Greedy search returns no sequence scores: the mean log-softmax of the processed scores
    (``output_scores``) at the chosen tokens, computed the same way for HF and for ours."""
    steps = torch.stack([s.float() for s in result.scores], 1).log_softmax(-1)  # [B, T, V]
    out = []
    for b, row in enumerate(hyps):
        tok = torch.tensor(row, device=steps.device)
        lp = steps[b, torch.arange(len(row), device=steps.device), tok]
        out.append(float(lp.sum()) / len(row) if row else float("nan"))
    return out


def hypotheses_and_scores(
    result: Any, size: Any, beams: int
) -> tuple[list[list[int]], list[float]]:
    """``generate``'s dict output (HF's or ours) -> best hypotheses up to EOS, and their scores."""
    hyps = hf_hypotheses(result.sequences, size.eos_id, size.pad_id)
    if beams > 1:
        return hyps, [float(s) for s in result.sequences_scores.tolist()]
    return hyps, greedy_scores(result, hyps)


def parity(size: Any, hf_call: Callable[..., Any], ours_call: Callable[..., Any],
           beams: int) -> dict[str, Any]:  # fmt: skip
    """One untimed call each (also the first warm-up call); the row's parity fields.

    Both with ``return_dict_in_generate=True, output_scores=True`` (which keeps every step's
    ``[B*K, V]`` scores, so that call is never timed): the ``sequences`` tensors and (K > 1)
    ``beam_indices`` must be identical, the scores close.
    """
    dict_scores = {"return_dict_in_generate": True, "output_scores": True}
    hf_result = hf_call(**dict_scores)
    hf_hyps, hf_scores = hypotheses_and_scores(hf_result, size, beams)
    hf_sequences, hf_beam_indices = hf_result.sequences, getattr(hf_result, "beam_indices", None)
    del hf_result
    ours = ours_call(**dict_scores)
    our_hyps, our_scores = hypotheses_and_scores(ours, size, beams)
    fields = {"parity": compare(hf_hyps, hf_scores, our_hyps, our_scores)}
    fields["parity"]["sequences_identical"] = torch.equal(hf_sequences, ours.sequences)
    if hf_beam_indices is not None:
        fields["parity"]["beam_indices_identical"] = torch.equal(hf_beam_indices, ours.beam_indices)
    checks = ("sequences_identical", "beam_indices_identical")
    fields["parity"]["identical"] &= all(fields["parity"].get(c, True) for c in checks)
    fields["parity"]["scores_from"] = (
        "sequences_scores" if beams > 1 else "log_softmax(scores) of the greedy tokens / len"
    )
    del ours
    fields["mean_output_tokens"] = sum(len(h) for h in hf_hyps) / len(hf_hyps)
    fields["outputs_without_eos"] = sum(not h or h[-1] != size.eos_id for h in hf_hyps)  # HF's
    fields["words"] = {"hf": words(hf_hyps, size.eos_id), "ours": words(our_hyps, size.eos_id)}
    return fields


def run_hf_point(model: Any, size: Any, ids: Tensor, mask: Tensor, batch: int, beams: int,
                 args: argparse.Namespace, dev: torch.device) -> dict[str, Any]:  # fmt: skip
    from tensortext.decode.hf import generate

    input_ids, attention_mask = ids[:batch].to(dev), mask[:batch].to(dev)
    width = int(attention_mask.sum(1).max())
    input_ids, attention_mask = input_ids[:, :width], attention_mask[:, :width]
    kw: dict[str, Any] = {"num_beams": beams, "do_sample": False, "max_new_tokens": MAX_NEW_TOKENS}
    if beams > 1:  # HF's defaults, spelled out (beam-only flags would warn with greedy)
        kw.update(length_penalty=1.0, early_stopping=False)

    def hf_call(**extra: Any) -> Any:
        with torch.inference_mode():
            return model.generate(input_ids, attention_mask=attention_mask, **kw, **extra)

    def ours_call(**extra: Any) -> Any:  # the drop-in: the same call, the same keywords
        with torch.inference_mode():
            return generate(model, input_ids, attention_mask, **kw, **extra)

    row: dict[str, Any] = {"model": size.key, "batch": batch, "beams": beams, "status": "ok"}
    common.synchronize(dev)
    row.update(parity(size, hf_call, ours_call, beams))
    words_of = row.pop("words")
    timings, errors = common.time_interleaved(
        {"hf": hf_call, "ours": ours_call}, warmup=max(args.warmup - 1, 0), repeat=args.repeat,
        device=dev, budget_s=args.budget, min_repeat=args.min_repeat,
        measure_memory=args.warmup >= 2, rewarm_below_s=REWARM_BELOW_S,
    )  # fmt: skip
    if errors:
        row["errors"] = {k: f"{type(e).__name__}: {e}" for k, e in errors.items()}
        row.update(status="error", traceback=common.error_fields(*errors.values())["traceback"])
        return row
    for key, timing in timings.items():
        t = timing.median_s
        row[key] = {**timing.as_dict(), "sentences_per_s": batch / t, "words": words_of[key],
                    "words_per_min": 60.0 * words_of[key] / t}  # fmt: skip
    row["speedup"] = timings["hf"].median_s / timings["ours"].median_s
    row["loadavg_1m_after"] = common.loadavg_1m()
    return row


def hf_grid(args: argparse.Namespace, model_key: str) -> list[tuple[int, int, str]]:
    """(batch, beams, series) points for one model, in run order, without duplicates."""
    points = {(args.target_batch, k): "target" for k in args.target_beams}
    if model_key in args.sweep_models:
        for k in args.beams:
            points.setdefault((args.sweep_batch, k), "beam sweep")
        for b in args.batches:
            points.setdefault((b, args.sweep_beam), "batch sweep")
    return [(b, k, series) for (b, k), series in points.items()]


def run_hf_part(args: argparse.Namespace, run: common.Run, models: dict[str, Any],
                hf_rows: list[dict[str, Any]], save: Callable[[], Any]) -> None:  # fmt: skip
    """HF vs ours on every model's grid; rows are appended to ``hf_rows`` as they finish."""
    for key in args.models:
        size = QUICK_BASE if args.quick and key == "base" else MARIANS[key]
        points = hf_grid(args, key)
        if run.out_of_time():
            skipped = common.skipped_fields(args.time_limit)
            hf_rows += [{"model": key, "batch": b, "beams": k, "series": series, **skipped}
                        for b, k, series in points]  # fmt: skip
            continue
        try:
            model, minfo = build_marian(size, args.seed)
        except ImportError as exc:
            log.warning("HF part skipped: %s (pip install transformers)", exc)
            return
        model = model.to(run.device)
        models[key] = {"label": size.label, **asdict(size), **minfo}
        ids, mask, _ = make_sources(size.vocab, max(b for b, _, _ in points), args.seed + 10,
                                    size.pad_id)  # fmt: skip
        print(f"\n{size.label}: d_model {size.d_model}, {size.layers}+{size.layers} layers, "
              f"vocab {size.vocab}, {minfo['parameters'] / 1e6:.1f}M parameters; "
              f"{len(points)} points", flush=True)  # fmt: skip
        for b, k, series in points:
            row: dict[str, Any] = {"model": key, "batch": b, "beams": k}
            if run.out_of_time():
                row.update(common.skipped_fields(args.time_limit))
            else:
                try:
                    row = run_hf_point(model, size, ids, mask, b, k, args, run.device)
                except Exception as exc:  # one failing point must not lose the others
                    row.update(common.error_fields(exc))
            row["series"] = series
            hf_rows.append(row)
            print(hf_table([row], {key: size.label}).splitlines()[-1], flush=True)
            save()
        del model
        if run.device.type == "cuda":
            torch.cuda.empty_cache()


# --------------------------------------------------------------------------- reporting


def hf_table(rows: list[dict[str, Any]], labels: dict[str, str]) -> str:
    header = ["model", "B", "K", "HF sent/s", "ours sent/s", "HF words/min", "ours words/min",
              "speedup", "mean len", "seq. mismatches",
              "score mismatches (max \\|diff\\|)"]  # fmt: skip
    lines = []
    for r in rows:
        head = [labels.get(r["model"], r["model"]), str(r["batch"]), str(r["beams"])]
        if r["status"] != "ok":
            lines.append([*head, f"{r['status']}: {r.get('reason', r.get('errors', ''))}"])
            continue
        p, hf, ours = r["parity"], r["hf"], r["ours"]
        lines.append([*head, f"{hf['sentences_per_s']:.2f}", f"{ours['sentences_per_s']:.2f}",
                      f"{hf['words_per_min']:,.0f}", f"{ours['words_per_min']:,.0f}",
                      f"{r['speedup']:.2f}x", f"{r['mean_output_tokens']:.1f}",
                      f"{p['sequence_mismatches']}/{p['sentences']}",
                      f"{p['score_mismatches']} ({common.fmt(p['max_abs_score_diff'], '.1e')})",
                      ])  # fmt: skip
    return common.markdown_table(header, lines, "lrrrrrrrrrr")


def markdown_report(payload: dict[str, Any]) -> str:
    parts = []
    hf = payload.get("hf", {})
    if hf.get("results"):
        # Per model: the rows at the sweep batch by beam size, then the others by batch size.
        sweep_batch = hf.get("run", payload)["config"]["sweep_batch"]
        models = list(dict.fromkeys(r["model"] for r in hf["results"]))
        rows = sorted(hf["results"], key=lambda r: (models.index(r["model"]),
                      r["batch"] != sweep_batch, r["batch"], r["beams"]))  # fmt: skip
        parts.append(hf_table(rows, {k: v["label"] for k, v in hf.get("models", {}).items()}))
    corpus = payload.get("corpus", {})
    if corpus.get("results"):
        parts.append(paper.corpus_tables(corpus["results"]))
        if corpus.get("batch_invariance"):
            parts.append("Sentences whose output differs from the first batching run at the same "
                         "K: " + ", ".join(f"K={k}: {v}" for k, v in
                                           corpus["batch_invariance"].items()))  # fmt: skip
    return "\n\n".join(parts)


def plot_hf(axes: list[Any], payload: dict[str, Any]) -> None:
    hf = payload.get("hf", {})
    rows = [r for r in hf.get("results", []) if r["status"] == "ok"]
    labels = {k: v["label"] for k, v in hf.get("models", {}).items()}
    cfg = hf.get("run", payload)["config"]
    batch, beam = cfg["sweep_batch"], cfg["sweep_beam"]
    panels = [("beams", "batch", batch, f"vs beam size, {batch} sentences"),
              ("batch", "beams", beam, f"vs sentences/batch, beam {beam}")]  # fmt: skip
    for ax, (x_key, fixed_key, fixed, title) in zip(axes, panels, strict=True):
        for mi, model in enumerate(sorted({r["model"] for r in rows})):
            pts = sorted(((r[x_key], r) for r in rows if r["model"] == model
                          and r[fixed_key] == fixed), key=lambda p: p[0])  # fmt: skip
            for impl, style in (("ours", "-"), ("hf", "--")) if pts else ():
                name = "tensortext" if impl == "ours" else "HF generate"
                ax.plot([p[0] for p in pts], [p[1][impl]["words_per_min"] for p in pts],
                        linestyle=style, marker="os"[mi % 2], color=f"C{mi}",
                        label=f"{name}, {labels.get(model, model)}")  # fmt: skip
        ax.set_yscale("log")
        xs = sorted({r[x_key] for r in rows if r[fixed_key] == fixed})
        if x_key == "batch":
            common.log2_xticks(ax, xs)
        else:
            ax.set_xticks(xs, [str(x) for x in xs])
        ax.set_xlabel("beam size" if x_key == "beams" else "sentences per batch")
        ax.set_ylabel("output words / min")
        ax.set_title(f"HF vs ours: {title}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)


def plot(payload: dict[str, Any], info: common.DeviceInfo, path: Any) -> Any:
    fig, axes = common.new_figure(4, width=5.2, height=4.3)
    plot_hf(axes[:2], payload)
    paper.plot_corpus(axes[2:], payload)
    for ax in axes:
        if not ax.lines:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle(info.name, fontsize=9)
    return common.save_figure(fig, path)


# --------------------------------------------------------------------------- main


QUICK = dict(target_batch=16, beams=QUICK_BEAMS, sweep_batch=16, batches=QUICK_BATCHES,
             corpus_beams=QUICK_BEAMS, corpus_batches=QUICK_CORPUS_BATCHES, repeat=2,
             corpus_repeat=1, warmup=1, budget=2.0, min_repeat=1)  # fmt: skip
FULL = dict(
    target_batch=64,
    beams=FULL_BEAMS,
    sweep_batch=64,
    batches=FULL_BATCHES,
    corpus_beams=FULL_BEAMS,
    corpus_batches=FULL_BATCHES,
    repeat=5,
    corpus_repeat=3,
    budget=10.0,
)  # fmt: skip  (warmup and min_repeat depend on the device)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    common.add_arguments(p, "beam", threads_help="torch.set_num_threads (default 1 on CPU)",
                         quick_help="smoke test: Marian-base shrunk, batch 16, beams 1/4/12, "
                         "fewer points and calls",
                         repeat_help="timed calls per HF point")  # fmt: skip
    add = p.add_argument
    add("--parts", nargs="+", choices=["hf", "bundled"], default=["hf", "bundled"])
    add(
        "--models",
        nargs="+",
        choices=list(MARIANS),
        default=list(MARIANS),
        help="random Marians for the HF comparison (default: base tiny)",
    )
    add(
        "--sweep-models",
        nargs="+",
        choices=list(MARIANS),
        default=None,
        help="models that also get the beam and batch sweeps (default: all on CUDA, tiny on CPU, "
        "where Marian-base at 64 x 12 takes ~1 minute a call)",
    )
    add("--target-batch", type=int, default=None, help="batch of the K=4/12 targets")
    add(
        "--target-beams",
        type=int,
        nargs="+",
        default=TARGET_BEAMS,
        help="beam sizes timed at --target-batch (default 4 12)",
    )
    add("--beams", type=int, nargs="+", default=None, help="beam sweep (HF part)")
    add("--sweep-batch", type=int, default=None, help="batch of the beam sweep")
    add("--batches", type=int, nargs="+", default=None, help="batch sweep (HF part)")
    add("--sweep-beam", type=int, default=4, help="beam of the batch sweeps")
    add("--corpus-beams", type=int, nargs="+", default=None)
    add(
        "--corpus-beam-batches",
        type=int,
        nargs="+",
        default=[1, 64],
        help="sentences per batch of the Figure 2 series (default 1 64)",
    )
    add("--corpus-batches", type=int, nargs="+", default=None)
    add("--sentences", type=int, default=0, help="use the first N test sentences (0: all 300)")
    add("--corpus-repeat", type=int, default=None, help="timed calls per corpus point")
    add(
        "--warmup",
        type=int,
        default=None,
        help="untimed calls per implementation and HF point, the parity call included; with 2 or "
        "more the last one measures peak memory (default 2 on CUDA, 1 on CPU)",
    )
    add(
        "--budget",
        type=float,
        default=None,
        help="stop timing a point once its timed calls used this many seconds (at least "
        "--min-repeat calls are timed) (default 10)",
    )
    add(
        "--min-repeat",
        type=int,
        default=None,
        help="timed calls per HF point that --budget cannot cut (default 3 on CUDA, 1 on CPU, "
        "where one Marian-base call at 64 x 12 takes about a minute); corpus points: always 1",
    )
    add("--seed", type=int, default=1234)
    add("--merge", action="store_true",
        help="keep the parts not in --parts from the existing result file (each part records "
        "its own run metadata), e.g. to add the bundled part to an earlier HF run")  # fmt: skip
    args = common.parse(p, argv)
    cuda = args.device == "cuda"
    defaults = QUICK if args.quick else {**FULL, "warmup": 2 if cuda else 1,
                                         "min_repeat": 3 if cuda else 1}  # fmt: skip
    for key, value in {**defaults, "sweep_models": list(MARIANS) if cuda else ["tiny"]}.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for name in ("target_batch", "sweep_batch", "sweep_beam", "repeat", "corpus_repeat"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    lists = ("target_beams", "beams", "batches", "corpus_beams", "corpus_batches",
             "corpus_beam_batches")  # fmt: skip
    for name in lists:
        if min(getattr(args, name)) < 1:
            p.error(f"--{name.replace('_', '-')} values must be >= 1")
    return args


def run_config(args: argparse.Namespace) -> dict[str, Any]:
    names = ["parts", "quick", "target_batch", "beams", "sweep_batch", "batches", "sweep_beam",
             "sweep_models", "corpus_beams", "corpus_beam_batches", "corpus_batches", "repeat",
             "corpus_repeat", "warmup"]  # fmt: skip
    return {
        **{n: getattr(args, n) for n in names}, "target_beams": args.target_beams,
        "budget_s": args.budget, "min_repeat": args.min_repeat,
        "time_limit_s": args.time_limit or None, "seed": args.seed, "score_tolerance": SCORE_TOL,
        "hf_settings": "model.generate(input_ids, attention_mask=..., num_beams=K, do_sample="
        f"False, max_new_tokens={MAX_NEW_TOKENS}, length_penalty=1.0, early_stopping=False) "
        "(greedy for K=1: no beam-only flags); generation_config: forced_eos_token_id=0, "
        "bad_words_ids=[[pad]]; ours: tensortext.decode.hf.generate(model, input_ids, "
        "attention_mask, **the same keywords) (greedy for K=1, as generate)",
        "inputs": f"random source tokens (1..vocab-2), lengths uniform {SOURCE_LENS[0]}.."
        f"{SOURCE_LENS[1]}, right-padded; the batches of a model are prefixes of one seeded pool",
        "output_lengths": "model-driven: the EOS logit is calibrated to overtake the other tokens "
        "when the output is about as long as the source (see models.*.eos_calibration); "
        f"max_new_tokens={MAX_NEW_TOKENS} is a cap that is rarely reached",
        "words": "generated tokens of the best hypothesis, EOS excluded",
        "timing": "median wall-clock seconds per call; CUDA synchronised around each call; HF "
        "and ours interleaved round-robin (rotating start); the first warm-up call of each is "
        "the (untimed) parity call; one untimed call before each timed one when the last call "
        "took < rewarm_below_s; corpus points: one translate() call over the whole test set per "
        "timed call, after a global warm-up",
        "rewarm_below_s": REWARM_BELOW_S,
        "parity": "one untimed call each with return_dict_in_generate=True, output_scores=True: "
        "sequences (and beam_indices for K > 1) identical tensors; per sentence, tokens of the "
        "best hypothesis up to and including EOS equal and scores within score_tolerance; "
        "scores are sequences_scores for K > 1, for K = 1 the mean log-softmax of the processed "
        "scores at the chosen tokens (both sides alike)",
    }  # fmt: skip


def make_payload(args: argparse.Namespace, run: common.Run, meta: dict[str, Any],
                 models: dict[str, Any], hf_rows: list[dict[str, Any]], corpus: dict[str, Any],
                 previous: dict[str, Any]) -> dict[str, Any]:  # fmt: skip
    """The result file; with ``--merge``, the parts not run now come from ``previous``."""
    this_run = {"metadata": meta, "config": run_config(args),
                "loadavg_at_end": common.loadavg(), "wall_time_s": run.elapsed()}  # fmt: skip
    hf = {"run": this_run, "models": models, "results": hf_rows}
    if "hf" not in args.parts and previous.get("hf"):
        hf = previous["hf"]
    corpus = {"run": this_run, **corpus}
    if "bundled" not in args.parts and previous.get("corpus"):
        corpus = previous["corpus"]
    return {"benchmark": "batched beam search", "hf": hf, "corpus": corpus, **this_run}


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args(argv)
    if args.report is not None:
        print(markdown_report(common.read_json(args.report)))
        return 0
    warnings.filterwarnings("ignore", category=UserWarning)
    with contextlib.suppress(ImportError):
        import transformers

        transformers.logging.set_verbosity_error()
    run = common.start(args, cpu_threads=1)
    meta = common.run_metadata(run.info, ["tensortext", "transformers", "numpy", "matplotlib"])
    models: dict[str, Any] = {}
    hf_rows: list[dict[str, Any]] = []
    corpus: dict[str, Any] = {}
    previous = common.read_json(run.json_path) if args.merge and run.json_path.is_file() else {}

    def save() -> dict[str, Any]:
        payload = make_payload(args, run, meta, models, hf_rows, corpus, previous)
        common.write_json(run.json_path, payload)
        return payload

    if "hf" in args.parts:
        run_hf_part(args, run, models, hf_rows, save)
    if "bundled" in args.parts:
        paper.run_corpus_part(args, run, corpus, save)
    payload = save()
    print("\n" + markdown_report(payload), flush=True)
    print(f"\nwrote {run.json_path}", flush=True)
    if payload["hf"].get("results") or payload["corpus"].get("results"):
        common.write_plot(args, lambda: plot(payload, run.info, run.png_path))
    print(f"total wall time {payload['wall_time_s']:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
