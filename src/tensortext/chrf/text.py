"""Text as codepoint tensors, and the two character classes chrF reads: whitespace and punctuation.

* :func:`encode_texts` turns a list of strings into one flat tensor of Unicode codepoints (the
  whole batch joined and encoded to UTF-32 once, no loop over the strings) and their lengths.
  Python strings are sequences of codepoints, so ``text[i]`` is ``codes[offset + i]``; lone
  surrogates, which a ``str`` may hold, are kept as the codepoints they are.
* :data:`WHITESPACE` is the set of Python's ``str.split()`` / ``str.isspace()`` (every
  codepoint with bidirectional class WS, B or S, or category Zs), which sacrebleu removes
  (``''.join(line.split())``) and splits words on. It is not ASCII whitespace: ``\\x1c``-``\\x1f``,
  ``\\x85``, no-break and ideographic spaces and the line and paragraph separators count.
* :data:`PUNCTUATION` is ``string.punctuation``, the 32 ASCII characters chrF++ splits off a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from tensortext.padded import Flat

__all__ = [
    "MAX_CODEPOINT",
    "PUNCTUATION",
    "WHITESPACE",
    "Alphabet",
    "alphabet",
    "encode_texts",
    "is_punctuation",
    "is_space",
]

MAX_CODEPOINT = 0x10FFFF

WHITESPACE = (
    *range(0x09, 0x0E),  # \t \n \v \f \r
    *range(0x1C, 0x21),  # the file, group, record and unit separators, and the space
    0x85,  # next line
    0xA0,  # no-break space
    0x1680,  # ogham space mark
    *range(0x2000, 0x200B),  # en quad .. hair space
    0x2028,  # line separator
    0x2029,  # paragraph separator
    0x202F,  # narrow no-break space
    0x205F,  # medium mathematical space
    0x3000,  # ideographic space
)
"""The codepoints ``str.isspace()`` is true for (Python 3.10-3.13; checked in the tests)."""

PUNCTUATION = tuple(map(ord, "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"))
"""``string.punctuation``: what sacrebleu's chrF++ splits off the end (or start) of a word."""


def _member(codes: Tensor, members: Sequence[int]) -> Tensor:
    """``codes`` (any integers) in ``members`` (small codepoints), by one table lookup."""
    top = max(members)
    table = torch.zeros(top + 2, dtype=torch.bool, device=codes.device)
    table[torch.tensor(members, device=codes.device)] = True
    # Everything outside 1..top looks up entry 0 or top + 1, both False.
    return table.index_select(0, codes.clamp(0, top + 1).reshape(-1)).view(codes.shape)


def is_space(codes: Tensor) -> Tensor:
    """``[...]`` bool: ``chr(code).isspace()`` for integer codepoints ``[...]``.

    Example:
        >>> is_space(torch.tensor([0x20, 0x61, 0x3000, 0x1F])).tolist()
        [True, False, True, True]
    """
    return _member(codes, WHITESPACE)


def is_punctuation(codes: Tensor) -> Tensor:
    """``[...]`` bool: ``chr(code) in string.punctuation`` for integer codepoints ``[...]``."""
    return _member(codes, PUNCTUATION)


class Alphabet(NamedTuple):
    """Dense codes of a batch's codepoints, and the character classes chrF reads, by code."""

    codes: Tensor  # [T] int64: 2..A+1, equal iff the codepoints are, ordered like them
    bits: int  # bits of the codes (A + 1 < 2**bits)
    space: Tensor  # [A + 2] bool: the code's character is whitespace (codes 0, 1: False)
    punctuation: Tensor  # [A + 2] bool: the code's character is ASCII punctuation


def alphabet(codepoints: Tensor) -> Alphabet:
    """The :class:`Alphabet` of ``[T]`` int64 codepoints (clamped to ``0..0x10FFFF`` in place).

    Codes 0 and 1 stay free for end codes. A lookup table up to the largest codepoint, not a
    sort; the largest codepoint and the number ``A`` of distinct ones are read on the host
    (``A`` decides how many characters fit a key).

    Example:
        >>> found = alphabet(torch.tensor([98, 32, 97, 98]))
        >>> found.codes.tolist(), found.space.tolist()
        ([4, 2, 3, 4], [False, False, True, False, False])
    """
    device = codepoints.device
    if codepoints.numel() == 0:
        empty = torch.zeros(2, dtype=torch.bool, device=device)
        return Alphabet(codepoints.long(), 1, empty, empty)
    codepoints.clamp_(0, MAX_CODEPOINT)  # validate=True has refused anything else
    top = int(codepoints.max())  # host read
    seen = torch.bincount(codepoints, minlength=top + 1) > 0  # much faster than a scatter
    rank = torch.cumsum(seen, 0)  # int64: the 1-based rank of each seen codepoint
    distinct = int(rank[-1])  # host read
    present = torch.nonzero(seen).squeeze(1)  # [A]: the distinct codepoints, ascending
    none = torch.zeros(2, dtype=torch.bool, device=device)
    return Alphabet(
        rank.add_(1).index_select(0, codepoints),
        (distinct + 1).bit_length(),
        torch.cat([none, is_space(present)]),
        torch.cat([none, is_punctuation(present)]),
    )


def encode_texts(texts: Sequence[str], name: str) -> Flat:
    """The codepoints of ``texts``, one after another, and each text's length, on the CPU.

    Args:
        texts: ``S`` strings.
        name: the argument they came as (for the error message).

    Returns:
        :class:`~tensortext.padded.Flat` ``(codes [T] int64, lengths [S] int64)``.

    Raises:
        TypeError: an element that is not a ``str``.

    Example:
        >>> encode_texts(["ab", "", "\\U0001F600"], "texts").ids.tolist()
        [97, 98, 128512]
    """
    try:
        joined = "".join(texts)
    except TypeError:
        bad = next(text for text in texts if not isinstance(text, str))
        raise TypeError(
            f"{name} must hold strings, got {type(bad).__name__}; pass text, or codepoint tensors"
        ) from None
    # One encode of the whole batch; surrogatepass keeps the lone surrogates a str may hold.
    raw = joined.encode("utf-32-le", "surrogatepass")
    codes = torch.from_numpy(np.frombuffer(raw, dtype="<u4").astype(np.int64))
    lengths = torch.from_numpy(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)))
    return Flat(codes, lengths)
