"""Codepoint classes for the pre-tokenizers, one flag byte per codepoint (torch is imported only
by the functions that return tensors).

The table is built by ``scripts/build_unicode_tables.py`` from the ``regex`` module (so it has
that module's Unicode version) and ships as ``data/unicode_classes.bin`` (a few KB of runs).
"""

from __future__ import annotations

import struct
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = [
    "CHAR_CLASSES",
    "FLAG_PATTERNS",
    "LETTER",
    "LOWER",
    "MARK",
    "NUMBER",
    "OTHER_LETTER",
    "PUNCT_SYMBOL",
    "SPACE",
    "TABLE_PATH",
    "UPPER",
    "char_classes",
    "codepoint_flags",
    "flag_bytes",
    "flag_runs",
    "flag_table",
]

TABLE_PATH = Path(__file__).resolve().parents[1] / "data" / "unicode_classes.bin"

# Bit i of a codepoint's flags is set when it matches FLAG_PATTERNS[i] in the ``regex`` module.
FLAG_PATTERNS = (
    r"\p{L}",  # LETTER
    r"\p{N}",  # NUMBER
    r"\s",  # SPACE (White_Space)
    r"[\p{Lu}\p{Lt}]",  # UPPER: o200k's upper-case-only letters
    r"\p{Ll}",  # LOWER: o200k's lower-case-only letters
    r"[\p{Lm}\p{Lo}]",  # OTHER_LETTER: in both of o200k's letter sets
    r"\p{M}",  # MARK: in both of o200k's letter sets, but not \p{L}
    r"[\p{P}\p{S}]",  # PUNCT_SYMBOL: DeepSeek-V3's punctuation runs
)
LETTER, NUMBER, SPACE, UPPER, LOWER, OTHER_LETTER, MARK, PUNCT_SYMBOL = (
    1 << bit for bit in range(8)
)


@lru_cache(maxsize=1)
def flag_runs() -> tuple[tuple[int, int], ...]:
    """The table as ``(first codepoint, flags)`` runs, in order (each run ends where the next
    starts; the last at ``0x110000``). The file: ``TTUC``, the run count (uint32), the ``regex``
    version that built it (32 bytes, for people), then the runs (int32 pairs)."""
    data = TABLE_PATH.read_bytes()
    if data[:4] != b"TTUC":
        raise ValueError(f"{TABLE_PATH}: not a tensortext Unicode table (bad magic)")
    (count,) = struct.unpack_from("<I", data, 4)
    if len(data) - 40 != 8 * count:
        raise ValueError(f"{TABLE_PATH}: expected {count} runs, found {(len(data) - 40) // 8}")
    body = struct.unpack_from(f"<{2 * count}i", data, 40)
    return tuple(zip(body[0::2], body[1::2], strict=True))


@lru_cache(maxsize=1)
def flag_bytes() -> bytes:
    """The flags of every codepoint, one byte each (``0x110000`` bytes): what the C host encoder
    and :func:`flag_table` start from."""
    runs = flag_runs()
    ends = [start for start, _ in runs[1:]] + [0x110000]
    runs_with_ends = zip(runs, ends, strict=True)
    return b"".join(bytes([flags]) * (end - start) for (start, flags), end in runs_with_ends)


@lru_cache(maxsize=8)
def flag_table(device: torch.device) -> torch.Tensor:
    """The flags of every codepoint, ``[0x110000]`` uint8 on ``device`` (built once per device)."""
    import torch

    return torch.frombuffer(bytearray(flag_bytes()), dtype=torch.uint8).to(device)


def codepoint_flags(codepoints: torch.Tensor) -> torch.Tensor:
    """Class flags of each codepoint.

    Args:
        codepoints: int tensor of Unicode scalar values, any shape, on any device.

    Returns:
        uint8 tensor of the same shape: bit ``LETTER``, ``NUMBER``, ``SPACE``, ... set.
    """
    return flag_table(codepoints.device)[codepoints.long()]


CHAR_CLASSES = 7
"""The classes of :func:`char_classes` (SentencePiece's cuts: ``csrc/merge.h``'s
``char_class`` is the same rule)."""


def char_classes(codepoints: Any, flags: Any, where: Any) -> Any:
    """The class of each codepoint, from its flags: 0 U+0020, 1 other whitespace, 2 number,
    3 letter, 4 mark, 5 punctuation or symbol, 6 anything else.

    Args:
        codepoints, flags: numpy arrays or tensors of one shape (``flags`` from
            :func:`flag_bytes` / :func:`codepoint_flags`).
        where: ``numpy.where`` or ``torch.where``.
    """
    classes = where(flags & PUNCT_SYMBOL != 0, 5, 6)
    for bit, value in ((MARK, 4), (LETTER, 3), (NUMBER, 2), (SPACE, 1)):
        classes = where(flags & bit != 0, value, classes)
    return where(codepoints == 0x20, 0, classes)
