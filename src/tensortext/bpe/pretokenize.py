"""Regex-exact pre-tokenization as tensor operations over the codepoints of a whole batch.

Each supported split pattern (r50k/GPT-2, cl100k, o200k, Llama-3) is a leftmost-first regex: the
pieces are found one after another, each starting where the last one ended. We reproduce it in
three data-parallel steps, with no loop over characters:

1. **Local matches.** For *every* position ``i`` we compute where the pattern's match would end if
   a piece started at ``i`` (``piece_end [n]``). Each alternative of the pattern becomes a few
   elementwise rules over codepoint classes plus run ends (``\\p{L}++`` ends where the run of
   letters ends: a reversed ``cummin``) and the last newline of a whitespace run (a ``cummax``).
   Backtracking is resolved analytically: ``\\s+(?!\\S)`` gives back one character, o200k's
   ``[upper]*[lower]+`` gives back to the run's last character that is in both sets, and so on.
2. **Anchors.** Positions where *every* match must start, whatever came before (segment starts,
   the first digit of a run, the character after a letter run, ...): they keep step 3 short.
3. **Reachability.** The real piece starts are the positions reachable from the anchors through
   ``piece_end``; pointer doubling finds them in ``log2(longest chain)`` rounds.

Segments are matched independently: ``$`` and the lookahead see a segment's end as the end of the
text (tiktoken runs its regex on the text between special tokens the same way).
"""

from __future__ import annotations

from typing import Literal

import torch

from tensortext.bpe.unicode import (
    LETTER,
    LOWER,
    MARK,
    NUMBER,
    OTHER_LETTER,
    SPACE,
    UPPER,
    codepoint_flags,
)

__all__ = [
    "PATTERNS",
    "PatternKind",
    "pattern_kind",
    "piece_starts",
]

PatternKind = Literal["r50k", "cl100k", "cl100k_hf", "o200k", "llama3", "bytes"]

