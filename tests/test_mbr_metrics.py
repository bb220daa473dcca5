"""``mbr_rerank(metric="chrf" | "rouge")`` against brute force over sacrebleu's sentence chrF and
rouge-score on every pair."""

from __future__ import annotations

import math

import pytest
import torch
from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.metrics import CHRF as SacreCHRF

from tensortext.bleu import BleuConfig
from tensortext.chrf import ChrfConfig
from tensortext.mbr import mbr_rerank
from tensortext.rouge import RougeConfig

CANDIDATES = [
    ["the cat sat on the mat", "the cat sat on a mat", "a cat is on the mat", "dogs run"],
    ["Hello, world!", "hello world", "", "Hello there, world."],
]
SCORES = torch.tensor([[-1.0, -1.5, -0.5, -math.inf], [-0.2, -0.3, -3.0, -1.0]])


def brute_force(utility, scores: torch.Tensor | None, alpha: float, include_self: bool):
    expected = []
    for b, row in enumerate(CANDIDATES):
        logits = torch.zeros(len(row)) if scores is None else alpha * scores[b]
        out = []
        for i, hyp in enumerate(row):
            if logits[i] == -math.inf:
                out.append(-math.inf)
                continue
            mask = torch.tensor([include_self or j != i for j in range(len(row))])
            weights = torch.softmax(logits.masked_fill(~mask, -math.inf), 0).nan_to_num(0.0)
            pairs = zip(weights, row, strict=True)
            out.append(sum(float(w) * utility(hyp, ref) for w, ref in pairs))
        expected.append(out)
    return torch.tensor(expected, dtype=torch.float64)


@pytest.mark.parametrize("word_order", [0, 2])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("scores", [None, SCORES])
def test_chrf_utility_equals_brute_force(word_order, include_self, scores):
    sacre = SacreCHRF(word_order=word_order)
    expected = brute_force(
        lambda h, r: sacre.sentence_score(h, [r]).score / 100, scores, 1.0, include_self
    )
    got = mbr_rerank(CANDIDATES, scores=scores, metric="chrf", include_self=include_self,
                     config=ChrfConfig(word_order=word_order))  # fmt: skip
    torch.testing.assert_close(got.expected_utility.double(), expected, atol=1e-5, rtol=0)
    assert got.best.tolist() == expected.argmax(1).tolist()
    assert got.expected_bleu is got.expected_utility  # the earlier name


@pytest.mark.parametrize("rouge_types", [("rougeL",), ("rouge1", "rouge2", "rougeL")])
def test_rouge_utility_is_the_mean_f_measure(rouge_types):
    scorer = RougeScorer(list(rouge_types))

    def utility(hyp: str, ref: str) -> float:
        scores = scorer.score(ref, hyp)
        return sum(scores[t].fmeasure for t in rouge_types) / len(rouge_types)

    expected = brute_force(utility, SCORES, 0.5, True)
    got = mbr_rerank(CANDIDATES, scores=SCORES, alpha=0.5, metric="rouge",
                     config=RougeConfig(rouge_types=rouge_types))  # fmt: skip
    torch.testing.assert_close(got.expected_utility.double(), expected, atol=1e-5, rtol=0)


def test_token_ids_with_rouge_and_codepoints_with_chrf():
    ids = torch.tensor([[[5, 6, 7, 0], [5, 6, 8, 9], [9, 9, 9, 9]]])
    lengths = torch.tensor([[3, 4, 4]])
    scorer = RougeScorer(["rougeL"])
    rows = [" ".join(map(str, r[:n].tolist())) for r, n in zip(ids[0], lengths[0], strict=True)]
    expected = [sum(scorer.score(r, h)["rougeL"].fmeasure for r in rows) / 3 for h in rows]
    got = mbr_rerank(ids, lengths, metric="rouge")
    assert got.expected_utility[0].tolist() == pytest.approx(expected, abs=1e-6)
    codepoints = torch.tensor([[[ord(c) for c in "abcd"], [ord(c) for c in "abce"]]])
    text = mbr_rerank([["abcd", "abce"]], metric="chrf").expected_utility
    tensor = mbr_rerank(codepoints, torch.tensor([[4, 4]]), metric="chrf").expected_utility
    torch.testing.assert_close(tensor, text)


def test_errors_name_the_fix():
    with pytest.raises(ValueError, match="metric"):
        mbr_rerank(CANDIDATES, metric="ter")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ChrfConfig"):
        mbr_rerank(CANDIDATES, metric="chrf", config=BleuConfig())
    with pytest.raises(TypeError, match="token IDs"):
        mbr_rerank(CANDIDATES)  # BLEU needs IDs
    with pytest.raises(ValueError, match="same N"):
        mbr_rerank([["a", "b"], ["c"]], metric="chrf")
    with pytest.raises(ValueError, match="lengths=None"):
        mbr_rerank(CANDIDATES, torch.ones(2, 4), metric="chrf")
    with pytest.raises(ValueError, match="scores"):
        mbr_rerank(CANDIDATES, scores=torch.zeros(2, 3), metric="chrf")
