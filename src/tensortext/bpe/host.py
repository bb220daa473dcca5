"""The Python encoder: tiktoken's IDs on the CPU from the standard library's ``re`` and a dict.

The C encoder (:mod:`tensortext.bpe.native`) gives the same IDs several times faster; this one
runs where it is not built or switched off (``TENSORTEXT_NATIVE=0``), and it is the only encoder
of a light install (no torch) without a C compiler (:mod:`tensortext.bpe.backends` chooses).

On a CPU, the tensor engine (:mod:`tensortext.bpe.engine`) pays for its generality: dozens of
small torch calls per batch (a millisecond before the first byte) and passes over every byte
that a dictionary lookup would skip. Real text is mostly pieces seen before, so the CPU path is:

1. split each ordinary segment with the encoding's own regex, translated for Python's ``re``
   (:func:`host_pattern`; C speed);
2. look each piece up in a bounded cache of earlier pieces (about 97% of the pieces of source
   code once warm), then in the vocabulary (a whole token);
3. merge the bytes of what is left, each new piece once per call: all together by the
   ``bulk_merge`` it is given (the tensor engine's parallel passes,
   :func:`~tensortext.bpe.engine.merge_byte_pieces`, where torch is installed) when there are
   many, else one by one (:func:`merge_short`, :func:`merge_by_rank`).

The translation is exact, not an approximation: ``\\p{L}``, ``\\p{N}``, ``\\s`` (White_Space),
... become explicit codepoint classes built from the same Unicode table as the tensor engine
(:mod:`tensortext.bpe.unicode`, tiktoken's Unicode version), so the two engines cut the same
pieces. The classes' Basic Multilingual Plane part compiles to ``re``'s two-level bitmap; the
rest (letters of historic scripts, emoji planes) is tried only for codepoints beyond U+FFFF.
``tests/bpe/test_host.py`` compares both engines with tiktoken, ``tokenizers`` and the ``regex``
module on random text.

It applies where the pattern is known (:data:`~tensortext.bpe.patterns.PATTERNS`) and Python
has possessive quantifiers (3.11): :func:`python_split_available`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from itertools import islice
from typing import TYPE_CHECKING, cast

from tensortext.bpe.patterns import (
    PATTERNS,
    SP_PREFIX_PATTERN,
    SP_SUFFIX_PATTERN,
    WHOLE_PATTERN,
    PatternKind,
)
from tensortext.bpe.serial import merge_by_rank, merge_serial, merge_short
from tensortext.bpe.unicode import (
    LETTER,
    LOWER,
    MARK,
    NUMBER,
    OTHER_LETTER,
    SPACE,
    UPPER,
    flag_runs,
)

if TYPE_CHECKING:
    from tensortext.bpe.vocab import Vocab

__all__ = ["HostEncoder", "host_pattern", "python_split_available"]

_CACHE_LIMIT = 1 << 18
"""Pieces remembered per encoding; when full, the older half is dropped (a few tens of MB at
most). On source code, 2**16 missed 2-6x more pieces than 2**18 once warm; 36 MB of this
repository's benchmark corpus holds ~150k distinct pieces (2**17: 5.4 MB/s, 2**19: 5.8)."""
_CACHED_PIECE_CHARS = 64
"""Longer pieces are not cached (the cache then holds at most a few tens of MB)."""
_TENSOR_MERGE_MIN = 64
"""New pieces that go through the bulk (tensor) merges together (once the tables exist)..."""
_BUILD_TABLES_MIN = 4096
"""...and how many make building the tables worth it (about a second for cl100k_base)."""
_LONG_PIECE_BYTES = 4096
"""Long pieces of one or two byte values go through the bulk merges (see _few_values)."""
_SHORT_PIECE_BYTES = 128
"""Pieces up to this long merge by scanning a list of pair ranks (fewer Python steps)."""

# The regex the tiktoken engine runs for each split kind (the rules, not a user's spelling).
_KIND_PATTERNS = {kind: pattern for pattern, kind in reversed(PATTERNS.items())}

