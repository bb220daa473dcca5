"""BLEU oracles (tests/bleu): thin wrappers around NLTK and sacrebleu for the parity tests.

Everything here works on plain Python lists so that the *same* logical batch can be fed to the
reference libraries and (through :func:`pack_hyps` / :func:`pack_refs` / :func:`pad_with_id`) to
``tensortext`` as padded tensors.

Conventions shared by every wrapper:

* ``hyps``: ``list[list[int]]`` -- one hypothesis per row.
* ``refs``: ``list[list[list[int]]]`` -- the references of each row, with absent slots (length 0)
  already removed.  A row whose list is empty is scored as having exactly one empty reference,
  as the tensortext spec demands: NLTK gets ``references=[[]]`` and sacrebleu gets ``''``.

The reference libraries are imported unconditionally: a missing library is a test *failure*,
never a skip.
"""

from __future__ import annotations

import contextlib
import logging
import math
import random
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from typing import Any

import torch
from nltk.translate import bleu_score as nltk_bleu
from sacrebleu.metrics import BLEU as SacreBLEU

from tensortext.padded import MISSING_REF

Hyps = list[list[int]]
Refs = list[list[list[int]]]

SACREBLEU_METHODS = ("none", "floor", "add-k", "exp")
NLTK_METHODS = tuple(f"method{i}" for i in range(8))
# sacrebleu method names are accepted as aliases under compat="nltk".
NLTK_ALIASES = {"none": "method0", "floor": "method1", "add-k": "method2", "exp": "method3"}
# Which SmoothingFunction parameter smooth_value maps to (other methods take no value).
NLTK_SMOOTH_PARAM = {"method1": "epsilon", "method4": "k", "method6": "alpha", "method7": "k"}
SACREBLEU_SMOOTH_VALUE_METHODS = ("floor", "add-k")

