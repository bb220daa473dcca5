"""Shared n-gram core: exact compact n-gram IDs and their counts per slot, for padded ID tensors.

Used by BLEU (clipped n-gram matches) and by LMBR (n-gram posteriors). Everything is fixed-shape
tensor work with no host synchronisation, so it runs the same on CPU and CUDA.

The trick that keeps memory linear and avoids both ``V**n`` tables and ``unique(dim=0)``: n-grams
get *rolling compact IDs*. Order 1 ranks the tokens; order ``n`` ranks the pairs
``(id_{n-1} at i, token rank at i+n-1)`` packed into one int64. Ranks are dense (``0..P-1`` for
``P`` positions), so every packed key stays below ``P**2`` and the work per order is one 1-D sort
of ``P`` integers plus a few element-wise passes.
"""

from __future__ import annotations

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)

# isort: split
from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

__all__ = [
    "compact_ids",
    "count_ngrams",
    "first_occurrences",
    "iter_ngram_ids",
    "ngram_ids",
    "strip_padding",
]


def compact_ids(keys: Tensor) -> Tensor:
    """Dense ranks of integer keys: equal keys get equal IDs, IDs are ``0..P-1``.

    Unlike ``torch.unique(return_inverse=True)`` the output shape does not depend on the data,
    so there is no host synchronisation on CUDA.

    Args:
        keys: ``[P]`` integer tensor.

    Returns:
        ``[P]`` int64 tensor; ``ids[i] == ids[j]`` iff ``keys[i] == keys[j]``, and ids are ordered
        like the keys.
    """
    if keys.numel() == 0:
        return torch.zeros_like(keys, dtype=torch.long)
    order, starts_run = _sorted_runs(keys)
    rank_in_sorted = starts_run.cumsum(0).sub_(1)
    return torch.empty_like(rank_in_sorted).scatter_(0, order, rank_in_sorted)


def first_occurrences(keys: Tensor) -> Tensor:
    """Marks the first position of every distinct key, so that repeats count once.

    Args:
        keys: ``[P]`` integer tensor.

    Returns:
        ``[P]`` bool; ``True`` at the lowest index holding each distinct key.
    """
    if keys.numel() == 0:
        return torch.zeros_like(keys, dtype=torch.bool)
    order, starts_run = _sorted_runs(keys)
    return torch.empty_like(starts_run).scatter_(0, order, starts_run)


def _sorted_runs(keys: Tensor) -> tuple[Tensor, Tensor]:
    """``(order, starts_run)``: a stable sort of ``[P]`` keys and where each run of equal keys
    begins in sorted order."""
    # Stable sorts of integers use radix sort on CPU, faster than the unstable one.
    sorted_keys, order = torch.sort(keys, stable=True)
    starts_run = torch.ones_like(sorted_keys, dtype=torch.bool)
    torch.ne(sorted_keys[1:], sorted_keys[:-1], out=starts_run[1:])
    return order, starts_run


def iter_ngram_ids(
    token_ids: Tensor, lengths: Tensor, groups: Tensor, max_ngram_order: int
) -> Iterator[Tensor]:
    """Compact IDs of the n-grams starting at each position, one order at a time.

    Two positions get the same ID at order ``n`` iff their rows are in the same group and the
    ``n`` tokens starting there are equal. Grouping lets BLEU compare a hypothesis only with its
    own references, and LMBR an evidence list only with its own sentence.

    Args:
        token_ids: ``[S, L]`` integer tensor of token IDs (any values, including negative ones).
        lengths: ``[S]`` integer tensor, ``0 <= lengths <= L``; positions at or after a row's
            length are not part of the sequence.
        groups: ``[S]`` integer tensor, ``0 <= groups < S``; rows with equal groups share an ID
            space.
        max_ngram_order: highest n-gram order ``N >= 1``.

    Yields:
        For ``n = 1..N``, an ``[S, L]`` int64 tensor whose entry ``[s, i]`` is the ID of the
        n-gram ``token_ids[s, i:i+n]`` if it lies inside the row (``i + n <= lengths[s]``),
        else ``-1``. IDs are below ``S * L``. Orders above ``L`` cost nothing: they share one
        all ``-1`` tensor (do not modify yielded tensors in place).
    """
    num_rows, max_len = token_ids.shape
    num_positions = num_rows * max_len
    device = token_ids.device
    if num_positions == 0:
        for _ in range(max_ngram_order):
            yield torch.full((num_rows, max_len), -1, dtype=torch.long, device=device)
        return
    positions = torch.arange(max_len, device=device)
    # Padding tokens are ranked too: an n-gram that touches one is masked, so they never count.
    token_rank = compact_ids(token_ids.reshape(-1))
    # Order 1 ranks (group, token). Both factors are < P, so every packed key is < P**2, which
    # fits int64 for up to 3e9 positions.
    group_of_position = groups.long().unsqueeze(1).expand(num_rows, max_len).reshape(-1)
    ids = compact_ids(group_of_position.mul(num_positions).add_(token_rank))
    # Orders above the padded width L hold no n-gram in any row: one shared all -1 tensor, no
    # work (max_ngram_order may be in the thousands).
    nothing: Tensor | None = None
    for order in range(1, max_ngram_order + 1):
        if order > max_len:
            if nothing is None:
                nothing = torch.full((num_rows, max_len), -1, dtype=torch.long, device=device)
            yield nothing
            continue
        if order > 1:
            # The n-gram at i is the (n-1)-gram at i followed by the token at i+n-1. Shifting the
            # flat array crosses row ends; those positions are invalid and masked below.
            shift = min(order - 1, num_positions)  # a longer shift leaves nothing valid
            next_token = torch.nn.functional.pad(token_rank[shift:], (0, shift))
            ids = compact_ids(ids.mul(num_positions).add_(next_token))
        outside = positions + order > lengths.unsqueeze(1)  # [S, L]
        yield ids.view(num_rows, max_len).masked_fill(outside, -1)


