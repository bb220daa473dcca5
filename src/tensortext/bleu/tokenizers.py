"""sacrebleu's text tokenizers for BLEU: ``13a`` (its default), ``intl``, ``char`` and ``none``.

:func:`tokenize_line` is the readable reference: one line in, the string sacrebleu's tokenizer
returns out (tokens joined by single spaces). :func:`tokenize_lines` and :class:`TokenVocab`
return the same tokens for many lines, fast, by tokenizing each distinct whitespace-separated
*chunk* once instead of running four regular expressions over every line.

Why chunks give sacrebleu's tokens exactly. Every rule only inserts spaces, so a token never
spans the whitespace between two chunks. What remains is that a rule's matches inside a chunk do
not depend on the chunks around it: rules read a neighbour only as "whitespace" or "nothing",
and a rule that matches a pair of characters, scanning left to right without overlap, could let
a match on one side of some whitespace take that whitespace away from a match on the other side
only if the whitespace could play both parts of the pair. It never can:

* ``13a`` pads the line with a space on both sides, so every chunk sits between whitespace.
  Rule 1 splits single characters (whitespace stays whitespace). In ``([^0-9])([.,])`` and
  ``([.,])([^0-9])`` whitespace can only be the non-digit, and in ``([0-9])(-)`` nothing.
  Hence the tokens of a chunk are those of ``" " + chunk + " "``. The line-level part of 13a
  (``<skipped>``, ``-\\n``, ``&quot;`` ...) runs on whole lines first.
* ``intl`` does not pad, so a chunk at the start (end) of a line has *nothing* on its left
  (right), which is not the same as whitespace: ``(\\P{N})(\\p{P})`` needs a character before
  the punctuation. Whitespace is neither a number, nor punctuation, nor a symbol, so it can only
  be the first character of rule 1's pairs and the second of rule 2's. A chunk is tokenized
  with a space on each side where the line has whitespace there, none at the line's edges.
* ``char`` splits every character, ``none`` splits at whitespace: chunks trivially.

For the same reason lines may be joined into one text, with a chunk that no line holds (NUL)
between them, and split in one call (13a also unescapes the joined text: its patterns hold no
whitespace, so none reaches across lines). intl keeps to line-by-line splitting.

tests/bleu/test_tokenizers.py checks this against sacrebleu's own tokenizers on adversarial text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import regex  # type: ignore[import-untyped]  # (no stubs installed: types-regex)
import torch

from tensortext._checks import DeviceLike, resolve_device
from tensortext.padded import PAD_ID, Flat, Padded

__all__ = [
    "TOKENIZERS",
    "UNSUPPORTED_TOKENIZERS",
    "TextTokenizer",
    "TokenVocab",
    "check_tokenizer",
    "tokenize_line",
    "tokenize_lines",
]

TextTokenizer = Literal["13a", "intl", "char", "none"]
TOKENIZERS: tuple[TextTokenizer, ...] = ("13a", "intl", "char", "none")
"""sacrebleu's tokenizers this module implements, sacrebleu's default first."""

_SPM_HINT = (
    "it needs sacrebleu's SentencePiece model: score with sacrebleu -tok {name}, or encode both "
    "sides with that model (spm_encode --output_format=id) and score the IDs with --ids"
)
UNSUPPORTED_TOKENIZERS: dict[str, str] = {
    "zh": "sacrebleu's Chinese segmentation is not implemented: score with sacrebleu -tok zh, "
    "or segment the text first and pass -tok none (-tok char is close, not equal)",
    "ja-mecab": "it needs MeCab: score with sacrebleu -tok ja-mecab (pip install "
    "'sacrebleu[ja]'), or segment the text first and pass -tok none",
    "ko-mecab": "it needs MeCab: score with sacrebleu -tok ko-mecab (pip install "
    "'sacrebleu[ko]'), or segment the text first and pass -tok none",
    **{
        name: _SPM_HINT.format(name=name) for name in ("spm", "flores101", "flores200", "spBLEU-1K")
    },
}
"""sacrebleu's other tokenizers, each with what to use instead."""


