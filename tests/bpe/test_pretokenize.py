"""``piece_starts`` against the ``regex`` module, the exact oracle of every split pattern.

For each pattern in :data:`tensortext.bpe.PATTERNS`, the pieces of each segment must be exactly
``regex.findall(pat_str, segment)``: segments are matched independently (``$`` and the lookahead
see a segment's end as the end of the text), so several segments -- empty ones included -- go
into one call, and a segment gives the same starts alone as inside any batch.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
import torch
from bpe_strategies import ANY_CHAR, ATOMS, rich_texts, runs
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import regex_piece_starts, regex_pieces, split_by
from strategies import DEVICES, SETTINGS

from tensortext.bpe import PATTERNS, pattern_kind, piece_starts
from tensortext.bpe.patterns import (
    CL100K_PATTERN,
    DEEPSEEK_V3_SPLITS,
    GPT2_PATTERN,
    HF_PATTERNS,
    KINDS,
    LLAMA3_PATTERN,
    O200K_PATTERN,
    QWEN2_PATTERN,
    QWEN35_PATTERN,
    R50K_PATTERN,
    split_sequence_kind,
)

PATTERN_NAMES = {
    R50K_PATTERN: "r50k",
    GPT2_PATTERN: "gpt2",
    CL100K_PATTERN: "cl100k",
    O200K_PATTERN: "o200k",
    LLAMA3_PATTERN: "llama3",
    QWEN2_PATTERN: "qwen2",
    QWEN35_PATTERN: "qwen35",
}
ALL_PATTERNS = pytest.mark.parametrize(
    "pat_str", list(PATTERNS), ids=[PATTERN_NAMES.get(p, p[:20]) for p in PATTERNS]
)


def ours(segments: Sequence[str], kind: str, device: str = "cpu") -> list[bool]:
    codepoints = torch.tensor([ord(c) for s in segments for c in s], dtype=torch.int32)
    lens = torch.tensor([len(s) for s in segments], dtype=torch.int64)
    starts = piece_starts(codepoints.to(device), lens.to(device), kind)  # type: ignore[arg-type]
    assert starts.dtype == torch.bool
    assert starts.shape == (codepoints.numel(),)
    assert starts.device.type == torch.device(device).type
    return starts.cpu().tolist()


def assert_same_split(
    pat_str: str, segments: Sequence[str], device: str = "cpu", kind: str | None = None
) -> None:
    """Our starts for ``kind`` (default: ``pat_str``'s) == ``regex.findall(pat_str, ...)``."""
    kind = kind or PATTERNS[pat_str]
    got = ours(segments, kind, device)
    expected = regex_piece_starts(pat_str, segments)
    if got == expected:
        return
    # Locate the first differing segment and show both splits.
    offset = 0
    for index, segment in enumerate(segments):
        part = got[offset : offset + len(segment)]
        if part != expected[offset : offset + len(segment)]:
            raise AssertionError(
                f"{kind}: segment {index} of {len(segments)} splits differently\n"
                f"  text     = {segment!r}\n"
                f"  regex    = {regex_pieces(pat_str, segment)!r}\n"
                f"  ours     = {split_by(part, segment)!r}\n"
                f"  segments = {list(segments)!r}"
            )
        offset += len(segment)
    raise AssertionError("flags differ but no segment does")  # pragma: no cover


# --------------------------------------------------------------------------------------------
# Named cases
# --------------------------------------------------------------------------------------------

CASES = {
    "empty": "",
    "one_letter": "a",
    "one_space": " ",
    "spaces": "     ",
    "space_word": " hello",
    "spaces_word": "   hello   world  ",
    "trailing_spaces": "hello   ",
    "newlines": "\n\n\n",
    "space_newline": " \n \n",
    "crlf": "a\r\n\r\nb\r\n",
    "newline_spaces_word": "x\n   y",
    "tabs": "\t\tx\t",
    "mixed_ws": " \t\n \u3000\xa0x\u2028\x85\x0b\x1c y",
    "digits": "1234567 89 0",
    "unicode_digits": "٣٤٥٦ ½¹ x12a3",
    "punct": "!!! ?? , .",
    "punct_newline": "!!\n\n\n a",
    "punct_slash": "a/b//c /\n/",
    "contractions": "it's we'RE they'll I'M 'd 'S 'LL 'x",
    "contraction_start": "'sa 'llama",
    "long_s": "'\u017f '\u017fx",
    "http": "HTTPServer's",
    "upper_lower": "ABCdef DEFghi GHI jKL",
    "titlecase": "\u01c5a \u01c5 A\u01c5b \u01c8\u01c8",
    "modifier": "ʰaʰ Aʰ ー中文",
    "cjk": "你好\uff0c世界\uff01こんにちは",
    "devanagari": "नमस्ते दुनिया किताब",
    "marks": "e\u0301 \u0301a A\u0301B \u0301\u0301",
    "emoji": "hi 👨\u200d👩\u200d👧\u200d👦! 👍🏽❤\ufe0f",
    "nul": "a\x00b \x00",
    "prefix_punct_letter": "(hello) [World] -x",
    "apostrophe_upper": "DON'T Don't don'T",
    "only_marks": "\u0301\u0302\u0303",
    "ws_before_punct": "a   !b",
    "ws_end_newline": "a \n",
}


@ALL_PATTERNS
@pytest.mark.parametrize("case", list(CASES))
def test_named_cases(pat_str: str, case: str) -> None:
    assert_same_split(pat_str, [CASES[case]])


@ALL_PATTERNS
def test_named_cases_in_one_batch(pat_str: str) -> None:
    assert_same_split(pat_str, list(CASES.values()))


@ALL_PATTERNS
@pytest.mark.parametrize("atom", ATOMS, ids=[f"{i}:{a!r}" for i, a in enumerate(ATOMS)])
def test_atoms_in_context(pat_str: str, atom: str) -> None:
    """Every atom of the rich alphabet alone, doubled, and between letters/spaces/digits."""
    contexts = ["{}", "{}{}", "a{}b", " {} ", "A{}a", "1{}2", "'{}s", "\n{}\n", "x {}", "{}  "]
    assert_same_split(pat_str, [c.format(atom, atom) for c in contexts])


# --------------------------------------------------------------------------------------------
# Hypothesis
# --------------------------------------------------------------------------------------------


@ALL_PATTERNS
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(segments=st.lists(rich_texts(), min_size=1, max_size=5))
def test_rich_text_matches_regex(pat_str: str, segments: list[str], device: str) -> None:
    assert_same_split(pat_str, segments, device)


@ALL_PATTERNS
@SETTINGS
@given(segments=st.lists(st.text(alphabet=ANY_CHAR, max_size=30), min_size=1, max_size=5))
def test_random_text_matches_regex(pat_str: str, segments: list[str]) -> None:
    assert_same_split(pat_str, segments)


@ALL_PATTERNS
@SETTINGS
@given(segments=st.lists(runs(), min_size=1, max_size=4))
def test_runs_match_regex(pat_str: str, segments: list[str]) -> None:
    assert_same_split(pat_str, segments)


@ALL_PATTERNS
@SETTINGS
@given(
    segments=st.lists(rich_texts(max_atoms=12), min_size=1, max_size=6),
    data=st.data(),
)
def test_segment_alone_equals_in_batch(
    pat_str: str, segments: list[str], data: st.DataObject
) -> None:
    """Segments are independent: each one's starts are the same alone and inside a batch (in
    any order, next to inserted empty segments)."""
    kind = PATTERNS[pat_str]
    alone = [ours([segment], kind) for segment in segments]
    entries: list[tuple[str, int]] = []  # (segment, index in `segments`; -1: inserted empty)
    for index in data.draw(st.permutations(range(len(segments)))):
        if data.draw(st.booleans()):
            entries.append(("", -1))
        entries.append((segments[index], index))
    flags = ours([segment for segment, _ in entries], kind)
    offset = 0
    for segment, index in entries:
        part = flags[offset : offset + len(segment)]
        offset += len(segment)
        if index >= 0:
            assert part == alone[index], (
                f"segment {segment!r} splits differently in the batch {entries!r}:\n"
                f"  alone    = {split_by(alone[index], segment)!r}\n"
                f"  in batch = {split_by(part, segment)!r}"
            )


def test_empty_and_zero_length_segments() -> None:
    for kind in KINDS:
        empty = piece_starts(
            torch.zeros(0, dtype=torch.int32), torch.zeros(0, dtype=torch.int64), kind
        )
        assert empty.shape == (0,)
        none = piece_starts(
            torch.zeros(0, dtype=torch.int32), torch.zeros(3, dtype=torch.int64), kind
        )
        assert none.shape == (0,)
        assert ours(["", "ab", "", "", " c", ""], kind)[0]  # first char of a segment starts a piece


@SETTINGS
@given(segments=st.lists(rich_texts(), min_size=1, max_size=5))
def test_bytes_kind_is_one_piece_per_segment(segments: list[str]) -> None:
    expected = [i == 0 for s in segments for i in range(len(s))]
    assert ours(segments, "bytes") == expected


# Hugging Face runs split regexes with Oniguruma, where `{1,3}+` is not possessive but a repeat
# of the interval: cl100k's `\p{N}{1,3}+` there means `(?:\p{N}{1,3})+`, the whole digit run.
HF_ORACLES = {CL100K_PATTERN: CL100K_PATTERN.replace(r"\p{N}{1,3}+", r"(?:\p{N}{1,3})+")}
HF_ONLY = [p for p in HF_PATTERNS if HF_PATTERNS[p] != PATTERNS.get(p)]


def test_hf_oracles_cover_hf_only_kinds() -> None:
    assert set(HF_ONLY) == set(HF_ORACLES)
    assert all(oracle != p for p, oracle in HF_ORACLES.items())


@pytest.mark.parametrize("pat_str", HF_ONLY, ids=[HF_PATTERNS[p] for p in HF_ONLY])
@SETTINGS
@given(
    segments=st.lists(
        st.one_of(rich_texts(), runs(), st.text(alphabet=ANY_CHAR, max_size=20)),
        min_size=1,
        max_size=5,
    )
)
def test_hf_kinds_match_oniguruma_reading(pat_str: str, segments: list[str]) -> None:
    assert_same_split(HF_ORACLES[pat_str], segments, kind=HF_PATTERNS[pat_str])


@pytest.mark.parametrize("pat_str", HF_ONLY, ids=[HF_PATTERNS[p] for p in HF_ONLY])
@pytest.mark.parametrize("case", list(CASES))
def test_hf_kinds_named_cases(pat_str: str, case: str) -> None:
    assert_same_split(HF_ORACLES[pat_str], [CASES[case]], kind=HF_PATTERNS[pat_str])


def test_pattern_kind() -> None:
    for pat_str, kind in PATTERNS.items():
        assert pattern_kind(pat_str) == kind
    for kind in KINDS:
        assert pattern_kind(kind) == kind
    for pat_str, kind in HF_PATTERNS.items():
        assert pattern_kind(pat_str, engine="hf") == kind
    assert pattern_kind(CL100K_PATTERN, engine="hf") == "cl100k_hf"
    with pytest.raises(ValueError, match="PATTERNS"):
        pattern_kind(r"\w+|\s+")
    with pytest.raises(ValueError):
        pattern_kind(CL100K_PATTERN + " ")


def test_split_sequence_kind() -> None:
    assert split_sequence_kind([QWEN2_PATTERN]) == "qwen2"
    assert split_sequence_kind([CL100K_PATTERN]) == "cl100k_hf"
    assert split_sequence_kind(list(DEEPSEEK_V3_SPLITS)) == "deepseek_v3"
    with pytest.raises(ValueError, match="deepseek_v3"):
        split_sequence_kind(list(DEEPSEEK_V3_SPLITS[:2]))
    with pytest.raises(ValueError, match="PATTERNS"):
        split_sequence_kind([r"\w+"])


# ------------------------------------------------------------------ against tokenizers itself
# Hugging Face Split sequences, checked against `tokenizers`' own splitting (Oniguruma), the
# library that runs these files: Qwen2's and Qwen3.5's regexes, DeepSeek-V3's three Isolated Splits.
ONIGURUMA = {
    "qwen2": (QWEN2_PATTERN,),
    "qwen35": (QWEN35_PATTERN,),
    "deepseek_v3": DEEPSEEK_V3_SPLITS,
}
SPLIT_KINDS = pytest.mark.parametrize("kind", list(ONIGURUMA))
CJK_RUNS = runs(chars="日本語カタカナーひらがな\u3007中文\uff76\uff111a ,\n-'")
DEEPSEEK_CASES = {
    **CASES,
    "cjk_kana": "日本語のテキストとカタカナ、ひらがな。中文文本\uff0c包括标点符号\uff01",
    "cjk_digits": "第1234567章12漢字\uff13\uff14\uff15",
    "mixed_scripts": "abc日本def中文ghi한국어 текст",
    "ascii_punct_letters": "-word .Word _x #tag @me $5 \\n x'll ()",
    "prefix_chars": "\x00a \u00a0b \u3000c \u0301d 1e ½f \u200bg",
    "punct_newlines": "!!\n\n?? \n;;\r\n x",
    "marks": "\u0301\u0301a\u0301 \u093f\u093f",
    "marks_after_punct": "!\u0301a ?\u0301\u0301 \u0301 x\u0301'S \u20dd\u20dd",
}


def assert_same_as_tokenizers(kind: str, segments: list[str], device: str = "cpu") -> None:
    from oracles.hf import hf_piece_starts

    got = ours(segments, kind, device)
    expected = hf_piece_starts(ONIGURUMA[kind], segments)
    if got != expected:
        text = "".join(segments)
        raise AssertionError(
            f"{kind}: {segments!r}\n  ours       = {split_by(got, text)!r}\n"
            f"  tokenizers = {split_by(expected, text)!r}"
        )


@SPLIT_KINDS
@pytest.mark.parametrize("case", list(DEEPSEEK_CASES))
def test_hf_split_named_cases(kind: str, case: str) -> None:
    assert_same_as_tokenizers(kind, [DEEPSEEK_CASES[case]])


@SPLIT_KINDS
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(
    segments=st.lists(
        st.one_of(rich_texts(), runs(), CJK_RUNS, st.text(alphabet=ANY_CHAR, max_size=20)),
        min_size=1,
        max_size=5,
    )
)
def test_hf_split_matches_tokenizers(kind: str, device: str, segments: list[str]) -> None:
    assert_same_as_tokenizers(kind, segments, device)


@SPLIT_KINDS
@SETTINGS
@given(segments=st.lists(st.sampled_from(list(DEEPSEEK_CASES.values())), min_size=1, max_size=6))
def test_hf_split_cases_in_batches(kind: str, segments: list[str]) -> None:
    """Segments stay independent in a batch (each Split step resegments inside them)."""
    assert_same_as_tokenizers(kind, segments)