# A class item -> the table flags it stands for. Lu/Lt and Lm/Lo share a flag, so they are
# translated only together (as every known pattern uses them).
_PROPERTIES = {"L": LETTER, "N": NUMBER, "M": MARK, "Ll": LOWER}
_PROPERTY_PAIRS = {("Lu", "Lt"): UPPER, ("Lm", "Lo"): OTHER_LETTER}
_SIMPLE_ESCAPES = {"r": "\r", "n": "\n", "t": "\t", "f": "\f", "v": "\v"}
_LITERAL_ESCAPES = frozenset("'\\/-$.^|?*+()[]{} ")
_ITEM = re.compile(r"\\p\{(\w+)\}|\\([sS])|\\(.)|(.)", re.DOTALL)
_BMP_END = 0x10000
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
# A piece boundary in every pattern of PATTERNS but _UNCHUNKED: a lone newline after a character
# that is not whitespace ends a piece (a punctuation run takes it, or it is a piece of its own),
# and a letter after it starts one (letter pieces' optional first character is never a newline).
# No pattern looks behind, and at the end of a chunk ``\s++$`` matches that lone newline, as
# ``\s`` or ``\s*[\r\n]`` does in the whole text. (BMP classes: beyond U+FFFF, no boundary is
# claimed.)
_CHUNK_BOUNDARY = r"(?<=[^\s]\n)(?=\p{L})"
# Patterns whose pieces run across newlines (SentencePiece's words, the whole segment), which the
# chunks would cut: text with codepoints beyond U+FFFF takes their full pattern whole.
_UNCHUNKED = frozenset({SP_PREFIX_PATTERN, SP_SUFFIX_PATTERN, WHOLE_PATTERN})
_SURROGATES = (0xD800, 0xDFFF)


def host_pattern(pat_str: str, *, below: int = 0x110000) -> re.Pattern[str] | None:
    """``pat_str`` (a tiktoken/fancy-regex pattern) as an equivalent Python ``re`` pattern, or
    ``None`` where it uses a construct this translation does not know (or Python < 3.11).

    Classes and ``\\p{..}``/``\\s``/``\\S`` become explicit codepoint sets from the Unicode table;
    ``$`` becomes ``\\Z`` (Python's ``$`` also matches before a final newline). With ``below``
    (``0x80`` or ``0x10000``), the classes leave out the codepoints from ``below`` on: the
    pattern is then exact only on text below it, compiles in a fraction of the time, and runs
    about twice as fast (each class is one bitmap, which ``re`` repeats in a tight loop).
    """
    out: list[str] = []
    position = 0
    while position < len(pat_str):
        char = pat_str[position]
        if char == "[":
            end = _class_end(pat_str, position)
            if end is None:
                return None
            codepoints = _class_set(pat_str[position + 1 : end], below)
            position = end + 1
        elif char == "\\":
            match = _ITEM.match(pat_str, position)
            assert match is not None  # a backslash always starts an item
            position = match.end()
            escaped = match.group(3)
            if escaped is not None:  # a literal or \r, \n, ...: the same in re
                if escaped not in _LITERAL_ESCAPES and escaped not in _SIMPLE_ESCAPES:
                    return None
                out.append(match.group())
                continue
            codepoints = _class_set(match.group(), below)  # \p{..}, \s or \S
        else:
            out.append(r"\Z" if char == "$" else char)
            position += 1
            continue
        if codepoints is None:
            return None
        out.append(_class_source(codepoints, below))
    try:
        compiled = re.compile("".join(out))
    except re.error:  # Python 3.10 has no possessive quantifiers
        return None
    return compiled if compiled.groups == 0 else None  # findall returns whole matches only


def _class_end(pat_str: str, start: int) -> int | None:
    """The index of the ``]`` closing the class that opens at ``start`` (no nested classes)."""
    position = start + 1
    while position < len(pat_str):
        if pat_str[position] == "\\":
            position += 2
            continue
        if pat_str[position] == "]" and position > start + 1:
            return position
        if pat_str[position] == "[":
            return None  # nested or POSIX classes: not translated
        position += 1
    return None


# Inclusive codepoint ranges, sorted and disjoint.
Ranges = list[tuple[int, int]]


