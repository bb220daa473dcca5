"""The result of a beam search: :class:`BeamOutput`."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from tensortext._checks import check_int
from tensortext.padded import PAD_ID, Padded

__all__ = ["BeamOutput"]


@dataclass(frozen=True)
class BeamOutput:
    """Result of :func:`beam_search`, best hypothesis first.

    Attributes:
        sequences: ``[B, R, T]`` int64 generated tokens (EOS included, ``start_ids`` excluded),
            padded with ``pad_id`` (default :data:`~tensortext.padded.PAD_ID`) after
            ``lengths``; ``T`` is the longest returned hypothesis.
        lengths: ``[B, R]`` int64 number of generated tokens, EOS included.
        scores: ``[B, R]`` float32 ``sum of log-probs / lengths ** length_penalty``; ``-inf`` (and
            length 0) marks a slot with no hypothesis, when fewer than ``R`` hypotheses have a
            finite score (pruning, masking, or forced tokens leaving fewer paths than ``R``).
        token_scores: ``[B, R, T]`` float32 processed log-probability of each generated token
            (0 after ``lengths``), or ``None`` unless ``output_token_scores=True``.
        eos_ids: ``[E]`` int64 the end-of-sequence IDs of the search (read by
            :meth:`without_eos`).
    """

    sequences: Tensor
    lengths: Tensor
    scores: Tensor
    token_scores: Tensor | None = None
    eos_ids: Tensor | None = None

    def without_eos(self, rank: int | None = None) -> Padded:
        """The hypotheses without their final EOS, ready for BLEU or LMBR evidence.

        Args:
            rank: ``None`` for all ``R`` hypotheses (``ids [B, R, T]``, ``lengths [B, R]``), or
                ``r`` for the ``r``-th best of each sentence (``ids [B, T]``, ``lengths [B]``).

        Returns:
            :class:`~tensortext.padded.Padded`; the EOS positions hold ``PAD_ID``.

        Raises:
            ValueError: ``rank`` outside ``0..R-1``, or an output built without ``eos_ids``.
        """
        if self.eos_ids is None:
            raise ValueError("this BeamOutput has no eos_ids; build it with eos_ids=")
        ids, lengths = self.sequences, self.lengths
        if rank is not None:
            check_int("rank", rank, minimum=0)
            if rank >= ids.shape[1]:
                raise ValueError(f"rank must be < R = {ids.shape[1]}, got {rank}")
            ids, lengths = ids[:, rank], lengths[:, rank]
        last = ids.gather(-1, (lengths - 1).clamp(min=0).unsqueeze(-1)).squeeze(-1)
        ends_in_eos = torch.isin(last, self.eos_ids.to(ids.device)) & (lengths > 0)
        lengths = lengths - ends_in_eos.long()
        inside = torch.arange(ids.shape[-1], device=ids.device) < lengths.unsqueeze(-1)
        return Padded(ids.masked_fill(~inside, PAD_ID), lengths)
