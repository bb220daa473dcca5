"""LMBR n-gram posteriors in batched beam search (``tensortext.decode.lmbr``) against brute force.

What is compared with what:

* :func:`ngram_posteriors` (queried with :meth:`NgramPosteriors.lookup`) against
  :func:`brute_posteriors`, a pure-Python reading of the definition (Iglesias et al., 2018,
  Equation 2): ``P(u | E_b)`` is the sum of ``softmax(alpha * s)_i`` over the hypotheses ``i`` of
  sentence ``b`` that contain ``u``, each counted once.  Random n-best lists with repeated
  n-grams, empty and absent (``-inf``) hypotheses, sentences without any, sentence boundaries,
  float32 and float64 scores and IDs up to 2**40; present and absent n-grams of every order.
* :class:`LMBRBias` through the linear BLEU gain identity: summed over the steps of a hypothesis
  ``y``, the bias at the chosen tokens is
  ``weight * (theta_0 * |y| + sum_u theta_|u| * count_u(y) * P(u | E))``, computed offline from
  the brute-force posteriors (never from ``lookup``); and bitwise batch invariance.
* :func:`~tensortext.decode.beam.beam_search` with the bias, on the table-driven models of
  ``test_beam``: weight 0 is plain search (bitwise), strong posteriors for a hypothesis the model
  alone does not choose make the search return exactly it, and batch invariance.
* ``tensortext.decode.hf.generate(score_bias=LMBRBias(...))`` against ``model.generate`` with
  :class:`LMBRLogitsProcessor`, on the tiny random models of ``test_hf``.
* :func:`mbr_rerank` against sacrebleu's ``sentence_score`` over all pairs (``reference``).
* :func:`read_nbest` and :func:`read_ngram_posterior_files`: round trips through files, and
  every malformed line named as ``file:line``.

Tolerances: posteriors within 1e-12 of the float64 brute force for float64 scores and 2e-6 for
float32 scores (a softmax over at most 6 hypotheses and a sum of at most 6 weights); the bias is
float32, so gains (sums of at most 8 float32 entries) within 1e-5 relative + 1e-4 absolute;
expected BLEU (float32) within 1e-5.

Defects found while writing these tests have regression tests at the end of the file.
"""

from __future__ import annotations

import math
import random
import re
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import sacrebleu_sentence
from strategies import MAX_EXAMPLES, SETTINGS
from test_beam import EOS, exhaustive, hypotheses, sparse_table, table_step
from test_hf import VOCAB, assert_same_beams, hf_generate, make_inputs, tiny_model
from torch import Tensor
from transformers import LogitsProcessorList

import tensortext.decode.lmbr as lmbr_module
from tensortext.decode.beam import BeamOutput, beam_search
from tensortext.decode.hf import generate
from tensortext.decode.lmbr import (
    Evidence,
    LMBRBias,
    LMBRLogitsProcessor,
    NgramPosteriors,
    lmbr_theta,
    mbr_rerank,
    ngram_posteriors,
    read_nbest,
    read_ngram_posterior_files,
)

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))
INF = math.inf

# Boundary markers of the posterior tests (the decoder tests use EOS = 0 of test_beam).
BOS_MARK, EOS_MARK = 1, 2
# Decoder vocabulary of the bias tests: 0 = EOS, 1 = a BOS marker inside the vocabulary, 2 = a
# token no evidence contains, 3.. = evidence tokens.  V + 3 is a BOS marker outside it.
V = 12
LARGE_IDS = [2**40 - 1, 2**40, 2**40 + 1, 2**33 + 7, 2**20, 3, 4]


# --------------------------------------------------------------------------------------------
# Brute force
# --------------------------------------------------------------------------------------------


def softmax_weights(scores: Sequence[float], alpha: float) -> list[float]:
    """``softmax(alpha * s)`` over the present hypotheses (``s > -inf``), 0 for absent ones, in
    float64; all 0 when none is present."""
    present = [i for i, s in enumerate(scores) if s > -INF]
    weights = [0.0] * len(scores)
    if present:
        top = max(alpha * scores[i] for i in present)
        exps = {i: math.exp(alpha * scores[i] - top) for i in present}
        total = math.fsum(exps.values())
        for i, e in exps.items():
            weights[i] = e / total
    return weights


def read_as(hyp: Sequence[int], bos: int | None, eos: int | None) -> list[int]:
    """``bos y eos`` with the markers that are given."""
    return ([] if bos is None else [bos]) + list(hyp) + ([] if eos is None else [eos])


def occurrences(seq: Sequence[int], max_order: int, lone_bos: bool) -> list[tuple[int, ...]]:
    """Every n-gram occurrence of ``seq`` (``n <= max_order``), without the unigram at position 0
    when that position is a BOS marker (``lone_bos``)."""
    return [
        tuple(seq[i : i + n])
        for n in range(1, max_order + 1)
        for i in range(len(seq) - n + 1)
        if not (lone_bos and n == 1 and i == 0)
    ]


def brute_posteriors(
    hyps: Sequence[Sequence[int]],
    scores: Sequence[float],
    alpha: float,
    max_order: int,
    bos: int | None = None,
    eos: int | None = None,
) -> dict[tuple[int, ...], float]:
    """``P(u | E)`` of one sentence by the definition: every present hypothesis adds its weight
    once to every distinct n-gram it contains."""
    posteriors: dict[tuple[int, ...], float] = defaultdict(float)
    for hyp, score, weight in zip(hyps, scores, softmax_weights(scores, alpha), strict=True):
        if score > -INF:
            for ngram in set(occurrences(read_as(hyp, bos, eos), max_order, bos is not None)):
                posteriors[ngram] += weight
    return dict(posteriors)


def brute_gain(
    hyp: Sequence[int],
    posteriors: dict[tuple[int, ...], float],
    theta: Sequence[float],
    weight: float,
    bos: int | None,
) -> float:
    """The linear BLEU gain of the final hypothesis ``hyp EOS`` (Tromble et al., 2008):
    ``weight * (theta_0 * |hyp| + sum over n-gram occurrences u of theta_|u| * P(u))``, the
    n-grams being those of ``bos hyp EOS`` without the lone ``bos`` when ``bos`` is given."""
    seq = read_as(hyp, bos, EOS)
    max_order = len(theta) - 1
    total = theta[0] * len(hyp) + math.fsum(
        theta[len(u)] * posteriors.get(u, 0.0) for u in occurrences(seq, max_order, bos is not None)
    )
    return weight * total


def lookup(post: NgramPosteriors, ngrams: Sequence[tuple[int, ...]], sentences: Sequence[int]):
    """``post.lookup`` of n-grams of mixed orders, in the given order (float64 list)."""
    out = [math.nan] * len(ngrams)
    by_order: dict[int, list[int]] = defaultdict(list)
    for q, ngram in enumerate(ngrams):
        by_order[len(ngram)].append(q)
    for order, queries in by_order.items():
        ids = torch.tensor([ngrams[q] for q in queries], dtype=torch.int64).reshape(-1, order)
        sentence = torch.tensor([sentences[q] for q in queries], dtype=torch.int64)
        values = post.lookup(ids.to(post.device), sentence.to(post.device))
        assert values.shape == (len(queries),) and values.is_floating_point()
        for q, value in zip(queries, values.tolist(), strict=True):
            out[q] = value
    return out


# --------------------------------------------------------------------------------------------
# N-best lists
# --------------------------------------------------------------------------------------------


