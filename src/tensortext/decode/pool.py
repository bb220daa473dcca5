"""Fixed-shape bookkeeping of :func:`~tensortext.decode.beam.beam_search`.

:class:`HypothesisPool` keeps the ``K`` best hypotheses of each sentence in ``[B, K, ...]``
tensors (``-inf`` scores mark empty slots), and :func:`extend_candidates` builds the token rows
of candidates. Nothing here depends on data-dependent shapes, so nothing syncs with the host.
Rows hold ``capacity`` generated tokens, which grows with the search (:func:`widen`; see
:mod:`tensortext.decode.search_state`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from tensortext.decode.output import BeamOutput

__all__ = ["HypothesisPool", "expand_like", "extend_candidates", "widen"]


@dataclass
class HypothesisPool:
    """The K best hypotheses per sentence, sorted by normalized score (best first)."""

    scores: Tensor  # [B, K] float32, -inf = empty
    tokens: Tensor  # [B, K, P + capacity] int64
    lengths: Tensor  # [B, K] int64 generated tokens
    token_scores: Tensor | None  # [B, K, capacity]

    @classmethod
    def empty(
        cls,
        shape: tuple[int, int],
        width: int,
        capacity: int,
        fill_id: int,
        with_token_scores: bool,
        device: torch.device,
    ) -> HypothesisPool:
        """A pool of ``shape = (B, K)`` empty slots for rows of ``width = P + capacity`` tokens."""
        return cls(
            scores=torch.full(shape, -math.inf, dtype=torch.float32, device=device),
            tokens=torch.full((*shape, width), fill_id, dtype=torch.int64, device=device),
            lengths=torch.zeros(shape, dtype=torch.int64, device=device),
            token_scores=(
                torch.zeros((*shape, capacity), dtype=torch.float32, device=device)
                if with_token_scores
                else None
            ),
        )

    def widen(self, extra: int, fill_id: int) -> None:
        """Make room for ``extra`` more generated tokens (``fill_id``, score 0) in every row."""
        self.tokens = widen(self.tokens, extra, fill_id)
        if self.token_scores is not None:
            self.token_scores = widen(self.token_scores, extra, 0.0)

    def full(self) -> Tensor:
        """``[B]`` bool: every slot holds a hypothesis."""
        return torch.isfinite(self.scores).all(dim=1)

    def merge(
        self, scores: Tensor, tokens: Tensor, lengths: Tensor, token_scores: Tensor | None
    ) -> None:
        """Keep the K best of the pool and the new ``[B, C]`` entries (``-inf`` = not offered).

        On equal scores the entry already in the pool wins, then the better-ranked candidate.
        """
        K = self.scores.shape[1]
        merged = torch.cat((self.scores, scores), dim=1)
        order = torch.sort(merged, dim=1, descending=True, stable=True).indices[:, :K]
        self.scores = merged.gather(1, order)
        self.lengths = torch.cat((self.lengths, lengths), dim=1).gather(1, order)
        self.tokens = _gather_rows(torch.cat((self.tokens, tokens), dim=1), order)
        if self.token_scores is not None and token_scores is not None:
            self.token_scores = _gather_rows(
                torch.cat((self.token_scores, token_scores), dim=1), order
            )

    def backfilled(self, other: HypothesisPool) -> HypothesisPool:
        """This pool with its empty slots filled by ``other``'s best entries, in their order."""
        K = self.scores.shape[1]
        # Rank by tier (ours first), then by score: a stable sort on the tier of a score-sorted
        # concatenation does it because both pools are already sorted.
        scores = torch.cat((self.scores, other.scores), dim=1)
        tier = torch.cat(
            (torch.zeros_like(self.lengths), torch.ones_like(other.lengths)), dim=1
        ).masked_fill(~torch.isfinite(scores), 2)
        order = torch.sort(tier, dim=1, stable=True).indices[:, :K]
        token_scores = None
        if self.token_scores is not None and other.token_scores is not None:
            token_scores = _gather_rows(
                torch.cat((self.token_scores, other.token_scores), dim=1), order
            )
        return HypothesisPool(
            scores=scores.gather(1, order),
            tokens=_gather_rows(torch.cat((self.tokens, other.tokens), dim=1), order),
            lengths=torch.cat((self.lengths, other.lengths), dim=1).gather(1, order),
            token_scores=token_scores,
        )

    def best(
        self, num_return_sequences: int, prompt_width: int, fill_id: int, eos_ids: Tensor
    ) -> BeamOutput:
        """The ``R`` best hypotheses without the prompt, cut to the longest one returned."""
        R = num_return_sequences
        lengths = self.lengths[:, :R]
        width = int(lengths.max()) if lengths.numel() else 0  # one sync, after the search
        sequences = self.tokens[:, :R, prompt_width : prompt_width + width]
        beyond = torch.arange(width, device=sequences.device) >= lengths[:, :, None]
        token_scores = None
        if self.token_scores is not None:
            token_scores = self.token_scores[:, :R, :width].masked_fill(beyond, 0.0)
        return BeamOutput(
            sequences=sequences.masked_fill(beyond, fill_id),
            lengths=lengths,
            scores=self.scores[:, :R],
            token_scores=token_scores,
            eos_ids=eos_ids,
        )


def extend_candidates(
    running_tokens: Tensor,
    running_token_scores: Tensor | None,
    step_log_probs: Tensor,
    flat: Tensor,
    cur_len: int,
    step: int,
) -> tuple[Tensor, Tensor | None]:
    """Token rows (and per-token scores) of the candidates ``flat`` = ``beam * V + token``.

    Args:
        running_tokens: ``[B, K, W]`` the live beams' rows.
        running_token_scores: ``[B, K, capacity]`` or ``None``.
        step_log_probs: ``[B, K * V]`` this step's processed log-probs.
        flat: ``[B, C]`` candidate indices into the ``K * V`` continuations of a sentence.
        cur_len: column of the new token in ``running_tokens``.
        step: column of the new token's score in ``running_token_scores``.

    Returns:
        ``[B, C, W]`` the parent's row with the new token at ``cur_len``, and ``[B, C, ...]``
        scores with the new token's at ``step`` (or ``None``).
    """
    V = step_log_probs.shape[1] // running_tokens.shape[1]
    parent = flat // V
    tokens = _gather_rows(running_tokens, parent)
    tokens[:, :, cur_len] = flat % V
    if running_token_scores is None:
        return tokens, None
    token_scores = _gather_rows(running_token_scores, parent)
    token_scores[:, :, step] = step_log_probs.gather(1, flat)
    return tokens, token_scores


def widen(buffer: Tensor, extra: int, fill: float) -> Tensor:
    """``buffer [..., W]`` with ``extra`` columns of ``fill`` appended: ``[..., W + extra]``."""
    padding = buffer.new_full((*buffer.shape[:-1], extra), fill)
    return torch.cat((buffer, padding), dim=-1)


def expand_like(index: Tensor, source: Tensor) -> Tensor:
    """Broadcast a ``[B, C]`` beam index to gather ``[B, K, ...]`` rows of ``source``."""
    return index.view(*index.shape, *([1] * (source.dim() - 2))).expand(
        *index.shape, *source.shape[2:]
    )


def _gather_rows(source: Tensor, index: Tensor) -> Tensor:
    """Rows ``index [B, C]`` of ``source [B, K, ...]``: ``[B, C, ...]``."""
    return source.gather(1, expand_like(index, source))