# The tolerance contract of the spec: float32 within 1e-6 absolute, float64 within 1e-12.
# float32 has a unit roundoff of ~6e-8 and BLEU normally lives in [0, 1], so the handful of
# roundings in log/exp/div stay well below 1e-6; float64's roundoff is ~1e-16 and the references
# themselves differ from an exact computation by a few ulps (NLTK mixes exact Fractions with
# floats, sacrebleu scales by 100 and back), so 1e-12 is loose enough for honest rounding yet
# catches any formula difference.
# Scores above 1 exist in the reference libraries (NLTK method4/7 with a small k, method5/7's
# averaging, sacrebleu "floor" with smooth_value > 1 -- e.g. 13.8 for NLTK method7, k=0.01),
# and there one float32 ulp alone is ~1e-6, so assert_scores_close measures the error in units
# of max(1, |reference|): exactly the absolute contract inside [0, 1], relative above it.
ATOL = {torch.float32: 1e-6, torch.float64: 1e-12}


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence NLTK's UserWarnings and sacrebleu's logger for the duration of the block."""
    logger = logging.getLogger("sacrebleu")
    was_disabled = logger.disabled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logger.disabled = True
        try:
            yield
        finally:
            logger.disabled = was_disabled


def ids_to_str(ids: Sequence[int]) -> str:
    return " ".join(map(str, ids))


# --------------------------------------------------------------------------------------------
# NLTK
# --------------------------------------------------------------------------------------------


def nltk_method_name(smooth_method: str) -> str:
    return NLTK_ALIASES.get(smooth_method, smooth_method)


def nltk_smoother(smooth_method: str, smooth_value: float | None = None) -> Any:
    method = nltk_method_name(smooth_method)
    kwargs: dict[str, float] = {}
    if smooth_value is not None:
        kwargs[NLTK_SMOOTH_PARAM[method]] = smooth_value
    return getattr(nltk_bleu.SmoothingFunction(**kwargs), method)


def nltk_weights(max_ngram_order: int, weights: Sequence[float] | None) -> tuple[float, ...]:
    # A tuple, not a list: NLTK's auto_reweigh only fires when `weight == (0.25,) * 4`.
    if weights is None:
        return (1 / max_ngram_order,) * max_ngram_order
    return tuple(float(w) for w in weights)


def _nltk_refs(row_refs: list[list[int]]) -> list[list[int]]:
    return [list(r) for r in row_refs] if row_refs else [[]]


def _nan_where_method6_asserts(score: Callable[[], float], smooth_method: str) -> float:
    """Calls NLTK; its method6 asserts on zero trigram matches, which we report as NaN."""
    try:
        return float(score())
    except AssertionError:
        if nltk_method_name(smooth_method) != "method6":
            raise
        return math.nan


def nltk_sentence(
    hyps: Hyps,
    refs: Refs,
    *,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    auto_reweigh: bool = False,
) -> list[float]:
    """``nltk.sentence_bleu`` per row.  A row on which NLTK's method6 asserts (zero trigram
    matches) is reported as NaN, which is what tensortext gives with ``validate=False``."""
    w = nltk_weights(max_ngram_order, weights)
    out = []
    with quiet():
        for hyp, row_refs in zip(hyps, refs, strict=True):
            out.append(
                _nan_where_method6_asserts(
                    lambda hyp=hyp, row_refs=row_refs: nltk_bleu.sentence_bleu(
                        _nltk_refs(row_refs),
                        list(hyp),
                        weights=w,
                        smoothing_function=nltk_smoother(smooth_method, smooth_value),
                        auto_reweigh=auto_reweigh,
                    ),
                    smooth_method,
                )
            )
    return out


def nltk_corpus(
    hyps: Hyps,
    refs: Refs,
    *,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    auto_reweigh: bool = False,
) -> float:
    """``nltk.corpus_bleu`` (quirks of methods 4-7 included); NaN where method6 asserts."""
    if not hyps:  # NLTK divides 0/0 on an empty corpus; the spec says 0.0
        return 0.0
    w = nltk_weights(max_ngram_order, weights)
    with quiet():
        return _nan_where_method6_asserts(
            lambda: nltk_bleu.corpus_bleu(
                [_nltk_refs(r) for r in refs],
                [list(h) for h in hyps],
                weights=w,
                smoothing_function=nltk_smoother(smooth_method, smooth_value),
                auto_reweigh=auto_reweigh,
            ),
            smooth_method,
        )


def nltk_stats(hyps: Hyps, refs: Refs, *, max_ngram_order: int = 4) -> list[list[int]]:
    """Per-row ``[hyp_len, closest_ref_len, correct_1..N, total_1..N]`` from NLTK's own
    ``modified_precision`` (whose denominator is clamped to >= 1) and ``closest_ref_length``."""
    rows = []
    for hyp, row_refs in zip(hyps, refs, strict=True):
        references = _nltk_refs(row_refs)
        precisions = [
            nltk_bleu.modified_precision(references, list(hyp), n)
            for n in range(1, max_ngram_order + 1)
        ]
        rows.append(
            [len(hyp), nltk_bleu.closest_ref_length(references, len(hyp))]
            + [int(p.numerator) for p in precisions]
            + [int(p.denominator) for p in precisions]
        )
    return rows


def nltk_from_stats(
    stats: Sequence[int],
    *,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    auto_reweigh: bool = False,
) -> float:
    """The tail of ``nltk.corpus_bleu`` applied to already summed statistics.

    Only valid for method0..method4, whose smoothing depends on nothing but the summed counts
    and the corpus hypothesis length (methods 5-7 look at the last sentence / hypothesis).
    """
    method = nltk_method_name(smooth_method)
    assert method in NLTK_METHODS[:5], method
    n = max_ngram_order
    hyp_len, ref_len = int(stats[0]), int(stats[1])
    correct = [int(c) for c in stats[2 : 2 + n]]
    total = [int(t) for t in stats[2 + n : 2 + 2 * n]]
    bp = nltk_bleu.brevity_penalty(ref_len, hyp_len)
    p_n = [nltk_bleu.Fraction(c, t, _normalize=False) for c, t in zip(correct, total, strict=True)]
    if correct[0] == 0:
        return 0.0
    with quiet():
        p_n = nltk_smoother(method, smooth_value)(
            p_n, references=None, hypothesis=None, hyp_len=hyp_len
        )
    weight = nltk_weights(n, weights)
    if auto_reweigh and hyp_len < 4 and weight == (0.25, 0.25, 0.25, 0.25):
        weight = (1 / hyp_len,) * hyp_len
    # zip truncates on purpose, exactly as in NLTK (auto_reweigh may shorten the weights).
    s = (w_i * math.log(p_i) for w_i, p_i in zip(weight, p_n, strict=False) if p_i > 0)
    return float(bp * math.exp(math.fsum(s)))


# --------------------------------------------------------------------------------------------
# sacrebleu
# --------------------------------------------------------------------------------------------


@cache
def sacrebleu_metric(
    max_ngram_order: int = 4,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> SacreBLEU:
    return SacreBLEU(
        tokenize="none",
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        max_ngram_order=max_ngram_order,
    )


def _sacre_row_refs(row_refs: list[list[int]]) -> list[str]:
    return [ids_to_str(r) for r in row_refs] if row_refs else [""]


def sacrebleu_streams(refs: Refs) -> list[list[str | None]]:
    """Reference streams for ``corpus_score``: absent slots are ``None``; a row without any
    reference gets ``''`` in the first stream."""
    n_streams = max([1, *(len(r) for r in refs)])
    streams: list[list[str | None]] = [[] for _ in range(n_streams)]
    for row_refs in refs:
        for j in range(n_streams):
            if j < len(row_refs):
                streams[j].append(ids_to_str(row_refs[j]))
            elif j == 0:
                streams[j].append("")
            else:
                streams[j].append(None)
    return streams


def sacrebleu_sentence(
    hyps: Hyps,
    refs: Refs,
    *,
    max_ngram_order: int = 4,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> list[float]:
    metric = sacrebleu_metric(max_ngram_order, smooth_method, smooth_value, effective_order)
    with quiet():
        return [
            metric.sentence_score(ids_to_str(h), _sacre_row_refs(r)).score / 100
            for h, r in zip(hyps, refs, strict=True)
        ]


def sacrebleu_corpus(
    hyps: Hyps,
    refs: Refs,
    *,
    max_ngram_order: int = 4,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> float:
    if not hyps:  # sacrebleu cannot take an empty corpus; the spec says 0.0
        return 0.0
    metric = sacrebleu_metric(max_ngram_order, smooth_method, smooth_value, effective_order)
    with quiet():
        return (
            metric.corpus_score([ids_to_str(h) for h in hyps], sacrebleu_streams(refs)).score / 100
        )


def sacrebleu_stats(hyps: Hyps, refs: Refs, *, max_ngram_order: int = 4) -> list[list[int]]:
    """sacrebleu's own per-segment sufficient statistics."""
    if not hyps:
        return []
    metric = sacrebleu_metric(max_ngram_order, "exp", None, False)
    with quiet():
        stats = metric._extract_corpus_statistics(
            [ids_to_str(h) for h in hyps], sacrebleu_streams(refs)
        )
    return [[int(x) for x in row] for row in stats]


