"""The LMBR bias (``tensortext.lmbr.bias``) through the linear BLEU gain identity.

* :class:`LMBRBias`: summed over the steps of a hypothesis ``y``, the bias at the chosen tokens
  is ``weight * (theta_0 * |y| + sum_u theta_|u| * count_u(y) * P(u | E))``, computed offline
  from the brute-force posteriors (never from ``lookup``); bitwise batch invariance; no dense
  ``histories x V`` table.
* :func:`lmbr_theta`: the formula of Tromble et al. (2008).
* :func:`lmbr_bias_factory`: per batch, bitwise the bias built by hand from that batch's
  evidence.

Tolerances: the bias is float32, so gains (sums of at most 8 float32 entries) within 1e-5
relative + 1e-4 absolute.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.lmbr import (
    EOS,
    INF,
    TINY_IDS,
    TINY_LENS,
    TINY_SCORES,
    NBest,
    V,
    brute_gain,
    brute_posteriors,
    gain_cases,
    nbest_lists,
    summed_bias,
    tiny_posteriors,
)
from strategies import MAX_EXAMPLES, SETTINGS
from torch import Tensor

from tensortext._checks import MAX_NGRAM_ORDER, MAX_VOCAB_SIZE
from tensortext.lmbr import (
    Evidence,
    LMBRBias,
    NgramPosteriors,
    lmbr_bias_factory,
    lmbr_theta,
    ngram_posteriors,
)

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))


# --------------------------------------------------------------------------------------------
# The linear BLEU gain identity
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(case=gain_cases(), source=st.sampled_from(["evidence", "from_ngrams"]))
def test_bias_sums_to_the_linear_bleu_gain(case, source):
    bos = case.bos
    eos = None if bos is None else EOS
    ids, lens, scores = case.nbest.tensors()
    brute = [
        brute_posteriors(hyps, row, case.alpha, case.max_ngram_order, bos, eos)
        for hyps, row in zip(case.nbest.hyps, case.nbest.scores, strict=True)
    ]
    if source == "evidence":
        post = ngram_posteriors(
            ids,
            lens,
            scores,
            alpha=case.alpha,
            max_ngram_order=case.max_ngram_order,
            bos_id=bos,
            eos_id=eos,
        )
    else:
        post = NgramPosteriors.from_ngrams(brute, bos_id=bos, eos_id=eos)
    theta = case.theta[: post.max_ngram_order + 1]
    bias = LMBRBias(
        post,
        theta,
        vocab_size=V,
        eos_id=EOS,
        weight=case.weight,
        prompt_len=len(case.prompts[0]),
    )
    got = summed_bias(bias, case.prompts, case.finals)
    want = [
        brute_gain(final, brute[r // case.num_beams], theta, case.weight, bos)
        for r, final in enumerate(case.finals)
    ]
    torch.testing.assert_close(
        torch.tensor(got, dtype=torch.float64),
        torch.tensor(want, dtype=torch.float64),
        rtol=1e-5,
        atol=1e-4,
        msg=lambda m: f"{m}\nfinals={case.finals}\ngot={got}\nwant={want}",
    )


# --------------------------------------------------------------------------------------------
# Layout, no dense table, batch invariance
# --------------------------------------------------------------------------------------------


def tensors_held(obj: Any, seen: set[int] | None = None) -> int:
    """Total ``numel`` of the tensors reachable from ``obj``'s attributes, lists and tuples."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, Tensor):
        return obj.numel()
    if isinstance(obj, (list, tuple)):
        return sum(tensors_held(item, seen) for item in obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return sum(tensors_held(value, seen) for value in vars(obj).values())
    return 0


def test_bias_keeps_no_dense_history_table():
    # 2 sentences x 50 hypotheses x 20 tokens over 400 token types: thousands of distinct
    # histories; a dense histories x V table would hold ~1e8 floats at V = 50,000.
    B, M, L, N, vocab = 2, 50, 20, 4, 50_000
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 400, (B, M, L), generator=g)
    lens = torch.randint(0, L + 1, (B, M), generator=g)
    post = ngram_posteriors(ids, lens, torch.randn(B, M, generator=g), max_ngram_order=N)
    bias = LMBRBias(post, lmbr_theta(0.741, 0.62), vocab_size=vocab, eos_id=0, prompt_len=1)
    histories = len(
        {tuple(h[i : i + 3]) for row in ids.tolist() for h in row for i in range(L - 2)}
    )
    assert histories * vocab > 100 * B * vocab  # what a dense table would cost
    positions = B * M * (L + 2)
    assert tensors_held(bias) <= B * vocab + 16 * positions * (N + 1)
    tokens = torch.cat([torch.ones(B * 3, 1, dtype=torch.int64), ids[:, :3, :5].reshape(-1, 5)], 1)
    out = bias(tokens)
    assert out.shape == (B * 3, vocab) and out.dtype == torch.float32 and out.device == ids.device


