"""Shared n-gram core: exact compact n-gram IDs and per-row counts for padded ID tensors.

Used by BLEU (clipped n-gram matches) and by LMBR (n-gram posteriors). Everything is fixed-shape
tensor work with no host synchronisation, so it runs the same on CPU and CUDA.

The trick that keeps memory linear and avoids both ``V**n`` tables and ``unique(dim=0)``: n-grams
get *rolling compact IDs*. Order 1 ranks the tokens; order ``n`` ranks the pairs
``(id_{n-1} at i, token rank at i+n-1)`` packed into one int64. Ranks are dense (``0..P-1`` for
``P`` positions), so every packed key stays below ``P**2`` and the work per order is one 1-D sort
of ``P`` integers plus a few element-wise passes.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

__all__ = ["compact_ids", "iter_ngram_ids", "ngram_ids", "strip_padding"]

# Pools of up to this many positions rank with int32; larger ones with int64.
INT32_RANK_LIMIT = 2**31 - 1


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
    # Stable sorts of integers use radix sort on CPU, faster than the unstable one.
    sorted_keys, order = torch.sort(keys, stable=True)
    return _scatter_ranks(order, _run_starts(sorted_keys), torch.long)


def _run_starts(*sorted_columns: Tensor) -> Tensor:
    """``[P]`` bool: where a run of equal rows of the sorted columns begins."""
    starts = torch.zeros_like(sorted_columns[0], dtype=torch.bool)
    starts[0] = True
    for column in sorted_columns:
        starts[1:] |= column[1:] != column[:-1]
    return starts


def _scatter_ranks(order: Tensor, starts: Tensor, dtype: torch.dtype) -> Tensor:
    """Rank of each run, written back to the unsorted positions that ``order`` lists."""
    rank_in_sorted = starts.cumsum(0, dtype=dtype) - 1
    return torch.empty_like(rank_in_sorted).scatter_(0, order, rank_in_sorted)


def _rank_pairs(first: Tensor, second: Tensor, order_by_second: Tensor) -> Tensor:
    """Dense ranks of the pairs ``(first[i], second[i])``.

    ``order_by_second`` lists the positions sorted by ``second``; a stable sort by ``first`` of
    that list then sorts by the pair, so one narrow sort replaces a sort of packed 64-bit keys.
    """
    sorted_first, permutation = torch.sort(first[order_by_second], stable=True)
    order = order_by_second[permutation]
    return _scatter_ranks(order, _run_starts(sorted_first, second[order]), first.dtype)


def iter_ngram_ids(
    token_ids: Tensor, lengths: Tensor, groups: Tensor, max_order: int
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
        max_order: highest n-gram order ``N >= 1``.

    Yields:
        For ``n = 1..N``, an ``[S, L]`` int64 tensor whose entry ``[s, i]`` is the ID of the
        n-gram ``token_ids[s, i:i+n]`` if it lies inside the row (``i + n <= lengths[s]``),
        else ``-1``. IDs are below ``S * L``.
    """
    num_rows, max_len = token_ids.shape
    num_positions = num_rows * max_len
    device = token_ids.device
    if num_positions == 0:
        for _ in range(max_order):
            yield torch.full((num_rows, max_len), -1, dtype=torch.long, device=device)
        return
    # Ranks are < P; 32-bit ranks halve the work of every radix sort below.
    rank_dtype = torch.int32 if num_positions <= INT32_RANK_LIMIT else torch.long
    positions = torch.arange(max_len, device=device)
    # Padding tokens are ranked too: an n-gram that touches one is masked, so they never count.
    sorted_tokens, token_order = torch.sort(token_ids.reshape(-1), stable=True)
    token_rank = _scatter_ranks(token_order, _run_starts(sorted_tokens), rank_dtype)
    group_of_position = groups.to(rank_dtype).repeat_interleave(max_len)
    # Order 1: rank (group, token).
    ids = _rank_pairs(group_of_position, token_rank, token_order)
    for order in range(1, max_order + 1):
        if order > 1:
            # The n-gram at i is the (n-1)-gram at i followed by the token at i+n-1. The shift is
            # cyclic so that the token order, shifted the same way, still sorts the next tokens;
            # positions that wrap around or cross a row end are masked below.
            shift = order - 1
            next_token = torch.roll(token_rank, -shift)
            next_order = torch.remainder(token_order - shift, num_positions)
            ids = _rank_pairs(ids, next_token, next_order)
        outside = positions + order > lengths.unsqueeze(1)  # [S, L]
        # A copy: `ids` feeds the next order and must keep its ranks.
        yield ids.view(num_rows, max_len).to(torch.long, copy=True).masked_fill_(outside, -1)


def ngram_ids(token_ids: Tensor, lengths: Tensor, groups: Tensor, max_order: int) -> Tensor:
    """All orders of :func:`iter_ngram_ids` stacked: ``[N, S, L]`` int64, ``-1`` where no n-gram."""
    return torch.stack(list(iter_ngram_ids(token_ids, lengths, groups, max_order)))


def strip_padding(token_ids: Tensor, pad_id: int) -> tuple[Tensor, Tensor]:
    """Removes every ``pad_id`` token from each row and left-aligns what remains.

    Equivalent to ``[t for t in row if t != pad_id]`` per row, so left, right and inner padding
    all work.

    Args:
        token_ids: ``[..., L]`` integer tensor.
        pad_id: the padding token.

    Returns:
        ``(compacted [..., L], lengths [...])``; positions at or after a row's length hold
        ``pad_id``.
    """
    keep = token_ids != pad_id
    lengths = keep.sum(-1)
    max_len = token_ids.shape[-1]
    # Kept tokens go to their rank among kept tokens; dropped ones to a spill column L.
    target = torch.where(keep, keep.cumsum(-1) - 1, max_len)
    spill_shape = (*token_ids.shape[:-1], max_len + 1)
    compacted = torch.full(spill_shape, pad_id, dtype=token_ids.dtype, device=token_ids.device)
    compacted.scatter_(-1, target, token_ids)
    return compacted[..., :max_len], lengths
