"""``BleuConfig``: the eight scoring options validated once, and the two ways to pass them
(``config=`` or keywords) giving the same scores; ``Padded`` batches in place of tensors."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch

from tensortext import BLEU, bleu_from_stats, bleu_stats, corpus_bleu, sentence_bleu
from tensortext.bleu import BleuConfig
from tensortext.padded import pad_ragged, pad_ragged_refs

HYPS = [[5, 6, 7, 8, 9], [5, 6], [], [7, 7, 7]]
REFS = [[[5, 6, 7, 8]], [[5, 6, 9], [6]], [[1]], [[7, 7], [7, 7, 7, 7]]]

OPTIONS = [
    {},
    {"smooth_method": "floor", "smooth_value": 0.3, "effective_order": True},
    {"compat": "nltk", "smooth_method": "method5", "max_ngram_order": 3},
    {"compat": "nltk", "smooth_method": "method7", "weights": [0.5, 0.3, 0.1, 0.1]},
    {"compat": "nltk", "smooth_method": "exp", "auto_reweigh": True, "dtype": torch.float64},
]


@pytest.mark.parametrize(
    "options", OPTIONS, ids=lambda o: "-".join(map(str, o.values())) or "default"
)
def test_config_equals_keywords_everywhere(options: dict[str, Any]) -> None:
    hyp, ref = pad_ragged(HYPS), pad_ragged_refs(REFS)
    config = BleuConfig(**options)
    for fn in (sentence_bleu, corpus_bleu):
        # Same statistics, same formula: equal to the last bit.
        assert torch.equal(fn(hyp, ref, config=config), fn(hyp, ref, **options))
        assert torch.equal(
            fn(hyp, ref, config=config),
            fn(hyp.ids, ref.ids, hyp_lens=hyp.lengths, ref_lens=ref.lengths, **options),
        )
    stats = bleu_stats(hyp, ref, config=config)
    assert stats.shape[-1] == 2 + 2 * config.stats_order
    assert torch.equal(bleu_from_stats(stats, config=config), sentence_bleu(hyp, ref, **options))
    metric = BLEU(config=config)
    metric.update(hyp, ref)
    assert torch.equal(metric.compute(), corpus_bleu(hyp, ref, config=config))


def test_padded_equals_tensors_with_lengths() -> None:
    hyp, ref = pad_ragged(HYPS), pad_ragged_refs(REFS)
    expected = sentence_bleu(hyp.ids, ref.ids, hyp_lens=hyp.lengths, ref_lens=ref.lengths)
    assert torch.equal(sentence_bleu(hyp, ref), expected)
    assert torch.equal(bleu_stats(hyp, ref), bleu_stats(hyp.ids, ref, hyp_lens=hyp.lengths))


def test_padded_with_lengths_too_is_an_error() -> None:
    hyp, ref = pad_ragged(HYPS), pad_ragged_refs(REFS)
    with pytest.raises(ValueError, match="hyp_lens=None"):
        sentence_bleu(hyp, ref, hyp_lens=hyp.lengths)
    with pytest.raises(ValueError, match="ref_lens=None"):
        bleu_stats(hyp, ref, ref_lens=ref.lengths)


def test_config_resolves_aliases_and_defaults() -> None:
    assert BleuConfig(compat="nltk", smooth_method="exp").method == "method3"
    assert BleuConfig(compat="nltk", smooth_method="method4").smoothing == 5.0
    assert BleuConfig(smooth_method="floor").smoothing == 0.1
    assert BleuConfig(smooth_method="exp").smoothing == 0.0
    assert BleuConfig(compat="nltk", weights=[1, 0, 0, 0]).weights == (1.0, 0.0, 0.0, 0.0)
    assert BleuConfig(compat="nltk", smooth_method="method7").stats_order == 5
    assert BleuConfig() == BleuConfig(max_ngram_order=4) and hash(BleuConfig()) is not None
    with pytest.raises(dataclasses.FrozenInstanceError):
        BleuConfig().compat = "nltk"  # type: ignore[misc]


TYPE_ERRORS = {
    "max_ngram_order float": ({"max_ngram_order": 2.5}, "max_ngram_order"),
    "max_ngram_order bool": ({"max_ngram_order": True}, "max_ngram_order"),
    "weights str": ({"compat": "nltk", "weights": "0.25"}, "weights"),
    "weights entry": ({"compat": "nltk", "weights": [0.5, "x", 0.2, 0.1]}, "weights"),
    "smooth_method": ({"smooth_method": 3}, "smooth_method"),
    "smooth_value": ({"smooth_method": "floor", "smooth_value": "0.1"}, "smooth_value"),
    "effective_order": ({"effective_order": "yes"}, "effective_order"),
    "auto_reweigh": ({"compat": "nltk", "auto_reweigh": 1}, "auto_reweigh"),
    "dtype half": ({"dtype": torch.float16}, "dtype"),
    "dtype int": ({"dtype": torch.int64}, "dtype"),
}


@pytest.mark.parametrize(("options", "match"), TYPE_ERRORS.values(), ids=TYPE_ERRORS)
def test_wrong_option_types_are_type_errors(options: dict[str, Any], match: str) -> None:
    with pytest.raises(TypeError, match=match):
        BleuConfig(**options)


VALUE_ERRORS = {
    "compat": ({"compat": "moses"}, "compat"),
    "order": ({"max_ngram_order": 0}, "max_ngram_order"),
    "nan smooth_value": ({"smooth_method": "floor", "smooth_value": float("nan")}, "smooth_value"),
    "inf weight": ({"compat": "nltk", "weights": [1, 1, 1, float("inf")]}, "weights"),
    "nltk method under sacrebleu": ({"smooth_method": "method4"}, "compat='nltk'"),
    "effective_order under nltk": ({"compat": "nltk", "effective_order": True}, "effective_order"),
    # Issue 16 item 9: NLTK raises ZeroDivisionError for k = 0; we refuse it up front.
    "method4 k=0": ({"compat": "nltk", "smooth_method": "method4", "smooth_value": 0}, "> 0"),
    "method7 k<0": ({"compat": "nltk", "smooth_method": "method7", "smooth_value": -1}, "> 0"),
}


@pytest.mark.parametrize(("options", "match"), VALUE_ERRORS.values(), ids=VALUE_ERRORS)
def test_wrong_option_values_are_value_errors(options: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        BleuConfig(**options)


def test_config_and_keywords_together_is_an_error() -> None:
    hyp = torch.tensor([[5, 6, 7, 8]])
    with pytest.raises(ValueError, match="smooth_method='floor'"):
        sentence_bleu(hyp, hyp, config=BleuConfig(), smooth_method="floor")
    with pytest.raises(ValueError, match="compat"):
        bleu_stats(hyp, hyp, config=BleuConfig(), compat="nltk")
    with pytest.raises(TypeError, match="config"):
        corpus_bleu(hyp, hyp, config={"smooth_method": "floor"})  # type: ignore[arg-type]
    # Keywords equal to their defaults are no conflict.
    assert float(sentence_bleu(hyp, hyp, config=BleuConfig(), smooth_method="exp")) == 1.0


def test_nltk_method4_with_k_zero_raises_as_nltk_does() -> None:
    """Issue 16 item 9: NLTK's method4 divides by k; a zero k is an error there, not inf."""
    from nltk.translate.bleu_score import SmoothingFunction
    from nltk.translate.bleu_score import sentence_bleu as nltk_sentence_bleu

    with pytest.raises(ZeroDivisionError):
        nltk_sentence_bleu(
            [[1, 2, 3, 4]], [1, 2, 5, 6], smoothing_function=SmoothingFunction(k=0).method4
        )
    hyp, ref = torch.tensor([[1, 2, 5, 6]]), torch.tensor([[1, 2, 3, 4]])
    with pytest.raises(ValueError, match="smooth_value"):
        sentence_bleu(hyp, ref, compat="nltk", smooth_method="method4", smooth_value=0)
