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

Memory and time follow the length reached, not ``max_new_tokens``: the token rows start short
and double when full (:mod:`tensortext.decode.search_state`), so a search that ends after 21
steps costs the same with ``max_new_tokens=50`` or ``2**40``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import torch
from torch import Tensor

from tensortext.decode.decoder import reorder_state
from tensortext.decode.output import BeamOutput
from tensortext.decode.pool import HypothesisPool, expand_like, extend_candidates
from tensortext.decode.search_state import Beams, Candidates, SearchSpec
from tensortext.decode.settings import (
    BeamSettings,
    EarlyStopping,
    Finished,
    check_log_probs,
    check_settings,
    check_start_ids,
    check_state_rows,
    check_vocab_fits,
    invalid_rows,
    raise_invalid_log_probs,
)

__all__ = ["BeamOutput", "BeamSettings", "EarlyStopping", "beam_search", "check_settings", "search"]

State = TypeVar("State")
StepFn = Callable[[Tensor, State], tuple[Tensor, State]]
ReorderFn = Callable[[State, Tensor], State]
LogitsProcessor = Callable[[Tensor, Tensor], Tensor]
ScoreBias = Callable[[Tensor], Tensor]


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
    finished: Finished = "refill",
    prune_threshold: float | None = None,
    num_return_sequences: int = 1,
    score_bias: ScoreBias | None = None,
    logits_processor: LogitsProcessor | None = None,
    reorder: ReorderFn[State] | None = None,
    pad_id: int | None = None,
    vocab_size: int | None = None,
    output_token_scores: bool = False,
    validate: bool = True,
) -> BeamOutput:
    """Beam search for ``B`` sentences x ``K`` beams, one model call per step.

    Args:
        step_fn: ``step_fn(tokens [B*K, t], state) -> (log_probs [B*K, V], state)``.  ``tokens``
            holds every prefix so far (``start_ids`` first); row ``r`` is beam ``r % K`` of
            sentence ``r // K``.  Rows of finished or dead beams are still passed (masked, not
            removed); their outputs are ignored.
        state: Model state for the ``B*K`` rows (e.g. a KV cache); reordered after every step.
            With the default ``reorder``, every tensor in it must have ``B*K`` rows on dim 0.
        batch_size: ``B``, number of sentences.
        num_beams: ``K``, beams per sentence; at most ``V``.
        eos_id: End-of-sentence token ID, or several (any of them ends a hypothesis); NumPy
            integers and 0-d integer tensors are accepted.
        start_ids: ``[B]`` or ``[B, P]`` int64 first tokens of every sentence (decoder start
            token, or a prompt of the same length for every sentence).
        max_new_tokens: Most tokens to generate per hypothesis, EOS included; at most
            ``2**63 - 1``.  Memory follows the tokens generated, so a generous limit is free.
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
        score_bias: ``score_bias(tokens [B*K, t]) -> [B*K, V]`` (checked), added to the
            log-probabilities before selection (e.g. :class:`~tensortext.lmbr.LMBRBias`).
        logits_processor: ``processor(tokens [B*K, t], log_probs [B*K, V]) -> [B*K, V]``
            (checked), applied before ``score_bias``; a ``transformers.LogitsProcessorList``
            works as is.
        reorder: ``reorder(state, beam_idx [B*K]) -> state``; default
            :func:`~tensortext.decode.decoder.reorder_state`.
            ``beam_idx`` never crosses sentences: row ``r`` comes from a row of sentence ``r // K``.
        pad_id: Fills ``sequences`` after each hypothesis ends; default
            :data:`~tensortext.padded.PAD_ID` (-1), the package's padding convention.
        vocab_size: ``V``, if known, to validate ``eos_id`` and ``num_beams`` before the first
            model call; otherwise they are checked against the first ``log_probs``.
        output_token_scores: Also return per-token scores.
        validate: Raise if a live beam's (processed) log-probs hold NaN or ``+inf``; the check
            shares the stop check's host sync (one more sync at the last step). ``False``
            skips it.

    Returns:
        :class:`BeamOutput` with ``sequences [B, R, T]``, ``lengths [B, R]``, ``scores [B, R]``.

    Raises:
        TypeError: A setting or ``start_ids`` of the wrong type or dtype.
        ValueError: A setting out of range, ``start_ids`` of the wrong shape, ``num_beams > V``
            (or ``V < max(2, 1 + #EOS)`` with refill), a ``state`` without ``B*K`` rows,
            ``step_fn``, ``logits_processor`` or ``score_bias`` returning scores of the wrong
            shape or device, or (with ``validate``) NaN or ``+inf`` log-probs, naming the step
            and row.

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
        >>> best = out.without_eos(0)  # the best hypotheses without EOS, ready for BLEU
        >>> best.ids.tolist(), best.lengths.tolist()
        ([[1, -1]], [1])
    """
    settings = BeamSettings(
        num_beams=num_beams,
        max_new_tokens=max_new_tokens,
        min_new_tokens=min_new_tokens,
        length_penalty=length_penalty,
        early_stopping=early_stopping,
        finished=finished,
        prune_threshold=prune_threshold,
        num_return_sequences=num_return_sequences,
    )
    return search(
        step_fn, state, settings, batch_size=batch_size, eos_id=eos_id, start_ids=start_ids,
        score_bias=score_bias, logits_processor=logits_processor, reorder=reorder,
        pad_id=pad_id, vocab_size=vocab_size, output_token_scores=output_token_scores,
        validate=validate,
    )  # fmt: skip


