"""BPE merges for a whole batch of pieces at once, exact to tiktoken's sequential algorithm.

tiktoken merges, inside one piece, the adjacent pair of lowest rank, the leftmost first, until no
pair is in the table. We run *passes* over every unfinished piece of the batch: each piece takes
its own lowest rank ``r`` and merges every pair of rank ``r``; where pairs of rank ``r`` overlap
(``a a a``), the sequential algorithm merges the ones at even offsets of the run, and so do we.

That equals the sequential order as long as no merge creates a pair of rank below ``r`` (the
sequential algorithm would take that pair next, before the remaining pairs of rank ``r``).
Real vocabularies mostly obey this, but not always (Llama-3, for one), so every pass checks each
piece: a new pair of lower rank, or one that the sequential order would have formed between two
neighbouring merges, sends the piece to :func:`.serial.merge_serial`, the sequential algorithm.
The result is therefore identical to tiktoken for every input, not only for friendly ones.

A piece takes one pass per distinct rank it merges: a few for words, thousands for a long run of
random CJK. With ``max_passes``, the pieces still merging then are handed over, as they are, to
the sequential heap (:func:`.serial.merge_tokens`), which is ``O(n log n)`` per piece.
"""

from __future__ import annotations

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)

# isort: split
from dataclasses import dataclass
from typing import Any

import torch

from tensortext.bpe.serial import NO_RANK

__all__ = [
    "MergeTables",
    "expand_spans",
    "lookup_pieces",
    "merge_pieces",
    "piece_keys",
]

# Two polynomial hashes modulo primes below 2**31, so sums of products stay inside int64.
_PRIMES = (2147483629, 2147483587)
_BASES = (1000003, 911382323)


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
    char_units: bool = False
    """SentencePiece: merges start from characters; ``byte_ids`` of a byte that is no
    one-byte token are its fallback, and a longer character that is no token stays as its bytes
    (byte fallback) or becomes ``unk_id`` (``>= 0``). Different pieces may share a rank (a
    score), the leftmost merging first."""
    unk_id: int = -1

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
    if not tables.whole_piece_lookup:
        return torch.full_like(starts, -1)
    return _lookup_exact(data, starts, lens, tables)


def _lookup_exact(
    data: torch.Tensor, starts: torch.Tensor, lens: torch.Tensor, tables: MergeTables
) -> torch.Tensor:
    """:func:`lookup_pieces` whatever ``whole_piece_lookup`` says."""
    found = torch.full_like(starts, -1)
    candidate = (lens <= tables.max_token_len) & (lens > 0)
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
            long run of random CJK, where the sequential heap (:func:`.serial.merge_tokens`) is
            faster.
        unfinished: ``[P]`` bool, required with ``max_passes``: set for the pieces still
            merging then; their tokens so far are written to ``out`` (a state of the
            sequential order, from which :func:`.serial.merge_tokens` goes on).

    Returns:
        ``[P]`` bool: pieces whose merge order could differ from the sequential one; they are
        not written and must go through :func:`.serial.merge_serial`.
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
    if tables.char_units:
        tokens, owner, position = _characters(data, tokens, owner, position, tables)
    # With ranks shared by different pieces (SentencePiece), a pair of the same rank formed by
    # a pass may come before the ones it merged: that is irregular too.
    tied = tables.char_units
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
        went_down = piece_min <= last_rank if tied else piece_min < last_rank
        irregular |= went_down & (piece_min != NO_RANK)
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


def _characters(
    data: torch.Tensor,
    tokens: torch.Tensor,
    owner: torch.Tensor,
    position: torch.Tensor,
    tables: MergeTables,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """SentencePiece's first parts from the bytes' (``[T]`` each): a character of several
    bytes that is a token becomes that token; one that is not stays as its bytes' fallback
    tokens, or becomes ``unk_id`` once."""
    value = data[position].long()
    lead = (value & 0xC0) != 0x80
    length = torch.where(value >= 0xF0, 4, torch.where(value >= 0xE0, 3, 2))
    multi = lead & (value >= 0xC0)
    found = _lookup_exact(data, position[multi], length[multi], tables)
    char_token = torch.full_like(tokens, -1)
    char_token[multi] = found
    if tables.unk_id >= 0:
        char_token[multi] = torch.where(found >= 0, found, tables.unk_id)
    tokens = torch.where(char_token >= 0, char_token, tokens)
    # Each byte's character: the last lead at or before it (pieces start at characters).
    index = torch.arange(tokens.numel(), device=tokens.device)
    lead_of = torch.cummax(torch.where(lead, index, -1), 0).values
    keep = (lead | (char_token[lead_of] < 0)).nonzero().squeeze(1)
    return tokens[keep], owner[keep], position[keep]


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
        bad = next_too & ((between <= rank[:-2]) if tables.char_units else (between < rank[:-2]))
        irregular.index_put_((owner[:-3][bad],), torch.ones_like(owner[:-3][bad], dtype=torch.bool))
    return chosen
