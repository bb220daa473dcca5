"""Named edge cases for tensortext's BLEU, each checked against sacrebleu and NLTK.

Every table entry is a small logical batch; it is packed into tensors with explicit lengths
(junk token 7 past every length, absent reference slots of length -1) and scored under every
smoothing method of both compat modes, sentence and corpus, float32 and float64.
"""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
import torch
from oracles.bleu import (
    ATOL,
    NLTK_METHODS,
    SACREBLEU_METHODS,
    assert_scores_close,
    assert_stats_equal,
    nltk_corpus,
    nltk_sentence,
    pack_hyps,
    pack_refs,
    pad_with_id,
    present_refs,
    ref_corpus,
    ref_sentence,
    ref_stats,
    sacrebleu_corpus,
    sacrebleu_sentence,
)
from strategies import DEVICES

from tensortext import bleu_stats, corpus_bleu, sentence_bleu

BIG = 2**20
NEAR62 = 2**62
I64MAX = 2**63 - 1

# --------------------------------------------------------------------------------------------
# Scoring configurations
# --------------------------------------------------------------------------------------------

CONFIGS = (
    [
        pytest.param(
            {"compat": "sacrebleu", "smooth_method": m, "effective_order": e},
            id=f"sacrebleu-{m}{'-eff' if e else ''}",
        )
        for m in SACREBLEU_METHODS
        for e in (False, True)
    ]
    + [pytest.param({"compat": "nltk", "smooth_method": m}, id=f"nltk-{m}") for m in NLTK_METHODS]
    + [
        pytest.param(
            {"compat": "nltk", "smooth_method": "method3", "auto_reweigh": True},
            id="nltk-method3-reweigh",
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method0", "weights": (0.1, 0.0, 0.6, 0.3)},
            id="nltk-method0-weights",
        ),
    ]
)

DTYPES = [pytest.param(torch.float32, id="f32"), pytest.param(torch.float64, id="f64")]


def _is_method6(opts: dict[str, Any]) -> bool:
    return opts["compat"] == "nltk" and opts["smooth_method"] == "method6"


def check_all(
    hyps: list[list[int]],
    slots: list[list[list[int]]],
    opts: dict[str, Any],
    dtypes: torch.dtype | tuple[torch.dtype, ...] = (torch.float32, torch.float64),
    kwargs: dict[str, Any] | None = None,
    device: str = "cpu",
) -> torch.Tensor:
    """Stats, sentence and corpus scores vs the reference (computed once, compared in every
    dtype); returns our sentence scores in the last dtype."""
    dtypes = (dtypes,) if isinstance(dtypes, torch.dtype) else dtypes
    refs = present_refs(slots)
    if kwargs is None:
        kwargs = {}
        kwargs["hyp_ids"], kwargs["hyp_lens"] = pack_hyps(hyps, width=max([0, *map(len, hyps)]) + 1)
        kwargs["ref_ids"], kwargs["ref_lens"] = pack_refs(
            slots, width=max([0, *(len(s) for row in slots for s in row)]) + 1
        )
    kwargs = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kwargs.items()}
    n = opts.get("max_ngram_order", 4)
    assert_stats_equal(
        bleu_stats(**kwargs, max_ngram_order=n, compat=opts["compat"]),
        ref_stats(hyps, refs, opts["compat"], max_ngram_order=n),
        max_ngram_order=n,
        hyps=hyps,
        refs=refs,
        kwargs=kwargs,
        label=f"bleu_stats opts={opts}",
    )
    expected = ref_sentence(hyps, refs, **opts)
    expected_c = ref_corpus(hyps, refs, **opts)
    validate = not any(math.isnan(x) for x in expected)
    validate_c = not math.isnan(expected_c)
    if not (validate and validate_c):
        assert _is_method6(opts)
    for dtype in dtypes:
        label = f"opts={opts} dtype={dtype}"
        if not validate:
            with pytest.raises(ValueError):
                sentence_bleu(**kwargs, **opts, dtype=dtype)
        ours = sentence_bleu(**kwargs, **opts, dtype=dtype, validate=validate)
        assert ours.shape == (len(hyps),) and ours.dtype == dtype
        assert ours.device == kwargs["hyp_ids"].device
        assert_scores_close(
            ours,
            expected,
            atol=ATOL[dtype],
            hyps=hyps,
            refs=refs,
            kwargs=kwargs,
            label=f"sentence {label}",
        )
        if not validate_c:
            with pytest.raises(ValueError):
                corpus_bleu(**kwargs, **opts, dtype=dtype)
        ours_c = corpus_bleu(**kwargs, **opts, dtype=dtype, validate=validate_c)
        assert ours_c.shape == () and ours_c.dtype == dtype
        assert ours_c.device == kwargs["hyp_ids"].device
        assert_scores_close(
            ours_c,
            expected_c,
            atol=ATOL[dtype],
            hyps=hyps,
            refs=refs,
            kwargs=kwargs,
            label=f"corpus {label}",
        )
    return ours


# --------------------------------------------------------------------------------------------
# The table of named batches: (hyps, per-row reference slots; [] = absent slot)
# --------------------------------------------------------------------------------------------

