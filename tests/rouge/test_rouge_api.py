"""ROUGE's public surface: the config, the drop-in scorer, torchmetrics' dict, named edge cases
and the errors for bad input (raised before any work, naming the argument and the fix)."""

from __future__ import annotations

import doctest
import sys

import pytest
import torch
from oracles.rouge import ALL_TYPES, ATOL, assert_scores_close, corpus_means, reference_scores
from rouge_score import rouge_scorer
from torchmetrics.functional.text.rouge import rouge_score as torchmetrics_rouge

import tensortext.rouge.config
import tensortext.rouge.functional
import tensortext.rouge.lcs
import tensortext.rouge.metric
import tensortext.rouge.scorer
import tensortext.rouge.text
from tensortext.padded import MISSING_REF, Padded
from tensortext.rouge import (
    ROUGE,
    ROUGE_TYPES,
    RougeConfig,
    RougeScorer,
    Score,
    corpus_rouge,
    pairwise_rouge,
    rouge_dict,
    rouge_from_stats,
    rouge_stats,
    sentence_rouge,
)
from tensortext.rouge.text import porter_stemmer

# --------------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------------


def test_config_stores_a_tuple_and_resolves_orders():
    config = RougeConfig(rouge_types=["rougeL", "rouge3"])
    assert config.rouge_types == ("rougeL", "rouge3")
    assert config.ngram_orders == (0, 3) and config.max_ngram_order == 3 and config.width == 7
    assert RougeConfig().rouge_types == ("rouge1", "rouge2", "rougeL")
    assert ROUGE_TYPES == ALL_TYPES


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"rouge_types": "rouge1"}, TypeError, r"pass \('rouge1',\)"),
        ({"rouge_types": None}, TypeError, "sequence of names"),
        ({"rouge_types": [1]}, TypeError, "strings"),
        ({"rouge_types": []}, ValueError, "empty.*rouge1"),
        ({"rouge_types": ["rouge10"]}, ValueError, "unknown.*'rougeL'"),
        ({"rouge_types": ["rouge0"]}, ValueError, "unknown"),
        ({"rouge_types": ["rougeLsum"]}, ValueError, "not supported; use 'rougeL'"),
        ({"rouge_types": ["rouge1", "rouge1"]}, ValueError, "twice.*valid"),
        ({"use_stemmer": 1}, TypeError, "use_stemmer"),
        ({"dtype": torch.float16}, TypeError, "float32 or torch.float64"),
    ],
)
def test_config_errors(options, error, match):
    with pytest.raises(error, match=match):
        RougeConfig(**options)


def test_config_or_keywords_not_both():
    config = RougeConfig(rouge_types=["rouge1"])
    with pytest.raises(ValueError, match="config= and dtype"):
        sentence_rouge(["a"], ["a"], config=config, dtype=torch.float64)
    with pytest.raises(TypeError, match="RougeConfig"):
        sentence_rouge(["a"], ["a"], config="rouge1")  # type: ignore[arg-type]
    # Keywords left at their defaults (a list equal to the default types included) are fine.
    sentence_rouge(["a"], ["a"], config=config, rouge_types=["rouge1", "rouge2", "rougeL"])


def test_stemmer_without_nltk_names_the_install(monkeypatch):
    porter_stemmer.cache_clear()
    monkeypatch.setitem(sys.modules, "nltk", None)
    monkeypatch.setitem(sys.modules, "nltk.stem", None)
    try:
        with pytest.raises(ImportError, match="pip install nltk"):
            RougeConfig(use_stemmer=True)
        assert sentence_rouge(["a b"], ["a b"]).shape == (1, 3, 3)  # no stemmer: no nltk
    finally:
        porter_stemmer.cache_clear()


# --------------------------------------------------------------------------------------------
# Drop-in scorer and torchmetrics' dict
# --------------------------------------------------------------------------------------------

PAIRS = [
    ("The quick brown fox jumps over the lazy dog", "The quick brown dog jumps on the log."),
    ("testing one two", "testing"),
    ("", "something"),
    ("Meetings were generously scheduled", "the meeting was scheduled generously"),
    ("日本語 only", "😀 !!"),
]


@pytest.mark.parametrize("stem", [False, True])
def test_scorer_equals_rouge_score_exactly(stem):
    types = ["rougeL", "rouge2", "rouge1", "rouge2"]  # duplicates and order as given
    theirs = rouge_scorer.RougeScorer(types, use_stemmer=stem)
    ours = RougeScorer(types, use_stemmer=stem)
    for target, prediction in PAIRS:
        expected = theirs.score(target, prediction)
        got = ours.score(target, prediction)
        assert list(got) == list(expected)
        assert all(isinstance(got[k], Score) and tuple(got[k]) == tuple(expected[k]) for k in got)
        assert all(type(x) is float for s in got.values() for x in s)
    targets = [t for t, _ in PAIRS]
    for _, prediction in PAIRS:
        expected = theirs.score_multi(targets, prediction)
        assert ours.score_multi(targets, prediction) == expected
    batch = ours.score_batch([[t, "x"] for t, _ in PAIRS], [p for _, p in PAIRS])
    assert batch == [theirs.score_multi([t, "x"], p) for t, p in PAIRS]


