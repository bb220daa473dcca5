"""BLEU's first half: check and format a batch, then reduce it to sufficient statistics.

Each sentence becomes ``[hyp_len, ref_len, correct_1..N, total_1..N]`` (sacrebleu's vector).
Statistics add over any split of the batch, so corpus BLEU, the :class:`~tensortext.bleu.BLEU`
accumulator and distributed evaluation all score a sum of rows (see :mod:`tensortext.bleu.score`).

:func:`format_batch` checks types, shapes and devices before any work (one exception rule, see
:mod:`tensortext._checks`) and, with ``validate=True``, the values: one host sync. Counting has
no Python loop over the batch and no host sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from tensortext._checks import (
    check_integer_tensor,
    check_lengths,
    check_pad_ids,
    check_same_device,
)
from tensortext.bleu.config import BleuConfig
from tensortext.ngrams import count_ngrams, iter_ngram_ids, strip_padding
from tensortext.padded import MISSING_REF, Padded

__all__ = ["MISSING_REF", "Batch", "check_values", "compute_stats", "format_batch", "last_row"]


_SHAPES = {2: "[B, L]", 3: "[B, R, L]"}


@dataclass(frozen=True)
class Batch:
    """A batch formatted for counting: hypotheses and references with resolved lengths."""

    hyp_ids: Tensor  # [B, L]
    hyp_lens: Tensor  # [B] int64
    ref_ids: Tensor  # [B, R, L']
    ref_lens: Tensor  # [B, R] int64: 0 = an empty reference, MISSING_REF = no reference here


def _check_ids(name: str, ids: object, dims: tuple[int, ...]) -> Tensor:
    shapes = " or ".join(_SHAPES[d] for d in dims)
    tensor = check_integer_tensor(name, ids, shape=shapes)
    if tensor.dim() not in dims:
        raise ValueError(f"{name} must be {shapes}, got shape {list(tensor.shape)}")
    return tensor


def _unpack(
    name: str, ids: Tensor | Padded, lens_name: str, lengths: Tensor | None
) -> tuple[object, Tensor | None]:
    """``(ids, lengths)`` of a tensor with optional lengths, or of a :class:`Padded`."""
    if not isinstance(ids, Padded):
        return ids, lengths
    if lengths is not None:
        raise ValueError(
            f"{name} is a Padded, which carries its lengths; pass {lens_name}=None (or the "
            f"tensor {name}.ids with {lens_name})"
        )
    return ids.ids, ids.lengths


def _lengths_or_strip(
    ids: Tensor, lengths: Tensor | None, pad_ids: tuple[int, ...] | None
) -> tuple[Tensor, Tensor]:
    """Returns ``(ids, lengths)`` with padding resolved: given lengths win, else ``pad_ids``."""
    if lengths is not None:
        return ids, lengths.long()
    if pad_ids is not None:
        return strip_padding(ids, pad_ids)
    full = torch.full(ids.shape[:-1], ids.shape[-1], dtype=torch.long, device=ids.device)
    return ids, full


def check_values(
    name: str, ids: Tensor, lengths: Tensor, lens_name: str | None, *, missing: bool = False
) -> None:
    """Host-syncing checks: lengths within ``0..L`` and no negative ID inside a sequence.

    Args:
        name: the argument ``ids`` came as (for messages).
        ids: ``[..., L]`` integer token IDs.
        lengths: ``[...]`` lengths.
        lens_name: the argument ``lengths`` came as; ``None`` when they were derived (not
            checked then).
        missing: :data:`MISSING_REF` is a valid length too (reference slots).

    Raises:
        ValueError: naming the first bad entry.
    """
    max_len = ids.shape[-1]
    if lens_name is not None and lengths.numel() > 0:
        lowest = MISSING_REF if missing else 0
        bad = (lengths < lowest) | (lengths > max_len)
        if bool(bad.any()):  # host sync
            where = tuple(int(i) for i in bad.nonzero()[0])
            hint = f"; {MISSING_REF} marks a slot without a reference" if missing else ""
            raise ValueError(
                f"{lens_name}{list(where)} = {int(lengths[where])} is outside {lowest}..{max_len} "
                f"(the padded length of {name}){hint}"
            )
    inside = torch.arange(max_len, device=ids.device) < lengths.unsqueeze(-1)
    negative = (ids < 0) & inside
    if bool(negative.any()):  # host sync
        where = tuple(int(i) for i in negative.nonzero()[0])
        raise ValueError(
            f"{name}{list(where)} = {int(ids[where])} is a negative token ID inside the sequence; "
            "if it is padding, pass pad_id=<that value> or the lengths"
        )


def format_batch(
    hyp_ids: Tensor | Padded,
    ref_ids: Tensor | Padded,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    validate: bool = True,
) -> Batch:
    """Checks shapes, dtypes and devices and resolves padding, before any work.

    Args:
        hyp_ids: ``[B, L]`` integer IDs, or a :class:`~tensortext.padded.Padded` (its lengths
            are then the hypothesis lengths).
        ref_ids: ``[B, L']`` or ``[B, R, L']`` integer IDs, or a ``Padded`` of either.
        hyp_lens: ``[B]`` lengths, or ``None``.
        ref_lens: ``[B]`` or ``[B, R]`` lengths (:data:`MISSING_REF` for a slot without a
            reference), or ``None``.
        pad_id: with no lengths, every token equal to it (or to one of several) is removed; a
            slot of ``[B, R, L']`` references left empty is missing.
        validate: check the values too (one host sync).

    Returns:
        A :class:`Batch` with references as ``[B, R, L']`` and int64 lengths.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape, device or value.
    """
    raw_hyp, hyp_lens = _unpack("hyp_ids", hyp_ids, "hyp_lens", hyp_lens)
    raw_ref, ref_lens = _unpack("ref_ids", ref_ids, "ref_lens", ref_lens)
    hyps = _check_ids("hyp_ids", raw_hyp, (2,))
    refs = _check_ids("ref_ids", raw_ref, (2, 3))
    batch = hyps.shape[0]
    if refs.shape[0] != batch:
        raise ValueError(
            f"hyp_ids has {batch} rows but ref_ids has {refs.shape[0]}; "
            "give one reference set per hypothesis"
        )
    check_same_device("ref_ids", refs, hyps.device, "hyp_ids")
    pad_ids = None
    if pad_id is not None:
        pad_ids = check_pad_ids(pad_id, [("hyp_ids", hyps), ("ref_ids", refs)])
    if hyp_lens is not None:
        hyp_lens = check_lengths("hyp_lens", hyp_lens, (batch,), hyps.device, "hyp_ids")
    if ref_lens is not None:
        ref_lens = check_lengths("ref_lens", ref_lens, refs.shape[:-1], refs.device, "ref_ids")
    hyp_given, ref_given = hyp_lens is not None, ref_lens is not None
    hyps, hyp_lens = _lengths_or_strip(hyps, hyp_lens, pad_ids)
    refs, ref_lens = _lengths_or_strip(refs, ref_lens, pad_ids)
    if not ref_given and pad_ids is not None and refs.dim() == 3:
        # Slots of [B, R, L'] references that are all padding are unused slots, not empty
        # references (pass ref_lens to give an empty reference).
        ref_lens = ref_lens.masked_fill(ref_lens == 0, MISSING_REF)
    if validate:
        check_values("hyp_ids", hyps, hyp_lens, "hyp_lens" if hyp_given else None)
        check_values("ref_ids", refs, ref_lens, "ref_lens" if ref_given else None, missing=True)
    if refs.dim() == 2:
        refs, ref_lens = refs.unsqueeze(1), ref_lens.unsqueeze(1)
    return Batch(hyps, hyp_lens, refs, ref_lens)


def _closest_ref_len(hyp_lens: Tensor, ref_lens: Tensor, max_ref_len: int) -> Tensor:
    """Closest reference length, ties to the shorter one (NLTK and sacrebleu agree).

    Args:
        hyp_lens: ``[B]`` int64.
        ref_lens: ``[B, R]`` int64, at most ``max_ref_len``; :data:`MISSING_REF` (or any
            negative value) = no reference in this slot. An empty reference (0) counts.

    Returns:
        ``[B]`` int64; 0 where every slot is missing (scored as one empty reference).
    """
    # Lexicographic (distance, length) as one integer; lengths are < span. Missing slots last.
    span = max_ref_len + 1
    key = (ref_lens - hyp_lens.unsqueeze(-1)).abs() * span + ref_lens
    absent = torch.iinfo(torch.long).max
    key = torch.where(ref_lens >= 0, key, absent)
    best = torch.cat([key, torch.full_like(hyp_lens, absent).unsqueeze(-1)], dim=-1).amin(dim=-1)
    return torch.where(best == absent, 0, best % span)


def _pool(batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """All sequences as one ``[B + B*R, W]`` pool: hypotheses first, then the references of
    sentence 0, 1, ...; with their lengths, sentence (group) and slot (0 = hypothesis, 1 + r =
    reference r), each ``[B + B*R]``."""
    hyp_ids, ref_ids = batch.hyp_ids, batch.ref_ids
    batch_size, num_refs, ref_len = ref_ids.shape
    device = hyp_ids.device
    width = max(hyp_ids.shape[1], ref_len)
    pool = torch.cat(
        [
            torch.nn.functional.pad(hyp_ids.long(), (0, width - hyp_ids.shape[1])),
            torch.nn.functional.pad(ref_ids.long(), (0, width - ref_len)).view(
                batch_size * num_refs, width
            ),
        ]
    )
    # A missing slot holds no n-grams, like an empty reference.
    lengths = torch.cat([batch.hyp_lens, batch.ref_lens.reshape(-1).clamp(min=0)])
    sentence = torch.arange(batch_size, device=device)
    groups = torch.cat([sentence, sentence.unsqueeze(1).expand(batch_size, num_refs).reshape(-1)])
    slots = torch.cat(
        [
            torch.zeros(batch_size, dtype=torch.long, device=device),
            torch.arange(1, num_refs + 1, device=device).repeat(batch_size),
        ]
    )
    return pool, lengths, groups, slots


def _clipped_matches(batch: Batch, max_ngram_order: int) -> Tensor:
    """Clipped n-gram matches per sentence and order, ``[B, N]`` int64.

    For every n-gram of the hypothesis: ``min(count in hypothesis, max count in one reference)``,
    summed per order. Memory is a few ``[B * (1 + R) * L]`` buffers, never ``[B, #n-grams]``.
    """
    batch_size, num_refs, _ = batch.ref_ids.shape
    device = batch.hyp_ids.device
    pool, lengths, groups, slots = _pool(batch)
    width = pool.shape[1]
    hyp_positions = batch_size * width
    sentence = torch.arange(batch_size, device=device)
    hyp_sentence = sentence.unsqueeze(1).expand(batch_size, width).reshape(-1)  # [B*W]
    correct = torch.zeros(max_ngram_order, batch_size + 1, dtype=torch.int32, device=device)
    # Orders above the padded width have no n-grams, so no matches: their rows stay 0 unvisited.
    orders = min(max_ngram_order, width)
    for order, ids in enumerate(iter_ngram_ids(pool, lengths, groups, orders)):
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


def compute_stats(batch: Batch, config: BleuConfig) -> Tensor:
    """The statistics half of the package's one stats -> score pair.

    Args:
        batch: from :func:`format_batch`.
        config: ``config.stats_order`` orders are counted (5 for NLTK's methods 5 and 7), and
            ``config.compat`` decides the totals.

    Returns:
        ``[B, 2 + 2N]`` int64 ``hyp_len, ref_len, correct_1..N, total_1..N``.
    """
    max_order = config.stats_order
    correct = _clipped_matches(batch, max_order)  # [B, N]
    hyp_lens = batch.hyp_lens
    orders = torch.arange(1, max_order + 1, device=hyp_lens.device)
    # NLTK divides each sentence's matches by max(1, #n-grams); sacrebleu by #n-grams.
    minimum = 1 if config.compat == "nltk" else 0
    total = (hyp_lens.unsqueeze(-1) - orders + 1).clamp(min=minimum)
    ref_len = _closest_ref_len(hyp_lens, batch.ref_lens, batch.ref_ids.shape[-1])
    return torch.cat([hyp_lens.unsqueeze(-1), ref_len.unsqueeze(-1), correct, total], dim=-1)


def last_row(stats: Tensor) -> Tensor:
    """The last sentence's statistics of ``[B, 2 + 2N]`` (zeros for an empty batch)."""
    if stats.shape[0] == 0:
        return stats.new_zeros(stats.shape[1:])
    return stats[-1]
