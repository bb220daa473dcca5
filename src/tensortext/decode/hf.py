"""Hugging Face entry points: :func:`generate` (a drop-in for ``model.generate``) and
:func:`beam_search_hf` (tensor-native, returns :class:`~tensortext.decode.beam.BeamOutput`).

Both are thin wrappers over :class:`~tensortext.decode.hf_decoder.HFDecoder` (the model as a
:class:`~tensortext.decode.decoder.Decoder`, with explicit state) and
:func:`~tensortext.decode.beam.beam_search`:

* ``generate(model, input_ids, attention_mask, **kwargs)`` takes what ``model.generate`` takes
  for deterministic search (``generation_config=`` and keyword overrides with HF's precedence,
  ``max_length`` / ``max_new_tokens``, ``num_beams``, ``num_return_sequences``,
  ``no_repeat_ngram_size``, ``repetition_penalty``, ``bad_words_ids``, ``logits_processor=``...)
  and returns what it returns: ``sequences [B*R, P + T]`` (decoder start token or prompt first,
  padded as HF pads), or with ``return_dict_in_generate=True`` HF's own output class with
  ``sequences``, ``beam_indices``, and ``sequences_scores`` and ``scores`` (when
  ``output_scores=True``).
  ``num_beams=1`` is greedy search, as in ``generate``.
* ``beam_search_hf(model, input_ids, ..., num_beams=K, max_new_tokens=...)`` adds what
  ``generate`` cannot express: ``score_bias`` (e.g. LMBR), ``finished="mask"``,
  ``prune_threshold`` and per-token scores.

``transformers`` is an optional dependency (``pip install tensortext[hf]``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from tensortext.decode.beam import BeamOutput, EarlyStopping, ScoreBias, search
from tensortext.decode.hf_config import hf_module
from tensortext.decode.hf_decoder import HFDecoder, HFState
from tensortext.decode.settings import BeamSettings, Finished
from tensortext.padded import PAD_ID

__all__ = ["HFDecoder", "HFState", "beam_search_hf", "generate"]


def generate(
    model: Any,
    input_ids: Tensor,
    attention_mask: Tensor | None = None,
    *,
    generation_config: Any | None = None,
    logits_processor: Any | None = None,
    **kwargs: Any,
) -> Any:
    """``model.generate(input_ids, attention_mask=..., ...)`` for beam and greedy search.

    Args:
        model: A ``transformers`` model with a language-modeling head.
        input_ids: ``[B, S]`` int64 source tokens (encoder-decoder) or prompts (decoder-only,
            padded on the left), on the model's device.
        attention_mask: ``[B, S]`` 0/1 mask of ``input_ids``; default all ones, or for
            decoder-only models the non-pad tokens (as ``generate`` infers it).
        generation_config: A ``transformers.GenerationConfig``; unset fields come from
            ``model.generation_config``.
        logits_processor: A ``transformers.LogitsProcessorList`` merged into the configuration's
            processors as ``generate`` merges it.
        **kwargs: ``GenerationConfig`` fields, which override ``generation_config``.

    Returns:
        ``[B*R, P + T]`` int64 sequences, or with ``return_dict_in_generate=True`` a
        ``GenerateBeamEncoderDecoderOutput`` / ``GenerateBeamDecoderOnlyOutput`` (greedy:
        ``GenerateEncoderDecoderOutput`` / ``GenerateDecoderOnlyOutput``). Its ``beam_indices``
        ``[B*R, T]`` int32 hold, as HF's, the row of the ``B*K`` beams that produced each
        generated token (``b*K`` for the first), -1 after the hypothesis.

    Raises:
        TypeError: a keyword that is no ``GenerationConfig`` field, or ``input_ids`` of a wrong
            type or dtype.
        ValueError: ``do_sample=True`` (use ``model.generate``) or another method's setting,
            bad shapes, or settings out of range; all before the encoder runs.

    Matches ``model.generate`` of ``transformers`` (sequences equal, scores within float32
    rounding), with the encoder and the prefill run once per sentence instead of once per beam.
    """
    decoder = HFDecoder(model, generation_config, logits_processor=logits_processor, **kwargs)
    config = decoder.generation_config
    num_beams, R = int(config.num_beams), int(config.num_return_sequences)
    if attention_mask is None and not decoder.is_encoder_decoder:
        attention_mask = _inferred_mask(decoder, input_ids)
    input_ids, attention_mask = decoder.check_inputs(input_ids, attention_mask)
    if num_beams == 1 and R != 1:
        raise ValueError(
            f"num_return_sequences={R} needs beam search; pass num_beams >= {R} (greedy search "
            "returns one sequence per input)"
        )
    settings = _beam_settings(decoder, input_ids, num_beams, R, min_new_tokens=0)
    record = bool(config.return_dict_in_generate and config.output_scores)
    start_ids, state = decoder.prepare_inputs(input_ids, attention_mask, num_beams)
    if num_beams == 1:
        sequences, scores = greedy_search(decoder, start_ids, state, record_scores=record)
        return _greedy_output(decoder, sequences, scores)
    trace = None
    if config.return_dict_in_generate:
        trace = _SearchTrace(start_ids.shape[1], record_scores=record)
    # generate pads beam output with pad_token_id, or the first EOS where that is unset or 0.
    pad_id = decoder.pad_token_id or decoder.eos_ids[0]
    out = _search(decoder, start_ids, state, settings, trace=trace, pad_id=pad_id)
    sequences = torch.cat(
        (start_ids.repeat_interleave(R, 0), out.sequences.flatten(0, 1)), dim=1
    )  # [B*R, P + T]
    if trace is None:
        return sequences
    return _beam_output(decoder, sequences, out, trace)


def beam_search_hf(
    model: Any,
    input_ids: Tensor,
    attention_mask: Tensor | None = None,
    *,
    num_beams: int,
    max_new_tokens: int,
    min_new_tokens: int | None = None,
    length_penalty: float | None = None,
    early_stopping: EarlyStopping | None = None,
    num_return_sequences: int = 1,
    finished: Finished = "refill",
    prune_threshold: float | None = None,
    score_bias: ScoreBias | None = None,
    logits_processor: Any | None = None,
    output_token_scores: bool = False,
) -> BeamOutput:
    """Beam search with a ``transformers`` model, ``B`` sentences x ``K`` beams per model call.

    Args:
        model: A ``transformers`` model with a language-modeling head.
        input_ids: ``[B, S]`` int64 source tokens (encoder-decoder) or prompts (decoder-only,
            padded on the left), on the model's device.
        attention_mask: ``[B, S]`` 0/1 mask of ``input_ids``; default all ones.
        num_beams: ``K``.
        max_new_tokens: Most tokens to generate (EOS included), as in ``generate``.
        min_new_tokens: EOS is forbidden before this many new tokens; default the model's
            ``generation_config``.
        length_penalty: Default ``model.generation_config.length_penalty`` (or 1.0).
        early_stopping: ``True``, ``False`` or ``"never"``; default the generation config's.
        num_return_sequences: ``R <= K`` best hypotheses per sentence.
        finished: ``"refill"`` (``generate``'s semantics) or ``"mask"`` (the paper's).
        prune_threshold: See :func:`~tensortext.decode.beam.beam_search`.
        score_bias: Additive ``[B*K, V]`` scores per step, e.g. LMBR.
        logits_processor: Applied with the model's own generation-config processors (merged as
            ``generate`` merges them).
        output_token_scores: Also return per-token scores.

    Returns:
        :class:`~tensortext.decode.beam.BeamOutput` of the generated tokens only, padded with
        :data:`~tensortext.padded.PAD_ID` (the package's convention; :func:`generate` pads as
        HF does). HF's ``sequences`` are the decoder start token (or the prompt) followed by
        these.

    Raises:
        TypeError, ValueError: bad inputs or settings, before the encoder runs.

    Every ``model.generation_config`` setting that :func:`generate` applies applies here too.
    """
    overrides: dict[str, Any] = {
        "num_beams": num_beams,
        "num_return_sequences": num_return_sequences,
    }
    for name, value in (
        ("min_new_tokens", min_new_tokens),
        ("length_penalty", length_penalty),
        ("early_stopping", early_stopping),
    ):
        if value is not None:
            overrides[name] = value
    decoder = HFDecoder(
        model, max_new_tokens=max_new_tokens, logits_processor=logits_processor, **overrides
    )
    input_ids, attention_mask = decoder.check_inputs(input_ids, attention_mask)
    # Check every setting before the encoder or the prefill runs.
    min_new = decoder.generation_config.min_new_tokens
    settings = _beam_settings(
        decoder, input_ids, num_beams, num_return_sequences, min_new_tokens=int(min_new or 0),
        finished=finished, prune_threshold=prune_threshold,
    )  # fmt: skip
    start_ids, state = decoder.prepare_inputs(input_ids, attention_mask, num_beams)
    return _search(
        decoder, start_ids, state, settings, score_bias=score_bias,
        output_token_scores=output_token_scores, pad_id=PAD_ID,
    )  # fmt: skip


def greedy_search(
    decoder: HFDecoder, start_ids: Tensor, state: HFState, *, record_scores: bool = False
) -> tuple[Tensor, list[Tensor]]:
    """``generate``'s greedy search (``num_beams=1``): the processed logits' argmax per step.

    As in ``generate``, the processors see raw logits (not log-probabilities), a finished row
    continues with the pad token ID, and the search stops once every row has ended.

    Args:
        decoder: The model.
        start_ids: ``[B, P]`` from :meth:`HFDecoder.prepare_inputs` with ``num_beams=1``.
        state: Its state.
        record_scores: Also return every step's processed logits ``[B, V]``.

    Returns:
        ``(sequences [B, P + T], scores)``.
    """
    tokens = start_ids
    eos = torch.tensor(decoder.eos_ids, dtype=torch.int64, device=tokens.device)
    unfinished = torch.ones(tokens.shape[0], dtype=torch.bool, device=tokens.device)
    scores: list[Tensor] = []
    for _ in range(state.lengths.max_new_tokens):
        logits, state = decoder.next_logits(tokens, state)
        processed = state.processors(tokens, logits)
        if record_scores:
            scores.append(processed)
        next_ids = processed.argmax(dim=-1).masked_fill(~unfinished, decoder.pad_token_id)
        tokens = torch.cat((tokens, next_ids[:, None]), dim=1)
        unfinished &= ~torch.isin(next_ids, eos)
        if not bool(unfinished.any()):  # the one host sync per step
            break
    return tokens, scores


def _inferred_mask(decoder: HFDecoder, input_ids: Tensor) -> Tensor | None:
    """As ``generate`` without a mask for a decoder-only model: pad tokens are padding, unless
    the pad token is unset or is an EOS token (one host sync)."""
    pad_id = decoder.generation_config.pad_token_id
    if not isinstance(input_ids, Tensor) or pad_id is None or int(pad_id) in decoder.eos_ids:
        return None
    is_pad = input_ids == int(pad_id)
    return (~is_pad).long() if bool(is_pad.any()) else None


def _beam_settings(
    decoder: HFDecoder,
    input_ids: Tensor,
    num_beams: int,
    num_return_sequences: int,
    *,
    min_new_tokens: int,
    finished: Finished = "refill",
    prune_threshold: float | None = None,
) -> BeamSettings:
    """The search's :class:`BeamSettings` from the resolved generation configuration, checked
    against the model and the batch before the encoder or the prefill runs.

    ``min_new_tokens`` is checked here but applied by the model's processors (inside
    :meth:`HFDecoder.step`, in ``generate``'s order), so the search itself gets 0.
    """
    config = decoder.generation_config
    prompt_len = input_ids.shape[1] if decoder.start_id is None else 1
    lengths = decoder.search_lengths(prompt_len, input_ids.shape[1])
    settings = BeamSettings(
        num_beams=num_beams,
        max_new_tokens=lengths.max_new_tokens,
        min_new_tokens=min_new_tokens,
        length_penalty=config.length_penalty,
        early_stopping=config.early_stopping,
        finished=finished,
        prune_threshold=prune_threshold,
        num_return_sequences=num_return_sequences,
    )
    settings.check_search(
        batch_size=input_ids.shape[0],
        eos_id=decoder.eos_ids,
        pad_id=decoder.pad_token_id,
        vocab_size=decoder.vocab_size,
    )
    return dataclasses.replace(settings, min_new_tokens=0)


def _search(
    decoder: HFDecoder,
    start_ids: Tensor,
    state: HFState,
    settings: BeamSettings,
    *,
    score_bias: ScoreBias | None = None,
    trace: _SearchTrace | None = None,
    output_token_scores: bool = False,
    pad_id: int,
) -> BeamOutput:
    """:func:`~tensortext.decode.beam.search` with the decoder; the processors
    (``min_new_tokens`` included) run inside :meth:`HFDecoder.step`, in ``generate``'s order.
    A ``trace`` sees every step's processed scores and every reorder."""
    reorder = decoder.reorder if trace is None else trace.reorder(decoder.reorder)
    with torch.inference_mode():
        return search(
            decoder.step,
            state,
            settings,
            batch_size=start_ids.shape[0],
            eos_id=decoder.eos_ids,
            start_ids=start_ids,
            score_bias=score_bias,
            logits_processor=trace,
            reorder=reorder,
            pad_id=pad_id,
            vocab_size=decoder.vocab_size,
            output_token_scores=output_token_scores,
        )