EDGE_CASES = {
    "empty_hyp": ([[]], [[[1, 2, 3]]]),
    "empty_hyp_and_no_ref": ([[]], [[[]]]),
    "empty_hyp_among_others": ([[1, 2, 3, 4], [], [1, 2]], [[[1, 2, 3, 4]], [[1, 2]], [[1, 2]]]),
    "one_token_match": ([[5]], [[[5]]]),
    "one_token_mismatch": ([[5]], [[[6]]]),
    "one_token_vs_long_ref": ([[5]], [[[5, 6, 7, 8, 9]]]),
    "hyp_shorter_than_N": ([[1, 2]], [[[1, 2, 3, 4]]]),
    "hyp_len_3_exact_match": ([[1, 2, 3]], [[[1, 2, 3]]]),
    "hyp_len_3_longer_ref": ([[1, 2, 3]], [[[1, 2, 3, 4, 5, 6]]]),
    "perfect_match": ([[1, 2, 3, 4, 5, 6]], [[[1, 2, 3, 4, 5, 6]]]),
    "hyp_longer_than_ref": ([[1, 2, 3, 4, 5, 6, 7, 8]], [[[1, 2, 3, 4]]]),
    "zero_unigram_matches": ([[1, 2, 3, 4, 5]], [[[6, 7, 8, 9]]]),
    "zero_bigram_matches": ([[1, 2, 3, 4]], [[[4, 3, 2, 1]]]),
    "zero_trigram_matches": ([[1, 2, 3, 1, 2]], [[[1, 2, 9, 3, 1]]]),
    "zero_4gram_matches": ([[1, 2, 3, 4, 5, 6]], [[[1, 2, 3, 9, 4, 5, 6]]]),
    "repeated_token_clipping": ([[1, 1, 1, 1, 1, 1]], [[[1, 1, 5, 1]]]),
    "clipping_max_over_refs": ([[1, 1, 2, 2, 1, 2]], [[[1, 1, 3], [2, 2, 2], [1, 2]]]),
    "ref_len_tie_shorter_wins": ([[1, 2, 3, 4, 5]], [[[1, 2, 3, 4], [1, 2, 3, 4, 5, 6]]]),
    "ref_len_tie_reversed_slots": ([[1, 2, 3, 4, 5]], [[[1, 2, 3, 4, 5, 6], [1, 2, 3, 4]]]),
    "ref_len_tie_short_hyp": ([[1, 2, 3]], [[[1, 2], [1, 2, 3, 4]]]),
    "missing_slot_first": ([[1, 2, 3, 4]], [[[], [1, 2, 3], [4, 1, 2, 3, 4, 5]]]),
    "missing_slot_middle": ([[1, 2, 3, 4]], [[[1, 2, 3], [], [4, 1, 2, 3, 4, 5]]]),
    "missing_slot_last": ([[1, 2, 3, 4], [2, 3]], [[[1, 2, 3], [2, 3, 4]], [[2, 3], []]]),
    "all_slots_missing": ([[1, 2, 3]], [[[], [], []]]),
    "all_slots_missing_among_others": (
        [[1, 2, 3], [1, 2, 3, 4, 5], [4, 5]],
        [[[], [], []], [[1, 2, 3, 4], [], [5]], [[], [4, 5], []]],
    ),
    "absent_slot_closer_in_length": ([[1, 2]], [[[], [1, 2, 3, 4, 5, 6, 7, 8]]]),
    "id_zero_is_a_token": ([[0, 0, 1, 0]], [[[0, 1, 0, 0]]]),
    "large_ids": ([[BIG, BIG + 1, 2**40, BIG]], [[[BIG, BIG + 1, 2**40], [2**40, BIG]]]),
    "ids_near_2_62": (
        [[NEAR62, NEAR62 + 1, NEAR62 - 1, NEAR62]],
        [[[NEAR62 - 1, NEAR62, NEAR62 + 1, NEAR62], [NEAR62, NEAR62 + 1]]],
    ),
    "int64_max": ([[I64MAX, I64MAX - 1, I64MAX]], [[[I64MAX - 1, I64MAX, I64MAX]]]),
    "ids_differing_only_above_bit_32": ([[1, 1 + 2**32, 1]], [[[1 + 2**32, 1 + 2**33, 1]]]),
    "ids_differing_only_above_bit_40": ([[5, 5 + 2**40, 5 + 2**41]], [[[5 + 2**40, 5, 5 + 2**41]]]),
    "mixed_small_and_huge_ids": ([[0, NEAR62, 3, I64MAX]], [[[0, NEAR62, 3], [I64MAX, 0]]]),
    "variable_refs_per_row": (
        [[1, 2, 3, 4], [4, 3, 2, 1, 4], [2, 2, 2]],
        [[[1, 2, 3, 4]], [[4, 3, 2], [1, 4, 3], [3, 2, 1, 4]], [[2, 2], [2]]],
    ),
}


@pytest.mark.parametrize("opts", CONFIGS)
@pytest.mark.parametrize(("hyps", "slots"), list(EDGE_CASES.values()), ids=list(EDGE_CASES))
def test_edge_case_table(
    hyps: list[list[int]], slots: list[list[list[int]]], opts: dict[str, Any], device: str
) -> None:
    """float32 and float64, sentence and corpus, plus the integer statistics."""
    check_all(hyps, slots, opts, device=device)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opts", CONFIGS)
@pytest.mark.parametrize(
    ("hyps", "slots"),
    [
        EDGE_CASES["zero_unigram_matches"],
        EDGE_CASES["empty_hyp"],
        EDGE_CASES["empty_hyp_and_no_ref"],
        EDGE_CASES["one_token_mismatch"],
        EDGE_CASES["all_slots_missing"],
        ([[NEAR62, 3]], [[[NEAR62 + 1, 4]]]),
    ],
    ids=["disjoint", "empty_hyp", "empty_all", "one_token", "no_refs", "near_2_62"],
)
def test_zero_unigram_matches_is_exactly_zero(
    hyps: list[list[int]], slots: list[list[list[int]]], opts: dict[str, Any], dtype: torch.dtype
) -> None:
    """No unigram match -> exactly 0.0 in every mode, sentence and corpus (both references
    return 0 before any smoothing; NLTK method6 returns 0 before its assertion)."""
    ours = check_all(hyps, slots, opts, dtype)
    assert ours.tolist() == [0.0] * len(hyps)
    kwargs = {}
    kwargs["hyp_ids"], kwargs["hyp_lens"] = pack_hyps(hyps)
    kwargs["ref_ids"], kwargs["ref_lens"] = pack_refs(slots)
    assert corpus_bleu(**kwargs, **opts, dtype=dtype).item() == 0.0