@lru_cache(maxsize=256)
def _class_set(body: str, below: int) -> tuple[tuple[int, int], ...] | None:
    """The codepoints below ``below`` of a class body (``^`` negates) or of one escape, or
    ``None`` if an item is not translated. (Cached: the patterns repeat their classes, and each
    encoding compiles its pattern for ASCII, BMP and all text.)"""
    negated = body.startswith("^") and len(body) > 1
    flags, literals, properties, non_space = 0, [], set(), False
    for match in _ITEM.finditer(body[1:] if negated else body):
        name, space, escaped, char = match.groups()
        if name is not None:
            if name in _PROPERTIES:
                flags |= _PROPERTIES[name]
            else:
                properties.add(name)
        elif space is not None:
            if space == "S" and body == "\\S":
                negated, flags = True, SPACE
            elif space == "S":  # \S inside a class ([\s\S]: any codepoint)
                non_space = True
            else:
                flags |= SPACE
        elif escaped is not None:
            if escaped in _SIMPLE_ESCAPES:
                literals.append(ord(_SIMPLE_ESCAPES[escaped]))
            elif escaped in _LITERAL_ESCAPES:
                literals.append(ord(escaped))
            else:
                return None
        else:
            literals.append(ord(char))
    for pair, flag in _PROPERTY_PAIRS.items():
        if set(pair) <= properties:
            flags |= flag
            properties -= set(pair)
    if properties or "-" in re.sub(r"\\p\{\w+\}|\\.", "", body):
        return None  # a lone \p{Lu}, an unknown property, or a range
    ranges = _flag_ranges(flags, below)
    if non_space:
        ranges = _union(ranges, _complement(_flag_ranges(SPACE, below), below))
    if literals:
        ranges = _union(ranges, [(c, c) for c in literals if c < below])
    return tuple(_complement(ranges, below) if negated else ranges)


def _flag_ranges(flags: int, below: int) -> Ranges:
    """The codepoints below ``below`` whose table flags share a bit with ``flags``."""
    if not flags:
        return []
    runs = flag_runs()
    ranges: Ranges = []
    for (start, value), (end, _) in zip(runs, [*runs[1:], (0x110000, 0)], strict=True):
        if start >= below:
            break
        end = min(end, below)
        if value & flags:
            if ranges and ranges[-1][1] == start - 1:
                ranges[-1] = (ranges[-1][0], end - 1)
            else:
                ranges.append((start, end - 1))
    return ranges


def _union(first: Ranges, second: Ranges) -> Ranges:
    """The codepoints of either, as sorted disjoint ranges."""
    merged: Ranges = []
    for start, end in sorted(first + second):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _complement(ranges: Ranges, below: int) -> Ranges:
    """Every codepoint below ``below`` not in ``ranges``, surrogates aside (text never holds
    them); the gaps between sorted ranges, so sorted and disjoint."""
    out: Ranges = []
    previous = -1
    for start, end in [*sorted([*ranges, _SURROGATES]), (below, below)]:
        start = min(start, below)
        if start > previous + 1:
            out.append((previous + 1, start - 1))
        previous = max(previous, end)
    return out


def _class_source(ranges: Sequence[tuple[int, int]], below: int) -> str:
    """``re`` source matching one codepoint of ``ranges`` below ``below``: a BMP class
    (compiled to a bitmap) and, for the rest, a class tried only beyond U+FFFF."""
    bmp = [(a, min(b, _BMP_END - 1, below - 1)) for a, b in ranges if a < min(_BMP_END, below)]
    astral = [(max(a, _BMP_END), b) for a, b in ranges if b >= _BMP_END] if below > _BMP_END else []
    parts = []
    if bmp:
        parts.append(_bracket(bmp))
    if astral:
        guard = "" if len(astral) <= 2 else _bracket([(_BMP_END, 0x10FFFF)]).join(["(?=", ")"])
        parts.append(guard + _bracket(astral))
    if not parts:
        return "(?!)"  # an empty class matches nothing
    return parts[0] if len(parts) == 1 else "(?:" + "|".join(parts) + ")"


