"""Local match ends and anchors of the single-regex patterns (step 1 and 2 of the splitter).

Each function gives, for every position ``i``, where the pattern's match would end if a piece
started at ``i``; the alternatives are built from a few shared blocks (letter runs with an
optional leading non-letter, digit groups, punctuation runs with trailing newlines, whitespace).
"""

from __future__ import annotations

import torch

from tensortext.bpe.patterns import PatternKind
from tensortext.bpe.pretokenize.text import Alternatives, SegmentText

__all__ = ["anchors", "piece_ends", "sentencepiece_starts"]


def _whitespace(text: SegmentText, alts: Alternatives, kind: PatternKind) -> None:
    """The whitespace alternatives, in each pattern's order."""
    space_end = text.run_end(text.space)
    to_end = text.space & (space_end == text.seg_end)
    last_newline = text.last_at_or_before(text.newline)[(space_end - 1).clamp(min=0)]
    has_newline = text.space & (last_newline >= text.idx)
    if kind in ("r50k", "cl100k", "cl100k_hf"):
        alts.add(to_end, text.seg_end)  # \s++$
    if kind in ("cl100k", "cl100k_hf", "o200k", "llama3", "qwen2", "qwen35", "tekken"):
        alts.add(has_newline, last_newline + 1)  # \s*[\r\n] (or [\r\n]+): up to the last newline
    # \s+(?!\S): the whole run at the end, else all but its last character (which then
    # prefixes the next piece); a single space before a non-space falls through.
    alts.add(to_end, text.seg_end)
    alts.add(text.space & (space_end - text.idx >= 2), space_end - 1)
    alts.add(text.space, space_end)  # \s or \s+ (a single character here)


def _ends_r50k(text: SegmentText) -> torch.Tensor:
    alts = Alternatives(text)
    other = ~(text.space | text.letter | text.number)
    contraction = text.contraction_len(ignore_case=False)
    alts.add(contraction > 0, text.idx + contraction)
    for klass in (text.letter, text.number, other):
        run = text.run_end(klass)
        alts.add(klass, run)  # \p{L}++ etc.
        alts.add(text.is_space_char & text.shift(klass, False), text.shift(run, 0))  # ' ?' prefix
    _whitespace(text, alts, "r50k")
    return alts.end


def _ends_cl100k_like(text: SegmentText, kind: PatternKind) -> torch.Tensor:
    """cl100k_base, Llama-3 and Qwen: the same rules but for digits, letters and whitespace.

    ``cl100k_hf`` is cl100k as Hugging Face ``tokenizers`` runs it: digit runs stay whole;
    ``qwen2`` is Llama-3 with single digits (``\\p{N}`` for ``\\p{N}{1,3}``); ``qwen35`` is
    ``qwen2`` whose letter runs take marks (``[\\p{L}\\p{M}]+``, which punctuation excludes).
    """
    alts = Alternatives(text)
    letter = _letter_class(text, kind)
    other = ~(text.space | letter | text.number)
    contraction = text.contraction_len(ignore_case=True)
    alts.add(contraction > 0, text.idx + contraction)
    # [^\r\n\p{L}\p{N}]?+\p{L}++ (a mark as the prefix: the run from it is the same match)
    letter_end = text.run_end(letter)
    prefix = ~(text.newline | letter | text.number)
    alts.add(letter, letter_end)
    alts.add(prefix & text.shift(letter, False), text.shift(letter_end, 0))
    # \p{N}{1,3}+ (Oniguruma: (\p{N}{1,3})+, the whole run); Qwen2: \p{N}
    number_end = text.run_end(text.number)
    if kind in ("qwen2", "qwen35"):
        number_end = text.idx + 1
    elif kind != "cl100k_hf":
        number_end = torch.minimum(text.idx + 3, number_end)
    alts.add(text.number, number_end)
    # ' ?[^\s\p{L}\p{N}]++[\r\n]*+' (qwen35: [^\s\p{L}\p{M}\p{N}])
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


def _ends_o200k(text: SegmentText, kind: PatternKind) -> torch.Tensor:
    """o200k's rules, and Tekken's: o200k's without the contraction suffixes, with ``\\p{N}``
    for ``\\p{N}{1,3}``."""
    alts = Alternatives(text)
    upper_set = text.upper_only | text.both_cases  # [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
    lower_set = text.lower_only | text.both_cases  # [\p{Ll}\p{Lm}\p{Lo}\p{M}]
    upper_end = text.run_end(upper_set)
    lower_end = text.run_end(lower_set)
    last_both = text.last_at_or_before(text.both_cases)
    contraction = text.contraction_len(ignore_case=True) if kind == "o200k" else None

    def with_contraction(end: torch.Tensor) -> torch.Tensor:
        return end if contraction is None else end + text.at(contraction, end, 0)

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
    number_end = text.idx + 1 if kind == "tekken" else text.run_end(text.number)
    alts.add(text.number, torch.minimum(text.idx + 3, number_end))
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
    _whitespace(text, alts, kind)
    return alts.end


def _letter_class(text: SegmentText, kind: PatternKind) -> torch.Tensor:
    """What the pattern's letter runs are made of: ``\\p{L}``, or ``[\\p{L}\\p{M}]`` (Qwen3.5)."""
    return text.letter | text.mark if kind == "qwen35" else text.letter


def anchors(text: SegmentText, kind: PatternKind) -> torch.Tensor:
    """Positions where a piece starts whatever came before (a subset of the true starts)."""
    anchors = text.first.clone()
    letter = _letter_class(text, kind)
    previous_letter = text.previous(letter, False)
    previous_newline = text.previous(text.newline, False)
    if kind != "r50k":  # r50k's ' ?\p{N}++' can take the space before a number
        anchors |= text.number & ~text.previous(text.number, True)
    if kind in ("o200k", "tekken"):  # a contraction or a mark can continue a letter piece
        anchors |= previous_letter & ~(text.letter | text.mark | (text.cp == ord("'")))
        anchors |= previous_newline & ~(text.space | (text.cp == ord("/")))
    else:
        anchors |= previous_letter & ~letter
        anchors |= previous_newline & ~text.space
    return anchors


def piece_ends(text: SegmentText, kind: PatternKind) -> torch.Tensor:
    if kind == "r50k":
        return _ends_r50k(text)
    if kind in ("cl100k", "cl100k_hf", "llama3", "qwen2", "qwen35"):
        return _ends_cl100k_like(text, kind)
    if kind in ("o200k", "tekken"):
        return _ends_o200k(text, kind)
    if kind in ("bytes", "whole"):  # one piece per segment
        return text.seg_end
    raise ValueError(f"kind={kind!r} has no single-regex rules")


def sentencepiece_starts(text: SegmentText, kind: PatternKind) -> torch.Tensor:
    """Piece starts ``[n]`` bool of SentencePiece's words (only U+0020 is a space): each
    segment's first position and, for ``sp_prefix`` (`` *[^ ]+| +``), each space after a
    non-space (a word takes the spaces before it; spaces at the end are a piece), for
    ``sp_suffix`` (``[^ ]+ *| +``), each non-space after a space. A rule at each position,
    with no chain of matches to follow (unlike :func:`anchors` and :func:`piece_ends`)."""
    space = text.is_space_char
    word_start = space if kind == "sp_prefix" else ~space
    return text.first | (word_start & text.previous(~word_start, False))
