"""Batched beam search over sentences x beams for any PyTorch model.

The decoder of Iglesias et al. (2018), Algorithm 1 with sentence batching (section 3.1): every
model call scores all ``B`` sentences x ``K`` beams at once, and all bookkeeping lives in
fixed-shape ``[B, K, ...]`` tensors.  Finished beams are masked, never removed, so nothing in the
loop depends on data-dependent shapes and the only host sync per step is the check to stop.

Two ways to handle end-of-sentence candidates:

* ``finished="refill"`` (Hugging Face ``generate``, fairseq, CTranslate2): each step keeps the top
  ``2K`` candidates of a sentence so that ``K`` non-EOS beams always survive; EOS candidates among
  the top ``K`` go to a pool of the ``K`` best finished hypotheses.  With the same settings this
  returns what ``transformers``' beam search returns.
* ``finished="mask"`` (the paper's Algorithm 1): the top ``K`` candidates become the beam; EOS
  candidates go to the finished pool and their slot is masked to -inf, so a sentence may end with
  fewer live beams.  If no EOS hypothesis survives until ``max_new_tokens``, the best EOS
  candidates that fell out of the beam are used (the paper's note 5), and failing those the
  unfinished beams at the length limit.

Scores are sums of the (processed) log-probabilities of the generated tokens, divided by
``length ** length_penalty`` where ``length`` counts the generated tokens *including* the EOS and
excluding ``start_ids`` (the same length ``transformers`` uses).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import torch
from torch import Tensor

__all__ = ["BeamOutput", "EarlyStopping", "beam_search", "reorder_state"]

State = TypeVar("State")
EarlyStopping = bool | Literal["never"]
StepFn = Callable[[Tensor, State], tuple[Tensor, State]]
ReorderFn = Callable[[State, Tensor], State]
LogitsProcessor = Callable[[Tensor, Tensor], Tensor]
ScoreBias = Callable[[Tensor], Tensor]


@dataclass(frozen=True)
class BeamOutput:
    """Result of :func:`beam_search`, best hypothesis first.

    Attributes:
        sequences: ``[B, R, T]`` int64 generated tokens (EOS included, ``start_ids`` excluded),
            padded with ``pad_id`` after ``lengths``; ``T`` is the longest returned hypothesis.
        lengths: ``[B, R]`` int64 number of generated tokens, EOS included.
        scores: ``[B, R]`` float32 ``sum of log-probs / lengths ** length_penalty``; ``-inf`` (and
            length 0) marks a slot with no hypothesis, when fewer than ``R`` hypotheses have a
            finite score (pruning, masking, or forced tokens leaving fewer paths than ``R``).
        token_scores: ``[B, R, T]`` float32 processed log-probability of each generated token
            (0 after ``lengths``), or ``None`` unless ``output_token_scores=True``.
    """

    sequences: Tensor
    lengths: Tensor
    scores: Tensor
    token_scores: Tensor | None = None


def reorder_state(state: Any, beam_idx: Tensor) -> Any:
    """Default reorder: ``state.reorder(beam_idx)`` or ``index_select`` on dim 0 of every tensor.

    Args:
        state: ``None``, an object with a ``reorder(beam_idx)`` method, a tensor with leading
            dimension ``B*K``, or a (nested) tuple, list or dict of those.
        beam_idx: ``[B*K]`` int64; row ``r`` of the new state is row ``beam_idx[r]`` of the old.

    Returns:
        The reordered state (a new object; tensors are not modified in place).
    """
    if state is None:
        return None
    if isinstance(state, Tensor):
        return state.index_select(0, beam_idx)
    reorder = getattr(state, "reorder", None)
    if callable(reorder):
        return reorder(beam_idx)
    if isinstance(state, tuple) and hasattr(state, "_fields"):  # NamedTuple
        return type(state)(*(reorder_state(item, beam_idx) for item in state))
    if isinstance(state, (tuple, list)):
        return type(state)(reorder_state(item, beam_idx) for item in state)
    if isinstance(state, Mapping):
        return {key: reorder_state(value, beam_idx) for key, value in state.items()}
    raise TypeError(
        f"beam_search cannot reorder a state of type {type(state).__name__}; pass reorder=fn "
        "(fn(state, beam_idx) -> state), give the state a reorder(beam_idx) method, or use "
        "tensors / tuples / dicts of tensors with the B*K rows on dim 0"
    )


def beam_search(
    step_fn: StepFn[State],
    state: State,
    *,
    batch_size: int,
    num_beams: int,
    eos_id: int | Sequence[int],
    start_ids: Tensor,
    max_new_tokens: int,
    min_new_tokens: int = 0,
    length_penalty: float = 1.0,
    early_stopping: EarlyStopping = False,
    finished: Literal["refill", "mask"] = "refill",
    prune_threshold: float | None = None,
    num_return_sequences: int = 1,
    score_bias: ScoreBias | None = None,
    logits_processor: LogitsProcessor | None = None,
    reorder: ReorderFn[State] | None = None,
    pad_id: int | None = None,
    vocab_size: int | None = None,
    output_token_scores: bool = False,
) -> BeamOutput:
    """Beam search for ``B`` sentences x ``K`` beams, one model call per step.

    Args:
        step_fn: ``step_fn(tokens [B*K, t], state) -> (log_probs [B*K, V], state)``.  ``tokens``
            holds every prefix so far (``start_ids`` first); row ``r`` is beam ``r % K`` of
            sentence ``r // K``.  Rows of finished or dead beams are still passed (masked, not
            removed); their outputs are ignored.
        state: Model state for the ``B*K`` rows (e.g. a KV cache); reordered after every step.
        batch_size: ``B``, number of sentences.
        num_beams: ``K``, beams per sentence; at most ``V``.
        eos_id: End-of-sentence token ID, or several (any of them ends a hypothesis).
        start_ids: ``[B]`` or ``[B, P]`` int64 first tokens of every sentence (decoder start
            token, or a prompt of the same length for every sentence).
        max_new_tokens: Most tokens to generate per hypothesis, EOS included.
        min_new_tokens: EOS is forbidden while fewer tokens than this have been generated.
        length_penalty: Exponent of the length in the score normalization (HF's meaning).
        early_stopping: ``True`` stops a sentence once ``K`` hypotheses are finished; ``False``
            once the best live beam, at its current length, cannot beat the worst finished one;
            ``"never"`` once it cannot even at ``max_new_tokens`` (when ``length_penalty > 0``).
        finished: ``"refill"`` (HF semantics) or ``"mask"`` (the paper's Algorithm 1).
        prune_threshold: Early pruning (paper section 4.3, "beam width 0.01"): drop candidates
            whose probability is below ``prune_threshold`` times that of the sentence's best
            candidate.  ``None`` keeps all.
        num_return_sequences: ``R``, hypotheses to return per sentence, ``1 <= R <= K``.
        score_bias: ``score_bias(tokens [B*K, t]) -> [B*K, V]`` added to the log-probabilities
            before selection (e.g. :class:`~tensortext.decode.lmbr.LMBRBias`).
        logits_processor: ``processor(tokens [B*K, t], log_probs [B*K, V]) -> [B*K, V]``, applied
            before ``score_bias``; a ``transformers.LogitsProcessorList`` works as is.
        reorder: ``reorder(state, beam_idx [B*K]) -> state``; default :func:`reorder_state`.
            ``beam_idx`` never crosses sentences: row ``r`` comes from a row of sentence ``r // K``.
        pad_id: Fills ``sequences`` after each hypothesis ends; default the first ``eos_id``.
        vocab_size: ``V``, if known, to validate ``eos_id`` and ``num_beams`` before the first
            model call; otherwise they are checked against the first ``log_probs``.
        output_token_scores: Also return per-token scores.

    Returns:
        :class:`BeamOutput` with ``sequences [B, R, T]``, ``lengths [B, R]``, ``scores [B, R]``.

    Raises:
        ValueError: A setting out of range, ``start_ids`` of the wrong shape or dtype,
            ``num_beams > V``, or ``step_fn`` returning log-probs of the wrong shape.

    Matches ``model.generate(num_beams=K, do_sample=False, length_penalty=...,
    early_stopping=..., num_return_sequences=R)`` of ``transformers`` with ``finished="refill"``.

    Example:
        >>> import torch
        >>> # Next-token log-probs given the last token (EOS = 0): 2 -> 1 -> EOS is likely.
        >>> table = torch.log_softmax(torch.tensor([[0.0, 0.0, 0.0], [3.0, 0.0, 0.0],
        ...                                         [0.0, 2.0, 1.0]]), dim=-1)
        >>> step = lambda tokens, state: (table[tokens[:, -1]], state)
        >>> out = beam_search(step, None, batch_size=1, num_beams=2, eos_id=0,
        ...                   start_ids=torch.tensor([2]), max_new_tokens=4)
        >>> out.sequences.tolist(), out.lengths.tolist()
        ([[[1, 0]]], [[2]])
    """
    eos_ids = check_settings(
        batch_size=batch_size,
        num_beams=num_beams,
        eos_id=eos_id,
        max_new_tokens=max_new_tokens,
        min_new_tokens=min_new_tokens,
        length_penalty=length_penalty,
        early_stopping=early_stopping,
        finished=finished,
        prune_threshold=prune_threshold,
        num_return_sequences=num_return_sequences,
        pad_id=pad_id,
        vocab_size=vocab_size,
    )
    start_ids = _check_start_ids(start_ids, batch_size)
    reorder_fn: Callable[[Any, Tensor], Any] = reorder if reorder is not None else reorder_state
    device = start_ids.device
    B, K, P = batch_size, num_beams, start_ids.shape[1]
    fill_id = eos_ids[0] if pad_id is None else pad_id
    eos_tensor = torch.tensor(eos_ids, dtype=torch.int64, device=device)
    refill = finished == "refill"
    # Refill keeps enough candidates that K non-EOS ones survive even if every EOS ID ranks high.
    num_candidates = max(2, 1 + len(eos_ids)) * K if refill else K
    log_prune = math.log(prune_threshold) if prune_threshold else None

    # Live beams: whole token rows (prompt included) and accumulated scores.  Only beam 0 of a
    # sentence starts alive, so the first step expands one hypothesis, not K copies of it.
    running_tokens = torch.full(
        (B, K, P + max_new_tokens), fill_id, dtype=torch.int64, device=device
    )
    running_tokens[:, :, :P] = start_ids[:, None, :]
    running_scores = torch.full((B, K), -math.inf, dtype=torch.float32, device=device)
    running_scores[:, 0] = 0.0
    running_token_scores = (
        torch.zeros((B, K, max_new_tokens), dtype=torch.float32, device=device)
        if output_token_scores
        else None
    )

    def new_pool() -> _Pool:
        width = P + max_new_tokens
        return _Pool.empty(B, K, width, max_new_tokens, fill_id, output_token_scores, device)

    # The pool of the K best finished hypotheses per sentence, sorted best first; -inf is empty.
    pool = new_pool()
    # Mask mode only: EOS candidates that fell out of the beam (note 5) and the beams cut off at
    # max_new_tokens, used in that order when too few EOS hypotheses survived.
    fallbacks = None if refill else (new_pool(), new_pool())
    done = torch.zeros(B, dtype=torch.bool, device=device)
    sentence_offsets = torch.arange(B, device=device)[:, None] * K  # [B, 1]

    for step in range(max_new_tokens):
        cur_len = P + step
        last_step = step + 1 == max_new_tokens
        tokens = running_tokens[:, :, :cur_len].reshape(B * K, cur_len)
        log_probs, state = step_fn(tokens, state)
        V = _check_log_probs(log_probs, B * K, K, eos_ids, device)
        log_probs = log_probs.float()
        if step < min_new_tokens:
            log_probs = log_probs.index_fill(1, eos_tensor, -math.inf)
        if logits_processor is not None:
            log_probs = logits_processor(tokens, log_probs)
        if score_bias is not None:
            log_probs = log_probs + score_bias(tokens)

        step_log_probs = log_probs.reshape(B, K * V)
        candidates = (step_log_probs.view(B, K, V) + running_scores[:, :, None]).view(B, K * V)
        if log_prune is not None:
            best = candidates.max(dim=1, keepdim=True).values
            candidates = candidates.masked_fill(candidates < best + log_prune, -math.inf)
        cand_scores, cand_flat = candidates.topk(num_candidates, dim=1)  # [B, C], best first
        cand_beam = cand_flat // V
        cand_is_eos = torch.isin(cand_flat % V, eos_tensor)
        cand_ends = cand_is_eos | last_step
        # Mask mode: only EOS hypotheses are finished; beams cut off at the limit are a last resort.
        cand_finishes = cand_ends if refill else cand_is_eos
        cand_tokens, cand_token_scores = _extend(
            running_tokens, running_token_scores, step_log_probs, cand_flat, cur_len, step
        )

        # Finished pool: only the top K candidates may finish (the rest exist to refill the beam),
        # and nothing is added once a sentence is done.
        top_ends = cand_finishes[:, :K] & torch.isfinite(cand_scores[:, :K]) & ~done[:, None]
        if early_stopping is True:
            top_ends &= ~pool.full()[:, None]
        normalized = cand_scores[:, :K] / float((step + 1) ** length_penalty)
        pool.merge(
            normalized.masked_fill(~top_ends, -math.inf),
            cand_tokens[:, :K],
            torch.full_like(cand_beam[:, :K], step + 1),
            None if cand_token_scores is None else cand_token_scores[:, :K],
        )
        if fallbacks is not None:
            _track_mask_mode_fallbacks(
                *fallbacks, candidates, step_log_probs, running_tokens, running_token_scores,
                cand_flat, eos_tensor, cur_len, step, last_step, length_penalty, done, V,
            )  # fmt: skip

        if last_step:
            break

        # New beams: the best K candidates that do not end here.  Ending candidates are pushed
        # down by -1e9 and ranked with topk exactly as transformers does, so that even exact
        # ties between candidates are broken the same way.
        penalized = cand_scores + cand_ends.to(cand_scores.dtype) * -1.0e9
        keep = penalized.topk(K, dim=1).indices  # [B, K]
        parent = cand_beam.gather(1, keep)
        running_scores = cand_scores.gather(1, keep).masked_fill(
            cand_ends.gather(1, keep), -math.inf
        )
        running_tokens = cand_tokens.gather(1, _expand_like(keep, cand_tokens))
        if cand_token_scores is not None:
            running_token_scores = cand_token_scores.gather(
                1, _expand_like(keep, cand_token_scores)
            )
        state = reorder_fn(state, (parent + sentence_offsets).view(B * K))

        done |= _sentence_done(
            running_scores, pool, early_stopping, length_penalty, step + 1, max_new_tokens
        )
        if bool(done.all()):  # the one host sync per step
            break

    if fallbacks is not None:
        fallback, cut_off = fallbacks
        pool = pool.backfilled(fallback).backfilled(cut_off)
    return pool.output(num_return_sequences, P, fill_id)


@dataclass
class _Pool:
    """The K best hypotheses per sentence, sorted by normalized score (best first)."""

    scores: Tensor  # [B, K] float32, -inf = empty
    tokens: Tensor  # [B, K, P + max_new_tokens] int64
    lengths: Tensor  # [B, K] int64 generated tokens
    token_scores: Tensor | None  # [B, K, max_new_tokens]

    @classmethod
    def empty(
        cls,
        B: int,
        K: int,
        width: int,
        max_new_tokens: int,
        fill_id: int,
        with_token_scores: bool,
        device: torch.device,
    ) -> _Pool:
        return cls(
            scores=torch.full((B, K), -math.inf, dtype=torch.float32, device=device),
            tokens=torch.full((B, K, width), fill_id, dtype=torch.int64, device=device),
            lengths=torch.zeros((B, K), dtype=torch.int64, device=device),
            token_scores=(
                torch.zeros((B, K, max_new_tokens), dtype=torch.float32, device=device)
                if with_token_scores
                else None
            ),
        )

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
        all_tokens = torch.cat((self.tokens, tokens), dim=1)
        self.tokens = all_tokens.gather(1, _expand_like(order, all_tokens))
        if self.token_scores is not None and token_scores is not None:
            all_token_scores = torch.cat((self.token_scores, token_scores), dim=1)
            self.token_scores = all_token_scores.gather(1, _expand_like(order, all_token_scores))

    def backfilled(self, other: _Pool) -> _Pool:
        """This pool with its empty slots filled by ``other``'s best entries, in their order."""
        K = self.scores.shape[1]
        # Rank by tier (ours first), then by score: a stable sort on the tier of a score-sorted
        # concatenation does it because both pools are already sorted.
        scores = torch.cat((self.scores, other.scores), dim=1)
        valid = torch.isfinite(scores)
        tier = torch.cat(
            (torch.zeros_like(self.lengths), torch.ones_like(other.lengths)), dim=1
        ).masked_fill(~valid, 2)
        order = torch.sort(tier, dim=1, stable=True).indices[:, :K]
        tokens = torch.cat((self.tokens, other.tokens), dim=1)
        token_scores = None
        if self.token_scores is not None and other.token_scores is not None:
            all_token_scores = torch.cat((self.token_scores, other.token_scores), dim=1)
            token_scores = all_token_scores.gather(1, _expand_like(order, all_token_scores))
        return _Pool(
            scores=scores.gather(1, order),
            tokens=tokens.gather(1, _expand_like(order, tokens)),
            lengths=torch.cat((self.lengths, other.lengths), dim=1).gather(1, order),
            token_scores=token_scores,
        )

    def output(self, num_return_sequences: int, prompt_len: int, fill_id: int) -> BeamOutput:
        R = num_return_sequences
        lengths = self.lengths[:, :R]
        width = int(lengths.max()) if lengths.numel() else 0  # one sync, after the search
        sequences = self.tokens[:, :R, prompt_len : prompt_len + width]
        positions = torch.arange(width, device=sequences.device)
        beyond = positions >= lengths[:, :, None]
        token_scores = None
        if self.token_scores is not None:
            token_scores = self.token_scores[:, :R, :width].masked_fill(beyond, 0.0)
        return BeamOutput(
            sequences=sequences.masked_fill(beyond, fill_id),
            lengths=lengths,
            scores=self.scores[:, :R],
            token_scores=token_scores,
        )


def _track_mask_mode_fallbacks(
    fallback: _Pool,
    cut_off: _Pool,
    candidates: Tensor,
    step_log_probs: Tensor,
    running_tokens: Tensor,
    running_token_scores: Tensor | None,
    cand_flat: Tensor,
    eos_tensor: Tensor,
    cur_len: int,
    step: int,
    last_step: bool,
    length_penalty: float,
    done: Tensor,
    V: int,
) -> None:
    """Mask mode: remember EOS candidates that missed the beam, and the beams cut off at the end."""
    B, K = running_tokens.shape[:2]
    norm = float((step + 1) ** length_penalty)
    # Every (beam, EOS) candidate: [B, K * E] flat indices into the K*V candidates.
    eos_flat = (torch.arange(K, device=eos_tensor.device)[:, None] * V + eos_tensor).view(1, -1)
    eos_flat = eos_flat.expand(B, -1)
    in_beam = (eos_flat[:, :, None] == cand_flat[:, None, :]).any(dim=2)
    eos_scores = candidates.gather(1, eos_flat)
    eos_scores = eos_scores.masked_fill(in_beam | done[:, None], -math.inf) / norm
    eos_tokens, eos_token_scores = _extend(
        running_tokens, running_token_scores, step_log_probs, eos_flat, cur_len, step
    )
    lengths = torch.full_like(eos_flat, step + 1)
    fallback.merge(eos_scores, eos_tokens, lengths, eos_token_scores)
    if last_step:
        # Beams still alive at the limit that did not end in EOS (those are in the pool or above).
        flat = candidates.gather(1, cand_flat)
        is_eos = torch.isin(cand_flat % V, eos_tensor)
        cut_scores = flat.masked_fill(is_eos | done[:, None], -math.inf) / norm
        cut_tokens, cut_token_scores = _extend(
            running_tokens, running_token_scores, step_log_probs, cand_flat, cur_len, step
        )
        cut_off.merge(
            cut_scores, cut_tokens, torch.full_like(cand_flat, step + 1), cut_token_scores
        )


def _extend(
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
        running_token_scores: ``[B, K, max_new_tokens]`` or ``None``.
        step_log_probs: ``[B, K * V]`` this step's processed log-probs.
        flat: ``[B, C]`` candidate indices into the ``K * V`` continuations of a sentence.

    Returns:
        ``[B, C, W]`` the parent's row with the new token at ``cur_len``, and ``[B, C, ...]``
        scores with the new token's at ``step`` (or ``None``).
    """
    V = step_log_probs.shape[1] // running_tokens.shape[1]
    parent = flat // V
    tokens = running_tokens.gather(1, _expand_like(parent, running_tokens))
    tokens[:, :, cur_len] = flat % V
    if running_token_scores is None:
        return tokens, None
    token_scores = running_token_scores.gather(1, _expand_like(parent, running_token_scores))
    token_scores[:, :, step] = step_log_probs.gather(1, flat)
    return tokens, token_scores


def _sentence_done(
    running_scores: Tensor,
    pool: _Pool,
    early_stopping: EarlyStopping,
    length_penalty: float,
    generated: int,
    max_new_tokens: int,
) -> Tensor:
    """``[B]`` bool: nothing can change a sentence's finished pool any more."""
    no_live_beam = ~torch.isfinite(running_scores).any(dim=1)
    full = pool.full()
    if early_stopping is True:
        return full | no_live_beam
    # The best a live beam could still score: at its current length, or (for "never" with a
    # positive length penalty, where longer is better) at the length limit.
    best_length = max_new_tokens if early_stopping == "never" and length_penalty > 0 else generated
    best_possible = running_scores.max(dim=1).values / float(best_length**length_penalty)
    worst_finished = pool.scores.min(dim=1).values
    return (full & (best_possible <= worst_finished)) | no_live_beam


def _expand_like(index: Tensor, source: Tensor) -> Tensor:
    """Broadcast a ``[B, C]`` beam index to gather ``[B, K, ...]`` rows of ``source``."""
    return index.view(*index.shape, *([1] * (source.dim() - 2))).expand(
        *index.shape, *source.shape[2:]
    )


def check_settings(
    *,
    batch_size: int,
    num_beams: int,
    eos_id: int | Sequence[int],
    max_new_tokens: int,
    min_new_tokens: int,
    length_penalty: float,
    early_stopping: EarlyStopping,
    finished: str,
    prune_threshold: float | None,
    num_return_sequences: int,
    pad_id: int | None,
    vocab_size: int | None,
) -> list[int]:
    """Validate the scalar options before any work; return the EOS IDs as a list."""
    for name, value, low in (
        ("batch_size", batch_size, 1),
        ("num_beams", num_beams, 1),
        ("max_new_tokens", max_new_tokens, 1),
        ("min_new_tokens", min_new_tokens, 0),
        ("num_return_sequences", num_return_sequences, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    if min_new_tokens > max_new_tokens:
        raise ValueError(
            f"min_new_tokens ({min_new_tokens}) exceeds max_new_tokens ({max_new_tokens}): no "
            "hypothesis could end; lower min_new_tokens or raise max_new_tokens"
        )
    if num_return_sequences > num_beams:
        raise ValueError(
            f"num_return_sequences ({num_return_sequences}) must be <= num_beams ({num_beams})"
        )
    eos_ids = [eos_id] if isinstance(eos_id, int) else list(eos_id)
    if not eos_ids or any(isinstance(e, bool) or not isinstance(e, int) or e < 0 for e in eos_ids):
        raise ValueError(
            f"eos_id must be a token ID >= 0 or a non-empty list of them, got {eos_id!r}"
        )
    if vocab_size is not None:
        if num_beams > vocab_size:
            raise ValueError(
                f"num_beams ({num_beams}) exceeds the vocabulary size ({vocab_size}); use at most "
                f"num_beams={vocab_size}"
            )
        if max(eos_ids) >= vocab_size:
            raise ValueError(f"eos_id {eos_id!r} is out of range for vocab_size={vocab_size}")
    if pad_id is not None and (isinstance(pad_id, bool) or not isinstance(pad_id, int)):
        raise ValueError(f"pad_id must be an int or None, got {pad_id!r}")
    if not isinstance(length_penalty, (int, float)) or not math.isfinite(length_penalty):
        raise ValueError(f"length_penalty must be a finite float, got {length_penalty!r}")
    if not (early_stopping is True or early_stopping is False or early_stopping == "never"):
        raise ValueError(f"early_stopping must be True, False or 'never', got {early_stopping!r}")
    if finished not in ("refill", "mask"):
        raise ValueError(f"finished must be 'refill' or 'mask', got {finished!r}")
    if prune_threshold is not None and not (
        isinstance(prune_threshold, (int, float)) and 0.0 < prune_threshold <= 1.0
    ):
        raise ValueError(
            f"prune_threshold must be in (0, 1] (e.g. 0.01) or None, got {prune_threshold!r}"
        )
    return eos_ids


def _check_start_ids(start_ids: Tensor, batch_size: int) -> Tensor:
    """Return ``start_ids`` as ``[B, P]`` int64, or raise naming what is wrong."""
    if not isinstance(start_ids, Tensor):
        raise TypeError(f"start_ids must be a torch.Tensor, got {type(start_ids).__name__}")
    if start_ids.dtype != torch.int64:
        raise ValueError(f"start_ids must be int64 (torch.long), got {start_ids.dtype}")
    if start_ids.dim() == 1:
        start_ids = start_ids[:, None]
    if start_ids.dim() != 2 or start_ids.shape[0] != batch_size or start_ids.shape[1] == 0:
        raise ValueError(
            f"start_ids must have shape [batch_size] or [batch_size, P] with P >= 1 "
            f"(batch_size={batch_size}), got {list(start_ids.shape)}"
        )
    return start_ids


def _check_log_probs(
    log_probs: Tensor, rows: int, num_beams: int, eos_ids: list[int], device: torch.device
) -> int:
    """Check what ``step_fn`` returned (shape metadata only, no sync) and return ``V``."""
    if not isinstance(log_probs, Tensor) or not log_probs.is_floating_point():
        raise ValueError(
            "step_fn must return (log_probs, state) with float log_probs [B*K, V], got "
            f"{getattr(log_probs, 'dtype', type(log_probs).__name__)}"
        )
    if log_probs.dim() != 2 or log_probs.shape[0] != rows:
        raise ValueError(
            f"step_fn returned log_probs of shape {list(log_probs.shape)}; expected [B*K, V] = "
            f"[{rows}, V]"
        )
    if log_probs.device != device:
        raise ValueError(
            f"step_fn returned log_probs on {log_probs.device} but start_ids are on {device}; "
            "put start_ids on the model's device"
        )
    V = log_probs.shape[1]
    if num_beams > V:
        raise ValueError(
            f"num_beams ({num_beams}) exceeds the vocabulary size ({V}); use at most num_beams={V}"
        )
    if max(eos_ids) >= V:
        raise ValueError(f"eos_id {max(eos_ids)} is out of range for a vocabulary of {V}")
    return V
