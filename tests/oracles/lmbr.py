"""LMBR oracles: n-gram posteriors and linear BLEU gains by their definitions, random evidence.

* :func:`brute_posteriors`: ``P(u | E_b)`` as a pure-Python reading of Iglesias et al. (2018),
  Equation 2: the sum of ``softmax(alpha * s)_i`` over the hypotheses ``i`` that contain ``u``,
  each counted once.
* :func:`brute_gain`: the linear BLEU gain of a final hypothesis (Tromble et al., 2008).
* :class:`NBest`, :func:`nbest_lists`, :func:`posterior_tables`, :func:`gain_cases`: random
  evidence for hypothesis, with repeated n-grams, empty and absent (``-inf``) hypotheses,
  sentences without any, and IDs up to 2**40.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from hypothesis import strategies as st
from torch import Tensor

from tensortext.lmbr import LMBRBias, NgramPosteriors, lmbr_theta

INF = math.inf
# The decoder EOS of the bias and search tests (the table models of tests/decode/test_beam.py).
EOS = 0
# Boundary markers of the posterior tests.
BOS_MARK, EOS_MARK = 1, 2
# Decoder vocabulary of the bias tests: 0 = EOS, 1 = a BOS marker inside the vocabulary, 2 = a
# token no evidence contains, 3.. = evidence tokens.  V + 3 is a BOS marker outside it.
V = 12
LARGE_IDS = [2**40 - 1, 2**40, 2**40 + 1, 2**33 + 7, 2**20, 3, 4]
# A one-sentence, two-hypothesis evidence for error and edge-case tests.
TINY_IDS = torch.tensor([[[3, 4, 5], [3, 5, 0]]])
TINY_LENS = torch.tensor([[3, 2]])
TINY_SCORES = torch.tensor([[0.0, -1.0]])


def tiny_posteriors(**kwargs: object) -> NgramPosteriors:
    """Bigram posteriors of the tiny evidence (``kwargs``: ``bos_id``, ``eos_id``)."""
    from tensortext.lmbr import ngram_posteriors

    return ngram_posteriors(TINY_IDS, TINY_LENS, TINY_SCORES, max_ngram_order=2, **kwargs)  # type: ignore[arg-type]


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


def occurrences(seq: Sequence[int], max_ngram_order: int, lone_bos: bool) -> list[tuple[int, ...]]:
    """Every n-gram occurrence of ``seq`` (``n <= max_ngram_order``), without the unigram at
    position 0 when that position is a BOS marker (``lone_bos``)."""
    return [
        tuple(seq[i : i + n])
        for n in range(1, max_ngram_order + 1)
        for i in range(len(seq) - n + 1)
        if not (lone_bos and n == 1 and i == 0)
    ]


def brute_posteriors(
    hyps: Sequence[Sequence[int]],
    scores: Sequence[float],
    alpha: float,
    max_ngram_order: int,
    bos: int | None = None,
    eos: int | None = None,
) -> dict[tuple[int, ...], float]:
    """``P(u | E)`` of one sentence by the definition: every present hypothesis adds its weight
    once to every distinct n-gram it contains."""
    posteriors: dict[tuple[int, ...], float] = defaultdict(float)
    for hyp, score, weight in zip(hyps, scores, softmax_weights(scores, alpha), strict=True):
        if score > -INF:
            for ngram in set(occurrences(read_as(hyp, bos, eos), max_ngram_order, bos is not None)):
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
    max_ngram_order = len(theta) - 1
    total = theta[0] * len(hyp) + math.fsum(
        theta[len(u)] * posteriors.get(u, 0.0)
        for u in occurrences(seq, max_ngram_order, bos is not None)
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
# Random evidence
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


def all_ngrams(nbest: NBest, max_ngram_order: int, bos: int | None, eos: int | None):
    """The n-grams (orders 1..max_ngram_order) of every hypothesis, present or absent, read with the
    markers, and of every padded tensor row (junk included)."""
    ids, _, _ = nbest.tensors()
    found: set[tuple[int, ...]] = set()
    for b, row in enumerate(nbest.hyps):
        for m, hyp in enumerate(row):
            found.update(occurrences(read_as(hyp, bos, eos), max_ngram_order, False))
            found.update(occurrences(ids[b, m].tolist(), max_ngram_order, False))
    return found


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


@dataclass
class GainCase:
    nbest: NBest
    max_ngram_order: int
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
    max_ngram_order = draw(st.integers(1, 5))
    if draw(st.booleans()):
        theta = lmbr_theta(
            draw(st.sampled_from([0.1, 0.741])),
            draw(st.sampled_from([0.5, 0.62])),
            T=draw(st.sampled_from([1.0, 10.0])),
            max_ngram_order=max_ngram_order,
        ).tolist()
    else:
        theta = [draw(st.floats(-1.0, 0.0))] + [
            draw(st.floats(0.0, 2.0)) for _ in range(max_ngram_order)
        ]
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
        max_ngram_order=max_ngram_order,
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
