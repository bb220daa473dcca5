"""The split patterns tensortext reproduces exactly, and their kinds: plain data, no torch.

Each supported regex (tiktoken's r50k/GPT-2, cl100k and o200k, Llama-3's, Qwen2's, Qwen3.5's,
Mistral's Tekken, DeepSeek-V3's sequence of Hugging Face ``Split`` steps, and the splits of
SentencePiece BPE) maps to a :data:`PatternKind`, the name both encoders know it by: the tensor
engine (:mod:`tensortext.bpe.pretokenize`) and the host encoders (:mod:`tensortext.bpe.host`,
``csrc/``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, get_args

__all__ = [
    "CL100K_PATTERN",
    "DEEPSEEK_V3_MAIN",
    "DEEPSEEK_V3_SPLITS",
    "GPT2_PATTERN",
    "HF_PATTERNS",
    "HF_SPLIT_SEQUENCES",
    "KINDS",
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
    "split_sequence_kind",
]

PatternKind = Literal[
    "r50k",
    "cl100k",
    "cl100k_hf",
    "o200k",
    "llama3",
    "qwen2",
    "qwen35",
    "tekken",
    "deepseek_v3",
    "sp_prefix",
    "sp_suffix",
    "whole",
    "bytes",
]

# The three Split regexes of DeepSeek-V3's tokenizer.json, in order (each behavior="Isolated").
DEEPSEEK_V3_MAIN = (  # as in the file: \r and \n are the characters themselves
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+"
    "|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*"
    "|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)
DEEPSEEK_V3_SPLITS = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    DEEPSEEK_V3_MAIN,
)
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
# Mistral's Tekken (tekken.json's config["pattern"]): o200k's without the contraction suffixes,
# with single digits.
TEKKEN_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*""",
        r"""\p{N}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
# SentencePiece BPE's words: its text reaches the split with U+0020 for its U+2581. A word takes
# the spaces before it (sp_prefix) or after it (sp_suffix, `treat_whitespace_as_suffix`); a run
# of spaces with no word after (before) it is a piece of its own. Only U+0020 is a space here:
# tabs and newlines are word characters.
SP_PREFIX_PATTERN = r""" *[^ ]+| +"""
SP_SUFFIX_PATTERN = r"""[^ ]+ *| +"""
# No split: each ordinary segment is one piece.
WHOLE_PATTERN = r"""[\s\S]+"""

PATTERNS: dict[str, PatternKind] = {
    R50K_PATTERN: "r50k",
    GPT2_PATTERN: "r50k",
    CL100K_PATTERN: "cl100k",
    O200K_PATTERN: "o200k",
    LLAMA3_PATTERN: "llama3",
    QWEN2_PATTERN: "qwen2",
    QWEN35_PATTERN: "qwen35",
    TEKKEN_PATTERN: "tekken",
    SP_PREFIX_PATTERN: "sp_prefix",
    SP_SUFFIX_PATTERN: "sp_suffix",
    WHOLE_PATTERN: "whole",
}
# Hugging Face `tokenizers` runs the same strings through Oniguruma, where `{1,3}+` is not
# possessive but "one or more of {1,3}": cl100k's digit groups become whole digit runs there.
HF_PATTERNS: dict[str, PatternKind] = {**PATTERNS, CL100K_PATTERN: "cl100k_hf"}
# Hugging Face Sequences of Isolated Split regexes -> their kind.
HF_SPLIT_SEQUENCES: dict[tuple[str, ...], PatternKind] = {DEEPSEEK_V3_SPLITS: "deepseek_v3"}
KINDS: tuple[PatternKind, ...] = get_args(PatternKind)


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
            f"pass one of the r50k/GPT-2, cl100k_base, o200k_base, Llama-3, Qwen, Tekken or "
            f"SentencePiece patterns "
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