@dataclass
class NBest:
    """``B`` sentences x ``M`` hypotheses as plain lists; ``-inf`` scores mark absent ones (whose
    tokens are still in the tensors, and must be ignored)."""

    hyps: list[list[list[int]]]
    scores: list[list[float]]
    alphabet: list[int]
    junk: int = 3  # fills the tensors past each length: a plausible token
    extra: int = 0  # padding columns beyond the longest hypothesis

    def width(self) -> int:
        return max([0, *(len(h) for row in self.hyps for h in row)]) + self.extra

    def tensors(
        self,
        dtype: torch.dtype = torch.float64,
        rows: Sequence[int] | None = None,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """``(ids [B, M, L], lens [B, M], scores [B, M])`` of the sentences ``rows``."""
        rows = range(len(self.hyps)) if rows is None else rows
        M = len(self.hyps[0])
        ids = torch.full((len(rows), M, self.width()), self.junk, dtype=torch.int64)
        lens = torch.zeros((len(rows), M), dtype=torch.int64)
        for i, b in enumerate(rows):
            for m, hyp in enumerate(self.hyps[b]):
                ids[i, m, : len(hyp)] = torch.tensor(hyp, dtype=torch.int64)
                lens[i, m] = len(hyp)
        scores = torch.tensor([self.scores[b] for b in rows], dtype=dtype).reshape(len(rows), M)
        return ids, lens, scores

    def rounded_scores(self, dtype: torch.dtype) -> list[list[float]]:
        """The scores as ``dtype`` holds them (what the brute force must use)."""
        return self.tensors(dtype)[2].tolist()


@st.composite
def nbest_lists(
    draw: st.DrawFn,
    *,
    min_sentences: int = 1,
    max_sentences: int = 4,
    max_hyps: int = 6,
    max_len: int = 8,
    pool: Sequence[int] | None = None,
) -> NBest:
    """Random n-best lists over a tiny alphabet (small IDs, or IDs near 2**40 unless ``pool``
    is given), later hypotheses often continuing earlier ones so that n-grams repeat within and
    across hypotheses."""
    if pool is None:
        pool = draw(st.sampled_from([range(3, 12), range(3, 12), LARGE_IDS]))
    size = draw(st.integers(1, 4))
    alphabet = draw(
        st.lists(st.sampled_from(list(pool)), min_size=size, max_size=size, unique=True)
    )
    token = st.sampled_from(alphabet)
    B = draw(st.integers(min_sentences, max_sentences))
    M = draw(st.integers(1, max_hyps))
    hyps, scores = [], []
    for _ in range(B):
        without_hypotheses = draw(st.integers(0, 5)) == 0
        row_hyps: list[list[int]] = []
        row_scores: list[float] = []
        for _ in range(M):
            if row_hyps and draw(st.booleans()):
                base = draw(st.sampled_from(row_hyps))
                start = draw(st.integers(0, len(base)))
                hyp = (base[start:] + draw(st.lists(token, max_size=3)))[:max_len]
            else:
                hyp = draw(st.lists(token, max_size=max_len))
            absent = without_hypotheses or draw(st.integers(0, 3)) == 0
            score = -INF if absent else draw(st.sampled_from([0.0, -1.0]) | st.floats(-6.0, 0.0))
            row_hyps.append(hyp)
            row_scores.append(score)
        hyps.append(row_hyps)
        scores.append(row_scores)
    return NBest(hyps, scores, alphabet, junk=draw(token), extra=draw(st.integers(0, 2)))


def all_ngrams(nbest: NBest, max_order: int, bos: int | None, eos: int | None):
    """The n-grams (orders 1..max_order) of every hypothesis, present or absent, read with the
    markers, and of every padded tensor row (junk included)."""
    ids, _, _ = nbest.tensors()
    found: set[tuple[int, ...]] = set()
    for b, row in enumerate(nbest.hyps):
        for m, hyp in enumerate(row):
            found.update(occurrences(read_as(hyp, bos, eos), max_order, False))
            found.update(occurrences(ids[b, m].tolist(), max_order, False))
    return found


# --------------------------------------------------------------------------------------------
# 1. Posteriors
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(
    nbest=nbest_lists(),
    alpha=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    max_order=st.integers(1, 5),
    boundaries=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    validate=st.booleans(),
    data=st.data(),
)
def test_posteriors_equal_brute_force(nbest, alpha, max_order, boundaries, dtype, validate, data):
    bos, eos = (BOS_MARK, EOS_MARK) if boundaries else (None, None)
    ids, lens, scores = nbest.tensors(dtype)
    post = ngram_posteriors(
        ids,
        lens,
        scores,
        alpha=alpha,
        max_order=max_order,
        bos_id=bos,
        eos_id=eos,
        validate=validate,
    )
    assert post.max_order == max_order and post.num_sentences == len(nbest.hyps)
    assert (post.bos_id, post.eos_id) == (bos, eos)
    rounded = nbest.rounded_scores(dtype)
    expected = [
        brute_posteriors(nbest.hyps[b], rounded[b], alpha, max_order, bos, eos)
        for b in range(len(nbest.hyps))
    ]
    # Present n-grams, n-grams of absent hypotheses and of the padding, random ones, the markers.
    queries = all_ngrams(nbest, max_order, bos, eos)
    extra_tokens = [*nbest.alphabet, BOS_MARK, EOS_MARK, 0, 2**40 + 5]
    queries.update(
        tuple(u)
        for u in data.draw(
            st.lists(st.lists(st.sampled_from(extra_tokens), min_size=1, max_size=max_order)),
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
# 2. Posteriors given explicitly
# --------------------------------------------------------------------------------------------


@st.composite
def posterior_tables(draw: st.DrawFn) -> list[dict[tuple[int, ...], float]]:
    pool = draw(st.sampled_from([range(3, 9), LARGE_IDS]))
    token = st.sampled_from(list(pool))
    ngrams = draw(st.lists(st.lists(token, min_size=1, max_size=4).map(tuple), max_size=12))
    value = st.floats(-2.0, 2.0, allow_nan=False)
    tables = [
        {u: draw(value) for u in draw(st.lists(st.sampled_from(ngrams), max_size=10))}
        if ngrams
        else {}
        for _ in range(draw(st.integers(1, 4)))
    ]
    if len(tables) >= 2 and ngrams:
        # The same n-gram with different posteriors in two sentences.
        shared = ngrams[0]
        tables[0][shared] = 0.25
        tables[1][shared] = 0.75
    return tables


@SETTINGS
@given(tables=posterior_tables(), markers=st.sampled_from([(None, None), (1, 2), (None, 0)]))
def test_from_ngrams_lookups_return_the_listed_values(tables, markers):
    bos, eos = markers
    post = NgramPosteriors.from_ngrams(tables, bos_id=bos, eos_id=eos)
    assert post.max_order == max((len(u) for t in tables for u in t), default=1)
    assert (post.bos_id, post.eos_id, post.num_sentences) == (bos, eos, len(tables))
    listed = sorted({u for t in tables for u in t})
    prefixes = sorted({u[:n] for u in listed for n in range(1, len(u))})
    others = sorted({(*u[:-1], u[-1] + 1) for u in listed} | {(2**41,), (0, 0)})
    ngrams = [u for u in listed + prefixes + others if len(u) <= post.max_order]
    for b, table in enumerate(tables):
        got = lookup(post, ngrams, [b] * len(ngrams))
        for u, value in zip(ngrams, got, strict=True):
            # Listed: exactly the value; anything else (prefixes, other sentences' n-grams): 0.
            assert value == table.get(u, 0.0), (b, u, value)


# --------------------------------------------------------------------------------------------
# 3. The linear BLEU gain identity
# --------------------------------------------------------------------------------------------


@dataclass
class GainCase:
    nbest: NBest
    max_order: int
    alpha: float
    bos: int | None  # None: no boundaries; else the posteriors use bos and eos_id=EOS
    theta: list[float]
    weight: float
    num_beams: int
    prompts: list[list[int]]  # [B*K] rows of prompt_len tokens
    finals: list[list[int]]  # [B*K] final hypotheses without their EOS


@st.composite
def gain_cases(draw: st.DrawFn, *, max_sentences: int = 3) -> GainCase:
    nbest = draw(nbest_lists(max_sentences=max_sentences, max_hyps=4, max_len=6, pool=range(3, V)))
    max_order = draw(st.integers(1, 5))
    if draw(st.booleans()):
        theta = lmbr_theta(
            draw(st.sampled_from([0.1, 0.741])),
            draw(st.sampled_from([0.5, 0.62])),
            T=draw(st.sampled_from([1.0, 10.0])),
            max_order=max_order,
        ).tolist()
    else:
        theta = [draw(st.floats(-1.0, 0.0))] + [draw(st.floats(0.0, 2.0)) for _ in range(max_order)]
    K = draw(st.integers(1, 3))
    prompt_len = draw(st.integers(0, 2))
    B = len(nbest.hyps)
    # Final hypotheses: copies or pieces of the sentence's evidence (long matches) or random
    # tokens, including 2 which no evidence has; the prompt holds evidence tokens and EOS, so
    # that reading it as history would be caught.
    tokens = [*nbest.alphabet, 2]
    finals, prompts = [], []
    for r in range(B * K):
        evidence = nbest.hyps[r // K]
        if draw(st.booleans()):
            base = draw(st.sampled_from(evidence))
            start = draw(st.integers(0, len(base)))
            final = base[start:] + draw(st.lists(st.sampled_from(tokens), max_size=2))
        else:
            final = draw(st.lists(st.sampled_from(tokens), max_size=7))
        finals.append(final)
        prompt = st.sampled_from([*nbest.alphabet, EOS])
        prompts.append(draw(st.lists(prompt, min_size=prompt_len, max_size=prompt_len)))
    return GainCase(
        nbest=nbest,
        max_order=max_order,
        alpha=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0])),
        bos=draw(st.sampled_from([None, None, 1, V + 3])),
        theta=theta,
        weight=draw(st.sampled_from([1.0, 0.5, 3.0, -1.0])),
        num_beams=K,
        prompts=prompts,
        finals=finals,
    )


def summed_bias(bias: LMBRBias, prompts: list[list[int]], finals: list[list[int]]) -> list[float]:
    """Feed every prefix of each row's ``final EOS`` to ``bias`` (all rows at once, step by step;
    rows already finished carry filler) and sum the bias at the token each row chose."""
    rows = [[*final, EOS] for final in finals]
    steps = max(len(row) for row in rows)
    filler = [3] * steps
    tokens = torch.tensor(
        [p + (row + filler)[:steps] for p, row in zip(prompts, rows, strict=True)],
        dtype=torch.int64,
    ).reshape(len(rows), -1)
    P = len(prompts[0])
    totals = [0.0] * len(rows)
    for t in range(steps):
        out = bias(tokens[:, : P + t])
        assert out.shape == (len(rows), bias.vocab_size) and out.dtype == torch.float32
        for r, row in enumerate(rows):
            if t < len(row):
                totals[r] += float(out[r, row[t]])
    return totals


@SETTINGS
@given(case=gain_cases(), source=st.sampled_from(["evidence", "from_ngrams"]))
def test_bias_sums_to_the_linear_bleu_gain(case, source):
    bos = case.bos
    eos = None if bos is None else EOS
    ids, lens, scores = case.nbest.tensors()
    brute = [
        brute_posteriors(hyps, row, case.alpha, case.max_order, bos, eos)
        for hyps, row in zip(case.nbest.hyps, case.nbest.scores, strict=True)
    ]
    if source == "evidence":
        post = ngram_posteriors(
            ids, lens, scores, alpha=case.alpha, max_order=case.max_order, bos_id=bos, eos_id=eos
        )
    else:
        post = NgramPosteriors.from_ngrams(brute, bos_id=bos, eos_id=eos)
    theta = case.theta[: post.max_order + 1]
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
# 4. The bias: layout, no dense table, batch invariance
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
    post = ngram_posteriors(ids, lens, torch.randn(B, M, generator=g), max_order=N)
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
    max_order=st.integers(1, 4),
    bos=st.sampled_from([None, 1, V + 3]),
    num_beams=st.integers(1, 3),
    prompt_len=st.integers(0, 2),
    data=st.data(),
)
def test_bias_rows_use_their_own_sentence(nbest, max_order, bos, num_beams, prompt_len, data):
    """A sentence's rows are bitwise the same alone, in the batch and in a shuffled batch."""
    B, K = len(nbest.hyps), num_beams
    eos = None if bos is None else EOS
    theta = lmbr_theta(0.3, 0.6, T=2.0, max_order=max_order)

    def bias_of(rows: Sequence[int]) -> LMBRBias:
        ids, lens, scores = nbest.tensors(rows=rows)
        post = ngram_posteriors(ids, lens, scores, max_order=max_order, bos_id=bos, eos_id=eos)
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
# 5. beam_search with the bias
# --------------------------------------------------------------------------------------------


