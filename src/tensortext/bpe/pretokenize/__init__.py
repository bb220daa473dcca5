"""Regex-exact pre-tokenization as tensor operations over the codepoints of a whole batch.

Each supported split pattern (r50k/GPT-2, cl100k, o200k, Llama-3, Qwen2, Qwen3.5) is a
leftmost-first regex: the pieces are found one after another, each starting where the last one
ended. We reproduce it in three data-parallel steps, with no loop over characters:

1. **Local matches** (:mod:`.rules`). For *every* position ``i`` we compute where the pattern's
   match would end if a piece started at ``i`` (``piece_end [n]``). Each alternative of the
   pattern becomes a few elementwise rules over codepoint classes plus run ends (``\\p{L}++``
   ends where the run of letters ends: a reversed ``cummin``) and the last newline of a
   whitespace run (a ``cummax``). Backtracking is resolved analytically: ``\\s+(?!\\S)`` gives
   back one character, o200k's ``[upper]*[lower]+`` gives back to the run's last character that
   is in both sets, and so on.
2. **Anchors.** Positions where *every* match must start, whatever came before (segment starts,
   the first digit of a run, the character after a letter run, ...): they keep step 3 short.
3. **Reachability** (:func:`.splits.reachable`). The real piece starts are the positions
   reachable from the anchors through ``piece_end``; pointer doubling finds them in
   ``log2(longest chain)`` rounds.

Hugging Face's ``Sequence`` of ``Split`` steps (DeepSeek-V3) composes the same blocks: the pieces
of one step become the segments of the next, and a find-all with gaps replaces step 3
(:mod:`.splits`).

Segments are matched independently: ``$`` and the lookahead see a segment's end as the end of the
text (tiktoken runs its regex on the text between special tokens the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

from tensortext.bpe.pretokenize.rules import PatternKind, anchors, piece_ends
from tensortext.bpe.pretokenize.splits import (
    DEEPSEEK_V3_MAIN,
    DEEPSEEK_V3_SPLITS,
    deepseek_v3_starts,
    reachable,
)
from tensortext.bpe.pretokenize.text import SegmentText

__all__ = [
    "CL100K_PATTERN",
    "DEEPSEEK_V3_MAIN",
    "DEEPSEEK_V3_SPLITS",
    "GPT2_PATTERN",
    "LLAMA3_PATTERN",
    "O200K_PATTERN",
    "PATTERNS",
    "QWEN2_PATTERN",
    "QWEN35_PATTERN",
    "R50K_PATTERN",
    "PatternKind",
    "pattern_kind",
    "piece_starts",
    "split_sequence_kind",
]

# The exact regexes each kind reproduces (tiktoken's, GPT-2's original, Llama-3's and Qwen2's).
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
# Qwen2, Qwen2.5 and Qwen3 (their tokenizer.json's Split regex): Llama-3's with single digits.
QWEN2_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
    r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)
# Qwen3.5 and 3.6: Qwen2's with marks in letter runs (and so not in punctuation runs).
QWEN35_PATTERN = (
    r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"""
    r"""| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
)

PATTERNS: dict[str, PatternKind] = {
    R50K_PATTERN: "r50k",
    GPT2_PATTERN: "r50k",
    CL100K_PATTERN: "cl100k",
    O200K_PATTERN: "o200k",
    LLAMA3_PATTERN: "llama3",
    QWEN2_PATTERN: "qwen2",
    QWEN35_PATTERN: "qwen35",
}
# Hugging Face `tokenizers` runs the same strings through Oniguruma, where `{1,3}+` is not
# possessive but "one or more of {1,3}": cl100k's digit groups become whole digit runs there.
HF_PATTERNS: dict[str, PatternKind] = {**PATTERNS, CL100K_PATTERN: "cl100k_hf"}
# Hugging Face Sequences of Isolated Split regexes -> their kind.
HF_SPLIT_SEQUENCES: dict[tuple[str, ...], PatternKind] = {DEEPSEEK_V3_SPLITS: "deepseek_v3"}
KINDS: tuple[PatternKind, ...] = (
    "r50k",
    "cl100k",
    "cl100k_hf",
    "o200k",
    "llama3",
    "qwen2",
    "qwen35",
    "deepseek_v3",
    "bytes",
)


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
            f"pass one of the r50k/GPT-2, cl100k_base, o200k_base, Llama-3 or Qwen patterns "
            f"(tensortext.bpe.PATTERNS), a kind name {KINDS}, or pretokenize='bytes'"
        )
    return kind


def split_sequence_kind(patterns: Sequence[str]) -> PatternKind:
    """The kind of Hugging Face ``Split(Isolated)`` steps applied one after another.

    Raises:
        ValueError: for a sequence we cannot reproduce exactly (naming the ones we can).
    """
    if len(patterns) == 1:
        return pattern_kind(patterns[0], engine="hf")
    kind = HF_SPLIT_SEQUENCES.get(tuple(patterns))
    if kind is None:
        raise ValueError(
            f"a sequence of {len(patterns)} Split regexes ({patterns[0][:40]!r}, ...) is not one "
            f"tensortext reproduces exactly; known: {sorted(HF_SPLIT_SEQUENCES.values())}"
        )
    return kind


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
    text = SegmentText(codepoints, segment_lens.to(codepoints.device, torch.int64))
    if text.n == 0:
        return torch.zeros(0, dtype=torch.bool, device=codepoints.device)
    if kind == "bytes":  # one piece per segment
        return text.first
    if kind == "deepseek_v3":
        return deepseek_v3_starts(text)
    # Chains are contiguous: each piece's end is the next piece's start.
    return reachable(anchors(text, kind), piece_ends(text, kind))