def test_scorer_refuses_unsupported_options():
    with pytest.raises(ValueError, match="split_summaries"):
        RougeScorer(["rouge1"], split_summaries=True)
    with pytest.raises(ValueError, match="tokenizer=None"):
        RougeScorer(["rouge1"], tokenizer=rouge_scorer.tokenizers.DefaultTokenizer())
    with pytest.raises(ValueError, match="targets is empty"):
        RougeScorer(["rouge1"]).score_multi([], "a")
    with pytest.raises(TypeError, match="targets"):
        RougeScorer(["rouge1"]).score_multi("a b", "a")
    with pytest.raises(TypeError, match="target must be a str"):
        RougeScorer(["rouge1"]).score(None, "a")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="prediction must be a str"):
        RougeScorer(["rouge1"]).score("a", b"a")  # type: ignore[arg-type]


def test_rouge_dict_has_torchmetrics_keys_and_values():
    hyps = ["The cat sat on the mat", "a b c", "nothing here"]
    refs = [["the cat sat", "on the mat the cat sat"], ["a c b"], ["x"]]
    types = ("rouge1", "rouge2", "rougeL")
    theirs = torchmetrics_rouge(hyps, refs, rouge_keys=types, accumulate="best")
    ours = rouge_dict(corpus_rouge(hyps, refs, rouge_types=types), rouge_types=types)
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        torch.testing.assert_close(ours[key], value, atol=1e-6, rtol=0)
    rows = rouge_dict(sentence_rouge(hyps, refs), config=RougeConfig())
    assert rows["rougeL_recall"].shape == (3,)


# --------------------------------------------------------------------------------------------
# Named edge cases (text)
# --------------------------------------------------------------------------------------------

EDGE_CASES = {
    "empty hypothesis": ("", ["a b"]),
    "empty reference": ("a b", [""]),
    "both empty": ("", [""]),
    "whitespace only": (" \t\n ", ["\n\n"]),
    "one token": ("word", ["word"]),
    "shorter than n": ("a", ["a"]),
    "punctuation only": ("!?...", ["--"]),
    "CJK and emoji dropped": ("日本語 😀 cat", ["cat 中文"]),
    "combining marks": ("cafe\u0301 e\u0301", ["cafe e"]),
    "astral plane": ("\U0001d518\U0001d52b\U0001d526 code \U0001d7d8 \U0001f600", ["code"]),
    "dotted I folds to ascii": ("İstanbul", ["i stanbul"]),
    "kelvin sign folds to k": ("\u212aelvin", ["kelvin"]),
    "ligature dropped": ("ﬁne", ["ne"]),
    "no reference": ("a b", []),
    "all references missing": ("a b", [None, None]),
    "missing then present": ("a b c", [None, "a c", None, "b c"]),
    "tie keeps the first": ("a b c d", ["a b x y", "c d z w"]),
    "digits and case": ("Model-X 2024 GPU", ["model x 2024 gpu"]),
    # rouge-score's pure-Python LCS table is slow: 1000-token LCS runs in test_rouge_lcs.py.
    "long": (
        " ".join(f"w{i % 37}" for i in range(600)),
        [" ".join(f"w{i % 31}" for i in range(500))],
    ),
}