def sacrebleu_from_stats(
    stats: Sequence[int],
    *,
    max_ngram_order: int = 4,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
) -> float:
    n = max_ngram_order
    with quiet():
        return (
            SacreBLEU.compute_bleu(
                correct=[int(c) for c in stats[2 : 2 + n]],
                total=[int(t) for t in stats[2 + n : 2 + 2 * n]],
                sys_len=int(stats[0]),
                ref_len=int(stats[1]),
                smooth_method=smooth_method,
                smooth_value=smooth_value,
                effective_order=effective_order,
                max_ngram_order=n,
            ).score
            / 100
        )


# --------------------------------------------------------------------------------------------
# Dispatch by compat
# --------------------------------------------------------------------------------------------

_SACRE_KEYS = ("max_ngram_order", "smooth_method", "smooth_value", "effective_order")
_NLTK_KEYS = ("max_ngram_order", "weights", "smooth_method", "smooth_value", "auto_reweigh")


def _opts_for(compat: str, opts: dict[str, Any]) -> dict[str, Any]:
    keys = _SACRE_KEYS if compat == "sacrebleu" else _NLTK_KEYS
    return {k: v for k, v in opts.items() if k in keys}


def ref_sentence(hyps: Hyps, refs: Refs, compat: str, **opts: Any) -> list[float]:
    fn = sacrebleu_sentence if compat == "sacrebleu" else nltk_sentence
    return fn(hyps, refs, **_opts_for(compat, opts))


def ref_corpus(hyps: Hyps, refs: Refs, compat: str, **opts: Any) -> float:
    fn = sacrebleu_corpus if compat == "sacrebleu" else nltk_corpus
    return fn(hyps, refs, **_opts_for(compat, opts))


