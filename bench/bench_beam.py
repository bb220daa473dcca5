#!/usr/bin/env python
"""Batched beam search: tensortext vs. Hugging Face ``generate``, and the paper's Figures 2-3.

Two parts, run in one process:

* ``hf``       ``tensortext.decode.hf.generate`` against ``model.generate(num_beams=K,
               do_sample=False)`` on the same MarianMTModel (random weights, Marian-base size and
               a tiny one), same inputs, timed interleaved.  Both the speed (sentences/s, words/min)
               and whether the outputs are identical (tokens up to EOS, scores within 1e-5).
* ``bundled``  ``tensortext.decode.translate`` with the bundled translator on its 300 held-out
               sentences: words/min against beam size with sentence batches of 1 (beam-only
               batching) and 64 (Iglesias et al. 2018, Figure 2), and against sentences per batch,
               sorted by length or not (Figure 3); corpus BLEU of every output.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_beam.py                   # full grid, CUDA if available
    PYTHONPATH=src python bench/bench_beam.py --device cpu --threads 1
    PYTHONPATH=src python bench/bench_beam.py --quick           # smoke test, < 3 minutes on CPU

Writes bench/results/beam-<device-slug>.json and .png.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import sys
import time
import traceback
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))
SRC_DIR = REPO_ROOT / "src"
if SRC_DIR.is_dir() and str(SRC_DIR) not in sys.path:  # convenience: running without PYTHONPATH
    sys.path.append(str(SRC_DIR))

import common  # noqa: E402  (bench/ is not a package; run as a script)

log = logging.getLogger("bench_beam")

SCORE_TOL = 1e-5  # |score difference| above which a sentence counts as a score mismatch
SOURCE_LENS = (10, 40)  # random source lengths, uniform, inclusive
EOS_SLOPE = 1.0  # the calibrated EOS logit grows by this many nats per generated token
MAX_NEW_TOKENS = 96  # cap for the random Marians (outputs end at ~source length + 2)
REWARM_BELOW_S = 0.5

TARGET_BEAMS = [4, 12]  # the issue's targets, at --target-batch sentences
FULL_BEAMS = [1, 2, 4, 6, 8, 10, 12]
FULL_BATCHES = [1, 2, 4, 8, 16, 32, 64]
QUICK_BEAMS = [1, 4, 12]
QUICK_BATCHES = [1, 4, 16]
QUICK_CORPUS_BATCHES = [1, 8, 64]


# --------------------------------------------------------------------------- random Marians


@dataclass(frozen=True)
class MarianSize:
    key: str
    label: str
    vocab: int
    d_model: int
    layers: int  # encoder layers = decoder layers
    heads: int
    ffn: int

    @property
    def eos_id(self) -> int:
        return 0  # Marian's </s>

    @property
    def pad_id(self) -> int:
        return self.vocab - 1  # Marian's <pad>, also the decoder start token (as in opus-mt)


MARIANS = {
    "base": MarianSize("base", "Marian-base (random)", 32000, 512, 6, 8, 2048),
    "tiny": MarianSize("tiny", "Marian-tiny (random)", 1024, 64, 2, 4, 256),
}
# --quick on CPU: the base model shrunk so that a batch of 16 x 12 beams takes seconds.
QUICK_BASE = MarianSize("base", "Marian-small (random, --quick)", 8000, 256, 3, 4, 1024)


def make_sources(vocab: int, n: int, seed: int, pad_id: int) -> tuple[Tensor, Tensor, list[int]]:
    """``n`` random sources: ``(input_ids [n, S], attention_mask [n, S], lengths)``, right-padded.

    Tokens are uniform over ``1 .. vocab - 2`` (neither EOS 0 nor the pad ID), lengths uniform
    over ``SOURCE_LENS``.  Batches of the sweeps are prefixes of one pool, so that batch 8 is the
    first 8 sentences of batch 64.
    """
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(SOURCE_LENS[0], SOURCE_LENS[1] + 1, (n,), generator=gen)
    width = int(lengths.max())
    ids = torch.randint(1, vocab - 1, (n, width), generator=gen)
    mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
    return ids.masked_fill(mask == 0, pad_id), mask, lengths.tolist()


def build_marian(size: MarianSize, seed: int) -> tuple[Any, dict[str, Any]]:
    """A MarianMTModel with random weights whose hypotheses end at about the source length.

    Random weights give a nearly flat next-token distribution, so EOS is never preferred and a
    constant ``final_logits_bias[eos]`` ends either every hypothesis after one token or none.
    Instead the EOS row of the (tied) output projection is set so that the EOS logit *grows* with
    the number of generated tokens minus the source length: a ridge regression on the final
    decoder states of random teacher-forced prefixes finds the direction ``w`` with
    ``h_t . w + c ~ t - source_len`` (the position comes from the sinusoidal embeddings, the
    source length from the cross-attention average); EOS's logit becomes
    ``EOS_SLOPE * (h_t . w + c)`` plus the mean top logit of the other tokens, so it overtakes them
    about when the target is as long as the source.  EOS is never fed back into the model and the
    sources contain no EOS, so nothing else changes.  Everything is seeded and done on the CPU.
    """
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(seed)
    config = MarianConfig(
        vocab_size=size.vocab,
        d_model=size.d_model,
        encoder_layers=size.layers,
        decoder_layers=size.layers,
        encoder_attention_heads=size.heads,
        decoder_attention_heads=size.heads,
        encoder_ffn_dim=size.ffn,
        decoder_ffn_dim=size.ffn,
        max_position_embeddings=512,
        pad_token_id=size.pad_id,
        eos_token_id=size.eos_id,
        decoder_start_token_id=size.pad_id,
        forced_eos_token_id=size.eos_id,
    )
    model = MarianMTModel(config).eval()
    # As in the opus-mt generation configs: never generate <pad>.  transformers 5 does not copy
    # bad_words_ids from the model config into generation_config, so it is set here.
    model.generation_config.bad_words_ids = [[size.pad_id]]

    n, steps = 48, 64
    ids, mask, lengths = make_sources(size.vocab, n, seed + 1, size.pad_id)
    gen = torch.Generator().manual_seed(seed + 2)
    prefix = torch.randint(1, size.vocab - 1, (n, steps), generator=gen)
    prefix[:, 0] = size.pad_id  # decoder start
    with torch.inference_mode():
        out = model(
            input_ids=ids,
            attention_mask=mask,
            decoder_input_ids=prefix,
            output_hidden_states=True,
            return_dict=True,
        )
    hidden = out.decoder_hidden_states[-1].double()  # [n, steps, d]
    ordinary = out.logits[..., 1 : size.vocab - 1]  # neither EOS nor pad
    top_logit = float(ordinary.max(-1).values.mean())
    target = torch.arange(steps)[None, :] - torch.tensor(lengths)[:, None]  # [n, steps]
    x = torch.cat((hidden.reshape(n * steps, -1), torch.ones(n * steps, 1, dtype=torch.double)), 1)
    y = target.reshape(-1).double()
    gram = x.T @ x + 1e-2 * torch.eye(x.shape[1], dtype=torch.double)
    w = torch.linalg.solve(gram, x.T @ y)
    residual = x @ w - y
    with torch.no_grad():
        model.get_output_embeddings().weight[size.eos_id] = (EOS_SLOPE * w[:-1]).float()
        model.final_logits_bias[0, size.eos_id] = float(EOS_SLOPE * w[-1] + top_logit)
    info = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "eos_calibration": {
            "method": "EOS row of the tied output projection and final_logits_bias[eos] set "
            "from a ridge regression of (decoder position - source length) on the final decoder "
            "states of random teacher-forced prefixes; EOS logit = slope * prediction + mean top "
            "logit of the other tokens",
            "slope_nats_per_token": EOS_SLOPE,
            "fit_residual_std_tokens": float(residual.std()),
            "mean_top_logit": top_logit,
        },
    }
    return model, info


# --------------------------------------------------------------------------- HF vs ours


def hf_kwargs(num_beams: int, max_new_tokens: int) -> dict[str, Any]:
    kw: dict[str, Any] = {
        "num_beams": num_beams,
        "do_sample": False,
        "max_new_tokens": max_new_tokens,
    }
    if num_beams > 1:  # HF's defaults, spelled out (beam-only flags would warn with greedy)
        kw.update(length_penalty=1.0, early_stopping=False)
    return kw


def hf_hypotheses(sequences: Tensor, eos_id: int, pad_id: int) -> list[list[int]]:
    """HF ``sequences [B, 1 + T]`` -> generated tokens up to and including the first EOS."""
    rows = []
    for row in sequences[:, 1:].tolist():  # column 0 is the decoder start token
        if eos_id in row:
            row = row[: row.index(eos_id) + 1]
        else:  # cut at the length limit; the fill is pad_id, which is never generated
            while row and row[-1] == pad_id:
                row.pop()
        rows.append(row)
    return rows


def ours_hypotheses(out: Any) -> list[list[int]]:
    seqs = out.sequences[:, 0].tolist()
    lens = out.lengths[:, 0].tolist()
    return [row[:n] for row, n in zip(seqs, lens, strict=True)]


def hf_greedy_scores(result: Any, hyps: list[list[int]]) -> list[float]:
    """Greedy search returns no sequence scores: mean log-softmax of the raw logits, per sentence.

    That is our ``num_beams=1`` score (length penalty 1) except where a processor changed the
    chosen token's log-prob (a forced EOS at the length limit).
    """
    steps = torch.stack([lg.float() for lg in result.logits], 1).log_softmax(-1)  # [B, T, V]
    out = []
    for b, row in enumerate(hyps):
        if not row:
            out.append(float("nan"))
            continue
        tok = torch.tensor(row, device=steps.device)
        lp = steps[b, torch.arange(len(row), device=steps.device), tok]
        out.append(float(lp.sum()) / len(row))
    return out


def words(hyps: Sequence[Sequence[int]], eos_id: int) -> int:
    """Output words: generated tokens without the EOS."""
    return sum(len(h) - (1 if h and h[-1] == eos_id else 0) for h in hyps)


def compare(
    hf_hyps: list[list[int]],
    hf_scores: list[float],
    our_hyps: list[list[int]],
    our_scores: list[float],
) -> dict[str, Any]:
    """Sentences whose tokens differ, and score differences where the tokens agree."""
    seq_diff = [i for i, (a, b) in enumerate(zip(hf_hyps, our_hyps, strict=True)) if a != b]
    differing = set(seq_diff)
    same = [i for i in range(len(hf_hyps)) if i not in differing]
    diffs = [abs(hf_scores[i] - our_scores[i]) for i in same]
    diffs = [d for d in diffs if not math.isnan(d)]
    score_diff = [i for i in same if abs(hf_scores[i] - our_scores[i]) > SCORE_TOL]
    res: dict[str, Any] = {
        "sentences": len(hf_hyps),
        "sequence_mismatches": len(seq_diff),
        "score_mismatches": len(score_diff),
        "max_abs_score_diff": max(diffs) if diffs else None,
        "identical": not seq_diff and not score_diff,
    }
    first = seq_diff[0] if seq_diff else (score_diff[0] if score_diff else None)
    if first is not None:
        a, b = hf_hyps[first], our_hyps[first]
        at = next((j for j in range(min(len(a), len(b))) if a[j] != b[j]), min(len(a), len(b)))
        res["first_mismatch"] = {
            "sentence": first,
            "first_differing_position": at,
            "hf_tokens": a,
            "ours_tokens": b,
            "hf_score": hf_scores[first],
            "ours_score": our_scores[first],
        }
    return res


def run_hf_point(
    model: Any,
    size: MarianSize,
    ids: Tensor,
    mask: Tensor,
    batch: int,
    beams: int,
    args: argparse.Namespace,
    dev: torch.device,
) -> dict[str, Any]:
    from tensortext.decode.hf import generate

    input_ids, attention_mask = ids[:batch].to(dev), mask[:batch].to(dev)
    width = int(attention_mask.sum(1).max())
    input_ids, attention_mask = input_ids[:, :width], attention_mask[:, :width]
    kw = hf_kwargs(beams, MAX_NEW_TOKENS)

    def hf_call(**extra: Any) -> Any:
        with torch.inference_mode():
            return model.generate(input_ids, attention_mask=attention_mask, **kw, **extra)

    def ours_call() -> Any:
        with torch.inference_mode():
            return generate(
                model,
                input_ids,
                attention_mask,
                num_beams=beams,
                max_new_tokens=MAX_NEW_TOKENS,
                # HF's defaults, spelled out as for model.generate
                length_penalty=1.0,
                early_stopping=False,
            )

    row: dict[str, Any] = {"model": size.key, "batch": batch, "beams": beams, "status": "ok"}
    # Parity first: one untimed call each, which is also the first warm-up call.  HF returns
    # sequence scores only with output_scores=True (it then keeps every step's [B*K, V]
    # log-probs), so that call is never timed.
    common.synchronize(dev)
    extra = {"return_dict_in_generate": True}
    extra["output_scores" if beams > 1 else "output_logits"] = True
    hf_result = hf_call(**extra)
    hf_hyps = hf_hypotheses(hf_result.sequences, size.eos_id, size.pad_id)
    if beams > 1:
        hf_scores = [float(s) for s in hf_result.sequences_scores.tolist()]
    else:
        hf_scores = hf_greedy_scores(hf_result, hf_hyps)
    del hf_result
    ours_out = ours_call()
    our_hyps = ours_hypotheses(ours_out)
    row["parity"] = compare(hf_hyps, hf_scores, our_hyps, ours_out.scores[:, 0].tolist())
    row["parity"]["hf_scores_from"] = (
        "sequences_scores" if beams > 1 else "log_softmax(raw logits) of the greedy tokens / len"
    )
    row["mean_output_tokens"] = sum(len(h) for h in hf_hyps) / batch
    row["outputs_without_eos"] = sum(not h or h[-1] != size.eos_id for h in hf_hyps)  # HF's

    timings, errors = common.time_interleaved(
        {"hf": hf_call, "ours": ours_call},
        warmup=max(args.warmup - 1, 0),
        repeat=args.repeat,
        device=dev,
        budget_s=args.budget,
        min_repeat=args.min_repeat,
        measure_memory=args.warmup >= 2,
        rewarm_below_s=REWARM_BELOW_S,
    )
    if errors:
        row["status"] = "error"
        row["errors"] = {k: f"{type(e).__name__}: {e}" for k, e in errors.items()}
        row["traceback"] = "".join(
            traceback.format_exception(next(iter(errors.values())), limit=-4)
        )
        return row
    words_of = {
        "hf": words(hf_hyps, size.eos_id),
        "ours": words(our_hyps, size.eos_id),
    }
    for key, timing in timings.items():
        t = timing.median_s
        row[key] = {
            **timing.as_dict(),
            "sentences_per_s": batch / t,
            "words": words_of[key],
            "words_per_min": 60.0 * words_of[key] / t,
        }
    row["speedup"] = timings["hf"].median_s / timings["ours"].median_s
    load = common.loadavg()
    row["loadavg_1m_after"] = load[0] if load else None
    return row


def hf_grid(args: argparse.Namespace, model_key: str) -> list[tuple[int, int, str]]:
    """(batch, beams, series) points for one model, in run order, without duplicates."""
    points: list[tuple[int, int, str]] = []
    seen: set[tuple[int, int]] = set()

    def add(b: int, k: int, series: str) -> None:
        if (b, k) not in seen:
            seen.add((b, k))
            points.append((b, k, series))

    for k in TARGET_BEAMS:
        add(args.target_batch, k, "target")
    if model_key in args.sweep_models:
        for k in args.beams:
            add(args.sweep_batch, k, "beam sweep")
        for b in args.batches:
            add(b, args.sweep_beam, "batch sweep")
    return points


# --------------------------------------------------------------------------- bundled model


def load_corpus(dev: torch.device, limit: int | None) -> tuple[Any, list[str], list[str]] | str:
    """(translator, source lines, reference lines), or the reason it is unavailable."""
    try:
        from importlib import resources

        from tensortext.decode.bundled import load_bundled_translator

        demo = resources.files("tensortext").joinpath("data/demo")
        src = demo.joinpath("translate.src").read_text(encoding="utf-8").splitlines()
        ref = demo.joinpath("translate.ref").read_text(encoding="utf-8").splitlines()
        model = load_bundled_translator(dev)
    except Exception as exc:
        return f"bundled translator or its test set unavailable: {type(exc).__name__}: {exc}"
    if len(src) != len(ref):
        return f"translate.src has {len(src)} lines but translate.ref {len(ref)}"
    if limit:
        src, ref = src[:limit], ref[:limit]
    return model, src, ref


def bundled_weights_sha256() -> str | None:
    """The checksum in the model's config.json: which trained weights were measured."""
    from importlib import resources

    try:
        text = resources.files("tensortext").joinpath("data/model/config.json").read_text()
        return str(json.loads(text).get("weights_sha256"))
    except (OSError, ValueError):
        return None