@pytest.mark.parametrize("compat", ["sacrebleu", "nltk"])
@pytest.mark.parametrize(
    ("hyp", "ref_slots", "expected_ref_len"),
    [
        ([1, 2, 3, 4, 5], [[1, 2, 3, 4], [1, 2, 3, 4, 5, 6]], 4),
        ([1, 2, 3, 4, 5], [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4]], 4),
        ([1, 2, 3], [[1] * 7, [1], [1, 2, 3, 4, 5]], 1),
        ([1, 2, 3], [[], [1] * 5, [1]], 1),
        ([1, 2, 3], [[1] * 4, [1, 2]], 2),
        ([], [[1], [1, 2]], 1),
        ([1, 2], [[], [1, 2, 3, 4, 5, 6, 7, 8]], 8),
        ([1, 2], [[], []], 0),
    ],
    ids=[
        "4_vs_6_shorter_wins",
        "6_vs_4_order_irrelevant",
        "1_vs_5_around_3",
        "absent_slot_ignored_in_tie",
        "4_vs_2",
        "empty_hyp_closest_is_shortest",
        "absent_slot_not_closest",
        "no_refs_means_len_0",
    ],
)
def test_closest_ref_len(
    compat: str, hyp: list[int], ref_slots: list[list[int]], expected_ref_len: int
) -> None:
    kwargs = {}
    kwargs["hyp_ids"], kwargs["hyp_lens"] = pack_hyps([hyp])
    kwargs["ref_ids"], kwargs["ref_lens"] = pack_refs([ref_slots])
    stats = bleu_stats(**kwargs, compat=compat)
    assert stats[0, 1].item() == expected_ref_len
    assert stats[0, 0].item() == len(hyp)
    assert ref_stats([hyp], present_refs([ref_slots]), compat)[0][1] == expected_ref_len


# --------------------------------------------------------------------------------------------
# Padding, pad_id and lengths
# --------------------------------------------------------------------------------------------

PAD_LAYOUT_OPTS = [
    pytest.param({"compat": "sacrebleu", "smooth_method": "exp"}, id="sacrebleu-exp"),
    pytest.param(
        {"compat": "sacrebleu", "smooth_method": "floor", "effective_order": True},
        id="sacrebleu-floor-eff",
    ),
    pytest.param({"compat": "nltk", "smooth_method": "method3"}, id="nltk-method3"),
    pytest.param({"compat": "nltk", "smooth_method": "method7"}, id="nltk-method7"),
]

PAD_HYPS = [[1, 2, 3, 4, 0], [0], [], [3, 3, 1, 2, 3, 4]]
PAD_SLOTS = [[[1, 2, 3, 4], [0, 1]], [[], [0]], [[1], []], [[], []]]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
@pytest.mark.parametrize("layout", ["right", "left", "inner"])
@pytest.mark.parametrize("pad_id", [-1, 9, 2**40], ids=["pad_-1", "pad_9", "pad_2_40"])
def test_pad_id_layouts(layout: str, pad_id: int, opts: dict[str, Any], dtype: torch.dtype) -> None:
    """Every token equal to pad_id is removed wherever it sits; ID 0 stays a real token."""
    rng = random.Random(1234)
    r = 2
    flat = [row[j] for row in PAD_SLOTS for j in range(r)]
    kwargs = {
        "hyp_ids": pad_with_id(PAD_HYPS, pad_id=pad_id, width=9, layout=layout, rng=rng),
        "ref_ids": pad_with_id(flat, pad_id=pad_id, width=7, layout=layout, rng=rng).reshape(
            4, r, 7
        ),
        "pad_id": pad_id,
    }
    check_all(PAD_HYPS, PAD_SLOTS, opts, dtype, kwargs=kwargs)


@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_all_padding_rows(opts: dict[str, Any]) -> None:
    """Rows that are nothing but padding: empty hypothesis against one empty reference."""
    kwargs = {
        "hyp_ids": torch.tensor([[5, 5, 5], [1, 2, 5]]),
        "ref_ids": torch.tensor([[[5, 5, 5, 5], [5, 5, 5, 5]], [[1, 2, 5, 5], [5, 5, 5, 5]]]),
        "pad_id": 5,
    }
    ours = check_all([[], [1, 2]], [[[], []], [[1, 2], []]], opts, torch.float64, kwargs=kwargs)
    assert ours[0].item() == 0.0
    stats = bleu_stats(**kwargs, compat=opts["compat"])
    assert stats[0, :2].tolist() == [0, 0]


@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_id_zero_with_no_pad_id_and_with_another_pad_id(opts: dict[str, Any]) -> None:
    hyps, slots = [[0, 0, 1, 0, 2]], [[[0, 1, 0, 0, 2, 0]]]
    # pad_id=None, lengths given: 0 is a token; junk 0 past the length is ignored.
    hyp_ids, hyp_lens = pack_hyps(hyps, width=8, junk=0)
    ref_ids, ref_lens = pack_refs(slots, width=8, junk=0)
    kw1 = {
        "hyp_ids": hyp_ids,
        "hyp_lens": hyp_lens,
        "ref_ids": ref_ids,
        "ref_lens": ref_lens,
        "pad_id": None,
    }
    check_all(hyps, slots, opts, torch.float64, kwargs=kw1)
    # pad_id=3, no lengths: 0 is a token, 3 is removed.
    kw2 = {
        "hyp_ids": torch.tensor([[3, 0, 0, 1, 3, 0, 2, 3]]),
        "ref_ids": torch.tensor([[0, 1, 0, 3, 0, 2, 0, 3]]),
        "pad_id": 3,
    }
    check_all(hyps, slots, opts, torch.float64, kwargs=kw2)
    # pad_id=None and no lengths: every position counts, zeros included.
    kw3 = {
        "hyp_ids": torch.tensor([[0, 0, 1, 0, 2]]),
        "ref_ids": torch.tensor([[[0, 1, 0, 0, 2, 0]]]),
    }
    check_all(hyps, slots, opts, torch.float64, kwargs=kw3)


