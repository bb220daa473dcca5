"""A readable byte-level BPE encoder, for people and for tests, as tiktoken's ``_educational.py``
is there: quadratic, no tables, each rule written the way it is usually stated.

A piece starts as its bytes, one part each, and adjacent parts merge until no pair may. Which
pair merges next is the whole algorithm, and the two rules in use differ only there:

* tiktoken's (:func:`bpe_encode`): ``mergeable_ranks`` maps token bytes to a rank, which is also
  the token's ID. A pair may merge when its concatenation is a token; the lowest rank merges
  first.
* Hugging Face's (:func:`bpe_encode_merges`): a merges list ranks pairs of tokens by position;
  the merged token's ID comes from the vocabulary, so IDs need not follow ranks, and a token
  that no listed pair yields is never reached by merging.

Under both, the leftmost pair goes first among pairs of equal rank (``"aaa"`` with the token
``"aa"`` gives ``["aa", "a"]``). :func:`encode` and :func:`encode_merges` add the split regex
(the ``regex`` module: the exact oracle) and the whole-piece lookup.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

import regex

__all__ = ["bpe_encode", "bpe_encode_merges", "encode", "encode_merges", "split"]


def _merge(parts: list[bytes], rank_of: Callable[[bytes, bytes], int | None]) -> list[bytes]:
    """Merges the adjacent pair of lowest ``rank_of`` (the leftmost among equals) until none
    has a rank."""
    while len(parts) > 1:
        ranked = [
            (rank, index)
            for index, (left, right) in enumerate(pairwise(parts))
            if (rank := rank_of(left, right)) is not None
        ]
        if not ranked:
            break
        _, index = min(ranked)  # lowest rank, then lowest index
        parts[index : index + 2] = [parts[index] + parts[index + 1]]
    return parts


def bpe_encode(mergeable_ranks: dict[bytes, int], piece: bytes) -> list[int]:
    """The tokens of ``piece`` under tiktoken's rule (no whole-piece lookup first).

    Args:
        mergeable_ranks: token bytes -> rank (= ID); every single byte must be a token.
        piece: the bytes to merge.

    Returns:
        The ranks of the parts left when no adjacent pair concatenates to a token.
    """
    parts = _merge(
        [bytes([byte]) for byte in piece],
        lambda left, right: mergeable_ranks.get(left + right),
    )
    return [mergeable_ranks[part] for part in parts]


def bpe_encode_merges(
    vocab: dict[bytes, int],
    merges: list[tuple[bytes, bytes]],
    piece: bytes,
    *,
    ignore_merges: bool = False,
) -> list[int]:
    """The tokens of ``piece`` under Hugging Face's rule.

    Args:
        vocab: token bytes -> ID; every single byte and every merge's result must be a token.
        merges: distinct ``(left, right)`` pairs, the first ranked 0.
        piece: the bytes to merge.
        ignore_merges: a piece that is a token is that token (``tokenizers``' ``ignore_merges``).

    Returns:
        The IDs of the parts left when no adjacent pair is listed.
    """
    if ignore_merges and piece in vocab:
        return [vocab[piece]]
    rank_of = {pair: rank for rank, pair in enumerate(merges)}
    parts = _merge(
        [bytes([byte]) for byte in piece], lambda left, right: rank_of.get((left, right))
    )
    return [vocab[part] for part in parts]


def split(pat_str: str, text: str) -> list[bytes]:
    """The pieces of ``text`` under the split regex, as UTF-8.

    Lone surrogates become U+FFFD first, as tiktoken's ``encode`` makes them.
    """
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return [piece.encode("utf-8") for piece in regex.findall(pat_str, text)]


def encode(mergeable_ranks: dict[bytes, int], pat_str: str, text: str) -> list[int]:
    """tiktoken's ``encode_ordinary``: split, then each piece is one token if its bytes are one,
    else :func:`bpe_encode`'s merges.

    The lookup matters: a token that merging its own bytes does not reach (``"abcd"`` from
    ``"ab" + "cd"`` when ``"bc"`` ranks lowest) is still the token of that whole piece.
    """
    tokens: list[int] = []
    for piece in split(pat_str, text):
        whole = mergeable_ranks.get(piece)
        tokens += [whole] if whole is not None else bpe_encode(mergeable_ranks, piece)
    return tokens


def encode_merges(
    vocab: dict[bytes, int],
    merges: list[tuple[bytes, bytes]],
    pat_str: str,
    text: str,
    *,
    ignore_merges: bool = False,
) -> list[int]:
    """Split, then :func:`bpe_encode_merges` on each piece (a byte-level ``tokenizer.json``
    whose pre-tokenizer is one ``Split`` regex)."""
    return [
        token
        for piece in split(pat_str, text)
        for token in bpe_encode_merges(vocab, merges, piece, ignore_merges=ignore_merges)
    ]