class _SearchTrace:
    """What ``generate``'s output holds beyond the hypotheses, recorded during the search.

    An identity logits processor (it sees each step's token rows and processed scores) and a
    wrapper of the reorder (it sees each step's ``beam_idx``). Per step it keeps ``[B*K]``
    tensors only, and the ``[B*K, V]`` scores when ``output_scores`` asks for them.
    """

    def __init__(self, prompt_len: int, *, record_scores: bool) -> None:
        self.prompt_len = prompt_len
        self.scores: list[Tensor] | None = [] if record_scores else None
        # parents[s][j]: the row (of B*K) that row j continued at step s; newest[s][j]: the
        # token it added then.
        self.parents: list[Tensor] = []
        self.newest: list[Tensor] = []

    def __call__(self, tokens: Tensor, log_probs: Tensor) -> Tensor:
        if tokens.shape[1] > self.prompt_len:
            self.newest.append(tokens[:, -1].clone())
        if self.scores is not None:
            self.scores.append(log_probs)
        return log_probs

    def reorder(self, reorder: Callable[[Any, Tensor], Any]) -> Callable[[Any, Tensor], Any]:
        """``reorder`` that first records its ``beam_idx [B*K]``."""

        def recorded(state: Any, beam_idx: Tensor) -> Any:
            self.parents.append(beam_idx)
            return reorder(state, beam_idx)

        return recorded

    def beam_indices(self, sequences: Tensor, lengths: Tensor, num_beams: int) -> Tensor:
        """HF's ``beam_indices`` ``[B*R, T]`` int32 of the returned hypotheses.

        Entry ``t`` is the row of the ``B*K`` beams whose scores gave token ``t``, -1 from
        ``lengths`` on. A hypothesis starts from row ``b*K`` (only beam 0 is alive at first);
        each next row is the one that continued it: its parent is the current row and its newest
        token the hypothesis's. Those two identify it, as the candidates of a step are distinct
        ``(parent, token)`` pairs.

        Args:
            sequences: ``[B, R, T]`` generated tokens.
            lengths: ``[B, R]``.
            num_beams: ``K``.
        """
        B, R, T = sequences.shape
        K, device = num_beams, sequences.device
        sentence_rows = torch.arange(B * K, device=device).view(B, K).repeat_interleave(R, 0)
        tokens, lengths = sequences.reshape(B * R, T), lengths.reshape(B * R, 1)
        row = sentence_rows[:, 0]  # [B*R]
        rows = []
        for t in range(T):
            rows.append(row)
            if t + 1 < T:
                continues = (self.parents[t][sentence_rows] == row[:, None]) & (
                    self.newest[t][sentence_rows] == tokens[:, t : t + 1]
                )  # [B*R, K]: one True while the hypothesis goes on
                row = sentence_rows.gather(1, continues.int().argmax(1, keepdim=True))[:, 0]
        indices = torch.stack(rows, dim=1) if rows else tokens.new_zeros((B * R, 0))
        beyond = torch.arange(T, device=device) >= lengths
        return indices.masked_fill(beyond, -1).to(torch.int32)