@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_lengths_take_priority_over_pad_id(opts: dict[str, Any]) -> None:
    """With lengths given for a tensor, a token equal to pad_id inside the length is real, while
    the other tensor (no lengths) still has its pad_id tokens removed."""
    pad = 4
    hyps, slots = [[4, 1, 4, 2]], [[[1, 4, 2, 4, 4]]]
    kw = {
        "hyp_ids": torch.tensor([[4, 1, 4, 2, 9, 9]]),
        "hyp_lens": torch.tensor([4]),
        "ref_ids": torch.tensor([[1, 4, 2, 4, 4, 7, 4]]),
        "ref_lens": torch.tensor([5]),
        "pad_id": pad,
    }
    check_all(hyps, slots, opts, torch.float64, kwargs=kw)
    # Refs without lengths: their 4s are removed.
    kw_mixed = {**kw, "ref_ids": torch.tensor([[1, 4, 2, 4, 4]]), "ref_lens": None}
    check_all(hyps, [[[1, 2]]], opts, torch.float64, kwargs=kw_mixed)
    # Hyp without lengths: its 4s are removed.
    kw_mixed2 = {**kw, "hyp_ids": torch.tensor([[4, 1, 4, 2]]), "hyp_lens": None}
    check_all([[1, 2]], slots, opts, torch.float64, kwargs=kw_mixed2)


@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_several_pad_ids_seq2seq_trainer_style(opts: dict[str, Any]) -> None:
    """Issue 16 item 8: predictions padded with ``pad_token_id`` (0 here), labels with -100, as
    a ``Seq2SeqTrainer``'s ``compute_metrics`` gets them. ``pad_id=-100`` alone scored 0.615."""
    hyps, slots = [[5, 6, 7, 8, 9], [5, 6, 7]], [[[5, 6, 7, 8, 9]], [[5, 6, 7]]]
    kw = {
        "hyp_ids": torch.tensor([[5, 6, 7, 8, 9, 0, 0], [5, 6, 7, 0, 0, 0, 0]]),
        "ref_ids": torch.tensor([[5, 6, 7, 8, 9, -100], [5, 6, 7, -100, -100, -100]]),
        "pad_id": (0, -100),
    }
    ours = check_all(hyps, slots, opts, torch.float64, kwargs=kw)
    if opts["compat"] == "sacrebleu":
        assert float(corpus_bleu(**kw)) == 1.0
    assert (
        ours.tolist()
        == sentence_bleu(**{**kw, "pad_id": [0, -100]}, **opts, dtype=torch.float64).tolist()
    )
    # One int keeps working; the tuple's order does not matter.
    assert bleu_stats(**{**kw, "pad_id": (-100, 0)}).tolist() == bleu_stats(**kw).tolist()
    assert bleu_stats(kw["hyp_ids"], kw["hyp_ids"], pad_id=0)[:, :2].tolist() == [[5, 5], [3, 3]]


@pytest.mark.parametrize(
    ("pad_id", "error", "match"),
    [
        ((), ValueError, "non-empty"),
        ((0, 0.5), TypeError, "pad_id"),
        ((0, True), TypeError, "pad_id"),
        (1000, ValueError, "int8"),  # cannot occur in int8 IDs: a raw torch error before
        ((0, -100), ValueError, "uint8"),
    ],
)
def test_bad_pad_ids_are_named(pad_id: Any, error: type, match: str) -> None:
    """Issue 16 items 8 and 21: a ``pad_id`` outside the IDs' dtype was a raw torch error."""
    dtype = torch.uint8 if match == "uint8" else torch.int8
    ids = torch.tensor([[5, 6, 7]], dtype=dtype)
    with pytest.raises(error, match=match):
        sentence_bleu(ids, ids, pad_id=pad_id)


@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_negative_junk_past_lengths_is_ignored(opts: dict[str, Any]) -> None:
    hyps, slots = [[1, 2, 3], [2]], [[[1, 2], [3, 2, 1]], [[2, 2], []]]
    hyp_ids, hyp_lens = pack_hyps(hyps, width=5, junk=-1)
    ref_ids, ref_lens = pack_refs(slots, width=4, junk=-100)
    kw = {"hyp_ids": hyp_ids, "hyp_lens": hyp_lens, "ref_ids": ref_ids, "ref_lens": ref_lens}
    check_all(hyps, slots, opts, torch.float64, kwargs=kw)


@pytest.mark.parametrize(
    "id_dtype", [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64], ids=str
)
@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_integer_id_dtypes(id_dtype: torch.dtype, opts: dict[str, Any]) -> None:
    hyps, slots = (
        [[1, 2, 3, 4, 5], [0, 1], [100, 101, 100]],
        [[[1, 2, 3, 5]], [[0, 1, 1]], [[101, 100]]],
    )
    hyp_ids, hyp_lens = pack_hyps(hyps, width=6, dtype=id_dtype)
    ref_ids, ref_lens = pack_refs(slots, width=5, dtype=id_dtype)
    kw = {
        "hyp_ids": hyp_ids,
        "hyp_lens": hyp_lens.to(torch.int32),
        "ref_ids": ref_ids,
        "ref_lens": ref_lens,
    }
    check_all(hyps, slots, opts, torch.float32, kwargs=kw)


