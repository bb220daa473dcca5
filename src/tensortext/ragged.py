"""Ragged Python lists of token IDs to padded tensors with lengths, and back (marshalling only)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["pad_ragged", "pad_ragged_refs", "unpad"]


def pad_ragged(
    sequences: Sequence[Sequence[int]], *, device: torch.device | str | None = None
) -> tuple[Tensor, Tensor]:
    """Pads a list of ID lists.

    Args:
        sequences: ``B`` lists of integer token IDs, any lengths.
        device: where the tensors go (CPU by default).

    Returns:
        ``(ids [B, L], lengths [B])`` int64 with ``L = max(1, longest)``; padding holds 0, which
        is never read because the lengths say where each row ends.
    """
    lengths = torch.tensor([len(seq) for seq in sequences], dtype=torch.long)
    width = max(1, int(lengths.max())) if len(sequences) else 1
    flat = torch.tensor(list(itertools.chain.from_iterable(sequences)), dtype=torch.long)
    ids = torch.zeros(len(sequences), width, dtype=torch.long)
    ids[torch.arange(width) < lengths.unsqueeze(1)] = flat
    return ids.to(device), lengths.to(device)


def pad_ragged_refs(
    references: Sequence[Sequence[Sequence[int]]], *, device: torch.device | str | None = None
) -> tuple[Tensor, Tensor]:
    """Pads a list of reference sets (each a list of ID lists) into slots.

    Args:
        references: ``B`` reference sets; set ``b`` has ``R_b`` references.

    Returns:
        ``(ids [B, R, L], lengths [B, R])`` with ``R = max(1, max R_b)``; unused slots have
        length 0 ("no reference in this slot").
    """
    slots = max([len(refs) for refs in references] + [1])
    flat_refs = [
        refs[slot] if slot < len(refs) else () for refs in references for slot in range(slots)
    ]
    ids, lengths = pad_ragged(flat_refs, device=device)
    return ids.view(len(references), slots, -1), lengths.view(len(references), slots)


def unpad(ids: Tensor, lengths: Tensor) -> list[list[int]]:
    """The inverse of :func:`pad_ragged`: ``ids [B, L]`` cut at ``lengths [B]``, as lists."""
    return [row[:n] for row, n in zip(ids.tolist(), lengths.tolist(), strict=True)]
