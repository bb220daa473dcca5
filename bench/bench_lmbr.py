#!/usr/bin/env python
"""LMBR n-gram posteriors and MBR reranking: tensortext vs. per-hypothesis Python, side by side.

Parts, run in one process:

* ``posteriors``  :func:`~tensortext.decode.lmbr.ngram_posteriors` plus building
                  :class:`~tensortext.decode.lmbr.LMBRBias` for ``B`` sentences x ``M`` n-best
                  hypotheses (the issue's target: 64 x 200 under 5 ms on a GPU), against a
                  dict-of-n-grams Python computation; the two must agree to 1e-9.
* ``step``        one LMBR bias call on ``B*K`` live prefixes over a 32k vocabulary, against
                  SGNMT's way (a Python loop over hypotheses and their histories, as its ``ngramc``
                  predictor does), with the same numbers checked.
* ``decode``      beam search 64 x 4 with and without LMBR: a Marian-base-sized random model
                  through ``tensortext.decode.hf.generate`` (the issue's overhead target, <= 10%)
                  and the bundled translator on its test set with the demo's evidence.
* ``mbr``         :func:`~tensortext.decode.lmbr.mbr_rerank` of ``B`` x ``N`` candidates against
                  sacrebleu's ``sentence_score`` over the same ``B*N*N`` pairs.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_lmbr.py                  # CUDA if available
    PYTHONPATH=src python bench/bench_lmbr.py --device cpu --threads 1
    PYTHONPATH=src python bench/bench_lmbr.py --quick          # smoke test, about a minute

Writes bench/results/lmbr-<device-slug>.json and .png.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))
SRC_DIR = BENCH_DIR.parent / "src"
if SRC_DIR.is_dir() and str(SRC_DIR) not in sys.path:
    sys.path.append(str(SRC_DIR))

import common  # noqa: E402

from tensortext.decode.lmbr import (  # noqa: E402
    LMBRBias,
    lmbr_theta,
    mbr_rerank,
    ngram_posteriors,
)

VOCAB = 32000
MAX_ORDER = 4


def synthetic_nbest(
    B: int, M: int, length: int, seed: int, device: torch.device
) -> tuple[Tensor, Tensor, Tensor]:
    """N-best lists that look like real ones: every hypothesis of a sentence is its best one with
    ~15% of the tokens replaced from a few alternatives and a random length change, so n-grams
    repeat across hypotheses.  Scores fall with the rank."""
    gen = torch.Generator().manual_seed(seed)
    base = torch.randint(3, VOCAB, (B, 1, length + 4), generator=gen)
    alternatives = torch.randint(3, VOCAB, (B, 1, 8), generator=gen)
    pick = torch.randint(0, 8, (B, M, length + 4), generator=gen)
    replace = torch.rand((B, M, length + 4), generator=gen) < 0.15
    ids = torch.where(replace, alternatives.expand(B, M, 8).gather(2, pick), base)
    lengths = (length + torch.randint(-4, 5, (B, M), generator=gen)).clamp(1, length + 4)
    scores = -torch.arange(M, dtype=torch.float64).expand(B, M) * 0.1 - torch.rand(
        (B, M), generator=gen, dtype=torch.float64
    )
    return ids.to(device), lengths.to(device), scores.to(device)


def python_posteriors(
    ids: Tensor, lengths: Tensor, scores: Tensor, alpha: float
) -> list[dict[tuple[int, ...], float]]:
    """The definition, one sentence and hypothesis at a time (dicts of n-grams)."""
    out = []
    for sent_ids, sent_lens, sent_scores in zip(
        ids.tolist(), lengths.tolist(), scores.tolist(), strict=True
    ):
        peak = max(alpha * s for s in sent_scores)
        weights = [math.exp(alpha * s - peak) for s in sent_scores]
        total = sum(weights)
        table: dict[tuple[int, ...], float] = {}
        for hyp, n_tokens, weight in zip(sent_ids, sent_lens, weights, strict=True):
            hyp = hyp[:n_tokens]
            grams = {
                tuple(hyp[i : i + n])
                for n in range(1, MAX_ORDER + 1)
                for i in range(len(hyp) - n + 1)
            }
            for gram in grams:
                table[gram] = table.get(gram, 0.0) + weight / total
        out.append(table)
    return out


def python_step(
    tables: list[dict[tuple[int, ...], float]],
    prefixes: list[list[int]],
    K: int,
    theta: list[float],
    eos_id: int,
) -> Tensor:
    """SGNMT's way: for each live hypothesis, collect the n-grams its histories extend."""
    rows = []
    by_history: list[dict[tuple[int, ...], list[tuple[int, float]]]] = []
    for table in tables:  # an index of history -> continuations, built once per sentence
        index: dict[tuple[int, ...], list[tuple[int, float]]] = {}
        for gram, value in table.items():
            index.setdefault(gram[:-1], []).append((gram[-1], value))
        by_history.append(index)
    for row, prefix in enumerate(prefixes):
        scores = torch.full((VOCAB,), theta[0], dtype=torch.float64)
        scores[eos_id] = 0.0
        index = by_history[row // K]
        for n in range(1, MAX_ORDER + 1):
            if len(prefix) < n - 1:
                break
            history = tuple(prefix[len(prefix) - (n - 1) :]) if n > 1 else ()
            for token, value in index.get(history, ()):
                scores[token] += theta[n] * value
        rows.append(scores)
    return torch.stack(rows)


def bench_posteriors(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    return [posteriors_point(args, dev, M) for M in args.hypotheses]


def posteriors_point(args: argparse.Namespace, dev: torch.device, M: int) -> dict[str, Any]:
    theta = lmbr_theta(0.741, 0.62)
    ids, lengths, scores = synthetic_nbest(args.batch, M, args.length, 0, dev)

    def ours() -> LMBRBias:
        posteriors = ngram_posteriors(ids, lengths, scores, validate=False)
        return LMBRBias(posteriors, theta, vocab_size=VOCAB, eos_id=0)

    only_posteriors = common.time_fn(
        lambda: ngram_posteriors(ids, lengths, scores, validate=False), device=dev, repeat=9
    )
    with_bias = common.time_fn(ours, device=dev, repeat=9)
    python = common.time_fn(
        lambda: python_posteriors(ids.cpu(), lengths.cpu(), scores.cpu(), 1.0),
        device="cpu",
        warmup=0,
        repeat=3,
    )
    posteriors = only_posteriors.value
    tables = python.value
    # Agreement on every n-gram the Python side found.
    grams = [(s, g) for s, table in enumerate(tables) for g in table]
    worst = 0.0
    for n in range(1, MAX_ORDER + 1):
        chosen = [(s, g) for s, g in grams if len(g) == n]
        if chosen:
            query = torch.tensor([g for _, g in chosen], device=dev)
            sentence = torch.tensor([s for s, _ in chosen], device=dev)
            got = posteriors.lookup(query, sentence).double().cpu()
            want = torch.tensor([tables[s][g] for s, g in chosen], dtype=torch.float64)
            worst = max(worst, float((got - want).abs().max()))
    row = {
        "B": args.batch,
        "M": M,
        "tokens": int(lengths.sum()),
        "distinct_ngrams": len(grams),
        "posteriors_ms": 1e3 * only_posteriors.median_s,
        "posteriors_and_bias_ms": 1e3 * with_bias.median_s,
        "python_ms": 1e3 * python.median_s,
        "max_abs_diff": worst,
    }
    print(
        f"posteriors {args.batch}x{M}: ours {row['posteriors_ms']:.2f} ms "
        f"(+bias tables {row['posteriors_and_bias_ms']:.2f} ms), python "
        f"{row['python_ms']:.0f} ms, {len(grams):,} n-grams, max diff {worst:.1e}"
    )
    return row


def bench_step(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    rows = []
    theta = lmbr_theta(0.741, 0.62)
    M, K = args.hypotheses[-1], 4
    ids, lengths, scores = synthetic_nbest(args.batch, M, args.length, 1, dev)
    bias = LMBRBias(ngram_posteriors(ids, lengths, scores), theta, vocab_size=VOCAB, eos_id=0)
    tables = python_posteriors(ids.cpu(), lengths.cpu(), scores.cpu(), 1.0)
    for t in args.prefix_lengths:
        # Live prefixes that follow the evidence (as a decoder guided by it would), half of them
        # with a foreign token somewhere so that some histories miss.
        gen = torch.Generator().manual_seed(t)
        hyp = torch.randint(0, M, (args.batch * K,), generator=gen)
        prefixes = ids[torch.arange(args.batch * K, device=dev) // K, hyp.to(dev), :t].clone()
        noise = torch.rand(prefixes.shape, generator=gen).to(dev) < 0.05
        prefixes = torch.where(noise, torch.full_like(prefixes, 1), prefixes)
        tokens = torch.cat([torch.full((args.batch * K, 1), 2, device=dev), prefixes], dim=1)
        ours = common.time_fn(lambda tokens=tokens: bias(tokens), device=dev, repeat=15)
        prefix_lists = prefixes.cpu().tolist()
        python = common.time_fn(
            lambda prefix_lists=prefix_lists: python_step(
                tables, prefix_lists, K, theta.tolist(), 0
            ),
            device="cpu",
            warmup=0,
            repeat=3,
        )
        diff = float((ours.value.double().cpu() - python.value).abs().max())
        row = {
            "rows": args.batch * K,
            "prefix_len": t,
            "ours_ms": 1e3 * ours.median_s,
            "python_ms": 1e3 * python.median_s,
            "max_abs_diff": diff,
        }
        print(
            f"step {args.batch}x{K} rows, prefix {t}: ours {row['ours_ms']:.2f} ms, python "
            f"{row['python_ms']:.0f} ms, max diff {diff:.1e}"
        )
        rows.append(row)
    return rows


def bench_decode(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    import bench_beam

    from tensortext.decode.hf import generate

    rows = []
    size = bench_beam.QUICK_BASE if args.quick else bench_beam.MARIANS["base"]
    model, _ = bench_beam.build_marian(size, 0)
    model = model.to(dev)
    B, K = args.batch, 4
    input_ids, mask, _ = bench_beam.make_sources(size.vocab, B, 1, size.pad_id)
    input_ids, mask = input_ids.to(dev), mask.to(dev)
    plain_kwargs = dict(num_beams=K, max_new_tokens=bench_beam.MAX_NEW_TOKENS)
    with torch.inference_mode():
        plain_out = generate(model, input_ids, mask, **plain_kwargs)
    # Evidence: 200 perturbations of each sentence's output, so the posteriors hit often.
    M = args.hypotheses[-1]
    width = plain_out.sequences.shape[2]
    gen = torch.Generator().manual_seed(3)
    evidence = plain_out.sequences[:, :1].expand(B, M, width).clone().cpu()
    replace = torch.rand(evidence.shape, generator=gen) < 0.15
    evidence = torch.where(replace, torch.randint(1, size.vocab - 1, evidence.shape), evidence)
    lengths = plain_out.lengths[:, :1].expand(B, M).cpu() - 1  # without EOS
    scores = -torch.rand((B, M), generator=gen, dtype=torch.float64)
    theta = lmbr_theta(0.741, 0.62)

    def with_lmbr() -> Any:
        posteriors = ngram_posteriors(
            evidence.to(dev), lengths.to(dev), scores.to(dev), validate=False
        )
        bias = LMBRBias(posteriors, theta, vocab_size=size.vocab, eos_id=size.eos_id)
        return generate(model, input_ids, mask, score_bias=bias, **plain_kwargs)

    def plain() -> Any:
        return generate(model, input_ids, mask, **plain_kwargs)

    with torch.inference_mode():
        timings = _interleaved({"plain": plain, "lmbr": with_lmbr}, args, dev)
    steps = int(plain_out.lengths.max())
    row = {
        "model": size.label,
        "B": B,
        "K": K,
        "M": M,
        "plain_s": timings["plain"].median_s,
        "lmbr_s": timings["lmbr"].median_s,
        "overhead_pct": 100 * (timings["lmbr"].median_s / timings["plain"].median_s - 1),
        "longest_output": steps,
    }
    print(
        f"decode {size.label} {B}x{K}: plain {row['plain_s']:.2f} s, with LMBR "
        f"{row['lmbr_s']:.2f} s ({row['overhead_pct']:+.1f}%)"
    )
    rows.append(row)
    rows.append(bench_bundled_decode(args, dev))
    return rows


def _interleaved(
    fns: dict[str, Callable[[], Any]], args: argparse.Namespace, dev: torch.device
) -> dict[str, common.Timing]:
    timings, errors = common.time_interleaved(fns, warmup=1, repeat=args.decode_repeat, device=dev)
    if errors:
        raise next(iter(errors.values()))
    return timings


def bench_bundled_decode(args: argparse.Namespace, dev: torch.device) -> dict[str, Any]:
    """The demo's setting: the bundled model, evidence = a weaker system's 8-best lists."""
    from tensortext.decode import translate
    from tensortext.decode.bundled import load_bundled_translator
    from tensortext.demo import _bundled, weaker_system_lmbr

    model = load_bundled_translator(dev)
    weaker = load_bundled_translator(dev, evidence_model=True)
    src_ids, src_lens = (t.to(dev) for t in model.tokenize_source(_bundled("translate.src")))
    bias = weaker_system_lmbr(model, weaker, src_ids, src_lens)

    timings = _interleaved(
        {
            "plain": lambda: translate(model, src_ids, src_lens, num_beams=4),
            "lmbr": lambda: translate(model, src_ids, src_lens, num_beams=4, score_bias=bias),
        },
        args,
        dev,
    )
    row = {
        "model": "bundled translator (0.96M parameters, V=115)",
        "B": 64,
        "K": 4,
        "M": 8,
        "sentences": int(src_ids.shape[0]),
        "plain_s": timings["plain"].median_s,
        "lmbr_s": timings["lmbr"].median_s,
        "overhead_pct": 100 * (timings["lmbr"].median_s / timings["plain"].median_s - 1),
    }
    print(
        f"decode bundled 300 sentences, 64x4: plain {row['plain_s']:.2f} s, with LMBR "
        f"{row['lmbr_s']:.2f} s ({row['overhead_pct']:+.1f}%)"
    )
    return row


def bench_mbr(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    from sacrebleu.metrics import BLEU

    sacre = BLEU(tokenize="none", effective_order=True)
    rows = []
    for N in args.candidates:
        ids, lengths, scores = synthetic_nbest(args.batch, N, args.length, 2, dev)
        ours = common.time_fn(
            lambda ids=ids, lengths=lengths, scores=scores: mbr_rerank(ids, lengths, scores),
            device=dev,
            repeat=7,
        )
        texts = [
            [" ".join(map(str, hyp[:n])) for hyp, n in zip(sent, lens, strict=True)]
            for sent, lens in zip(ids.tolist(), lengths.tolist(), strict=True)
        ]
        weights = torch.softmax(scores.cpu(), dim=1).tolist()

        def reference(texts: list[list[str]] = texts, weights: list[list[float]] = weights) -> Any:
            best = []
            for cands, w in zip(texts, weights, strict=True):
                expected = [
                    sum(
                        wj * sacre.sentence_score(ci, [cj]).score / 100
                        for cj, wj in zip(cands, w, strict=True)
                    )
                    for ci in cands
                ]
                best.append(max(range(len(cands)), key=expected.__getitem__))
            return best

        python = common.time_fn(reference, device="cpu", warmup=0, repeat=1)
        agree = sum(
            int(a == b) for a, b in zip(ours.value.best.tolist(), python.value, strict=True)
        )
        row = {
            "B": args.batch,
            "N": N,
            "pairs": args.batch * N * N,
            "ours_ms": 1e3 * ours.median_s,
            "sacrebleu_ms": 1e3 * python.median_s,
            "same_choice": f"{agree}/{args.batch}",
        }
        print(
            f"mbr {args.batch}x{N} ({row['pairs']:,} pairs): ours {row['ours_ms']:.1f} ms, "
            f"sacrebleu {row['sacrebleu_ms']:.0f} ms, same choice {row['same_choice']}"
        )
        rows.append(row)
    return rows


def _bars(ax: Any, labels: list[str], ours: list[float], theirs: list[float], name: str) -> None:
    """Ours beside a reference, in ms on a log scale."""
    ax.bar([i - 0.2 for i in range(len(labels))], ours, 0.4, label="tensortext")
    ax.bar([i + 0.2 for i in range(len(labels))], theirs, 0.4, label=name)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yscale("log")
    ax.set_ylabel("ms")
    ax.legend()


def plot(payload: dict[str, Any], info: common.DeviceInfo, path: Path) -> None:
    fig, axes = common.new_figure(3, width=5.0)
    post = payload["parts"].get("posteriors", [])
    if post:
        _bars(axes[0], [f"{r['B']}x{r['M']}" for r in post], [r["posteriors_ms"] for r in post],
              [r["python_ms"] for r in post], "Python dicts")  # fmt: skip
        axes[0].set_title("n-gram posteriors (sentences x hypotheses)")
    step = payload["parts"].get("step", [])
    if step:
        axes[1].plot([r["prefix_len"] for r in step], [r["ours_ms"] for r in step], "o-",
                     label="tensortext")  # fmt: skip
        axes[1].plot([r["prefix_len"] for r in step], [r["python_ms"] for r in step], "s-",
                     label="SGNMT-style loop")  # fmt: skip
        axes[1].set_yscale("log")
        axes[1].set_xlabel("prefix length")
        axes[1].set_ylabel("ms per step")
        axes[1].set_title(f"LMBR bias per step, {step[0]['rows']} rows x V={VOCAB}")
        axes[1].legend()
    mbr = payload["parts"].get("mbr", [])
    if mbr:
        _bars(axes[2], [f"N={r['N']}" for r in mbr], [r["ours_ms"] for r in mbr],
              [r["sacrebleu_ms"] for r in mbr], "sacrebleu pairs")  # fmt: skip
        axes[2].set_title(f"MBR rerank, {mbr[0]['B']} sentences")
    fig.suptitle(f"LMBR on {info.name}")
    common.save_figure(fig, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=common.default_device())
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke test")
    parser.add_argument(
        "--parts", default="posteriors,step,decode,mbr", help="comma-separated subset"
    )
    parser.add_argument("--out-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    args.batch = 64
    args.length = 30
    args.hypotheses = [50, 200]
    args.prefix_lengths = [1, 5, 15, 30]
    args.candidates = [8, 16]
    args.decode_repeat = 3
    if args.quick:
        args.batch, args.hypotheses, args.prefix_lengths = 16, [20, 50], [1, 10]
        args.candidates, args.decode_repeat = [8], 1
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    info = common.device_info(dev)
    print(f"LMBR benchmark on {info.name}")
    runners: dict[str, Callable[[argparse.Namespace, torch.device], list[dict[str, Any]]]] = {
        "posteriors": bench_posteriors,
        "step": bench_step,
        "decode": bench_decode,
        "mbr": bench_mbr,
    }
    payload: dict[str, Any] = {
        "meta": common.run_metadata(info, ["transformers", "sacrebleu"]),
        "quick": args.quick,
        "parts": {},
    }
    for part in args.parts.split(","):
        payload["parts"][part] = runners[part](args, dev)
    suffix = "-quick" if args.quick else ""
    json_path = common.results_path(f"lmbr{suffix}", info, ".json", args.out_dir)
    common.write_json(json_path, payload)
    png_path = common.results_path(f"lmbr{suffix}", info, ".png", args.out_dir)
    plot(payload, info, png_path)
    print(f"wrote {json_path} and {png_path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
