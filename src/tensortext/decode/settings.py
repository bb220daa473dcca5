"""Validation of :func:`~tensortext.decode.beam.beam_search`'s settings, before any work.

Shared by the beam search itself, :func:`~tensortext.decode.translate` and the Hugging Face
entry points, so a setting is checked the same way (and with the same exception) everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from tensortext._checks import check_choice, check_float, check_int, check_integer_tensor

__all__ = ["EarlyStopping", "check_settings", "check_start_ids", "check_vocab_fits", "eos_list"]

EarlyStopping = bool | Literal["never"]


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
    """Validate the scalar options before any work; return the EOS IDs as a list.

    Raises:
        TypeError: a setting of the wrong type.
        ValueError: a setting out of range or inconsistent with another.
    """
    check_int("batch_size", batch_size, minimum=1)
    check_int("num_beams", num_beams, minimum=1)
    check_int("max_new_tokens", max_new_tokens, minimum=1)
    check_int("min_new_tokens", min_new_tokens, minimum=0)
    check_int("num_return_sequences", num_return_sequences, minimum=1)
    if min_new_tokens > max_new_tokens:
        raise ValueError(
            f"min_new_tokens ({min_new_tokens}) exceeds max_new_tokens ({max_new_tokens}): no "
            "hypothesis could end; lower min_new_tokens or raise max_new_tokens"
        )
    if num_return_sequences > num_beams:
        raise ValueError(
            f"num_return_sequences ({num_return_sequences}) must be <= num_beams ({num_beams})"
        )
    eos_ids = eos_list(eos_id)
    if vocab_size is not None:
        check_vocab_fits(num_beams, eos_ids, check_int("vocab_size", vocab_size, minimum=1))
    if pad_id is not None:
        check_int("pad_id", pad_id)
    check_float("length_penalty", length_penalty)
    if not (early_stopping is True or early_stopping is False or early_stopping == "never"):
        raise ValueError(f"early_stopping must be True, False or 'never', got {early_stopping!r}")
    check_choice("finished", finished, ("refill", "mask"))
    if prune_threshold is not None:
        check_float("prune_threshold", prune_threshold)
        if not 0.0 < prune_threshold <= 1.0:
            raise ValueError(
                f"prune_threshold must be in (0, 1] (e.g. 0.01) or None, got {prune_threshold!r}"
            )
    return eos_ids


def eos_list(eos_id: int | Sequence[int]) -> list[int]:
    """``eos_id`` as a non-empty list of IDs >= 0."""
    eos_ids = [eos_id] if isinstance(eos_id, int) else list(eos_id)
    if not eos_ids:
        raise ValueError("eos_id must be a token ID or a non-empty list of them, got []")
    for value in eos_ids:
        check_int("eos_id", value, minimum=0)
    return eos_ids


def check_vocab_fits(num_beams: int, eos_ids: list[int], vocab_size: int) -> None:
    if num_beams > vocab_size:
        raise ValueError(
            f"num_beams ({num_beams}) exceeds the vocabulary size ({vocab_size}); use at most "
            f"num_beams={vocab_size}"
        )
    if max(eos_ids) >= vocab_size:
        raise ValueError(f"eos_id {max(eos_ids)} is out of range for a vocabulary of {vocab_size}")


def check_start_ids(start_ids: Tensor, batch_size: int) -> Tensor:
    """Return ``start_ids`` as ``[B, P]`` int64, or raise naming what is wrong."""
    check_integer_tensor("start_ids", start_ids, shape="[B] or [B, P]")
    if start_ids.dtype != torch.int64:
        raise TypeError(f"start_ids must be int64 (torch.long), got {start_ids.dtype}")
    if start_ids.dim() == 1:
        start_ids = start_ids[:, None]
    if start_ids.dim() != 2 or start_ids.shape[0] != batch_size or start_ids.shape[1] == 0:
        raise ValueError(
            f"start_ids must have shape [batch_size] or [batch_size, P] with P >= 1 "
            f"(batch_size={batch_size}), got {list(start_ids.shape)}"
        )
    return start_ids
