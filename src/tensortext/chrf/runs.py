"""Every n-gram order of a grouped batch from as few sorts as possible: packed, sorted keys.

chrF compares n-grams within a group (a hypothesis and its references, or the candidates of one
sentence; see :mod:`~tensortext.chrf.batch`). Each position of each sequence becomes one int64
key, laid out from the high bits down as::

    group | s_1 s_2 ... s_t | slot

where ``s_j`` is the ``j``-th symbol from that position (a character's or a word's dense code,
``b`` bits) and symbols past the end of the sequence are an *end code*. Sorting the keys makes
every order at once: keys that agree on ``group`` and ``s_1..s_n`` are exactly the positions
holding the same n-gram in the same group, and because a key is ordered from its high bits they
are *contiguous* in sorted order for every ``n <= t``: a run of equal ``key >> shift(n)``.
``key & slot_mask`` says which sequence a position comes from, so only the sorted values are
needed, never the permutation.

A position whose n-gram runs past the end has an end code among its first ``n`` symbols, so it
never equals a real n-gram. With one end code per side (hypothesis 0, references 1, real
symbols from 2) the too-short n-grams of a hypothesis and of a reference never share a run and
match nothing (:func:`slot_matches`); with a single end code 0, :meth:`SortedStep.valid` tells
them apart.

When ``group + t * b + slot`` exceeds 62 bits (huge batches or alphabets, high orders) the
orders come in *steps*: the keys of a step's last order are ranked
(:func:`~tensortext.ngrams.compact_ids`; ranks keep the order, so groups stay contiguous) and
the rank stands in for ``group`` in the next step's keys.

On the CPU, sorting values and finding positions go through numpy: ``torch.sort`` always
computes the permutation and ``torch.nonzero`` is several times slower than numpy's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from torch import Tensor

from tensortext.ngrams import compact_ids
from tensortext.padded import Flat

__all__ = [
    "KEY_BITS",
    "SortedStep",
    "group_offsets",
    "iter_steps",
    "keep_where",
    "positions",
    "segment_sums",
    "slot_matches",
    "sort_values",
]

KEY_BITS = 62
"""Bits of a key: below int64's 63, so every key is non-negative with room above."""


def sort_values(keys: Tensor, *, in_place: bool = False) -> Tensor:
    """The values of a 1-D int64 tensor in ascending order (no permutation); with
    ``in_place``, ``keys`` itself may be sorted and returned."""
    if keys.device.type == "cpu":
        if in_place:
            keys.numpy().sort()
            return keys
        return torch.from_numpy(np.sort(keys.numpy()))
    return torch.sort(keys).values


def positions(mask: Tensor) -> Tensor:
    """``[P]`` int64: the indices where a 1-D bool ``mask`` is true (a host sync on CUDA)."""
    if mask.device.type == "cpu":
        return torch.from_numpy(np.flatnonzero(mask.numpy()))
    return torch.nonzero(mask).squeeze(1)


def segment_sums(values: Tensor, lengths: Tensor) -> Tensor:
    """``[S]`` sums of ``values [T]`` (integers or bools) cut into segments of ``lengths [S]``."""
    ends = torch.cumsum(lengths, 0)
    totals = torch.nn.functional.pad(torch.cumsum(values, 0), (1, 0))
    return totals.index_select(0, ends) - totals.index_select(0, ends - lengths)


def keep_where(stream: Flat, keep: Tensor) -> tuple[Flat, Tensor]:
    """``(kept stream, kept positions [T'])``: the elements of ``stream`` where ``keep [T]``,
    each segment keeping its own (a host sync on CUDA)."""
    kept = positions(keep)
    # A segment keeps the kept positions before its end, less those before its start.
    before_end = torch.searchsorted(kept, torch.cumsum(stream.lengths, 0))
    lengths = torch.diff(before_end, prepend=before_end.new_zeros(1))
    return Flat(stream.ids.index_select(0, kept), lengths), kept


def group_offsets(lengths: Tensor, num_slots: int) -> Tensor:
    """``[G + 1]``: where each group's positions start among the sorted keys."""
    sizes = lengths.view(-1, num_slots).sum(1)
    return torch.nn.functional.pad(torch.cumsum(sizes, 0), (1, 0))


def _bits(count: int) -> int:
    """Bits to tell ``count`` values ``0..count-1`` apart."""
    return max(count - 1, 0).bit_length()


