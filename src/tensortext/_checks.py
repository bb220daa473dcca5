"""Argument checks shared by every part of tensortext: one exception rule, one device rule.

* ``TypeError`` for a wrong type or dtype; ``ValueError`` for a wrong shape, value or device.
  Every message names the argument, what was expected, what came, and the fix where there is one.
* The device follows the input tensors. Functions that build tensors from Python data take
  ``device``: ``None`` is the CPU (as in ``torch.tensor``), ``"auto"`` is CUDA when available,
  else the CPU. The CLI, the demo and the TRL reward default to ``"auto"``.
* Checks run before any work. Checks of tensor *values* (a host sync on CUDA) are separate, so
  callers can skip them (``validate=False``).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

if TYPE_CHECKING:
    import torch
    from torch import Tensor

__all__ = [
    "MAX_NGRAM_ORDER",
    "MAX_VOCAB_SIZE",
    "DeviceLike",
    "brief",
    "check_choice",
    "check_float",
    "check_float_tensor",
    "check_int",
    "check_integer_tensor",
    "check_lengths",
    "check_ngram_order",
    "check_pad_ids",
    "check_same_device",
    "check_shape",
    "resolve_config",
    "resolve_device",
]

DeviceLike = Union["torch.device", str]  # a string: torch is imported by the checks that use it

MAX_NGRAM_ORDER = 1000
"""The highest n-gram order any function takes (BLEU, LMBR, MBR and the CLI's flags).

Work and memory are checked against it before anything is allocated: BLEU statistics hold
``2 + 2N`` numbers per sentence, NLTK's smoothing and LMBR's weights have one entry per order.
An order above the longest sequence never matches; metrics in use stop at 4 to 10.
"""

MAX_VOCAB_SIZE = 2**31 - 1
"""The largest ``vocab_size`` an LMBR bias takes: token IDs fit int32, the widest ID type of
tokenizers (HF ``tokenizers``, tiktoken), and the bias holds a dense ``[B, V]`` row per
sentence, so a larger ``V`` is a mistake that would ask for terabytes."""

_BRIEF_CHARS = 60


def brief(value: object) -> str:
    """``repr(value)`` cut to a few dozen characters, for error messages (user data is
    unbounded: a 5,000-digit int or a long list must not become a 10 MB "one-line" error)."""
    torch = sys.modules.get("torch")  # loaded if value can be a tensor
    if torch is not None and isinstance(value, torch.Tensor):  # never print a tensor's values
        return f"tensor(shape={list(value.shape)}, dtype={value.dtype})"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**_BRIEF_CHARS:
        # str() of a huge int is slow, and refused past 4300 digits.
        return f"an int of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    if len(text) <= _BRIEF_CHARS:
        return text
    return f"{text[: _BRIEF_CHARS - 3]}... ({len(text)} characters)"


def resolve_device(device: DeviceLike | Literal["auto"] | None) -> torch.device:
    """The device rule: ``None`` is the CPU, ``"auto"`` CUDA when available, else the CPU.

    Raises:
        ValueError: an unknown device string, or a CUDA device without CUDA.
    """
    import torch

    if device is None:
        return torch.device("cpu")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}")
    try:
        resolved = torch.device(device)
    except RuntimeError:
        raise ValueError(
            f"device={device!r} is not a torch device; pass e.g. 'cpu', 'cuda' or 'auto'"
        ) from None
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={str(device)!r}, but CUDA is not available; pass device='cpu'")
    return resolved


def check_int(name: str, value: object, *, minimum: int | None = None) -> int:
    """An ``int`` (not a ``bool``) at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {brief(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {brief(value)}")
    return value


def check_ngram_order(name: str, value: object) -> int:
    """An n-gram order ``1 <= value <=`` :data:`MAX_NGRAM_ORDER`, checked before any work."""
    order = check_int(name, value, minimum=1)
    if order > MAX_NGRAM_ORDER:
        raise ValueError(
            f"{name} must be <= {MAX_NGRAM_ORDER}, got {brief(order)}; an n-gram longer than "
            f"the longest sequence never occurs: pass e.g. {name}=4"
        )
    return order


def check_float(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    positive: bool = False,
    finite: bool = True,
) -> float:
    """A real number (``int`` or ``float``, not ``bool``), finite unless ``finite=False``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {brief(value)}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond float range
        raise ValueError(f"{name} must fit a float, got {brief(value)}") from None
    if finite and not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {brief(value)}")
    if positive and not number > 0:
        raise ValueError(f"{name} must be > 0, got {brief(value)}")
    if minimum is not None and number < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {brief(value)}")
    return number


def check_choice(name: str, value: object, choices: Sequence[object]) -> None:
    """``value`` is one of ``choices`` (a ``ValueError`` listing them otherwise)."""
    if value not in choices:
        listed = ", ".join(repr(choice) for choice in choices)
        raise ValueError(f"{name} must be one of {listed}, got {brief(value)}")


def check_integer_tensor(name: str, value: object, *, shape: str | None = None) -> Tensor:
    """A tensor of an integer dtype (not bool). ``shape`` (e.g. ``"[B, L]"``) goes in messages."""
    import torch

    where = f" of shape {shape}" if shape else ""
    if not isinstance(value, torch.Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor{where} of integer token IDs, got "
            f"{type(value).__name__}; wrap it with torch.tensor(..., dtype=torch.long)"
        )
    if value.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"{name} must have an integer dtype, got {value.dtype}; pass {name}.long()")
    return value


def check_float_tensor(name: str, value: object, *, shape: str | None = None) -> Tensor:
    """A tensor of a floating dtype."""
    import torch

    where = f" of shape {shape}" if shape else ""
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a float torch.Tensor{where}, got {type(value).__name__}")
    if not value.is_floating_point():
        raise TypeError(
            f"{name} must have a floating dtype, got {value.dtype}; pass {name}.float()"
        )
    return value


def check_shape(name: str, tensor: Tensor, expected: Sequence[int | None], doc: str) -> None:
    """``tensor.shape`` matches ``expected`` (``None`` matches any size); ``doc`` names it."""
    actual = tuple(tensor.shape)
    if len(actual) != len(expected) or any(
        want is not None and got != want for got, want in zip(actual, expected, strict=True)
    ):
        raise ValueError(f"{name} must have shape {doc}, got {list(actual)}")


def check_same_device(name: str, tensor: Tensor, device: torch.device, other: str) -> None:
    """``tensor`` is on ``device`` (where ``other`` lives)."""
    if tensor.device != device:
        raise ValueError(
            f"{name} is on {tensor.device} but {other} is on {device}; move both to one device "
            f"({name}.to({str(device)!r}))"
        )


def check_lengths(
    name: str, lengths: object, shape: Sequence[int], device: torch.device, of: str
) -> Tensor:
    """Integer lengths of shape ``shape`` on ``device`` (values are not checked: no sync)."""
    tensor = check_integer_tensor(name, lengths, shape=str(list(shape)))
    check_shape(name, tensor, list(shape), str(list(shape)))
    check_same_device(name, tensor, device, of)
    return tensor


def check_pad_ids(pad_id: object, tensors: Sequence[tuple[str, Tensor]]) -> tuple[int, ...]:
    """``pad_id`` (an ``int``, or a non-empty tuple or list of them) as a tuple of IDs that fit
    the dtype of every ``(name, tensor)`` in ``tensors``."""
    import torch

    values = pad_id if isinstance(pad_id, (tuple, list)) else (pad_id,)
    if not values:
        raise ValueError("pad_id must be an int or a non-empty tuple of ints, got ()")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"pad_id must be an int or a tuple of ints such as (0, -100), got "
                f"{type(value).__name__} {brief(value)}"
            )
    for name, tensor in tensors:
        info = torch.iinfo(tensor.dtype)
        for value in values:
            if not info.min <= value <= info.max:
                raise ValueError(
                    f"pad_id={brief(value)} cannot occur in {name} of dtype {tensor.dtype} (values "
                    f"{info.min}..{info.max}); pass {name}.long(), or a pad_id in that range"
                )
    return tuple(values)


ConfigT = TypeVar("ConfigT")


def resolve_config(config_type: type[ConfigT], config: object, options: dict[str, Any]) -> ConfigT:
    """The config of a call that takes ``config=`` or the options as keywords, not both.

    Builds (and so validates) a ``config_type`` (a frozen dataclass such as ``BleuConfig``)
    from ``options`` when ``config`` is ``None``; otherwise checks ``config`` and that every
    keyword option kept its default (a list equal to a tuple default counts as kept; NaN never).
    """
    if config is None:
        return config_type(**options)
    name = config_type.__name__
    if not isinstance(config, config_type):
        raise TypeError(f"config must be a {name} or None, got {type(config).__name__}")
    defaults = {f.name: f.default for f in dataclasses.fields(config_type) if f.init}  # type: ignore[arg-type]
    changed = [key for key, value in options.items() if not _is_default(defaults[key], value)]
    if changed:
        given = ", ".join(f"{key}={brief(options[key])}" for key in changed)
        raise ValueError(
            f"got config= and {given}; pass the options either in the {name} or as "
            f"keywords (e.g. config=dataclasses.replace(config, {changed[0]}=...))"
        )
    return config


def _is_default(default: object, value: object) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    if isinstance(default, tuple) and isinstance(value, (tuple, list)):
        return tuple(value) == default
    return value is default or (type(value) is type(default) and value == default)