@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_hyp_and_ref_with_different_integer_dtypes(opts: dict[str, Any]) -> None:
    hyps, slots = [[1, 2, 3, 4, 5]], [[[1, 2, 3, 5]]]
    kw = {
        "hyp_ids": torch.tensor([[1, 2, 3, 4, 5]], dtype=torch.int32),
        "ref_ids": torch.tensor([[1, 2, 3, 5]]),
    }
    check_all(hyps, slots, opts, torch.float64, kwargs=kw)


@pytest.mark.parametrize("opts", PAD_LAYOUT_OPTS)
def test_zero_width_tensors(opts: dict[str, Any]) -> None:
    """L = 0 and/or L' = 0 (every row empty)."""
    kw = {
        "hyp_ids": torch.zeros(2, 0, dtype=torch.long),
        "ref_ids": torch.zeros(2, 0, dtype=torch.long),
    }
    check_all([[], []], [[[]], [[]]], opts, torch.float64, kwargs=kw)
    kw = {
        "hyp_ids": torch.tensor([[1, 2], [3, 4]]),
        "ref_ids": torch.zeros(2, 2, 0, dtype=torch.long),
    }
    check_all([[1, 2], [3, 4]], [[[], []], [[], []]], opts, torch.float64, kwargs=kw)
    kw = {"hyp_ids": torch.zeros(2, 0, dtype=torch.long), "ref_ids": torch.tensor([[1, 2], [3, 4]])}
    check_all([[], []], [[[1, 2]], [[3, 4]]], opts, torch.float64, kwargs=kw)


@pytest.mark.parametrize("n", range(1, 7))
@pytest.mark.parametrize("compat", ["sacrebleu", "nltk"])
@pytest.mark.parametrize("width", [1, 2, 3])
def test_max_ngram_order_longer_than_every_sequence(n: int, compat: str, width: int) -> None:
    """N may exceed the tensor width: higher orders simply have no n-grams."""
    hyps = [[5] * width, [6] + [5] * (width - 1)]
    slots = [[[5] * width], [[6] * width]]
    kw = {"hyp_ids": torch.tensor(hyps), "ref_ids": torch.tensor([s[0] for s in slots])}
    opts = {
        "compat": compat,
        "max_ngram_order": n,
        "smooth_method": "exp" if compat == "sacrebleu" else "method5",
    }
    check_all(hyps, slots, opts, torch.float64, kwargs=kw)


# --------------------------------------------------------------------------------------------
# Sizes: B = 0 and a huge row
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("opts", CONFIGS)
@pytest.mark.parametrize("width", [0, 3])
@pytest.mark.parametrize("ref_dim", [2, 3])
def test_empty_batch(opts: dict[str, Any], dtype: torch.dtype, width: int, ref_dim: int) -> None:
    hyp_ids = torch.zeros(0, width, dtype=torch.long)
    ref_ids = torch.zeros((0, width) if ref_dim == 2 else (0, 2, width), dtype=torch.long)
    n = opts.get("max_ngram_order", 4)
    stats = bleu_stats(hyp_ids, ref_ids, compat=opts["compat"])
    assert stats.shape == (0, 2 + 2 * n) and stats.dtype == torch.int64
    s = sentence_bleu(hyp_ids, ref_ids, **opts, dtype=dtype)
    assert s.shape == (0,) and s.dtype == dtype
    c = corpus_bleu(hyp_ids, ref_ids, **opts, dtype=dtype)
    assert c.shape == () and c.dtype == dtype and c.item() == 0.0
    # With (empty) lengths too.
    lens = torch.zeros(0, dtype=torch.long)
    ref_lens = lens if ref_dim == 2 else torch.zeros(0, 2, dtype=torch.long)
    c = corpus_bleu(hyp_ids, ref_ids, hyp_lens=lens, ref_lens=ref_lens, **opts, dtype=dtype)
    assert c.item() == 0.0


@pytest.fixture(scope="module")
def huge_row() -> tuple[list[int], list[int]]:
    rng = random.Random(50_000)
    hyp = [rng.randrange(8) for _ in range(50_000)]
    ref = list(hyp)
    for _ in range(5_000):  # ~10% substitutions keep 4-gram matches frequent but imperfect
        ref[rng.randrange(len(ref))] = rng.randrange(8)
    return hyp, ref[:49_000]


@pytest.mark.parametrize(
    "opts",
    [
        pytest.param({"compat": "sacrebleu", "smooth_method": "exp"}, id="sacrebleu-exp"),
        pytest.param({"compat": "nltk", "smooth_method": "method7"}, id="nltk-method7"),
    ],
)
def test_huge_row(huge_row: tuple[list[int], list[int]], opts: dict[str, Any]) -> None:
    """1 x 50_000 tokens (IDs offset by 2**40).  float64 only, to keep the suite fast: the
    float32 path is the same code and is covered by every other test."""
    hyp, ref = huge_row
    big = 2**40
    kw = {"hyp_ids": torch.tensor([hyp]) + big, "ref_ids": torch.tensor([[ref]]) + big}
    hyps, slots = [[t + big for t in hyp]], [[[t + big for t in ref]]]
    check_all(hyps, slots, opts, torch.float64, kwargs=kw)


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------