def check_tokenizer(tokenize: object) -> TextTokenizer:
    """``tokenize`` if it is one of :data:`TOKENIZERS`.

    Raises:
        TypeError: ``tokenize`` is not a string.
        ValueError: another of sacrebleu's tokenizers (the message says what to use instead),
            or an unknown name.
    """
    if not isinstance(tokenize, str):
        raise TypeError(f"tokenize must be a str such as '13a', got {type(tokenize).__name__}")
    if tokenize in UNSUPPORTED_TOKENIZERS:
        raise ValueError(
            f"tokenize={tokenize!r} is not implemented: {UNSUPPORTED_TOKENIZERS[tokenize]}"
        )
    for name in TOKENIZERS:
        if tokenize == name:
            return name
    raise ValueError(
        f"tokenize={tokenize[:40]!r} is not a sacrebleu tokenizer; pass one of "
        f"{', '.join(TOKENIZERS)}"
    )


# ---------------------------------------------------------------------------------------------
# The reference: one line at a time, rule by rule (mteval-v13a.pl and mteval-v14.pl)
# ---------------------------------------------------------------------------------------------

# 13a rule 1, the regex [{-~[-` -&(-+:-@/]: ASCII punctuation and the space, except the
# apostrophe, comma, hyphen and period, each gets a space on both sides. One character at a
# time, so a translation table does it (a space becoming three is still whitespace).
_MTEVAL_SYMBOLS = '{|}~[\\]^_` !"#$%&()*+:;<=>?@/'
_MTEVAL_SPLIT_SYMBOLS = str.maketrans({symbol: f" {symbol} " for symbol in _MTEVAL_SYMBOLS})
# Rules 2-4: a period or comma unless it follows a digit, then unless a digit follows it; a
# hyphen after a digit. Pairs, matched left to right without overlap (which matters in runs
# such as "a..5"), so these stay regular expressions.
_MTEVAL_PAIRS = (
    (re.compile(r"([^0-9])([.,])"), r"\1 \2 "),
    (re.compile(r"([.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
)
# mteval-v14 (intl): punctuation after a non-number, punctuation before a non-number, every
# symbol. Unicode general categories, as the `regex` module reads them (sacrebleu uses it too).
_INTL_RULES = (
    (regex.compile(r"(\P{N})(\p{P})"), r"\1 \2 "),
    (regex.compile(r"(\p{P})(\P{N})"), r" \1 \2"),
    (regex.compile(r"(\p{S})"), r" \1 "),
)
_MTEVAL_SPLIT_AT_END = frozenset(_MTEVAL_SYMBOLS + ".,")
_HTML_ESCAPES = (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"))


def _mteval_unescape(line: str) -> str:
    """13a's line-level part: drop ``<skipped>`` and hyphenation at line ends, join lines,
    unescape four HTML entities (in this order: ``&amp;quot;`` becomes ``&quot;``)."""
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        for entity, character in _HTML_ESCAPES:
            line = line.replace(entity, character)
    return line


def _mteval_split(padded: str) -> str:
    """13a's rules on text that starts and ends with whitespace."""
    text = padded.translate(_MTEVAL_SPLIT_SYMBOLS)
    (period_after, period_before, dash) = _MTEVAL_PAIRS
    if "." in text or "," in text:  # (the rules only insert spaces: skipping one is exact)
        text = period_before[0].sub(period_before[1], period_after[0].sub(period_after[1], text))
    if "-" in text:
        text = dash[0].sub(dash[1], text)
    return text


def _intl_split(text: str) -> str:
    for pattern, replacement in _INTL_RULES:
        text = pattern.sub(replacement, text)
    return text


def tokenize_line(line: str, tokenize: str = "13a") -> str:
    """One line as sacrebleu's tokenizer returns it: the tokens joined by single spaces.

    The readable reference of :func:`tokenize_lines` (sacrebleu's ``Tokenizer13a``,
    ``TokenizerV14International``, ``TokenizerChar`` and ``NoneTokenizer``, called on ``line``).
    BLEU lowercases (``lowercase=True``) and strips trailing whitespace *before* this.

    Args:
        line: one segment (any text; ``13a`` joins lines broken by ``\\n``).
        tokenize: one of :data:`TOKENIZERS`.

    Returns:
        The tokenized line (``none`` returns ``line`` unchanged, as sacrebleu).

    Raises:
        TypeError, ValueError: see :func:`check_tokenizer`.

    Example:
        >>> tokenize_line('He said: "3.5 kg, not 4-5."')
        'He said : " 3.5 kg , not 4 - 5 . "'
        >>> tokenize_line("Dr. Who's 1,000.", "intl")
        "Dr . Who ' s 1,000."
    """
    name = check_tokenizer(tokenize)
    if name == "13a":
        return " ".join(_mteval_split(f" {_mteval_unescape(line)} ").split())
    if name == "intl":
        return " ".join(_intl_split(line).split())
    if name == "char":
        return " ".join(line)
    return line


# ---------------------------------------------------------------------------------------------
# Many lines: each distinct chunk once
# ---------------------------------------------------------------------------------------------

# An intl chunk at a line's edge is keyed (at_start, at_end, chunk): a tuple is never equal to
# a plain chunk (str), so both kinds share one cache.
_ChunkKey = str | tuple[bool, bool, str]
# Joins lines into one text to split at once: a chunk of its own (spaces around it) that no
# tokenizer changes; used only when no line holds it.
_SEPARATOR = "\x00"


def _chunk_tokens(key: _ChunkKey, tokenize: TextTokenizer) -> list[str]:
    """The tokens of one chunk (see the module's docstring for why this equals the line's)."""
    if isinstance(key, tuple):  # intl only: a chunk at a line's start and/or end
        at_start, at_end, chunk = key
        return _intl_split(f"{'' if at_start else ' '}{chunk}{'' if at_end else ' '}").split()
    if tokenize == "none":
        return [key]
    if tokenize == "char":
        return list(key)
    # Letters and numbers only: no rule of 13a or intl splits them.
    if key.isalnum():
        return [key]
    if tokenize == "13a":
        # The commonest other chunk, a word and a comma, period or symbol: with the padding
        # space after it, that last character is always split off (rules 1 to 3).
        if key[-1] in _MTEVAL_SPLIT_AT_END and key[:-1].isalnum():
            return [key[:-1], key[-1]]
        return _mteval_split(f" {key} ").split()
    return _intl_split(f" {key} ").split()


def _joined_chunks(lines: Sequence[str], tokenize: TextTokenizer) -> list[_ChunkKey] | None:
    """Every line's chunks, lines separated by a :data:`_SEPARATOR` chunk, split in one call;
    ``None`` where that is not exact (a line holds the separator; for 13a a ``\n``, which its
    line-level part reads; intl, which reads the lines' edges)."""
    if tokenize == "intl":
        return None
    text = f" {_SEPARATOR} ".join(lines)
    if text.count(_SEPARATOR) != len(lines) - 1:
        return None
    if tokenize == "13a":
        if text.count("\n"):
            return None
        # The line-level part on all lines at once: its patterns hold no space, so none reaches
        # across a separator, and without "\n" in a line its "-\n" and "\n" rules do nothing.
        text = _mteval_unescape(text)
    return text.split()  # type: ignore[return-value]


def _line_chunks(lines: Sequence[str], tokenize: TextTokenizer) -> list[list[_ChunkKey]]:
    """Each line's chunks, split line by line (intl keys the chunks at its lines' edges)."""
    if tokenize == "13a":
        lines = [_mteval_unescape(line) for line in lines]
    split: list[list[_ChunkKey]] = list(map(str.split, lines))  # type: ignore[arg-type]
    if tokenize == "intl":
        for line, chunks in zip(lines, split, strict=True):
            if chunks:
                _mark_edges(line, chunks)
    return split


def _mark_edges(line: str, chunks: list[_ChunkKey]) -> None:
    """Keys the first and last chunk of a line as (at_start, at_end, chunk) where nothing, not
    whitespace, is on their outer side (intl reads the difference)."""
    at_start, at_end = not line[0].isspace(), not line[-1].isspace()
    first, last = str(chunks[0]), str(chunks[-1])  # plain chunks still
    if len(chunks) == 1:
        if at_start or at_end:
            chunks[0] = (at_start, at_end, first)
        return
    if at_start:
        chunks[0] = (True, False, first)
    if at_end:
        chunks[-1] = (False, True, last)


class _ChunkIndex(dict[_ChunkKey, int]):
    """Chunk -> cache index; a missing chunk is added by ``add`` (which stores it here)."""

    def __init__(self, add: Callable[[_ChunkKey], int]) -> None:
        super().__init__()
        self._add = add

    def __missing__(self, key: _ChunkKey) -> int:
        return self._add(key)


class TokenVocab:
    """sacrebleu's tokens of lines as token IDs, for the BLEU functions.

    IDs are given in order of first appearance and shared by every call, so hypotheses and
    references encoded by one ``TokenVocab`` get equal IDs for equal tokens (BLEU only compares
    tokens, so any such numbering scores as the strings do). Each distinct chunk is tokenized
    once and cached; a line then costs a split and a dictionary lookup per chunk, both in C,
    and the rest is array work.

    Args:
        tokenize: one of :data:`TOKENIZERS` (sacrebleu's ``tokenize``; default ``13a``).

    Raises:
        TypeError, ValueError: see :func:`check_tokenizer`.

    Example:
        >>> vocab = TokenVocab("13a")
        >>> vocab.encode_batch(["a cat.", "a dog"]).ids.tolist()
        [[0, 1, 2], [0, 3, -1]]
        >>> vocab.tokens
        ['a', 'cat', '.', 'dog']
    """

    def __init__(self, tokenize: str = "13a") -> None:
        self.tokenize: TextTokenizer = check_tokenizer(tokenize)
        self._token_ids: dict[str, int] = {}
        # Chunk i's tokens are _chunk_tokens[_chunk_starts[i]:][:_chunk_lens[i]] (token IDs).
        self._chunk_index = _ChunkIndex(self._add_chunk)
        self._chunk_starts: list[int] = []
        self._chunk_lens: list[int] = []
        self._chunk_tokens: list[int] = []

    def __len__(self) -> int:
        """How many distinct tokens have been seen."""
        return len(self._token_ids)

    @property
    def tokens(self) -> list[str]:
        """The tokens seen so far, token ``i`` at index ``i``."""
        return list(self._token_ids)

    def _add_chunk(self, key: _ChunkKey) -> int:
        """Tokenizes a chunk not seen before; its cache index."""
        token_ids = self._token_ids
        tokens = _chunk_tokens(key, self.tokenize)
        ids = [token_ids.setdefault(token, len(token_ids)) for token in tokens]
        index = self._chunk_index[key] = len(self._chunk_lens)
        self._chunk_starts.append(len(self._chunk_tokens))
        self._chunk_lens.append(len(ids))
        self._chunk_tokens.extend(ids)
        return index

    def _chunk_ids(self, chunks: list[_ChunkKey]) -> np.ndarray:
        """``[C]`` int64: the cache index of each chunk, tokenizing the new ones."""
        # One pass in C; a chunk not seen before goes through _ChunkIndex.__missing__.
        return np.fromiter(map(self._chunk_index.__getitem__, chunks), np.int64, len(chunks))

    def _expand(self, chunk_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(token IDs [T], cumulative token counts [C + 1])`` of a run of chunks."""
        starts = np.asarray(self._chunk_starts, dtype=np.int64)[chunk_ids]
        counts = np.asarray(self._chunk_lens, dtype=np.int64)[chunk_ids]
        cumulative = np.zeros(len(chunk_ids) + 1, dtype=np.int64)
        np.cumsum(counts, out=cumulative[1:])
        tokens = np.asarray(self._chunk_tokens, dtype=np.int64)
        if (counts == 1).all():  # most text: one token per chunk
            return tokens[starts], cumulative
        # Token j of chunk c sits at starts[c] + j, output position cumulative[c] + j.
        positions = np.repeat(starts - cumulative[:-1], counts) + np.arange(cumulative[-1])
        return tokens[positions], cumulative

    def encode_flat(self, lines: Sequence[str]) -> Flat:
        """The token IDs of ``lines``, without padding.

        Args:
            lines: ``B`` segments (lowercase and strip them first where sacrebleu's BLEU does).

        Returns:
            :class:`~tensortext.padded.Flat` ``(ids [T], lengths [B])`` int64 on the CPU.
        """
        joined = _joined_chunks(lines, self.tokenize) if lines else None
        if joined is not None:
            # The separator is no chunk of these lines: index -1 for this call only (a real
            # "\x00" chunk of an earlier call keeps its entry).
            earlier = self._chunk_index.pop(_SEPARATOR, None)
            self._chunk_index[_SEPARATOR] = -1
            try:
                chunk_ids = self._chunk_ids(joined)
            finally:
                del self._chunk_index[_SEPARATOR]
                if earlier is not None:
                    self._chunk_index[_SEPARATOR] = earlier
            is_separator = chunk_ids < 0
            # Line b ends where separator b stands, counted in chunks that are not separators.
            line_ends = np.append(np.flatnonzero(is_separator) - np.arange(len(lines) - 1),
                                  len(chunk_ids) - (len(lines) - 1))  # fmt: skip
            chunk_ids = chunk_ids[~is_separator]
        else:
            split = _line_chunks(lines, self.tokenize)
            line_ends = np.cumsum(np.fromiter(map(len, split), np.int64, len(split)))
            chunk_ids = self._chunk_ids(list(itertools.chain.from_iterable(split)))
        ids, cumulative = self._expand(chunk_ids)
        lengths = np.diff(cumulative[line_ends], prepend=0) if len(lines) else line_ends
        return Flat(torch.from_numpy(ids), torch.from_numpy(lengths.astype(np.int64)))

    def encode_batch(self, lines: Sequence[str], *, device: DeviceLike | None = None) -> Padded:
        """The token IDs of ``lines``, padded.

        Args:
            lines: ``B`` segments.
            device: where the tensors go (``None``: CPU, ``"auto"``: CUDA when available).

        Returns:
            :class:`~tensortext.padded.Padded` ``(ids [B, L], lengths [B])``, ``L`` at least 1.
        """
        flat = self.encode_flat(lines)
        width = max(1, int(flat.lengths.max())) if len(lines) else 1
        ids = torch.full((len(lines), width), PAD_ID, dtype=torch.long)
        ids[torch.arange(width) < flat.lengths.unsqueeze(1)] = flat.ids
        return Padded(ids, flat.lengths).to(resolve_device(device))


def tokenize_lines(lines: Sequence[str], tokenize: str = "13a") -> list[list[str]]:
    """sacrebleu's tokens of many lines: ``[tokenize_line(line, tokenize).split() for line in
    lines]``, tokenizing each distinct chunk once (:class:`TokenVocab`).

    Args:
        lines: ``B`` segments.
        tokenize: one of :data:`TOKENIZERS`.

    Returns:
        ``B`` lists of tokens.

    Raises:
        TypeError, ValueError: see :func:`check_tokenizer`.

    Example:
        >>> tokenize_lines(["Hello, world!", "(ok)"])
        [['Hello', ',', 'world', '!'], ['(', 'ok', ')']]
    """
    vocab = TokenVocab(tokenize)
    flat = vocab.encode_flat(lines)
    tokens = vocab.tokens
    words = iter([tokens[i] for i in flat.ids.tolist()])
    return [list(itertools.islice(words, length)) for length in flat.lengths.tolist()]
