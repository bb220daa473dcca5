"""Ragged batches as padded tensors: the one convention every part of tensortext follows.

* A ragged batch is a :class:`Padded` ``(ids [..., L], lengths [...])`` pair of int64 tensors.
  Row ``b`` is ``ids[b, :lengths[b]]``; functions read the lengths, never the pad value.
* Positions at or past a row's length hold :data:`PAD_ID` (``-1``), which is no token ID: a
  consumer that forgets the lengths fails loudly instead of silently reading token 0 (``!`` in
  GPT-2, cl100k and o200k). Interfaces borrowed from other libraries keep theirs (HF's
  ``generate`` pads with ``pad_token_id``).
* Lengths are called ``lengths``, or ``hyp_lens`` / ``ref_lens`` where there are two sides.
* Reference sets are ``[B, R, L]`` slots. A slot without a reference has length
  :data:`MISSING_REF` (``-1``); length 0 is an empty reference, which BLEU scores as sacrebleu
  and NLTK do (it can be the closest reference length).

BPE batch encoding, beam-search output (:meth:`~tensortext.decode.BeamOutput.without_eos`), the
bundled model's tokenizers and the file readers all return :class:`Padded`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import torch
    from torch import Tensor

from tensortext._checks import brief
from tensortext._torch import require_torch

__all__ = [
    "MISSING_REF",
    "PAD_ID",
    "Flat",
    "FlatArrays",
    "Padded",
    "pad_ragged",
    "pad_ragged_refs",
    "split_rows",
    "text_reference_sets",
]

PAD_ID = -1
# The length of a reference slot that holds no reference (length 0 is an empty reference).
MISSING_REF = -1


class Padded(NamedTuple):
    """A ragged batch: ``ids [..., L]`` int64 and ``lengths [...]`` int64.

    Positions at or past ``lengths`` hold :data:`PAD_ID` unless a producer documents otherwise.
    Unpack it where a function takes ids and lengths: ``sentence_bleu(*hyp, ...)`` does not
    work, but ``Padded`` is accepted wherever a BLEU function takes token IDs.
    """

    ids: Tensor
    lengths: Tensor

    def to(self, device: torch.device | str) -> Padded:
        """Both tensors on ``device``."""
        return Padded(self.ids.to(device), self.lengths.to(device))

    def tolist(self) -> list[list[int]]:
        """Rows of a ``[B, L]`` batch as lists, each cut at its length (one host copy)."""
        if self.ids.dim() != 2:
            raise ValueError(f"tolist needs ids [B, L], got shape {list(self.ids.shape)}")
        rows = self.ids.tolist()
        return [row[:n] for row, n in zip(rows, self.lengths.tolist(), strict=True)]


class Flat(NamedTuple):
    """A ragged batch without padding: ``ids [T]`` int64, every row's IDs one after another,
    and ``lengths [B]`` int64. Memory follows the total length, not ``B`` times the longest
    row (quicktok's flat tokens + offsets, with lengths). Row ``b`` is
    ``ids[offsets[b]:offsets[b + 1]]``.
    """

    ids: Tensor
    lengths: Tensor

    @property
    def offsets(self) -> Tensor:
        """``[B + 1]`` int64: where each row starts, then the total."""
        import torch

        zero = self.lengths.new_zeros(1)
        return torch.cat([zero, torch.cumsum(self.lengths, 0)])

    def tolist(self) -> list[list[int]]:
        """The rows as lists (one host copy)."""
        return split_rows(self.ids.tolist(), self.lengths.tolist())


class FlatArrays(NamedTuple):
    """:class:`Flat` as numpy arrays, for code without torch: ``ids [T]`` uint32 (tiktoken's
    ``encode_to_numpy`` dtype) and ``lengths [B]`` int64."""

    ids: npt.NDArray[np.uint32]
    lengths: npt.NDArray[np.int64]

    def tolist(self) -> list[list[int]]:
        """The rows as lists."""
        return split_rows(self.ids.tolist(), self.lengths.tolist())


def split_rows(flat: Sequence[int], lengths: Iterable[int]) -> list[list[int]]:
    """``flat`` cut into consecutive rows of ``lengths`` (lists)."""
    rows: list[list[int]] = []
    start = 0
    for length in lengths:
        rows.append(list(flat[start : start + length]))
        start += length
    return rows


def pad_ragged(
    sequences: Sequence[Sequence[int]], *, device: torch.device | str | None = None
) -> Padded:
    """Pads a list of ID lists.

    Args:
        sequences: ``B`` lists of integer token IDs, any lengths.
        device: where the tensors go (CPU by default).

    Returns:
        :class:`Padded` ``(ids [B, L], lengths [B])`` with ``L = max(1, longest)``; padding
        holds :data:`PAD_ID`.

    Example:
        >>> pad_ragged([[5, 6], [7]]).ids.tolist()
        [[5, 6], [7, -1]]
    """
    torch = require_torch("pad_ragged")
    lengths = torch.tensor([len(seq) for seq in sequences], dtype=torch.long)
    width = max(1, int(lengths.max())) if len(sequences) else 1
    flat = torch.tensor(list(itertools.chain.from_iterable(sequences)), dtype=torch.long)
    ids = torch.full((len(sequences), width), PAD_ID, dtype=torch.long)
    ids[torch.arange(width) < lengths.unsqueeze(1)] = flat
    return Padded(ids.to(device), lengths.to(device))


def pad_ragged_refs(
    references: Sequence[Sequence[Sequence[int]]], *, device: torch.device | str | None = None
) -> Padded:
    """Pads a list of reference sets (each a list of ID lists) into slots.

    Args:
        references: ``B`` reference sets; set ``b`` has ``R_b`` references.
        device: where the tensors go (CPU by default).

    Returns:
        :class:`Padded` ``(ids [B, R, L], lengths [B, R])`` with ``R = max(1, max R_b)``; unused
        slots have length :data:`MISSING_REF` (-1, "no reference in this slot", sacrebleu's
        ``None``), while an empty reference keeps length 0 (sacrebleu's ``""``, NLTK's ``[]``).

    Example:
        >>> pad_ragged_refs([[[5, 6], []], [[7]]]).lengths.tolist()
        [[2, 0], [1, -1]]
        >>> pad_ragged_refs([]).ids.shape  # no sentences
        torch.Size([0, 1, 1])
    """
    torch = require_torch("pad_ragged_refs")
    slots = max([len(refs) for refs in references] + [1])
    flat_refs = [
        refs[slot] if slot < len(refs) else () for refs in references for slot in range(slots)
    ]
    used = torch.tensor(
        [slot < len(refs) for refs in references for slot in range(slots)], dtype=torch.bool
    )
    ids, lengths = pad_ragged(flat_refs)
    lengths = lengths.masked_fill(~used, MISSING_REF)
    return Padded(
        ids.view(len(references), slots, ids.shape[-1]).to(device),
        lengths.view(len(references), slots).to(device),
    )


def text_reference_sets(refs: object, batch: int) -> list[list[str | None]]:
    """Text references as one checked list per sentence, the text form of reference slots.

    Args:
        refs: ``B`` entries, each one string or a sequence of strings and ``None`` (a missing
            reference, sacrebleu's ``None``; :data:`MISSING_REF` in tensors).
        batch: ``B``, the number of hypotheses.

    Returns:
        ``B`` lists of references (a string entry becomes a list of one).

    Raises:
        TypeError: ``refs`` or an entry of the wrong type (naming ``refs[b][r]``).
        ValueError: ``len(refs) != batch``.

    Example:
        >>> text_reference_sets(["a b", ["c", None]], 2)
        [['a b'], ['c', None]]
    """
    if not isinstance(refs, Sequence) or isinstance(refs, (str, Padded)):
        raise TypeError(
            f"refs must be a list of strings (or of lists of strings) for text hypotheses, got "
            f"{type(refs).__name__}"
        )
    if len(refs) != batch:
        raise ValueError(
            f"hyps has {batch} sentences but refs has {len(refs)}; give one reference (or one "
            "list of references) per hypothesis"
        )
    sets: list[list[str | None]] = []
    for index, entry in enumerate(refs):
        if isinstance(entry, str):
            sets.append([entry])
            continue
        if not isinstance(entry, Sequence):
            raise TypeError(
                f"refs[{index}] must be a str or a list of str (None for a missing reference), "
                f"got {type(entry).__name__}"
            )
        for slot, ref in enumerate(entry):
            if ref is not None and not isinstance(ref, str):
                raise TypeError(
                    f"refs[{index}][{slot}] must be a str or None (a missing reference), got "
                    f"{type(ref).__name__} {brief(ref)}"
                )
        sets.append(list(entry))
    return sets
