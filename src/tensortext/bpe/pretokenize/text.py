"""The codepoints of a batch of segments, their classes, and the shifted views the rules need."""

from __future__ import annotations

import torch

from tensortext.bpe.unicode import (
    LETTER,
    LOWER,
    MARK,
    NUMBER,
    OTHER_LETTER,
    PUNCT_SYMBOL,
    SPACE,
    UPPER,
    codepoint_flags,
)

__all__ = ["Alternatives", "SegmentText"]

# (?i) folds with Unicode simple case folding: 's' also matches U+017F (long s).
_FOLD = {
    "s": "sS\u017f",
    "t": "tT",
    "d": "dD",
    "m": "mM",
    "l": "lL",
    "v": "vV",
    "r": "rR",
    "e": "eE",
}


class SegmentText:
    """Codepoints ``[n]`` cut into segments that are matched independently.

    Every per-position tensor is ``[n]``; ``seg_start``/``seg_end`` give each position's
    segment. Built from segment lengths, then :meth:`resegment` cuts it further (the pieces of
    one split become the segments of the next) without recomputing the classes.
    """

    def __init__(self, codepoints: torch.Tensor, segment_lens: torch.Tensor) -> None:
        # int32 throughout: positions fit, and the elementwise rules run at half the bandwidth.
        self.cp = codepoints.to(torch.int32)  # [n]
        self.n = n = self.cp.numel()
        self.idx = torch.arange(n, device=self.cp.device, dtype=torch.int32)
        segment_lens = segment_lens.to(torch.int32)
        ends = torch.cumsum(segment_lens, 0, dtype=torch.int32)
        self._set_segments(
            torch.repeat_interleave(ends - segment_lens, segment_lens, output_size=n),
            torch.repeat_interleave(ends, segment_lens, output_size=n),
        )
        flags = codepoint_flags(self.cp)
        self.letter = (flags & LETTER) != 0
        self.number = (flags & NUMBER) != 0
        self.space = (flags & SPACE) != 0
        self.upper_only = (flags & UPPER) != 0
        self.lower_only = (flags & LOWER) != 0
        self.mark = (flags & MARK) != 0
        self.punct_symbol = (flags & PUNCT_SYMBOL) != 0
        self.both_cases = ((flags & OTHER_LETTER) != 0) | self.mark
        self.newline = (self.cp == 10) | (self.cp == 13)
        self.is_space_char = self.cp == 32

    def _set_segments(self, seg_start: torch.Tensor, seg_end: torch.Tensor) -> None:
        self.seg_start = seg_start  # [n] int32
        self.seg_end = seg_end  # [n] int32
        self.first = self.idx == seg_start
        self.next_inside = self.idx + 1 < seg_end

    def resegment(self, starts: torch.Tensor) -> SegmentText:
        """A copy whose segments also begin where ``starts`` ``[n]`` bool is true."""
        starts = starts | self.first
        out = object.__new__(SegmentText)
        out.__dict__.update(self.__dict__)
        seg_start = torch.cummax(torch.where(starts, self.idx, 0), 0).values
        following = torch.cat([starts[1:], starts.new_ones(1)])  # a segment starts at i + 1
        stops = torch.where(following, self.idx + 1, self.n)
        seg_end = torch.flip(torch.cummin(torch.flip(stops, [0]), 0).values, [0])
        out._set_segments(seg_start, seg_end)
        return out

    def shift(self, values: torch.Tensor, fill: int | bool) -> torch.Tensor:
        """``values[i + 1]``, or ``fill`` where ``i + 1`` leaves the segment."""
        out = torch.full_like(values, fill)
        out[:-1] = values[1:]
        return torch.where(self.next_inside, out, out.new_tensor(fill))

    def previous(self, values: torch.Tensor, fill: bool) -> torch.Tensor:
        """``values[i - 1]``, or ``fill`` at a segment's first position."""
        out = torch.full_like(values, fill)
        out[1:] = values[:-1]
        return torch.where(self.first, out.new_tensor(fill), out)

    def at(self, values: torch.Tensor, positions: torch.Tensor, fill: int | bool) -> torch.Tensor:
        """``values[positions]``, or ``fill`` where a position is its segment's end."""
        inside = positions < self.seg_end
        gathered = values[positions.clamp(min=0, max=max(self.n - 1, 0))]
        return torch.where(inside, gathered, gathered.new_tensor(fill))

    def run_end(self, mask: torch.Tensor) -> torch.Tensor:
        """First ``j >= i`` with ``mask[j]`` false, or the segment's end."""
        stops = torch.where(mask, self.n, self.idx)
        suffix_min = torch.flip(torch.cummin(torch.flip(stops, [0]), 0).values, [0])
        return torch.minimum(suffix_min, self.seg_end)

    def run_start(self, mask: torch.Tensor) -> torch.Tensor:
        """Where ``mask[i]``: the first position of ``i``'s run of ``mask`` in its segment."""
        begins = mask & ~self.previous(mask, False)
        return torch.cummax(torch.where(begins, self.idx, -1), 0).values

    def last_at_or_before(self, mask: torch.Tensor) -> torch.Tensor:
        """Largest ``j <= i`` with ``mask[j]`` (``-1`` if none); callers check it is in range."""
        return torch.cummax(torch.where(mask, self.idx, -1), 0).values

    def in_set(self, values: torch.Tensor, chars: str) -> torch.Tensor:
        out = torch.zeros_like(values, dtype=torch.bool)
        for char in chars:
            out |= values == ord(char)
        return out

    def in_ranges(self, ranges: tuple[tuple[int, int], ...]) -> torch.Tensor:
        """Whether each codepoint is in one of the inclusive ``(first, last)`` ranges."""
        out = torch.zeros_like(self.cp, dtype=torch.bool)
        for first, last in ranges:
            out |= (self.cp >= first) & (self.cp <= last)
        return out

    def contraction_len(self, *, ignore_case: bool) -> torch.Tensor:
        """Length of ``'s|'t|'re|'ve|'m|'ll|'d`` matched at each position (0: none)."""
        fold = _FOLD if ignore_case else {char: char for char in _FOLD}
        # Only apostrophes can start one: look at the (few) of them, not at every position.
        quotes = (self.cp == ord("'")).nonzero().squeeze(1)
        end = self.seg_end[quotes]
        last = max(self.n - 1, 0)
        one_ahead = torch.where(quotes + 1 < end, self.cp[(quotes + 1).clamp(max=last)], -1)
        two_ahead = torch.where(quotes + 2 < end, self.cp[(quotes + 2).clamp(max=last)], -1)
        one = self.in_set(one_ahead, fold["s"] + fold["t"] + fold["d"] + fold["m"])
        two = (
            (self.in_set(one_ahead, fold["l"]) & self.in_set(two_ahead, fold["l"]))
            | (self.in_set(one_ahead, fold["v"]) & self.in_set(two_ahead, fold["e"]))
            | (self.in_set(one_ahead, fold["r"]) & self.in_set(two_ahead, fold["e"]))
        )
        lengths = torch.zeros_like(self.cp)
        lengths[quotes] = torch.where(one, 2, torch.where(two, 3, 0)).to(lengths.dtype)
        return lengths


class Alternatives:
    """Leftmost-first alternation: the first alternative that matches at ``i`` sets its end.

    Positions no alternative matches at keep ``default`` (``i + 1`` unless given).
    """

    def __init__(self, text: SegmentText, default: torch.Tensor | None = None) -> None:
        self.default = text.idx + 1 if default is None else default
        self.rules: list[tuple[torch.Tensor, torch.Tensor]] = []

    def add(self, condition: torch.Tensor, end: torch.Tensor) -> None:
        self.rules.append((condition, end))

    @property
    def end(self) -> torch.Tensor:
        # Lowest priority first, so each earlier alternative overrides the later ones.
        end = self.default
        for condition, rule_end in reversed(self.rules):
            end = torch.where(condition, rule_end, end)
        return end

    @property
    def matched(self) -> torch.Tensor:
        """Where some alternative matches."""
        out = torch.zeros_like(self.default, dtype=torch.bool)
        for condition, _ in self.rules:
            out |= condition
        return out
