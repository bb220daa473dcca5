"""Hugging Face adapter: :func:`beam_search` for ``transformers`` models.

``generate(model, input_ids, attention_mask, num_beams=K, ...)`` returns what
``model.generate(input_ids, attention_mask=..., num_beams=K, do_sample=False, ...)`` returns, as a
:class:`~tensortext.decode.beam.BeamOutput`, for encoder-decoder models (Marian, T5, BART, ...) and
decoder-only ones (GPT-2, Llama-style, ...).  Differences in the work, not in the result:

* the encoder and the first decoder step (or the prompt's prefill) run once per sentence, on
  ``B`` rows, and the cache is then repeated for the ``K`` beams;
* the cross-attention cache is never reordered: every beam of a sentence holds the same one;
* the step bookkeeping is :func:`~tensortext.decode.beam.beam_search`'s fixed-shape tensors.

``transformers`` is an optional dependency (``pip install tensortext[hf]``).
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

from tensortext.decode.beam import (
    BeamOutput,
    EarlyStopping,
    LogitsProcessor,
    ScoreBias,
    beam_search,
    check_settings,
)

__all__ = ["generate"]

# generation_config fields that change beam search results and that this adapter does not apply:
# (name, value meaning "off").  A model configured with one of them gets a clear error instead of
# a silently different result.
_UNSUPPORTED_SETTINGS: tuple[tuple[str, Any], ...] = (
    ("repetition_penalty", 1.0),
    ("encoder_repetition_penalty", 1.0),
    ("no_repeat_ngram_size", 0),
    ("encoder_no_repeat_ngram_size", 0),
    ("num_beam_groups", 1),
    ("diversity_penalty", 0.0),
    ("sequence_bias", None),
    ("force_words_ids", None),
    ("constraints", None),
    ("exponential_decay_length_penalty", None),
    ("forced_decoder_ids", None),
    ("renormalize_logits", False),
)


def generate(
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
    finished: Literal["refill", "mask"] = "refill",
    prune_threshold: float | None = None,
    score_bias: ScoreBias | None = None,
    logits_processor: LogitsProcessor | None = None,
    output_token_scores: bool = False,
) -> BeamOutput:
    """Beam search with a ``transformers`` model, ``B`` sentences x ``K`` beams per model call.

    Args:
        model: A ``transformers`` model with a language-modeling head
            (``*ForConditionalGeneration``, ``*MTModel``, ``*ForCausalLM``, ``*LMHeadModel``).
        input_ids: ``[B, S]`` int64 source tokens (encoder-decoder) or prompt (decoder-only; pad
            on the left), on the model's device.
        attention_mask: ``[B, S]`` 0/1 mask of ``input_ids``; default all ones.
        num_beams: ``K``.
        max_new_tokens: Most tokens to generate (EOS included), as in ``generate``.
        min_new_tokens: EOS is forbidden before this many new tokens; default
            ``model.generation_config.min_new_tokens`` or 0.
        length_penalty: Default ``model.generation_config.length_penalty``.
        early_stopping: ``True``, ``False`` or ``"never"``; default
            ``model.generation_config.early_stopping``.
        num_return_sequences: ``R <= K`` best hypotheses per sentence.
        finished: ``"refill"`` (``generate``'s semantics) or ``"mask"`` (the paper's).
        prune_threshold: See :func:`~tensortext.decode.beam.beam_search`.
        score_bias: Additive ``[B*K, V]`` scores per step, e.g. LMBR.
        logits_processor: Applied after the model's own generation-config processors; a
            ``transformers.LogitsProcessorList`` works.
        output_token_scores: Also return per-token scores.

    Returns:
        :class:`~tensortext.decode.beam.BeamOutput` of the generated tokens only; HF's
        ``sequences`` are the decoder start token (or the prompt) followed by these.

    Raises:
        ValueError: Bad shapes or dtypes, or a ``generation_config`` setting this adapter does not
            apply (e.g. ``repetition_penalty``): unset it or pass a ``logits_processor``.

    The model's ``generation_config`` contributes ``eos_token_id``, ``pad_token_id``,
    ``decoder_start_token_id``, ``forced_bos_token_id``, ``forced_eos_token_id``, ``min_length``,
    single-token ``bad_words_ids``, ``suppress_tokens`` and ``begin_suppress_tokens``, as in
    ``generate``.  Sampling settings (``do_sample``, ``temperature``...) are ignored: this is
    deterministic beam search (``do_sample=False``).
    """
    config = getattr(model, "config", None)
    generation_config = getattr(model, "generation_config", None)
    if config is None or generation_config is None:
        raise TypeError(
            f"model must be a transformers PreTrainedModel with a generation_config, got "
            f"{type(model).__name__}"
        )
    device = _model_device(model)
    batch_size, attention_mask = _check_inputs(input_ids, attention_mask, device)
    _check_generation_config(generation_config)
    eos_ids = _as_id_list(generation_config.eos_token_id)
    if not eos_ids:
        raise ValueError(
            "model.generation_config.eos_token_id is not set; set it to the model's end-of-"
            "sequence token ID"
        )
    if min_new_tokens is None:
        min_new_tokens = int(generation_config.min_new_tokens or 0)
    # transformers >= 5 leaves unset fields None and applies its defaults inside generate.
    if length_penalty is None:
        length_penalty = float(_config_value(generation_config, "length_penalty", 1.0))
    if early_stopping is None:
        early_stopping = _config_value(generation_config, "early_stopping", False)
    pad_id = generation_config.pad_token_id
    # Every setting is checked before the encoder or the prefill runs.
    check_settings(
        batch_size=batch_size,
        num_beams=num_beams,
        eos_id=eos_ids,
        max_new_tokens=max_new_tokens,
        min_new_tokens=min_new_tokens,
        length_penalty=length_penalty,
        early_stopping=early_stopping,
        finished=finished,
        prune_threshold=prune_threshold,
        num_return_sequences=num_return_sequences,
        pad_id=None if pad_id is None else int(pad_id),
        vocab_size=_output_vocab_size(model),
    )

    if config.is_encoder_decoder:
        start_id = generation_config.decoder_start_token_id
        if start_id is None:
            start_id = generation_config.bos_token_id
        if start_id is None:
            raise ValueError(
                "model.generation_config.decoder_start_token_id is not set; set it to the "
                "token that starts the decoder"
            )
        start_ids = torch.full((batch_size, 1), int(start_id), dtype=torch.int64, device=device)
    else:
        start_ids = input_ids
    processor = _ConfigProcessor.from_generation_config(
        generation_config,
        eos_ids=eos_ids,
        prompt_len=start_ids.shape[1],
        max_new_tokens=max_new_tokens,
        then=logits_processor,
    )
    # The encoder (or the prompt's prefill) runs from here on, after every check.
    step: _Seq2SeqStep | _CausalStep = (
        _Seq2SeqStep(model, input_ids, attention_mask, num_beams)
        if config.is_encoder_decoder
        else _CausalStep(model, input_ids, attention_mask, num_beams)
    )

    with torch.inference_mode():
        return beam_search(
            step,
            None,
            batch_size=batch_size,
            num_beams=num_beams,
            eos_id=eos_ids,
            start_ids=start_ids,
            max_new_tokens=max_new_tokens,
            min_new_tokens=min_new_tokens,
            length_penalty=length_penalty,
            early_stopping=early_stopping,
            finished=finished,
            prune_threshold=prune_threshold,
            num_return_sequences=num_return_sequences,
            score_bias=score_bias,
            logits_processor=processor,
            reorder=step.reorder,
            pad_id=None if pad_id is None else int(pad_id),
            output_token_scores=output_token_scores,
        )


class _Seq2SeqStep:
    """Decoder steps of an encoder-decoder model; the encoder runs once per sentence."""

    def __init__(self, model: Any, input_ids: Tensor, attention_mask: Tensor, num_beams: int):
        self.model = model
        self.num_beams = num_beams
        self.attention_mask = attention_mask  # [B, S], repeated for the beams after step 1
        with torch.inference_mode():
            self.encoder_outputs = model.get_encoder()(
                input_ids=input_ids, attention_mask=attention_mask, return_dict=True
            )
        self.cache: Any = None

    def __call__(self, tokens: Tensor, state: None) -> tuple[Tensor, None]:
        if self.cache is None:
            # All K beams of a sentence are identical before the first token: run B rows, then
            # repeat the cache (self- and cross-attention) for the beams.
            out = self.model(
                encoder_outputs=self.encoder_outputs,
                attention_mask=self.attention_mask,
                decoder_input_ids=tokens[:: self.num_beams],
                use_cache=True,
                return_dict=True,
            )
            self.cache = out.past_key_values
            self.cache.batch_repeat_interleave(self.num_beams)
            hidden = self.encoder_outputs.last_hidden_state.repeat_interleave(self.num_beams, 0)
            self.encoder_outputs = type(self.encoder_outputs)(last_hidden_state=hidden)
            self.attention_mask = self.attention_mask.repeat_interleave(self.num_beams, 0)
            logits = out.logits[:, -1, :].float().repeat_interleave(self.num_beams, 0)
        else:
            out = self.model(
                encoder_outputs=self.encoder_outputs,
                attention_mask=self.attention_mask,
                decoder_input_ids=tokens[:, -1:],
                past_key_values=self.cache,
                use_cache=True,
                return_dict=True,
            )
            self.cache = out.past_key_values
            logits = out.logits[:, -1, :].float()
        return torch.log_softmax(logits, dim=-1), state

    def reorder(self, state: None, beam_idx: Tensor) -> None:
        # Cross-attention keys and values are the same for every beam of a sentence and beam_idx
        # never crosses sentences, so only the self-attention cache moves.
        self_attention = getattr(self.cache, "self_attention_cache", self.cache)
        self_attention.reorder_cache(beam_idx)
        return state


class _CausalStep:
    """Steps of a decoder-only model; the prompt is prefilled once per sentence."""

    def __init__(self, model: Any, input_ids: Tensor, attention_mask: Tensor, num_beams: int):
        self.model = model
        self.num_beams = num_beams
        # As generate does: positions count only real tokens of a left-padded prompt, and a mask
        # of all ones is dropped (one host sync, before the search).
        self.position_ids: Tensor | None = None
        if "position_ids" in inspect.signature(model.forward).parameters:
            positions = attention_mask.cumsum(-1) - 1
            self.position_ids = positions.masked_fill(attention_mask == 0, 0)
        self.attention_mask: Tensor | None = None if bool(attention_mask.all()) else attention_mask
        self.cache: Any = None

    def __call__(self, tokens: Tensor, state: None) -> tuple[Tensor, None]:
        K = self.num_beams
        if self.cache is None:
            out = self.model(
                input_ids=tokens[::K],
                attention_mask=self.attention_mask,
                position_ids=self.position_ids,
                use_cache=True,
                return_dict=True,
            )
            self.cache = out.past_key_values
            self.cache.batch_repeat_interleave(K)
            if self.position_ids is not None:
                self.position_ids = self.position_ids[:, -1:].repeat_interleave(K, 0)
            if self.attention_mask is not None:
                self.attention_mask = self.attention_mask.repeat_interleave(K, 0)
            logits = out.logits[:, -1, :].float().repeat_interleave(K, 0)
        else:
            if self.position_ids is not None:
                self.position_ids = self.position_ids + 1
            if self.attention_mask is not None:
                ones = self.attention_mask.new_ones((self.attention_mask.shape[0], 1))
                self.attention_mask = torch.cat((self.attention_mask, ones), dim=1)
            out = self.model(
                input_ids=tokens[:, -1:],
                attention_mask=self.attention_mask,
                position_ids=self.position_ids,
                past_key_values=self.cache,
                use_cache=True,
                return_dict=True,
            )
            self.cache = out.past_key_values
            logits = out.logits[:, -1, :].float()
        return torch.log_softmax(logits, dim=-1), state

    def reorder(self, state: None, beam_idx: Tensor) -> None:
        # Masks and positions are the same for all beams of a sentence: only the cache moves.
        self.cache.reorder_cache(beam_idx)
        return state


@dataclass
class _ConfigProcessor:
    """The ``generate`` logits processors that a ``generation_config`` switches on."""

    eos_ids: list[int]
    prompt_len: int
    max_len: int
    min_length: int
    forced_bos_id: int | None
    forced_eos_ids: list[int]
    bad_word_ids: list[int]
    suppressed_ids: list[int]
    begin_suppressed_ids: list[int]
    begin_index: int
    then: LogitsProcessor | None

    @classmethod
    def from_generation_config(
        cls,
        generation_config: Any,
        *,
        eos_ids: list[int],
        prompt_len: int,
        max_new_tokens: int,
        then: LogitsProcessor | None,
    ) -> _ConfigProcessor:
        bad_word_ids = []
        for word in generation_config.bad_words_ids or []:
            if len(word) != 1:
                raise ValueError(
                    "model.generation_config.bad_words_ids has a multi-token entry "
                    f"{word!r}; tensortext applies single-token bad words only: set "
                    "generation_config.bad_words_ids to single tokens or None, or pass a "
                    "logits_processor"
                )
            # As generate: a bad word that is an EOS ID is dropped (EOS must stay reachable).
            if int(word[0]) not in eos_ids:
                bad_word_ids.append(int(word[0]))
        forced_bos_id = generation_config.forced_bos_token_id
        # As generate: with a one-token decoder prompt and a forced BOS, "begin" is the token
        # after the forced one.
        begin_index = prompt_len + (1 if prompt_len == 1 and forced_bos_id is not None else 0)
        return cls(
            eos_ids=eos_ids,
            prompt_len=prompt_len,
            max_len=prompt_len + max_new_tokens,
            min_length=int(generation_config.min_length or 0),
            forced_bos_id=forced_bos_id,
            forced_eos_ids=_as_id_list(generation_config.forced_eos_token_id),
            bad_word_ids=bad_word_ids,
            suppressed_ids=_as_id_list(generation_config.suppress_tokens),
            begin_suppressed_ids=_as_id_list(generation_config.begin_suppress_tokens),
            begin_index=begin_index,
            then=then,
        )

    def __call__(self, tokens: Tensor, log_probs: Tensor) -> Tensor:
        # generate's order: bad words, minimum length, forced BOS/EOS, then suppression.
        cur_len = tokens.shape[1]
        if self.bad_word_ids:
            log_probs = _fill_columns(log_probs, self.bad_word_ids, -math.inf)
        if cur_len < self.min_length:
            log_probs = _fill_columns(log_probs, self.eos_ids, -math.inf)
        if self.forced_bos_id is not None and cur_len == 1:
            log_probs = _fill_columns(
                torch.full_like(log_probs, -math.inf), [self.forced_bos_id], 0.0
            )
        if self.forced_eos_ids and cur_len == self.max_len - 1:
            log_probs = _fill_columns(
                torch.full_like(log_probs, -math.inf), self.forced_eos_ids, 0.0
            )
        if self.suppressed_ids:
            log_probs = _fill_columns(log_probs, self.suppressed_ids, -math.inf)
        if self.begin_suppressed_ids and cur_len == self.begin_index:
            log_probs = _fill_columns(log_probs, self.begin_suppressed_ids, -math.inf)
        if self.then is not None:
            log_probs = self.then(tokens, log_probs)
        return log_probs


def _config_value(generation_config: Any, name: str, default: Any) -> Any:
    value = getattr(generation_config, name, None)
    return default if value is None else value


def _fill_columns(log_probs: Tensor, columns: Sequence[int], value: float) -> Tensor:
    index = torch.tensor(list(columns), dtype=torch.int64, device=log_probs.device)
    return log_probs.index_fill(1, index, value)


def _as_id_list(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, Tensor):
        return [int(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def _output_vocab_size(model: Any) -> int | None:
    """Rows of the output layer (can exceed ``config.vocab_size``, e.g. padded embeddings)."""
    get_output = getattr(model, "get_output_embeddings", None)
    output = get_output() if callable(get_output) else None
    weight = getattr(output, "weight", None)
    if isinstance(weight, Tensor):
        return int(weight.shape[0])
    vocab_size = getattr(model.config, "vocab_size", None)
    return vocab_size if isinstance(vocab_size, int) else None


def _model_device(model: Any) -> torch.device:
    device = getattr(model, "device", None)
    if isinstance(device, torch.device):
        return device
    return next(model.parameters()).device  # type: ignore[no-any-return]


def _check_inputs(
    input_ids: Tensor, attention_mask: Tensor | None, device: torch.device
) -> tuple[int, Tensor]:
    if not isinstance(input_ids, Tensor) or input_ids.dtype != torch.int64 or input_ids.dim() != 2:
        raise ValueError(
            "input_ids must be an int64 tensor [B, S], got "
            f"{getattr(input_ids, 'dtype', type(input_ids).__name__)} "
            f"{list(getattr(input_ids, 'shape', []))}"
        )
    if input_ids.shape[0] == 0 or input_ids.shape[1] == 0:
        raise ValueError(
            f"input_ids must have B >= 1 rows and S >= 1 columns, got {list(input_ids.shape)}"
        )
    if input_ids.device != device:
        raise ValueError(
            f"input_ids are on {input_ids.device} but the model is on {device}; move them with "
            f"input_ids.to({str(device)!r})"
        )
    if attention_mask is None:
        return input_ids.shape[0], torch.ones_like(input_ids)
    if not isinstance(attention_mask, Tensor) or attention_mask.shape != input_ids.shape:
        raise ValueError(
            f"attention_mask must have the shape of input_ids {list(input_ids.shape)}, got "
            f"{list(getattr(attention_mask, 'shape', []))}"
        )
    if attention_mask.device != device:
        raise ValueError(f"attention_mask is on {attention_mask.device}, the model on {device}")
    return input_ids.shape[0], attention_mask.long()


def _check_generation_config(generation_config: Any) -> None:
    for name, off in _UNSUPPORTED_SETTINGS:
        value = getattr(generation_config, name, off)
        if value is not None and value != off:
            raise ValueError(
                f"model.generation_config.{name}={value!r} changes beam search and tensortext does "
                f"not apply it; set model.generation_config.{name} = {off!r} (and pass the same "
                "to model.generate when comparing), or implement it as a logits_processor"
            )