@FEWER
@given(
    nbest=nbest_lists(min_sentences=2, max_hyps=4, max_len=6, pool=range(3, V)),
    max_ngram_order=st.integers(1, 4),
    bos=st.sampled_from([None, 1, V + 3]),
    num_beams=st.integers(1, 3),
    prompt_len=st.integers(0, 2),
    data=st.data(),
)
def test_bias_rows_use_their_own_sentence(nbest, max_ngram_order, bos, num_beams, prompt_len, data):
    """A sentence's rows are bitwise the same alone, in the batch and in a shuffled batch."""
    B, K = len(nbest.hyps), num_beams
    eos = None if bos is None else EOS
    theta = lmbr_theta(0.3, 0.6, T=2.0, max_ngram_order=max_ngram_order)

    def bias_of(rows: Sequence[int]) -> LMBRBias:
        ids, lens, scores = nbest.tensors(rows=rows)
        post = ngram_posteriors(
            ids, lens, scores, max_ngram_order=max_ngram_order, bos_id=bos, eos_id=eos
        )
        return LMBRBias(post, theta, vocab_size=V, eos_id=EOS, weight=1.5, prompt_len=prompt_len)

    steps = data.draw(st.integers(0, 6), label="generated")
    prefixes = []
    for r in range(B * K):
        base = data.draw(st.sampled_from(nbest.hyps[r // K]), label="history source")
        row = data.draw(st.lists(st.sampled_from([*nbest.alphabet, 2]), min_size=steps + 2))
        row = (base + row)[: prompt_len + steps]
        prefixes.append(row[::-1] if data.draw(st.booleans(), label="reverse") else row)
    tokens = torch.tensor(prefixes, dtype=torch.int64).reshape(B * K, prompt_len + steps)
    together = bias_of(range(B))(tokens)
    assert together.shape == (B * K, V)
    assert together.dtype == torch.float32 and together.device == tokens.device
    for b in range(B):
        alone = bias_of([b])(tokens[b * K : (b + 1) * K])
        assert torch.equal(alone, together[b * K : (b + 1) * K]), b
    order = data.draw(st.permutations(range(B)), label="order")
    rows = [b * K + k for b in order for k in range(K)]
    shuffled = bias_of(order)(tokens[rows])
    assert torch.equal(shuffled, together[rows])


# --------------------------------------------------------------------------------------------
# Errors, raised before any work
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(p=0.0, r=0.6), "p must be a positive number"),
        (dict(p=-0.5, r=0.6), "p must be a positive number"),
        (dict(p=0.7, r=0.0), "r must be a positive number"),
        (dict(p=0.7, r=-1.0), "r must be a positive number"),
        (dict(p=0.7, r=0.6, T=0.0), "T must be a positive number"),
        (dict(p=0.7, r=0.6, T=-10.0), "T must be a positive number"),
        (dict(p=math.nan, r=0.6), "p must be a positive number"),
        (dict(p=0.7, r=INF), "r must be a positive number"),
        (dict(p=0.7, r=0.6, max_ngram_order=0), "max_ngram_order must be >= 1"),
        # arange(1e11) was a MemoryError traceback; refused before allocating.
        (dict(p=0.7, r=0.6, max_ngram_order=10**11), "max_ngram_order must be <= 1000"),
    ],
)
def test_lmbr_theta_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lmbr_theta(**kwargs)


