"""NLTK's ``weights`` in any sequence NLTK takes (numpy arrays included), scored as NLTK scores
them; the config stays frozen and hashable (a tuple of floats)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from nltk.translate import bleu_score as nltk_bleu
from oracles.bleu import ATOL, quiet
from strategies import SETTINGS

from tensortext import BLEU, corpus_bleu, sentence_bleu
from tensortext.bleu import BleuConfig
from tensortext.padded import pad_ragged, pad_ragged_refs


def word_ids(*sentences: list[str]) -> list[list[int]]:
    vocabulary: dict[str, int] = {}
    return [[vocabulary.setdefault(word, len(vocabulary)) for word in s] for s in sentences]


def test_nltks_own_numpy_weights_case() -> None:
    """NLTK's ``test_numpy_weights``: no match at all, weights a numpy array, score 0."""
    sentences = ["The candidate has no alignment to any of the references", "John loves Mary"]
    reference, hypothesis = (sentence.split() for sentence in sentences)
    weights = np.array([0.25] * 4)
    with quiet():
        expected = nltk_bleu.sentence_bleu([reference], hypothesis, weights)
    assert expected == 0
    ref_ids, hyp_ids = word_ids(reference, hypothesis)
    score = sentence_bleu(
        pad_ragged([hyp_ids]),
        pad_ragged_refs([[ref_ids]]),
        compat="nltk",
        smooth_method="method0",  # NLTK's default: no smoothing
        weights=weights,
    )
    assert score.tolist() == [expected]


WEIGHT_CONTAINERS: dict[str, Callable[[list[float]], Any]] = {
    "numpy_float64": np.array,
    "numpy_float32": lambda w: np.array(w, dtype=np.float32),
    "list_of_numpy_scalars": lambda w: [np.float64(x) for x in w],
    "tensor_float64": lambda w: torch.tensor(w, dtype=torch.float64),
    "generator": lambda w: (x for x in w),
    "tuple": tuple,
}

SENTENCES = [  # three hypotheses, then their references
    "the cat sat on the mat today",
    "a dog ran in the park",
    "the cat is on the mat",
    "the cat sat on the mat",
    "the dog ran in a park",
    "there is a cat on the mat",
]
IDS = word_ids(*(sentence.split() for sentence in SENTENCES))
HYPS, REFS = IDS[:3], IDS[3:]


@pytest.mark.parametrize("make", list(WEIGHT_CONTAINERS.values()), ids=list(WEIGHT_CONTAINERS))
def test_weight_containers_score_as_nltk(make: Callable[[list[float]], Any]) -> None:
    weights = [0.4, 0.3, 0.2, 0.1]
    as_float32 = [float(np.float32(w)) for w in weights]  # what a float32 array holds
    exact = as_float32 if make is WEIGHT_CONTAINERS["numpy_float32"] else weights
    config = BleuConfig(compat="nltk", smooth_method="method1", weights=make(weights))
    assert config.weights == tuple(exact)
    assert all(type(w) is float for w in config.weights)
    assert hash(config) == hash(BleuConfig(compat="nltk", smooth_method="method1", weights=exact))
    smoothing = nltk_bleu.SmoothingFunction().method1
    refs = [[ref] for ref in REFS]
    with quiet():
        expected_rows = [
            nltk_bleu.sentence_bleu(r, h, np.array(exact), smoothing_function=smoothing)
            for r, h in zip(refs, HYPS, strict=True)
        ]
        expected_corpus = nltk_bleu.corpus_bleu(
            refs, HYPS, np.array(exact), smoothing_function=smoothing
        )
    hyp, ref = pad_ragged(HYPS), pad_ragged_refs(refs)
    options = {"compat": "nltk", "smooth_method": "method1", "dtype": torch.float64}
    rows = sentence_bleu(hyp, ref, weights=make(weights), **options)
    torch.testing.assert_close(  # float64: the formula's rounding only
        rows, torch.tensor(expected_rows, dtype=torch.float64), atol=ATOL[torch.float64], rtol=0
    )
    corpus = corpus_bleu(hyp, ref, weights=make(weights), **options)
    assert math.isclose(float(corpus), expected_corpus, abs_tol=ATOL[torch.float64])
    metric = BLEU(weights=make(weights), **options)
    metric.update(hyp, ref)
    assert torch.equal(metric.compute(), corpus)


@SETTINGS
@given(
    weights=st.lists(
        st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False), min_size=1, max_size=5
    ),
    data=st.data(),
)
def test_random_numpy_weights_score_as_nltk(weights: list[float], data: st.DataObject) -> None:
    """Any order 1..5, NLTK's own weights array: our score equals NLTK's on random rows."""
    order = len(weights)
    words = st.lists(st.sampled_from("abcde"), max_size=9)
    hyp_words, ref_words = data.draw(words), data.draw(words)
    hyp_ids, ref_ids = word_ids(hyp_words, ref_words)
    array = np.array(weights, dtype=np.float64)
    with quiet():
        expected = nltk_bleu.sentence_bleu(
            [ref_ids],
            hyp_ids,
            array,
            smoothing_function=nltk_bleu.SmoothingFunction().method1,
        )
    score = sentence_bleu(
        pad_ragged([hyp_ids]),
        pad_ragged_refs([[ref_ids]]),
        compat="nltk",
        smooth_method="method1",
        max_ngram_order=order,
        weights=array,
        dtype=torch.float64,
    )
    assert math.isclose(float(score[0]), expected, abs_tol=ATOL[torch.float64]), (
        f"weights {weights}, hyp {hyp_words}, ref {ref_words}: {float(score[0])} != {expected}"
    )


BAD_WEIGHTS = {
    "two_dimensional": (np.full((2, 2), 0.25), ValueError, r"one-dimensional.*shape \(2, 2\)"),
    "bool_array": (np.array([True, False, True, False]), TypeError, "weights must be a number"),
    "nan_in_array": (np.array([0.5, np.nan, 0.25, 0.25]), ValueError, "finite"),
    "set": ({0.25, 0.5}, TypeError, "sequence of numbers"),
    "dict": ({1: 0.25}, TypeError, "sequence of numbers"),
    "string": ("0.25", TypeError, "sequence of numbers"),
}


@pytest.mark.parametrize(
    ("weights", "error", "match"), list(BAD_WEIGHTS.values()), ids=list(BAD_WEIGHTS)
)
def test_what_is_no_weights_is_refused_naming_weights(
    weights: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        BleuConfig(compat="nltk", weights=weights)