def hyp_lengths_without_eos(out: Any, eos_id: int) -> Tensor:
    """``[N]`` tokens of the best hypothesis before its EOS (or all, if cut at the limit)."""
    seqs, lens = out.sequences[:, 0], out.lengths[:, 0]
    pos = torch.arange(seqs.shape[1], device=seqs.device)
    is_eos = (seqs == eos_id) & (pos[None, :] < lens[:, None])
    first_eos = torch.where(is_eos, pos[None, :], seqs.shape[1]).min(1).values
    return torch.minimum(first_eos, lens)


def corpus_max_new_tokens(model: Any) -> Callable[[int], int]:
    """``translate``'s default ``2 * longest + 10``, capped by the model's positions."""
    cap = model.max_len - 1  # the start token plus at most max_len - 1 generated tokens
    return lambda longest: min(2 * longest + 10, cap)


def run_corpus_point(
    model: Any,
    src_ids: Tensor,
    src_lens: Tensor,
    ref_ids: Tensor,
    ref_lens: Tensor,
    beams: int,
    sentences: int,
    sort: bool,
    args: argparse.Namespace,
    dev: torch.device,
) -> tuple[dict[str, Any], list[tuple[int, ...]]]:
    from tensortext import corpus_bleu
    from tensortext.decode import translate

    def call() -> Any:
        with torch.inference_mode():
            return translate(
                model,
                src_ids,
                src_lens,
                num_beams=beams,
                max_sentences=sentences,
                sort_by_length=sort,
                max_new_tokens=corpus_max_new_tokens(model),
            )

    row: dict[str, Any] = {
        "beams": beams,
        "sentences_per_batch": sentences,
        "sorted": sort,
        "status": "ok",
    }
    try:
        # A whole corpus per call (300 sentences in 300 / n batches) is already an average, so
        # a call longer than --budget is timed once; the model was warmed up before the grid.
        # The peak is over the timed calls (memory is freed between calls).
        with common.PeakMemory(dev) as pm:
            timing = common.time_fn(
                call,
                warmup=0,
                repeat=args.corpus_repeat,
                device=dev,
                budget_s=args.budget,
                min_repeat=1,
            )
    except Exception as exc:
        row.update(status="error", reason=f"{type(exc).__name__}: {exc}")
        return row, []
    out = timing.value
    hyp_lens = hyp_lengths_without_eos(out, model.eos_id)
    hyp_ids = out.sequences[:, 0]
    bleu = corpus_bleu(hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens)
    n_words = int(hyp_lens.sum())
    row.update(timing.as_dict())
    row.pop("peak_extra_mib", None)
    row.update(
        peak_extra_mib=pm.extra_bytes / common.MiB if pm.extra_bytes is not None else None,
        sentences=int(src_ids.shape[0]),
        words=n_words,
        words_per_min=60.0 * n_words / timing.median_s,
        sentences_per_s=src_ids.shape[0] / timing.median_s,
        bleu=100.0 * float(bleu),
        # cut at max_new_tokens without EOS: such outputs depend on the batch's longest source
        outputs_without_eos=int((hyp_lens == out.lengths[:, 0]).sum()),
    )
    load = common.loadavg()
    row["loadavg_1m_after"] = load[0] if load else None
    rows = [tuple(r[:n]) for r, n in zip(hyp_ids.tolist(), hyp_lens.tolist(), strict=True)]
    return row, rows


