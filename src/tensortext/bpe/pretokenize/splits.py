"""Find-all splitting, reachability by pointer doubling, and split sequences (DeepSeek-V3).

A Hugging Face ``Split(pattern, behavior="Isolated")`` keeps every match as a piece and the text
between matches (a *gap*, where no match starts) as a piece too; a ``Sequence`` of them splits
each piece of one step again with the next, so the pieces of one step are the segments of the
next (``$`` and lookahead see a piece's end as the end of the text).

Given, for every position, whether a match may start there and where it would end, the
matches a left-to-right search finds are those reachable from each segment's first matchable
position through ``next match = first matchable position at or after this match's end``;
pointer doubling finds them in ``log2(matches between anchors)`` rounds.
"""

from __future__ import annotations

import torch

from tensortext.bpe.pretokenize.text import Alternatives, SegmentText

__all__ = [
    "deepseek_v3_starts",
    "isolated_starts",
    "reachable",
]

_CJK_KANA = ((0x4E00, 0x9FA5), (0x3040, 0x309F), (0x30A0, 0x30FF))
_ASCII_PUNCT = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"


def reachable(seeds: torch.Tensor, jump: torch.Tensor) -> torch.Tensor:
    """Positions reachable from ``seeds`` ``[n]`` bool through ``jump`` ``[n]`` (``n``: stop).

    Pointer doubling: after round ``k`` the set holds everything within ``2**k`` jumps of a
    seed; a round that adds nothing ends it (one host sync per round).
    """
    n = seeds.numel()
    jump = torch.cat([jump.to(torch.int64), jump.new_tensor([n], dtype=torch.int64)])  # n: sink
    found = torch.cat([seeds, seeds.new_zeros(1)])
    while True:
        reached = torch.zeros(n + 1, dtype=torch.int32, device=jump.device)
        reached.index_add_(0, jump, found.to(torch.int32))
        grown = found | (reached > 0)
        grown[n] = False
        if not bool((grown != found).any()):  # host sync: the only one, once per round
            return found[:n]
        found = grown
        jump = jump[jump]


def isolated_starts(
    text: SegmentText, matched: torch.Tensor, end: torch.Tensor, anchors: torch.Tensor
) -> torch.Tensor:
    """Piece starts of an Isolated split: the matches a search finds, and the gaps after them.

    Args:
        text: the segments.
        matched: ``[n]`` bool, a match can start at ``i``; ``end`` ``[n]``: where it ends (> i).
        anchors: ``[n]`` bool, positions from which a search is known to resume (the first
            matchable position at or after each of them is a match the search finds).

    Returns:
        ``[n]`` bool: segment starts, match starts, and the ends of matches inside a segment.
    """
    next_match = text.run_end(~matched)  # first matchable j >= i, or the segment's end
    sink = torch.full_like(text.idx, text.n)
    resume = (anchors | text.first) & (next_match < text.seg_end)
    seeds = _mark(torch.where(resume, next_match, text.n), text.n)
    after = text.at(next_match, end, text.n)
    jump = torch.where(matched & (after < text.seg_end), after, sink)
    starts = reachable(seeds, jump)
    gap = _mark(torch.where(starts & (end < text.seg_end), end, text.n), text.n)
    return starts | gap | text.first


def _mark(positions: torch.Tensor, n: int) -> torch.Tensor:
    """``[n]`` bool, true at each of ``positions`` below ``n`` (no host sync)."""
    out = torch.zeros(n + 1, dtype=torch.bool, device=positions.device)
    out[positions.long()] = True
    return out[:n]


def _main_ends(text: SegmentText) -> tuple[torch.Tensor, torch.Tensor]:
    """``DEEPSEEK_V3_MAIN``: where a match can start, and where it ends."""
    alts = Alternatives(text)
    cp = text.cp
    ascii_alpha = ((cp >= 65) & (cp <= 90)) | ((cp >= 97) & (cp <= 122))
    # [ASCII punct][A-Za-z]+
    ascii_punct = text.in_set(cp, _ASCII_PUNCT)
    alts.add(ascii_punct & text.shift(ascii_alpha, False), text.shift(text.run_end(ascii_alpha), 0))
    # [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
    letter_mark = text.letter | text.mark
    letter_mark_end = text.run_end(letter_mark)
    alts.add(letter_mark, letter_mark_end)
    prefix = ~(text.newline | text.letter | text.punct_symbol)
    alts.add(prefix & text.shift(letter_mark, False), text.shift(letter_mark_end, 0))
    # ' ?[\p{P}\p{S}]+[\r\n]*'
    ps = text.punct_symbol
    ps_end = text.run_end(ps)
    punct_end = torch.where(ps, ps_end, text.shift(ps_end, 0))
    alts.add(
        ps | (text.is_space_char & text.shift(ps, False)),
        torch.maximum(punct_end, text.at(text.run_end(text.newline), punct_end, 0)),
    )
    # \s*[\r\n]+ | \s+(?!\S) | \s+
    space_end = text.run_end(text.space)
    last_newline = text.last_at_or_before(text.newline)[(space_end - 1).clamp(min=0)]
    alts.add(text.space & (last_newline >= text.idx), last_newline + 1)
    alts.add(text.space & (space_end == text.seg_end), text.seg_end)
    alts.add(text.space & (space_end - text.idx >= 2), space_end - 1)
    alts.add(text.space, space_end)
    return alts.matched, alts.end


def deepseek_v3_starts(text: SegmentText) -> torch.Tensor:
    """Piece starts of DeepSeek-V3's ``Sequence`` of three Isolated splits.

    1. ``\\p{N}{1,3}``: digit groups of three from each run's start (a run holds no gap).
    2. ``[CJK kana]+``: whole runs, inside each piece of step 1.
    3. :data:`DEEPSEEK_V3_MAIN` inside each piece of step 2, as a find-all.
    """
    number = text.number
    digit_starts = number & ((text.idx - text.run_start(number)) % 3 == 0)
    text = text.resegment(digit_starts | (text.previous(number, False) & ~number))
    cjk = text.in_ranges(_CJK_KANA)
    text = text.resegment(cjk ^ text.previous(cjk, False))
    matched, end = _main_ends(text)
    # The search resumes right after a letter/mark run: the match holding its last character
    # (a letter run, or [punct][A-Za-z]+ reaching it) ends there.
    letter_mark = text.letter | text.mark
    anchors = text.previous(letter_mark, False) & ~letter_mark
    return isolated_starts(text, matched, end, anchors)