def search(
    step_fn: StepFn[State],
    state: State,
    settings: BeamSettings,
    *,
    batch_size: int,
    eos_id: int | Sequence[int],
    start_ids: Tensor,
    score_bias: ScoreBias | None = None,
    logits_processor: LogitsProcessor | None = None,
    reorder: ReorderFn[State] | None = None,
    pad_id: int | None = None,
    vocab_size: int | None = None,
    output_token_scores: bool = False,
    validate: bool = True,
) -> BeamOutput:
    """:func:`beam_search` with its settings as one :class:`BeamSettings` (what
    :func:`~tensortext.decode.translate` and the HF entry points call); the other arguments
    are :func:`beam_search`'s."""
    if not isinstance(settings, BeamSettings):
        raise TypeError(f"settings must be a BeamSettings, got {type(settings).__name__}")
    eos_ids = settings.check_search(
        batch_size=batch_size, eos_id=eos_id, pad_id=pad_id, vocab_size=vocab_size
    )
    start_ids = check_start_ids(start_ids, batch_size)
    if reorder is None:
        check_state_rows(state, batch_size * settings.num_beams)
    spec = SearchSpec.create(start_ids, settings, eos_ids, pad_id, output_token_scores, validate)
    reorder_fn: Callable[[Any, Tensor], Any] = reorder if reorder is not None else reorder_state
    pool = _search(step_fn, state, reorder_fn, spec.initial_beams(start_ids), spec,
                   logits_processor, score_bias)  # fmt: skip
    return pool.best(settings.num_return_sequences, spec.P, spec.fill_id, spec.eos)


def _search(
    step_fn: StepFn[Any],
    state: Any,
    reorder: Callable[[Any, Tensor], Any],
    beams: Beams,
    spec: SearchSpec,
    logits_processor: LogitsProcessor | None,
    score_bias: ScoreBias | None,
) -> HypothesisPool:
    """The step loop: one model call per step, until every sentence is done or the limit.

    Returns the pool of finished hypotheses (in mask mode backfilled from the fallbacks).
    """
    pool = spec.new_pool()
    # Mask mode only: EOS candidates that fell out of the beam (note 5) and the beams cut off at
    # max_new_tokens, used in that order when too few EOS hypotheses survived.
    fallbacks = None if spec.refill else (spec.new_pool(), spec.new_pool())
    done = torch.zeros(spec.B, dtype=torch.bool, device=spec.device)
    capacity = spec.initial_capacity
    # Whether some beam is dead (-inf): beams 1..K-1 at the start, later as the stop check says.
    any_dead = spec.K > 1
    for step in range(spec.max_new_tokens):
        if step == capacity:  # the rows are full; the step count decides, so no host sync
            extra = spec.grown_capacity(capacity) - capacity
            beams = beams.widened(extra, spec.fill_id)
            for each in (pool, *(fallbacks or ())):
                each.widen(extra, spec.fill_id)
            capacity += extra
        last_step = step + 1 == spec.max_new_tokens
        tokens = beams.tokens[:, :, : spec.P + step].reshape(spec.B * spec.K, spec.P + step)
        log_probs, state = step_fn(tokens, state)
        log_probs = _processed_log_probs(
            log_probs, tokens, step, spec, logits_processor, score_bias
        )
        candidates = _top_candidates(log_probs, beams, spec, step, last_step, any_dead)
        invalid = _invalid_sentences(candidates) if spec.validate else None
        _update_finished(pool, candidates, spec, step, done)
        if fallbacks is not None:
            _track_mask_mode_fallbacks(fallbacks, candidates, beams, spec, step, last_step, done)
        if last_step:
            if invalid is not None and bool(invalid.any()):  # host sync: validation only
                raise_invalid_log_probs(invalid_rows(log_probs, beams.scores), step, spec.K)
            break
        running_scores = beams.scores
        beams, parent = _next_beams(candidates, spec)
        state = reorder(state, (parent + spec.sentence_offsets).view(spec.B * spec.K))
        live = _finite(beams.scores)
        done |= _sentence_done(beams.scores, live, pool, spec, step + 1)
        all_done, any_invalid, any_dead = _stop(done, invalid, live)  # the one host sync
        if any_invalid:
            raise_invalid_log_probs(invalid_rows(log_probs, running_scores), step, spec.K)
        if all_done:
            break
    if fallbacks is not None:
        pool = pool.backfilled(fallbacks[0]).backfilled(fallbacks[1])
    return pool


