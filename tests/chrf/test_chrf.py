"""Property-based parity of tensortext's chrF and chrF++ with ``sacrebleu.metrics.CHRF``.

Every test draws a batch of short texts over a tiny alphabet (``chrf_texts``) and options, and
checks tensortext against sacrebleu: statistics exactly (integers), scores within
``oracles.chrf.ATOL`` (float32 1e-6, float64 1e-12 absolute on 0..1, rtol=0).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
import torch
from chrf_texts import batches, options
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.chrf import (
    assert_scores_close,
    assert_stats_equal,
    codepoint_refs,
    codepoints,
    ref_corpus,
    ref_sentence,
    ref_stats,
)
from strategies import MAX_EXAMPLES, SETTINGS

import tensortext.chrf.runs
from tensortext.chrf import (
    CHRF,
    ChrfConfig,
    chrf_from_stats,
    chrf_stats,
    corpus_chrf,
    sentence_chrf,
)
from tensortext.padded import Padded

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))
DTYPES = (torch.float32, torch.float64)


@SETTINGS
@given(batch=batches(), opts=options())
def test_stats_equal_sacrebleu(batch: Any, opts: dict[str, Any]) -> None:
    hyps, refs = batch
    ours = chrf_stats(hyps, refs, **opts)
    config = ChrfConfig(**opts)
    assert ours.shape == (len(hyps), 3 * config.orders) and ours.dtype == torch.int64
    assert_stats_equal(
        ours,
        ref_stats(hyps, refs, **opts),
        label=f"stats {opts}",
        inputs=list(zip(hyps, refs, strict=True)),
    )


@SETTINGS
@given(batch=batches(), opts=options(), dtype=st.sampled_from(DTYPES))
def test_sentence_and_corpus_equal_sacrebleu(
    batch: Any, opts: dict[str, Any], dtype: torch.dtype
) -> None:
    hyps, refs = batch
    inputs = list(zip(hyps, refs, strict=True))
    sentence = sentence_chrf(hyps, refs, dtype=dtype, **opts)
    assert sentence.dtype == dtype and sentence.shape == (len(hyps),)
    assert_scores_close(
        sentence,
        ref_sentence(hyps, refs, **opts),
        dtype=dtype,
        label=f"sentence {opts}",
        inputs=inputs,
    )
    corpus = corpus_chrf(hyps, refs, dtype=dtype, **opts)
    assert corpus.dtype == dtype and corpus.shape == ()
    expected = ref_corpus(hyps, refs, **opts) if hyps else 0.0
    assert_scores_close(corpus, expected, dtype=dtype, label=f"corpus {opts}", inputs=inputs)


@FEWER
@given(batch=batches(), opts=options(lowercase=False), variant=st.sampled_from(range(4)))
def test_codepoint_tensors_equal_text(batch: Any, opts: dict[str, Any], variant: int) -> None:
    """Padded, tensors with lengths, pad_id padding and one reference per sentence."""
    hyps, refs = batch
    expected = chrf_stats(hyps, refs, **opts)
    hyp, ref = codepoints(hyps), codepoint_refs(refs)
    if variant == 0:
        ours = chrf_stats(hyp, ref, **opts)
    elif variant == 1:
        ours = chrf_stats(hyp.ids, ref.ids, hyp_lens=hyp.lengths, ref_lens=ref.lengths, **opts)
    elif variant == 2:  # -1 pads; an all-padding slot is a missing reference
        if any(r == "" for row in refs for r in row):
            return  # pad_id cannot tell an empty reference from a missing one
        ours = chrf_stats(hyp.ids, ref.ids, pad_id=-1, **opts)
    else:  # first reference only, [B, L'] with a Padded
        first = [[row[0]] for row in refs]
        expected = chrf_stats(hyps, first, **opts)
        ours = chrf_stats(hyp, Padded(ref.ids[:, 0], ref.lengths[:, 0]), **opts)
    assert torch.equal(ours, expected), (opts, variant, hyps, refs)


@FEWER
@given(batch=batches(max_batch=8), opts=options(), seed=st.integers(0, 2**16))
def test_stats_add_over_any_split(batch: Any, opts: dict[str, Any], seed: int) -> None:
    """Statistics per sentence do not depend on the rest of the batch; corpus = summed rows."""
    hyps, refs = batch
    whole = chrf_stats(hyps, refs, **opts)
    order = list(range(len(hyps)))
    random.Random(seed).shuffle(order)
    cut = len(order) // 2
    parts = [order[:cut], order[cut:]]
    rows = torch.zeros_like(whole)
    for part in parts:
        rows[part] = chrf_stats([hyps[i] for i in part], [refs[i] for i in part], **opts)
    assert torch.equal(rows, whole)
    config = ChrfConfig(**opts, dtype=torch.float64)
    assert chrf_from_stats(whole.sum(0), config=config) == corpus_chrf(hyps, refs, config=config)
    assert torch.equal(
        chrf_from_stats(whole, config=config), sentence_chrf(hyps, refs, config=config)
    )


@FEWER
@given(batch=batches(max_batch=8), opts=options(), cut=st.integers(0, 8))
def test_metric_class_equals_corpus_chrf(batch: Any, opts: dict[str, Any], cut: int) -> None:
    hyps, refs = batch
    metric = CHRF(**opts, dtype=torch.float64)
    first = metric.update(hyps[:cut], refs[:cut])
    metric.update(hyps[cut:], refs[cut:])
    assert torch.equal(first, chrf_stats(hyps[:cut], refs[:cut], **opts))
    expected = corpus_chrf(hyps, refs, dtype=torch.float64, **opts)
    assert metric.compute() == expected
    assert metric.score().score == pytest.approx(100 * float(expected), abs=1e-10)
    metric.reset()
    assert metric.stats is None  # then zero statistics: 0, or sacrebleu's 1e-16 with eps
    zero = torch.zeros(3 * metric.config.orders, dtype=torch.long)
    assert metric.compute() == chrf_from_stats(zero, config=metric.config)


@FEWER
@given(batch=batches(), opts=options())
def test_keys_in_several_steps(batch: Any, opts: dict[str, Any]) -> None:
    """With keys of 24 bits instead of 62, orders come in steps joined by ranks: still exact."""
    hyps, refs = batch
    expected = ref_stats(hyps, refs, **opts)
    patch = pytest.MonkeyPatch()
    patch.setattr(tensortext.chrf.runs, "KEY_BITS", 24)
    try:
        ours = chrf_stats(hyps, refs, **opts)
    finally:
        patch.undo()
    assert_stats_equal(ours, expected, label=f"24-bit keys {opts}")


def test_on_every_device(device: str) -> None:
    """Text scored on ``device`` and codepoint tensors there equal sacrebleu (CPU; CUDA when
    present)."""
    hyps = ["the cat sat on the mat.", "", "(hi) there", "日本語のテキスト 😀"]
    refs: list[list[str | None]] = [["the cat sat", None], ["x", "y"], ["(hi)", "hi"], ["日本語"]]
    for opts in ({}, {"word_order": 2}, {"whitespace": True, "eps_smoothing": True}):
        expected = ref_stats(hyps, refs, **opts)
        on_device = chrf_stats(hyps, refs, device=device, **opts)
        assert on_device.device.type == torch.device(device).type
        assert on_device.cpu().tolist() == expected
        tensors = chrf_stats(codepoints(hyps).to(device), codepoint_refs(refs).to(device), **opts)
        assert tensors.cpu().tolist() == expected
        scores = sentence_chrf(hyps, refs, device=device, dtype=torch.float64, **opts)
        assert_scores_close(
            scores, ref_sentence(hyps, refs, **opts), dtype=torch.float64, label=f"{device} {opts}"
        )