def _bracket(ranges: Ranges) -> str:
    def spell(codepoint: int) -> str:
        return f"\\U{codepoint:08x}"

    items = (spell(a) if a == b else f"{spell(a)}-{spell(b)}" for a, b in ranges)
    return "[" + "".join(items) + "]"


def _holes(row: list[int | None]) -> list[int]:
    """The indices of the ``None`` in ``row``, found at C speed (most rows have few)."""
    indices: list[int] = []
    index = -1
    for _ in range(row.count(None)):
        index = row.index(None, index + 1)
        indices.append(index)
    return indices


def _few_values(piece: bytes) -> bool:
    """A long piece of at most two byte values (``aaaa...``): few distinct ranks merge there,
    so the tensor passes finish it in a handful of steps (1 MB of one letter: 0.26 s, against
    1.2 s for the rank-at-a-time merge). Other long pieces (random letters, CJK) need a pass
    per distinct rank, where the sequential merges are faster."""
    return len(piece) >= _LONG_PIECE_BYTES and len(set(piece)) <= 2


@lru_cache(maxsize=64)
def _compiled(pat_str: str, below: int) -> re.Pattern[str] | None:
    """:func:`host_pattern`, compiled once per process (a cache, not a per-object property:
    nothing holds a lock while it compiles, so a fork in the middle leaves none held)."""
    return host_pattern(pat_str, below=below)


def python_split_available(kind: PatternKind) -> bool:
    """Whether this encoder can split ``kind``: its pattern translates to ``re`` (a known
    pattern, Python 3.11+)."""
    pat_str = _KIND_PATTERNS.get(kind)
    return pat_str is not None and _compiled(pat_str, 0x80) is not None


def _no_whole_token(data: bytes) -> int | None:
    return None


@cache
def _chunk_boundary() -> re.Pattern[str]:
    pattern = host_pattern(_CHUNK_BOUNDARY, below=_BMP_END)
    assert pattern is not None, "a pattern this module translates"
    return pattern