# The exact regexes each kind reproduces (tiktoken's, GPT-2's original and Llama-3's strings).
R50K_PATTERN = (
    r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s"""
)
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
LLAMA3_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

PATTERNS: dict[str, PatternKind] = {
    R50K_PATTERN: "r50k",
    GPT2_PATTERN: "r50k",
    CL100K_PATTERN: "cl100k",
    O200K_PATTERN: "o200k",
    LLAMA3_PATTERN: "llama3",
}
# Hugging Face `tokenizers` runs the same strings through Oniguruma, where `{1,3}+` is not
# possessive but "one or more of {1,3}": cl100k's digit groups become whole digit runs there.
HF_PATTERNS: dict[str, PatternKind] = {**PATTERNS, CL100K_PATTERN: "cl100k_hf"}
KINDS: tuple[PatternKind, ...] = ("r50k", "cl100k", "cl100k_hf", "o200k", "llama3", "bytes")


def pattern_kind(pat_str: str, *, engine: Literal["tiktoken", "hf"] = "tiktoken") -> PatternKind:
    r"""The split rules for a regex string (or a kind name such as ``"cl100k"``).

    Args:
        pat_str: the regex, or a kind name.
        engine: whose regex semantics: tiktoken's (Rust ``fancy-regex``) or Hugging Face
            ``tokenizers``' (Oniguruma); they differ on cl100k's ``\p{N}{1,3}+``.

    Raises:
        ValueError: for a pattern we cannot reproduce exactly, listing the ones we can.
    """
    if pat_str in KINDS:
        return pat_str
    kind = (HF_PATTERNS if engine == "hf" else PATTERNS).get(pat_str)
    if kind is None:
        raise ValueError(
            f"pat_str={pat_str[:60]!r}... is not a split pattern tensortext reproduces exactly; "
            f"pass one of the r50k/GPT-2, cl100k_base, o200k_base or Llama-3 patterns "
            f"(tensortext.bpe.PATTERNS), a kind name {KINDS}, or pretokenize='bytes'"
        )
    return kind


class _Text:
    """Codepoints of a batch of segments, with the shifted views the rules need."""

    def __init__(self, codepoints: torch.Tensor, segment_lens: torch.Tensor) -> None:
        # int32 throughout: positions fit, and the elementwise rules run at half the bandwidth.
        self.cp = codepoints.to(torch.int32)  # [n]
        self.n = n = self.cp.numel()
        device = self.cp.device
        self.idx = torch.arange(n, device=device, dtype=torch.int32)
        segment_lens = segment_lens.to(torch.int32)
        ends = torch.cumsum(segment_lens, 0, dtype=torch.int32)
        self.seg_end = torch.repeat_interleave(ends, segment_lens, output_size=n)  # [n]
        self.seg_start = self.seg_end - torch.repeat_interleave(
            segment_lens, segment_lens, output_size=n
        )
        flags = codepoint_flags(self.cp)
        self.letter = (flags & LETTER) != 0
        self.number = (flags & NUMBER) != 0
        self.space = (flags & SPACE) != 0
        self.upper_only = (flags & UPPER) != 0
        self.lower_only = (flags & LOWER) != 0
        self.mark = (flags & MARK) != 0
        self.both_cases = ((flags & OTHER_LETTER) != 0) | self.mark
        self.newline = (self.cp == 10) | (self.cp == 13)
        self.is_space_char = self.cp == 32
        self.first = self.idx == self.seg_start
        self.next_inside = self.idx + 1 < self.seg_end

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
        gathered = values[positions.clamp(max=max(self.n - 1, 0))]
        return torch.where(inside, gathered, gathered.new_tensor(fill))

    def run_end(self, mask: torch.Tensor) -> torch.Tensor:
        """First ``j >= i`` with ``mask[j]`` false, or the segment's end."""
        stops = torch.where(mask, self.n, self.idx)
        suffix_min = torch.flip(torch.cummin(torch.flip(stops, [0]), 0).values, [0])
        return torch.minimum(suffix_min, self.seg_end)

    def last_at_or_before(self, mask: torch.Tensor) -> torch.Tensor:
        """Largest ``j <= i`` with ``mask[j]`` (``-1`` if none); callers check it is in range."""
        return torch.cummax(torch.where(mask, self.idx, -1), 0).values

    def in_set(self, values: torch.Tensor, chars: str) -> torch.Tensor:
        out = torch.zeros_like(values, dtype=torch.bool)
        for char in chars:
            out |= values == ord(char)
        return out

    def contraction_len(self, *, ignore_case: bool) -> torch.Tensor:
        """Length of ``'s|'t|'re|'ve|'m|'ll|'d`` matched at each position (0: none)."""
        # (?i) folds with Unicode simple case folding: 's' also matches U+017F (long s).
        fold = {
            "s": "sS\u017f",
            "t": "tT",
            "d": "dD",
            "m": "mM",
            "l": "lL",
            "v": "vV",
            "r": "rR",
            "e": "eE",
        }
        if not ignore_case:
            fold = {char: char for char in fold}
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


class _Alternatives:
    """Leftmost-first alternation: the first alternative that matches at ``i`` sets its end."""

    def __init__(self, text: _Text) -> None:
        self.default = text.idx + 1
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


def _whitespace(text: _Text, alts: _Alternatives, kind: PatternKind) -> None:
    """The whitespace alternatives, in each pattern's order."""
    space_end = text.run_end(text.space)
    to_end = text.space & (space_end == text.seg_end)
    last_newline = text.last_at_or_before(text.newline)[(space_end - 1).clamp(min=0)]
    has_newline = text.space & (last_newline >= text.idx)
    if kind in ("r50k", "cl100k", "cl100k_hf"):
        alts.add(to_end, text.seg_end)  # \s++$
    if kind in ("cl100k", "cl100k_hf", "o200k", "llama3"):
        alts.add(has_newline, last_newline + 1)  # \s*[\r\n] (or [\r\n]+): up to the last newline
    # \s+(?!\S): the whole run at the end, else all but its last character (which then
    # prefixes the next piece); a single space before a non-space falls through.
    alts.add(to_end, text.seg_end)
    alts.add(text.space & (space_end - text.idx >= 2), space_end - 1)
    alts.add(text.space, space_end)  # \s or \s+ (a single character here)


def _ends_r50k(text: _Text) -> torch.Tensor:
    alts = _Alternatives(text)
    other = ~(text.space | text.letter | text.number)
    contraction = text.contraction_len(ignore_case=False)
    alts.add(contraction > 0, text.idx + contraction)
    for klass in (text.letter, text.number, other):
        run = text.run_end(klass)
        alts.add(klass, run)  # \p{L}++ etc.
        alts.add(text.is_space_char & text.shift(klass, False), text.shift(run, 0))  # ' ?' prefix
    _whitespace(text, alts, "r50k")
    return alts.end


def _ends_cl100k_like(text: _Text, kind: PatternKind) -> torch.Tensor:
    """cl100k_base and Llama-3: the same rules but for where trailing whitespace goes.

    ``cl100k_hf`` is cl100k as Hugging Face ``tokenizers`` runs it: digit runs stay whole.
    """
    alts = _Alternatives(text)
    other = ~(text.space | text.letter | text.number)
    contraction = text.contraction_len(ignore_case=True)
    alts.add(contraction > 0, text.idx + contraction)
    # [^\r\n\p{L}\p{N}]?+\p{L}++
    letter_end = text.run_end(text.letter)
    prefix = ~(text.newline | text.letter | text.number)
    alts.add(text.letter, letter_end)
    alts.add(prefix & text.shift(text.letter, False), text.shift(letter_end, 0))
    # \p{N}{1,3}+ (Oniguruma: (\p{N}{1,3})+, the whole run)
    number_end = text.run_end(text.number)
    if kind != "cl100k_hf":
        number_end = torch.minimum(text.idx + 3, number_end)
    alts.add(text.number, number_end)
    # ' ?[^\s\p{L}\p{N}]++[\r\n]*+'
    other_end = text.run_end(other)
    newline_end = text.run_end(text.newline)
    punct_end = torch.where(
        text.shift(other, False) & text.is_space_char, text.shift(other_end, 0), other_end
    )
    alts.add(
        other | (text.is_space_char & text.shift(other, False)),
        torch.maximum(punct_end, text.at(newline_end, punct_end, 0)),
    )
    _whitespace(text, alts, kind)
    return alts.end


def _ends_o200k(text: _Text) -> torch.Tensor:
    alts = _Alternatives(text)
    upper_set = text.upper_only | text.both_cases  # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
    lower_set = text.lower_only | text.both_cases  # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
    upper_end = text.run_end(upper_set)
    lower_end = text.run_end(lower_set)
    last_both = text.last_at_or_before(text.both_cases)
    contraction = text.contraction_len(ignore_case=True)

    def with_contraction(end: torch.Tensor) -> torch.Tensor:
        return end + text.at(contraction, end, 0)

    # From start s: [upper]*[lower]+ -- the upper run [s, q) is taken greedily; if a lower-only
    # character follows, the lower run from q wins; otherwise backtracking gives the match up to
    # the last character of the run that is in both sets.
    lower_follows = text.at(text.lower_only, upper_end, False)
    last_both_in_run = last_both[(upper_end - 1).clamp(min=0)]
    first_ok = lower_follows | ((upper_end > text.idx) & (last_both_in_run >= text.idx))
    first_end = with_contraction(
        torch.where(lower_follows, text.at(lower_end, upper_end, 0), last_both_in_run + 1)
    )
    # From start s: [upper]+[lower]*
    second_ok = upper_end > text.idx
    second_end = with_contraction(
        torch.where(lower_follows, text.at(lower_end, upper_end, 0), upper_end)
    )
    prefix = ~(text.newline | text.letter | text.number)
    for ok, end in ((first_ok, first_end), (second_ok, second_end)):
        alts.add(prefix & text.shift(ok, False), text.shift(end, 0))  # with the prefix
        alts.add(ok, end)  # the optional prefix given back
    alts.add(text.number, torch.minimum(text.idx + 3, text.run_end(text.number)))
    # ' ?[^\s\p{L}\p{N}]+[\r\n/]*'
    other = ~(text.space | text.letter | text.number)
    other_end = text.run_end(other)
    tail_end = text.run_end(text.newline | (text.cp == ord("/")))
    punct_end = torch.where(
        text.shift(other, False) & text.is_space_char, text.shift(other_end, 0), other_end
    )
    alts.add(
        other | (text.is_space_char & text.shift(other, False)),
        torch.maximum(punct_end, text.at(tail_end, punct_end, 0)),
    )
    _whitespace(text, alts, "o200k")
    return alts.end


def _anchors(text: _Text, kind: PatternKind) -> torch.Tensor:
    """Positions where a piece starts whatever came before (a subset of the true starts)."""
    anchors = text.first.clone()
    previous_letter = text.previous(text.letter, False)
    previous_newline = text.previous(text.newline, False)
    if kind != "r50k":  # r50k's ' ?\p{N}++' can take the space before a number
        anchors |= text.number & ~text.previous(text.number, True)
    if kind == "o200k":  # a contraction or a mark can continue an o200k letter piece
        anchors |= previous_letter & ~(text.letter | text.mark | (text.cp == ord("'")))
        anchors |= previous_newline & ~(text.space | (text.cp == ord("/")))
    else:
        anchors |= previous_letter & ~text.letter
        anchors |= previous_newline & ~text.space
    return anchors


def piece_ends(text: _Text, kind: PatternKind) -> torch.Tensor:
    if kind == "r50k":
        return _ends_r50k(text)
    if kind in ("cl100k", "cl100k_hf", "llama3"):
        return _ends_cl100k_like(text, kind)
    if kind == "o200k":
        return _ends_o200k(text)
    return text.seg_end  # "bytes": one piece per segment


def piece_starts(
    codepoints: torch.Tensor, segment_lens: torch.Tensor, kind: PatternKind
) -> torch.Tensor:
    """Which codepoints start a piece of the regex split.

    Args:
        codepoints: ``[n]`` int tensor, the segments' codepoints back to back.
        segment_lens: ``[S]`` int64, codepoints per segment (matched independently; ``$``
            and lookahead see a segment's end as the end of the text). Zero lengths allowed.
        kind: the pattern's rules (see :func:`pattern_kind`).

    Returns:
        ``[n]`` bool: true where a piece starts. Pieces run from one start to the next.
    """
    text = _Text(codepoints, segment_lens.to(codepoints.device, torch.int64))
    if text.n == 0:
        return torch.zeros(0, dtype=torch.bool, device=codepoints.device)
    if kind == "bytes":  # one piece per segment
        return text.first
    ends = piece_ends(text, kind)
    # Pointer doubling: after round k, `starts` holds every start within 2**k pieces of an
    # anchor; a round that adds nothing means no chain is longer (chains are contiguous).
    jump = torch.cat([ends, ends.new_tensor([text.n])])  # [n + 1], n is a sink
    starts = torch.cat([_anchors(text, kind), torch.zeros_like(text.first[:1])])
    while True:
        reached = torch.zeros(text.n + 1, dtype=torch.int32, device=jump.device)
        reached.index_add_(0, jump, starts.to(torch.int32))
        grown = starts | (reached > 0)
        grown[text.n] = False
        if not bool((grown != starts).any()):  # host sync: the only one, once per round
            return starts[: text.n]
        starts = grown
        jump = jump[jump]
