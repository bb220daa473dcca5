"""The n-gram trie behind :class:`~tensortext.lmbr.NgramPosteriors`, built without a host sync.

Order ``n`` holds one entry per distinct (sentence, n-gram), sorted by the key
``parent * key_base + rank(last token)``, where ``parent`` is the entry of the n-gram's first
``n - 1`` tokens at order ``n - 1`` (at order 1, the sentence index). The children of a history
are therefore one contiguous run of its order, found with ``searchsorted``.

:func:`~tensortext.ngrams.iter_ngram_ids` numbers n-grams by rank of (prefix ID, last token
rank); renumbering only the n-grams that exist keeps that order, so the keys of entries
``0..U-1`` come out sorted. Tables have a fixed size (``S * L`` entries per order, one per
position), so their shapes never depend on the data; unused entries hold the largest int64 key.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tensortext.ngrams import compact_ids, iter_ngram_ids

__all__ = ["Trie", "build_trie"]

KEY_FILL = torch.iinfo(torch.int64).max  # sorts after every real key


@dataclass(frozen=True)
class Trie:
    """The tables of :class:`~tensortext.lmbr.NgramPosteriors` before the posteriors.

    Attributes:
        num_sentences: ``B``.
        size: entries per order (``S * L``, one per position), not counting the sentinel.
        token_values: ``[T]`` sorted distinct tokens (the tail repeats the largest).
        num_tokens: ``[]`` how many of ``token_values`` are distinct.
        keys, parents, last_tokens: per order, ``[size + 1]`` int64; the last entry is a
            sentinel (largest key, parent -1) that every failed search lands on.
        entries: per order, ``[S * L]`` the entry of the n-gram starting at each position, or -1.
    """

    num_sentences: int
    size: int
    token_values: Tensor
    num_tokens: Tensor
    keys: tuple[Tensor, ...]
    parents: tuple[Tensor, ...]
    last_tokens: tuple[Tensor, ...]
    entries: tuple[Tensor, ...]


def build_trie(
    token_ids: Tensor, lengths: Tensor, groups: Tensor, max_ngram_order: int, num_sentences: int
) -> Trie:
    """The n-gram trie of rows ``token_ids [S, L]`` (``lengths [S]``) grouped by sentence.

    Args:
        token_ids: ``[S, L]`` int64 tokens; positions at or past ``lengths`` are ignored.
        lengths: ``[S]`` int64.
        groups: ``[S]`` int64 sentence of each row, ``0..num_sentences-1``.
        max_ngram_order: ``N``.
        num_sentences: ``B``.

    Returns:
        :class:`Trie` on the device of ``token_ids``; orders above ``L + 1`` share the (empty)
        tables of order ``L + 1``.
    """
    rows, width = token_ids.shape
    size = rows * width
    flat_tokens = token_ids.reshape(-1)
    token_rank = compact_ids(flat_tokens)
    token_values, num_tokens = _distinct_tokens(flat_tokens, token_rank)
    parent = groups.long().repeat_interleave(width)  # order 0: the sentence
    keys: list[Tensor] = []
    parents: list[Tensor] = []
    last_tokens: list[Tensor] = []
    entries: list[Tensor] = []
    ngram_ids = iter_ngram_ids(token_ids, lengths, groups, max_ngram_order)
    for order, ids in enumerate(ngram_ids, start=1):
        if order > width + 1:
            # No row holds an n-gram longer than L: every order past L + 1 has the empty tables
            # of order L + 1, shared (not copied), so such orders cost no memory and no work.
            keys.append(keys[-1])
            parents.append(parents[-1])
            last_tokens.append(last_tokens[-1])
            entries.append(entries[-1])
            continue
        entry = _dense_entries(ids.reshape(-1), size)
        key, parent_of, token_of = _order_tables(entry, parent, flat_tokens, token_rank, order)
        keys.append(key)
        parents.append(parent_of)
        last_tokens.append(token_of)
        entries.append(entry)
        parent = entry
    return Trie(
        num_sentences=num_sentences,
        size=size,
        token_values=token_values,
        num_tokens=num_tokens,
        keys=tuple(keys),
        parents=tuple(parents),
        last_tokens=tuple(last_tokens),
        entries=tuple(entries),
    )


def _distinct_tokens(flat_tokens: Tensor, token_rank: Tensor) -> tuple[Tensor, Tensor]:
    """``(token_values [P], num_tokens [])``: distinct tokens sorted, padded with the largest."""
    size = flat_tokens.numel()
    if not size:
        device = flat_tokens.device
        return torch.zeros(1, dtype=torch.int64, device=device), torch.zeros(
            (), dtype=torch.int64, device=device
        )
    num_tokens = token_rank.max() + 1
    token_values = torch.zeros_like(flat_tokens).scatter_(0, token_rank, flat_tokens)
    positions = torch.arange(size, device=flat_tokens.device)
    return torch.where(positions < num_tokens, token_values, flat_tokens.max()), num_tokens


def _dense_entries(ids: Tensor, size: int) -> Tensor:
    """Compact n-gram IDs ``[P]`` (-1: no n-gram) renumbered ``0..U-1`` over the existing ones."""
    exists = ids >= 0
    used = torch.zeros(size + 1, dtype=torch.bool, device=ids.device)
    used[torch.where(exists, ids, size)] = True
    dense = used[:size].cumsum(0) - 1
    return torch.where(exists, dense[ids.clamp(min=0)], -1)


def _order_tables(
    entry: Tensor, parent: Tensor, flat_tokens: Tensor, token_rank: Tensor, order: int
) -> tuple[Tensor, Tensor, Tensor]:
    """``(keys, parents, last_tokens)`` of one order, each ``[P + 1]`` with the sentinel last."""
    size = entry.numel()
    device = entry.device
    key_base = max(size, 1)
    positions = torch.arange(size, device=device)
    last = (positions + order - 1).clamp(max=max(size - 1, 0))
    slot = torch.where(entry >= 0, entry, size)  # misses go to a spill slot
    key = torch.full((size + 1,), KEY_FILL, dtype=torch.int64, device=device)
    key[slot] = parent.clamp(min=0) * key_base + token_rank[last]
    parent_of = torch.full((size + 1,), -1, dtype=torch.int64, device=device)
    parent_of[slot] = parent
    token_of = torch.zeros(size + 1, dtype=torch.int64, device=device)
    token_of[slot] = flat_tokens[last]
    # The spill slot stays as a sentinel past the end: a failed search lands on it.
    key[size] = KEY_FILL
    parent_of[size] = -1
    return key, parent_of, token_of