class HostEncoder:
    """The Python encoder of one vocabulary (see the module docstring).

    ``usable`` is false where it does not apply (an unknown pattern, Python 3.10).
    ``bulk_merge`` merges many pieces' bytes at once (the tensor engine's passes); without it,
    every piece merges on its own.
    """

    def __init__(
        self, vocab: Vocab, *, bulk_merge: Callable[[list[bytes]], list[list[int]]] | None = None
    ):
        self.vocab = vocab
        self.bulk_merge = bulk_merge
        self.pat_str = _KIND_PATTERNS.get(vocab.kind)
        self.single: dict[str, int] = {}  # pieces that are one token (most of them)
        self.multi: dict[str, list[int]] = {}  # pieces of several tokens
        self.whole: Callable[[bytes], int | None] = (
            vocab.mergeable.get if vocab.whole_piece_lookup else _no_whole_token
        )

    @property
    def ascii_pattern(self) -> re.Pattern[str] | None:
        """The split pattern for ASCII text (compiles in milliseconds), or ``None`` if the
        encoding's pattern is not translated."""
        return None if self.pat_str is None else _compiled(self.pat_str, 0x80)

    @property
    def usable(self) -> bool:
        return self.ascii_pattern is not None

    @property
    def bmp_pattern(self) -> re.Pattern[str]:
        """The split pattern for text without codepoints beyond U+FFFF (most text: faster)."""
        return self._pattern_below(_BMP_END)

    @property
    def pattern(self) -> re.Pattern[str]:
        """The split pattern for any text."""
        return self._pattern_below(0x110000)

    def _pattern_below(self, below: int) -> re.Pattern[str]:
        assert self.pat_str is not None, "check usable first"
        pattern = _compiled(self.pat_str, below)
        assert pattern is not None  # as the ASCII pattern, which is not None
        return pattern

    def split(self, text: str) -> list[str]:
        """The pieces of one ordinary segment.

        Text with codepoints beyond U+FFFF (emoji) is cut into chunks where every known pattern
        (but those of ``_UNCHUNKED``) ends a piece (``_CHUNK_BOUNDARY``), so that only the
        chunks holding such codepoints take the slower pattern.
        """
        if text.isascii():
            assert self.ascii_pattern is not None, "check usable first"
            return self.ascii_pattern.findall(text)
        if _ASTRAL.search(text) is None:
            return self.bmp_pattern.findall(text)
        if self.pat_str in _UNCHUNKED:
            return self.pattern.findall(text)
        pieces: list[str] = []
        for chunk in _chunk_boundary().split(text):
            fast = _ASTRAL.search(chunk) is None
            pieces += (self.bmp_pattern if fast else self.pattern).findall(chunk)
        return pieces

    def encode_ordinary(self, text: str) -> list[int]:
        """The tokens of one ordinary segment (no special tokens, options applied)."""
        return self.encode_many([text])[0]

    def encode_many(self, texts: list[str]) -> list[list[int]]:
        """The tokens of ordinary segments. The pieces the cache lacks are encoded together,
        once each, so many of them can share one pass of the tensor merges.

        Each row is first the one-token IDs of its pieces (one C-speed ``map``); the holes
        (pieces of several tokens, about 7% of them, and new pieces) are found with
        ``list.index`` and spliced in, so the Python work follows the holes, not the pieces.
        """
        single, multi = self.single, self.multi
        splits = [self.split(text) for text in texts]
        rows = [list(map(single.get, pieces)) for pieces in splits]
        holes = [_holes(row) for row in rows]
        new = {
            pieces[index]
            for pieces, indices in zip(splits, holes, strict=True)
            for index in indices
            if pieces[index] not in multi
        }
        found = self._encode_new(new) if new else {}
        out: list[list[int]] = []
        for pieces, row, indices in zip(splits, rows, holes, strict=True):
            ids = cast("list[int]", row)  # read only between the holes
            if not indices:
                out.append(ids)
                continue
            tokens: list[int] = []
            start = 0
            for index in indices:
                piece = pieces[index]
                tokens += ids[start:index]
                tokens += multi.get(piece) or found[piece]
                start = index + 1
            tokens += ids[start:]
            out.append(tokens)
        # Evicted after the splice, which reads the cache; the newest half of each dict stays.
        if len(single) + len(multi) > _CACHE_LIMIT:
            for cache in (single, multi):
                for old in list(islice(cache, len(cache) - len(cache) // 2)):
                    del cache[old]
        return out

    def clear_cache(self) -> None:
        """Forget every piece (the next calls encode their pieces anew)."""
        self.single.clear()
        self.multi.clear()

    def _encode_new(self, pieces: set[str]) -> dict[str, list[int]]:
        """The tokens of pieces not in the cache (which then holds them, if short)."""
        new: dict[str, list[int]] = {}
        to_merge: list[tuple[str, bytes]] = []
        for piece in pieces:
            data = piece.encode("utf-8")
            whole = self.whole(data)
            if whole is None:
                to_merge.append((piece, data))
            else:
                new[piece] = [whole]
        merged = self._merge([data for _, data in to_merge])
        new.update(zip([piece for piece, _ in to_merge], merged, strict=True))
        single, multi = self.single, self.multi
        for piece, tokens in new.items():
            if len(piece) <= _CACHED_PIECE_CHARS:
                if len(tokens) == 1:
                    single[piece] = tokens[0]
                else:
                    multi[piece] = tokens
        return new

    def _merge(self, pieces: list[bytes]) -> list[list[int]]:
        """Byte-pair merges of pieces that are no whole token: together by ``bulk_merge``
        when there are many and the tables are built (or worth building), else one by one."""
        vocab = self.vocab
        batched = len(pieces) >= _TENSOR_MERGE_MIN and vocab.has_tables()
        if self.bulk_merge is not None and (
            batched or len(pieces) >= _BUILD_TABLES_MIN or any(map(_few_values, pieces))
        ):
            return self.bulk_merge(pieces)
        if not vocab.ranks_are_ids:
            return [merge_serial(data, vocab.byte_ids, vocab.pairs) for data in pieces]
        return [
            merge_short(data, vocab.mergeable)
            if len(data) <= _SHORT_PIECE_BYTES
            else merge_by_rank(data, vocab.mergeable, vocab.tokens)
            for data in pieces
        ]