def ngram_ids(token_ids: Tensor, lengths: Tensor, groups: Tensor, max_ngram_order: int) -> Tensor:
    """All orders of :func:`iter_ngram_ids` stacked: ``[N, S, L]`` int64, ``-1`` where no n-gram."""
    return torch.stack(list(iter_ngram_ids(token_ids, lengths, groups, max_ngram_order)))


def count_ngrams(ids: Tensor, slots: Tensor, num_slots: int) -> Tensor:
    """Occurrences of every n-gram ID in each slot (a slot is any set of rows).

    BLEU counts a hypothesis in slot 0 and reference ``r`` in slot ``1 + r``.  (LMBR needs presence
    per evidence hypothesis, with thousands of hypotheses; it uses :func:`first_occurrences`.)

    Args:
        ids: ``[S, L]`` int64 IDs from :func:`iter_ngram_ids` (``-1`` where no n-gram).
        slots: ``[S]`` int64 in ``0..K-1``: the slot each row counts into.
        num_slots: ``K``.

    Returns:
        ``[S * L, K]`` int32: entry ``[g, k]`` is how often ID ``g`` occurs in rows of slot ``k``.
    """
    num_ids = ids.numel()
    slot_of_position = slots.long().unsqueeze(1).expand_as(ids)
    # Positions without an n-gram land in one spill entry past the end.
    index = ids.mul(num_slots).add_(slot_of_position).masked_fill_(ids < 0, num_ids * num_slots)
    counts = torch.zeros((num_ids + 1) * num_slots, dtype=torch.int32, device=ids.device)
    counts.index_add_(0, index.reshape(-1), torch.ones_like(index, dtype=torch.int32).view(-1))
    return counts[: num_ids * num_slots].view(num_ids, num_slots)


def strip_padding(token_ids: Tensor, pad_id: int | Sequence[int]) -> tuple[Tensor, Tensor]:
    """Removes every padding token from each row and left-aligns what remains.

    Equivalent to ``[t for t in row if t not in pad_ids]`` per row, so left, right and inner
    padding all work.

    Args:
        token_ids: ``[..., L]`` integer tensor.
        pad_id: the padding token, or several (e.g. ``(pad_token_id, -100)`` for predictions
            and labels padded differently); each must fit ``token_ids.dtype``.

    Returns:
        ``(compacted [..., L], lengths [...])``; positions at or after a row's length hold
        the (first) ``pad_id``.
    """
    pad_ids = (pad_id,) if isinstance(pad_id, int) else tuple(pad_id)
    # One comparison per pad ID (a handful): no host-to-device copy of the IDs.
    keep = token_ids != pad_ids[0]
    for other in pad_ids[1:]:
        keep &= token_ids != other
    lengths = keep.sum(-1)
    max_len = token_ids.shape[-1]
    # Kept tokens go to their rank among kept tokens; dropped ones to a spill column L.
    target = torch.where(keep, keep.cumsum(-1) - 1, max_len)
    spill_shape = (*token_ids.shape[:-1], max_len + 1)
    compacted = torch.full(spill_shape, pad_ids[0], dtype=token_ids.dtype, device=token_ids.device)
    compacted.scatter_(-1, target, token_ids)
    return compacted[..., :max_len], lengths
