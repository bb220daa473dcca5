"""Host-side text preparation for the batched encoder: checks, special-token segments, code points.

These are C-speed passes over the Python strings (``join``, ``encode``, one regex scan); no
per-character Python loop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet

import torch

__all__ = [
    "check_texts",
    "special_regex",
    "split_segments",
    "to_codepoints",
    "to_utf8",
    "without_surrogates",
]


def check_texts(texts: object, name: str) -> list[str]:
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise TypeError(f"{name} must be a list of str, got {type(texts).__name__}")
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{index}] is {type(text).__name__}, expected str")
    return list(texts)


def without_surrogates(texts: list[str]) -> list[str]:
    """tiktoken's handling of lone surrogates: each becomes U+FFFD (one scan if there are none)."""
    try:
        "".join(texts).encode("utf-8")
    except UnicodeEncodeError:
        return [
            text.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for text in texts
        ]
    return texts


def special_regex(tokens: AbstractSet[str]) -> re.Pattern[str]:
    # Longest first, so a special token that extends another wins (leftmost-longest).
    return re.compile("|".join(re.escape(token) for token in sorted(tokens, key=len, reverse=True)))


def split_segments(
    texts: list[str], allowed: frozenset[str], specials: dict[str, int]
) -> tuple[list[str], list[int], list[int]]:
    """Texts cut at allowed special tokens: ``(segments, special ID or -1, text index)``."""
    if not allowed:
        return texts, [-1] * len(texts), list(range(len(texts)))
    finder = special_regex(allowed)
    segments, special, owner = [], [], []
    for index, text in enumerate(texts):
        last = 0
        for match in finder.finditer(text):
            if match.start() > last:
                segments.append(text[last : match.start()])
                special.append(-1)
                owner.append(index)
            segments.append(match.group())
            special.append(specials[match.group()])
            owner.append(index)
            last = match.end()
        segments.append(text[last:])  # possibly empty: keeps every text present
        special.append(-1)
        owner.append(index)
    return segments, special, owner


def to_codepoints(text: str) -> torch.Tensor:
    if not text:
        return torch.zeros(0, dtype=torch.int32)
    return torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32)


def to_utf8(text: str) -> torch.Tensor:
    if not text:
        return torch.zeros(0, dtype=torch.uint8)
    return torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8)