def test_lmbr_theta_rejects_a_setting_that_is_no_number():
    with pytest.raises(TypeError, match="p must be a number"):
        lmbr_theta("0.7", 0.6)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="max_ngram_order must be an int"):
        lmbr_theta(0.7, 0.6, max_ngram_order=4.0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("p", "r", "T", "N"), [(0.741, 0.62, 10.0, 4), (0.5, 1.0, 1.0, 1), (0.2, 2.0, 3.0, 6)]
)
def test_lmbr_theta_formula(p, r, T, N):
    theta = lmbr_theta(p, r, T=T, max_ngram_order=N)
    assert theta.dtype == torch.float64 and theta.shape == (N + 1,)
    want = [-1 / T] + [1 / (N * T * p * r ** (n - 1)) for n in range(1, N + 1)]
    torch.testing.assert_close(theta, torch.tensor(want, dtype=torch.float64), rtol=1e-15, atol=0)
    assert torch.equal(lmbr_theta(p, r), lmbr_theta(p, r, T=10.0, max_ngram_order=4))


BIAS_ERRORS = {
    "theta too short": (dict(theta=[-0.1, 0.5]), "theta must hold 3 weights .* got 2"),
    "theta too long": (dict(theta=lmbr_theta(0.7, 0.6)), r"theta must hold 3 .* shape \[5\]"),
    # A 2-million-entry theta was printed whole: a 10 MB "one-line" error.
    "theta huge": (dict(theta=[0.1] * 2_000_000), "theta must hold 3 weights .* got 2000000"),
    "theta huge tensor": (dict(theta=torch.zeros(2_000_000)), r"shape \[2000000\]"),
    "theta nan": (dict(theta=[-0.1, math.nan, 0.5]), r"theta must be finite, got theta\[1\]"),
    "weight nan": (dict(weight=math.nan), "weight must be finite"),
    "token >= vocab": (dict(vocab_size=5), "evidence token 5 is outside"),
    "vocab 0": (dict(vocab_size=0), "vocab_size must be >= 1"),
    # A dense [B, V] row per sentence: 2**40 asked for terabytes.
    "vocab 2**40": (dict(vocab_size=2**40), f"vocab_size must be <= {MAX_VOCAB_SIZE}"),
    "eos >= vocab": (dict(eos_id=8), r"eos_id must be in 0\.\.7"),
    "no eos": (dict(eos_id=[]), r"eos_id must be in 0\.\.7"),
    "prompt_len < 0": (dict(prompt_len=-1), "prompt_len must be >= 0"),
    "eos mismatch": (dict(posteriors=tiny_posteriors(eos_id=2)), "end sentences with 2"),
    "eos mismatch, bos": (dict(posteriors=tiny_posteriors(bos_id=1, eos_id=6)), "end sentences w"),
}


@pytest.mark.parametrize("case", sorted(BIAS_ERRORS))
def test_lmbr_bias_rejects_bad_settings(case):
    kwargs: dict[str, Any] = dict(
        posteriors=tiny_posteriors(), theta=[-0.1, 0.5, 0.5], vocab_size=8, eos_id=0
    )
    kwargs.update(BIAS_ERRORS[case][0])
    posteriors, theta = kwargs.pop("posteriors"), kwargs.pop("theta")
    with pytest.raises(ValueError, match=BIAS_ERRORS[case][1]) as info:
        LMBRBias(posteriors, theta, **kwargs)
    assert len(str(info.value)) < 300, str(info.value)[:400]  # never user data in bulk