@pytest.mark.parametrize("stem", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_edge_cases(stem, dtype):
    hyps = [hyp for hyp, _ in EDGE_CASES.values()]
    refs = [refs for _, refs in EDGE_CASES.values()]
    types = list(ALL_TYPES)
    expected = reference_scores(hyps, refs, types, use_stemmer=stem)
    ours = sentence_rouge(hyps, refs, rouge_types=types, use_stemmer=stem, dtype=dtype)
    assert_scores_close(ours, expected, atol=ATOL[dtype], label="edge", inputs=list(EDGE_CASES))
    stats = rouge_stats(hyps, refs, rouge_types=types, use_stemmer=stem, dtype=dtype)
    assert stats.dtype == dtype and stats[:, 0].tolist() == [1.0] * len(hyps)
    corpus = rouge_from_stats(stats.sum(0), rouge_types=types)
    assert_scores_close(corpus, corpus_means(expected, len(types)), atol=ATOL[dtype], label="mean")


def test_empty_batch():
    assert sentence_rouge([], []).shape == (0, 3, 3)
    assert rouge_stats([], [], rouge_types=["rougeL"]).shape == (0, 4)
    assert corpus_rouge([], []).tolist() == [[0.0] * 3] * 3
    assert pairwise_rouge([]).shape == (0, 0, 0, 3, 3)
    ids = torch.zeros(0, 4, dtype=torch.long)
    assert sentence_rouge(ids, ids, hyp_lens=torch.zeros(0, dtype=torch.long)).shape == (0, 3, 3)
    for shape in [(0, 0, 0), (0, 3, 2), (2, 3, 0), (2, 0, 4)]:
        candidates = Padded(torch.zeros(shape, dtype=torch.long), torch.zeros(shape[:2]).long())
        scores = pairwise_rouge(candidates)
        assert scores.shape == (*shape[:2], shape[1], 3, 3) and not scores.any()


def test_token_id_refs_missing_slots():
    hyp = torch.tensor([[1, 2, 3], [1, 2, 3]])
    refs = torch.tensor([[[9, 9, 9], [1, 2, 3]], [[1, 2, 3], [7, 7, 7]]])
    ref_lens = torch.tensor([[MISSING_REF, 3], [MISSING_REF, MISSING_REF]])
    scores = sentence_rouge(hyp, refs, ref_lens=ref_lens, rouge_types=["rouge1"])
    assert scores[:, 0, 2].tolist() == [1.0, 0.0]


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

IDS = torch.tensor([[1, 2, 3]])


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: sentence_rouge("a b", ["a"]), TypeError, "list of strings"),
        (lambda: sentence_rouge(["a", 3], ["a", "b"]), TypeError, r"hyps\[1\]"),
        (lambda: sentence_rouge(["a"], ["a", "b"]), ValueError, "1 sentences but refs has 2"),
        (lambda: sentence_rouge(["a"], [["a", 3]]), TypeError, r"refs\[0\]\[1\]"),
        (lambda: sentence_rouge(["a"], [3]), TypeError, r"refs\[0\]"),
        (lambda: sentence_rouge(["a"], IDS), TypeError, "refs must be a list"),
        (lambda: sentence_rouge(IDS, ["a"]), TypeError, "refs must be a tensor"),
        (lambda: sentence_rouge(["a"], ["a"], pad_id=0), ValueError, "pad_id is for token IDs"),
        (lambda: sentence_rouge(["a"], ["a"], hyp_lens=IDS[0]), ValueError, "hyp_lens"),
        (lambda: sentence_rouge(IDS, IDS, use_stemmer=True), ValueError, "use_stemmer"),
        (lambda: sentence_rouge(IDS.float(), IDS), TypeError, "integer dtype"),
        (lambda: sentence_rouge(IDS, IDS[:, :, None, None]), ValueError, r"\[B, R, L\]"),
        (lambda: sentence_rouge(IDS, torch.tensor([[-5, 1, 2]])), ValueError, "negative"),
        (lambda: sentence_rouge(IDS, IDS, device="meta"), ValueError, "device places text"),
        (lambda: sentence_rouge(None, None), TypeError, "token IDs"),
        (lambda: rouge_from_stats(torch.ones(4)), ValueError, "10 columns"),
        (lambda: rouge_from_stats(torch.ones(10, dtype=torch.long)), TypeError, "floating"),
        (lambda: rouge_dict(torch.ones(2, 3)), ValueError, r"\[..., 3, 3\]"),
        (lambda: pairwise_rouge(IDS), TypeError, "Padded"),
        (lambda: pairwise_rouge(Padded(IDS, torch.tensor([3]))), ValueError, r"\[B, N, L\]"),
        (lambda: pairwise_rouge([["a", "b"], ["c"]]), ValueError, "same N"),
        (lambda: pairwise_rouge([["a", None]]), TypeError, r"candidates\[0\]\[1\]"),
        (lambda: pairwise_rouge(["ab"]), TypeError, "list of strings"),
        (
            lambda: pairwise_rouge(Padded(IDS[None], torch.tensor([[4]]))),
            ValueError,
            "outside 0..3",
        ),
    ],
)
def test_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_metric_class():
    metric = ROUGE(config=RougeConfig(rouge_types=["rouge2"], dtype=torch.float64))
    assert metric.compute().tolist() == [[0.0, 0.0, 0.0]]
    stats = metric.update(torch.tensor([[1, 2, 3]]), torch.tensor([[1, 2, 4]]))
    assert stats.tolist() == [[1.0, 0.5, 0.5, 0.5]]
    metric.update(["a b"], ["a b"])
    assert metric.compute().tolist() == [[0.75, 0.75, 0.75]]
    assert metric.stats is not None and metric.stats.tolist() == [2.0, 1.5, 1.5, 1.5]
    with pytest.raises(ValueError, match="config= and"):
        ROUGE(config=RougeConfig(), use_stemmer=True)


# --------------------------------------------------------------------------------------------
# Docstring examples (tests/test_static.py lists the modules of the rest of the package)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "module",
    [
        tensortext.rouge.config,
        tensortext.rouge.functional,
        tensortext.rouge.lcs,
        tensortext.rouge.metric,
        tensortext.rouge.scorer,
        tensortext.rouge.text,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module):
    result = doctest.testmod(module, extraglobs={"torch": torch})
    assert result.attempted > 0 and result.failed == 0
