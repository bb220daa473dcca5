"""Codepoint classes for the pre-tokenizers, one flag byte per codepoint, looked up on tensors.

The table is built by ``scripts/build_unicode_tables.py`` from the ``regex`` module (so it has
that module's Unicode version) and ships as ``data/unicode_classes.bin`` (a few KB of runs).
"""

from __future__ import annotations

import struct
from functools import lru_cache
from pathlib import Path

import torch

__all__ = [
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
    "codepoint_flags",
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
def _runs() -> tuple[torch.Tensor, torch.Tensor]:
    """``(first codepoint, flags)`` of each run. The file: ``TTUC``, the run count (uint32), the
    ``regex`` version that built it (32 bytes, for people), then the runs (int32 pairs)."""
    data = TABLE_PATH.read_bytes()
    if data[:4] != b"TTUC":
        raise ValueError(f"{TABLE_PATH}: not a tensortext Unicode table (bad magic)")
    (count,) = struct.unpack_from("<I", data, 4)
    body = torch.frombuffer(bytearray(data[40:]), dtype=torch.int32)
    if body.numel() != 2 * count:
        raise ValueError(f"{TABLE_PATH}: expected {count} runs, found {body.numel() // 2}")
    pairs = body.view(count, 2).to(torch.int64)
    return pairs[:, 0].contiguous(), pairs[:, 1].contiguous()


@lru_cache(maxsize=8)
def flag_table(device: torch.device) -> torch.Tensor:
    """The flags of every codepoint, ``[0x110000]`` uint8 on ``device`` (built once per device;
    the C host encoder takes the CPU one's bytes)."""
    starts, values = _runs()
    widths = torch.diff(starts, append=torch.tensor([0x110000]))
    return torch.repeat_interleave(values.to(torch.uint8), widths).to(device)  # [0x110000]


@lru_cache(maxsize=1)
def flag_runs() -> tuple[tuple[int, int], ...]:
    """The table as ``(first codepoint, flags)`` runs, in order (each run ends where the next
    starts; the last at ``0x110000``)."""
    starts, values = _runs()
    return tuple(zip(starts.tolist(), values.tolist(), strict=True))


def codepoint_flags(codepoints: torch.Tensor) -> torch.Tensor:
    """Class flags of each codepoint.

    Args:
        codepoints: int tensor of Unicode scalar values, any shape, on any device.

    Returns:
        uint8 tensor of the same shape: bit ``LETTER``, ``NUMBER``, ``SPACE``, ... set.
    """
    return flag_table(codepoints.device)[codepoints.long()]