def test_lmbr_bias_rejects_a_negative_evidence_token():
    post = NgramPosteriors.from_ngrams([{(-3, 4): 0.5}])
    with pytest.raises(ValueError, match="evidence token -3 is outside"):
        LMBRBias(post, [-0.1, 0.5, 0.5], vocab_size=8, eos_id=0)


@pytest.mark.parametrize(
    ("tokens", "match"),
    [
        (torch.ones(3, 2, dtype=torch.int64), r"\[B\*K, t\] with B = 2"),
        (torch.ones(4, dtype=torch.int64), r"\[B\*K, t\] with B = 2"),
        (torch.ones(4, 2, dtype=torch.int64, device="meta"), "tokens is on meta"),
        (torch.ones(4, 1, dtype=torch.int64), "1 columns, fewer than prompt_len=2"),
    ],
    ids=["rows", "1-D", "device", "columns"],
)
def test_lmbr_bias_call_rejects_bad_tokens(tokens, match):
    post = ngram_posteriors(
        TINY_IDS.expand(2, 2, 3), TINY_LENS.expand(2, 2), TINY_SCORES.expand(2, 2)
    )
    bias = LMBRBias(post, lmbr_theta(0.7, 0.6), vocab_size=8, eos_id=0, prompt_len=2)
    with pytest.raises(ValueError, match=match):
        bias(tokens)
    # The exception rule: a wrong dtype is a TypeError (it was a ValueError before 0.2).
    with pytest.raises(TypeError, match="tokens must have an integer dtype"):
        bias(torch.ones(4, 2))


# --------------------------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------------------------


def test_one_sentence_one_beam():
    nbest = NBest(hyps=[[[3, 4, 5], [3, 5]]], scores=[[-0.2, -1.3]], alphabet=[3, 4, 5])
    post = ngram_posteriors(*nbest.tensors(), max_ngram_order=3)
    theta = lmbr_theta(0.741, 0.62, max_ngram_order=3).tolist()
    bias = LMBRBias(post, theta, vocab_size=7, eos_id=0, weight=2.0)
    gains = summed_bias(bias, [[6]], [[3, 4, 5]])
    brute = brute_posteriors(nbest.hyps[0], nbest.scores[0], 1.0, 3)
    assert gains[0] == pytest.approx(brute_gain([3, 4, 5], brute, theta, 2.0, None), abs=1e-5)
    out = bias(torch.tensor([[6, 3]]))
    assert out.shape == (1, 7)
    p = brute
    assert out[0, 4].item() == pytest.approx(
        2 * (theta[0] + theta[1] * p[(4,)] + theta[2] * p[(3, 4)])
    )
    assert out[0, 0].item() == 0.0  # EOS: no theta_0, and no evidence n-gram ends in it


@pytest.mark.parametrize("bos", [None, 1])
def test_max_ngram_order_one_bias_is_constant_over_steps(bos):
    nbest = NBest(hyps=[[[3, 4, 4], [5]], [[4]]], scores=[[0.0, -1.0], [-2.0]], alphabet=[3, 4, 5])
    nbest.hyps[1].append([3])
    nbest.scores[1].append(-INF)
    post = ngram_posteriors(
        *nbest.tensors(), max_ngram_order=1, bos_id=bos, eos_id=None if bos is None else 0
    )
    theta = [-0.2, 0.9]
    bias = LMBRBias(post, theta, vocab_size=7, eos_id=0, weight=1.5, prompt_len=1)
    g = torch.Generator().manual_seed(0)
    outputs = [bias(torch.randint(0, 7, (4, 1 + t), generator=g)) for t in range(5)]
    for out in outputs[1:]:
        assert torch.equal(out, outputs[0])
    for b in range(2):
        p = brute_posteriors(
            nbest.hyps[b], nbest.scores[b], 1.0, 1, bos, None if bos is None else 0
        )
        want = [1.5 * (theta[0] * (y != 0) + theta[1] * p.get((y,), 0.0)) for y in range(7)]
        for k in range(2):
            torch.testing.assert_close(
                outputs[0][2 * b + k].double(),
                torch.tensor(want, dtype=torch.float64),
                rtol=1e-6,
                atol=1e-6,
            )