@dataclass(frozen=True)
class SortedStep:
    """The sorted keys of one step, which holds orders ``first .. first + count - 1``."""

    keys: Tensor  # [T] int64, ascending
    first: int  # the step's lowest order
    count: int  # t, the orders (symbols) it holds
    symbol_bits: int  # b
    slot_bits: int
    num_slots: int  # K

    @property
    def orders(self) -> range:
        """The n-gram orders this step holds."""
        return range(self.first, self.first + self.count)

    def shift(self, order: int) -> int:
        """``keys >> shift(order)`` is the n-gram of ``order`` (with its group)."""
        return self.slot_bits + self.symbol_bits * (self.first + self.count - 1 - order)

    @cached_property
    def slot_cumulative(self) -> Tensor:
        """``[K - 1, T + 1]`` int64: how many keys of slot ``k >= 1`` are among the first ``i``
        keys (slot 0 has the rest)."""
        slot = self.keys & ((1 << self.slot_bits) - 1)
        cumulative = slot.new_zeros(self.num_slots - 1, slot.numel() + 1)
        if self.num_slots == 2:  # the slot is 0 or 1: its running sum counts slot 1
            torch.cumsum(slot, 0, out=cumulative[0, 1:])
        else:
            slots = torch.arange(1, self.num_slots, device=slot.device).unsqueeze(1)
            torch.cumsum(slot.unsqueeze(0) == slots, 1, out=cumulative[:, 1:])
        return cumulative

    @cached_property
    def differs(self) -> Tensor:
        """``[T + 1]``: each key XOR the one before; ``2**62`` (above every bit) before the
        first key and after the last."""
        differs = self.keys.new_full((self.keys.numel() + 1,), 1 << KEY_BITS)
        torch.bitwise_xor(self.keys[1:], self.keys[:-1], out=differs[1:-1])
        return differs

    def run_bounds(self, order: int) -> Tensor:
        """``[T + 1]`` bool: where a run of one n-gram of ``order`` begins, and the end."""
        # Two keys share the n-gram iff their XOR has no bit at or above the shift.
        return self.differs >= (1 << self.shift(order))

    def valid(self, order: int) -> Tensor:
        """``[T]`` bool: the n-gram lies inside its sequence (end code 0 for every slot)."""
        last_symbol = (self.keys >> self.shift(order)) & ((1 << self.symbol_bits) - 1)
        return last_symbol != 0


def _pack(symbols: Flat, end_codes: Tensor, start: int, count: int, bits: int) -> Tensor:
    """``[T]``: at each position, the symbols ``start .. start+count-1`` ahead of it packed high
    to low, its sequence's end code past the end of the sequence."""
    codes, lengths = symbols
    total = codes.numel()
    if total == 0:
        return codes.new_zeros(0, dtype=torch.int64)
    reach = start + count - 1  # the farthest symbol read
    packed = torch.empty(total + 1, dtype=torch.int64, device=codes.device)  # + a spill slot
    # Reading straight through the flat stream crosses into the next sequence only within
    # `reach` of a sequence's end; those few positions are packed again below. In place: a
    # fresh large tensor costs page faults on the CPU, more than a pass over it.
    span = max(total - reach, 0)
    body = packed[:span]
    body.copy_(codes[start : start + span])
    for j in range(1, count):
        body.bitwise_left_shift_(bits).bitwise_or_(codes[start + j : start + j + span])
    if reach:
        ends = torch.cumsum(lengths, 0).unsqueeze(1)  # [S, 1]
        back = torch.arange(1, reach + 1, device=codes.device)  # [reach]
        position = ends - back  # [S, reach]: the last positions of each sequence
        ahead = position.unsqueeze(2) + torch.arange(start, reach + 1, device=codes.device)
        read = codes.index_select(0, ahead.clamp(0, total - 1).view(-1))
        symbol = torch.where(
            ahead < ends.unsqueeze(2),
            read.view(ahead.shape),
            end_codes.view(-1, 1, 1).to(codes.dtype),
        )  # [S, reach, count]
        tail = symbol[..., 0].clone()
        for j in range(1, count):
            tail.bitwise_left_shift_(bits).bitwise_or_(symbol[..., j])
        inside = back <= lengths.unsqueeze(1)  # the position is in this sequence
        packed.scatter_(0, torch.where(inside, position, total).view(-1), tail.view(-1))
    return packed[:total]


def _per_position(values: Tensor, lengths: Tensor, total: int) -> Tensor:
    """``[T]``: ``values [S]`` repeated ``lengths [S]`` (sum ``T``) times, as a running sum of
    the steps between sequences (one pass; ``repeat_interleave`` builds an index and gathers)."""
    steps = torch.zeros(total + 1, dtype=values.dtype, device=values.device)  # + a spill slot
    starts = torch.cumsum(lengths, 0) - lengths  # empty sequences share the next start
    steps.scatter_add_(0, starts, torch.diff(values, prepend=values.new_zeros(1)))
    return steps[:total].cumsum_(0)