def _processed_log_probs(
    log_probs: Tensor,
    tokens: Tensor,
    step: int,
    spec: SearchSpec,
    logits_processor: LogitsProcessor | None,
    score_bias: ScoreBias | None,
) -> Tensor:
    """The model's ``[B*K, V]`` log-probs after min length, processors and the score bias."""
    rows = spec.B * spec.K
    check_log_probs("log_probs (returned by step_fn)", log_probs, rows, None, spec.device)
    vocab_size = log_probs.shape[1]
    check_vocab_fits(
        spec.K, list(spec.eos_ids), vocab_size, finished="refill" if spec.refill else "mask"
    )
    log_probs = log_probs.float()
    if step < spec.min_new_tokens:
        log_probs = log_probs.index_fill(1, spec.eos, -math.inf)
    shape = (rows, vocab_size, spec.device)
    if logits_processor is not None:
        processed = logits_processor(tokens, log_probs)
        log_probs = check_log_probs("the logits_processor's output", processed, *shape)
    if score_bias is not None:
        log_probs = log_probs + check_log_probs("score_bias's output", score_bias(tokens), *shape)
    return log_probs


def _stop(done: Tensor, invalid: Tensor | None, live: Tensor) -> tuple[bool, bool, bool]:
    """The host sync of a step, one copy for all three: whether every sentence is done, whether
    (with ``validate``) a live row had NaN or ``+inf`` log-probs, and whether a beam of ``live
    [B, K]`` is dead (the next step must then mask its row)."""
    flags = [done.all(), ~live.all()]
    if invalid is not None:
        flags.append(invalid.any())
    values = torch.stack(flags).tolist()
    return bool(values[0]), invalid is not None and bool(values[2]), bool(values[1])


def _finite(scores: Tensor) -> Tensor:
    """``torch.isfinite`` in two kernels instead of four (it runs several times a step)."""
    return scores.abs() < math.inf


def _invalid_sentences(cand: Candidates) -> Tensor:
    """``[B]`` bool: a live row of the sentence had NaN or ``+inf`` log-probs this step.

    ``topk`` ranks NaN above ``+inf`` above every number, and dead rows are ``-inf`` in
    ``all_scores``, so the best candidate of a sentence is NaN or ``+inf`` exactly then: the
    check reads ``[B]`` values instead of passing over ``[B*K, V]`` log-probs. The row is found
    (by :func:`invalid_rows`) only to name it in the error.
    """
    best = cand.scores[:, 0]
    return ~(best < math.inf)


def _top_candidates(
    log_probs: Tensor, beams: Beams, spec: SearchSpec, step: int, last_step: bool, any_dead: bool
) -> Candidates:
    """The ``C`` best continuations of every sentence, with their token rows.

    ``any_dead``: some beam may be dead (``-inf``); ``False`` only when none is.
    """
    B, K = spec.B, spec.K
    V = log_probs.shape[1]
    step_log_probs = log_probs.reshape(B, K * V)
    all_scores = step_log_probs.view(B, K, V) + beams.scores[:, :, None]
    if any_dead:
        # Dead beams stay -inf whatever the model says (NaN + -inf is NaN, which topk ranks
        # first). A pass over [B, K, V], so skipped when no beam is dead (most steps of refill).
        dead = ~_finite(beams.scores)[:, :, None]
        all_scores.masked_fill_(dead, -math.inf)
    all_scores = all_scores.view(B, K * V)
    if spec.log_prune is not None:
        best = all_scores.max(dim=1, keepdim=True).values
        all_scores.masked_fill_(all_scores < best + spec.log_prune, -math.inf)
    scores, flat = all_scores.topk(spec.num_candidates, dim=1)  # [B, C], best first
    is_eos = torch.isin(flat % V, spec.eos)
    ends = is_eos | last_step
    tokens, token_scores = extend_candidates(
        beams.tokens, beams.token_scores, step_log_probs, flat, spec.P + step, step
    )
    return Candidates(
        all_scores=all_scores,
        step_log_probs=step_log_probs,
        scores=scores,
        flat=flat,
        ends=ends,
        # Mask mode: only EOS hypotheses finish; beams cut off at the limit are a last resort.
        finishes=ends if spec.refill else is_eos,
        tokens=tokens,
        token_scores=token_scores,
    )


