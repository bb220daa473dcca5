"""tiktoken's ``encode_with_unstable`` and ``_encode_bytes``: encodings of text whose end may
still change (a prompt that a model will continue, bytes cut inside a character).

The tokens of the last regex piece are *unstable*: more text could merge them differently. The
completions are every token sequence that the encoder could produce for those bytes followed by
more text, found as tiktoken finds them (single tokens that extend the bytes, then every way a
token straddling the end could re-tokenize), so both libraries return the same set.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensortext.bpe.core import Encoding

__all__ = ["encode_bytes", "encode_with_unstable"]

# Unicode's White_Space property (Rust's char::is_whitespace, which tiktoken uses).
WHITE_SPACE = frozenset(
    [*range(9, 14), 32, 133, 160, 5760, *range(8192, 8203), 8232, 8233, 8239, 8287, 12288]
)


def widen_last_piece(enc: Encoding, tokens: list[int], count: int) -> int:
    """How many trailing tokens are unstable: the last piece's ``count``, widened over earlier
    all-whitespace tokens when the last piece is one (a later newline could join them)."""

    def all_space(token: int) -> bool:
        data = enc._vocab.tokens[token] if enc._is_ordinary(token) else None
        return data is not None and all(byte in b" \n\t" for byte in data)

    if count > 0 and all_space(tokens[len(tokens) - count]):
        while count < len(tokens) and all_space(tokens[len(tokens) - count - 1]):
            count += 1
    return count


def encode_with_unstable(
    enc: Encoding, text: str, allowed: frozenset[str]
) -> tuple[list[int], list[list[int]]]:
    """``(stable tokens, completions)``; the completions are sorted (tiktoken's are a set)."""
    tokens, count = enc._encode_last_piece(text, allowed)
    if count == 0:
        return tokens, []
    count = widen_last_piece(enc, tokens, count)
    unstable = enc.decode_bytes(tokens[len(tokens) - count :])
    tokens = tokens[: len(tokens) - count]
    completions: set[tuple[int, ...]] = set()
    if not unstable:
        return tokens, []
    sorted_bytes = enc._sorted_token_bytes
    mergeable = enc._vocab.mergeable
    completions.update((mergeable[token],) for token in _extending(sorted_bytes, unstable))
    possibilities = [
        unstable[:cut] + token
        for cut in range(1, len(unstable))
        for token in _extending(sorted_bytes, unstable[cut:])
    ]
    for encoded in _encode_possibilities(enc, possibilities):
        completions.add(_covering(enc, encoded, len(unstable)))
    last = _last_char(unstable)
    if len(unstable) > 1 and last is not None and ord(last[0]) in WHITE_SPACE and last[1] > 0:
        cut = len(unstable) - last[1]
        if cut > 0:
            completions.add(
                tuple(enc._byte_pair_encode(unstable[:cut]) + enc._byte_pair_encode(unstable[cut:]))
            )
    return tokens, sorted(list(seq) for seq in completions)


def encode_bytes(enc: Encoding, data: bytes) -> list[int]:
    """Tokens of ``data`` that may be invalid UTF-8: the valid prefix is encoded as text; the
    last piece's tokens and the invalid rest are merged again as bytes."""
    try:
        return enc.encode_ordinary(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        valid = error.start
    tokens, count = enc._encode_last_piece(data[:valid].decode("utf-8"), frozenset())
    count = widen_last_piece(enc, tokens, count)
    if tokens and count > 0:
        rest = enc.decode_bytes(tokens[len(tokens) - count :]) + data[valid:]
        tokens = tokens[: len(tokens) - count]
    else:
        rest = data[valid:]
    if rest:
        whole = enc._vocab.mergeable.get(rest)
        tokens.extend([whole] if whole is not None else enc._byte_pair_encode(rest))
    return tokens


def _extending(sorted_bytes: list[bytes], prefix: bytes) -> list[bytes]:
    """The tokens (from the sorted list of all token bytes) that start with ``prefix``."""
    start = bisect.bisect_left(sorted_bytes, prefix)
    end = start
    while end < len(sorted_bytes) and sorted_bytes[end].startswith(prefix):
        end += 1
    return sorted_bytes[start:end]


def _encode_possibilities(enc: Encoding, possibilities: list[bytes]) -> list[list[int]]:
    """Valid UTF-8 goes through the regex split (one batched call); the rest is merged whole."""
    texts: list[str] = []
    where: list[int] = []
    results: list[list[int]] = [[] for _ in possibilities]
    for index, data in enumerate(possibilities):
        try:
            texts.append(data.decode("utf-8"))
            where.append(index)
        except UnicodeDecodeError:
            results[index] = enc._byte_pair_encode(data)
    for index, encoded in zip(where, enc.encode_ordinary_batch(texts), strict=True):
        results[index] = encoded
    return results


def _covering(enc: Encoding, encoded: list[int], size: int) -> tuple[int, ...]:
    """The shortest prefix of ``encoded`` whose bytes reach ``size``."""
    seq: list[int] = []
    covered = 0
    for token in encoded:
        seq.append(token)
        covered += len(enc._vocab.tokens[token] or b"")
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
