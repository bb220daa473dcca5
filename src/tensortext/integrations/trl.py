"""BLEU as a TRL reward function (``GRPOTrainer(reward_funcs=[...])``).

TRL 1.x calls each reward function as ``reward_func(prompts=..., completions=...,
completion_ids=..., **dataset_columns, trainer_state=...)`` with ``completion_ids`` a ragged
``list[list[int]]`` that ends with the first EOS, and every other dataset column repeated once
per generation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import torch

from tensortext.bleu import Compat, make_config, sentence_bleu
from tensortext.ragged import pad_ragged, pad_ragged_refs

__all__ = ["bleu_reward"]


class _Encoder(Protocol):
    def encode(self, text: str, /) -> list[int]: ...


def bleu_reward(
    ref_column: str = "reference",
    *,
    tokenizer: _Encoder | Callable[[str], list[int]] | None = None,
    eos_id: int | None = None,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
    compat: Compat = "sacrebleu",
    auto_reweigh: bool = False,
    device: torch.device | str | None = None,
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
        max_ngram_order, weights, smooth_method, smooth_value, effective_order, compat,
            auto_reweigh: as in :func:`tensortext.sentence_bleu`.
        device: where to score; default CUDA when available, else CPU.

    Returns:
        ``reward_func(completion_ids, **kwargs) -> list[float]`` (named ``bleu``), scores in 0..1.

    Example:
        >>> reward = bleu_reward("reference")
        >>> reward(completion_ids=[[5, 6, 7, 8]], reference=[[5, 6, 7, 8]])
        [1.0]
    """
    options = dict(
        max_ngram_order=max_ngram_order,
        weights=weights,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        compat=compat,
        auto_reweigh=auto_reweigh,
    )
    make_config(**options, dtype=torch.float32)  # type: ignore[arg-type]
    if eos_id is None and tokenizer is not None:
        eos_id = getattr(tokenizer, "eos_token_id", None)
    target = torch.device(device) if device is not None else _default_device()

    def bleu(completion_ids: Sequence[Sequence[int]] | None = None, **kwargs: Any) -> list[float]:
        if completion_ids is None:
            raise ValueError("the reward function needs completion_ids (TRL passes them)")
        if ref_column not in kwargs:
            columns = sorted(k for k in kwargs if k not in ("prompts", "completions"))
            raise ValueError(
                f"no dataset column {ref_column!r} among {columns}; pass "
                "bleu_reward(ref_column=<the column with the references>)"
            )
        references = kwargs[ref_column]
        if len(references) != len(completion_ids):
            raise ValueError(
                f"{len(completion_ids)} completions but {len(references)} entries in "
                f"{ref_column!r}; they must align one to one"
            )
        hyps = [_strip_eos(list(map(int, ids)), eos_id) for ids in completion_ids]
        refs = [_reference_set(entry, tokenizer, ref_column) for entry in references]
        hyp_ids, hyp_lens = pad_ragged(hyps, device=target)
        ref_ids, ref_lens = pad_ragged_refs(refs, device=target)
        scores = sentence_bleu(
            hyp_ids,
            ref_ids,
            hyp_lens=hyp_lens,
            ref_lens=ref_lens,
            **options,  # type: ignore[arg-type]
        )
        return [float(s) for s in scores.tolist()]

    return bleu


def _default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


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
