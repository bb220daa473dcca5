"""Beam search settings, declared and validated once: :class:`BeamSettings`.

:func:`~tensortext.decode.beam.beam_search`, :func:`~tensortext.decode.translate` and
:func:`~tensortext.decode.hf.beam_search_hf` keep their keyword options (HF's names and
defaults) and build one ``BeamSettings`` from them; the search reads only the settings object,
so a setting is checked the same way (and with the same exception) everywhere, and the defaults
live here (``tests/decode`` checks that every public signature repeats them).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import Tensor

from tensortext._checks import (
    brief,
    check_choice,
    check_float,
    check_int,
    check_integer_tensor,
    check_same_device,
)

__all__ = [
    "MAX_NEW_TOKENS",
    "BeamSettings",
    "EarlyStopping",
    "Finished",
    "check_length_penalty",
    "check_log_probs",
    "check_settings",
    "check_start_ids",
    "check_state_rows",
    "check_vocab_fits",
    "eos_list",
    "invalid_rows",
    "raise_invalid_log_probs",
]

EarlyStopping = bool | Literal["never"]
Finished = Literal["refill", "mask"]

# Lengths are int64. Any max_new_tokens up to this costs only the steps a search takes: its
# buffers grow with the search (tensortext.decode.search_state).
MAX_NEW_TOKENS = 2**63 - 1


@dataclass(frozen=True)
class BeamSettings:
    """The settings of one beam search, validated when built (HF ``generate``'s names).

    Args:
        num_beams: ``K``, beams per sentence.
        max_new_tokens: Most tokens to generate per hypothesis, EOS included; at most
            ``2**63 - 1`` (memory follows the tokens generated).
        min_new_tokens: EOS is forbidden while fewer tokens than this have been generated.
        length_penalty: Exponent of the length in the score normalization.
        early_stopping: ``True``, ``False`` or ``"never"`` (see
            :func:`~tensortext.decode.beam.beam_search`).
        finished: ``"refill"`` (HF semantics) or ``"mask"`` (the paper's Algorithm 1).
        prune_threshold: Drop candidates below this fraction of the best one's probability,
            in ``(0, 1]``; ``None`` keeps all.
        num_return_sequences: ``R``, hypotheses returned per sentence, ``1 <= R <= K``.

    Raises:
        TypeError: a setting of the wrong type.
        ValueError: a setting out of range or inconsistent with another.

    Example:
        >>> BeamSettings(num_beams=4, max_new_tokens=20).finished
        'refill'
    """

    num_beams: int
    max_new_tokens: int
    min_new_tokens: int = 0
    length_penalty: float = 1.0
    early_stopping: EarlyStopping = False
    finished: Finished = "refill"
    prune_threshold: float | None = None
    num_return_sequences: int = 1

    def __post_init__(self) -> None:
        check_int("num_beams", self.num_beams, minimum=1)
        check_int("max_new_tokens", self.max_new_tokens, minimum=1)
        if self.max_new_tokens > MAX_NEW_TOKENS:
            raise ValueError(
                f"max_new_tokens must be <= 2**63 - 1 (lengths are int64), got "
                f"{brief(self.max_new_tokens)}; memory follows the tokens actually generated, "
                "so max_new_tokens=2**40 costs no more than the search needs"
            )
        check_int("min_new_tokens", self.min_new_tokens, minimum=0)
        check_int("num_return_sequences", self.num_return_sequences, minimum=1)
        if self.min_new_tokens > self.max_new_tokens:
            raise ValueError(
                f"min_new_tokens ({self.min_new_tokens}) exceeds max_new_tokens "
                f"({self.max_new_tokens}): no hypothesis could end; lower min_new_tokens or "
                "raise max_new_tokens"
            )
        if self.num_return_sequences > self.num_beams:
            raise ValueError(
                f"num_return_sequences ({self.num_return_sequences}) must be <= num_beams "
                f"({self.num_beams})"
            )
        check_choice("finished", self.finished, ("refill", "mask"))
        length_penalty = check_float("length_penalty", self.length_penalty)
        check_length_penalty(length_penalty, self.max_new_tokens)
        object.__setattr__(self, "length_penalty", length_penalty)
        stopping = self.early_stopping
        if not (stopping is True or stopping is False or stopping == "never"):
            raise ValueError(
                f"early_stopping must be True, False or 'never', got {brief(stopping)}"
            )
        if self.prune_threshold is not None:
            check_float("prune_threshold", self.prune_threshold)
            if not 0.0 < self.prune_threshold <= 1.0:
                raise ValueError(
                    "prune_threshold must be in (0, 1] (e.g. 0.01) or None, got "
                    f"{brief(self.prune_threshold)}"
                )

    def check_search(
        self,
        *,
        batch_size: int,
        eos_id: int | Sequence[int],
        pad_id: int | None,
        vocab_size: int | None,
    ) -> list[int]:
        """The checks that need the model or the batch; returns the EOS IDs as a list."""
        check_int("batch_size", batch_size, minimum=1)
        eos_ids = eos_list(eos_id)
        if vocab_size is not None:
            vocab = check_int("vocab_size", vocab_size, minimum=1)
            check_vocab_fits(self.num_beams, eos_ids, vocab, finished=self.finished)
        if pad_id is not None:
            check_int("pad_id", pad_id)
        return eos_ids


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
    """Validate the settings before any work; return the EOS IDs as a list.

    :class:`BeamSettings` and :meth:`BeamSettings.check_search` in one call.

    Raises:
        TypeError: a setting of the wrong type.
        ValueError: a setting out of range or inconsistent with another.
    """
    check_int("batch_size", batch_size, minimum=1)
    settings = BeamSettings(
        num_beams=num_beams,
        max_new_tokens=max_new_tokens,
        min_new_tokens=min_new_tokens,
        length_penalty=length_penalty,
        early_stopping=early_stopping,
        finished=finished,  # type: ignore[arg-type]
        prune_threshold=prune_threshold,
        num_return_sequences=num_return_sequences,
    )
    return settings.check_search(
        batch_size=batch_size, eos_id=eos_id, pad_id=pad_id, vocab_size=vocab_size
    )


def eos_list(eos_id: int | Sequence[int] | Tensor) -> list[int]:
    """``eos_id`` as a non-empty list of IDs >= 0.

    An ``int``, a NumPy integer, a 0-d integer tensor, or a sequence (or 1-d tensor) of those.
    """
    if isinstance(eos_id, Tensor) and eos_id.dim() == 1:
        values: list[object] = list(eos_id.unbind())
    elif isinstance(eos_id, (Tensor, str, bytes)) or not isinstance(eos_id, Sequence):
        values = [eos_id]
    else:
        values = list(eos_id)
    if not values:
        raise ValueError("eos_id must be a token ID or a non-empty list of them, got []")
    return [check_int("eos_id", _as_int(value), minimum=0) for value in values]


def _as_int(value: object) -> object:
    """A NumPy integer or 0-d integer tensor as an ``int``; anything else unchanged."""
    if isinstance(value, Tensor):
        if value.dim() != 0 or value.dtype.is_floating_point or value.dtype == torch.bool:
            raise TypeError(
                f"eos_id must be an int, a sequence of ints or a 0-d/1-d integer tensor, got a "
                f"tensor of shape {list(value.shape)} and dtype {value.dtype}"
            )
        return int(value)  # a host copy, once, before the search
    if isinstance(value, (bool, int)) or not hasattr(value, "__index__"):
        return value
    return operator.index(value)  # NumPy integers


def check_vocab_fits(
    num_beams: int, eos_ids: list[int], vocab_size: int, *, finished: str = "refill"
) -> None:
    """``num_beams`` and ``eos_ids`` fit a vocabulary of ``vocab_size``.

    Refill keeps ``max(2, 1 + #EOS) * K`` of the ``K * V`` candidates (as ``transformers`` does),
    so it needs ``V >= max(2, 1 + #EOS)``: at least one token that is no EOS.
    """
    if num_beams > vocab_size:
        raise ValueError(
            f"num_beams ({num_beams}) exceeds the vocabulary size ({vocab_size}); use at most "
            f"num_beams={vocab_size}"
        )
    if max(eos_ids) >= vocab_size:
        raise ValueError(f"eos_id {max(eos_ids)} is out of range for a vocabulary of {vocab_size}")
    needed = max(2, 1 + len(set(eos_ids)))
    if finished == "refill" and vocab_size < needed:
        raise ValueError(
            f"finished='refill' keeps max(2, 1 + #EOS) * num_beams = {needed * num_beams} "
            f"candidates of num_beams * V = {num_beams * vocab_size}: a vocabulary of "
            f"{vocab_size} with eos_id={eos_ids} is too small; pass finished='mask' or fewer "
            "eos_id values"
        )


def check_length_penalty(length_penalty: float, max_new_tokens: int) -> None:
    """``length ** length_penalty`` stays a normal float32 for every length up to the limit
    (scores are float32 and divided by it)."""
    limit = 1.0 / torch.finfo(torch.float32).tiny  # ~8.5e37, so 1 / limit is normal too
    try:
        largest = float(max_new_tokens) ** abs(length_penalty)
    except OverflowError:
        largest = math.inf
    if largest > limit:
        bound = math.log(limit) / math.log(max_new_tokens)
        raise ValueError(
            f"length_penalty={length_penalty!r} makes max_new_tokens ** length_penalty "
            f"({max_new_tokens} ** {length_penalty!r}) overflow the float32 scores; pass "
            f"|length_penalty| <= {bound:.4g}"
        )


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


def check_state_rows(state: Any, rows: int, where: str = "state") -> None:
    """Every tensor the default reorder would ``index_select`` has ``rows = B*K`` rows.

    Walks ``state`` as :func:`~tensortext.decode.decoder.reorder_state` does; objects with their
    own ``reorder`` method (and types it cannot reorder) are left to it.
    """
    if isinstance(state, Tensor):
        if state.dim() == 0 or state.shape[0] != rows:
            raise ValueError(
                f"{where} has shape {list(state.shape)} but beam_search reorders B*K = {rows} "
                "rows on dim 0 (row r is beam r % K of sentence r // K); expand it with "
                f"{where}.repeat_interleave(num_beams, dim=0), or pass reorder=fn"
            )
    elif callable(getattr(state, "reorder", None)):
        return
    elif isinstance(state, (tuple, list)):
        for index, item in enumerate(state):
            check_state_rows(item, rows, f"{where}[{index}]")
    elif isinstance(state, Mapping):
        for key, value in state.items():
            check_state_rows(value, rows, f"{where}[{key!r}]")


def check_log_probs(
    name: str, log_probs: object, rows: int, vocab_size: int | None, device: torch.device
) -> Tensor:
    """Scores ``[B*K, V]`` of a floating dtype on ``device`` (shape metadata only, no sync).

    ``vocab_size=None`` accepts any ``V`` (the model's first output sets it).
    """
    if not isinstance(log_probs, Tensor) or not log_probs.is_floating_point():
        raise TypeError(
            f"{name} must be float log-probs [B*K, V], got "
            f"{getattr(log_probs, 'dtype', type(log_probs).__name__)}"
        )
    vocab = "V" if vocab_size is None else str(vocab_size)
    if (
        log_probs.dim() != 2
        or log_probs.shape[0] != rows
        or (vocab_size is not None and log_probs.shape[1] != vocab_size)
    ):
        raise ValueError(
            f"{name} has shape {list(log_probs.shape)}; expected [B*K, V] = [{rows}, {vocab}]"
        )
    check_same_device(name, log_probs, device, "start_ids")
    return log_probs


def invalid_rows(log_probs: Tensor, running_scores: Tensor) -> Tensor:
    """``[B*K]`` bool: live beams (finite ``[B, K]`` running score) whose ``[B*K, V]`` log-probs
    hold NaN or ``+inf``. ``-inf`` is a forbidden token; rows of finished or dead beams are
    ignored, as their outputs are. No host sync."""
    live = torch.isfinite(running_scores).view(-1)
    return (log_probs.isnan() | (log_probs == math.inf)).any(dim=1) & live


def raise_invalid_log_probs(invalid: Tensor, step: int, num_beams: int) -> None:
    """The error for :func:`invalid_rows`, naming the first bad row (called once one is known)."""
    row = int(invalid.nonzero()[0, 0])
    raise ValueError(
        f"log-probs at step {step}, row {row} (sentence {row // num_beams}, beam "
        f"{row % num_beams}) hold NaN or +inf (after logits_processor and score_bias); fix the "
        "model or the processors, or pass validate=False to skip this check"
    )