def test_several_eos_ids_get_no_theta_0():
    post = NgramPosteriors.from_ngrams([{(3,): 0.5}])
    bias = LMBRBias(post, [-0.25, 1.0], vocab_size=6, eos_id=[0, 5])
    out = bias(torch.tensor([[1], [2]]))
    assert out[:, 0].tolist() == out[:, 5].tolist() == [0.0, 0.0]
    assert out[:, 3].tolist() == [0.25, 0.25] and out[:, 4].tolist() == [-0.25, -0.25]


# --------------------------------------------------------------------------------------------
# Regression tests of defects found while writing these tests
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["dense hypothesis", "unigram tables"])
def test_bias_at_the_end_of_a_full_table(case):
    # _add_children clamps the child entries to keys.numel() - 1 (= size, the sentinel slot),
    # but the value tables have only size entries: a history whose run of children lies within
    # the widest fan-out of a table's end reads past it.  Unpadded evidence and unigram-only
    # from_ngrams tables (whose order-1 table is full) get there.
    if case == "dense hypothesis":
        hyp = [3, 4, 3, 5, 6, 7]  # bigrams fill 5 of 6 slots; 3 has two successors
        post = ngram_posteriors(
            torch.tensor([[hyp]]), torch.tensor([[6]]), torch.zeros(1, 1), max_ngram_order=2
        )
        tables = [brute_posteriors([hyp], [0.0], 1.0, 2)]
        tokens = torch.tensor([[1, 7]])  # history: the hypothesis's last token
    else:
        tables = [{(3,): 0.5, (4,): 0.25}, {(5,): 1.0}]
        post = NgramPosteriors.from_ngrams(tables)
        tokens = torch.tensor([[1], [1]])
    theta = [-0.1] + [1.0] * post.max_ngram_order
    out = LMBRBias(post, theta, vocab_size=8, eos_id=0)(tokens)
    for row in range(tokens.shape[0]):  # one beam per sentence
        history = tuple(tokens[row, 1:].tolist())
        for y in range(1, 8):
            want = theta[0] + sum(
                theta[n] * tables[row].get((*history, y)[-n:], 0.0)
                for n in range(1, min(post.max_ngram_order, len(history) + 1) + 1)
            )
            assert out[row, y].item() == pytest.approx(want, abs=1e-6)


# --------------------------------------------------------------------------------------------
# lmbr_bias_factory: the per-batch biases of translate
# --------------------------------------------------------------------------------------------


@FEWER
@given(
    nbest=nbest_lists(min_sentences=2, max_hyps=4, max_len=6, pool=range(3, V)),
    max_ngram_order=st.integers(1, 4),
    boundaries=st.booleans(),
    prompt_len=st.integers(0, 2),
    data=st.data(),
)
def test_factory_with_nbest_is_the_bias_of_the_batch(
    nbest, max_ngram_order, boundaries, prompt_len, data
):
    """Bitwise the bias built by hand from the batch's own rows of the evidence."""
    bos, end = (1, EOS) if boundaries else (None, None)
    theta = lmbr_theta(0.3, 0.6, T=2.0, max_ngram_order=max_ngram_order)
    options = dict(vocab_size=V, eos_id=EOS, weight=1.5)
    factory = lmbr_bias_factory(
        Evidence(*nbest.tensors()),
        theta,
        alpha=0.5,
        max_ngram_order=max_ngram_order,
        bos_id=bos,
        end_id=end,
        **options,
    )
    B = len(nbest.hyps)
    batch = data.draw(st.lists(st.integers(0, B - 1), min_size=1, max_size=B, unique=True))
    post = ngram_posteriors(
        *nbest.tensors(rows=batch),
        alpha=0.5,
        max_ngram_order=max_ngram_order,
        bos_id=bos,
        eos_id=end,
    )
    by_hand = LMBRBias(post, theta, prompt_len=prompt_len, **options)
    bias = factory(torch.tensor(batch), prompt_len)
    tokens = torch.randint(0, V, (2 * len(batch), prompt_len + 3))
    for t in range(prompt_len, prompt_len + 4):
        assert torch.equal(bias(tokens[:, :t]), by_hand(tokens[:, :t]))