def iter_steps(
    symbols: Flat, num_slots: int, symbol_bits: int, max_order: int, end_codes: Tensor
) -> Iterator[SortedStep]:
    """Sorted keys for n-gram orders ``1..max_order`` of a grouped stream of symbols.

    Args:
        symbols: ``(codes [T], lengths [G * K])``: sequences in group order (sequence ``s`` is
            group ``s // K``, slot ``s % K``); integer codes in ``0 .. 2**symbol_bits - 1``,
            never an end code.
        num_slots: ``K``.
        symbol_bits: ``b``.
        max_order: ``N >= 1``.
        end_codes: ``[G * K]`` int64, the symbol past the end of each sequence.

    Yields:
        :class:`SortedStep` s whose orders cover ``1..N`` in turn.

    Raises:
        ValueError: a batch so large that one symbol does not fit next to the group or rank.
    """
    codes, lengths = symbols
    total, num_sequences = codes.numel(), lengths.numel()
    device = codes.device
    slot_bits = _bits(num_slots)
    slot = torch.arange(num_sequences, device=device) % num_slots  # [S]
    group = torch.div(torch.arange(num_sequences, device=device), num_slots, rounding_mode="floor")
    prefix: Tensor | None = None  # the rank of the previous step's n-grams, per position
    prefix_bits = _bits(num_sequences // max(num_slots, 1))
    done = 0
    while done < max_order:
        count = min(max_order - done, (KEY_BITS - prefix_bits - slot_bits) // symbol_bits)
        if count < 1:
            raise ValueError(
                f"a batch of {total} symbols in {num_sequences} sequences is too large to pack "
                "into 62-bit keys; split it into smaller batches"
            )
        keys = _pack(symbols, end_codes, done, count, symbol_bits).bitwise_left_shift_(slot_bits)
        high = count * symbol_bits + slot_bits
        if prefix is None:  # the group and the slot are per sequence
            keys.add_(_per_position((group << high) | slot, lengths, total))
        else:
            keys.bitwise_or_(prefix << high).add_(_per_position(slot, lengths, total))
        last = done + count == max_order
        ordered = sort_values(keys, in_place=last)  # the next step ranks the unsorted keys
        yield SortedStep(ordered, done + 1, count, symbol_bits, slot_bits, num_slots)
        done += count
        if not last:
            prefix = compact_ids(keys >> slot_bits)
            prefix_bits = _bits(total)


def slot_matches(step: SortedStep, order: int, offsets: Tensor) -> Tensor:
    """Per group, ``sum over n-grams of min(count in slot 0, count in slot k)``, ``k >= 1``.

    The end codes must differ between slot 0 and the others (see the module docstring): a
    too-short n-gram's run then holds only slot 0 or only other slots, and its minimum is 0.
    One order at a time: the arrays of one order's runs stay in cache.

    Args:
        step: from :func:`iter_steps`, holding ``order``.
        order: the n-gram order.
        offsets: ``[G + 1]`` from :func:`group_offsets`.

    Returns:
        ``[G, K - 1]`` int64.
    """
    keys, num_slots = step.keys, step.num_slots
    num_groups = offsets.numel() - 1
    if keys.numel() == 0:
        return keys.new_zeros(num_groups, num_slots - 1)
    # Only runs of two or more keys can match. Such a run starts at a bound followed by no
    # bound and ends before a bound preceded by none: the places where the bound flag flips
    # alternate start, last key, start, last key, ...
    bounds = step.run_bounds(order)  # [T + 1], true at 0 and at T
    flips = positions(bounds[:-1] != bounds[1:])  # [2R]
    starts, ends = flips[0::2].contiguous(), flips[1::2] + 1  # [R] each
    # Keys of slots 1.. in each run: differences of running counts at its bounds; slot 0 has
    # the rest of the run.
    others = [c.index_select(0, ends) - c.index_select(0, starts) for c in step.slot_cumulative]
    first = ends - starts
    for other in others:
        first -= other
    # Runs are in group order: a group's sum is a difference of running sums at the first run
    # of the next group (searchsorted: the runs that start before the group's end).
    next_group = torch.searchsorted(starts, offsets)  # [G + 1]
    per_slot = []
    for other in others:
        running = torch.nn.functional.pad(torch.minimum(first, other).cumsum_(0), (1, 0))
        per_slot.append(torch.diff(running.index_select(0, next_group)))  # [G]
    return torch.stack(per_slot, dim=1)