def search(tables: Tensor, starts: list[int], num_beams: int, **kwargs: Any) -> BeamOutput:
    """``beam_search`` with the table model of ``test_beam`` (``tables [S, V, V]``)."""
    B = len(starts)
    return beam_search(
        table_step(tables),
        torch.arange(B).repeat_interleave(num_beams),
        batch_size=B,
        num_beams=num_beams,
        eos_id=EOS,
        start_ids=torch.tensor(starts),
        **kwargs,
    )


def model_evidence(tables: Tensor, starts: list[int], count: int, max_len: int):
    """The ``count`` best hypotheses of each sentence's table model (exhaustive search), without
    EOS, scored by their log-probabilities: evidence the model itself finds plausible."""
    per_sentence = [
        exhaustive(tables[s], start, max_len, 0.0, with_cut_off=False)[:count]
        for s, start in enumerate(starts)
    ]
    width = max(len(seq) for found in per_sentence for _, seq in found)
    ids = torch.zeros((len(starts), count, width), dtype=torch.int64)
    lens = torch.zeros((len(starts), count), dtype=torch.int64)
    scores = torch.full((len(starts), count), -INF, dtype=torch.float64)
    for s, found in enumerate(per_sentence):
        for m, (score, seq) in enumerate(found):
            ids[s, m, : len(seq) - 1] = torch.tensor(seq[:-1])
            lens[s, m] = len(seq) - 1
            scores[s, m] = score
    return ids, lens, scores


