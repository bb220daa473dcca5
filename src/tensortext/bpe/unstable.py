"""tiktoken's ``encode_with_unstable`` and ``_encode_bytes``: encodings of text whose end may
still change (a prompt that a model will continue, bytes cut inside a character).

The tokens of the last regex piece are *unstable*: more text could merge them differently. The
completions are every token sequence that the encoder could produce for those bytes followed by
more text, found as tiktoken finds them (single tokens that extend the bytes, then every way a
token straddling the end could re-tokenize), so both libraries return the same set.

The functions take the vocabulary and the encoder's calls they need (``last_piece``,
``encode_texts``), so they work with any encoder.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from tensortext.bpe.serial import merge_serial

if TYPE_CHECKING:
    from tensortext.bpe.vocab import Vocab

__all__ = ["EncodeTexts", "LastPiece", "encode_bytes", "encode_with_unstable"]

LastPiece = Callable[[str, frozenset[str]], tuple[list[int], int]]
"""``(text, allowed special tokens) -> (tokens, count)``: the text's tokens and how many of them
its last regex piece gave (0 when it ends with a special token or is empty)."""
EncodeTexts = Callable[[list[str]], list[list[int]]]
"""Texts -> the tokens of each, special-token text as ordinary text (``encode_ordinary_batch``)."""

# Unicode's White_Space property (Rust's char::is_whitespace, which tiktoken uses).
WHITE_SPACE = frozenset(
    [*range(9, 14), 32, 133, 160, 5760, *range(8192, 8203), 8232, 8233, 8239, 8287, 12288]
)


def widen_last_piece(vocab: Vocab, tokens: list[int], count: int) -> int:
    """How many trailing tokens are unstable: the last piece's ``count``, widened over earlier
    all-whitespace tokens when the last piece is one (a later newline could join them)."""

    def all_space(token: int) -> bool:
        data = vocab.tokens[token]
        ordinary = data is not None and vocab.mergeable.get(data) == token
        return ordinary and all(byte in b" \n\t" for byte in data or b"")

    if count > 0 and all_space(tokens[len(tokens) - count]):
        while count < len(tokens) and all_space(tokens[len(tokens) - count - 1]):
            count += 1
    return count


def encode_with_unstable(
    vocab: Vocab,
    text: str,
    allowed: frozenset[str],
    *,
    last_piece: LastPiece,
    encode_texts: EncodeTexts,
    sorted_token_bytes: Sequence[bytes],
) -> tuple[list[int], list[list[int]]]:
    """``(stable tokens, completions)``; the completions are sorted (tiktoken's are a set).

    Args:
        vocab: the encoding's vocabulary.
        text: checked for disallowed special tokens already.
        allowed: the special tokens encoded as such.
        last_piece, encode_texts: the encoder's calls (see :data:`LastPiece`, :data:`EncodeTexts`).
        sorted_token_bytes: every ordinary token's bytes, sorted (kept by the caller).
    """
    tokens, count = last_piece(text, allowed)
    if count == 0:
        return tokens, []
    count = widen_last_piece(vocab, tokens, count)
    unstable = _token_bytes(vocab, tokens[len(tokens) - count :])
    tokens = tokens[: len(tokens) - count]
    completions: set[tuple[int, ...]] = set()
    if not unstable:
        return tokens, []
    mergeable = vocab.mergeable
    completions.update((mergeable[token],) for token in _extending(sorted_token_bytes, unstable))
    possibilities = [
        unstable[:cut] + token
        for cut in range(1, len(unstable))
        for token in _extending(sorted_token_bytes, unstable[cut:])
    ]
    for encoded in _encode_possibilities(vocab, possibilities, encode_texts):
        completions.add(_covering(vocab, encoded, len(unstable)))
    last = _last_char(unstable)
    if len(unstable) > 1 and last is not None and ord(last[0]) in WHITE_SPACE and last[1] > 0:
        cut = len(unstable) - last[1]
        if cut > 0:
            completions.add(tuple(_merge(vocab, unstable[:cut]) + _merge(vocab, unstable[cut:])))
    return tokens, sorted(list(seq) for seq in completions)


def encode_bytes(
    vocab: Vocab, data: bytes, *, last_piece: LastPiece, encode_texts: EncodeTexts
) -> list[int]:
    """Tokens of ``data`` that may be invalid UTF-8: the valid prefix is encoded as text; the
    last piece's tokens and the invalid rest are merged again as bytes (the arguments are
    :func:`encode_with_unstable`'s)."""
    try:
        return encode_texts([data.decode("utf-8")])[0]
    except UnicodeDecodeError as error:
        valid = error.start
    tokens, count = last_piece(data[:valid].decode("utf-8"), frozenset())
    count = widen_last_piece(vocab, tokens, count)
    if tokens and count > 0:
        rest = _token_bytes(vocab, tokens[len(tokens) - count :]) + data[valid:]
        tokens = tokens[: len(tokens) - count]
    else:
        rest = data[valid:]
    if rest:
        whole = vocab.mergeable.get(rest)
        tokens.extend([whole] if whole is not None else _merge(vocab, rest))
    return tokens


def _token_bytes(vocab: Vocab, tokens: list[int]) -> bytes:
    """The bytes of ordinary tokens (the last piece's, and whitespace before it)."""
    return b"".join(vocab.tokens[token] or b"" for token in tokens)


def _merge(vocab: Vocab, data: bytes) -> list[int]:
    """Byte-pair merges of ``data`` as one piece."""
    return merge_serial(data, vocab.byte_ids, vocab.pairs)


def _extending(sorted_bytes: Sequence[bytes], prefix: bytes) -> Sequence[bytes]:
    """The tokens (from the sorted list of all token bytes) that start with ``prefix``."""
    start = bisect.bisect_left(sorted_bytes, prefix)
    end = start
    while end < len(sorted_bytes) and sorted_bytes[end].startswith(prefix):
        end += 1
    return sorted_bytes[start:end]


def _encode_possibilities(
    vocab: Vocab, possibilities: list[bytes], encode_texts: EncodeTexts
) -> list[list[int]]:
    """Valid UTF-8 goes through the regex split (one batched call); the rest is merged whole."""
    texts: list[str] = []
    where: list[int] = []
    results: list[list[int]] = [[] for _ in possibilities]
    for index, data in enumerate(possibilities):
        try:
            texts.append(data.decode("utf-8"))
            where.append(index)
        except UnicodeDecodeError:
            results[index] = _merge(vocab, data)
    for index, encoded in zip(where, encode_texts(texts), strict=True):
        results[index] = encoded
    return results


def _covering(vocab: Vocab, encoded: list[int], size: int) -> tuple[int, ...]:
    """The shortest prefix of ``encoded`` whose bytes reach ``size``."""
    seq: list[int] = []
    covered = 0
    for token in encoded:
        seq.append(token)
        covered += len(vocab.tokens[token] or b"")
        if covered >= size:
            break
    return tuple(seq)


def _last_char(data: bytes) -> tuple[str, int] | None:
    """The last UTF-8 character of ``data`` and its byte length, or None if it is invalid."""
    for size in range(1, min(4, len(data)) + 1):
        try:
            char = data[-size:].decode("utf-8")
        except UnicodeDecodeError:
            continue
        return (char, size) if len(char) == 1 else None
    return None
