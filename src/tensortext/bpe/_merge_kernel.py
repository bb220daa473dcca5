# mypy: disable-error-code="no-untyped-def,untyped-decorator"
"""The Triton merge kernel itself (imported only when used; see :mod:`merge_triton`)."""

from __future__ import annotations

import triton
import triton.language as tl

from tensortext.bpe.serial import NO_RANK as _NO_RANK

__all__ = ["merge_kernel"]

NO_RANK = tl.constexpr(_NO_RANK)  # the rank of a pair that is not in the table


@triton.jit
def _minimum(a, b):
    return tl.minimum(a, b)


@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def _pair_lookup(
    left,
    right,
    mask,
    pair_keys_ptr,
    pair_ranks_ptr,
    pair_ids_ptr,
    num_pairs,
    key_base,
    SEARCH_STEPS: tl.constexpr,
):
    """Rank (NO_RANK if absent) and merged token of each (left, right); branchless search."""
    key = left * key_base + right
    base = tl.zeros_like(key)
    length = num_pairs
    for _ in tl.static_range(SEARCH_STEPS):
        half = length // 2
        probe = tl.load(pair_keys_ptr + base + half, mask=mask, other=0)
        base = tl.where(probe < key, base + half, base)
        length -= half
    last = tl.load(pair_keys_ptr + base, mask=mask, other=0)
    slot = tl.minimum(base + (last < key).to(tl.int64), num_pairs - 1)
    hit = mask & (tl.load(pair_keys_ptr + slot, mask=mask, other=-1) == key)
    rank = tl.where(hit, tl.load(pair_ranks_ptr + slot, mask=hit, other=0), NO_RANK)
    merged = tl.load(pair_ids_ptr + slot, mask=hit, other=0)
    return rank, merged


# long: one Triton program runs a piece's whole pass loop in registers; splitting it into
# jitted helpers would not shorten the loop body it must carry (state, checks, write-back).
@triton.jit
def _merge_kernel(
    data_ptr,  # uint8 [nbytes]: the batch's UTF-8 bytes
    start_ptr,  # int64 [P]: first byte of each piece
    len_ptr,  # int64 [P]: bytes per piece, 1..BLOCK
    byte_ids_ptr,  # int64 [256]: the token of each single byte
    pair_keys_ptr,  # int64 [Q]: left * key_base + right, sorted
    pair_ranks_ptr,  # int64 [Q]: merge rank of each pair
    pair_ids_ptr,  # int64 [Q]: the merged token of each pair
    num_pairs,  # Q
    key_base,  # multiplier of the left token in a pair key
    out_ptr,  # int64 [nbytes + 1]: written, token starting at each byte
    irregular_ptr,  # int8 [P]: written, 1 where the piece needs the serial path
    BLOCK: tl.constexpr,  # lanes: the longest piece handled
    SEARCH_STEPS: tl.constexpr,  # binary-search steps, ceil(log2(Q)) + 1
):
    pid = tl.program_id(0)
    start = tl.load(start_ptr + pid)
    length = tl.load(len_ptr + pid)
    lane = tl.arange(0, BLOCK)
    valid = lane < length
    byte = tl.load(data_ptr + start + lane, mask=valid, other=0)
    tokens = tl.load(byte_ids_ptr + byte.to(tl.int64), mask=valid, other=0)
    alive = valid
    last_min = tl.full((), -1, tl.int64)
    irregular = tl.full((), 0, tl.int32)
    active = length > 1
    while active:
        # Neighbours in alive order: next alive lane after j, last alive lane before j.
        first_alive_from = tl.associative_scan(
            tl.where(alive, lane, BLOCK), 0, _minimum, reverse=True
        )
        right = tl.gather(first_alive_from, tl.minimum(lane + 1, BLOCK - 1), 0)
        right = tl.where(lane + 1 < BLOCK, right, BLOCK)
        last_alive_to = tl.associative_scan(tl.where(alive, lane, -1), 0, _maximum)
        left = tl.gather(last_alive_to, tl.maximum(lane - 1, 0), 0)
        left = tl.where(lane > 0, left, -1)
        has_pair = alive & (right < BLOCK)
        right_tokens = tl.gather(tokens, tl.minimum(right, BLOCK - 1), 0)
        rank, merged = _pair_lookup(
            tokens,
            right_tokens,
            has_pair,
            pair_keys_ptr,
            pair_ranks_ptr,
            pair_ids_ptr,
            num_pairs,
            key_base,
            SEARCH_STEPS,
        )
        lowest = tl.min(rank, 0)
        # The lowest rank went down: the sequential order would differ (see merge.py).
        irregular = irregular | ((lowest < last_min) & (lowest != NO_RANK)).to(tl.int32)
        go = (lowest != NO_RANK) & (irregular == 0)
        # (Scalars are broadcast to blocks before `&`: the interpreter would otherwise
        # turn the boolean block into int64, which tl.load refuses as a mask.)
        regular = (tl.zeros_like(lane) + irregular) == 0
        chosen = (rank == lowest) & (rank != NO_RANK) & regular
        # Even offsets in each run of chosen pairs (runs in alive order).
        chosen_int = chosen.to(tl.int32)
        before = tl.cumsum(chosen_int, 0) - chosen_int
        left_chosen = tl.gather(chosen_int, tl.maximum(left, 0), 0) * (left >= 0).to(tl.int32)
        run_start = chosen & (left_chosen == 0)
        run_base = tl.associative_scan(tl.where(run_start, before, -1), 0, _maximum)
        chosen = chosen & ((before - run_base) % 2 == 0)
        chosen_int = chosen.to(tl.int32)
        # Sequentially, merge j first forms (merged_j, token after its partner); if that
        # token starts the next merge, the pair must not rank below this pass.
        after = tl.gather(right, tl.minimum(right, BLOCK - 1), 0)
        after = tl.where(right < BLOCK, after, BLOCK)
        after_chosen = tl.gather(chosen_int, tl.minimum(after, BLOCK - 1), 0)
        next_merges = chosen & (after < BLOCK) & (after_chosen != 0)
        between, _ = _pair_lookup(
            merged,
            tl.gather(tokens, tl.minimum(after, BLOCK - 1), 0),
            next_merges,
            pair_keys_ptr,
            pair_ranks_ptr,
            pair_ids_ptr,
            num_pairs,
            key_base,
            SEARCH_STEPS,
        )
        irregular = irregular | tl.max((next_merges & (between < lowest)).to(tl.int32), 0)
        # Apply: the left lane takes the merged token, its partner dies.
        partner = tl.gather(chosen_int, tl.maximum(left, 0), 0) * (left >= 0).to(tl.int32)
        tokens = tl.where(chosen, merged, tokens)
        alive = alive & (partner == 0)
        last_min = tl.where(go, lowest, last_min)
        active = go
    tl.store(out_ptr + start + lane, tokens, mask=alive & ((tl.zeros_like(lane) + irregular) == 0))
    tl.store(irregular_ptr + pid, irregular.to(tl.int8))


merge_kernel = _merge_kernel
