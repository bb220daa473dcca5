"""rouge-score's own test vectors, run on tensortext's ``RougeScorer`` (and ``lcs_lengths``).

The inputs and expected values come from the installed ``rouge_score/rouge_scorer_test.py``,
``tokenize_test.py`` and ``tokenizers_test.py``; the test code is ours. Not ported: the cases
that read rouge-score's ``testdata`` files (not installed with the package: the ROUGE-1.5.5
comparisons and the large rougeLsum file), and the rougeLsum internals (``_union_lcs``,
``_summary_level_lcs``, LCS backtracking), since ``rougeLsum`` is refused by name here. The
cases whose type list includes ``rougeLsum``, and the custom-tokenizer case, check that refusal.
"""

from __future__ import annotations

import pytest
import torch

from tensortext.rouge import RougeScorer, lcs_lengths, tokenize

# assertAlmostEqual's default: 7 decimal places.
PLACES = 1e-7


@pytest.mark.parametrize("rouge_type", ["rougen", "rouge0", "rouge10"])
def test_invalid_rouge_types(rouge_type):
    with pytest.raises(ValueError):
        RougeScorer([rouge_type]).score("testing one two", "testing")


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge9", "rougeL"])
def test_valid_rouge_types(rouge_type):
    result = RougeScorer([rouge_type]).score("testing one two", "testing")
    assert list(result) == [rouge_type]


def test_rouge_lsum_is_refused_by_name():
    with pytest.raises(ValueError, match=r"rougeLsum.*not supported.*rougeL"):
        RougeScorer(["rougeLsum"])


def _assert_score(score, precision, recall, fmeasure):
    assert score.precision == pytest.approx(precision, abs=PLACES)
    assert score.recall == pytest.approx(recall, abs=PLACES)
    assert score.fmeasure == pytest.approx(fmeasure, abs=PLACES)


def test_rouge1():
    result = RougeScorer(["rouge1"]).score("testing one two", "testing")
    _assert_score(result["rouge1"], 1, 1 / 3, 1 / 2)


def test_rouge1_multi():
    result = RougeScorer(["rouge1"]).score_multi(["testing one two"], "testing")
    _assert_score(result["rouge1"], 1, 1 / 3, 1 / 2)


def test_rouge_all_multi():
    scorer = RougeScorer(["rouge1", "rouge2", "rougeL"])
    result = scorer.score_multi(["first text", "first something"], "text first")
    assert result["rouge1"].fmeasure == pytest.approx(1, abs=PLACES)
    assert result["rouge2"].fmeasure == pytest.approx(0, abs=PLACES)
    assert result["rougeL"].fmeasure == pytest.approx(0.5, abs=PLACES)


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL"])
def test_rouge_empty(rouge_type):
    result = RougeScorer([rouge_type]).score("testing one two", "")
    _assert_score(result[rouge_type], 0, 0, 0)


def test_rouge2():
    result = RougeScorer(["rouge2"]).score("testing one two", "testing one")
    _assert_score(result["rouge2"], 1, 1 / 2, 2 / 3)


def test_rouge_l_consecutive():
    result = RougeScorer(["rougeL"]).score("testing one two", "testing one")
    _assert_score(result["rougeL"], 1, 2 / 3, 4 / 5)


def test_rouge_l_non_consecutive():
    result = RougeScorer(["rougeL"]).score("testing one two", "testing two")
    _assert_score(result["rougeL"], 1, 2 / 3, 4 / 5)


def test_multiple_rouge_types():
    result = RougeScorer(["rouge1", "rougeL"]).score("testing one two", "testing one")
    assert sorted(result) == ["rouge1", "rougeL"]
    _assert_score(result["rouge1"], 1, 2 / 3, 4 / 5)
    _assert_score(result["rougeL"], 1, 2 / 3, 4 / 5)


def test_lcs_table_values():
    ref = torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]])
    candidates = torch.tensor([[2, 5, 3, 4], [8, 9, -1, -1]])
    lengths = lcs_lengths(candidates, torch.tensor([4, 2]), ref, torch.tensor([5, 5]))
    assert lengths.tolist() == [3, 0]


def test_custom_tokenizer_is_refused_by_name():
    with pytest.raises(ValueError, match="tokenizer"):
        RougeScorer(["rouge1"], tokenizer=object())
    # The default tokenizer gives the case's expected result.
    assert RougeScorer(["rouge1"]).score("this is a test", "this is a test")["rouge1"].fmeasure == 1


def test_tokenize():
    assert tokenize("one Two three") == ["one", "two", "three"]
    assert tokenize("one\n Two \nthree") == ["one", "two", "three"]


def test_default_tokenizer_with_and_without_stemmer():
    assert tokenize("this is a test") == ["this", "is", "a", "test"]
    assert tokenize("the friends had a meeting", use_stemmer=True) == [
        "the", "friend", "had", "a", "meet",
    ]  # fmt: skip
