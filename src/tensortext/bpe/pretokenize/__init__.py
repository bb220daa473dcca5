"""Regex-exact pre-tokenization as tensor operations over the codepoints of a whole batch.

Each supported split pattern (r50k/GPT-2, cl100k, o200k, Llama-3, Qwen2, Qwen3.5, Tekken) is a
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

SentencePiece's words (``sp_prefix``, ``sp_suffix``) start where a space follows a non-space
(or the reverse): a rule at each position, no chain. ``whole`` and ``bytes`` keep each segment
whole.

Segments are matched independently: ``$`` and the lookahead see a segment's end as the end of the
text (tiktoken runs its regex on the text between special tokens the same way).
"""

from __future__ import annotations

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)

# isort: split
import torch

from tensortext.bpe.patterns import (
    CL100K_PATTERN,
    DEEPSEEK_V3_MAIN,
    DEEPSEEK_V3_SPLITS,
    GPT2_PATTERN,
    LLAMA3_PATTERN,
    O200K_PATTERN,
    PATTERNS,
    QWEN2_PATTERN,
    QWEN35_PATTERN,
    R50K_PATTERN,
    SP_PREFIX_PATTERN,
    SP_SUFFIX_PATTERN,
    TEKKEN_PATTERN,
    WHOLE_PATTERN,
    PatternKind,
    pattern_kind,
    split_sequence_kind,
)
from tensortext.bpe.pretokenize.rules import anchors, piece_ends, sentencepiece_starts
from tensortext.bpe.pretokenize.splits import deepseek_v3_starts, reachable
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
    "SP_PREFIX_PATTERN",
    "SP_SUFFIX_PATTERN",
    "TEKKEN_PATTERN",
    "WHOLE_PATTERN",
    "PatternKind",
    "pattern_kind",
    "piece_starts",
    "split_sequence_kind",
]


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
    if kind in ("bytes", "whole"):  # one piece per segment
        return text.first
    if kind in ("sp_prefix", "sp_suffix"):
        return sentencepiece_starts(text, kind)
    if kind == "deepseek_v3":
        return deepseek_v3_starts(text)
    # Chains are contiguous: each piece's end is the next piece's start.
    return reachable(anchors(text, kind), piece_ends(text, kind))
