"""BPE merges for a whole batch of pieces at once, exact to tiktoken's sequential algorithm.

tiktoken merges, inside one piece, the adjacent pair of lowest rank, the leftmost first, until no
pair is in the table. We run *passes* over every unfinished piece of the batch: each piece takes
its own lowest rank ``r`` and merges every pair of rank ``r``; where pairs of rank ``r`` overlap
(``a a a``), the sequential algorithm merges the ones at even offsets of the run, and so do we.

That equals the sequential order as long as no merge creates a pair of rank below ``r`` (the
sequential algorithm would take that pair next, before the remaining pairs of rank ``r``).
Real vocabularies mostly obey this, but not always (Llama-3, for one), so every pass checks each
piece: a new pair of lower rank, or one that the sequential order would have formed between two
neighbouring merges, sends the piece to :func:`merge_serial`, the sequential algorithm itself.
The result is therefore identical to tiktoken for every input, not only for friendly ones.

A piece takes one pass per distinct rank it merges: a few for words, thousands for a long run of
random CJK. With ``max_passes``, the pieces still merging then are handed over, as they are, to
the sequential heap (:func:`merge_tokens`), which is ``O(n log n)`` per piece.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

__all__ = [
    "MergeTables",
    "expand_spans",
    "lookup_pieces",
    "merge_by_rank",
    "merge_parts_by_rank",
    "merge_pieces",
    "merge_serial",
    "merge_short",
    "merge_tokens",
    "piece_keys",
]

# Two polynomial hashes modulo primes below 2**31, so sums of products stay inside int64.
_PRIMES = (2147483629, 2147483587)
_BASES = (1000003, 911382323)
NO_RANK = torch.iinfo(torch.int64).max


@dataclass(frozen=True)
class MergeTables:
    """The vocabulary as sorted-key tables on one device (built by :mod:`tensortext.bpe.vocab`).

    ``pair_keys [Q]`` holds ``left_id * key_base + right_id`` sorted, with ``pair_ranks [Q]`` and
    ``pair_ids [Q]`` (the merged token); ``piece_keys [M]`` holds the hash of each mergeable
    token's bytes (:func:`piece_keys`), sorted and unique, with ``piece_ids [M]``;
    ``token_bytes``/``token_offsets [V + 1]`` spell every token; ``byte_ids [256]`` are the
    single-byte tokens; ``hash_powers [2, max_token_len]`` the hash's powers.
    """

    pair_keys: torch.Tensor
    pair_ranks: torch.Tensor
    pair_ids: torch.Tensor
    piece_keys: torch.Tensor
    piece_ids: torch.Tensor
    token_bytes: torch.Tensor
    token_offsets: torch.Tensor
    byte_ids: torch.Tensor
    hash_powers: torch.Tensor
    key_base: int
    max_token_len: int
    whole_piece_lookup: bool

    def to(self, device: torch.device) -> MergeTables:
        fields: dict[str, Any] = {
            name: value.to(device) if isinstance(value, torch.Tensor) else value
            for name, value in self.__dict__.items()
        }
        return MergeTables(**fields)


def hash_powers(max_len: int) -> torch.Tensor:
    """``[2, max_len]`` int64: ``base**k mod prime`` for both hashes."""
    rows = []
    for prime, base in zip(_PRIMES, _BASES, strict=True):
        row, value = [], 1
        for _ in range(max(max_len, 1)):
            row.append(value)
            value = value * base % prime
        rows.append(row)
    return torch.tensor(rows, dtype=torch.int64)


def expand_spans(lens: torch.Tensor, total: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """For ragged spans of ``lens [P]`` elements: each element's span and offset in it (``[T]``).

    ``total`` is ``lens.sum()`` where the caller knows it; otherwise it is read (a host sync).
    """
    if total is None:
        total = int(lens.sum()) if lens.numel() else 0  # host sync: the output's size
    owner = torch.repeat_interleave(
        torch.arange(lens.numel(), device=lens.device), lens, output_size=total
    )
    first = torch.repeat_interleave(torch.cumsum(lens, 0) - lens, lens, output_size=total)
    return owner, torch.arange(total, device=lens.device) - first


def piece_keys(
    data: torch.Tensor, starts: torch.Tensor, lens: torch.Tensor, powers: torch.Tensor
) -> torch.Tensor:
    """62-bit hash of each piece's bytes.

    Args:
        data: ``[nbytes]`` uint8.
        starts, lens: ``[P]`` int64 byte spans, every length ``<= powers.shape[1]``.
        powers: ``[2, max_len]`` from :func:`hash_powers` (on ``data``'s device).

    Returns:
        ``[P]`` int64 keys; equal bytes give equal keys (unequal bytes almost never do, and
        callers that need certainty compare the bytes).
    """
    owner, offset_in_piece = expand_spans(lens)
    values = data[starts[owner] + offset_in_piece].long() + 1
    key = torch.zeros(lens.numel(), dtype=torch.int64, device=data.device)
    for which, prime in enumerate(_PRIMES):
        acc = torch.zeros(lens.numel(), dtype=torch.int64, device=data.device)
        acc.index_add_(0, owner, values * powers[which, offset_in_piece])
        key = key * (1 << 31) + acc % prime
    return key


def lookup_pieces(
    data: torch.Tensor, starts: torch.Tensor, lens: torch.Tensor, tables: MergeTables
) -> torch.Tensor:
    """The token whose bytes are exactly each piece, or -1 (``[P]`` int64).

    Hash lookups are confirmed byte by byte, so a hash collision can never return a wrong token.
    """
    found = torch.full_like(starts, -1)
    candidate = (lens <= tables.max_token_len) & (lens > 0)
    if not tables.whole_piece_lookup:
        return found
    safe_lens = torch.where(candidate, lens, 0)
    keys = piece_keys(data, starts, safe_lens, tables.hash_powers)
    slot = torch.searchsorted(tables.piece_keys, keys).clamp(max=tables.piece_keys.numel() - 1)
    token = tables.piece_ids[slot]
    token_len = tables.token_offsets[token + 1] - tables.token_offsets[token]
    match = candidate & (tables.piece_keys[slot] == keys) & (token_len == lens)
    # Byte-by-byte confirmation over the matched pieces.
    owner, offset = expand_spans(torch.where(match, lens, 0))
    same = (
        data[starts[owner] + offset]
        == tables.token_bytes[tables.token_offsets[token[owner]] + offset]
    )
    mismatched = torch.zeros_like(match)
    mismatched.index_put_((owner[~same],), torch.ones_like(owner[~same], dtype=torch.bool))
    return torch.where(match & ~mismatched, token, found)


def _pair_lookup(
    left: torch.Tensor, right: torch.Tensor, tables: MergeTables
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rank (``NO_RANK`` if absent) and merged token of each pair of token IDs."""
    key = left * tables.key_base + right
    slot = torch.searchsorted(tables.pair_keys, key).clamp(max=tables.pair_keys.numel() - 1)
    hit = tables.pair_keys[slot] == key
    return torch.where(hit, tables.pair_ranks[slot], NO_RANK), tables.pair_ids[slot]


def merge_pieces(
    data: torch.Tensor,
    starts: torch.Tensor,
    lens: torch.Tensor,
    tables: MergeTables,
    out: torch.Tensor,
    *,
    max_passes: int | None = None,
    unfinished: torch.Tensor | None = None,
) -> torch.Tensor:
    """Merge every piece in parallel passes, writing each final token at its first byte.

    Args:
        data: ``[nbytes]`` uint8, the batch's bytes.
        starts, lens: ``[P]`` int64 byte spans of the pieces to merge (lengths ``>= 1``).
        tables: the vocabulary on ``data``'s device.
        out: ``[nbytes + 1]`` int64, filled in place: ``out[b]`` = the token starting at byte
            ``b``; the last slot is scratch.
        max_passes: stop after this many passes (``None``: when every piece is done). A piece
            takes one pass per distinct rank it merges: a few for real words, thousands for a
            long run of random CJK, where the sequential heap (:func:`merge_tokens`) is faster.
        unfinished: ``[P]`` bool, required with ``max_passes``: set for the pieces still
            merging then; their tokens so far are written to ``out`` (a state of the
            sequential order, from which :func:`merge_tokens` goes on).

    Returns:
        ``[P]`` bool: pieces whose merge order could differ from the sequential one; they are
        not written and must go through :func:`merge_serial`.
    """
    if max_passes is not None and unfinished is None:
        raise ValueError("merge_pieces: max_passes needs an `unfinished` mask to report to")
    device = data.device
    num_pieces = starts.numel()
    irregular = torch.zeros(num_pieces, dtype=torch.bool, device=device)
    owner, offset = expand_spans(lens)  # [T]
    if owner.numel() == 0:
        return irregular
    position = starts[owner] + offset  # [T] byte offsets
    tokens = tables.byte_ids[data[position].long()]
    last_rank = torch.full((num_pieces,), -1, dtype=torch.int64, device=device)
    passes = 0
    while tokens.numel():
        same_piece = owner[1:] == owner[:-1]  # [T - 1]
        rank, merged = _pair_lookup(tokens[:-1], tokens[1:], tables)
        rank = torch.where(same_piece, rank, NO_RANK)
        piece_min = torch.full((num_pieces,), NO_RANK, dtype=torch.int64, device=device)
        piece_min.scatter_reduce_(0, owner[:-1], rank, reduce="amin")
        # A piece whose lowest rank went *down* formed a pair the sequential order would have
        # merged earlier: redo it serially.
        irregular |= (piece_min < last_rank) & (piece_min != NO_RANK)
        if passes == max_passes and unfinished is not None:
            # Stop here, after the check of the last pass: the tokens of every regular piece
            # are a state of the sequential order, and the heap goes on from it.
            regular = ~irregular[owner]
            unfinished[owner[regular & (piece_min != NO_RANK)[owner]]] = True
            out[position[regular]] = tokens[regular]
            break
        passes += 1
        chosen = _choose_merges(tokens, owner, rank, merged, piece_min, tables, irregular)
        last_rank = piece_min
        tokens = torch.cat([torch.where(chosen, merged, tokens[:-1]), tokens[-1:]])
        removed = torch.cat([chosen.new_zeros(1), chosen])  # right halves of merges
        finished = (piece_min == NO_RANK)[owner] & ~irregular[owner] & ~removed
        scratch = out.numel() - 1
        out.index_put_((torch.where(finished, position, scratch),), tokens)
        keep = (~removed & (piece_min != NO_RANK)[owner] & ~irregular[owner]).nonzero().squeeze(1)
        tokens, owner, position = tokens[keep], owner[keep], position[keep]
    return irregular


def _choose_merges(
    tokens: torch.Tensor,
    owner: torch.Tensor,
    rank: torch.Tensor,
    merged: torch.Tensor,
    piece_min: torch.Tensor,
    tables: MergeTables,
    irregular: torch.Tensor,
) -> torch.Tensor:
    """``[T - 1]`` bool: the pairs one pass merges (each piece's lowest rank, every occurrence).

    Flags in ``irregular`` (in place) the pieces where two merges of this pass are adjacent and
    the intermediate pair the sequential order would see ranks lower.
    """
    index = torch.arange(tokens.numel() - 1, device=tokens.device)
    chosen = (rank == piece_min[owner[:-1]]) & (rank != NO_RANK)
    # In a run of overlapping chosen pairs, merge the ones at even offsets.
    run_start = chosen & ~torch.cat([chosen.new_zeros(1), chosen[:-1]])
    start_index = torch.cummax(torch.where(run_start, index, -1), 0).values
    chosen &= (index - start_index) % 2 == 0
    # Sequentially, merging pair k first forms (merged_k, tokens[k + 2]); if pair k + 2 is
    # also merged this pass, that intermediate pair must not rank below this pass.
    if tokens.numel() > 3:
        next_too = chosen[:-2] & chosen[2:] & (owner[:-3] == owner[2:-1])
        between, _ = _pair_lookup(torch.where(next_too, merged[:-2], 0), tokens[2:-1], tables)
        bad = next_too & (between < rank[:-2])
        irregular.index_put_((owner[:-3][bad],), torch.ones_like(owner[:-3][bad], dtype=torch.bool))
    return chosen


def merge_serial(
    piece: bytes, byte_ids: list[int], pairs: dict[tuple[int, int], tuple[int, int]]
) -> list[int]:
    """tiktoken's sequential BPE on one piece, in ``O(n log n)`` with a heap.

    Repeatedly merges the adjacent pair of lowest rank (the leftmost among equals).
    ``pairs`` maps ``(left_id, right_id)`` to ``(rank, merged_id)``.
    """
    return [token for _, token in merge_tokens([byte_ids[b] for b in piece], pairs)]


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
