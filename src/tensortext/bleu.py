"""Token-ID BLEU on padded batches: sufficient statistics, sentence and corpus scores.

Each sentence is reduced to ``[hyp_len, ref_len, correct_1..N, total_1..N]`` (sacrebleu's
statistics); corpus BLEU is the same formula on the summed vector. Two scoring conventions:

* ``compat="sacrebleu"``: ``sacrebleu.metrics.BLEU(tokenize="none", ...)`` on space-joined IDs.
* ``compat="nltk"``: ``nltk.translate.bleu_score`` with ``SmoothingFunction().method0..7``,
  including NLTK's corpus-level quirks (methods 4-7 look at the corpus length and at the *last*
  sentence), so a port from NLTK gives the same numbers.

No Python loop over the batch and no host synchronisation unless ``validate=True`` (the default),
which checks lengths and IDs once before any work.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor

from tensortext.ngrams import count_ngrams, iter_ngram_ids, strip_padding

__all__ = [
    "Compat",
    "bleu_from_stats",
    "bleu_stats",
    "corpus_bleu",
    "sentence_bleu",
]

Compat = Literal["sacrebleu", "nltk"]

SACREBLEU_METHODS = ("none", "floor", "add-k", "exp")
NLTK_METHODS = tuple(f"method{i}" for i in range(8))
# Chen & Cherry (2014) numbering: sacrebleu's names are NLTK's methods 0-3.
_SACREBLEU_TO_NLTK = {"none": "method0", "floor": "method1", "add-k": "method2", "exp": "method3"}
# The SmoothingFunction parameter each NLTK method reads, and its default.
_NLTK_SMOOTH_PARAM = {
    "method1": ("epsilon", 0.1),
    "method4": ("k", 5.0),
    "method6": ("alpha", 5.0),
    "method7": ("k", 5.0),
}
_SACREBLEU_SMOOTH_DEFAULT = {"floor": 0.1, "add-k": 1.0}
# sacrebleu's my_log(0); any precision at 0 drives the score to exactly 0.
_SACREBLEU_LOG_ZERO = -9999999999.0
# NLTK method0 replaces a zero precision by sys.float_info.min; its log is finite.
_NLTK_LOG_ZERO = math.log(sys.float_info.min)


@dataclass(frozen=True)
class BleuConfig:
    """Validated scoring options (one place that knows what each option means)."""

    max_ngram_order: int
    compat: Compat
    method: str  # canonical: a sacrebleu name for sacrebleu, "methodK" for nltk
    smooth_value: float  # the method's parameter; 0.0 for methods that take none
    weights: tuple[float, ...] | None
    effective_order: bool
    auto_reweigh: bool
    dtype: torch.dtype

    @property
    def needs_order5(self) -> bool:
        """NLTK methods 5 and 7 read the 5-gram precision of the (last) sentence."""
        return self.compat == "nltk" and self.method in ("method5", "method7")

    @property
    def stats_order(self) -> int:
        return max(self.max_ngram_order, 5) if self.needs_order5 else self.max_ngram_order


def make_config(
    *,
    max_ngram_order: int,
    weights: Sequence[float] | None,
    smooth_method: str,
    smooth_value: float | None,
    effective_order: bool,
    compat: str,
    auto_reweigh: bool,
    dtype: torch.dtype,
) -> BleuConfig:
    """Checks the scoring options and resolves aliases and defaults; raises ``ValueError``."""
    if isinstance(max_ngram_order, bool) or not isinstance(max_ngram_order, int):
        raise TypeError(f"max_ngram_order must be an int, got {type(max_ngram_order).__name__}")
    if max_ngram_order < 1:
        raise ValueError(f"max_ngram_order must be >= 1, got {max_ngram_order}")
    # Half precision cannot even hold corpus counts above 65504 exactly; refuse it.
    if dtype not in (torch.float32, torch.float64):
        raise TypeError(f"dtype must be torch.float32 or torch.float64, got {dtype}")
    if smooth_value is not None and not math.isfinite(smooth_value):
        raise ValueError(f"smooth_value must be finite, got {smooth_value}")
    if compat == "sacrebleu":
        if smooth_method not in SACREBLEU_METHODS:
            hint = (
                f" ({smooth_method!r} is an NLTK method: pass compat='nltk')"
                if smooth_method in NLTK_METHODS
                else ""
            )
            raise ValueError(
                f"smooth_method must be one of {SACREBLEU_METHODS} with compat='sacrebleu', "
                f"got {smooth_method!r}{hint}"
            )
        if weights is not None:
            raise ValueError(
                "weights are not part of sacrebleu's BLEU; pass weights=None, or compat='nltk' "
                "for weighted n-gram orders"
            )
        if auto_reweigh:
            raise ValueError("auto_reweigh is an NLTK option; pass compat='nltk' to use it")
        if smooth_method in _SACREBLEU_SMOOTH_DEFAULT:
            default = _SACREBLEU_SMOOTH_DEFAULT[smooth_method]
            value = default if smooth_value is None else float(smooth_value)
        elif smooth_value is not None:
            raise ValueError(
                f"smooth_method={smooth_method!r} takes no smooth_value; pass smooth_value=None"
            )
        else:
            value = 0.0
        return BleuConfig(
            max_ngram_order, "sacrebleu", smooth_method, value, None, effective_order, False, dtype
        )
    if compat == "nltk":
        method = _SACREBLEU_TO_NLTK.get(smooth_method, smooth_method)
        if method not in NLTK_METHODS:
            raise ValueError(
                f"smooth_method must be one of {NLTK_METHODS} (or the sacrebleu aliases "
                f"{SACREBLEU_METHODS}) with compat='nltk', got {smooth_method!r}"
            )
        if effective_order:
            raise ValueError("effective_order is a sacrebleu option; pass compat='sacrebleu'")
        if method in _NLTK_SMOOTH_PARAM:
            value = _NLTK_SMOOTH_PARAM[method][1] if smooth_value is None else float(smooth_value)
        elif smooth_value is not None:
            hint = (
                " (it always adds 1; compat='sacrebleu' takes any k)" if method == "method2" else ""
            )
            raise ValueError(f"NLTK's {method} takes no smooth_value{hint}; pass smooth_value=None")
        else:
            value = 0.0
        if method == "method6" and max_ngram_order < 3:
            raise ValueError("NLTK's method6 needs trigram precision; pass max_ngram_order >= 3")
        resolved: tuple[float, ...] | None = None
        if weights is not None:
            resolved = tuple(float(w) for w in weights)
            if len(resolved) != max_ngram_order:
                raise ValueError(
                    f"weights has {len(resolved)} entries but max_ngram_order={max_ngram_order}; "
                    f"pass max_ngram_order={len(resolved)}"
                )
            if any(not math.isfinite(w) for w in resolved):
                raise ValueError(f"weights must be finite, got {resolved}")
        return BleuConfig(
            max_ngram_order, "nltk", method, value, resolved, False, auto_reweigh, dtype
        )
    raise ValueError(f"compat must be 'sacrebleu' or 'nltk', got {compat!r}")


# --------------------------------------------------------------------------------------------
# Input checking and formatting
# --------------------------------------------------------------------------------------------


def _check_ids(name: str, ids: object, dims: tuple[int, ...]) -> Tensor:
    if not isinstance(ids, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token IDs, got {type(ids).__name__}")
    if ids.dtype == torch.bool or ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"{name} must hold integer token IDs, got dtype {ids.dtype}")
    if ids.dim() not in dims:
        shapes = " or ".join({2: "[B, L]", 3: "[B, R, L]"}[d] for d in dims)
        raise ValueError(f"{name} must be {shapes}, got shape {tuple(ids.shape)}")
    return ids


def _check_lengths(
    name: str, lengths: Tensor | None, shape: tuple[int, ...], ids: Tensor
) -> Tensor | None:
    if lengths is None:
        return None
    if not isinstance(lengths, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(lengths).__name__}")
    if lengths.dtype == torch.bool or lengths.is_floating_point() or lengths.is_complex():
        raise TypeError(f"{name} must be an integer tensor, got dtype {lengths.dtype}")
    if tuple(lengths.shape) != shape:
        raise ValueError(f"{name} must have shape {list(shape)}, got {list(lengths.shape)}")
    if lengths.device != ids.device:
        raise ValueError(
            f"{name} is on {lengths.device} but the IDs are on {ids.device}; "
            "move both to one device"
        )
    return lengths


def _lengths_or_strip(
    ids: Tensor, lengths: Tensor | None, pad_id: int | None
) -> tuple[Tensor, Tensor]:
    """Returns ``(ids, lengths)`` with padding resolved: given lengths win, else ``pad_id``."""
    if lengths is not None:
        return ids, lengths.long()
    if pad_id is not None:
        return strip_padding(ids, pad_id)
    full = torch.full(ids.shape[:-1], ids.shape[-1], dtype=torch.long, device=ids.device)
    return ids, full


def _validate_values(name: str, ids: Tensor, lengths: Tensor, lens_name: str | None) -> None:
    """Host-syncing checks: lengths within ``0..L`` and no negative ID inside a sequence."""
    max_len = ids.shape[-1]
    if lens_name is not None and lengths.numel() > 0:
        bad = (lengths < 0) | (lengths > max_len)
        if bool(bad.any()):
            where = tuple(int(i) for i in bad.nonzero()[0])
            raise ValueError(
                f"{lens_name}{list(where)} = {int(lengths[where])} is outside 0..{max_len} "
                f"(the padded length of {name})"
            )
    inside = torch.arange(max_len, device=ids.device) < lengths.unsqueeze(-1)
    negative = (ids < 0) & inside
    if bool(negative.any()):
        where = tuple(int(i) for i in negative.nonzero()[0])
        raise ValueError(
            f"{name}{list(where)} = {int(ids[where])} is a negative token ID inside the sequence; "
            "if it is padding, pass pad_id=<that value> or the lengths"
        )


@dataclass(frozen=True)
class _Batch:
    """A batch formatted for counting: hypotheses and references with resolved lengths."""

    hyp_ids: Tensor  # [B, L]
    hyp_lens: Tensor  # [B]
    ref_ids: Tensor  # [B, R, L']
    ref_lens: Tensor  # [B, R], 0 = no reference in this slot


def format_batch(
    hyp_ids: Tensor,
    ref_ids: Tensor,
    *,
    hyp_lens: Tensor | None,
    ref_lens: Tensor | None,
    pad_id: int | None,
    validate: bool,
) -> _Batch:
    """Checks shapes, dtypes and devices and resolves padding. Raises before any work."""
    hyp_ids = _check_ids("hyp_ids", hyp_ids, (2,))
    ref_ids = _check_ids("ref_ids", ref_ids, (2, 3))
    batch = hyp_ids.shape[0]
    if ref_ids.shape[0] != batch:
        raise ValueError(
            f"hyp_ids has {batch} rows but ref_ids has {ref_ids.shape[0]}; "
            "give one reference set per hypothesis"
        )
    if ref_ids.device != hyp_ids.device:
        raise ValueError(
            f"hyp_ids is on {hyp_ids.device} but ref_ids is on {ref_ids.device}; "
            "move both to one device"
        )
    if pad_id is not None and (isinstance(pad_id, bool) or not isinstance(pad_id, int)):
        raise TypeError(f"pad_id must be an int or None, got {type(pad_id).__name__}")
    hyp_lens = _check_lengths("hyp_lens", hyp_lens, (batch,), hyp_ids)
    ref_lens = _check_lengths("ref_lens", ref_lens, tuple(ref_ids.shape[:-1]), ref_ids)
    hyp_given, ref_given = hyp_lens is not None, ref_lens is not None
    hyp_ids, hyp_lens = _lengths_or_strip(hyp_ids, hyp_lens, pad_id)
    ref_ids, ref_lens = _lengths_or_strip(ref_ids, ref_lens, pad_id)
    if validate:
        _validate_values("hyp_ids", hyp_ids, hyp_lens, "hyp_lens" if hyp_given else None)
        _validate_values("ref_ids", ref_ids, ref_lens, "ref_lens" if ref_given else None)
    if ref_ids.dim() == 2:
        ref_ids, ref_lens = ref_ids.unsqueeze(1), ref_lens.unsqueeze(1)
    return _Batch(hyp_ids, hyp_lens, ref_ids, ref_lens)


# --------------------------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------------------------


def _closest_ref_len(hyp_lens: Tensor, ref_lens: Tensor, max_ref_len: int) -> Tensor:
    """Closest reference length, ties to the shorter one (NLTK and sacrebleu agree).

    Args:
        hyp_lens: ``[B]`` int64.
        ref_lens: ``[B, R]`` int64, 0 = absent slot, at most ``max_ref_len``.

    Returns:
        ``[B]`` int64; 0 where every slot is absent (scored as one empty reference).
    """
    # Lexicographic (distance, length) as one integer; lengths are < span. Absent slots last.
    span = max_ref_len + 1
    key = (ref_lens - hyp_lens.unsqueeze(-1)).abs() * span + ref_lens
    absent = torch.iinfo(torch.long).max
    key = torch.where(ref_lens > 0, key, absent)
    best = torch.cat([key, torch.full_like(hyp_lens, absent).unsqueeze(-1)], dim=-1).amin(dim=-1)
    return torch.where(best == absent, 0, best % span)


def _clipped_matches(batch: _Batch, max_order: int) -> Tensor:
    """Clipped n-gram matches per sentence and order, ``[B, N]`` int64.

    For every n-gram of the hypothesis: ``min(count in hypothesis, max count in one reference)``,
    summed per order. Memory is a few ``[B * (1 + R) * L]`` buffers, never ``[B, #n-grams]``.
    """
    hyp_ids, ref_ids = batch.hyp_ids, batch.ref_ids
    batch_size, num_refs, ref_len = ref_ids.shape
    device = hyp_ids.device
    width = max(hyp_ids.shape[1], ref_len)
    # One pool of rows: hypotheses first, then the references of sentence 0, 1, ...
    pool = torch.cat(
        [
            torch.nn.functional.pad(hyp_ids.long(), (0, width - hyp_ids.shape[1])),
            torch.nn.functional.pad(ref_ids.long(), (0, width - ref_len)).view(
                batch_size * num_refs, width
            ),
        ]
    )  # [B + B*R, W]
    lengths = torch.cat([batch.hyp_lens, batch.ref_lens.reshape(-1)])
    sentence = torch.arange(batch_size, device=device)
    groups = torch.cat([sentence, sentence.unsqueeze(1).expand(batch_size, num_refs).reshape(-1)])
    # Slot 0 counts hypotheses, slot 1 + r the r-th reference of each sentence.
    slots = torch.cat(
        [
            torch.zeros(batch_size, dtype=torch.long, device=device),
            torch.arange(1, num_refs + 1, device=device).repeat(batch_size),
        ]
    )
    hyp_positions = batch_size * width
    hyp_sentence = sentence.unsqueeze(1).expand(batch_size, width).reshape(-1)  # [B*W]
    correct = torch.zeros(max_order, batch_size + 1, dtype=torch.int32, device=device)
    for order, ids in enumerate(iter_ngram_ids(pool, lengths, groups, max_order)):
        counts = count_ngrams(ids, slots, 1 + num_refs)  # [P, 1 + R]
        # The clip of each n-gram: its count in the hypothesis, at most its count in one reference.
        ref_max = counts[:, 1:].amax(dim=1) if num_refs else torch.zeros_like(counts[:, 0])
        clipped = torch.minimum(counts[:, 0], ref_max)
        # Each n-gram ID belongs to one sentence (IDs are per group); sum its clip there. IDs
        # that no hypothesis has are clipped to 0 and left with the spill owner B.
        hyp_ngram = ids.view(-1)[:hyp_positions]
        owner = torch.full((clipped.shape[0] + 1,), batch_size, dtype=torch.long, device=device)
        owner.scatter_(0, torch.where(hyp_ngram >= 0, hyp_ngram, clipped.shape[0]), hyp_sentence)
        correct[order].index_add_(0, owner[:-1], clipped)
    return correct[:, :batch_size].T.long()


def _stats_from_batch(batch: _Batch, max_order: int, compat: Compat) -> Tensor:
    correct = _clipped_matches(batch, max_order)  # [B, N]
    hyp_lens = batch.hyp_lens
    orders = torch.arange(1, max_order + 1, device=hyp_lens.device)
    # NLTK divides each sentence's matches by max(1, #n-grams); sacrebleu by #n-grams.
    total = (hyp_lens.unsqueeze(-1) - orders + 1).clamp(min=1 if compat == "nltk" else 0)
    ref_len = _closest_ref_len(hyp_lens, batch.ref_lens, batch.ref_ids.shape[-1])
    return torch.cat([hyp_lens.unsqueeze(-1), ref_len.unsqueeze(-1), correct, total], dim=-1)


def bleu_stats(
    hyp_ids: Tensor,
    ref_ids: Tensor,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | None = None,
    max_ngram_order: int = 4,
    compat: Compat = "sacrebleu",
    validate: bool = True,
) -> Tensor:
    """BLEU sufficient statistics per sentence.

    Statistics add over any split of the batch: corpus BLEU is the formula on ``stats.sum(0)``
    (see :func:`bleu_from_stats`).

    Args:
        hyp_ids: ``[B, L]`` integer token IDs of the hypotheses.
        ref_ids: ``[B, L']`` (one reference each) or ``[B, R, L']`` (``R`` reference slots).
        hyp_lens: ``[B]`` lengths of the hypotheses; positions at or past them are ignored.
        ref_lens: ``[B]`` or ``[B, R]``; 0 means "no reference in this slot". A sentence whose
            slots are all empty is scored against one empty reference.
        pad_id: for a tensor without lengths, every token equal to ``pad_id`` is removed,
            wherever it is. No default: ID 0 is a real token in GPT-2, cl100k and o200k. With
            neither lengths nor ``pad_id`` every position counts.
        max_ngram_order: highest n-gram order ``N``.
        compat: ``"sacrebleu"`` counts ``total_n = max(0, len - n + 1)``; ``"nltk"`` counts
            ``max(1, len - n + 1)`` per sentence, as NLTK's corpus BLEU sums them.
        validate: check lengths and IDs (one host sync); ``False`` skips it.

    Returns:
        ``[B, 2 + 2N]`` int64: ``hyp_len, ref_len, correct_1..N, total_1..N`` where ``ref_len``
        is the closest reference length (ties go to the shorter reference).

    Raises:
        TypeError, ValueError: on a wrong dtype, shape, device, length or negative ID.

    Example:
        >>> hyp = torch.tensor([[5, 6, 7, 8]])
        >>> bleu_stats(hyp, hyp).tolist()
        [[4, 4, 4, 3, 2, 1, 4, 3, 2, 1]]
    """
    make_config(
        max_ngram_order=max_ngram_order,
        weights=None,
        smooth_method="exp" if compat == "sacrebleu" else "method0",
        smooth_value=None,
        effective_order=False,
        compat=compat,
        auto_reweigh=False,
        dtype=torch.float32,
    )
    batch = format_batch(
        hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, pad_id=pad_id, validate=validate
    )
    return _stats_from_batch(batch, max_ngram_order, compat)


# --------------------------------------------------------------------------------------------
# Scores from statistics
# --------------------------------------------------------------------------------------------


def _sacrebleu_score(
    hyp_len: Tensor, ref_len: Tensor, correct: Tensor, total: Tensor, config: BleuConfig
) -> Tensor:
    """``sacrebleu.metrics.BLEU.compute_bleu`` over leading dims; inputs in ``config.dtype``."""
    num_orders = correct.shape[-1]
    any_match = (correct > 0).any(dim=-1)
    if config.method == "add-k":
        k = config.smooth_value
        bump = torch.zeros(num_orders, dtype=correct.dtype, device=correct.device)
        bump[1:] = k
        correct, total = correct + bump, total + bump
    # sacrebleu stops at the first order without n-grams; later orders keep precision 0.
    alive = torch.cumprod(total != 0, dim=-1).bool()
    safe_total = torch.where(total == 0, 1, total)
    precision = correct / safe_total
    no_match = alive & (correct == 0)
    if config.method == "exp":
        halvings = torch.cumsum(no_match, dim=-1).to(correct.dtype)
        precision = torch.where(no_match, 1.0 / (2.0**halvings * safe_total), precision)
    elif config.method == "floor":
        precision = torch.where(no_match, config.smooth_value / safe_total, precision)
    precision = torch.where(alive, precision, 0.0)
    log_precision = torch.where(
        precision > 0, torch.log(torch.where(precision > 0, precision, 1.0)), _SACREBLEU_LOG_ZERO
    )
    if config.effective_order:
        eff_order = alive.sum(dim=-1).clamp(min=1)
    else:
        eff_order = torch.full_like(hyp_len, num_orders, dtype=torch.long)
    orders = torch.arange(num_orders, device=correct.device)
    used = orders < eff_order.unsqueeze(-1)
    mean_log = torch.where(used, log_precision, 0.0).sum(dim=-1) / eff_order.to(correct.dtype)
    brevity = torch.where(
        hyp_len < ref_len,
        torch.where(hyp_len > 0, torch.exp(1 - ref_len / hyp_len.clamp(min=1)), 0.0),
        1.0,
    )
    return torch.where(any_match, brevity * torch.exp(mean_log), 0.0)


def _nltk_score(
    hyp_len: Tensor,
    ref_len: Tensor,
    correct: Tensor,
    total: Tensor,
    config: BleuConfig,
    last: tuple[Tensor, Tensor, Tensor],
) -> Tensor:
    """``nltk.translate.bleu_score.corpus_bleu`` from statistics over leading dims.

    ``last`` is ``(hyp_len, correct_5, total_5)`` of the sentence NLTK's methods 5-7 read: the
    sentence itself at sentence level, the last sentence at corpus level.
    """
    num_orders = correct.shape[-1]
    method = config.method
    total = total.clamp(min=1)
    zero = correct == 0
    precision = correct / total
    log_floor: Tensor | None = None
    if method == "method0":
        log_floor = zero
    elif method == "method1":
        precision = torch.where(zero, config.smooth_value / total, precision)
    elif method == "method2":
        add_one = torch.ones(num_orders, dtype=correct.dtype, device=correct.device)
        add_one[0] = 0
        precision = (correct + add_one) / (total + add_one)
    elif method == "method3":
        halvings = torch.cumsum(zero, dim=-1).to(correct.dtype)
        precision = torch.where(zero, 1.0 / (2.0**halvings * total), precision)
    if method in ("method4", "method7"):
        precision = _nltk_method4(precision, zero, total, hyp_len, config.smooth_value)
    if method in ("method5", "method7"):
        last_precision = last[1] / last[2].clamp(min=1)
        precision = _nltk_method5(precision, last_precision)
    invalid = torch.zeros_like(hyp_len, dtype=torch.bool)
    if method == "method6":
        precision = _nltk_method6(precision, correct, last[0], config.smooth_value)
        invalid = correct[..., 2] == 0

    positive = precision > 0
    log_precision = torch.where(positive, torch.log(torch.where(positive, precision, 1.0)), 0.0)
    if log_floor is not None:
        log_precision = torch.where(log_floor, _NLTK_LOG_ZERO, log_precision)
    weights = _nltk_weights(hyp_len, num_orders, config)
    brevity = torch.where(
        hyp_len > ref_len,
        1.0,
        torch.where(hyp_len == 0, 0.0, torch.exp(1 - ref_len / hyp_len.clamp(min=1))),
    )
    score = brevity * torch.exp((weights * log_precision).sum(dim=-1))
    no_unigram = correct[..., 0] == 0
    score = torch.where(invalid, torch.nan, score)
    return torch.where(no_unigram, 0.0, score)


def _nltk_method4(
    precision: Tensor, zero: Tensor, total: Tensor, hyp_len: Tensor, k: float
) -> Tensor:
    """Chen & Cherry method 4: a zero precision becomes ``ln(len) / (2**i * k * total)``."""
    applies = zero & (hyp_len > 1).unsqueeze(-1)
    halvings = torch.cumsum(applies, dim=-1).to(precision.dtype)
    log_len = torch.log(hyp_len.clamp(min=1).to(precision.dtype)).unsqueeze(-1)
    smoothed = 1.0 / (2.0**halvings * k / log_len.where(log_len > 0, 1.0)) / total
    return torch.where(applies, smoothed, precision)


def _nltk_method5(precision: Tensor, next_after_last: Tensor) -> Tensor:
    """Chen & Cherry method 5: average of the n-1, n and n+1 precisions, left to right."""
    # The order after the last is always the 5-gram precision (NLTK's hard-coded order 5).
    following = torch.cat([precision[..., 1:], next_after_last.unsqueeze(-1)], dim=-1)
    smoothed = []
    previous = precision[..., 0] + 1
    for order in range(precision.shape[-1]):
        previous = (previous + precision[..., order] + following[..., order]) / 3
        smoothed.append(previous)
    return torch.stack(smoothed, dim=-1)


def _nltk_method6(precision: Tensor, correct: Tensor, hyp_len: Tensor, alpha: float) -> Tensor:
    """Chen & Cherry method 6: interpolate with a geometric prior from the two lower orders."""
    columns = list(precision.unbind(dim=-1))
    for order in range(2, len(columns)):
        before, prev = columns[order - 2], columns[order - 1]
        prior = torch.where(before == 0, 0.0, prev**2 / torch.where(before == 0, 1.0, before))
        # NLTK counts the n-grams of the (last) hypothesis itself, not the clamped total.
        count = (hyp_len - order).clamp(min=0).to(precision.dtype)
        columns[order] = (correct[..., order] + alpha * prior) / (count + alpha)
    return torch.stack(columns, dim=-1)


def _nltk_weights(hyp_len: Tensor, num_orders: int, config: BleuConfig) -> Tensor:
    """``[..., N]`` weights, with NLTK's ``auto_reweigh`` for short hypotheses."""
    device, dtype = hyp_len.device, config.dtype
    if config.weights is None:
        base = torch.full((num_orders,), 1.0 / num_orders, dtype=dtype, device=device)
    else:
        # A blocking host-to-device copy would synchronise; this one does not.
        base = torch.tensor(config.weights, dtype=dtype).to(device, non_blocking=True)
    base = base.expand(*hyp_len.shape, num_orders)
    # NLTK reweighs only when the weights are exactly its default (0.25,) * 4.
    is_default = (config.weights is None and num_orders == 4) or config.weights == (0.25,) * 4
    if not (config.auto_reweigh and is_default):
        return base
    orders = torch.arange(num_orders, device=device)
    short = hyp_len.clamp(min=1).unsqueeze(-1).to(dtype)
    reweighed = torch.where(orders < short, 1.0 / short, 0.0)
    return torch.where((hyp_len < 4).unsqueeze(-1), reweighed, base)


def _score(stats: Tensor, last: Tensor, config: BleuConfig) -> Tensor:
    """Scores rows of ``[..., 2 + 2N']`` statistics (``N' >= N``) under ``config``.

    ``last`` has the shape of ``stats``: the statistics NLTK's methods 5-7 read for each row.
    """
    num_orders = config.max_ngram_order
    stats_orders = (stats.shape[-1] - 2) // 2
    values = stats.to(config.dtype)
    hyp_len, ref_len = values[..., 0], values[..., 1]
    correct = values[..., 2 : 2 + num_orders]
    total = values[..., 2 + stats_orders : 2 + stats_orders + num_orders]
    if config.compat == "sacrebleu":
        return _sacrebleu_score(hyp_len, ref_len, correct, total, config)
    last_values = last.to(config.dtype)
    order5 = min(5, stats_orders) - 1
    last_info = (
        last_values[..., 0],
        last_values[..., 2 + order5],
        last_values[..., 2 + stats_orders + order5],
    )
    return _nltk_score(hyp_len, ref_len, correct, total, config, last_info)


def _check_stats(stats: object, config: BleuConfig) -> Tensor:
    if not isinstance(stats, Tensor):
        raise TypeError(f"stats must be a torch.Tensor, got {type(stats).__name__}")
    if stats.dtype == torch.bool or stats.is_floating_point() or stats.is_complex():
        raise TypeError(f"stats must be integer counts from bleu_stats, got dtype {stats.dtype}")
    width = stats.shape[-1] if stats.dim() else 0
    if width < 2 + 2 * config.stats_order or width % 2:
        raise ValueError(
            f"stats must be [..., 2 + 2N] with N >= {config.stats_order}, got shape "
            f"{list(stats.shape)}; compute them with max_ngram_order={config.stats_order}"
            + (" (NLTK's methods 5 and 7 read 5-gram precision)" if config.needs_order5 else "")
        )
    return stats


def bleu_from_stats(
    stats: Tensor,
    *,
    last_stats: Tensor | None = None,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
    compat: Compat = "sacrebleu",
    auto_reweigh: bool = False,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """BLEU from sufficient statistics, one score per row.

    ``bleu_from_stats(bleu_stats(h, r))`` is ``sentence_bleu(h, r)``, and
    ``bleu_from_stats(stats.sum(0), last_stats=stats[-1])`` is ``corpus_bleu(h, r)``.

    Args:
        stats: ``[..., 2 + 2N']`` int64 from :func:`bleu_stats` with ``N' >= max_ngram_order``
            and the same ``compat`` (``N' >= 5`` for NLTK's methods 5 and 7).
        last_stats: same shape as ``stats``: the sentence NLTK's methods 5-7 read (its own row
            at sentence level, the corpus's last sentence at corpus level). Default: ``stats``.
        max_ngram_order, weights, smooth_method, smooth_value, effective_order, compat,
            auto_reweigh, dtype: as in :func:`sentence_bleu`.

    Returns:
        ``[...]`` scores in 0..1 of ``dtype``.
    """
    config = make_config(
        max_ngram_order=max_ngram_order,
        weights=weights,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        compat=compat,
        auto_reweigh=auto_reweigh,
        dtype=dtype,
    )
    stats = _check_stats(stats, config)
    if last_stats is None:
        last_stats = stats
    elif _check_stats(last_stats, config).shape[-1] != stats.shape[-1]:
        raise ValueError(
            f"last_stats has {last_stats.shape[-1]} columns but stats has {stats.shape[-1]}"
        )
    return _score(stats, last_stats.expand_as(stats), config)


def _method6_check(scores: Tensor, what: str) -> None:
    """NLTK's method6 asserts trigram matches; we raise instead of returning NaN."""
    invalid = scores.isnan()
    if bool(invalid.any()):
        row = int(invalid.nonzero()[0, 0]) if invalid.dim() else None
        where = f" (first at row {row})" if row is not None else ""
        raise ValueError(
            f"NLTK's method6 is undefined without trigram matches{where} in the {what}; "
            "choose another smooth_method, or pass validate=False to get NaN there"
        )


_SHARED_DOC = """
    Args:
        hyp_ids: ``[B, L]`` integer token IDs of the hypotheses.
        ref_ids: ``[B, L']`` (one reference each) or ``[B, R, L']`` (``R`` reference slots).
        hyp_lens: ``[B]`` hypothesis lengths; positions at or past them are ignored.
        ref_lens: ``[B]`` or ``[B, R]``; 0 means "no reference in this slot". A sentence whose
            slots are all empty is scored against one empty reference.
        pad_id: for a tensor without lengths, every token equal to ``pad_id`` is removed,
            wherever it is. No default: ID 0 is a real token in GPT-2, cl100k and o200k.
        max_ngram_order: highest n-gram order ``N``.
        weights: NLTK's per-order weights (``compat="nltk"`` only); default uniform ``1/N``.
        smooth_method: sacrebleu's ``"none"``, ``"floor"``, ``"add-k"``, ``"exp"``; with
            ``compat="nltk"`` also ``"method0"`` .. ``"method7"`` (the sacrebleu names are
            NLTK's methods 0-3).
        smooth_value: sacrebleu's floor / k; NLTK's ``epsilon`` (method1), ``k`` (methods 4
            and 7) or ``alpha`` (method6). ``None`` takes the library's default.
        effective_order: sacrebleu's option: drop orders without any n-gram.
        compat: ``"sacrebleu"`` or ``"nltk"``: whose definition to match exactly.
        auto_reweigh: NLTK's option: uniform weights over ``len(hyp)`` orders when the
            hypothesis is shorter than 4 and the weights are NLTK's default.
        dtype: floating dtype of the result and of the arithmetic.
        validate: check lengths and IDs (host sync); ``False`` skips it. With NLTK's method6
            it also turns the error for missing trigram matches into NaN.
"""


def sentence_bleu(
    hyp_ids: Tensor,
    ref_ids: Tensor,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | None = None,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
    compat: Compat = "sacrebleu",
    auto_reweigh: bool = False,
    dtype: torch.dtype = torch.float32,
    validate: bool = True,
) -> Tensor:
    config = make_config(
        max_ngram_order=max_ngram_order,
        weights=weights,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        compat=compat,
        auto_reweigh=auto_reweigh,
        dtype=dtype,
    )
    batch = format_batch(
        hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, pad_id=pad_id, validate=validate
    )
    stats = _stats_from_batch(batch, config.stats_order, config.compat)
    scores = _score(stats, stats, config)
    if validate and config.method == "method6":
        _method6_check(scores, "hypothesis")
    return scores


def corpus_bleu(
    hyp_ids: Tensor,
    ref_ids: Tensor,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | None = None,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
    compat: Compat = "sacrebleu",
    auto_reweigh: bool = False,
    dtype: torch.dtype = torch.float32,
    validate: bool = True,
) -> Tensor:
    config = make_config(
        max_ngram_order=max_ngram_order,
        weights=weights,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        compat=compat,
        auto_reweigh=auto_reweigh,
        dtype=dtype,
    )
    batch = format_batch(
        hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, pad_id=pad_id, validate=validate
    )
    stats = _stats_from_batch(batch, config.stats_order, config.compat)
    score = _score(stats.sum(0), _last_row(stats), config)
    if validate and config.method == "method6":
        _method6_check(score, "corpus")
    return score


def _last_row(stats: Tensor) -> Tensor:
    """The last sentence's statistics (zeros for an empty batch)."""
    if stats.shape[0] == 0:
        return stats.new_zeros(stats.shape[1:])
    return stats[-1]


sentence_bleu.__doc__ = (
    """Per-sentence BLEU of a batch, in 0..1 (an RL reward per sample).

    Equals ``sacrebleu.metrics.BLEU(tokenize="none", ...).sentence_score`` on space-joined IDs
    divided by 100 (``compat="sacrebleu"``), or ``nltk.translate.bleu_score.sentence_bleu`` on
    ID lists with ``SmoothingFunction().<method>`` (``compat="nltk"``).
"""
    + _SHARED_DOC
    + """
    Returns:
        ``[B]`` scores of ``dtype``, in 0..1 with the default smoothing. As in the reference
        libraries, NLTK's methods 4, 5 and 7 and sacrebleu's ``floor`` above 1 can exceed 1.

    Raises:
        TypeError, ValueError: on bad inputs or options, before any work.

    Example:
        >>> hyp = torch.tensor([[5, 6, 7, 8], [5, 6, 9, 9]])
        >>> ref = torch.tensor([[5, 6, 7, 8], [5, 6, 7, 8]])
        >>> sentence_bleu(hyp, ref).tolist()[0]
        1.0
"""
)

corpus_bleu.__doc__ = (
    """Corpus BLEU of a batch, in 0..1: the BLEU formula on summed statistics.

    Equals ``sacrebleu.metrics.BLEU(tokenize="none", ...).corpus_score`` divided by 100
    (``compat="sacrebleu"``) or ``nltk.translate.bleu_score.corpus_bleu`` (``compat="nltk"``,
    including its use of the last sentence in methods 5-7).
"""
    + _SHARED_DOC
    + """
    Returns:
        0-d tensor of ``dtype``.

    Raises:
        TypeError, ValueError: on bad inputs or options, before any work.
"""
)