def ref_stats(hyps: Hyps, refs: Refs, compat: str, *, max_ngram_order: int = 4) -> list[list[int]]:
    fn = sacrebleu_stats if compat == "sacrebleu" else nltk_stats
    return fn(hyps, refs, max_ngram_order=max_ngram_order)


def ref_from_stats(stats: Sequence[int], compat: str, **opts: Any) -> float:
    fn = sacrebleu_from_stats if compat == "sacrebleu" else nltk_from_stats
    return fn(stats, **_opts_for(compat, opts))


# --------------------------------------------------------------------------------------------
# Python lists -> padded tensors
# --------------------------------------------------------------------------------------------


def present_refs(slots: Sequence[Sequence[Sequence[int]]]) -> Refs:
    """Per-row reference slots (empty = absent) -> the reference lists the wrappers take."""
    return [[list(s) for s in row if len(s) > 0] for row in slots]


def pack_hyps(
    hyps: Sequence[Sequence[int]],
    *,
    width: int | None = None,
    junk: int = 7,
    dtype: torch.dtype = torch.int64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad with ``junk`` to ``[B, width]``; returns ``(ids, lens)``.  ``junk`` is a
    deliberately plausible token so that any use of positions >= length is caught."""
    lens = [len(h) for h in hyps]
    w = max([0, *lens]) if width is None else width
    assert w >= max([0, *lens])
    ids = torch.full((len(hyps), w), junk, dtype=dtype)
    for i, h in enumerate(hyps):
        if h:
            ids[i, : len(h)] = torch.tensor(list(h), dtype=dtype)
    return ids, torch.tensor(lens, dtype=torch.int64)


def pack_refs(
    slots: Sequence[Sequence[Sequence[int]]],
    *,
    num_slots: int | None = None,
    width: int | None = None,
    junk: int = 7,
    dtype: torch.dtype = torch.int64,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row reference slots -> ``([B, R, width], [B, R])``.  Rows may have different numbers
    of slots; an empty slot (``[]``, which :func:`present_refs` drops) and a missing trailing slot
    get length ``MISSING_REF`` (-1, "no reference here") and are filled with ``junk``."""
    r = max([1, *(len(row) for row in slots)]) if num_slots is None else num_slots
    lens = [
        [len(row[j]) if j < len(row) and row[j] else MISSING_REF for j in range(r)] for row in slots
    ]
    max_len = max([0, *(x for row in lens for x in row)])
    w = max_len if width is None else width
    assert w >= max_len
    ids = torch.full((len(slots), r, w), junk, dtype=dtype)
    for i, row in enumerate(slots):
        for j, s in enumerate(row):
            if s:
                ids[i, j, : len(s)] = torch.tensor(list(s), dtype=dtype)
    return ids, torch.tensor(lens, dtype=torch.int64).reshape(len(slots), r)


def pad_with_id(
    seqs: Sequence[Sequence[int]],
    *,
    pad_id: int,
    width: int | None = None,
    layout: str = "right",
    rng: random.Random | None = None,
    dtype: torch.dtype = torch.int64,
) -> torch.Tensor:
    """Pad each sequence with ``pad_id`` to ``width`` (``[B, width]``).

    layout: ``"right"``, ``"left"``, or ``"inner"`` (pads scattered at random positions,
    including between real tokens and at both ends)."""
    assert all(pad_id not in s for s in seqs), "pad_id must not occur in the sequences"
    w = max([0, *(len(s) for s in seqs)]) if width is None else width
    rng = rng or random.Random(0)
    rows = []
    for s in seqs:
        n_pad = w - len(s)
        assert n_pad >= 0
        if layout == "right":
            row = list(s) + [pad_id] * n_pad
        elif layout == "left":
            row = [pad_id] * n_pad + list(s)
        elif layout == "inner":
            pad_pos = set(rng.sample(range(w), n_pad))
            it = iter(s)
            row = [pad_id if p in pad_pos else next(it) for p in range(w)]
        else:
            raise AssertionError(layout)
        rows.append(row)
    return torch.tensor(rows, dtype=dtype).reshape(len(seqs), w)


# --------------------------------------------------------------------------------------------
# Comparison helpers with readable failure messages
# --------------------------------------------------------------------------------------------


def _fmt_row(kwargs: dict[str, Any] | None, i: int) -> str:
    if not kwargs:
        return ""
    parts = []
    for key in ("hyp_ids", "ref_ids", "hyp_lens", "ref_lens"):
        t = kwargs.get(key)
        if isinstance(t, torch.Tensor) and t.dim() > 0 and i < t.shape[0]:
            parts.append(f"    {key}[{i}] = {t[i].tolist()}")
    parts.append(f"    pad_id = {kwargs.get('pad_id')!r}")
    return "\n".join(parts)


def describe_row(
    i: int, hyps: Hyps | None, refs: Refs | None, kwargs: dict[str, Any] | None
) -> str:
    lines = [f"  row {i}:"]
    if hyps is not None and i < len(hyps):
        lines.append(f"    hyp  = {hyps[i]}")
    if refs is not None and i < len(refs):
        lines.append(f"    refs = {refs[i]}")
    row = _fmt_row(kwargs, i)
    if row:
        lines.append(row)
    return "\n".join(lines)


def assert_scores_close(
    actual: torch.Tensor,
    expected: Sequence[float] | float,
    *,
    atol: float,
    hyps: Hyps | None = None,
    refs: Refs | None = None,
    kwargs: dict[str, Any] | None = None,
    label: str = "",
) -> None:
    """``torch.testing.assert_close`` (rtol=0, NaN == NaN) with the first differing row
    (inputs and both values) in the failure message."""
    exp = torch.tensor(expected, dtype=torch.float64)
    act = actual.detach().to("cpu", torch.float64)
    assert act.shape == exp.shape, f"{label}: shape {tuple(act.shape)} != {tuple(exp.shape)}"
    # Absolute error inside [0, 1]; relative to |reference| above 1 (see ATOL). A score above e
    # is exp of a sum of logs whose rounding grows with the exponent, so there the relative
    # tolerance grows with log|reference| too (NLTK method6 at alpha=0.01 scores ~1.5e5 and
    # float32 lands 1.2e-6 away, 1e-7 per unit of the exponent 11.9).
    scale = exp.abs().nan_to_num(nan=1.0).clamp(min=1.0)
    scale = scale * scale.log().clamp(min=1.0)

    def msg(default: str) -> str:
        a, e = act.reshape(-1), exp.reshape(-1)
        bad = ((a - e).abs() > atol * scale.reshape(-1)) | (a.isnan() != e.isnan())
        bad &= ~(a.isnan() & e.isnan())
        lines = [f"{label}", default]
        if bad.any():
            i = int(bad.nonzero()[0])
            lines.append(
                f"first differing row {i}: ours={a[i].item()!r} reference={e[i].item()!r} "
                f"(|diff|={abs(a[i].item() - e[i].item()):.3e}, atol={atol})"
            )
            if act.dim() == 0:  # corpus score: show the whole (small) batch
                n = len(hyps) if hyps is not None else 0
                lines += [describe_row(j, hyps, refs, kwargs) for j in range(min(n, 8))]
            else:
                lines.append(describe_row(i, hyps, refs, kwargs))
        return "\n".join(lines)

    torch.testing.assert_close(act / scale, exp / scale, atol=atol, rtol=0, equal_nan=True, msg=msg)


def assert_stats_equal(
    actual: torch.Tensor,
    expected: Sequence[Sequence[int]],
    *,
    max_ngram_order: int,
    hyps: Hyps | None = None,
    refs: Refs | None = None,
    kwargs: dict[str, Any] | None = None,
    label: str = "",
) -> None:
    """Exact equality of integer statistics, showing the first differing row on failure."""
    width = 2 + 2 * max_ngram_order
    assert actual.dtype == torch.int64, f"{label}: stats dtype {actual.dtype} != torch.int64"
    exp = torch.tensor(expected, dtype=torch.int64).reshape(-1, width)
    act = actual.detach().cpu()
    assert act.shape == exp.shape, f"{label}: stats shape {tuple(act.shape)} != {tuple(exp.shape)}"
    if not torch.equal(act, exp):
        i = int((act != exp).any(dim=1).nonzero()[0])
        raise AssertionError(
            f"{label}: stats differ; first differing row {i}:\n"
            f"  ours      = {act[i].tolist()}\n  reference = {exp[i].tolist()}\n"
            f"  (columns: hyp_len, ref_len, correct_1..{max_ngram_order}, "
            f"total_1..{max_ngram_order})\n" + describe_row(i, hyps, refs, kwargs)
        )