def corpus_grid(args: argparse.Namespace) -> list[tuple[int, int, bool, str]]:
    """(beams, sentences per batch, sorted, series) points, in run order, without duplicates."""
    points: list[tuple[int, int, bool, str]] = []
    seen: set[tuple[int, int, bool]] = set()

    def add(k: int, n: int, s: bool, series: str) -> None:
        if (k, n, s) not in seen:
            seen.add((k, n, s))
            points.append((k, n, s, series))

    for n in args.corpus_beam_batches:
        for k in args.corpus_beams:
            add(k, n, True, "figure 2")
    for s in (True, False):
        for n in args.corpus_batches:
            add(args.sweep_beam, n, s, "figure 3")
    return points


# --------------------------------------------------------------------------- reporting


def fmt(x: float | None, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def hf_table(rows: list[dict[str, Any]], labels: dict[str, str]) -> str:
    lines = [
        "| model | B | K | HF sent/s | ours sent/s | HF words/min | ours words/min | speedup "
        "| mean len | seq. mismatches | score mismatches (max \\|diff\\|) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        head = f"| {labels.get(r['model'], r['model'])} | {r['batch']} | {r['beams']} |"
        if r["status"] != "ok":
            lines.append(head + f" {r['status']}: {r.get('reason', r.get('errors', ''))} |")
            continue
        p = r["parity"]
        lines.append(
            head + f" {r['hf']['sentences_per_s']:.2f} | {r['ours']['sentences_per_s']:.2f} |"
            f" {r['hf']['words_per_min']:,.0f} | {r['ours']['words_per_min']:,.0f} |"
            f" {r['speedup']:.2f}x | {r['mean_output_tokens']:.1f} |"
            f" {p['sequence_mismatches']}/{p['sentences']} |"
            f" {p['score_mismatches']} ({fmt(p['max_abs_score_diff'], '.1e')}) |"
        )
    return "\n".join(lines)


def bleu_cell(rows: list[dict[str, Any]]) -> str:
    """One BLEU if batching left the output unchanged, else every distinct value, in order."""
    values = list(dict.fromkeys(f"{r['bleu']:.2f}" for r in rows))
    return " / ".join(values) if values else "-"


def corpus_tables(rows: list[dict[str, Any]]) -> str:
    ok = [r for r in rows if r["status"] == "ok"]
    at = {(r["beams"], r["sentences_per_batch"], r["sorted"]): r for r in ok}
    out = []
    fig2 = sorted({(r["beams"], r["sentences_per_batch"]) for r in ok if r["sorted"]})
    # Figure 2's series: the batch sizes measured at more than one beam size.
    batches = sorted({n for _, n in fig2 if sum(m == n for _, m in fig2) > 1})
    beams = sorted({k for k, n in fig2 if n in batches})
    if beams:
        out.append("Words/min vs beam size (sorted; Figure 2), BLEU of the output:\n")
        out.append(
            "| K | "
            + " | ".join(f"{n} sent/batch" for n in batches)
            + f" | BLEU | peak MiB ({batches[-1]} sent/batch) |"
        )
        out.append("|---:|" + "---:|" * (len(batches) + 2))
        for k in beams:
            cells = [
                f"{at[(k, n, True)]['words_per_min']:,.0f}" if (k, n, True) in at else "-"
                for n in batches
            ]
            measured = [at[(k, n, True)] for n in batches if (k, n, True) in at]
            out.append(
                f"| {k} | " + " | ".join(cells) + f" | {bleu_cell(measured)} |"
                f" {fmt(measured[-1].get('peak_extra_mib'), '.0f')} |"
            )
    k3 = sorted({r["beams"] for r in ok if not r["sorted"]})
    for k in k3:
        ns = sorted({r["sentences_per_batch"] for r in ok if r["beams"] == k})
        out.append(f"\nWords/min vs sentences per batch, K={k} (Figure 3):\n")
        out.append("| sentences/batch | sorted | unsorted | sorted/unsorted | BLEU |")
        out.append("|---:|---:|---:|---:|---:|")
        for n in ns:
            s, u = at.get((k, n, True)), at.get((k, n, False))
            ratio = (
                s["words_per_min"] / u["words_per_min"] if s and u and u["words_per_min"] else None
            )
            out.append(
                f"| {n} | {fmt(s and s['words_per_min'], ',.0f')} |"
                f" {fmt(u and u['words_per_min'], ',.0f')} | {fmt(ratio, '.2f')} |"
                f" {bleu_cell([r for r in (s, u) if r])} |"
            )
    return "\n".join(out)


def markdown_report(payload: dict[str, Any]) -> str:
    parts = []
    hf = payload.get("hf", {})
    labels = {k: v["label"] for k, v in hf.get("models", {}).items()}
    if hf.get("results"):
        # Per model: the rows at the sweep batch by beam size, then the others by batch size.
        sweep_batch = hf.get("run", payload)["config"]["sweep_batch"]
        models = list(dict.fromkeys(r["model"] for r in hf["results"]))
        rows = sorted(
            hf["results"],
            key=lambda r: (
                models.index(r["model"]),
                r["batch"] != sweep_batch,
                r["batch"],
                r["beams"],
            ),
        )
        parts.append(hf_table(rows, labels))
    cr = payload.get("corpus", {})
    if cr.get("results"):
        parts.append(corpus_tables(cr["results"]))
        diffs = cr.get("batch_invariance", {})
        if diffs:
            parts.append(
                "Sentences whose output differs from the first batching run at the same K: "
                + ", ".join(f"K={k}: {v}" for k, v in diffs.items())
            )
    return "\n\n".join(parts)


def plot(payload: dict[str, Any], info: common.DeviceInfo, path: Path) -> Path:
    from matplotlib.ticker import NullLocator

    fig, axes = common.new_figure(4, width=5.2, height=4.3)
    hf = payload.get("hf", {})
    hf_rows = [r for r in hf.get("results", []) if r["status"] == "ok"]
    labels = {k: v["label"] for k, v in hf.get("models", {}).items()}
    cfg = hf.get("run", payload)["config"]
    for ax, (x_key, fixed_key, fixed, title) in zip(
        axes[:2],
        [
            ("beams", "batch", cfg["sweep_batch"], f"vs beam size, {cfg['sweep_batch']} sentences"),
            ("batch", "beams", cfg["sweep_beam"], f"vs sentences/batch, beam {cfg['sweep_beam']}"),
        ],
        strict=True,
    ):
        for mi, model in enumerate(sorted({r["model"] for r in hf_rows})):
            pts = sorted(
                ((r[x_key], r) for r in hf_rows if r["model"] == model and r[fixed_key] == fixed),
                key=lambda p: p[0],
            )
            if not pts:
                continue
            for impl, style in (("ours", "-"), ("hf", "--")):
                ax.plot(
                    [p[0] for p in pts],
                    [p[1][impl]["words_per_min"] for p in pts],
                    linestyle=style,
                    marker="os"[mi % 2],
                    color=f"C{mi}",
                    label=f"{'tensortext' if impl == 'ours' else 'HF generate'}, "
                    f"{labels.get(model, model)}",
                )
        ax.set_yscale("log")
        xs = sorted({r[x_key] for r in hf_rows if r[fixed_key] == fixed})
        if x_key == "batch":
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs, [str(x) for x in xs])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xlabel("beam size" if x_key == "beams" else "sentences per batch")
        ax.set_ylabel("output words / min")
        ax.set_title(f"HF vs ours: {title}", fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    corpus = [r for r in payload.get("corpus", {}).get("results", []) if r["status"] == "ok"]
    cfg = payload.get("corpus", {}).get("run", payload)["config"]
    ax = axes[2]
    bleu_ax = None
    for n in sorted({r["sentences_per_batch"] for r in corpus if r["sorted"]}):
        pts = sorted(
            ((r["beams"], r) for r in corpus if r["sorted"] and r["sentences_per_batch"] == n),
            key=lambda p: p[0],
        )
        if len(pts) < 2:
            continue
        ax.plot(
            [p[0] for p in pts],
            [p[1]["words_per_min"] for p in pts],
            marker="o",
            color=f"C{len(ax.lines)}",
            label=f"{n} sentence{'s' if n > 1 else ''}/batch"
            + (" (beam-only batching)" if n == 1 else ""),
        )
        if bleu_ax is None:
            # BLEU depends on the beam size only (batching does not change the output).
            bleu_ax = ax.twinx()
            bleu_ax.plot(
                [p[0] for p in pts], [p[1]["bleu"] for p in pts], ":", color="0.4", marker="."
            )
            bleu_ax.set_ylabel("BLEU (grey, dotted)")
    ax.set_yscale("log")
    ax.set_xlabel("beam size")
    ax.set_ylabel("output words / min")
    ax.set_title("bundled model: speed vs beam size (Fig. 2)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=7, loc="center right")
    ax = axes[3]
    for sort, style in ((True, "-"), (False, "--")):
        pts = sorted(
            (r["sentences_per_batch"], r["words_per_min"])
            for r in corpus
            if r["sorted"] == sort and r["beams"] == cfg["sweep_beam"]
        )
        if pts:
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                linestyle=style,
                marker="o",
                label="sorted by length" if sort else "unsorted",
            )
    ax.set_xscale("log", base=2)
    ns = sorted({r["sentences_per_batch"] for r in corpus if r["beams"] == cfg["sweep_beam"]})
    if ns:
        ax.set_xticks(ns, [str(n) for n in ns])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("sentences per batch")
    ax.set_ylabel("output words / min")
    ax.set_title(
        f"bundled model: sentence batching, beam {cfg['sweep_beam']} (Fig. 3)", fontsize=10
    )
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(fontsize=7)
    for ax in axes:
        if not ax.lines:
            ax.text(0.5, 0.5, "not measured", ha="center", va="center", transform=ax.transAxes)
    fig.suptitle(info.name, fontsize=9)
    return common.save_figure(fig, path)


# --------------------------------------------------------------------------- running


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", choices=["cpu", "cuda"], default=common.default_device())
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads (default 1 on CPU, torch's default on CUDA)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: Marian-base shrunk, batch 16, beams 1/4/12, fewer points and calls",
    )
    p.add_argument("--parts", nargs="+", choices=["hf", "bundled"], default=["hf", "bundled"])
    p.add_argument(
        "--models",
        nargs="+",
        choices=list(MARIANS),
        default=list(MARIANS),
        help="random Marians for the HF comparison (default: base tiny)",
    )
    p.add_argument(
        "--sweep-models",
        nargs="+",
        choices=list(MARIANS),
        default=None,
        help="models that also get the beam and batch sweeps (default: all on CUDA, tiny on "
        "CPU, where Marian-base at 64 x 12 takes ~1 minute a call)",
    )
    p.add_argument("--target-batch", type=int, default=None, help="batch of the K=4/12 targets")
    p.add_argument("--beams", type=int, nargs="+", default=None, help="beam sweep (HF part)")
    p.add_argument("--sweep-batch", type=int, default=None, help="batch of the beam sweep")
    p.add_argument("--batches", type=int, nargs="+", default=None, help="batch sweep (HF part)")
    p.add_argument("--sweep-beam", type=int, default=4, help="beam of the batch sweeps")
    p.add_argument("--corpus-beams", type=int, nargs="+", default=None)
    p.add_argument(
        "--corpus-beam-batches",
        type=int,
        nargs="+",
        default=[1, 64],
        help="sentences per batch of the Figure 2 series (default 1 64)",
    )
    p.add_argument("--corpus-batches", type=int, nargs="+", default=None)
    p.add_argument(
        "--sentences", type=int, default=0, help="use the first N test sentences (0: all 300)"
    )
    p.add_argument("--repeat", type=int, default=None, help="timed calls per HF point")
    p.add_argument("--corpus-repeat", type=int, default=None, help="timed calls per corpus point")
    p.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="untimed calls per implementation and HF point, the parity call included; with 2 "
        "or more the last one measures peak memory (default 2 on CUDA, 1 on CPU)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="stop timing a point once its timed calls used this many seconds (at least "
        "--min-repeat calls are timed) (default 10)",
    )
    p.add_argument(
        "--min-repeat",
        type=int,
        default=None,
        help="timed calls per HF point that --budget cannot cut (default 3 on CUDA, 1 on CPU, "
        "where one Marian-base call at 64 x 12 takes about a minute); corpus points: always 1",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=0.0,
        help="start no new point after this many seconds; the rest are recorded as skipped "
        "(0: no limit). The JSON is rewritten after every point.",
    )
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--name", default="beam", help="result file stem (default: beam)")
    p.add_argument("--out-dir", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--no-plot", action="store_true")
    p.add_argument(
        "--merge",
        action="store_true",
        help="keep the parts not in --parts from the existing result file (each part records "
        "its own run metadata), e.g. to add the bundled part to an earlier HF run",
    )
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="JSON",
        help="print the markdown tables of an existing result file, run nothing",
    )
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda requested but torch.cuda.is_available() is False")
    cuda = args.device == "cuda"
    if args.sweep_models is None:
        args.sweep_models = list(MARIANS) if cuda else ["tiny"]
    if args.quick:
        defaults = dict(
            target_batch=16,
            beams=QUICK_BEAMS,
            sweep_batch=16,
            batches=QUICK_BATCHES,
            corpus_beams=QUICK_BEAMS,
            corpus_batches=QUICK_CORPUS_BATCHES,
            repeat=2,
            corpus_repeat=1,
            warmup=1,
            budget=2.0,
            min_repeat=1,
        )
    else:
        defaults = dict(
            target_batch=64,
            beams=FULL_BEAMS,
            sweep_batch=64,
            batches=FULL_BATCHES,
            corpus_beams=FULL_BEAMS,
            corpus_batches=FULL_BATCHES,
            repeat=5,
            corpus_repeat=3,
            warmup=2 if cuda else 1,
            budget=10.0,
            min_repeat=3 if cuda else 1,
        )
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    for name in ("target_batch", "sweep_batch", "sweep_beam", "repeat", "corpus_repeat"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1")
    for name in ("beams", "batches", "corpus_beams", "corpus_batches", "corpus_beam_batches"):
        if min(getattr(args, name)) < 1:
            p.error(f"--{name.replace('_', '-')} values must be >= 1")
    return args


def make_payload(
    args: argparse.Namespace,
    meta: dict[str, Any],
    models: dict[str, Any],
    hf_rows: list[dict[str, Any]],
    corpus: dict[str, Any],
    t_start: float,
    previous: dict[str, Any],
) -> dict[str, Any]:
    """The result file; with ``--merge``, the parts not run now come from ``previous``."""
    run = {
        "metadata": meta,
        "config": {
            "parts": args.parts,
            "quick": args.quick,
            "target_batch": args.target_batch,
            "target_beams": TARGET_BEAMS,
            "beams": args.beams,
            "sweep_batch": args.sweep_batch,
            "batches": args.batches,
            "sweep_beam": args.sweep_beam,
            "sweep_models": args.sweep_models,
            "corpus_beams": args.corpus_beams,
            "corpus_beam_batches": args.corpus_beam_batches,
            "corpus_batches": args.corpus_batches,
            "repeat": args.repeat,
            "corpus_repeat": args.corpus_repeat,
            "warmup": args.warmup,
            "budget_s": args.budget,
            "min_repeat": args.min_repeat,
            "time_limit_s": args.time_limit or None,
            "seed": args.seed,
            "score_tolerance": SCORE_TOL,
            "hf_settings": "model.generate(input_ids, attention_mask=..., num_beams=K, "
            f"do_sample=False, max_new_tokens={MAX_NEW_TOKENS}, length_penalty=1.0, "
            "early_stopping=False) (greedy for K=1: no beam-only flags); generation_config: "
            "forced_eos_token_id=0, bad_words_ids=[[pad]]; ours: tensortext.decode.hf.generate "
            "with the same values",
            "inputs": f"random source tokens (1..vocab-2), lengths uniform {SOURCE_LENS[0]}.."
            f"{SOURCE_LENS[1]}, right-padded; the batches of a model are prefixes of one seeded "
            "pool",
            "output_lengths": "model-driven: the EOS logit is calibrated to overtake the other "
            "tokens when the output is about as long as the source (see models.*.eos_calibration)"
            f"; max_new_tokens={MAX_NEW_TOKENS} is a cap that is rarely reached",
            "words": "generated tokens of the best hypothesis, EOS excluded",
            "timing": "median wall-clock seconds per call; CUDA synchronised around each call; "
            "HF and ours interleaved round-robin (rotating start); the first warm-up call of each "
            "is the (untimed) parity call; one untimed call before each timed one when the last "
            "call took < rewarm_below_s; corpus points: one translate() call over the whole test "
            "set per timed call, after a global warm-up",
            "rewarm_below_s": REWARM_BELOW_S,
            "parity": "tokens of the best hypothesis up to and including EOS must be equal; "
            "scores (sum of log-probs / length) within score_tolerance where tokens are equal; "
            "HF scores are sequences_scores (output_scores=True) for K > 1",
        },
        "loadavg_at_end": common.loadavg(),
        "wall_time_s": time.perf_counter() - t_start,
    }
    if "hf" in args.parts or not previous.get("hf"):
        hf: dict[str, Any] = {"run": run, "models": models, "results": hf_rows}
    else:
        hf = previous["hf"]
    if "bundled" in args.parts or not previous.get("corpus"):
        corpus = {"run": run, **corpus}
    else:
        corpus = previous["corpus"]
    return {
        "benchmark": "batched beam search",
        "hf": hf,
        "corpus": corpus,
        **run,
    }


def skipped(args: argparse.Namespace, **point: Any) -> dict[str, Any]:
    return {**point, "status": "skipped", "reason": f"--time-limit {args.time_limit:g} s reached"}


def run_hf_part(
    args: argparse.Namespace,
    dev: torch.device,
    models: dict[str, Any],
    hf_rows: list[dict[str, Any]],
    save: Callable[[], None],
    out_of_time: Callable[[], bool],
) -> None:
    """HF vs ours on every model's grid; rows are appended to ``hf_rows`` as they finish."""
    for key in args.models:
        size = QUICK_BASE if args.quick and key == "base" else MARIANS[key]
        points = hf_grid(args, key)
        if out_of_time():
            hf_rows += [
                skipped(args, model=key, batch=b, beams=k, series=series) for b, k, series in points
            ]
            continue
        try:
            model, minfo = build_marian(size, args.seed)
        except ImportError as exc:
            log.warning("HF part skipped: %s (pip install transformers)", exc)
            return
        model = model.to(dev)
        models[key] = {"label": size.label, **asdict(size), **minfo}
        ids, mask, _ = make_sources(
            size.vocab, max(b for b, _, _ in points), args.seed + 10, size.pad_id
        )
        print(
            f"\n{size.label}: d_model {size.d_model}, {size.layers}+{size.layers} layers, "
            f"vocab {size.vocab}, {minfo['parameters'] / 1e6:.1f}M parameters; "
            f"{len(points)} points",
            flush=True,
        )
        for b, k, series in points:
            if out_of_time():
                row = skipped(args, model=key, batch=b, beams=k)
            else:
                try:
                    row = run_hf_point(model, size, ids, mask, b, k, args, dev)
                except Exception as exc:  # one failing point must not lose the others
                    row = {
                        "model": key,
                        "batch": b,
                        "beams": k,
                        "status": "error",
                        "reason": f"{type(exc).__name__}: {exc}",
                        "traceback": traceback.format_exc(limit=-4),
                    }
            row["series"] = series
            hf_rows.append(row)
            print(hf_table([row], {key: size.label}).splitlines()[-1], flush=True)
            save()
        del model
        if dev.type == "cuda":
            torch.cuda.empty_cache()


def run_corpus_part(
    args: argparse.Namespace,
    dev: torch.device,
    corpus: dict[str, Any],
    save: Callable[[], None],
    out_of_time: Callable[[], bool],
) -> None:
    """Figures 2-3 with the bundled translator; fills ``corpus`` in place."""
    from tensortext.decode import translate

    loaded = load_corpus(dev, args.sentences or None)
    if isinstance(loaded, str):
        log.warning("bundled part skipped: %s", loaded)
        corpus.update(status="unavailable", reason=loaded)
        return
    translator, src_lines, ref_lines = loaded
    src_ids, src_lens = translator.tokenize_source(src_lines)
    ref_ids, ref_lens = translator.tokenize_target(ref_lines)
    corpus.update(
        status="ok",
        model="tensortext.decode.bundled.load_bundled_translator()",
        weights_sha256=bundled_weights_sha256(),
        parameters=sum(p.numel() for p in translator.parameters()),
        test_set="tensortext/data/demo/translate.src / translate.ref",
        sentences=len(src_lines),
        source_tokens=int(src_lens.sum()),
        reference_words=int(ref_lens.sum()),
        translate_settings="translate(model, src_ids, src_lens, num_beams=K, max_sentences=n, "
        "sort_by_length=sorted, max_new_tokens=min(2 * longest + 10, max_len - 1)); "
        "length_penalty 1.0, early_stopping False, refill",
        bleu="tensortext.corpus_bleu on target word IDs (tokenize_target of the references; "
        "hypotheses cut before EOS), sacrebleu-compatible, x100",
        results=[],
        batch_invariance={},
    )
    print(
        f"\nbundled translator ({corpus['parameters'] / 1e6:.2f}M parameters), "
        f"{len(src_lines)} sentences, {corpus['source_tokens']} source tokens",
        flush=True,
    )
    with torch.inference_mode():  # warm-up: first calls, allocator, kernels
        n = min(16, len(src_lines))
        for k in (1, 4):
            translate(
                translator,
                src_ids[:n],
                src_lens[:n],
                num_beams=k,
                max_sentences=n,
                max_new_tokens=corpus_max_new_tokens(translator),
            )
    common.synchronize(dev)
    first_output: dict[int, list[tuple[int, ...]]] = {}
    for k, n, s, series in corpus_grid(args):
        outputs: list[tuple[int, ...]] = []
        if out_of_time():
            row = skipped(args, beams=k, sentences_per_batch=n, sorted=s)
        else:
            row, outputs = run_corpus_point(
                translator, src_ids, src_lens, ref_ids, ref_lens, k, n, s, args, dev
            )
        row["series"] = series
        if outputs:
            # Sentence batching should not change a translation (paper, 4.5); float rounding in
            # differently shaped batches could flip near-ties, and so could a length cap that
            # depends on the batch's longest source (only for outputs cut without EOS).
            base = first_output.setdefault(k, outputs)
            differ = sum(a != b for a, b in zip(base, outputs, strict=True))
            row["outputs_differing_from_first_run_at_this_k"] = differ
            corpus["batch_invariance"][str(k)] = max(
                corpus["batch_invariance"].get(str(k), 0), differ
            )
        corpus["results"].append(row)
        if row["status"] == "ok":
            print(
                f"K={k:>2} sentences/batch={n:>3} {'sorted' if s else 'unsorted':>8}: "
                f"{row['words_per_min']:>10,.0f} words/min  {row['median_s']:.2f} s  "
                f"BLEU {row['bleu']:.2f}  (n={row['n_samples']})",
                flush=True,
            )
        else:
            print(f"K={k} n={n} sorted={s}: {row['status']} {row.get('reason')}", flush=True)
        save()


def main(argv: list[str] | None = None) -> int:
    t_start = time.perf_counter()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    args = parse_args(argv)
    if args.report is not None:
        print(markdown_report(json.loads(args.report.read_text(encoding="utf-8"))))
        return 0
    warnings.filterwarnings("ignore", category=UserWarning)
    with contextlib.suppress(ImportError):
        import transformers

        transformers.logging.set_verbosity_error()
    dev = torch.device(args.device)
    threads = args.threads if args.threads is not None else (1 if dev.type == "cpu" else None)
    if threads is not None:
        torch.set_num_threads(threads)
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(threads)
    info = common.device_info(dev)
    print(f"device: {info.name}   slug: {info.slug}   torch {torch.__version__}", flush=True)
    json_path = common.results_path(args.name, info, ".json", args.out_dir)
    png_path = common.results_path(args.name, info, ".png", args.out_dir)
    meta = common.run_metadata(info, ["tensortext", "transformers", "numpy", "matplotlib"])
    models: dict[str, Any] = {}
    hf_rows: list[dict[str, Any]] = []
    corpus: dict[str, Any] = {}

    previous: dict[str, Any] = {}
    if args.merge and json_path.is_file():
        previous = json.loads(json_path.read_text(encoding="utf-8"))

    def save() -> None:
        payload = make_payload(args, meta, models, hf_rows, corpus, t_start, previous)
        common.write_json(json_path, payload)

    def out_of_time() -> bool:
        return bool(args.time_limit) and time.perf_counter() - t_start > args.time_limit

    if "hf" in args.parts:
        run_hf_part(args, dev, models, hf_rows, save, out_of_time)
    if "bundled" in args.parts:
        run_corpus_part(args, dev, corpus, save, out_of_time)

    payload = make_payload(args, meta, models, hf_rows, corpus, t_start, previous)
    common.write_json(json_path, payload)
    print("\n" + markdown_report(payload), flush=True)
    print(f"\nwrote {json_path}", flush=True)
    if not args.no_plot and (payload["hf"].get("results") or payload["corpus"].get("results")):
        print(f"wrote {plot(payload, info, png_path)}", flush=True)
    print(f"total wall time {payload['wall_time_s']:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