def _update_finished(
    pool: HypothesisPool, cand: Candidates, spec: SearchSpec, step: int, done: Tensor
) -> None:
    """Offer the finishing candidates among the top K to the pool.

    Only the top K may finish (the rest exist to refill the beam), and nothing is added once a
    sentence is done.
    """
    K = spec.K
    top_ends = cand.finishes[:, :K] & _finite(cand.scores[:, :K]) & ~done[:, None]
    if spec.early_stopping is True:
        top_ends &= ~pool.full()[:, None]
    normalized = cand.scores[:, :K] / spec.normalizer(step + 1)
    pool.merge(
        normalized.masked_fill(~top_ends, -math.inf),
        cand.tokens[:, :K],
        torch.full_like(cand.flat[:, :K], step + 1),
        None if cand.token_scores is None else cand.token_scores[:, :K],
    )


def _next_beams(cand: Candidates, spec: SearchSpec) -> tuple[Beams, Tensor]:
    """The best K candidates that do not end here, and their parent beams ``[B, K]``.

    Ending candidates are pushed down by -1e9 and ranked with ``topk`` exactly as transformers
    does, so that even exact ties between candidates are broken the same way.
    """
    penalized = cand.scores + cand.ends.to(cand.scores.dtype) * -1.0e9
    keep = penalized.topk(spec.K, dim=1).indices  # [B, K]
    parent = (cand.flat // (cand.step_log_probs.shape[1] // spec.K)).gather(1, keep)
    scores = cand.scores.gather(1, keep).masked_fill(cand.ends.gather(1, keep), -math.inf)
    tokens = cand.tokens.gather(1, expand_like(keep, cand.tokens))
    token_scores = None
    if cand.token_scores is not None:
        token_scores = cand.token_scores.gather(1, expand_like(keep, cand.token_scores))
    return Beams(tokens, scores, token_scores), parent


def _track_mask_mode_fallbacks(
    fallbacks: tuple[HypothesisPool, HypothesisPool],
    cand: Candidates,
    beams: Beams,
    spec: SearchSpec,
    step: int,
    last_step: bool,
    done: Tensor,
) -> None:
    """Mask mode: remember EOS candidates that missed the beam, and the beams cut off at the end."""
    fallback, cut_off = fallbacks
    B, K = spec.B, spec.K
    V = cand.step_log_probs.shape[1] // K
    norm = spec.normalizer(step + 1)
    # Every (beam, EOS) candidate: [B, K * E] flat indices into the K*V candidates.
    eos_flat = (torch.arange(K, device=spec.device)[:, None] * V + spec.eos).view(1, -1)
    eos_flat = eos_flat.expand(B, -1)
    in_beam = (eos_flat[:, :, None] == cand.flat[:, None, :]).any(dim=2)
    eos_scores = cand.all_scores.gather(1, eos_flat)
    eos_scores = eos_scores.masked_fill(in_beam | done[:, None], -math.inf) / norm
    eos_tokens, eos_token_scores = extend_candidates(
        beams.tokens, beams.token_scores, cand.step_log_probs, eos_flat, spec.P + step, step
    )
    fallback.merge(eos_scores, eos_tokens, torch.full_like(eos_flat, step + 1), eos_token_scores)
    if last_step:
        # Beams still alive at the limit that did not end in EOS (those are in the pool or above).
        is_eos = torch.isin(cand.flat % V, spec.eos)
        cut_scores = cand.scores.masked_fill(is_eos | done[:, None], -math.inf) / norm
        lengths = torch.full_like(cand.flat, step + 1)
        cut_off.merge(cut_scores, cand.tokens, lengths, cand.token_scores)


def _sentence_done(
    running_scores: Tensor, live: Tensor, pool: HypothesisPool, spec: SearchSpec, generated: int
) -> Tensor:
    """``[B]`` bool: nothing can change a sentence's finished pool any more (``live [B, K]``:
    the beams with a finite score)."""
    no_live_beam = ~live.any(dim=1)
    full = pool.full()
    if spec.early_stopping is True:
        return full | no_live_beam
    # The best a live beam could still score: at its current length, or (for "never" with a
    # positive length penalty, where longer is better) at the length limit.
    never = spec.early_stopping == "never" and spec.length_penalty > 0
    best_length = spec.max_new_tokens if never else generated
    best_possible = running_scores.max(dim=1).values / spec.normalizer(best_length)
    worst_finished = pool.scores.min(dim=1).values
    return (full & (best_possible <= worst_finished)) | no_live_beam
