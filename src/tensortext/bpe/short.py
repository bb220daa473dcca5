"""The short-text path: ``encode`` of a short ASCII text without a tensor round trip.

A tensor pass costs about a millisecond of fixed overhead (dozens of small torch calls), which
dominates ``encode("hello world")``. For ASCII text, the split pattern's Unicode classes reduce to
ASCII ranges, so the standard library's ``re`` runs an equivalent pattern
(:func:`ascii_pattern`); each piece is then one dictionary lookup (a whole token, or a cache of
earlier pieces) or a heap-based byte-pair merge over the vocabulary's ranks. The results are
tiktoken's: ``tests/bpe/test_short.py`` compares them on random ASCII text for every encoding.

Used only where it is exact: tiktoken-style vocabularies (ID = rank, no normalizer), texts of at
most :data:`MAX_SHORT_CHARS` ASCII characters holding no special token's text (those take the
tensor path, which handles ``allowed_special``/``disallowed_special``), and Python >= 3.11
(possessive quantifiers).
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING

from tensortext.bpe.pretokenize import PATTERNS
from tensortext.bpe.text import special_regex

if TYPE_CHECKING:
    from tensortext.bpe.text import AllowedSpecial, DisallowedSpecial
    from tensortext.bpe.vocab import Vocab

__all__ = ["MAX_SHORT_CHARS", "ShortPath", "ascii_pattern"]

MAX_SHORT_CHARS = 2048
"""The longest text the short path takes; longer ones amortize a tensor pass."""

_CACHE_LIMIT = 1 << 16
"""Pieces remembered per encoding (the cache is emptied when full: no unbounded growth)."""

# Rust regex (tiktoken) reads \s as White_Space: on ASCII that is \t \n \v \f \r and space, not
# the \x1c-\x1f that Python's Unicode \s also takes.
_SPACE = " \\t\\n\\x0b\\x0c\\r"
_ASCII_CLASSES = {
    "L": "A-Za-z",
    "N": "0-9",
    "Lu": "A-Z",
    "Ll": "a-z",
    "Lt": "",
    "Lm": "",
    "Lo": "",
    "M": "",
}
# The tiktoken-engine regex of each split kind (the rules, not a user's spelling, decide).
_KIND_PATTERNS = {kind: pattern for pattern, kind in reversed(PATTERNS.items())}
_PROPERTY = re.compile(r"\\p\{(\w+)\}")
_LITERAL_ESCAPES = frozenset("rnt'\\/-$.^|?*+()[]{} ")


def ascii_pattern(pat_str: str) -> re.Pattern[str] | None:
    """``pat_str`` (a tiktoken/fancy-regex pattern) for ASCII input, or ``None`` where it uses
    a construct this translation does not know (then there is no short path).

    ``\\p{L}`` and friends become ASCII ranges, ``\\s``/``\\S`` tiktoken's ASCII whitespace, and
    ``$`` the end of the text (Python's ``$`` also matches before a final newline).
    """
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pat_str):
        char = pat_str[i]
        if char == "\\":
            token, i = _escape(pat_str, i, in_class)
            if token is None:
                return None
            out.append(token)
            continue
        if char == "[" and not in_class:
            in_class = True
            char = "[^" if pat_str[i + 1 : i + 2] == "^" else "["
        elif char == "]" and in_class:
            in_class = False
        elif char == "$" and not in_class:
            char = r"\Z"
        out.append(char)
        i += 2 if char == "[^" else 1
    try:
        compiled = re.compile("".join(out).replace("[]", "(?!)"))  # [] : no ASCII member
    except re.error:  # Python 3.10 has no possessive quantifiers
        return None
    return compiled if compiled.groups == 0 else None  # findall returns whole matches only


def _escape(pat_str: str, i: int, in_class: bool) -> tuple[str | None, int]:
    """The translation of the escape at ``pat_str[i]`` and the index after it."""
    property_match = _PROPERTY.match(pat_str, i)
    if property_match:
        ranges = _ASCII_CLASSES.get(property_match.group(1))
        if ranges is None:
            return None, i
        return (ranges if in_class else f"[{ranges}]"), property_match.end()
    letter = pat_str[i + 1 : i + 2]
    if letter == "s":
        return (_SPACE if in_class else f"[{_SPACE}]"), i + 2
    if letter == "S" and not in_class:
        return f"[^{_SPACE}]", i + 2
    if letter in _LITERAL_ESCAPES:
        return pat_str[i : i + 2], i + 2
    return None, i


class ShortPath:
    """The short-text encoder of one tiktoken-style vocabulary.

    Args:
        pat_str: The split pattern (``None``: no short path).
        mergeable: Token bytes -> rank (= ID).
        special_tokens: The special tokens' texts (a text holding one takes the tensor path).
    """

    def __init__(
        self, pat_str: str | None, mergeable: dict[bytes, int], special_tokens: Collection[str]
    ):
        self.pattern = None if pat_str is None else ascii_pattern(pat_str)
        self.ranks = mergeable
        self.rank: Callable[[bytes], int | None] = mergeable.get
        self.cache: dict[str, list[int]] = {}
        # A text without any first character of a special token holds none of them (one quick
        # scan); one with such a character is searched for the tokens themselves.
        self.special_starts = "".join(sorted({text[0] for text in special_tokens if text}))
        self.special_finder = special_regex(frozenset(special_tokens) - {""})

    @classmethod
    def for_vocab(cls, vocab: Vocab) -> ShortPath:
        """The short path of ``vocab``: a disabled one unless its ranks are its IDs (tiktoken's
        files) and nothing happens around the BPE (no normalizer, no prefix space)."""
        usable = vocab.ranks_are_ids and vocab.whole_piece_lookup and not vocab.options.active
        pat_str = _KIND_PATTERNS.get(vocab.kind) if usable else None
        return cls(pat_str, vocab.mergeable, vocab.special_tokens)

    def encode_checked(
        self, text: str, allowed_special: AllowedSpecial, disallowed_special: DisallowedSpecial
    ) -> list[int] | None:
        """:meth:`encode` where tiktoken's special-token keywords cannot matter: the defaults,
        ``"all"`` or sets (checked by the tensor path otherwise, with its errors)."""
        if not (allowed_special == "all" or isinstance(allowed_special, set | frozenset)):
            return None
        custom = isinstance(disallowed_special, tuple | list | set | frozenset)
        if disallowed_special != "all" and not (custom and not disallowed_special):
            return None  # a custom collection may hold any string to refuse
        return self.encode(text)

    def encode(self, text: str) -> list[int] | None:
        """The token IDs of ``text``, or ``None`` when the short path does not apply."""
        if self.pattern is None or len(text) > MAX_SHORT_CHARS or not text.isascii():
            return None
        if any(char in text for char in self.special_starts) and self.special_finder.search(text):
            return None
        ids: list[int] = []
        cache, rank = self.cache, self.rank
        for piece in self.pattern.findall(text):
            tokens = cache.get(piece)
            if tokens is None:
                data = piece.encode("ascii")
                whole = rank(data)
                tokens = [whole] if whole is not None else self._merge(data)
                if len(cache) >= _CACHE_LIMIT:
                    cache.clear()
                cache[piece] = tokens
            ids.extend(tokens)
        return ids

    def _merge(self, data: bytes) -> list[int]:
        """Byte-pair merges of one piece: the adjacent pair whose joined bytes have the lowest
        rank merges first (the leftmost among equals), with a heap, ``O(n log n)``."""
        rank = self.rank
        parts = [data[k : k + 1] for k in range(len(data))]
        after = list(range(1, len(parts) + 1))  # linked list over the surviving parts
        before = list(range(-1, len(parts) - 1))
        heap: list[tuple[int, int, bytes, bytes]] = []

        def push(k: int) -> None:
            nxt = after[k]
            if nxt < len(parts):
                joined = rank(parts[k] + parts[nxt])
                if joined is not None:
                    heapq.heappush(heap, (joined, k, parts[k], parts[nxt]))

        for k in range(len(parts) - 1):
            push(k)
        while heap:
            _, k, left, right = heapq.heappop(heap)
            nxt = after[k]
            if nxt >= len(parts) or parts[k] != left or parts[nxt] != right:
                continue  # stale: one side merged since this entry was pushed
            parts[k] = left + right
            parts[nxt] = b""
            after[k] = after[nxt]
            if after[k] < len(parts):
                before[after[k]] = k
            push(k)
            if before[k] >= 0:
                push(before[k])
        return [self.ranks[part] for part in parts if part]  # bytes or merged tokens