def _beam_output(
    decoder: HFDecoder, sequences: Tensor, out: BeamOutput, trace: _SearchTrace
) -> Any:
    """HF's own beam-search output class; ``sequences_scores`` only with ``output_scores``."""
    outputs = hf_module("transformers.generation.utils")
    scores = None if trace.scores is None else tuple(trace.scores)
    sequences_scores = None if trace.scores is None else out.scores.flatten()
    beam_indices = trace.beam_indices(
        out.sequences, out.lengths, int(decoder.generation_config.num_beams)
    )
    output_class = (
        outputs.GenerateBeamEncoderDecoderOutput
        if decoder.is_encoder_decoder
        else outputs.GenerateBeamDecoderOnlyOutput
    )
    return output_class(
        sequences=sequences,
        sequences_scores=sequences_scores,
        scores=scores,
        beam_indices=beam_indices,
    )


def _greedy_output(decoder: HFDecoder, sequences: Tensor, scores: list[Tensor]) -> Any:
    """``sequences``, or HF's own greedy output class with ``return_dict_in_generate``."""
    if not decoder.generation_config.return_dict_in_generate:
        return sequences
    outputs = hf_module("transformers.generation.utils")
    recorded = tuple(scores) if decoder.generation_config.output_scores else None
    if decoder.is_encoder_decoder:
        return outputs.GenerateEncoderDecoderOutput(sequences=sequences, scores=recorded)
    return outputs.GenerateDecoderOnlyOutput(sequences=sequences, scores=recorded)
