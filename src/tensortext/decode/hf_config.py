"""``model.generate``'s settings for tensortext's Hugging Face entry points.

Three jobs, each mirroring ``transformers`` (``GenerationMixin.generate``) with public API only:

* :func:`resolve_generation_config`: HF's precedence. Keyword overrides beat the
  ``generation_config=`` argument, which beats ``model.generation_config``, which beats the
  library defaults; settings that are not beam search (sampling, constrained or group beam
  search, assisted decoding...) are refused with the alternative named.
* :func:`generation_lengths`: ``max_length`` / ``max_new_tokens`` and ``min_length`` /
  ``min_new_tokens`` resolved against the decoder prompt length, as HF does.
* :func:`build_logits_processors`: HF's own logits processor classes, in the order
  ``generate`` builds them, followed by the caller's processors (a caller's processor of a type
  already in the list replaces it, as in ``generate``); :func:`chain_processors` applies them
  as ``LogitsProcessorList`` does, with its per-call signature inspection done once.

``transformers`` is imported lazily, so importing this module does not need it.
"""

from __future__ import annotations

import copy
import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from tensortext._checks import brief

__all__ = [
    "GenerationLengths",
    "as_id_list",
    "build_logits_processors",
    "chain_processors",
    "generation_lengths",
    "hf_module",
    "resolve_generation_config",
]

# generate's defaults for the fields beam search reads, applied where neither the call, the
# generation_config argument nor the model's generation_config sets them.
_DEFAULTS: dict[str, Any] = {
    "max_length": 20,
    "min_length": 0,
    "do_sample": False,
    "use_cache": True,
    "early_stopping": False,
    "num_beams": 1,
    "repetition_penalty": 1.0,
    "length_penalty": 1.0,
    "no_repeat_ngram_size": 0,
    "encoder_no_repeat_ngram_size": 0,
    "num_return_sequences": 1,
    "output_scores": False,
    "return_dict_in_generate": False,
    "remove_invalid_values": False,
    "encoder_repetition_penalty": 1.0,
}

# (field, value meaning "off", what to use instead): settings of other decoding methods.
_REFUSED: tuple[tuple[str, Any, str], ...] = (
    ("do_sample", False, "sampling: call model.generate(..., do_sample=True) instead"),
    ("num_beam_groups", 1, "group (diverse) beam search: call model.generate instead"),
    ("diversity_penalty", 0.0, "group (diverse) beam search: call model.generate instead"),
    ("force_words_ids", None, "constrained beam search: call model.generate instead"),
    ("constraints", None, "constrained beam search: call model.generate instead"),
    ("forced_decoder_ids", None, "pass a logits_processor forcing the tokens instead"),
    ("guidance_scale", 1.0, "classifier-free guidance: call model.generate instead"),
    ("watermarking_config", None, "watermarking: call model.generate instead"),
    ("prompt_lookup_num_tokens", None, "assisted decoding: call model.generate instead"),
    ("token_healing", False, "token healing: call model.generate instead"),
    ("low_memory", False, "transformers' beam search refuses it too; unset it"),
    ("output_logits", False, "raw logits are not returned; unset it"),
    ("output_attentions", False, "attentions are not returned; unset it"),
    ("output_hidden_states", False, "hidden states are not returned; unset it"),
)


def hf_module(name: str) -> Any:
    """A ``transformers`` module, imported on first use and typed loosely (its annotations are
    narrower than what it accepts, e.g. ``LongTensor`` for any int64 tensor)."""
    return importlib.import_module(name)


def resolve_generation_config(
    model: Any, generation_config: Any | None, overrides: dict[str, Any]
) -> tuple[Any, bool]:
    """The ``GenerationConfig`` that ``model.generate(generation_config=..., **overrides)`` uses.

    Args:
        model: A ``transformers`` model with a ``generation_config``.
        generation_config: The ``generation_config=`` argument, or ``None``.
        overrides: Keyword overrides of ``GenerationConfig`` fields.

    Returns:
        ``(config, has_default_max_length)``: a new config (nothing passed in is modified), and
        whether ``max_length`` came from the library default (then, as in ``generate``, it
        counts new tokens only, capped by ``max_position_embeddings``).

    Raises:
        TypeError: an override that is no ``GenerationConfig`` field (e.g. a model keyword).
        ValueError: a setting of another decoding method (``do_sample=True``, constraints...).
    """
    GenerationConfig = hf_module("transformers").GenerationConfig

    model_config = getattr(model, "generation_config", None)
    if model_config is None or not hasattr(model, "config"):
        raise TypeError(
            f"model must be a transformers PreTrainedModel with a generation_config, got "
            f"{type(model).__name__}"
        )
    has_default_max_length = (
        overrides.get("max_length") is None
        and (generation_config is None or generation_config.max_length is None)
        and model_config.max_length is None
    )
    config = copy.deepcopy(
        generation_config if generation_config is not None else GenerationConfig()
    )
    config.update(**model_config.to_dict(), defaults_only=True, allow_custom_entries=True)
    config.update(**_DEFAULTS, defaults_only=True)
    unused = config.update(**overrides)
    if unused:
        name = sorted(unused)[0]
        raise TypeError(
            f"generate() got an unexpected keyword argument {name!r}: tensortext's generate takes "
            "GenerationConfig fields and logits_processor; call model.generate for model keywords"
        )
    _refuse_other_methods(config)
    return config, has_default_max_length


