#!/usr/bin/env python
"""LMBR n-gram posteriors and MBR reranking: tensortext vs. per-hypothesis Python, side by side.

Parts, run in one process:

* ``posteriors``  :func:`~tensortext.lmbr.ngram_posteriors` plus building
                  :class:`~tensortext.lmbr.LMBRBias` for ``B`` sentences x ``M`` n-best
                  hypotheses (the target: 64 x 200 under 5 ms on a GPU), against a
                  dict-of-n-grams Python computation; the two must agree to 1e-9.
* ``step``        one LMBR bias call on ``B*K`` live prefixes over a 32k vocabulary, against
                  SGNMT's way (a Python loop over hypotheses and their histories, as its ``ngramc``
                  predictor does), with the same numbers checked.
* ``decode``      beam search 64 x 4 with and without LMBR: a Marian-base-sized random model
                  through ``tensortext.decode.hf.beam_search_hf`` (the overhead target,
                  <= 10%) and the bundled translator on its test set with the demo's evidence
                  (``tensortext.lmbr.lmbr_bias_factory`` on the weaker system's 8-best lists).
* ``mbr``         :func:`~tensortext.mbr.mbr_rerank` of ``B`` x ``N`` candidates against
                  sacrebleu's ``sentence_score`` over the same ``B*N*N`` pairs.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_lmbr.py                  # CUDA if available
    PYTHONPATH=src python bench/bench_lmbr.py --device cpu --threads 1
    PYTHONPATH=src python bench/bench_lmbr.py --quick          # smoke test, about a minute

Writes bench/results/lmbr-<device-slug>.json and .png.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import torch

import common
import marian
from lmbr_reference import MAX_ORDER, VOCAB, python_posteriors, python_step, synthetic_nbest

from tensortext.lmbr import LMBRBias, lmbr_theta, ngram_posteriors
from tensortext.mbr import mbr_rerank

THETA = (0.741, 0.62)  # lmbr_theta(p, r): the demo's and the paper's unigram precision, ratio


def bench_posteriors(args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    return [posteriors_point(args, dev, M) for M in args.hypotheses]


def posteriors_point(args: argparse.Namespace, dev: torch.device, M: int) -> dict[str, Any]:
    theta = lmbr_theta(*THETA)
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
    theta = lmbr_theta(*THETA)
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
    from tensortext.decode.hf import beam_search_hf

    rows = []
    size = marian.QUICK_BASE if args.quick else marian.MARIANS["base"]
    model, _ = marian.build_marian(size, 0)
    model = model.to(dev)
    B, K = args.batch, 4
    input_ids, mask, _ = marian.make_sources(size.vocab, B, 1, size.pad_id)
    input_ids, mask = input_ids.to(dev), mask.to(dev)
    plain_kwargs = dict(num_beams=K, max_new_tokens=marian.MAX_NEW_TOKENS)
    with torch.inference_mode():
        plain_out = beam_search_hf(model, input_ids, mask, **plain_kwargs)
    # Evidence: 200 perturbations of each sentence's output, so the posteriors hit often.
    M = args.hypotheses[-1]
    best = plain_out.without_eos(rank=0)  # ids [B, T] (PAD_ID after the end), lengths [B]
    gen = torch.Generator().manual_seed(3)
    evidence = best.ids.clamp(min=0)[:, None].expand(B, M, best.ids.shape[1]).clone().cpu()
    replace = torch.rand(evidence.shape, generator=gen) < 0.15
    evidence = torch.where(replace, torch.randint(1, size.vocab - 1, evidence.shape), evidence)
    lengths = best.lengths[:, None].expand(B, M).cpu()
    scores = -torch.rand((B, M), generator=gen, dtype=torch.float64)
    theta = lmbr_theta(*THETA)

    def with_lmbr() -> Any:
        posteriors = ngram_posteriors(
            evidence.to(dev), lengths.to(dev), scores.to(dev), validate=False
        )
        bias = LMBRBias(posteriors, theta, vocab_size=size.vocab, eos_id=size.eos_id)
        return beam_search_hf(model, input_ids, mask, score_bias=bias, **plain_kwargs)

    def plain() -> Any:
        return beam_search_hf(model, input_ids, mask, **plain_kwargs)

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
    """The demo's setting: the bundled model, evidence = a weaker system's 8-best lists.

    As ``tensortext demo``: alpha 1, weight 0.5 and sentence-end n-grams (``end_id`` = EOS),
    chosen on dev sentences, not on this test set.
    """
    from tensortext.decode import translate
    from tensortext.lmbr import Evidence, lmbr_bias_factory
    from tensortext.models.bundled import load_bundled_translator

    model = load_bundled_translator(dev)
    weaker = load_bundled_translator(dev, evidence_model=True)
    text = (resources.files("tensortext") / "data/demo/translate.src").read_text("utf-8")
    src_ids, lengths = model.tokenize_source(text.splitlines()).to(dev)
    nbest = translate(weaker, src_ids, lengths, num_beams=8, num_return_sequences=8)
    bias = lmbr_bias_factory(
        Evidence.from_beam_output(nbest, eos_id=model.eos_id), lmbr_theta(*THETA),
        vocab_size=model.vocab_size, eos_id=model.eos_id, weight=0.5, alpha=1.0,
        end_id=model.eos_id,
    )  # fmt: skip

    timings = _interleaved(
        {
            "plain": lambda: translate(model, src_ids, lengths, num_beams=4),
            "lmbr": lambda: translate(model, src_ids, lengths, num_beams=4, score_bias=bias),
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


def plot(payload: dict[str, Any], info: common.DeviceInfo, path: Path) -> Path:
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
    return common.save_figure(fig, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_arguments(parser, "lmbr", threads_help="torch CPU threads (default: torch's)",
                         quick_help="small sizes, a smoke test (about a minute)",
                         repeat_help="timed calls per decode point (default 3; --quick 1)",
                         report=False)  # fmt: skip
    parser.add_argument(
        "--parts", default="posteriors,step,decode,mbr", help="comma-separated subset"
    )
    parser.add_argument("--batch", type=int, default=None, help="sentences (default 64; 16)")
    parser.add_argument("--hypotheses", type=int, nargs="+", default=None,
                        help="n-best sizes M (default 50 200; --quick 20 50)")  # fmt: skip
    parser.add_argument("--candidates", type=int, nargs="+", default=None,
                        help="MBR candidates N (default 8 16; --quick 8)")  # fmt: skip
    args = common.parse(parser, argv)
    quick = args.quick
    args.batch = args.batch or (16 if quick else 64)
    args.length = 30
    args.hypotheses = args.hypotheses or ([20, 50] if quick else [50, 200])
    args.prefix_lengths = [1, 10] if quick else [1, 5, 15, 30]
    args.candidates = args.candidates or ([8] if quick else [8, 16])
    args.decode_repeat = args.repeat or (1 if quick else 3)
    sizes = [args.batch, *args.hypotheses, *args.candidates]
    if min(sizes) < 1:
        parser.error(f"--batch, --hypotheses and --candidates must be >= 1, got {sizes}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = common.start(args, cpu_threads=None)
    runners: dict[str, Callable[[argparse.Namespace, torch.device], list[dict[str, Any]]]] = {
        "posteriors": bench_posteriors,
        "step": bench_step,
        "decode": bench_decode,
        "mbr": bench_mbr,
    }
    payload: dict[str, Any] = {
        "meta": common.run_metadata(run.info, ["transformers", "sacrebleu"]),
        "quick": args.quick,
        "parts": {},
    }
    for part in args.parts.split(","):
        if run.out_of_time():
            print(f"--time-limit {args.time_limit:g} s reached: {part} not run")
            continue
        payload["parts"][part] = runners[part](args, run.device)
        common.write_json(run.json_path, payload)
    print(f"wrote {run.json_path}")
    common.write_plot(args, lambda: plot(payload, run.info, run.png_path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