OPT_CASE = ([[1, 2, 3, 4, 5, 1, 2], [2, 3], [1]], [[[1, 2, 3, 4, 1, 2]], [[2, 3, 1]], [[2]]])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "opts",
    [
        pytest.param(
            {"compat": "sacrebleu", "smooth_method": "floor", "smooth_value": 0.5},
            id="sb-floor-0.5",
        ),
        pytest.param(
            {"compat": "sacrebleu", "smooth_method": "add-k", "smooth_value": 2}, id="sb-addk-2"
        ),
        pytest.param(
            {"compat": "sacrebleu", "smooth_method": "add-k", "smooth_value": 0.5}, id="sb-addk-0.5"
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method1", "smooth_value": 0.3}, id="nltk-m1-eps"
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "floor", "smooth_value": 0.3}, id="nltk-floor-eps"
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method4", "smooth_value": 2}, id="nltk-m4-k"
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method6", "smooth_value": 1.5}, id="nltk-m6-alpha"
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method7", "smooth_value": 0.5}, id="nltk-m7-k"
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method3", "auto_reweigh": True}, id="nltk-reweigh"
        ),
        pytest.param(
            {
                "compat": "nltk",
                "smooth_method": "method3",
                "auto_reweigh": True,
                "weights": (0.25,) * 4,
            },
            id="nltk-reweigh-explicit-quarter-weights",
        ),
        pytest.param(
            {
                "compat": "nltk",
                "smooth_method": "method3",
                "auto_reweigh": True,
                "max_ngram_order": 3,
            },
            id="nltk-reweigh-N3-never-fires",
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method0", "weights": (0.5, 0.5, 0.0, 0.0)},
            id="nltk-zero-weights-on-zero-precision",
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method0", "weights": (0.97, 0.01, 0.01, 0.01)},
            id="nltk-small-weights-on-float-min",
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method5", "max_ngram_order": 6}, id="nltk-m5-N6"
        ),
        pytest.param(
            {"compat": "nltk", "smooth_method": "method5", "max_ngram_order": 1}, id="nltk-m5-N1"
        ),
        pytest.param(
            {"compat": "sacrebleu", "smooth_method": "exp", "max_ngram_order": 1}, id="sb-N1"
        ),
        pytest.param(
            {"compat": "sacrebleu", "smooth_method": "none", "max_ngram_order": 6}, id="sb-N6"
        ),
    ],
)
def test_option_variations(opts: dict[str, Any], dtype: torch.dtype) -> None:
    check_all(*OPT_CASE, opts, dtype)


def test_sentence_defaults_are_sacrebleu_exp_bleu4_float32() -> None:
    hyps, slots = OPT_CASE
    kw = {}
    kw["hyp_ids"], kw["hyp_lens"] = pack_hyps(hyps)
    kw["ref_ids"], kw["ref_lens"] = pack_refs(slots)
    refs = present_refs(slots)
    s = sentence_bleu(**kw)
    assert s.dtype == torch.float32
    assert_scores_close(
        s, sacrebleu_sentence(hyps, refs), atol=ATOL[torch.float32], label="defaults"
    )
    c = corpus_bleu(**kw)
    assert_scores_close(c, sacrebleu_corpus(hyps, refs), atol=ATOL[torch.float32], label="defaults")
    assert bleu_stats(**kw).shape == (3, 10)


def test_method6_validate() -> None:
    """NLTK asserts on zero trigram matches: ValueError with validate=True, NaN on exactly those
    rows with validate=False; rows without unigram matches stay exactly 0."""
    hyps = [[1, 2, 3, 4], [1, 2], [7, 8, 9], [1, 2, 3]]
    slots = [[[1, 2, 3, 4]], [[1, 2]], [[1, 2, 3]], [[1, 2, 3, 5]]]
    kw = {}
    kw["hyp_ids"], kw["hyp_lens"] = pack_hyps(hyps)
    kw["ref_ids"], kw["ref_lens"] = pack_refs(slots)
    opts = {"compat": "nltk", "smooth_method": "method6"}
    expected = nltk_sentence(hyps, present_refs(slots), smooth_method="method6")
    assert math.isnan(expected[1]) and expected[2] == 0.0
    with pytest.raises(ValueError):
        sentence_bleu(**kw, **opts)
    ours = sentence_bleu(**kw, **opts, validate=False, dtype=torch.float64)
    assert ours.isnan().tolist() == [False, True, False, False]
    assert ours[2].item() == 0.0
    assert_scores_close(ours, expected, atol=ATOL[torch.float64], hyps=hyps, label="method6")
    # Corpus: the corpus trigram count is > 0 here, so no error.
    c = corpus_bleu(**kw, **opts, dtype=torch.float64)
    assert_scores_close(
        c, nltk_corpus(hyps, present_refs(slots), smooth_method="method6"), atol=1e-12
    )
    # Corpus without any trigram match: ValueError / NaN.
    kw2 = {"hyp_ids": torch.tensor([[1, 2], [3, 4]]), "ref_ids": torch.tensor([[1, 2], [3, 4]])}
    assert math.isnan(nltk_corpus([[1, 2], [3, 4]], [[[1, 2]], [[3, 4]]], smooth_method="method6"))
    with pytest.raises(ValueError):
        corpus_bleu(**kw2, **opts)
    assert corpus_bleu(**kw2, **opts, validate=False).isnan().item()


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

H = torch.tensor([[1, 2, 3], [4, 5, 6]])
R2 = torch.tensor([[1, 2], [4, 5]])
R3 = torch.tensor([[[1, 2], [3, 4]], [[4, 5], [6, 6]]])
ALL_FNS = [
    pytest.param(bleu_stats, id="bleu_stats"),
    pytest.param(sentence_bleu, id="sentence_bleu"),
    pytest.param(corpus_bleu, id="corpus_bleu"),
]
SCORE_FNS = ALL_FNS[1:]