def _refuse_other_methods(config: Any) -> None:
    for name, off, instead in _REFUSED:
        value = getattr(config, name, off)
        if value is not None and value != off:
            raise ValueError(
                f"{name}={brief(value)} is not beam search; tensortext.decode.hf.generate does "
                f"deterministic beam search only. {instead[0].upper()}{instead[1:]}."
            )


@dataclass(frozen=True)
class GenerationLengths:
    """Lengths of one search, counted as HF counts them (decoder prompt included).

    Attributes:
        prompt_len: ``P``, tokens the decoder starts from (1 for encoder-decoder models).
        max_length: ``P + max_new_tokens``.
        min_length: EOS is forbidden while a row is shorter (prompt included); 0 = off.
    """

    prompt_len: int
    max_length: int
    min_length: int

    @property
    def max_new_tokens(self) -> int:
        return self.max_length - self.prompt_len


def generation_lengths(
    config: Any, model: Any, prompt_len: int, *, has_default_max_length: bool
) -> GenerationLengths:
    """``max_length`` / ``max_new_tokens`` and ``min_length`` / ``min_new_tokens``, as HF.

    ``max_new_tokens`` wins over ``max_length``; a default ``max_length`` means 20 new tokens
    (capped by ``max_position_embeddings``); ``min_new_tokens`` wins over ``min_length``.

    Raises:
        ValueError: no room for one new token.
    """
    if config.max_new_tokens is not None:
        max_length = int(config.max_new_tokens) + prompt_len
    elif has_default_max_length:
        max_length = int(config.max_length) + prompt_len
        positions = getattr(model.config, "max_position_embeddings", None)
        if isinstance(positions, int):
            max_length = min(max_length, positions)
    else:
        max_length = int(config.max_length)
    min_length = int(config.min_length or 0)
    if config.min_new_tokens is not None:
        min_length = int(config.min_new_tokens) + prompt_len
    if max_length <= prompt_len:
        raise ValueError(
            f"max_length ({max_length}) leaves no room for a new token after the "
            f"{prompt_len}-token decoder prompt; pass max_new_tokens= (new tokens only) or a "
            "larger max_length"
        )
    return GenerationLengths(prompt_len=prompt_len, max_length=max_length, min_length=min_length)


def as_id_list(value: Any) -> list[int]:
    """``None``, an ID, a list of IDs or a tensor of IDs as a list of ints."""
    if value is None:
        return []
    if isinstance(value, Tensor):
        return [int(v) for v in value.reshape(-1).tolist()]
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def build_logits_processors(
    config: Any,
    *,
    lengths: GenerationLengths,
    eos_ids: Sequence[int],
    encoder_input_ids: Tensor,
    prompt_padding: Tensor | None,
    custom: Sequence[Callable[[Tensor, Tensor], Tensor]] | None,
    device: torch.device,
) -> Any:
    """The ``LogitsProcessorList`` that ``generate`` builds for beam search, in its order.

    Args:
        config: A resolved ``GenerationConfig``.
        lengths: The search's lengths (``min_length``, ``max_length`` for forced EOS...).
        eos_ids: End-of-sequence IDs.
        encoder_input_ids: ``[B, S]`` the encoder input or the prompt (for the ``encoder_*``
            processors).
        prompt_padding: ``[B*K]`` left-padding width of each decoder-only row (repetition
            penalty ignores it, as in ``generate``), or ``None``.
        custom: The caller's processors, appended (or replacing one of the same type).
        device: Where the processors' tensors go.

    Returns:
        A ``transformers.LogitsProcessorList``.
    """
    lp = hf_module("transformers.generation.logits_process")

    eos = torch.tensor(list(eos_ids), dtype=torch.int64, device=device)
    processors = lp.LogitsProcessorList()
    if config.sequence_bias is not None:
        processors.append(lp.SequenceBiasLogitsProcessor(sequence_bias=config.sequence_bias))
    if config.encoder_repetition_penalty not in (None, 1.0):
        processors.append(
            lp.EncoderRepetitionPenaltyLogitsProcessor(
                penalty=config.encoder_repetition_penalty, encoder_input_ids=encoder_input_ids
            )
        )
    if config.repetition_penalty not in (None, 1.0):
        processors.append(
            lp.RepetitionPenaltyLogitsProcessor(
                config.repetition_penalty, prompt_ignore_length=prompt_padding
            )
        )
    if config.no_repeat_ngram_size:
        processors.append(lp.NoRepeatNGramLogitsProcessor(config.no_repeat_ngram_size))
    if config.encoder_no_repeat_ngram_size:
        processors.append(
            lp.EncoderNoRepeatNGramLogitsProcessor(
                config.encoder_no_repeat_ngram_size, encoder_input_ids
            )
        )
    if config.bad_words_ids is not None:
        processors.append(lp.NoBadWordsLogitsProcessor(config.bad_words_ids, eos))
    _append_length_processors(processors, config, lengths, eos, device)
    processors = _merge_custom(processors, custom)
    if config.renormalize_logits is True:  # always last, as in generate
        processors.append(lp.LogitNormalization())
    return processors


