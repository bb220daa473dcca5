"""Property-based parity of tensortext's BLEU against sacrebleu and NLTK.

Every test draws a logical batch (plain lists, scored by the reference library) and a tensor
encoding of it (explicit lengths with junk past them, or pad_id padding on the right, on the left
or scattered inside), and checks tensortext against the reference row by row.

Tolerances (see ``oracles.bleu.ATOL``): float32 1e-6 absolute, float64 1e-12 absolute, rtol=0; the
integer statistics must match exactly.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.bleu import (
    ATOL,
    NLTK_ALIASES,
    NLTK_METHODS,
    SACREBLEU_METHODS,
    assert_scores_close,
    assert_stats_equal,
    pack_hyps,
    pack_refs,
    ref_corpus,
    ref_from_stats,
    ref_sentence,
    ref_stats,
)
from strategies import (
    MAX_EXAMPLES,
    SETTINGS,
    Case,
    any_options,
    cases,
    dense_cases,
    devices,
    dtypes,
    encodings,
    logical_batches,
    nltk_options,
    orders,
    sacrebleu_options,
)

from tensortext import bleu_stats, corpus_bleu, sentence_bleu
from tensortext._checks import MAX_NGRAM_ORDER

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))


def _is_method6(opts: dict[str, Any]) -> bool:
    return (
        opts["compat"] == "nltk"
        and NLTK_ALIASES.get(opts["smooth_method"], opts["smooth_method"]) == "method6"
    )


def _label(what: str, case: Case, opts: dict[str, Any], dtype: torch.dtype) -> str:
    return f"{what} [{case.encoding}] opts={opts} dtype={dtype}"


def _check_against_reference(
    score_fn: Any,
    expected: Any,
    shape: tuple[int, ...],
    case: Case,
    opts: dict[str, Any],
    dtype: torch.dtype,
) -> torch.Tensor:
    """``score_fn`` (sentence_bleu or corpus_bleu) vs the reference value(s).  Where NLTK's
    method6 asserts, the reference is NaN: then validate=True must raise ValueError and
    validate=False must give NaN exactly there."""
    label = _label(score_fn.__name__, case, opts, dtype)
    expected_values = expected if isinstance(expected, list) else [expected]
    if any(math.isnan(x) for x in expected_values):
        assert _is_method6(opts)
        with pytest.raises(ValueError):
            score_fn(**case.kwargs, **opts, dtype=dtype)
        ours = score_fn(**case.kwargs, **opts, dtype=dtype, validate=False)
    else:
        ours = score_fn(**case.kwargs, **opts, dtype=dtype)
    assert ours.shape == shape, label
    assert ours.dtype == dtype, label
    assert ours.device == case.kwargs["hyp_ids"].device, label
    assert_scores_close(
        ours,
        expected,
        atol=ATOL[dtype],
        hyps=case.hyps,
        refs=case.refs,
        kwargs=case.kwargs,
        label=label,
    )
    return ours


def check_sentence(case: Case, opts: dict[str, Any], dtype: torch.dtype) -> torch.Tensor:
    """sentence_bleu vs the reference, row by row."""
    expected = ref_sentence(case.hyps, case.refs, **opts)
    return _check_against_reference(sentence_bleu, expected, (len(case.hyps),), case, opts, dtype)


def check_corpus(case: Case, opts: dict[str, Any], dtype: torch.dtype) -> torch.Tensor:
    """corpus_bleu vs the reference corpus score."""
    expected = ref_corpus(case.hyps, case.refs, **opts)
    return _check_against_reference(corpus_bleu, expected, (), case, opts, dtype)


# --------------------------------------------------------------------------------------------
# Sufficient statistics
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("compat", ["sacrebleu", "nltk"])
@SETTINGS
@given(case=cases(), n=orders, device=devices)
def test_stats_match_reference(compat: str, case: Case, n: int, device: str) -> None:
    case = case.to(device)
    ours = bleu_stats(**case.kwargs, max_ngram_order=n, compat=compat)
    assert ours.device == case.kwargs["hyp_ids"].device
    assert_stats_equal(
        ours,
        ref_stats(case.hyps, case.refs, compat, max_ngram_order=n),
        max_ngram_order=n,
        hyps=case.hyps,
        refs=case.refs,
        kwargs=case.kwargs,
        label=f"bleu_stats compat={compat} N={n} [{case.encoding}]",
    )


# --------------------------------------------------------------------------------------------
# Scores: every smoothing method of both compat modes, sentence and corpus
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("smooth_method", SACREBLEU_METHODS)
@SETTINGS
@given(data=st.data())
def test_sacrebleu_parity(smooth_method: str, data: st.DataObject) -> None:
    case = data.draw(cases(), label="case").to(data.draw(devices, label="device"))
    opts = data.draw(sacrebleu_options(smooth_method), label="opts")
    dtype = data.draw(dtypes, label="dtype")
    scores = check_sentence(case, opts, dtype)
    assert bool((scores >= 0).all()), scores
    if not (smooth_method == "floor" and (opts["smooth_value"] or 0) > 1):
        # sacrebleu's "floor" with a value > 1 can exceed 1 (precision value/total); else [0, 1].
        assert bool((scores <= 1).all()), scores
    check_corpus(case, opts, dtype)


@pytest.mark.parametrize("smooth_method", NLTK_METHODS)
@SETTINGS
@given(data=st.data())
def test_nltk_parity(smooth_method: str, data: st.DataObject) -> None:
    case = data.draw(cases(), label="case").to(data.draw(devices, label="device"))
    opts = data.draw(nltk_options(smooth_method), label="opts")
    dtype = data.draw(dtypes, label="dtype")
    check_sentence(case, opts, dtype)
    check_corpus(case, opts, dtype)


@pytest.mark.parametrize(("alias", "method"), sorted(NLTK_ALIASES.items()))
@FEWER
@given(data=st.data())
def test_nltk_aliases(alias: str, method: str, data: st.DataObject) -> None:
    """Under compat="nltk" the sacrebleu names are exact aliases of method0..method3."""
    case = data.draw(cases(), label="case")
    opts = data.draw(nltk_options(alias), label="opts")
    dtype = data.draw(dtypes, label="dtype")
    ours_alias = check_sentence(case, opts, dtype)
    ours_method = sentence_bleu(**case.kwargs, **{**opts, "smooth_method": method}, dtype=dtype)
    assert torch.equal(ours_alias, ours_method)
    corpus_alias = check_corpus(case, opts, dtype)
    corpus_method = corpus_bleu(**case.kwargs, **{**opts, "smooth_method": method}, dtype=dtype)
    assert torch.equal(corpus_alias, corpus_method)


@SETTINGS
@given(case=dense_cases(), opts=any_options(), dtype=dtypes)
def test_no_lengths_no_pad_id_counts_every_position(
    case: Case, opts: dict[str, Any], dtype: torch.dtype
) -> None:
    n = opts["max_ngram_order"]
    assert_stats_equal(
        bleu_stats(**case.kwargs, max_ngram_order=n, compat=opts["compat"]),
        ref_stats(case.hyps, case.refs, opts["compat"], max_ngram_order=n),
        max_ngram_order=n,
        hyps=case.hyps,
        refs=case.refs,
        kwargs=case.kwargs,
        label=f"bleu_stats [{case.encoding}]",
    )
    check_sentence(case, opts, dtype)
    check_corpus(case, opts, dtype)


# --------------------------------------------------------------------------------------------
# Padding: every encoding of the same logical batch gives the same result
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_encodings_are_equivalent(data: st.DataObject) -> None:
    """lengths vs pad_id (right / left / inner padding), junk past the lengths, int32 vs int64:
    identical statistics and bit-identical scores."""
    hyps, slots, dim = data.draw(logical_batches(), label="batch")
    a = data.draw(encodings(hyps, slots, dim), label="encoding a")
    b = data.draw(encodings(hyps, slots, dim), label="encoding b")
    opts = data.draw(any_options(), label="opts")
    dtype = data.draw(dtypes, label="dtype")
    n, compat = opts["max_ngram_order"], opts["compat"]
    sa = bleu_stats(**a.kwargs, max_ngram_order=n, compat=compat)
    sb = bleu_stats(**b.kwargs, max_ngram_order=n, compat=compat)
    assert torch.equal(sa, sb), f"[{a.encoding}] vs [{b.encoding}]\n{sa}\n{sb}"
    va = sentence_bleu(**a.kwargs, **opts, dtype=dtype, validate=False)
    vb = sentence_bleu(**b.kwargs, **opts, dtype=dtype, validate=False)
    assert torch.equal(va, vb) or torch.allclose(va, vb, rtol=0, atol=0, equal_nan=True), (
        f"[{a.encoding}] vs [{b.encoding}]\n{va}\n{vb}"
    )


# --------------------------------------------------------------------------------------------
# Algebraic properties
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(case=cases(), n=orders, compat=st.sampled_from(["sacrebleu", "nltk"]), data=st.data())
def test_stats_add_over_any_split(case: Case, n: int, compat: str, data: st.DataObject) -> None:
    b = len(case.hyps)
    k = data.draw(st.integers(0, b), label="split")
    whole = bleu_stats(**case.kwargs, max_ngram_order=n, compat=compat).sum(0)
    left = bleu_stats(**case.rows(slice(0, k)).kwargs, max_ngram_order=n, compat=compat).sum(0)
    right = bleu_stats(**case.rows(slice(k, b)).kwargs, max_ngram_order=n, compat=compat).sum(0)
    assert torch.equal(left + right, whole), f"split at {k}: {left} + {right} != {whole}"


@SETTINGS
@given(case=cases(), opts=any_options(nltk_methods=NLTK_METHODS[:5]), dtype=dtypes)
def test_corpus_is_formula_on_summed_stats(
    case: Case, opts: dict[str, Any], dtype: torch.dtype
) -> None:
    """corpus_bleu == the reference library's formula applied to the column sums of bleu_stats.
    (NLTK methods 5-7 look at the last sentence, so they are excluded here; their corpus parity
    is checked directly against nltk.corpus_bleu in test_nltk_parity.)"""
    n = opts["max_ngram_order"]
    summed = bleu_stats(**case.kwargs, max_ngram_order=n, compat=opts["compat"]).sum(0).tolist()
    expected = 0.0 if len(case.hyps) == 0 else ref_from_stats(summed, **opts)
    ours = corpus_bleu(**case.kwargs, **opts, dtype=dtype)
    assert_scores_close(
        ours,
        expected,
        atol=ATOL[dtype],
        hyps=case.hyps,
        refs=case.refs,
        kwargs=case.kwargs,
        label=f"corpus_bleu vs formula(summed stats={summed}) opts={opts}",
    )


@SETTINGS
@given(case=cases(), opts=any_options(), dtype=dtypes, data=st.data())
def test_permuting_the_batch_permutes_the_rows(
    case: Case, opts: dict[str, Any], dtype: torch.dtype, data: st.DataObject
) -> None:
    perm = data.draw(st.permutations(range(len(case.hyps))), label="perm")
    permuted = case.rows(list(perm))
    n, compat = opts["max_ngram_order"], opts["compat"]
    stats = bleu_stats(**case.kwargs, max_ngram_order=n, compat=compat)
    stats_p = bleu_stats(**permuted.kwargs, max_ngram_order=n, compat=compat)
    assert torch.equal(stats_p, stats[list(perm)])
    scores = sentence_bleu(**case.kwargs, **opts, dtype=dtype, validate=False)
    scores_p = sentence_bleu(**permuted.kwargs, **opts, dtype=dtype, validate=False)
    expected = scores[list(perm)]
    assert torch.allclose(scores_p, expected, rtol=0, atol=0, equal_nan=True), (
        f"perm={perm}\npermuted: {scores_p.tolist()}\nexpected: {expected.tolist()}"
    )
    if not _is_method6(opts) and compat == "sacrebleu":
        # Corpus statistics are order-free in sacrebleu mode (NLTK methods 4-7 depend on
        # the last sentence by design, methods 0-3 up to summation order).
        c = corpus_bleu(**case.kwargs, **opts, dtype=dtype)
        c_p = corpus_bleu(**permuted.kwargs, **opts, dtype=dtype)
        torch.testing.assert_close(c_p, c, atol=ATOL[dtype], rtol=0)


@SETTINGS
@given(
    a=logical_batches(min_rows=1, max_rows=4, ref_dim=3),
    b=logical_batches(min_rows=0, max_rows=4, ref_dim=3),
    opts=any_options(),
    dtype=dtypes,
    extra=st.integers(0, 5),
)
def test_a_row_does_not_depend_on_the_rest_of_the_batch(
    a: tuple[Any, ...], b: tuple[Any, ...], opts: dict[str, Any], dtype: torch.dtype, extra: int
) -> None:
    """Rows of batch A score the same alone, one at a time, and next to the rows of batch B in
    one wider tensor (more slots, more padding)."""
    hyps_a, slots_a, _ = a
    hyps_b, slots_b, _ = b
    n, compat = opts["max_ngram_order"], opts["compat"]
    hyps_j, slots_j = hyps_a + hyps_b, slots_a + slots_b
    alone = {}
    alone["hyp_ids"], alone["hyp_lens"] = pack_hyps(hyps_a)
    alone["ref_ids"], alone["ref_lens"] = pack_refs(slots_a)
    joint = {}
    joint["hyp_ids"], joint["hyp_lens"] = pack_hyps(
        hyps_j, width=max([0, *(len(h) for h in hyps_j)]) + extra
    )
    joint["ref_ids"], joint["ref_lens"] = pack_refs(
        slots_j,
        num_slots=max([1, *(len(r) for r in slots_j)]) + extra % 2,
        width=max([0, *(len(s) for r in slots_j for s in r)]) + extra,
    )
    k = len(hyps_a)
    s_alone = bleu_stats(**alone, max_ngram_order=n, compat=compat)
    s_joint = bleu_stats(**joint, max_ngram_order=n, compat=compat)
    assert torch.equal(s_alone, s_joint[:k])
    v_alone = sentence_bleu(**alone, **opts, dtype=dtype, validate=False)
    v_joint = sentence_bleu(**joint, **opts, dtype=dtype, validate=False)
    assert torch.allclose(v_alone, v_joint[:k], rtol=0, atol=0, equal_nan=True), (
        f"alone: {v_alone.tolist()}\njoint: {v_joint[:k].tolist()}"
    )
    for i in range(k):
        one = {key: t[i : i + 1] for key, t in alone.items()}
        v_one = sentence_bleu(**one, **opts, dtype=dtype, validate=False)
        assert torch.allclose(v_one, v_alone[i : i + 1], rtol=0, atol=0, equal_nan=True), (
            f"row {i}: alone-in-batch {v_alone[i].item()} vs single {v_one.item()}"
        )


# --------------------------------------------------------------------------------------------
# A larger random batch (more rows, slots and tokens than the hypothesis strategies draw)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(
    "opts",
    [
        pytest.param({"compat": "sacrebleu", "smooth_method": "exp"}, id="sacrebleu-exp"),
        pytest.param(
            {"compat": "sacrebleu", "smooth_method": "floor", "effective_order": True},
            id="sacrebleu-floor-eff",
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method3", "max_ngram_order": 5},
            id="nltk-method3-N5",
        ),
        pytest.param({"compat": "nltk", "smooth_method": "method7"}, id="nltk-method7"),
    ],
)
def test_random_large_batch(seed: int, opts: dict[str, Any]) -> None:
    import random

    from oracles.bleu import pad_with_id

    rng = random.Random(seed)
    vocab = [rng.randrange(2**40) for _ in range(12)] if seed == 2 else list(range(12))
    b, r = 64, 4
    hyps, slots = [], []
    for _ in range(b):
        hyp = [rng.choice(vocab) for _ in range(rng.randrange(0, 41))]
        row = []
        for _ in range(r):
            if rng.random() < 0.25:
                row.append([])
            else:
                ref = list(hyp[rng.randrange(0, len(hyp) + 1) :]) + [
                    rng.choice(vocab) for _ in range(rng.randrange(0, 8))
                ]
                for _ in range(rng.randrange(0, 4)):
                    if ref:
                        ref[rng.randrange(len(ref))] = rng.choice(vocab)
                row.append(ref)
        hyps.append(hyp)
        slots.append(row)
    case = Case(hyps, slots, {}, f"random seed={seed}")
    if seed == 1:  # pad_id encoding, scattered pads
        flat = [s for row in slots for s in row]
        case.kwargs = {
            "hyp_ids": pad_with_id(hyps, pad_id=-1, width=44, layout="inner", rng=rng),
            "ref_ids": pad_with_id(flat, pad_id=-1, width=50, layout="inner", rng=rng).reshape(
                b, r, 50
            ),
            "pad_id": -1,
        }
    else:
        case.kwargs["hyp_ids"], case.kwargs["hyp_lens"] = pack_hyps(hyps, width=45)
        case.kwargs["ref_ids"], case.kwargs["ref_lens"] = pack_refs(slots, width=50)
    n = opts.get("max_ngram_order", 4)
    assert_stats_equal(
        bleu_stats(**case.kwargs, max_ngram_order=n, compat=opts["compat"]),
        ref_stats(hyps, case.refs, opts["compat"], max_ngram_order=n),
        max_ngram_order=n,
        hyps=hyps,
        refs=case.refs,
        kwargs=case.kwargs,
        label=f"bleu_stats [{case.encoding}] {opts}",
    )
    for dtype in (torch.float32, torch.float64):
        check_sentence(case, opts, dtype)
        check_corpus(case, opts, dtype)


def test_orders_above_the_longest_sequence_cost_nothing(monkeypatch):
    """``max_ngram_order=5000`` took 55 s on a 64 x 128 batch. Orders above the padded width
    have no n-grams: no counting for them (up to the largest order taken, MAX_NGRAM_ORDER), and
    the same scores as the references."""
    import tensortext.bleu.stats as stats_module
    import tensortext.ngrams as ngrams_module

    calls = {"count_ngrams": 0, "compact_ids": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        stats_module, "count_ngrams", counted("count_ngrams", stats_module.count_ngrams)
    )
    monkeypatch.setattr(
        ngrams_module, "compact_ids", counted("compact_ids", ngrams_module.compact_ids)
    )
    hyps = [[1, 2, 3, 4, 5], [1, 2, 3], [4, 4, 4, 4, 4]]
    refs = [[[1, 2, 3, 4, 5, 6]], [[1, 2, 3]], [[4, 4, 4]]]
    hyp_ids, hyp_lens = pack_hyps(hyps)
    ref_ids, ref_lens = pack_refs(refs)
    width = max(hyp_ids.shape[1], ref_ids.shape[2])
    order = MAX_NGRAM_ORDER
    stats = bleu_stats(
        hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, max_ngram_order=order
    )
    assert calls["count_ngrams"] <= width and calls["compact_ids"] <= width + 1
    assert stats.shape == (3, 2 + 2 * order)
    expected_stats = ref_stats(hyps, refs, "sacrebleu", max_ngram_order=order)
    assert_stats_equal(stats, expected_stats, max_ngram_order=order)
    for compat in ("sacrebleu", "nltk"):
        ours = sentence_bleu(
            hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, max_ngram_order=12,
            compat=compat, smooth_method="floor", dtype=torch.float64,
        )  # fmt: skip
        expected = ref_sentence(hyps, refs, compat, max_ngram_order=12, smooth_method="floor")
        assert_scores_close(ours, expected, atol=ATOL[torch.float64])