INPUT_ERRORS = {
    "float_hyp_ids": ({"hyp_ids": H.float(), "ref_ids": R2}, "hyp_ids"),
    "float_ref_ids": ({"hyp_ids": H, "ref_ids": R2.double()}, "ref_ids"),
    "bool_hyp_ids": ({"hyp_ids": H > 2, "ref_ids": R2}, "hyp_ids"),
    "bool_ref_ids": ({"hyp_ids": H, "ref_ids": R3 > 2}, "ref_ids"),
    "hyp_ids_1d": ({"hyp_ids": H[0], "ref_ids": R2}, "hyp_ids"),
    "hyp_ids_3d": ({"hyp_ids": H[:, None, :], "ref_ids": R2}, "hyp_ids"),
    "ref_ids_1d": ({"hyp_ids": H, "ref_ids": R2[0]}, "ref_ids"),
    "ref_ids_4d": ({"hyp_ids": H, "ref_ids": R3[:, None]}, "ref_ids"),
    "hyp_ids_list": ({"hyp_ids": H.tolist(), "ref_ids": R2}, "hyp_ids"),
    "batch_mismatch": ({"hyp_ids": H, "ref_ids": R2[:1]}, "ref_ids|hyp_ids|batch"),
    "batch_mismatch_3d": ({"hyp_ids": H[:1], "ref_ids": R3}, "ref_ids|hyp_ids|batch"),
    "hyp_lens_too_long": (
        {"hyp_ids": H, "ref_ids": R2, "hyp_lens": torch.tensor([1, 2, 3])},
        "hyp_lens",
    ),
    "hyp_lens_2d": (
        {"hyp_ids": H, "ref_ids": R2, "hyp_lens": torch.tensor([[1], [2]])},
        "hyp_lens",
    ),
    "hyp_lens_negative": (
        {"hyp_ids": H, "ref_ids": R2, "hyp_lens": torch.tensor([1, -1])},
        "hyp_lens",
    ),
    "hyp_lens_above_L": (
        {"hyp_ids": H, "ref_ids": R2, "hyp_lens": torch.tensor([1, 4])},
        "hyp_lens",
    ),
    "ref_lens_1d_for_3d_refs": (
        {"hyp_ids": H, "ref_ids": R3, "ref_lens": torch.tensor([1, 2])},
        "ref_lens",
    ),
    "ref_lens_2d_for_2d_refs": (
        {"hyp_ids": H, "ref_ids": R2, "ref_lens": torch.tensor([[1], [2]])},
        "ref_lens",
    ),
    "ref_lens_wrong_R": (
        {"hyp_ids": H, "ref_ids": R3, "ref_lens": torch.tensor([[1, 2, 1], [1, 1, 1]])},
        "ref_lens",
    ),
    "ref_lens_wrong_B": (
        {"hyp_ids": H, "ref_ids": R2, "ref_lens": torch.tensor([1, 1, 1])},
        "ref_lens",
    ),
    "ref_lens_negative": (  # -1 marks a missing reference; below that is an error
        {"hyp_ids": H, "ref_ids": R3, "ref_lens": torch.tensor([[1, -2], [0, 2]])},
        r"outside -1\.\..*-1 marks a slot without a reference",
    ),
    "ref_lens_above_L": (
        {"hyp_ids": H, "ref_ids": R2, "ref_lens": torch.tensor([3, 2])},
        "ref_lens",
    ),
    "negative_hyp_id": (
        {"hyp_ids": torch.tensor([[1, -2, 3], [4, 5, 6]]), "ref_ids": R2},
        "hyp_ids",
    ),
    "negative_ref_id": (
        {"hyp_ids": H, "ref_ids": torch.tensor([[[1, 2], [3, -4]], [[4, 5], [6, 6]]])},
        "ref_ids",
    ),
    "negative_hyp_id_inside_lens": (
        {
            "hyp_ids": torch.tensor([[1, -2, 3], [4, 5, -6]]),
            "ref_ids": R2,
            "hyp_lens": torch.tensor([2, 2]),
        },
        "hyp_ids",
    ),
    "negative_id_not_equal_to_pad_id": (
        {"hyp_ids": torch.tensor([[1, -2, -1], [4, 5, -1]]), "ref_ids": R2, "pad_id": -1},
        "hyp_ids",
    ),
    "float_hyp_lens": (
        {"hyp_ids": H, "ref_ids": R2, "hyp_lens": torch.tensor([1.0, 2.0])},
        "hyp_lens",
    ),
}


