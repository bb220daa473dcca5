"""``BleuConfig``: the eight scoring options validated once, and the two ways to pass them
(``config=`` or keywords) giving the same scores; ``Padded`` batches in place of tensors."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import MAX_EXAMPLES

from tensortext import BLEU, bleu_from_stats, bleu_stats, corpus_bleu, sentence_bleu
from tensortext._checks import MAX_NGRAM_ORDER
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


@pytest.mark.parametrize(
    "order", [MAX_NGRAM_ORDER + 1, 10**7, 10**5000], ids=["max+1", "1e7", "5000-digits"]
)
def test_orders_above_the_maximum_are_refused_before_any_work(monkeypatch, order):
    """``max_ngram_order=10**7`` made 8 short sentences take 4 GB (statistics hold ``2 + 2N``
    numbers per sentence). Orders above MAX_NGRAM_ORDER are refused by the config, before any
    statistics exist, with a short message (a 5,000-digit order is not printed)."""
    import tensortext.bleu.functional as functional

    def no_work(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("statistics were computed for a refused order")

    monkeypatch.setattr(functional, "compute_stats", no_work)
    hyp = torch.tensor([[5, 6, 7, 8]] * 8)
    calls = [
        lambda: sentence_bleu(hyp, hyp, max_ngram_order=order),
        lambda: corpus_bleu(hyp, hyp, max_ngram_order=order, compat="nltk"),
        lambda: bleu_stats(hyp, hyp, max_ngram_order=order),
        lambda: BLEU(max_ngram_order=order),
        lambda: bleu_from_stats(torch.zeros(10, dtype=torch.long), max_ngram_order=order),
    ]
    for call in calls:
        with pytest.raises(
            ValueError, match=f"max_ngram_order must be <= {MAX_NGRAM_ORDER}"
        ) as info:
            call()
        assert len(str(info.value)) < 200, str(info.value)[:300]


def test_the_largest_order_taken_still_equals_sacrebleu():
    """At MAX_NGRAM_ORDER itself the score is sacrebleu's (orders above the width cost nothing)."""
    from sacrebleu.metrics import BLEU as SacreBLEU

    hyp = [[5, 6, 7, 8, 9], [5, 6, 7]]
    ref = [[5, 6, 7, 8, 9], [5, 6, 9, 7]]
    ours = corpus_bleu(
        pad_ragged(hyp), pad_ragged(ref), max_ngram_order=MAX_NGRAM_ORDER,
        smooth_method="add-k", dtype=torch.float64,
    )  # fmt: skip
    expected = SacreBLEU(
        tokenize="none", max_ngram_order=MAX_NGRAM_ORDER, smooth_method="add-k"
    ).corpus_score([" ".join(map(str, h)) for h in hyp], [[" ".join(map(str, r)) for r in ref]])
    # float64 arithmetic over 1000 orders, against sacrebleu's Python floats.
    torch.testing.assert_close(float(ours) * 100, expected.score, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("smooth_method", ["exp", "floor", "add-k", "none"])
def test_bleu_scores_carry_sacrebleus_fields(smooth_method):
    """``bleu_scores`` gives what ``sacrebleu.metrics.BLEU.corpus_score`` gives: score, counts,
    totals, smoothed precisions, BP and lengths, and its ``format()`` line."""
    from sacrebleu.metrics import BLEU as SacreBLEU

    from tensortext.bleu import bleu_scores

    hyps = [[5, 6, 7, 8, 9], [5, 6], [], [7, 7, 7]]
    refs = [[5, 6, 7, 8], [5, 6, 9], [1], [7, 7, 7, 7]]
    config = BleuConfig(smooth_method=smooth_method, dtype=torch.float64)
    stats = bleu_stats(pad_ragged(hyps), pad_ragged(refs), config=config)
    [ours] = bleu_scores(stats.sum(0), config)
    theirs = SacreBLEU(tokenize="none", smooth_method=smooth_method).corpus_score(
        [" ".join(map(str, h)) for h in hyps], [[" ".join(map(str, r)) for r in refs]]
    )
    # float64 arithmetic in another order than sacrebleu's Python floats.
    torch.testing.assert_close(ours.score, theirs.score, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ours.precisions, tuple(theirs.precisions), rtol=1e-12, atol=0.0)
    torch.testing.assert_close(ours.bp, theirs.bp, rtol=1e-12, atol=0.0)
    assert (ours.sys_len, ours.ref_len) == (theirs.sys_len, theirs.ref_len)
    # sacrebleu's add-k adds k to its counts and totals of orders 2..N; so do ours.
    assert (ours.counts, ours.totals) == (tuple(theirs.counts), tuple(theirs.totals))
    assert str(ours) == str(theirs)
    assert ours.format(width=4) == theirs.format(width=4)
    assert ours.format(width=3, score_only=True) == theirs.format(width=3, score_only=True)
    per_sentence = bleu_scores(stats, config)
    assert [s.score for s in per_sentence] == (100 * sentence_bleu(
        pad_ragged(hyps), pad_ragged(refs), config=config)).tolist()  # fmt: skip


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(
    pairs=st.lists(
        st.tuples(st.lists(st.integers(1, 4), max_size=7), st.lists(st.integers(1, 4), max_size=7)),
        min_size=1,
        max_size=3,
    ),
    smoothing=st.sampled_from(
        [("add-k", None), ("add-k", 2), ("add-k", 0.5), ("floor", 0.1), ("exp", None)]
    ),
    effective_order=st.booleans(),
)
def test_bleu_scores_fields_equal_sacrebleus_on_random_sentences(pairs, smoothing, effective_order):
    """Every field of sacrebleu's ``sentence_score`` (add-k's in-place counts included)."""
    from sacrebleu.metrics import BLEU as SacreBLEU

    from tensortext.bleu import bleu_scores

    smooth_method, smooth_value = smoothing
    config = BleuConfig(
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        dtype=torch.float64,
    )
    reference = SacreBLEU(
        tokenize="none",
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
    )
    hyps, refs = [list(h) for h, _ in pairs], [list(r) for _, r in pairs]
    ours = bleu_scores(bleu_stats(pad_ragged(hyps), pad_ragged(refs), config=config), config)
    for hyp, ref, score in zip(hyps, refs, ours, strict=True):
        theirs = reference.sentence_score(" ".join(map(str, hyp)), [" ".join(map(str, ref))])
        assert (score.counts, score.totals) == (tuple(theirs.counts), tuple(theirs.totals))
        assert (score.sys_len, score.ref_len) == (theirs.sys_len, theirs.ref_len)
        # float64 arithmetic in another order than sacrebleu's Python floats.
        torch.testing.assert_close(score.score, theirs.score, rtol=1e-12, atol=1e-12)
        assert score.format(width=4) == theirs.format(width=4)


def test_weights_longer_than_the_maximum_order_name_the_limit():
    with pytest.raises(ValueError, match=f"at most {MAX_NGRAM_ORDER} orders are supported"):
        BleuConfig(compat="nltk", weights=[1 / 1001] * 1001)
