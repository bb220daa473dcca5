"""Sequential BPE on the host, in plain Python: tiktoken's algorithm, piece by piece.

The tensor engine's parallel passes (:mod:`tensortext.bpe.merge`) hand the pieces they cannot
merge in step with the sequential order to :func:`merge_serial`; the Python host encoder
(:mod:`tensortext.bpe.host`) merges its new pieces with :func:`merge_short` and
:func:`merge_by_rank`. Nothing here needs torch.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tensortext.bpe.vocab import Vocab

__all__ = [
    "NO_RANK",
    "char_parts",
    "merge_by_rank",
    "merge_parts_by_rank",
    "merge_serial",
    "merge_short",
    "merge_tokens",
]

NO_RANK = 2**63 - 1
"""A rank above every real one (int64's largest: the tensor engine's "no pair")."""


def merge_serial(
    piece: bytes, byte_ids: list[int], pairs: dict[tuple[int, int], tuple[int, int]]
) -> list[int]:
    """tiktoken's sequential BPE on one piece, in ``O(n log n)`` with a heap.

    Repeatedly merges the adjacent pair of lowest rank (the leftmost among equals).
    ``pairs`` maps ``(left_id, right_id)`` to ``(rank, merged_id)``.
    """
    return [token for _, token in merge_tokens([byte_ids[b] for b in piece], pairs)]


def char_parts(piece: bytes, vocab: Vocab) -> tuple[list[int], list[int]]:
    """SentencePiece's first parts of a piece: ``(byte offsets, tokens)``, a token per
    character that is one, else its bytes' fallback tokens or the unknown token once
    (:attr:`~tensortext.bpe.vocab.Vocab.unknown_ids`)."""
    assert vocab.unknown_ids is not None
    unknown, unk = vocab.unknown_ids, vocab.unknown_ids[256]
    get, byte_ids = vocab.mergeable.get, vocab.byte_ids
    offsets: list[int] = []
    tokens: list[int] = []
    at = 0
    for char in piece.decode("utf-8"):
        data = char.encode("utf-8")
        token = byte_ids[data[0]] if len(data) == 1 else get(data)
        if token is not None or unk >= 0:
            offsets.append(at)
            tokens.append(unk if token is None else token)
        else:
            offsets.extend(range(at, at + len(data)))
            tokens.extend(unknown[byte] for byte in data)
        at += len(data)
    return offsets, tokens


def merge_tokens(
    tokens: list[int], pairs: dict[tuple[int, int], tuple[int, int]]
) -> list[tuple[int, int]]:
    """The sequential merges from a token sequence: ``(index in tokens, final token)`` pairs.

    A surviving token keeps the index of its leftmost part, so its first byte is known.
    """
    tokens = list(tokens)
    count = len(tokens)
    if count < 2:
        return list(enumerate(tokens))
    right = list(range(1, count + 1))  # linked list over surviving tokens; count = end
    left = list(range(-1, count - 1))
    alive = [True] * count
    heap = []
    for k in range(count - 1):
        entry = pairs.get((tokens[k], tokens[k + 1]))
        if entry is not None:
            heap.append((entry[0], k, tokens[k], tokens[k + 1]))
    heapq.heapify(heap)
    while heap:
        _, k, expect_left, expect_right = heapq.heappop(heap)
        nxt = right[k]
        # Stale entries: a neighbour merged since this pair was pushed.
        if not alive[k] or nxt >= count or tokens[k] != expect_left or tokens[nxt] != expect_right:
            continue
        tokens[k] = pairs[(expect_left, expect_right)][1]
        alive[nxt] = False
        right[k] = right[nxt]
        if right[k] < count:
            left[right[k]] = k
            entry = pairs.get((tokens[k], tokens[right[k]]))
            if entry is not None:
                heapq.heappush(heap, (entry[0], k, tokens[k], tokens[right[k]]))
        if left[k] >= 0:
            entry = pairs.get((tokens[left[k]], tokens[k]))
            if entry is not None:
                heapq.heappush(heap, (entry[0], left[k], tokens[left[k]], tokens[k]))
    return [(k, tokens[k]) for k in range(count) if alive[k]]


def merge_short(data: bytes, ranks: dict[bytes, int]) -> list[int]:
    """tiktoken's byte-pair merges of one short piece (ranks are IDs): a list of the adjacent
    pairs' ranks, its minimum (the leftmost among equals) merged until none is left. Quadratic,
    but each step is two C-speed scans: for the 10-byte pieces of real text, twice as fast as
    :func:`merge_by_rank`."""
    get = ranks.get
    parts = [data[k : k + 1] for k in range(len(data))]
    pair_ranks = [get(data[k : k + 2], NO_RANK) for k in range(len(data) - 1)]
    while pair_ranks:
        lowest = min(pair_ranks)
        if lowest == NO_RANK:
            break
        k = pair_ranks.index(lowest)
        parts[k : k + 2] = [parts[k] + parts[k + 1]]
        del pair_ranks[k]
        if k > 0:
            pair_ranks[k - 1] = get(parts[k - 1] + parts[k], NO_RANK)
        if k < len(pair_ranks):
            pair_ranks[k] = get(parts[k] + parts[k + 1], NO_RANK)
    return [ranks[part] for part in parts]


def merge_by_rank(
    data: bytes, ranks: dict[bytes, int], tokens: Sequence[bytes | None]
) -> list[int]:
    """tiktoken's byte-pair merges of one piece, from its bytes: see :func:`merge_parts_by_rank`."""
    return merge_parts_by_rank([data[k : k + 1] for k in range(len(data))], ranks, tokens)