@pytest.mark.parametrize("fn", ALL_FNS)
@pytest.mark.parametrize(("kwargs", "match"), list(INPUT_ERRORS.values()), ids=list(INPUT_ERRORS))
def test_input_errors(fn: Any, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises((ValueError, TypeError), match=match):
        fn(**kwargs)


OPTION_ERRORS = {
    "unknown_compat": ({"compat": "moses"}, "compat"),
    "unknown_smooth_method_sacrebleu": ({"smooth_method": "method3"}, "smooth_method"),
    "unknown_smooth_method_nltk": ({"compat": "nltk", "smooth_method": "method8"}, "smooth_method"),
    "unknown_smooth_method_typo": ({"smooth_method": "Exp"}, "smooth_method"),
    "weights_with_sacrebleu": ({"weights": (0.25, 0.25, 0.25, 0.25)}, "weights"),
    "weights_wrong_length": (
        {"compat": "nltk", "smooth_method": "method0", "weights": (0.5, 0.5)},
        "weights",
    ),
    "weights_too_long": (
        {
            "compat": "nltk",
            "smooth_method": "method0",
            "max_ngram_order": 2,
            "weights": (0.3, 0.3, 0.4),
        },
        "weights",
    ),
    "smooth_value_for_method0": (
        {"compat": "nltk", "smooth_method": "method0", "smooth_value": 0.1},
        "smooth_value",
    ),
    "smooth_value_for_method2": (
        {"compat": "nltk", "smooth_method": "method2", "smooth_value": 1},
        "smooth_value",
    ),
    "smooth_value_for_method3": (
        {"compat": "nltk", "smooth_method": "method3", "smooth_value": 1},
        "smooth_value",
    ),
    "smooth_value_for_method5": (
        {"compat": "nltk", "smooth_method": "method5", "smooth_value": 1},
        "smooth_value",
    ),
    "smooth_value_for_exp_alias": (
        {"compat": "nltk", "smooth_method": "exp", "smooth_value": 1},
        "smooth_value",
    ),
    "method6_with_N_2": (
        {"compat": "nltk", "smooth_method": "method6", "max_ngram_order": 2},
        "max_ngram_order|method6",
    ),
}


@pytest.mark.parametrize("fn", SCORE_FNS)
@pytest.mark.parametrize(("opts", "match"), list(OPTION_ERRORS.values()), ids=list(OPTION_ERRORS))
def test_option_errors(fn: Any, opts: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        fn(H, R2, **opts)


@pytest.mark.parametrize("fn", ALL_FNS)
def test_unknown_compat_in_bleu_stats(fn: Any) -> None:
    with pytest.raises(ValueError, match="compat"):
        fn(H, R2, compat="moses")


@pytest.mark.parametrize("fn", ALL_FNS)
@pytest.mark.parametrize("n", [0, -1])
def test_invalid_max_ngram_order(fn: Any, n: int) -> None:
    with pytest.raises(ValueError, match="max_ngram_order"):
        fn(H, R2, max_ngram_order=n)


def _other_device() -> str:
    return "cuda" if "cuda" in DEVICES else "meta"


@pytest.mark.parametrize("fn", ALL_FNS)
@pytest.mark.parametrize("which", ["ref_ids", "hyp_lens", "ref_lens"])
def test_device_mismatch(fn: Any, which: str) -> None:
    """Tensors on different devices are rejected up front.  Without a GPU the "meta" device
    stands in for the other device."""
    kwargs = {
        "hyp_ids": H,
        "ref_ids": R2,
        "hyp_lens": torch.tensor([3, 3]),
        "ref_lens": torch.tensor([2, 2]),
    }
    kwargs[which] = kwargs[which].to(_other_device())
    with pytest.raises((ValueError, TypeError), match=f"device|{which}"):
        fn(**kwargs)


# --------------------------------------------------------------------------------------------
# Empty vs missing references (issue 16 item 5)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("smooth_method", ["exp", "floor"])
def test_empty_reference_differs_from_a_missing_one(smooth_method: str) -> None:
    """Length 0 is an empty reference (sacrebleu's ``""``, NLTK's ``[]``): the closest reference
    length can be 0. ``MISSING_REF`` (-1) is no reference (sacrebleu's ``None``), as is an
    unused slot of ``pad_ragged_refs``. Checked against both libraries directly."""
    from nltk.translate.bleu_score import SmoothingFunction
    from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu
    from nltk.translate.bleu_score import sentence_bleu as nltk_sentence_bleu
    from sacrebleu.metrics import BLEU as SacreBLEU

    from tensortext.padded import MISSING_REF, pad_ragged, pad_ragged_refs

    hyps = [[1, 2, 3, 4], [5, 6, 7]]
    ref_ids = torch.tensor(
        [[[1, 2, 3, 4, 5, 6, 7, 8, 9], [0] * 9], [[5, 6, 7, 8, 9] + [0] * 4, [0] * 9]]
    )
    hyp_ids, hyp_lens = pack_hyps(hyps)
    empty = torch.tensor([[9, 0], [5, 0]])
    missing = torch.tensor([[9, MISSING_REF], [5, MISSING_REF]])
    sacre = SacreBLEU(tokenize="none", smooth_method=smooth_method)
    text = [" ".join(map(str, h)) for h in hyps]
    streams = [["1 2 3 4 5 6 7 8 9", "5 6 7 8 9"]]
    for lens, second in ((empty, ["", ""]), (missing, [None, None])):
        kw = {"hyp_ids": hyp_ids, "hyp_lens": hyp_lens, "ref_ids": ref_ids, "ref_lens": lens}
        expected = sacre.corpus_score(text, [*streams, second])
        stats = bleu_stats(**kw)
        assert stats[:, 1].tolist() == ([0, 5] if second[0] == "" else [9, 5])
        assert stats.sum(0)[:2].tolist() == [expected.sys_len, expected.ref_len]
        ours = corpus_bleu(**kw, smooth_method=smooth_method, dtype=torch.float64)
        assert float(ours) * 100 == pytest.approx(expected.score, abs=1e-9)
        sentence = sentence_bleu(**kw, smooth_method=smooth_method, dtype=torch.float64)
        refs = [[streams[0][b]] + ([second[b]] if second[b] is not None else []) for b in range(2)]
        expected_sentence = [sacre.sentence_score(text[b], refs[b]).score / 100 for b in range(2)]
        assert sentence.tolist() == pytest.approx(expected_sentence, abs=1e-12)
    # NLTK: [] is an empty reference.
    nltk_refs = [[[1, 2, 3, 4, 5, 6, 7, 8, 9], []], [[5, 6, 7, 8, 9], []]]
    smoothing = SmoothingFunction().method1
    kw = {"hyp_ids": hyp_ids, "hyp_lens": hyp_lens, "ref_ids": ref_ids, "ref_lens": empty}
    ours = corpus_bleu(**kw, compat="nltk", smooth_method="method1", dtype=torch.float64)
    expected_nltk = nltk_corpus_bleu(nltk_refs, hyps, smoothing_function=smoothing)
    assert float(ours) == pytest.approx(expected_nltk, abs=1e-12)
    ours_s = sentence_bleu(**kw, compat="nltk", smooth_method="method1", dtype=torch.float64)
    expected_s = [
        nltk_sentence_bleu(r, h, smoothing_function=smoothing)
        for r, h in zip(nltk_refs, hyps, strict=True)
    ]
    assert ours_s.tolist() == pytest.approx(expected_s, abs=1e-12)
    # pad_ragged_refs: [] is an empty reference, an unused slot is missing.
    with_empty = bleu_stats(pad_ragged(hyps), pad_ragged_refs([[r[0], []] for r in nltk_refs]))
    without = bleu_stats(pad_ragged(hyps), pad_ragged_refs([[r[0]] for r in nltk_refs]))
    assert with_empty[:, 1].tolist() == [0, 5] and without[:, 1].tolist() == [9, 5]
