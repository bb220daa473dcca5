"""Long text documents encoded in parts, with the IDs of the whole: memory stays bounded by the
part, not the document (a 300 MB ``--whole-file`` book, a file with CR-only line ends).

A document longer than :data:`PART_CHARS` characters is cut at the last position ``c`` where

1. ``T[c-2]`` is a printable ASCII character (``!`` to ``~``), ``T[c-1]`` is ``\\r`` or ``\\n``
   and ``T[c]`` an ASCII letter (the cut is after the line end), or
2. ``T[c-1]`` and ``T[c+1]`` are ASCII letters and ``T[c]`` a space (the cut is before it).

Why the pieces of ``T`` (the regex split BPE works on) are those of ``T[:c]`` then ``T[c:]``,
for the patterns of gpt2/r50k/p50k, cl100k and o200k (:data:`PROVEN_PATTERNS`):

- No lookbehind: the match at a position reads only what follows it, so the pieces from ``c``
  on are the same in ``T[c:]``, once ``c`` is a piece boundary of ``T``.
- ``c`` is a boundary: no alternative consumes a line end and then a letter (line ends come
  only at the tail of a punctuation run, ``[\\r\\n]*`` or ``[\\r\\n/]*``, or in whitespace
  runs), nor a letter and then a space (letter runs end at any non-letter; o200k's optional
  contraction starts with ``'``).
- The pieces before ``c`` are the same in ``T[:c]``: only a match that reaches ``c`` can tell
  the end of ``T[:c]`` from ``T[c]``. In case 2 that is the letter run before the space, which
  stops there either way. In case 1 it is the line end's own piece: after a punctuation run it
  ends at ``c`` either way (``T[c]`` is no line end, no ``/``); after a letter or digit it is
  ``\\n`` alone, a piece of its own (a single whitespace character, as ``T[c-2]`` is not
  whitespace): in ``T``, ``\\s*[\\r\\n]`` (cl100k, o200k) or ``\\s+`` (gpt2, after
  ``\\s+(?!\\S)`` fails before the letter) gives it; in ``T[:c]``, ``\\s++$`` or ``\\s+(?!\\S)``
  gives the same single character.
- Special tokens: the encodings' special tokens hold no line end or space, so none spans ``c``
  (:func:`splits_exactly` checks); a disallowed one found in a part is found in the whole.

``tests/cli/test_cli_long_documents.py`` checks this against tiktoken on the whole text, with
parts of a few characters, for each pattern.
"""

from __future__ import annotations

import codecs
import re
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from tensortext.cli.common import CliError

__all__ = ["BLOCK_BYTES", "PART_CHARS", "PROVEN_PATTERNS", "cut_point", "parts", "splits_exactly"]

PART_CHARS = 1 << 20
"""A document longer than this is encoded in parts of about this many characters."""
BLOCK_BYTES = 1 << 20
"""Bytes read at a time from a long document."""
_CUT = re.compile(r"(?<=[!-~][\r\n])[A-Za-z]|(?<=[A-Za-z]) (?=[A-Za-z])")
_WINDOW = 1 << 16  # where the last cut is looked for first: the end of the text


def _proven_patterns() -> frozenset[str]:
    from tensortext.bpe.patterns import (
        CL100K_PATTERN,
        GPT2_PATTERN,
        O200K_PATTERN,
        R50K_PATTERN,
    )

    return frozenset({CL100K_PATTERN, GPT2_PATTERN, O200K_PATTERN, R50K_PATTERN})


PROVEN_PATTERNS = _proven_patterns()
"""The split patterns the module docstring's argument covers."""


def splits_exactly(encoding: Any) -> bool:
    """Whether parts cut at :func:`cut_point` encode to the IDs of the whole with ``encoding``:
    one of :data:`PROVEN_PATTERNS`, and no special token with a line end or a space."""
    return getattr(encoding, "_pat_str", None) in PROVEN_PATTERNS and not any(
        any(c in token for c in "\r\n ") for token in encoding.special_tokens_set
    )


def cut_point(text: str) -> int:
    """The last position where ``text`` may be cut (see the module's docstring); 0 if none."""
    return _last_cut(text, max(0, len(text) - _WINDOW)) or _last_cut(text, 0)


def _last_cut(text: str, start: int) -> int:
    """The last cut at ``start`` or after (0 if none); the lookbehind reads before ``start``."""
    last = deque(_CUT.finditer(text, start), maxlen=1)
    return last[0].start() if last else 0


def parts(
    blocks: Iterator[bytes], limit: int, too_long: str, where: Callable[[int], str]
) -> Iterator[tuple[str, int, bool]]:
    """A document read as blocks of UTF-8, as ``(text, bytes, last)`` parts of about
    ``min(PART_CHARS, limit)`` characters cut at :func:`cut_point`.

    Args:
        blocks: The document's bytes, a block at a time.
        limit: The most bytes held with no place to cut them.
        too_long: The message when that is exceeded.
        where: ``where(newlines)``: the place of invalid UTF-8 after that many line ends.

    Raises:
        CliError: invalid UTF-8; more than ``limit`` bytes with no cut.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    part_chars = min(PART_CHARS, limit)
    text, pending, newlines = "", 0, 0
    cut = 0  # the last place to cut text (0: none), so only new text is ever searched
    for block in blocks:
        scanned = len(text)
        try:
            text += decoder.decode(block)
        except UnicodeDecodeError as error:
            line_ends = newlines + text.count("\n") + block[: error.start].count(b"\n")
            raise CliError(f"{where(line_ends)}: invalid UTF-8; is it a text file?") from None
        pending += len(block)
        # A cut reads the character after it: one before the new text may have become one.
        cut = _last_cut(text, max(0, scanned - 1)) or cut
        while (len(text) > part_chars or pending > limit) and cut:
            head, text, cut = text[:cut], text[cut:], 0  # it was the last: none follows it
            rest = len(text.encode("utf-8"))
            newlines += head.count("\n")
            yield head, pending - rest, False
            pending = rest
        if pending > limit:
            raise CliError(too_long)
    try:
        text += decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        line_ends = newlines + text.count("\n")
        raise CliError(f"{where(line_ends)}: invalid UTF-8; is it a text file?") from None
    yield text, pending, True
