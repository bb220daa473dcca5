"""N-gram posteriors (``tensortext.lmbr.posteriors``) against the brute force of ``oracles.lmbr``.

* :func:`ngram_posteriors` (queried with :meth:`NgramPosteriors.lookup`) against
  :func:`brute_posteriors` on random n-best lists with repeated n-grams, empty and absent
  (``-inf``) hypotheses, sentences without any, sentence boundaries, float32 and float64 scores
  and IDs up to 2**40; present and absent n-grams of every order.
* :meth:`NgramPosteriors.from_ngrams`: lookups return exactly the listed values.
* :meth:`Evidence.from_beam_output`: EOS dropped, scores back to log-probabilities.

Tolerances: posteriors within 1e-12 of the float64 brute force for float64 scores and 2e-6 for
float32 scores (a softmax over at most 6 hypotheses and a sum of at most 6 weights).
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracles.lmbr import (
    BOS_MARK,
    EOS_MARK,
    INF,
    TINY_IDS,
    TINY_LENS,
    TINY_SCORES,
    NBest,
    all_ngrams,
    brute_posteriors,
    lookup,
    nbest_lists,
    posterior_tables,
    tiny_posteriors,
)
from strategies import SETTINGS

import tensortext.lmbr.posteriors as posteriors_module
from tensortext._checks import MAX_NGRAM_ORDER
from tensortext.decode import BeamOutput
from tensortext.lmbr import (
    Evidence,
    LMBRBias,
    NgramPosteriors,
    lmbr_theta,
    ngram_posteriors,
)
from tensortext.padded import PAD_ID as PAD

# --------------------------------------------------------------------------------------------
# Posteriors
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(
    nbest=nbest_lists(),
    alpha=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    max_ngram_order=st.integers(1, 5),
    boundaries=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    validate=st.booleans(),
    data=st.data(),
)
def test_posteriors_equal_brute_force(
    nbest, alpha, max_ngram_order, boundaries, dtype, validate, data
):
    bos, eos = (BOS_MARK, EOS_MARK) if boundaries else (None, None)
    ids, lens, scores = nbest.tensors(dtype)
    post = ngram_posteriors(
        ids,
        lens,
        scores,
        alpha=alpha,
        max_ngram_order=max_ngram_order,
        bos_id=bos,
        eos_id=eos,
        validate=validate,
    )
    assert post.max_ngram_order == max_ngram_order and post.num_sentences == len(nbest.hyps)
    assert (post.bos_id, post.eos_id) == (bos, eos)
    rounded = nbest.rounded_scores(dtype)
    expected = [
        brute_posteriors(nbest.hyps[b], rounded[b], alpha, max_ngram_order, bos, eos)
        for b in range(len(nbest.hyps))
    ]
    # Present n-grams, n-grams of absent hypotheses and of the padding, random ones, the markers.
    queries = all_ngrams(nbest, max_ngram_order, bos, eos)
    extra_tokens = [*nbest.alphabet, BOS_MARK, EOS_MARK, 0, 2**40 + 5]
    queries.update(
        tuple(u)
        for u in data.draw(
            st.lists(st.lists(st.sampled_from(extra_tokens), min_size=1, max_size=max_ngram_order)),
            label="random n-grams",
        )
    )
    ngrams = sorted(queries)
    sentences = [b for b in range(len(nbest.hyps)) for _ in ngrams]
    got = lookup(post, ngrams * len(nbest.hyps), sentences)
    want = [expected[b].get(u, 0.0) for b in range(len(nbest.hyps)) for u in ngrams]
    atol = 1e-12 if dtype == torch.float64 else 2e-6
    for value, reference, u, b in zip(got, want, ngrams * len(nbest.hyps), sentences, strict=True):
        assert abs(value - reference) <= atol, (b, u, value, reference)
    # Sentences without any hypothesis have no evidence at all.
    for b, row in enumerate(rounded):
        if all(s == -INF for s in row):
            assert all(v == 0.0 for v, s in zip(got, sentences, strict=True) if s == b)


# --------------------------------------------------------------------------------------------
# Posteriors given explicitly
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(tables=posterior_tables(), markers=st.sampled_from([(None, None), (1, 2), (None, 0)]))
def test_from_ngrams_lookups_return_the_listed_values(tables, markers):
    bos, eos = markers
    post = NgramPosteriors.from_ngrams(tables, bos_id=bos, eos_id=eos)
    assert post.max_ngram_order == max((len(u) for t in tables for u in t), default=1)
    assert (post.bos_id, post.eos_id, post.num_sentences) == (bos, eos, len(tables))
    listed = sorted({u for t in tables for u in t})
    prefixes = sorted({u[:n] for u in listed for n in range(1, len(u))})
    others = sorted({(*u[:-1], u[-1] + 1) for u in listed} | {(2**41,), (0, 0)})
    ngrams = [u for u in listed + prefixes + others if len(u) <= post.max_ngram_order]
    for b, table in enumerate(tables):
        got = lookup(post, ngrams, [b] * len(ngrams))
        for u, value in zip(ngrams, got, strict=True):
            # Listed: exactly the value; anything else (prefixes, other sentences' n-grams): 0.
            assert value == table.get(u, 0.0), (b, u, value)


# --------------------------------------------------------------------------------------------
# Errors, raised before any work
# --------------------------------------------------------------------------------------------


# The exception rule: TypeError for a wrong type or dtype, ValueError for a wrong shape, device or
# value; every message names the argument.
POSTERIOR_INPUT_ERRORS = {
    "2-D ids": (dict(ids=TINY_IDS[0]), ValueError, r"ids must have shape \[B, M, L\]"),
    "float ids": (dict(ids=TINY_IDS.float()), TypeError, "ids must have an integer dtype"),
    "ids elsewhere": (dict(ids=TINY_IDS.to("meta")), ValueError, "lengths is on cpu but ids"),
    "lens shape": (dict(lengths=TINY_LENS[0]), ValueError, r"lengths must have shape \[1, 2\]"),
    "float lens": (dict(lengths=TINY_LENS.float()), TypeError, "lengths must have an integer"),
    "lens elsewhere": (dict(lengths=TINY_LENS.to("meta")), ValueError, "lengths is on meta"),
    "scores shape": (dict(scores=TINY_SCORES.T), ValueError, r"scores must have shape \[B, M\]"),
    "int scores": (dict(scores=TINY_SCORES.long()), TypeError, "scores must have a floating"),
    "scores elsewhere": (dict(scores=TINY_SCORES.to("meta")), ValueError, "scores is on meta"),
    "lens < 0": (dict(lengths=torch.tensor([[3, -1]])), ValueError, r"lengths must be in 0\.\.3"),
    "lens > L": (dict(lengths=torch.tensor([[4, 2]])), ValueError, r"lengths must be in 0\.\.3"),
    "nan score": (dict(scores=torch.tensor([[0.0, math.nan]])), ValueError, "NaN"),
    "+inf score": (dict(scores=torch.tensor([[INF, 0.0]])), ValueError, r"\+inf"),
    "nan alpha": (dict(alpha=math.nan), ValueError, "alpha must be finite"),
    "inf alpha": (dict(alpha=INF), ValueError, "alpha must be finite"),
    "bool alpha": (dict(alpha=True), TypeError, "alpha must be a number"),
    "max_ngram_order 0": (dict(max_ngram_order=0), ValueError, "max_ngram_order must be >= 1"),
    "float order": (dict(max_ngram_order=2.0), TypeError, "max_ngram_order must be an int"),
    # 10**6 orders ran for over a minute (one trie table per order).
    "order 10**6": (dict(max_ngram_order=10**6), ValueError, "max_ngram_order must be <= 1000"),
}


@pytest.mark.parametrize("case", sorted(POSTERIOR_INPUT_ERRORS))
def test_ngram_posteriors_rejects_bad_input_before_any_work(case, monkeypatch):
    override, error, match = POSTERIOR_INPUT_ERRORS[case]

    def no_work(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the n-gram trie was built before the input was checked")

    monkeypatch.setattr(posteriors_module, "build_trie", no_work)
    kwargs: dict[str, Any] = dict(ids=TINY_IDS, lengths=TINY_LENS, scores=TINY_SCORES)
    kwargs.update(override)
    with pytest.raises(error, match=match):
        ngram_posteriors(**kwargs)


@pytest.mark.parametrize(
    ("ngrams", "sentence", "match"),
    [
        (torch.ones(2, 3, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), r"1 <= n <= 2"),
        (torch.ones(2, 0, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), r"1 <= n <= 2"),
        (torch.ones(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), r"\[Q, n\]"),
        (torch.ones(2, 1, dtype=torch.int64), torch.tensor([0, 1]), r"must be in 0\.\.0"),
        (torch.ones(2, 1, dtype=torch.int64), torch.tensor([0, -1]), r"must be in 0\.\.0"),
        (torch.ones(2, 1, dtype=torch.int64), torch.zeros(3, dtype=torch.int64), r"\[Q\] = \[2\]"),
        (
            torch.ones(2, 1, dtype=torch.int64, device="meta"),
            torch.zeros(2, dtype=torch.int64),
            "ngrams is on meta",
        ),
    ],
    ids=[
        "n>N",
        "n=0",
        "1-D",
        "sentence>=B",
        "sentence<0",
        "sentence shape",
        "device",
    ],
)
def test_lookup_rejects_bad_queries(ngrams, sentence, match):
    with pytest.raises(ValueError, match=match):
        tiny_posteriors().lookup(ngrams, sentence)


@pytest.mark.parametrize(
    ("ngrams", "sentence", "match"),
    [
        (torch.ones(2, 1), torch.zeros(2, dtype=torch.int64), "ngrams must have an integer dtype"),
        (torch.ones(2, 1, dtype=torch.int64), torch.zeros(2), "sentence must have an integer"),
    ],
    ids=["float ngrams", "float sentence"],
)
def test_lookup_rejects_float_queries(ngrams, sentence, match):
    # The exception rule: a wrong dtype is a TypeError (it was a ValueError before 0.2).
    with pytest.raises(TypeError, match=match):
        tiny_posteriors().lookup(ngrams, sentence)


@pytest.mark.parametrize(
    ("tables", "match"),
    [([{(): 0.5}], "needs at least one token"), ([{(3,): 0.5}, {(3,): math.nan}], "sentence 1")],
    ids=["empty n-gram", "nan posterior"],
)
def test_from_ngrams_rejects_bad_entries(tables, match):
    with pytest.raises(ValueError, match=match):
        NgramPosteriors.from_ngrams(tables)


# --------------------------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("boundaries", [False, True])
def test_sentence_whose_only_hypothesis_is_empty(boundaries):
    bos, eos = (BOS_MARK, EOS_MARK) if boundaries else (None, None)
    nbest = NBest(
        hyps=[[[], [3, 4]], [[3, 4], [4]]], scores=[[-0.5, -INF], [0.0, -1.0]], alphabet=[3, 4]
    )
    post = ngram_posteriors(*nbest.tensors(), max_ngram_order=3, bos_id=bos, eos_id=eos)
    ngrams = sorted(all_ngrams(nbest, 3, bos, eos) | {(BOS_MARK,), (EOS_MARK,)})
    got = lookup(post, ngrams, [0] * len(ngrams))
    # From the definition by hand: the empty hypothesis is the whole evidence.
    want = {(EOS_MARK,): 1.0, (BOS_MARK, EOS_MARK): 1.0} if boundaries else {}
    assert dict(zip(ngrams, got, strict=True)) == {u: want.get(u, 0.0) for u in ngrams}
    brute = brute_posteriors(nbest.hyps[0], nbest.scores[0], 1.0, 3, bos, eos)
    assert brute == want
    # The decoder: with boundaries EOS right away earns theta_1 + theta_2; tokens earn theta_0.
    theta = [-0.1, 0.3, 0.7, 1.1]
    bias = LMBRBias(post, theta, vocab_size=6, eos_id=EOS_MARK, prompt_len=1)
    first = bias(torch.tensor([[5], [5]]))[0]
    assert first[EOS_MARK].item() == pytest.approx(1.0 if boundaries else 0.0)
    assert first[3].item() == pytest.approx(-0.1) and first[4].item() == pytest.approx(-0.1)


def test_large_single_sentence_against_brute_force():
    rng = random.Random(7)
    M, L = 200, 60
    hyps = [[rng.randrange(3, 23) for _ in range(rng.randint(0, L))] for _ in range(M)]
    scores = [rng.uniform(-20, 0) if rng.random() > 0.1 else -INF for _ in range(M)]
    nbest = NBest(hyps=[hyps], scores=[scores], alphabet=list(range(3, 23)))
    post = ngram_posteriors(*nbest.tensors(), alpha=0.3, max_ngram_order=4, bos_id=1, eos_id=2)
    brute = brute_posteriors(hyps, scores, 0.3, 4, 1, 2)
    present = rng.sample(sorted(brute), 600)
    randoms = [tuple(rng.randrange(1, 24) for _ in range(rng.randint(1, 4))) for _ in range(400)]
    absent = [u for u in randoms if u not in brute]
    assert len(absent) > 50 and any(len(u) == 4 for u in present)
    queries = present + absent
    got = lookup(post, queries, [0] * len(queries))
    for u, value in zip(queries, got, strict=True):
        assert abs(value - brute.get(u, 0.0)) <= 1e-12, (u, value, brute.get(u, 0.0))


def test_token_ids_up_to_2_pow_40():
    big = 2**40
    nbest = NBest(
        hyps=[[[big, big - 1, big + 1, big], [big + 1, big]], [[big - 1, big - 1]]],
        scores=[[-1.0, -2.0], [0.0]],
        alphabet=[big - 1, big, big + 1],
    )
    nbest.hyps[1].append([])
    nbest.scores[1].append(-INF)
    post = ngram_posteriors(*nbest.tensors(), max_ngram_order=3)
    ngrams = sorted(all_ngrams(nbest, 3, None, None) | {(big + 2,), (big, big), (0,)})
    for b in range(2):
        want = brute_posteriors(nbest.hyps[b], nbest.scores[b], 1.0, 3)
        got = lookup(post, ngrams, [b] * len(ngrams))
        assert all(abs(g - want.get(u, 0.0)) <= 1e-12 for u, g in zip(ngrams, got, strict=True))
    # Such IDs cannot be decoder tokens.
    with pytest.raises(ValueError, match="outside the decoder's vocabulary"):
        LMBRBias(post, lmbr_theta(0.7, 0.6, max_ngram_order=3), vocab_size=1000, eos_id=0)


def test_posteriors_to_the_same_device_are_equal():
    post = tiny_posteriors(bos_id=1, eos_id=0)
    moved = post.to("cpu")
    queries = torch.tensor([[3, 4], [1, 3], [4, 5], [5, 0]])
    sentence = torch.zeros(4, dtype=torch.int64)
    assert torch.equal(moved.lookup(queries, sentence), post.lookup(queries, sentence))
    assert (moved.bos_id, moved.eos_id, moved.max_ngram_order) == (1, 0, 2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("bos", [None, 1])
def test_cuda_equals_cpu(bos):
    rng = random.Random(3)
    B, M = 5, 8
    hyps = [
        [[rng.randrange(3, 30) for _ in range(rng.randint(0, 12))] for _ in range(M)]
        for _ in range(B)
    ]
    scores = [
        [rng.uniform(-5, 0) if rng.random() > 0.2 else -INF for _ in range(M)] for _ in range(B)
    ]
    ids, lens, scores_t = NBest(hyps, scores, list(range(3, 30))).tensors()
    eos = None if bos is None else 0
    cpu = ngram_posteriors(ids, lens, scores_t, bos_id=bos, eos_id=eos)
    built = ngram_posteriors(ids.cuda(), lens.cuda(), scores_t.cuda(), bos_id=bos, eos_id=eos)
    moved = cpu.to("cuda")
    assert built.device.type == moved.device.type == "cuda"
    ngrams = sorted(
        {
            tuple(h[i : i + n])
            for row in hyps
            for h in row
            for n in (1, 2, 3, 4)
            for i in range(len(h) - n + 1)
        }
    )
    sentences = [b for b in range(B) for _ in ngrams]
    want = lookup(cpu, ngrams * B, sentences)
    assert lookup(moved, ngrams * B, sentences) == want
    torch.testing.assert_close(
        torch.tensor(lookup(built, ngrams * B, sentences)), torch.tensor(want), rtol=0, atol=1e-12
    )
    theta = lmbr_theta(0.741, 0.62)
    tokens = torch.tensor([[1, *(h + [3] * 6)[:6]] for row in hyps for h in row[:3]])
    for post in (moved, built):
        bias = LMBRBias(post, theta, vocab_size=32, eos_id=0, weight=2.0)
        reference = LMBRBias(cpu, theta, vocab_size=32, eos_id=0, weight=2.0)
        for t in range(1, 7):
            torch.testing.assert_close(
                bias(tokens[:, :t].cuda()).cpu(), reference(tokens[:, :t]), rtol=0, atol=1e-6
            )


# --------------------------------------------------------------------------------------------
# Regression tests of defects found while writing these tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["no hypotheses (M=0)", "zero width (L=0)", "empty tables"])
def test_lookup_without_any_ngram_is_zero(case):
    if case == "empty tables":
        post = NgramPosteriors.from_ngrams([{}, {}])
    else:
        shape = (2, 0, 3) if case.startswith("no") else (2, 2, 0)
        zeros = torch.zeros(shape[:2])
        post = ngram_posteriors(torch.zeros(shape, dtype=torch.int64), zeros.long(), zeros)
    values = post.lookup(torch.tensor([[3], [4]]), torch.tensor([0, 1]))
    assert values.tolist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16, torch.uint8])
def test_narrow_integer_evidence_ids(dtype):
    # The validation accepts any integer dtype (and lookup/LMBRBias take int32 tokens).
    wide = ngram_posteriors(TINY_IDS, TINY_LENS, TINY_SCORES)
    narrow = ngram_posteriors(TINY_IDS.to(dtype), TINY_LENS, TINY_SCORES)
    queries = torch.tensor([[3, 4], [3, 5], [4, 5]])
    sentence = torch.zeros(3, dtype=torch.int64)
    assert torch.equal(narrow.lookup(queries, sentence), wide.lookup(queries, sentence))


def test_bos_equal_to_eos_keeps_the_eos_unigram():
    # GPT-2 style: one ID is BOS and EOS.  Every hypothesis ends with EOS, so P((eos,)) = 1; only
    # the lone leading marker is excluded.
    post = ngram_posteriors(TINY_IDS, TINY_LENS, TINY_SCORES, bos_id=0, eos_id=0)
    brute = brute_posteriors([[3, 4, 5], [3, 5]], [0.0, -1.0], 1.0, 4, 0, 0)
    assert brute[(0,)] == pytest.approx(1.0)
    got = post.lookup(torch.tensor([[0], [5]]), torch.zeros(2, dtype=torch.int64))
    assert got.tolist() == pytest.approx([brute[(0,)], brute[(5,)]])


def test_non_tensor_evidence_is_named():
    with pytest.raises(TypeError, match=r"ids must be a torch\.Tensor"):
        ngram_posteriors(TINY_IDS.tolist(), TINY_LENS, TINY_SCORES)


# --------------------------------------------------------------------------------------------
# Evidence from a beam search
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("length_penalty", [1.0, 0.5])
def test_evidence_from_beam_output_drops_eos_and_unnormalizes(length_penalty):
    # Two sentences x 2 hypotheses: one ends in EOS (9), one was cut off, one slot is absent.
    sequences = torch.tensor([[[5, 6, 9], [5, 9, PAD]], [[7, 7, 7], [PAD, PAD, PAD]]])
    lengths = torch.tensor([[3, 2], [3, 0]])
    log_probs = torch.tensor([[-1.5, -0.5], [-3.0, -INF]], dtype=torch.float64)
    scores = (log_probs / lengths.clamp(min=1).double() ** length_penalty).float()
    out = BeamOutput(sequences, lengths, scores, eos_ids=torch.tensor([9]))
    evidence = Evidence.from_beam_output(out, length_penalty=length_penalty)
    assert isinstance(evidence, Evidence)
    assert evidence.lengths.tolist() == [[2, 1], [3, 0]]
    assert evidence.ids.tolist() == [[[5, 6, PAD], [5, PAD, PAD]], [[7, 7, 7], [PAD, PAD, PAD]]]
    assert evidence.scores.dtype == torch.float64
    # float32 rounding of the normalized scores, undone in float64.
    torch.testing.assert_close(evidence.scores, log_probs, rtol=1e-6, atol=0)
    # eos_id= overrides the output's EOS IDs: with 6 as EOS, nothing above ends in it.
    other = Evidence.from_beam_output(out, eos_id=[6], length_penalty=length_penalty)
    assert other.lengths.tolist() == [[3, 2], [3, 0]]
    with pytest.raises(ValueError, match="pass eos_id="):
        Evidence.from_beam_output(BeamOutput(sequences, lengths, scores))
    post = ngram_posteriors(*evidence, max_ngram_order=2)
    assert lookup(post, [(5,), (9,), (5, 6)], [0, 0, 0]) == pytest.approx([1.0, 0.0, 0.2689414])


def test_orders_above_the_longest_hypothesis_share_one_empty_table():
    """At the largest order taken, orders above the longest (bos/eos-wrapped) hypothesis share
    one table (no memory or work per order), look up as 0, and leave the lower orders, and the
    bias built on them, as they are at order 2."""
    big = ngram_posteriors(
        TINY_IDS, TINY_LENS, TINY_SCORES, max_ngram_order=MAX_NGRAM_ORDER, bos_id=1, eos_id=0
    )
    small = ngram_posteriors(
        TINY_IDS, TINY_LENS, TINY_SCORES, max_ngram_order=2, bos_id=1, eos_id=0
    )
    width = TINY_IDS.shape[2] + 2  # bos y eos
    assert big.max_ngram_order == MAX_NGRAM_ORDER
    assert len({id(t) for t in big.keys}) == width + 1  # orders 1..L, then one shared empty one
    assert all(big.values[n] is big.values[width] for n in range(width, MAX_NGRAM_ORDER))
    moved = big.to("cpu")
    assert len({id(t) for t in moved.keys}) == width + 1  # still shared after a move
    for order in (1, 2):
        assert torch.equal(big.keys[order - 1], small.keys[order - 1])
        assert torch.equal(big.values[order - 1], small.values[order - 1])
    ngram = torch.zeros((1, width + 1), dtype=torch.int64)
    assert big.lookup(ngram, torch.zeros(1, dtype=torch.int64)).tolist() == [0.0]
    theta = lmbr_theta(0.7, 0.6, max_ngram_order=MAX_NGRAM_ORDER)
    bias = LMBRBias(big, theta, vocab_size=int(TINY_IDS.max()) + 1, eos_id=0)
    assert bias(torch.tensor([[1, int(TINY_IDS[0, 0, 0])]])).shape == (1, int(TINY_IDS.max()) + 1)