def test_factory_with_tables_cuts_theta_to_the_batch_order():
    tables = [{(3,): 0.5, (3, 4): 0.25}, {(5,): 1.0}, {(3, 4, 5): 0.75}]
    theta = lmbr_theta(0.741, 0.62, max_ngram_order=3)
    factory = lmbr_bias_factory(
        tables, theta, vocab_size=8, eos_id=0, weight=2.0, max_ngram_order=3, end_id=0
    )
    for batch in ([1], [0, 1], [2, 0]):
        post = NgramPosteriors.from_ngrams([tables[i] for i in batch], eos_id=0)
        order = post.max_ngram_order
        by_hand = LMBRBias(post, theta[: order + 1], vocab_size=8, eos_id=0, weight=2.0)
        bias = factory(torch.tensor(batch), 1)
        assert bias.posteriors.max_ngram_order == order
        tokens = torch.tensor([[1, 3, 4]] * len(batch))
        for t in (1, 2, 3):
            assert torch.equal(bias(tokens[:, :t]), by_hand(tokens[:, :t]))


FACTORY_ERRORS = {
    "theta length": (dict(theta=[-0.1, 0.5]), ValueError, "theta must hold 5 weights"),
    "order 0": (dict(max_ngram_order=0), ValueError, "max_ngram_order must be >= 1"),
    "weight": (dict(weight=math.inf), ValueError, "weight must be finite"),
    "vocab": (dict(vocab_size=0), ValueError, "vocab_size must be >= 1"),
    "vocab 2**40": (dict(vocab_size=2**40), ValueError, "vocab_size must be <= 2147483647"),
    "order 10**6": (
        dict(max_ngram_order=10**6, theta=[0.1] * (10**6 + 1)),
        ValueError,
        f"max_ngram_order must be <= {MAX_NGRAM_ORDER}",
    ),
    "float ids": (
        dict(evidence=Evidence(TINY_IDS.float(), TINY_LENS, TINY_SCORES)),
        TypeError,
        "ids must have an integer dtype",
    ),
    "lengths > L": (
        dict(evidence=Evidence(TINY_IDS, TINY_LENS + 1, TINY_SCORES)),
        ValueError,
        r"lengths must be in 0\.\.3",
    ),
    "5-grams": (
        dict(evidence=[{(3, 4, 5, 6, 7): 0.5}]),
        ValueError,
        "hold 5-grams but max_ngram_order=4; pass max_ngram_order=5",
    ),
}


@pytest.mark.parametrize("case", sorted(FACTORY_ERRORS))
def test_factory_rejects_bad_settings_before_any_batch(case):
    override, error, match = FACTORY_ERRORS[case]
    kwargs: dict[str, Any] = dict(
        evidence=Evidence(TINY_IDS, TINY_LENS, TINY_SCORES),
        theta=lmbr_theta(0.7, 0.6),
        vocab_size=8,
        eos_id=0,
    )
    kwargs.update(override)
    evidence, theta = kwargs.pop("evidence"), kwargs.pop("theta")
    with pytest.raises(error, match=match):
        lmbr_bias_factory(evidence, theta, **kwargs)