@pytest.mark.parametrize("bos", [None, 1, 13], ids=["no-boundaries", "bos-in-vocab", "bos-oov"])
@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_beam_search_with_weight_zero_is_plain_search(finished, bos):
    vocab, K = 10, 3
    tables = torch.stack([sparse_table(40 + s, vocab, successors=4) for s in range(3)])
    starts = [1, 2, 3]
    ids, lens, scores = model_evidence(tables, starts, 4, 5)
    post = ngram_posteriors(ids, lens, scores, bos_id=bos, eos_id=None if bos is None else EOS)
    options = dict(
        max_new_tokens=6, finished=finished, num_return_sequences=K, output_token_scores=True
    )

    def bias(weight: float) -> LMBRBias:
        theta = lmbr_theta(0.1, 0.5, T=1.0)
        return LMBRBias(post, theta, vocab_size=vocab, eos_id=EOS, weight=weight)

    plain = search(tables, starts, K, **options)
    zero = search(tables, starts, K, score_bias=bias(0.0), **options)
    for field in ("sequences", "lengths", "scores", "token_scores"):
        assert torch.equal(getattr(plain, field), getattr(zero, field)), field
    # The same posteriors with weight 1 do change the search: the comparison is not vacuous.
    assert not torch.equal(
        plain.scores, search(tables, starts, K, score_bias=bias(1.0), **options).scores
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_strong_posteriors_flip_the_search_to_the_evidence(seed, finished):
    # One evidence hypothesis, a valid path of the model that ranks 4th or lower by the model
    # alone: all its n-grams get posterior 1, and with theta_n >> |theta_0| its gain beats
    # every other hypothesis of at most its length, so the search must return exactly it.
    vocab, K, T = 10, 3, 6
    table = sparse_table(seed, vocab, successors=3)
    plain = search(table[None], [1], K, max_new_tokens=T, finished=finished)
    top = hypotheses(plain, 0)[0]
    ranked = [seq for _, seq in exhaustive(table, 1, T, 1.0, with_cut_off=False)]
    target = next(seq for seq in ranked[K:] if seq != top and len(seq) >= 3)
    post = ngram_posteriors(
        torch.tensor([[target[:-1]]]),
        torch.tensor([[len(target) - 1]]),
        torch.zeros(1, 1),
        bos_id=vocab,
        eos_id=EOS,
    )
    bias = LMBRBias(post, lmbr_theta(0.1, 0.5, T=1.0), vocab_size=vocab, eos_id=EOS, weight=2.0)
    flipped = search(table[None], [1], K, max_new_tokens=T, finished=finished, score_bias=bias)
    assert top != target
    assert hypotheses(flipped, 0)[0] == target


@FEWER
@given(
    seed=st.integers(0, 2**31 - 1),
    num_beams=st.integers(1, 4),
    finished=st.sampled_from(["refill", "mask"]),
    bos=st.sampled_from([None, 1]),
    max_order=st.integers(1, 4),
    order=st.permutations(range(4)),
)
def test_beam_search_with_lmbr_is_batch_invariant(seed, num_beams, finished, bos, max_order, order):
    vocab = 9
    tables = torch.stack([sparse_table(seed + s, vocab, successors=5) for s in range(4)])
    starts = [1, 2, 3, 4]
    rng = random.Random(seed)
    evidence = NBest(
        hyps=[
            [[rng.randrange(1, vocab) for _ in range(rng.randint(0, 6))] for _ in range(3)]
            for _ in range(4)
        ],
        scores=[[rng.uniform(-3, 0) for _ in range(3)] for _ in range(4)],
        alphabet=list(range(1, vocab)),
    )

    def run(sentences: Sequence[int]) -> BeamOutput:
        ids, lens, scores = evidence.tensors(rows=sentences)
        post = ngram_posteriors(
            ids, lens, scores, max_order=max_order, bos_id=bos, eos_id=None if bos is None else EOS
        )
        theta = lmbr_theta(0.5, 0.6, T=1.0, max_order=max_order)
        bias = LMBRBias(post, theta, vocab_size=vocab, eos_id=EOS, weight=2.0)
        return search(
            tables[list(sentences)],
            [starts[s] for s in sentences],
            num_beams,
            max_new_tokens=7,
            finished=finished,
            num_return_sequences=num_beams,
            score_bias=bias,
        )

    together = run(range(4))
    shuffled = run(order)
    for s in range(4):
        alone = run([s])
        p = list(order).index(s)
        assert hypotheses(together, s) == hypotheses(alone, 0) == hypotheses(shuffled, p)
        assert torch.equal(together.scores[s], alone.scores[0])
        assert torch.equal(together.scores[s], shuffled.scores[p])


# --------------------------------------------------------------------------------------------
# 6. transformers parity
# --------------------------------------------------------------------------------------------


@pytest.fixture
def one_thread():
    """Tiny models: intra-op threads only add overhead (as in test_hf)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize(("name", "bos"), [("marian", VOCAB), ("llama", 1)])
def test_generate_with_lmbr_matches_transformers(name, bos):
    model = tiny_model(name)
    B, K, max_new = 4, 3, 10
    input_ids, mask = make_inputs(model, B, seed=5, padded=True)
    eos = model.generation_config.eos_token_id
    # Evidence the model tends to produce: its own lower-ranked beams (EOS dropped).
    plain = generate(
        model, input_ids, mask, num_beams=K, max_new_tokens=max_new, num_return_sequences=K
    )
    ids, lengths = plain.sequences[:, 1:], plain.lengths[:, 1:]
    last = ids.gather(2, (lengths - 1).clamp(min=0)[..., None])[..., 0]
    lens = lengths - (last == eos).long()
    post = ngram_posteriors(ids, lens, plain.scores[:, 1:].double(), bos_id=bos, eos_id=eos)
    prompt_len = 1 if model.config.is_encoder_decoder else input_ids.shape[1]
    bias = LMBRBias(
        post, lmbr_theta(0.1, 0.5, T=1.0), vocab_size=VOCAB, eos_id=eos, prompt_len=prompt_len
    )
    options = {"num_beams": K, "max_new_tokens": max_new, "num_return_sequences": 2}
    ours = generate(model, input_ids, mask, score_bias=bias, output_token_scores=True, **options)
    processors = LogitsProcessorList([LMBRLogitsProcessor(bias)])
    expected = hf_generate(model, input_ids, mask, logits_processor=processors, **options)
    assert_same_beams(ours, expected, f"{name} with LMBR")
    changed = [hypotheses(ours, b)[0] != hypotheses(plain, b)[0] for b in range(B)]
    assert any(changed), "the LMBR bias changed no sentence: the parity is vacuous"


def test_logits_processor_adds_the_bias_in_the_scores_dtype():
    post = NgramPosteriors.from_ngrams([{(3,): 0.5, (3, 4): 0.25}, {(5,): 1.0}])
    bias = LMBRBias(post, [-0.1, 0.3, 0.7], vocab_size=6, eos_id=0)
    tokens = torch.tensor([[1, 3], [1, 4], [1, 5], [1, 3]])
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        scores = torch.randn(4, 6).to(dtype)
        out = LMBRLogitsProcessor(bias)(tokens, scores)
        assert out.dtype == dtype
        assert torch.equal(out, scores + bias(tokens).to(dtype))


# --------------------------------------------------------------------------------------------
# 7. MBR reranking
# --------------------------------------------------------------------------------------------

# mbr_rerank's own default is effective_order=True (sacrebleu's sentence_bleu default).
MBR_OPTIONS = [
    {},
    {"effective_order": False},
    {"max_ngram_order": 2},
    {"smooth_method": "floor", "smooth_value": 0.1},
]


@SETTINGS
@given(
    data=st.data(),
    alpha=st.sampled_from([0.0, 0.5, 1.0, 2.0]),
    include_self=st.booleans(),
    options=st.sampled_from(MBR_OPTIONS),
    with_scores=st.booleans(),
)
def test_mbr_rerank_equals_brute_force(data, alpha, include_self, options, with_scores):
    nbest = data.draw(nbest_lists(max_sentences=3, max_hyps=5, pool=range(3, 9)), label="nbest")
    B, N = len(nbest.hyps), len(nbest.hyps[0])
    for row in nbest.scores:  # at least one candidate per sentence (all absent: see below)
        if all(s == -INF for s in row):
            row[data.draw(st.integers(0, N - 1), label="present")] = -0.5
    if not with_scores:
        nbest.scores = [[0.0] * N for _ in range(B)]
    ids, lens, scores = nbest.tensors(torch.float32)
    result = mbr_rerank(
        ids,
        lens,
        scores if with_scores else None,
        alpha=alpha,
        include_self=include_self,
        **options,
    )
    assert result.best.shape == (B,) and result.expected_bleu.shape == (B, N)
    rounded = nbest.rounded_scores(torch.float32)
    bleu_cache: dict[tuple[tuple[int, ...], tuple[int, ...]], float] = {}

    def bleu(hyp: list[int], ref: list[int]) -> float:
        key = (tuple(hyp), tuple(ref))
        if key not in bleu_cache:
            reference_options = {"effective_order": True, **options}
            bleu_cache[key] = sacrebleu_sentence([hyp], [[ref]], **reference_options)[0]
        return bleu_cache[key]

    for b in range(B):
        weights = softmax_weights(rounded[b], alpha)
        want = []
        for i in range(N):
            if rounded[b][i] == -INF:
                want.append(-INF)
                continue
            others = [j for j in range(N) if rounded[b][j] > -INF and (include_self or j != i)]
            total = math.fsum(weights[j] for j in others)
            want.append(
                math.fsum(
                    weights[j] / total * bleu(nbest.hyps[b][i], nbest.hyps[b][j]) for j in others
                )
                if total > 0
                else 0.0
            )
        got = result.expected_bleu[b].tolist()
        for i in range(N):
            if want[i] == -INF:
                assert got[i] == -INF, (b, i)
            else:
                assert abs(got[i] - want[i]) <= 1e-5, (b, i, got[i], want[i])
        best = int(result.best[b])
        ranked = sorted((w for w in want if w > -INF), reverse=True)
        assert want[best] > -INF and want[best] >= ranked[0] - 1e-5, (b, best, want)
        if len(ranked) == 1 or ranked[0] - ranked[1] > 1e-4:
            assert best == want.index(ranked[0]), (b, best, want)


def test_mbr_rerank_edge_cases():
    ids = torch.tensor([[[3, 4, 5, 6], [3, 4, 5, 7], [8, 8, 8, 8]], [[3, 3, 3, 3]] * 3])
    lens = torch.tensor([[4, 4, 4], [2, 0, 4]])
    # Identical candidates have BLEU 1 with each other: the pair beats the outlier.
    out = mbr_rerank(ids, lens)
    assert int(out.best[0]) in (0, 1)
    # A sentence whose candidates are all absent: all -inf.
    absent = torch.tensor([[0.0, -1.0, -INF], [-INF, -INF, -INF]])
    out = mbr_rerank(ids, lens, absent)
    assert out.expected_bleu[0, 2] == -INF and bool((out.expected_bleu[1] == -INF).all())
    # One present candidate without itself: nothing to compare with, expected BLEU 0.
    alone = torch.tensor([[0.0, -INF, -INF], [0.0, 0.0, 0.0]])
    out = mbr_rerank(ids, lens, alone, include_self=False)
    assert out.expected_bleu[0].tolist() == [0.0, -INF, -INF] and int(out.best[0]) == 0
    # alpha scales the scores: with a huge alpha only the best-scored candidate is evidence.
    peaked = torch.tensor([[0.0, -5.0, -5.0], [0.0, 0.0, 0.0]])
    out = mbr_rerank(ids, lens, peaked, alpha=100.0)
    assert out.expected_bleu[0, 0] == pytest.approx(1.0, abs=1e-5)


# --------------------------------------------------------------------------------------------
# 8. Readers
# --------------------------------------------------------------------------------------------


def moses_line(sentence: int, text: str, score: float | str, *extra: str) -> str:
    fields = [str(sentence), f" {text} ", " LM0= -12.5 TM0= -3 1.5 ", f" {score}", *extra]
    return "|||".join(fields) + "\n"


@FEWER
@given(
    lists=st.lists(
        st.lists(
            st.tuples(
                st.lists(st.integers(0, 2**40), max_size=6),
                st.floats(-50, 10, allow_nan=False) | st.just(-INF),
            ),
            max_size=4,
        ),
        min_size=1,
        max_size=4,
    ),
    max_hypotheses=st.none() | st.integers(1, 3),
    extra_sentences=st.none() | st.integers(0, 2),
    text=st.booleans(),
    data=st.data(),
)
def test_read_nbest_round_trip(lists, max_hypotheses, extra_sentences, text, data):
    # Lines of the sentences interleaved (ids unsorted, each sentence's lines in order), blank
    # lines in between; with text=True the tokens are words and tokenize= maps them.
    queues = [[(s, hyp, score) for hyp, score in hyps] for s, hyps in enumerate(lists)]
    lines: list[str] = []
    while any(queues):
        s = data.draw(st.sampled_from([s for s, q in enumerate(queues) if q]), label="next")
        sentence, hyp, score = queues[s].pop(0)
        words = " ".join(f"w{t}" if text else str(t) for t in hyp)
        lines.append(moses_line(sentence, words, repr(score)))
        if data.draw(st.booleans(), label="blank"):
            lines.append(data.draw(st.sampled_from(["\n", "   \n", "\t\n"]), label="blank"))
    present = [s for s, hyps in enumerate(lists) if hyps]
    count = (max(present, default=-1) + 1) + (extra_sentences or 0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "nbest.txt"
        path.write_text("".join(lines), encoding="utf-8")
        evidence = read_nbest(
            path,
            num_sentences=None if extra_sentences is None else count,
            max_hypotheses=max_hypotheses,
            tokenize=(lambda field: [int(w[1:]) for w in field.split()]) if text else None,
        )
    assert isinstance(evidence, Evidence)
    kept = [lists[s][:max_hypotheses] if s < len(lists) else [] for s in range(count)]
    M = max([1, *(len(hyps) for hyps in kept)])
    assert evidence.ids.dtype == evidence.lengths.dtype == torch.int64
    assert evidence.scores.dtype == torch.float64
    assert evidence.scores.shape == evidence.lengths.shape == (count, M)
    assert evidence.ids.shape[:2] == (count, M)
    for s, hyps in enumerate(kept):
        for m in range(M):
            if m < len(hyps):
                hyp, score = hyps[m]
                assert evidence.scores[s, m].item() == score
                assert evidence.lengths[s, m].item() == len(hyp)
                assert evidence.ids[s, m, : len(hyp)].tolist() == hyp
            else:
                assert evidence.scores[s, m].item() == -INF
    # End to end: the posteriors of what was read are those of the lists.
    post = ngram_posteriors(*evidence, max_order=2)
    for s, hyps in enumerate(kept):
        want = brute_posteriors([h for h, _ in hyps], [x for _, x in hyps], 1.0, 2)
        got = lookup(post, list(want), [s] * len(want))
        assert all(abs(g - w) <= 1e-12 for g, w in zip(got, want.values(), strict=True))


def test_read_nbest_fields_and_options(tmp_path):
    path = tmp_path / "nbest.en"
    path.write_text(
        "\n"
        + moses_line(2, "the cat", -1.5, " 0-0 1-1 ")  # an alignment field after the score
        + "  \n"
        + moses_line(0, "a dog", "-2.25")
        + moses_line(2, "", "-inf")  # empty hypothesis, absent
        + moses_line(2, "cat the the", "0")
        + moses_line(0, "the", "-1e-3"),
        encoding="utf-8",
    )
    vocab = {"the": 5, "cat": 6, "a": 7, "dog": 8}
    evidence = read_nbest(path, tokenize=lambda field: [vocab[w] for w in field.split()])
    assert evidence.ids.shape[:2] == (3, 3)
    assert evidence.lengths[0, :2].tolist() == [2, 1] and evidence.lengths[2].tolist() == [2, 0, 3]
    assert evidence.scores[0, :2].tolist() == [-2.25, -1e-3]
    assert evidence.scores[1].tolist() == [-INF] * 3  # sentence 1 has no lines
    assert evidence.scores[2].tolist() == [-1.5, -INF, 0.0]
    assert evidence.ids[2, 0, :2].tolist() == [5, 6] and evidence.ids[2, 2].tolist() == [6, 5, 5]
    assert evidence.ids[0, 0, :2].tolist() == [7, 8]
    first = read_nbest(
        path,
        tokenize=lambda field: [vocab[w] for w in field.split()],
        max_hypotheses=1,
        num_sentences=5,
        device="cpu",
    )
    assert first.scores.shape == (5, 1) and first.scores[:, 0].tolist() == [
        -2.25,
        -INF,
        -1.5,
        -INF,
        -INF,
    ]
    assert first.ids.device.type == "cpu"


MOSES_ERRORS = {
    "too few fields": ("0 ||| 3 4 ||| LM0= -1", "expected 'id"),
    "bad id": ("x ||| 3 4 ||| f ||| -1", "id must be an integer"),
    "negative id": ("-1 ||| 3 4 ||| f ||| -1", "id must be >= 0"),
    "bad score": ("0 ||| 3 4 ||| f ||| cheap", "score a number"),
    "empty score": ("0 ||| 3 4 ||| f ||| ", "score a number"),
    "nan score": ("0 ||| 3 4 ||| f ||| nan", "finite or -inf"),
    "+inf score": ("0 ||| 3 4 ||| f ||| inf", "finite or -inf"),
    "overflowing score": ("0 ||| 3 4 ||| f ||| 1e400", "finite or -inf"),
    "non-integer token": ("0 ||| 3 four ||| f ||| -1", "integer IDs"),
    "float token": ("0 ||| 3 4.0 ||| f ||| -1", "integer IDs"),
}


@pytest.mark.parametrize("case", sorted(MOSES_ERRORS))
def test_read_nbest_names_the_bad_line(case, tmp_path):
    line, match = MOSES_ERRORS[case]
    path = tmp_path / "nbest.txt"
    path.write_text(moses_line(0, "3 4", -1.0) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:3:") + ".*" + re.escape(match)):
        read_nbest(path)


def test_read_nbest_errors_without_a_line(tmp_path):
    path = tmp_path / "nbest.txt"
    path.write_text(moses_line(0, "3", -1.0) + moses_line(4, "3", -1.0), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*num_sentences=2"):
        read_nbest(path, num_sentences=2)

    def tokenize(field: str) -> list[int]:
        raise ValueError(f"unknown word in {field!r}")

    with pytest.raises(ValueError, match=re.escape(f"{path}:1: unknown word")):
        read_nbest(path, tokenize=tokenize)


def write_posterior_file(path: Path, table: dict[tuple[int, ...], float]) -> None:
    lines = [f"  {' '.join(map(str, u))}   :  {value!r} \n\n" for u, value in table.items()]
    path.write_text("".join(lines), encoding="utf-8")


@FEWER
@given(tables=posterior_tables(), first_id=st.integers(0, 2))
def test_read_ngram_posterior_files_round_trip(tables, first_id):
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"post.{first_id + s}.txt" for s in range(len(tables))]
        for path, table in zip(paths, tables, strict=True):
            write_posterior_file(path, table)
        pattern = str(Path(folder) / "post.%d.txt")
        from_pattern = read_ngram_posterior_files(
            pattern, num_sentences=len(tables), first_id=first_id
        )
        from_list = read_ngram_posterior_files(paths)
        from_strings = read_ngram_posterior_files([str(p) for p in paths])
    assert from_pattern == from_list == from_strings == tables
    if any(tables):
        post = NgramPosteriors.from_ngrams(from_pattern)
        for b, table in enumerate(tables):
            assert lookup(post, list(table), [b] * len(table)) == list(table.values())


def test_read_ngram_posterior_files_default_first_id(tmp_path):
    write_posterior_file(tmp_path / "1.post", {(3,): 0.5, (3, 4): 0.25})
    write_posterior_file(tmp_path / "2.post", {(-1, 7): 1.0})
    tables = read_ngram_posterior_files(str(tmp_path / "%d.post"), num_sentences=2)
    assert tables == [{(3,): 0.5, (3, 4): 0.25}, {(-1, 7): 1.0}]


POSTERIOR_ERRORS = {
    "missing colon": "3 4 0.5",
    "non-integer token": "3 x : 0.5",
    "float token": "3 4.5 : 0.5",
    "bad posterior": "3 4 : high",
    "nan posterior": "3 4 : nan",
    "inf posterior": "3 4 : inf",
    "no n-gram": " : 0.5",
    "two posteriors": "3 4 : 0.5 0.7",
    "no posterior": "3 4 :",
}


@pytest.mark.parametrize("case", sorted(POSTERIOR_ERRORS))
def test_read_ngram_posterior_files_names_the_bad_line(case, tmp_path):
    path = tmp_path / "post.7"
    path.write_text(f"3 : 0.5\n{POSTERIOR_ERRORS[case]}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:2:") + ".*w1 \\.\\.\\. wn"):
        read_ngram_posterior_files([path])


def test_read_ngram_posterior_files_other_errors(tmp_path):
    path = tmp_path / "post.1"
    path.write_text("3 4 : 0.5\n\n3 5 : 0.1\n 3   4 : 0.2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:4:") + " n-gram 3 4 repeats"):
        read_ngram_posterior_files([tmp_path / "post.1"])
    with pytest.raises(ValueError, match="needs '%d' and num_sentences="):
        read_ngram_posterior_files(str(tmp_path / "post.1"), num_sentences=1)
    with pytest.raises(ValueError, match="needs '%d' and num_sentences="):
        read_ngram_posterior_files(str(tmp_path / "post.%d"))


# --------------------------------------------------------------------------------------------
# 9. Errors, raised before any work
# --------------------------------------------------------------------------------------------

_IDS = torch.tensor([[[3, 4, 5], [3, 5, 0]]])
_LENS = torch.tensor([[3, 2]])
_SCORES = torch.tensor([[0.0, -1.0]])
POSTERIOR_INPUT_ERRORS = {
    "2-D ids": (dict(evidence_ids=_IDS[0]), ValueError, r"evidence_ids must be \[B, M, L\]"),
    "float ids": (dict(evidence_ids=_IDS.float()), ValueError, "evidence_ids must be an integer"),
    "ids elsewhere": (dict(evidence_ids=_IDS.to("meta")), ValueError, "evidence_lens is on"),
    "lens shape": (dict(evidence_lens=_LENS[0]), ValueError, r"evidence_lens must be \[B, M\]"),
    "float lens": (dict(evidence_lens=_LENS.float()), ValueError, "evidence_lens must be an int"),
    "lens elsewhere": (dict(evidence_lens=_LENS.to("meta")), ValueError, "evidence_lens is on"),
    "scores shape": (dict(evidence_scores=_SCORES.T), ValueError, r"evidence_scores must be \[B"),
    "int scores": (dict(evidence_scores=_SCORES.long()), ValueError, "must be a float tensor"),
    "scores elsewhere": (dict(evidence_scores=_SCORES.to("meta")), ValueError, "float tensor on"),
    "lens < 0": (dict(evidence_lens=torch.tensor([[3, -1]])), ValueError, r"in 0\.\.3"),
    "lens > L": (dict(evidence_lens=torch.tensor([[4, 2]])), ValueError, r"in 0\.\.3"),
    "nan score": (dict(evidence_scores=torch.tensor([[0.0, math.nan]])), ValueError, "NaN"),
    "+inf score": (dict(evidence_scores=torch.tensor([[INF, 0.0]])), ValueError, r"\+inf"),
    "nan alpha": (dict(alpha=math.nan), ValueError, "alpha must be finite"),
    "inf alpha": (dict(alpha=INF), ValueError, "alpha must be finite"),
    "max_order 0": (dict(max_order=0), ValueError, "max_order must be >= 1"),
}


@pytest.mark.parametrize("case", sorted(POSTERIOR_INPUT_ERRORS))
def test_ngram_posteriors_rejects_bad_input_before_any_work(case, monkeypatch):
    override, error, match = POSTERIOR_INPUT_ERRORS[case]

    def no_work(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the n-gram trie was built before the input was checked")

    monkeypatch.setattr(lmbr_module, "_build_trie", no_work)
    kwargs: dict[str, Any] = dict(evidence_ids=_IDS, evidence_lens=_LENS, evidence_scores=_SCORES)
    kwargs.update(override)
    with pytest.raises(error, match=match):
        ngram_posteriors(**kwargs)


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
        (dict(p=0.7, r=0.6, max_order=0), "max_order must be >= 1"),
    ],
)
def test_lmbr_theta_rejects_bad_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        lmbr_theta(**kwargs)


@pytest.mark.parametrize(
    ("p", "r", "T", "N"), [(0.741, 0.62, 10.0, 4), (0.5, 1.0, 1.0, 1), (0.2, 2.0, 3.0, 6)]
)
def test_lmbr_theta_formula(p, r, T, N):
    theta = lmbr_theta(p, r, T=T, max_order=N)
    assert theta.dtype == torch.float64 and theta.shape == (N + 1,)
    want = [-1 / T] + [1 / (N * T * p * r ** (n - 1)) for n in range(1, N + 1)]
    torch.testing.assert_close(theta, torch.tensor(want, dtype=torch.float64), rtol=1e-15, atol=0)
    assert torch.equal(lmbr_theta(p, r), lmbr_theta(p, r, T=10.0, max_order=4))


def _posteriors(**kwargs: Any) -> NgramPosteriors:
    return ngram_posteriors(_IDS, _LENS, _SCORES, max_order=2, **kwargs)


BIAS_ERRORS = {
    "theta too short": (dict(theta=[-0.1, 0.5]), "theta must hold 3 finite weights"),
    "theta too long": (dict(theta=lmbr_theta(0.7, 0.6)), "theta must hold 3 finite weights"),
    "theta nan": (dict(theta=[-0.1, math.nan, 0.5]), "theta must hold 3 finite weights"),
    "weight nan": (dict(weight=math.nan), "weight must be finite"),
    "token >= vocab": (dict(vocab_size=5), "evidence token 5 is outside"),
    "vocab 0": (dict(vocab_size=0), "vocab_size must be >= 1"),
    "eos >= vocab": (dict(eos_id=8), r"eos_id must be in 0\.\.7"),
    "no eos": (dict(eos_id=[]), r"eos_id must be in 0\.\.7"),
    "prompt_len < 0": (dict(prompt_len=-1), "prompt_len must be >= 0"),
    "eos mismatch": (dict(posteriors=_posteriors(eos_id=2)), "end sentences with 2"),
    "eos mismatch, bos": (dict(posteriors=_posteriors(bos_id=1, eos_id=6)), "end sentences w"),
}


@pytest.mark.parametrize("case", sorted(BIAS_ERRORS))
def test_lmbr_bias_rejects_bad_settings(case):
    kwargs: dict[str, Any] = dict(
        posteriors=_posteriors(), theta=[-0.1, 0.5, 0.5], vocab_size=8, eos_id=0
    )
    kwargs.update(BIAS_ERRORS[case][0])
    posteriors, theta = kwargs.pop("posteriors"), kwargs.pop("theta")
    with pytest.raises(ValueError, match=BIAS_ERRORS[case][1]):
        LMBRBias(posteriors, theta, **kwargs)


def test_lmbr_bias_rejects_a_negative_evidence_token():
    post = NgramPosteriors.from_ngrams([{(-3, 4): 0.5}])
    with pytest.raises(ValueError, match="evidence token -3 is outside"):
        LMBRBias(post, [-0.1, 0.5, 0.5], vocab_size=8, eos_id=0)


@pytest.mark.parametrize(
    ("tokens", "match"),
    [
        (torch.ones(3, 2, dtype=torch.int64), r"\[B\*K, t\] with B = 2"),
        (torch.ones(4, dtype=torch.int64), r"\[B\*K, t\] with B = 2"),
        (torch.ones(4, 2), "tokens must be an integer tensor"),
        (torch.ones(4, 2, dtype=torch.int64, device="meta"), "tokens is on meta"),
        (torch.ones(4, 1, dtype=torch.int64), "1 columns, fewer than prompt_len=2"),
    ],
    ids=["rows", "1-D", "float", "device", "columns"],
)
def test_lmbr_bias_call_rejects_bad_tokens(tokens, match):
    post = ngram_posteriors(_IDS.expand(2, 2, 3), _LENS.expand(2, 2), _SCORES.expand(2, 2))
    bias = LMBRBias(post, lmbr_theta(0.7, 0.6), vocab_size=8, eos_id=0, prompt_len=2)
    with pytest.raises(ValueError, match=match):
        bias(tokens)


@pytest.mark.parametrize(
    ("ngrams", "sentence", "match"),
    [
        (torch.ones(2, 3, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), r"1 <= n <= 2"),
        (torch.ones(2, 0, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), r"1 <= n <= 2"),
        (torch.ones(2, dtype=torch.int64), torch.zeros(2, dtype=torch.int64), r"\[Q, n\]"),
        (torch.ones(2, 1, dtype=torch.int64), torch.tensor([0, 1]), r"must be in 0\.\.0"),
        (torch.ones(2, 1, dtype=torch.int64), torch.tensor([0, -1]), r"must be in 0\.\.0"),
        (torch.ones(2, 1, dtype=torch.int64), torch.zeros(3, dtype=torch.int64), r"\[Q\] = \[2\]"),
        (torch.ones(2, 1), torch.zeros(2, dtype=torch.int64), "ngrams must be an integer"),
        (torch.ones(2, 1, dtype=torch.int64), torch.zeros(2), "sentence must be an integer"),
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
        "float ngrams",
        "float sentence",
        "device",
    ],
)
def test_lookup_rejects_bad_queries(ngrams, sentence, match):
    with pytest.raises(ValueError, match=match):
        _posteriors().lookup(ngrams, sentence)


@pytest.mark.parametrize(
    ("tables", "match"),
    [([{(): 0.5}], "needs at least one token"), ([{(3,): 0.5}, {(3,): math.nan}], "sentence 1")],
    ids=["empty n-gram", "nan posterior"],
)
def test_from_ngrams_rejects_bad_entries(tables, match):
    with pytest.raises(ValueError, match=match):
        NgramPosteriors.from_ngrams(tables)


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        ((_IDS[0], _LENS[0]), {}, r"candidates must be \[B, N, L\]"),
        ((_IDS, _LENS[0]), {}, r"lengths must be \[B, N\]"),
        ((_IDS, _LENS, _SCORES.long()), {}, "scores must be a float"),
        ((_IDS, _LENS, _SCORES.T), {}, "scores must be a float"),
        ((_IDS, _LENS), {"hyp_lens": _LENS}, "takes lengths itself"),
        ((_IDS, _LENS), {"pad_id": 0}, "takes lengths itself"),
        ((_IDS, torch.tensor([[4, 2]])), {}, "hyp_lens"),
    ],
    ids=["2-D", "lengths", "int scores", "scores shape", "hyp_lens", "pad_id", "lengths > L"],
)
def test_mbr_rerank_rejects_bad_input(args, kwargs, match):
    with pytest.raises(ValueError, match=match):
        mbr_rerank(*args, **kwargs)


# --------------------------------------------------------------------------------------------
# 10. Edge cases
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("boundaries", [False, True])
def test_sentence_whose_only_hypothesis_is_empty(boundaries):
    bos, eos = (BOS_MARK, EOS_MARK) if boundaries else (None, None)
    nbest = NBest(
        hyps=[[[], [3, 4]], [[3, 4], [4]]], scores=[[-0.5, -INF], [0.0, -1.0]], alphabet=[3, 4]
    )
    post = ngram_posteriors(*nbest.tensors(), max_order=3, bos_id=bos, eos_id=eos)
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
    post = ngram_posteriors(*nbest.tensors(), alpha=0.3, max_order=4, bos_id=1, eos_id=2)
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
    post = ngram_posteriors(*nbest.tensors(), max_order=3)
    ngrams = sorted(all_ngrams(nbest, 3, None, None) | {(big + 2,), (big, big), (0,)})
    for b in range(2):
        want = brute_posteriors(nbest.hyps[b], nbest.scores[b], 1.0, 3)
        got = lookup(post, ngrams, [b] * len(ngrams))
        assert all(abs(g - want.get(u, 0.0)) <= 1e-12 for u, g in zip(ngrams, got, strict=True))
    # Such IDs cannot be decoder tokens.
    with pytest.raises(ValueError, match="outside the decoder's vocabulary"):
        LMBRBias(post, lmbr_theta(0.7, 0.6, max_order=3), vocab_size=1000, eos_id=0)


def test_one_sentence_one_beam():
    nbest = NBest(hyps=[[[3, 4, 5], [3, 5]]], scores=[[-0.2, -1.3]], alphabet=[3, 4, 5])
    post = ngram_posteriors(*nbest.tensors(), max_order=3)
    theta = lmbr_theta(0.741, 0.62, max_order=3).tolist()
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
def test_max_order_one_bias_is_constant_over_steps(bos):
    nbest = NBest(hyps=[[[3, 4, 4], [5]], [[4]]], scores=[[0.0, -1.0], [-2.0]], alphabet=[3, 4, 5])
    nbest.hyps[1].append([3])
    nbest.scores[1].append(-INF)
    post = ngram_posteriors(
        *nbest.tensors(), max_order=1, bos_id=bos, eos_id=None if bos is None else 0
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


def test_posteriors_to_the_same_device_are_equal():
    post = _posteriors(bos_id=1, eos_id=0)
    moved = post.to("cpu")
    queries = torch.tensor([[3, 4], [1, 3], [4, 5], [5, 0]])
    sentence = torch.zeros(4, dtype=torch.int64)
    assert torch.equal(moved.lookup(queries, sentence), post.lookup(queries, sentence))
    assert (moved.bos_id, moved.eos_id, moved.max_order) == (1, 0, 2)


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
# Regression tests of defects found while writing this file
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
    wide = ngram_posteriors(_IDS, _LENS, _SCORES)
    narrow = ngram_posteriors(_IDS.to(dtype), _LENS, _SCORES)
    queries = torch.tensor([[3, 4], [3, 5], [4, 5]])
    sentence = torch.zeros(3, dtype=torch.int64)
    assert torch.equal(narrow.lookup(queries, sentence), wide.lookup(queries, sentence))


def test_bos_equal_to_eos_keeps_the_eos_unigram():
    # GPT-2 style: one ID is BOS and EOS.  Every hypothesis ends with EOS, so P((eos,)) = 1; only
    # the lone leading marker is excluded.
    post = ngram_posteriors(_IDS, _LENS, _SCORES, bos_id=0, eos_id=0)
    brute = brute_posteriors([[3, 4, 5], [3, 5]], [0.0, -1.0], 1.0, 4, 0, 0)
    assert brute[(0,)] == pytest.approx(1.0)
    got = post.lookup(torch.tensor([[0], [5]]), torch.zeros(2, dtype=torch.int64))
    assert got.tolist() == pytest.approx([brute[(0,)], brute[(5,)]])


def test_non_tensor_evidence_is_named():
    with pytest.raises(TypeError, match=r"evidence_ids must be a torch\.Tensor"):
        ngram_posteriors(_IDS.tolist(), _LENS, _SCORES)


@pytest.mark.parametrize("case", ["dense hypothesis", "unigram tables"])
def test_bias_at_the_end_of_a_full_table(case):
    # _add_children clamps the child entries to keys.numel() - 1 (= size, the sentinel slot),
    # but the value tables have only size entries: a history whose run of children lies within
    # the widest fan-out of a table's end reads past it.  Unpadded evidence and unigram-only
    # from_ngrams tables (whose order-1 table is full) get there.
    if case == "dense hypothesis":
        hyp = [3, 4, 3, 5, 6, 7]  # bigrams fill 5 of 6 slots; 3 has two successors
        post = ngram_posteriors(
            torch.tensor([[hyp]]), torch.tensor([[6]]), torch.zeros(1, 1), max_order=2
        )
        tables = [brute_posteriors([hyp], [0.0], 1.0, 2)]
        tokens = torch.tensor([[1, 7]])  # history: the hypothesis's last token
    else:
        tables = [{(3,): 0.5, (4,): 0.25}, {(5,): 1.0}]
        post = NgramPosteriors.from_ngrams(tables)
        tokens = torch.tensor([[1], [1]])
    theta = [-0.1] + [1.0] * post.max_order
    out = LMBRBias(post, theta, vocab_size=8, eos_id=0)(tokens)
    for row in range(tokens.shape[0]):  # one beam per sentence
        history = tuple(tokens[row, 1:].tolist())
        for y in range(1, 8):
            want = theta[0] + sum(
                theta[n] * tables[row].get((*history, y)[-n:], 0.0)
                for n in range(1, min(post.max_order, len(history) + 1) + 1)
            )
            assert out[row, y].item() == pytest.approx(want, abs=1e-6)
