"""The state of one :func:`~tensortext.decode.beam.beam_search`: constants, beams, candidates.

* :class:`SearchSpec`: the settings of one search, settled before the first step.
* :class:`Beams`: the live beams, ``[B, K, ...]``.
* :class:`Candidates`: one step's best continuations, ``[B, C, ...]``.

Token rows grow with the search, not with ``max_new_tokens``.  Every step copies whole rows
(a candidate's row is its parent's plus one token), so rows as wide as ``max_new_tokens`` made a
21-step search cost as much as ``max_new_tokens`` columns, every step, and ``max_new_tokens=10**9``
asked for gigabytes before the first model call.  Instead the token and per-token score buffers
of the beams and the finished pools start with room for :data:`INITIAL_CAPACITY` generated
tokens (or ``max_new_tokens`` if fewer) and double, up to ``max_new_tokens``, at the step that
would write past their end.  That step is known from the step counter alone, so growing needs
no host sync.  A row is then less than twice as long as the longest hypothesis (or 64 tokens),
and as the width doubles, all growths together copy about as much as one step at the final width.
The new columns hold what the old ones held beyond a hypothesis (the fill ID, score 0), and no
step reads a column it has not written, so the results do not depend on the capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from tensortext.decode.pool import HypothesisPool, widen
from tensortext.decode.settings import BeamSettings, EarlyStopping
from tensortext.padded import PAD_ID

__all__ = ["INITIAL_CAPACITY", "Beams", "Candidates", "SearchSpec"]

# Generated tokens the buffers hold before their first growth: translation hypotheses rarely
# exceed it, and a row of 64 int64 tokens is 512 bytes.
INITIAL_CAPACITY = 64


@dataclass(frozen=True)
class SearchSpec:
    """The constants of one search, settled before the first step."""

    B: int
    K: int
    P: int  # prompt width: start_ids are [B, P]
    device: torch.device
    eos_ids: tuple[int, ...]  # the same on the host, for checks without a sync
    eos: Tensor  # [E] int64
    fill_id: int
    refill: bool
    num_candidates: int  # C: candidates kept per sentence and step
    log_prune: float | None
    max_new_tokens: int
    min_new_tokens: int
    length_penalty: float
    early_stopping: EarlyStopping
    with_token_scores: bool
    validate: bool  # check the log-probs for NaN and +inf
    sentence_offsets: Tensor  # [B, 1] first row of each sentence
    initial_capacity: int  # generated tokens the buffers hold at first

    @classmethod
    def create(
        cls,
        start_ids: Tensor,
        settings: BeamSettings,
        eos_ids: list[int],
        pad_id: int | None,
        with_token_scores: bool,
        validate: bool,
    ) -> SearchSpec:
        """The constants of a search of ``settings`` (validated) from ``[B, P]`` start IDs."""
        device = start_ids.device
        B, K = start_ids.shape[0], settings.num_beams
        refill = settings.finished == "refill"
        max_new_tokens, prune_threshold = settings.max_new_tokens, settings.prune_threshold
        return cls(
            B=B,
            K=K,
            P=start_ids.shape[1],
            device=device,
            eos_ids=tuple(eos_ids),
            eos=torch.tensor(eos_ids, dtype=torch.int64, device=device),
            fill_id=PAD_ID if pad_id is None else pad_id,
            refill=refill,
            # Refill keeps enough candidates that K non-EOS ones survive even if every EOS ID
            # ranks high.
            num_candidates=max(2, 1 + len(eos_ids)) * K if refill else K,
            log_prune=math.log(prune_threshold) if prune_threshold else None,
            max_new_tokens=max_new_tokens,
            min_new_tokens=settings.min_new_tokens,
            length_penalty=settings.length_penalty,
            early_stopping=settings.early_stopping,
            with_token_scores=with_token_scores,
            validate=validate,
            sentence_offsets=torch.arange(B, device=device)[:, None] * K,
            initial_capacity=min(max_new_tokens, INITIAL_CAPACITY),
        )

    def initial_beams(self, start_ids: Tensor) -> Beams:
        """Only beam 0 of a sentence starts alive, so the first step expands one hypothesis,
        not K copies of it."""
        width = self.P + self.initial_capacity
        tokens = torch.full((self.B, self.K, width), self.fill_id, dtype=torch.int64)
        tokens = tokens.to(self.device)
        tokens[:, :, : self.P] = start_ids.view(self.B, 1, self.P)
        scores = torch.full((self.B, self.K), -math.inf, dtype=torch.float32, device=self.device)
        scores[:, 0] = 0.0
        token_scores = None
        if self.with_token_scores:
            shape = (self.B, self.K, self.initial_capacity)
            token_scores = torch.zeros(shape, dtype=torch.float32, device=self.device)
        return Beams(tokens, scores, token_scores)

    def new_pool(self) -> HypothesisPool:
        """An empty pool of K finished hypotheses per sentence."""
        return HypothesisPool.empty(
            (self.B, self.K),
            self.P + self.initial_capacity,
            self.initial_capacity,
            self.fill_id,
            self.with_token_scores,
            self.device,
        )

    def grown_capacity(self, capacity: int) -> int:
        """The buffers' next capacity (generated tokens) once ``capacity`` is used up."""
        return min(2 * capacity, self.max_new_tokens)

    def normalizer(self, generated: int) -> float:
        """The length normalization of a hypothesis with ``generated`` tokens."""
        return float(generated**self.length_penalty)


@dataclass(frozen=True)
class Beams:
    """The live beams: whole token rows (prompt included) and accumulated scores.

    ``capacity`` is the number of generated tokens the rows hold (see the module docstring).
    """

    tokens: Tensor  # [B, K, P + capacity]
    scores: Tensor  # [B, K] float32, -inf = dead
    token_scores: Tensor | None  # [B, K, capacity]

    def widened(self, extra: int, fill_id: int) -> Beams:
        """These beams with ``extra`` more columns (``fill_id``, score 0) in their rows."""
        token_scores = self.token_scores
        if token_scores is not None:
            token_scores = widen(token_scores, extra, 0.0)
        return Beams(widen(self.tokens, extra, fill_id), self.scores, token_scores)


@dataclass(frozen=True)
class Candidates:
    """The best continuations of one step, best first."""

    all_scores: Tensor  # [B, K*V] every continuation's score (pruned ones -inf)
    step_log_probs: Tensor  # [B, K*V] this step's processed log-probs
    scores: Tensor  # [B, C]
    flat: Tensor  # [B, C] beam * V + token
    ends: Tensor  # [B, C] bool: EOS, or the last step
    finishes: Tensor  # [B, C] bool: goes to the finished pool if among the top K
    tokens: Tensor  # [B, C, P + capacity]
    token_scores: Tensor | None  # [B, C, capacity]