def merge_parts_by_rank(
    parts: list[bytes], ranks: dict[bytes, int], tokens: Sequence[bytes | None]
) -> list[int]:
    """tiktoken's byte-pair merges from ``parts`` (single bytes, or the tokens a sequential
    merge reached): the adjacent pair whose joined bytes have the lowest rank merges first, the
    leftmost among equals. The ranks are the IDs, and ``tokens[rank]`` is the bytes of a rank.

    One rank at a time: the positions of the lowest rank's pairs, left to right, then the next
    rank (a merge makes pairs of longer tokens, of other ranks, which join their rank's list).
    That is the sequential order as long as no merge makes a pair of a rank already passed; if
    one does (an "irregular" vocabulary), a heap finishes from that state. Linear in the merges
    plus a sort per rank: 1 MB of random letters in 1.5 s, where a heap took 4 s.
    """
    rank = ranks.get
    parts = list(parts)
    size = len(parts)
    after = list(range(1, size + 1))  # a linked list over the surviving parts
    before = list(range(-1, size - 1))
    levels: dict[int, list[int]] = {}  # rank -> left positions of its pairs (some stale)
    for k in range(size - 1):
        pair_rank = rank(parts[k] + parts[k + 1])
        if pair_rank is not None:
            levels.setdefault(pair_rank, []).append(k)
    pending = list(levels)
    heapq.heapify(pending)
    while pending:
        current = heapq.heappop(pending)
        target = tokens[current]
        for k in sorted(levels.pop(current)):
            nxt = after[k]
            if nxt >= size or not parts[k] or parts[k] + parts[nxt] != target:
                continue  # stale: a side merged since this pair was listed
            parts[k], parts[nxt] = target, b""
            after[k] = after[nxt]
            if after[k] < size:
                before[after[k]] = k
            for left, right in ((before[k], k), (k, after[k])):
                if left < 0 or right >= size:
                    continue
                pair_rank = rank(parts[left] + parts[right])
                if pair_rank is None:
                    continue
                if pair_rank < current:  # irregular: the heap finishes the sequential merges
                    return _merge_with_heap([part for part in parts if part], ranks)
                if pair_rank in levels:
                    levels[pair_rank].append(left)
                else:
                    levels[pair_rank] = [left]
                    heapq.heappush(pending, pair_rank)
    return [ranks[part] for part in parts if part]


def _merge_with_heap(parts: list[bytes], ranks: dict[bytes, int]) -> list[int]:
    """The sequential merges from ``parts`` on, with a heap of ``(rank, position)``."""
    rank = ranks.get
    size = len(parts)
    after = list(range(1, size + 1))
    before = list(range(-1, size - 1))
    heap = [
        (joined, k, parts[k], parts[k + 1])
        for k in range(size - 1)
        if (joined := rank(parts[k] + parts[k + 1])) is not None
    ]
    heapq.heapify(heap)
    while heap:
        _, k, left, right = heapq.heappop(heap)
        nxt = after[k]
        if nxt >= size or parts[k] != left or parts[nxt] != right:
            continue  # stale: one side merged since this entry was pushed
        parts[k] = left + right
        parts[nxt] = b""
        after[k] = after[nxt]
        if after[k] < size:
            before[after[k]] = k
        for neighbour in (k, before[k]):
            if neighbour >= 0 and after[neighbour] < size:
                nxt = after[neighbour]
                joined = rank(parts[neighbour] + parts[nxt])
                if joined is not None:
                    heapq.heappush(heap, (joined, neighbour, parts[neighbour], parts[nxt]))
    return [ranks[part] for part in parts if part]
