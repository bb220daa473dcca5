"""``tensortext.mbr.mbr_rerank`` against sacrebleu's ``sentence_score`` over all pairs.

Random N-best lists (``oracles.lmbr.nbest_lists``: repeated n-grams, empty and absent (``-inf``)
candidates) are reranked by brute force: expected BLEU of each candidate under
``softmax(alpha * scores)`` over the others, each pair scored by sacrebleu. Expected BLEU
(float32) within 1e-5: a weighted sum of at most 5 float32 BLEU values, each within 1e-6.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracles.bleu import sacrebleu_sentence
from oracles.lmbr import nbest_lists, softmax_weights
from strategies import SETTINGS

from tensortext.bleu import BleuConfig
from tensortext.mbr import MBR_CONFIG, mbr_rerank
from tensortext.padded import Padded

INF = math.inf

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
        config=dataclasses.replace(MBR_CONFIG, **options),
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


_IDS = torch.tensor([[[3, 4, 5], [3, 5, 0]]])
_LENS = torch.tensor([[3, 2]])
_SCORES = torch.tensor([[0.0, -1.0]])


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "match"),
    [
        ((_IDS[0], _LENS[0]), {}, ValueError, r"candidates must have shape \[B, N, L\]"),
        ((_IDS, _LENS[0]), {}, ValueError, r"lengths must have shape \[B, N\]"),
        ((_IDS, _LENS, _SCORES.long()), {}, TypeError, "scores must have a floating dtype"),
        ((_IDS, _LENS, _SCORES.T), {}, ValueError, r"scores must have shape \[B, N\]"),
        ((_IDS, _LENS), {"hyp_lens": _LENS}, TypeError, "hyp_lens"),
        ((_IDS, _LENS), {"pad_id": 0}, TypeError, "pad_id"),
        ((_IDS, torch.tensor([[4, 2]])), {}, ValueError, "lengths"),
        ((_IDS.float(), _LENS), {}, TypeError, "candidates"),
        ((_IDS, _LENS), {"config": {"smooth_method": "floor"}}, TypeError, "config"),
    ],
    ids=[
        "2-D",
        "lengths",
        "int scores",
        "scores shape",
        "hyp_lens",
        "pad_id",
        "lengths > L",
        "float candidates",
        "config dict",
    ],
)
def test_mbr_rerank_rejects_bad_input(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        mbr_rerank(*args, **kwargs)


def test_mbr_rerank_takes_beam_output_and_any_bleu_config():
    """``Padded`` candidates (what ``BeamOutput.without_eos`` returns) go straight in, and an NLTK
    config scores the pairs under NLTK's definition."""
    candidates = Padded(
        torch.tensor([[[5, 6, 7], [5, 6, 8], [9, 9, -1]]]), torch.tensor([[3, 3, 2]])
    )
    assert mbr_rerank(*candidates).best.tolist() == [0]
    nltk = BleuConfig(compat="nltk", smooth_method="method1", max_ngram_order=2)
    out = mbr_rerank(*candidates, config=nltk)
    assert out.expected_bleu.shape == (1, 3) and out.best.tolist() == [0]


@pytest.mark.parametrize("bad", [math.nan, math.inf], ids=["nan", "+inf"])
def test_mbr_rerank_refuses_nan_and_positive_inf_scores(bad):
    """A NaN score silently gave candidate 0 and expected BLEU -inf (a NaN softmax); +inf does
    the same. Both are refused, naming the entry; -inf (an absent candidate) stays allowed."""
    candidates = torch.tensor(
        [[[5, 6, 7], [5, 6, 8], [9, 9, 9]], [[1, 2, 3], [1, 2, 3], [4, 4, 4]]]
    )
    lengths = torch.full((2, 3), 3)
    scores = torch.tensor([[0.0, -1.0, -math.inf], [-2.0, -1.0, -0.5]])
    assert mbr_rerank(candidates, lengths, scores).best.tolist() == [0, 2]
    scores[1, 2] = bad
    with pytest.raises(ValueError, match=rf"scores\[1, 2\] is {bad}; scores must be finite"):
        mbr_rerank(candidates, lengths, scores)
    for dtype in (torch.float64, torch.float16):
        with pytest.raises(ValueError, match=r"scores\[1, 2\]"):
            mbr_rerank(candidates, lengths, scores.to(dtype))
    # validate=False skips the host sync, as documented; other sentences are unaffected.
    checked = mbr_rerank(candidates[:1], lengths[:1], scores[:1])
    unchecked = mbr_rerank(candidates, lengths, scores, validate=False)
    assert torch.equal(unchecked.expected_bleu[0], checked.expected_bleu[0])
