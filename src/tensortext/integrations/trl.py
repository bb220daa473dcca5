"""BLEU as a TRL reward function (``GRPOTrainer(reward_funcs=[...])``).

TRL 1.x calls each reward function as ``reward_func(prompts=..., completions=...,
completion_ids=..., **dataset_columns, trainer_state=...)`` with ``completion_ids`` a ragged
``list[list[int]]`` that ends with the first EOS, and every other dataset column repeated once
per generation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol

import torch

from tensortext._checks import DeviceLike, resolve_device
from tensortext.bleu import BleuConfig, sentence_bleu
from tensortext.padded import pad_ragged, pad_ragged_refs

__all__ = ["bleu_reward"]


class _Encoder(Protocol):
    def encode(self, text: str, /) -> list[int]: ...


def bleu_reward(
    ref_column: str = "reference",
    *,
    tokenizer: _Encoder | Callable[[str], list[int]] | None = None,
    eos_id: int | None = None,
    config: BleuConfig | None = None,
    device: DeviceLike | Literal["auto"] | None = "auto",
) -> Callable[..., list[float]]:
    """Makes a TRL reward function: per-completion token-ID BLEU against a dataset column.

    Args:
        ref_column: dataset column with the references of each prompt. Each entry is one
            reference or a list of them, as token IDs (``list[int]``, a 1-D tensor) or as text
            (``str``, encoded with ``tokenizer``).
        tokenizer: turns reference text into IDs: an object with ``encode`` (a Hugging Face
            tokenizer is called with ``add_special_tokens=False``) or a callable. Needed only
            for text references; its ``eos_token_id`` is the default ``eos_id``.
        eos_id: a completion's trailing ``eos_id`` is dropped before scoring (TRL's
            completions include the first EOS; references usually don't).
        config: the scoring options (:class:`~tensortext.bleu.BleuConfig`); default
            ``BleuConfig()``: sacrebleu's sentence BLEU with ``exp`` smoothing, float32.
        device: where to score, under the package's device rule: ``"auto"`` (the default)
            is CUDA when available, else the CPU; ``None`` is the CPU.

    Returns:
        ``reward_func(completion_ids, **kwargs) -> list[float]`` (named ``bleu``), scores in 0..1.

    Raises:
        TypeError: ``config`` is not a ``BleuConfig``. ValueError: a bad ``device``.

    Example:
        >>> reward = bleu_reward("reference", device=None)
        >>> reward(completion_ids=[[5, 6, 7, 8]], reference=[[5, 6, 7, 8]])
        [1.0]
        >>> nltk = bleu_reward(config=BleuConfig(compat="nltk", smooth_method="method1"))
    """
    if config is None:
        config = BleuConfig()
    elif not isinstance(config, BleuConfig):
        raise TypeError(f"config must be a BleuConfig or None, got {type(config).__name__}")
    if eos_id is None and tokenizer is not None:
        eos_id = getattr(tokenizer, "eos_token_id", None)
    target = resolve_device(device)
    scoring = config

    def bleu(completion_ids: Sequence[Sequence[int]] | None = None, **kwargs: Any) -> list[float]:
        references = _column(ref_column, completion_ids, kwargs)
        hyps = [_strip_eos(list(map(int, ids)), eos_id) for ids in completion_ids or ()]
        refs = [_reference_set(entry, tokenizer, ref_column) for entry in references]
        scores = sentence_bleu(
            pad_ragged(hyps, device=target),
            pad_ragged_refs(refs, device=target),
            config=scoring,
        )
        return [float(s) for s in scores.tolist()]  # the one host copy: TRL wants floats

    return bleu


def _column(
    ref_column: str, completion_ids: Sequence[Sequence[int]] | None, kwargs: dict[str, Any]
) -> Sequence[object]:
    """The references of a call, checked against the completions."""
    if completion_ids is None:
        raise ValueError("the reward function needs completion_ids (TRL passes them)")
    if ref_column not in kwargs:
        columns = sorted(k for k in kwargs if k not in ("prompts", "completions"))
        raise ValueError(
            f"no dataset column {ref_column!r} among {columns}; pass "
            "bleu_reward(ref_column=<the column with the references>)"
        )
    references: Sequence[object] = kwargs[ref_column]
    if len(references) != len(completion_ids):
        raise ValueError(
            f"{len(completion_ids)} completions but {len(references)} entries in "
            f"{ref_column!r}; they must align one to one"
        )
    return references


def _strip_eos(ids: list[int], eos_id: int | None) -> list[int]:
    return ids[:-1] if eos_id is not None and ids and ids[-1] == eos_id else ids


def _reference_set(entry: object, tokenizer: object, column: str) -> list[list[int]]:
    """One dataset entry as a list of references (ID lists)."""
    if isinstance(entry, torch.Tensor):
        entry = entry.tolist()
    if isinstance(entry, str):
        return [_encode(entry, tokenizer, column)]
    if not isinstance(entry, Sequence):
        raise TypeError(
            f"entries of {column!r} must be token-ID lists or text, got {type(entry).__name__}"
        )
    if all(isinstance(t, int) and not isinstance(t, bool) for t in entry):
        return [list(entry)]  # one reference as IDs (an empty list is an empty reference)
    refs = []
    for ref in entry:
        if isinstance(ref, torch.Tensor):
            ref = ref.tolist()
        if isinstance(ref, str):
            refs.append(_encode(ref, tokenizer, column))
        elif isinstance(ref, Sequence) and all(
            isinstance(t, int) and not isinstance(t, bool) for t in ref
        ):
            refs.append(list(ref))
        else:
            raise TypeError(
                f"a reference in {column!r} must be a token-ID list or text, got {ref!r:.60}"
            )
    return refs


def _encode(text: str, tokenizer: object, column: str) -> list[int]:
    if tokenizer is None:
        raise ValueError(
            f"{column!r} holds text; pass bleu_reward(tokenizer=...) to turn it into token IDs"
        )
    encode = getattr(tokenizer, "encode", None)
    if encode is not None:
        try:
            return list(encode(text, add_special_tokens=False))
        except TypeError:  # not a Hugging Face tokenizer
            return list(encode(text))
    if callable(tokenizer):
        return list(tokenizer(text))
    raise TypeError("tokenizer must have an encode method or be callable")
