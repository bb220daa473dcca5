""":class:`HFDecoder`: a ``transformers`` model as a :class:`~tensortext.decode.decoder.Decoder`.

Encoder-decoder models (Marian, BART, T5, ...) and decoder-only ones (GPT-2, Llama-style, ...).
The decoder object holds configuration only (the model, its resolved ``GenerationConfig``, IDs);
everything that changes during a search is in the :class:`HFState` that :meth:`HFDecoder.prepare`
returns and :meth:`~HFDecoder.step` / :meth:`~HFDecoder.reorder` pass on, so one decoder serves
any number of searches. Differences from ``model.generate`` in the work, not in the result:

* the encoder and the first decoder step (or the prompt's prefill) run once per sentence, on
  ``B`` rows; the cache is then repeated for the ``K`` beams (``batch_repeat_interleave``);
* the cross-attention cache is never reordered: every beam of a sentence holds the same one.

The KV cache is what ``generate`` makes: a ``DynamicCache`` (inside an ``EncoderDecoderCache`` for
encoder-decoder models), passed by the keyword the model's ``forward`` takes (``cache``, or
``past_key_values`` before ``transformers`` renamed it), so no deprecation warning is raised.

The ``generation_config`` logits processors (forced BOS/EOS, minimum length, bad words,
repetition penalty, suppressed tokens...) are ``transformers``' own classes, applied inside
:meth:`~HFDecoder.step` after the log-softmax, in ``generate``'s order
(:func:`~tensortext.decode.hf_config.build_logits_processors`), so ``translate(HFDecoder(model),
...)`` decodes as ``model.generate`` does.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from tensortext._checks import (
    check_int,
    check_integer_tensor,
    check_lengths,
    check_same_device,
    check_shape,
)
from tensortext.decode.hf_config import (
    GenerationLengths,
    as_id_list,
    build_logits_processors,
    chain_processors,
    generation_lengths,
    hf_module,
    resolve_generation_config,
)

__all__ = ["HFDecoder", "HFState"]


@dataclass(frozen=True)
class HFState:
    """Everything a search with an :class:`HFDecoder` carries from step to step.

    Row ``r`` of every ``[N*K, ...]`` tensor is beam ``r % K`` of sentence ``r // K``. Before the
    first step the tensors have the ``N`` rows of the sentences; the first step repeats them.

    Attributes:
        num_beams: ``K``.
        lengths: The search's prompt length, ``max_length`` and ``min_length`` (HF's counting).
        processors: ``apply(tokens, scores) -> scores``: ``transformers``' logits processors
            (:func:`~tensortext.decode.hf_config.build_logits_processors`), chained.
        cache: The model's KV cache (``None`` before the first step); updated in place by the
            model and by :meth:`HFDecoder.reorder`.
        encoder_outputs: Encoder-decoder models: the encoder's output, ``[N, S, H]`` then
            ``[N*K, S, H]``; ``None`` for decoder-only models.
        attention_mask: Encoder-decoder: ``[N, S]`` then ``[N*K, S]`` source mask.
            Decoder-only: ``[N, P]`` then ``[N*K, P + t]`` mask of the prompt and the generated
            tokens, or ``None`` when no prompt is padded.
        position_ids: Decoder-only models that take them: ``[N, P]`` positions of the prompt
            (real tokens from 0), then ``[N*K, 1]`` the position of the next token.
    """

    num_beams: int
    lengths: GenerationLengths
    processors: Callable[[Tensor, Tensor], Tensor]
    cache: Any = None
    encoder_outputs: Any = None
    attention_mask: Tensor | None = None
    position_ids: Tensor | None = None


class HFDecoder:
    """A ``transformers`` model with a language-modeling head as a :class:`Decoder`.

    Args:
        model: ``*ForConditionalGeneration``, ``*MTModel``, ``*ForCausalLM``, ``*LMHeadModel``...
        generation_config: A ``transformers.GenerationConfig``; fields it leaves unset come from
            ``model.generation_config`` (HF's precedence).
        max_new_tokens: New tokens per search (sets where ``forced_eos_token_id`` applies), or a
            function of the source width ``S`` given to :meth:`prepare` (pass the same to
            :func:`~tensortext.decode.translate`); default the generation config's lengths.
        logits_processor: Extra processors ``(tokens [N*K, t], scores [N*K, V]) -> scores``,
            after the configuration's (a ``transformers`` processor of a type the configuration
            already builds replaces it, as in ``generate``).
        **overrides: ``GenerationConfig`` fields (``no_repeat_ngram_size=2``, ...), as
            ``model.generate`` takes them. ``min_new_tokens`` given here applies in
            ``generate``'s order (before forced tokens); given to ``translate`` it applies after
            this decoder's processors (the same result unless a forced EOS meets it).

    Raises:
        TypeError: ``model`` is no ``transformers`` model, or an override is no config field.
        ValueError: a setting of another decoding method (sampling...), or no EOS ID.

    Example:
        >>> from tensortext.decode import translate  # doctest: +SKIP
        >>> out = translate(HFDecoder(model, max_new_tokens=50), src_ids, lengths)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: Any,
        generation_config: Any | None = None,
        *,
        max_new_tokens: int | Callable[[int], int] | None = None,
        logits_processor: Any | None = None,
        **overrides: Any,
    ) -> None:
        if max_new_tokens is not None and not callable(max_new_tokens):
            overrides["max_new_tokens"] = check_int("max_new_tokens", max_new_tokens, minimum=1)
        config, has_default_max_length = resolve_generation_config(
            model, generation_config, overrides
        )
        eos_ids = as_id_list(config.eos_token_id)
        if not eos_ids:
            raise ValueError(
                "the generation config has no eos_token_id; pass eos_token_id= or set "
                "model.generation_config.eos_token_id to the end-of-sequence token ID"
            )
        self.model = model
        self.generation_config = config
        self.is_encoder_decoder = bool(model.config.is_encoder_decoder)
        self.eos_ids = eos_ids
        self.pad_token_id = eos_ids[0] if config.pad_token_id is None else int(config.pad_token_id)
        self.start_id = _decoder_start_id(config) if self.is_encoder_decoder else None
        self.device = _model_device(model)
        self._max_new_tokens = max_new_tokens if callable(max_new_tokens) else None
        self._has_default_max_length = has_default_max_length
        self._custom_processors = list(logits_processor or [])
        self._vocab_size = _output_vocab_size(model)
        forward_parameters = inspect.signature(model.forward).parameters
        self._takes_positions = "position_ids" in forward_parameters
        # transformers renamed past_key_values to cache (the old name warns, then goes away).
        self._cache_keyword = "cache" if "cache" in forward_parameters else "past_key_values"

    @property
    def eos_id(self) -> list[int]:
        """The end-of-sequence IDs (any of them ends a hypothesis)."""
        return list(self.eos_ids)

    @property
    def vocab_size(self) -> int | None:
        """Rows of the output layer (may exceed ``config.vocab_size``)."""
        return self._vocab_size

    def prepare(self, src_ids: Tensor, lengths: Tensor, num_beams: int) -> tuple[Tensor, HFState]:
        """Encodes ``N`` right-padded sources (or prompts) once.

        Args:
            src_ids: ``[N, S]`` int64, row ``n`` real up to ``lengths[n]`` (padding any value).
            lengths: ``[N]`` int64.
            num_beams: ``K``.

        Returns:
            ``(start_ids, state)``: ``[N, 1]`` decoder start tokens, or for decoder-only models
            the ``[N, S]`` prompts left-padded with the pad token ID (as ``generate`` wants them).
        """
        src_ids = check_integer_tensor("src_ids", src_ids, shape="[N, S]")
        check_shape("src_ids", src_ids, [None, None], "[N, S]")
        lengths = check_lengths("lengths", lengths, [src_ids.shape[0]], src_ids.device, "src_ids")
        width = src_ids.shape[1]
        real = torch.arange(width, device=src_ids.device) < lengths[:, None]  # [N, S]
        if not self.is_encoder_decoder:
            # Left-pad: position j of the output holds source position j - (S - length).
            shift = torch.arange(width, device=src_ids.device) - (width - lengths)[:, None]
            real = shift >= 0
            src_ids = src_ids.gather(1, shift.clamp(min=0))
        input_ids = src_ids.long().masked_fill(~real, self.pad_token_id)
        return self.prepare_inputs(input_ids, real.long(), num_beams)

    def prepare_inputs(
        self, input_ids: Tensor, attention_mask: Tensor | None, num_beams: int
    ) -> tuple[Tensor, HFState]:
        """:meth:`prepare` for ``generate``'s inputs: a mask, prompts padded on the left.

        Args:
            input_ids: ``[B, S]`` int64 source tokens, or left-padded prompts.
            attention_mask: ``[B, S]`` 0/1, or ``None`` for all ones.
            num_beams: ``K``.

        Returns:
            ``(start_ids [B, P], state)``, ``P = 1`` or ``S``.
        """
        input_ids, attention_mask = self.check_inputs(input_ids, attention_mask)
        check_int("num_beams", num_beams, minimum=1)
        if self.start_id is not None:  # encoder-decoder
            start_ids = torch.full(
                (input_ids.shape[0], 1), self.start_id, dtype=torch.int64, device=self.device
            )
        else:
            start_ids = input_ids
        lengths = self.search_lengths(start_ids.shape[1], input_ids.shape[1])
        if self.is_encoder_decoder:
            state = self._encode(input_ids, attention_mask, num_beams, lengths)
        else:
            state = self._prompt_state(input_ids, attention_mask, num_beams, lengths)
        return start_ids, state

    def check_inputs(
        self, input_ids: Tensor, attention_mask: Tensor | None
    ) -> tuple[Tensor, Tensor]:
        """``input_ids [B, S]`` int64 on the model's device and its mask (default all ones)."""
        input_ids = check_integer_tensor("input_ids", input_ids, shape="[B, S]")
        if input_ids.dtype != torch.int64:
            raise TypeError(
                f"input_ids must be int64, got {input_ids.dtype}; pass input_ids.long()"
            )
        check_shape("input_ids", input_ids, [None, None], "[B, S]")
        if input_ids.shape[0] == 0 or input_ids.shape[1] == 0:
            raise ValueError(
                f"input_ids must have B >= 1 rows and S >= 1 columns, got {list(input_ids.shape)}"
            )
        check_same_device("input_ids", input_ids, self.device, "the model")
        if attention_mask is None:
            return input_ids, torch.ones_like(input_ids)
        attention_mask = check_integer_tensor("attention_mask", attention_mask, shape="[B, S]")
        shape = list(input_ids.shape)
        check_shape("attention_mask", attention_mask, shape, f"[B, S] = {shape} (as input_ids)")
        check_same_device("attention_mask", attention_mask, self.device, "the model")
        return input_ids, attention_mask.long()

    def search_lengths(self, prompt_len: int, source_width: int) -> GenerationLengths:
        """Lengths of a search from a ``prompt_len``-token decoder prompt and ``[B, S]`` sources.

        Raises:
            ValueError: ``max_length`` leaves no room for a new token.
        """
        config = self.generation_config
        if self._max_new_tokens is not None:
            config = _with_max_new_tokens(config, self._max_new_tokens(source_width))
        return generation_lengths(
            config, self.model, prompt_len, has_default_max_length=self._has_default_max_length
        )

    def _processors(
        self, input_ids: Tensor, lengths: GenerationLengths, padding: Tensor | None
    ) -> Callable[[Tensor, Tensor], Tensor]:
        return chain_processors(
            build_logits_processors(
                self.generation_config,
                lengths=lengths,
                eos_ids=self.eos_ids,
                encoder_input_ids=input_ids,
                prompt_padding=padding,
                custom=self._custom_processors,
                device=self.device,
            )
        )

    def _encode(
        self, input_ids: Tensor, mask: Tensor, num_beams: int, lengths: GenerationLengths
    ) -> HFState:
        """Encoder-decoder: the encoder runs here, once per sentence."""
        processors = self._processors(input_ids, lengths, None)  # checked before the encoder
        with torch.inference_mode():
            encoder_outputs = self.model.get_encoder()(
                input_ids=input_ids, attention_mask=mask, return_dict=True
            )
        return HFState(
            num_beams=num_beams,
            lengths=lengths,
            processors=processors,
            encoder_outputs=encoder_outputs,
            attention_mask=mask,
        )

    def _prompt_state(
        self, input_ids: Tensor, mask: Tensor, num_beams: int, lengths: GenerationLengths
    ) -> HFState:
        """Decoder-only: positions count real tokens only; a mask of all ones is dropped."""
        positions = None
        if self._takes_positions:
            positions = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 0)
        padded = not bool(mask.all())  # one host sync, before the search (as generate)
        # Repetition penalty ignores a row's left padding, as in generate.
        padding = (mask != 0).int().argmax(dim=1).repeat_interleave(num_beams) if padded else None
        return HFState(
            num_beams=num_beams,
            lengths=lengths,
            processors=self._processors(input_ids, lengths, padding),
            attention_mask=mask if padded else None,
            position_ids=positions,
        )

    def step(self, tokens: Tensor, state: HFState) -> tuple[Tensor, HFState]:
        """``tokens [N*K, t]`` -> processed ``log_probs [N*K, V]`` float32 and the next state."""
        logits, state = self.next_logits(tokens, state)
        log_probs = torch.log_softmax(logits, dim=-1)
        return state.processors(tokens, log_probs), state

    def next_logits(self, tokens: Tensor, state: HFState) -> tuple[Tensor, HFState]:
        """The model's raw next-token ``logits [N*K, V]`` float32 (no processors) and state."""
        with torch.inference_mode():
            if self.is_encoder_decoder:
                return self._seq2seq_step(tokens, state)
            return self._causal_step(tokens, state)

    def _seq2seq_step(self, tokens: Tensor, state: HFState) -> tuple[Tensor, HFState]:
        K = state.num_beams
        first = state.cache is None
        cache = self._new_cache() if first else state.cache
        out = self.model(
            encoder_outputs=state.encoder_outputs,
            attention_mask=state.attention_mask,
            # All K beams of a sentence are the same before the first token: run N rows.
            decoder_input_ids=tokens[::K] if first else tokens[:, -1:],
            use_cache=True,
            return_dict=True,
            **{self._cache_keyword: cache},
        )
        logits = out.logits[:, -1, :].float()
        cache = getattr(out, self._cache_keyword)
        if not first:
            # The model updates the cache in place, so the state is usually unchanged.
            if cache is not state.cache:
                state = dataclasses.replace(state, cache=cache)
            return logits, state
        cache.batch_repeat_interleave(K)  # self- and cross-attention, for the K beams
        hidden = state.encoder_outputs.last_hidden_state.repeat_interleave(K, 0)
        mask = state.attention_mask
        return logits.repeat_interleave(K, 0), dataclasses.replace(
            state,
            cache=cache,
            encoder_outputs=type(state.encoder_outputs)(last_hidden_state=hidden),
            attention_mask=None if mask is None else mask.repeat_interleave(K, 0),
        )

    def _causal_step(self, tokens: Tensor, state: HFState) -> tuple[Tensor, HFState]:
        K = state.num_beams
        first = state.cache is None
        cache = self._new_cache() if first else state.cache
        mask, positions = state.attention_mask, state.position_ids
        if not first:
            if positions is not None:
                positions = positions + 1
            if mask is not None:
                mask = torch.cat((mask, mask.new_ones((mask.shape[0], 1))), dim=1)
        out = self.model(
            input_ids=tokens[::K] if first else tokens[:, -1:],
            attention_mask=mask,
            position_ids=positions,
            use_cache=True,
            return_dict=True,
            **{self._cache_keyword: cache},
        )
        logits = out.logits[:, -1, :].float()
        cache = getattr(out, self._cache_keyword)
        if first:
            # The prompt was prefilled on N rows; repeat everything for the K beams.
            cache.batch_repeat_interleave(K)
            logits = logits.repeat_interleave(K, 0)
            positions = None if positions is None else positions[:, -1:].repeat_interleave(K, 0)
            mask = None if mask is None else mask.repeat_interleave(K, 0)
        new_state = dataclasses.replace(
            state, cache=cache, attention_mask=mask, position_ids=positions
        )
        return logits, new_state

    def _new_cache(self) -> Any:
        """An empty KV cache, as ``generate`` makes it: ``DynamicCache`` (given the decoder's
        config where it takes one, for sliding-window layers), and for encoder-decoder models an
        ``EncoderDecoderCache`` of two (self- and cross-attention). ``None`` for the few models
        ``generate`` leaves to build their own cache."""
        supports_dynamic = getattr(self.model, "_supports_default_dynamic_cache", None)
        if callable(supports_dynamic) and not supports_dynamic():
            return None
        cache_utils = hf_module("transformers.cache_utils")
        dynamic = cache_utils.DynamicCache
        kwargs: dict[str, Any] = {}
        get_text_config = getattr(self.model.config, "get_text_config", None)
        if "config" in inspect.signature(dynamic).parameters and callable(get_text_config):
            kwargs["config"] = get_text_config(decoder=True)
        if not self.is_encoder_decoder:
            return dynamic(**kwargs)
        return cache_utils.EncoderDecoderCache(dynamic(**kwargs), dynamic(**kwargs))

    def reorder(self, state: HFState, beam_idx: Tensor) -> HFState:
        """Rows of the self-attention cache follow ``beam_idx [N*K]`` (in place).

        Cross-attention keys and values, masks and positions are the same for every beam of a
        sentence, and ``beam_idx`` never crosses sentences, so nothing else moves.
        """
        if state.cache is not None:
            self_attention = getattr(state.cache, "self_attention_cache", state.cache)
            self_attention.reorder_cache(beam_idx)
        return state


def _with_max_new_tokens(config: Any, max_new_tokens: int) -> Any:
    config = copy.copy(config)
    config.max_new_tokens = check_int("max_new_tokens", max_new_tokens, minimum=1)
    return config


def _decoder_start_id(config: Any) -> int:
    start_id = config.decoder_start_token_id
    if start_id is None:
        start_id = config.bos_token_id
    ids = as_id_list(start_id)
    if len(ids) != 1:
        raise ValueError(
            "the generation config has no decoder_start_token_id (or bos_token_id); pass "
            "decoder_start_token_id= the token that starts the decoder"
        )
    return ids[0]


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