def chain_processors(processors: Sequence[Any]) -> Callable[[Tensor, Tensor], Tensor]:
    """``LogitsProcessorList.__call__(input_ids, scores)`` with its checks done once, up front.

    ``LogitsProcessorList`` inspects every processor's signature on every call, which costs as
    much as a few small tensor ops and does not change during a search. As there, a processor
    whose ``__call__`` takes more than ``(input_ids, scores)`` needs keyword arguments that beam
    search does not pass, so it is refused, here before the first step.

    Args:
        processors: ``(input_ids [N, t], scores [N, V]) -> scores`` callables, applied in order.

    Returns:
        ``apply(input_ids, scores) -> scores``.

    Raises:
        ValueError: a processor that needs more arguments.

    Example:
        >>> import torch
        >>> apply = chain_processors([lambda ids, s: s + 1, lambda ids, s: s * 2])
        >>> apply(torch.zeros(1, 1, dtype=torch.int64), torch.zeros(1, 2)).tolist()
        [[2.0, 2.0]]
    """
    chain = tuple(processors)
    for processor in chain:
        parameters = list(inspect.signature(processor.__call__).parameters)
        if len(parameters) > 2:
            raise ValueError(
                f"the logits processor {type(processor).__name__} needs the arguments "
                f"{parameters}, but beam search passes only (input_ids, scores); wrap it in a "
                "function of those two"
            )

    def apply(input_ids: Tensor, scores: Tensor) -> Tensor:
        for processor in chain:
            scores = processor(input_ids, scores)
        return scores

    return apply


def _append_length_processors(
    processors: Any, config: Any, lengths: GenerationLengths, eos: Tensor, device: torch.device
) -> None:
    """The second half of ``generate``'s list: lengths, forced and suppressed tokens."""
    lp = hf_module("transformers.generation.logits_process")

    if lengths.min_length > 0:
        processors.append(lp.MinLengthLogitsProcessor(lengths.min_length, eos, device=device))
    if config.min_new_tokens:
        processors.append(
            lp.MinNewTokensLengthLogitsProcessor(
                lengths.prompt_len, config.min_new_tokens, eos, device=device
            )
        )
    if config.forced_bos_token_id is not None:
        processors.append(lp.ForcedBOSTokenLogitsProcessor(config.forced_bos_token_id))
    if config.forced_eos_token_id is not None:
        processors.append(
            lp.ForcedEOSTokenLogitsProcessor(
                lengths.max_length, config.forced_eos_token_id, device=device
            )
        )
    if config.remove_invalid_values is True:
        processors.append(lp.InfNanRemoveLogitsProcessor())
    if config.exponential_decay_length_penalty is not None:
        processors.append(
            lp.ExponentialDecayLengthPenalty(
                config.exponential_decay_length_penalty, eos, lengths.prompt_len
            )
        )
    if config.suppress_tokens is not None:
        processors.append(lp.SuppressTokensLogitsProcessor(config.suppress_tokens, device=device))
    if config.begin_suppress_tokens is not None:
        # As generate: after a one-token decoder prompt and a forced BOS, "begin" is one later.
        begin = lengths.prompt_len
        if begin == 1 and config.forced_bos_token_id is not None:
            begin += 1
        processors.append(
            lp.SuppressTokensAtBeginLogitsProcessor(
                config.begin_suppress_tokens, begin, device=device
            )
        )


def _merge_custom(
    processors: Any, custom: Sequence[Callable[[Tensor, Tensor], Tensor]] | None
) -> Any:
    """``generate``'s merge: a custom processor replaces a built one of the same type."""
    if not custom:
        return processors
    merged = type(processors)()
    for built in processors:
        same = [extra for extra in custom if type(extra) is type(built)]
        merged.append(same[0] if same else built)
    for extra in custom:
        if extra not in merged:
            merged.append(extra)
    return merged
