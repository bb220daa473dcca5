"""The split kinds of SentencePiece BPE (``sp_prefix``, ``sp_suffix``, ``whole``) and Mistral's
Tekken, in every engine: the C encoder's scanner, the tensor engine's ``piece_starts`` and the
Python encoder's ``re`` translation each cut the pieces of ``regex.findall`` of the kind's
pattern; and a small byte-level encoding of each kind gives tiktoken's IDs (the same pattern
and ranks) on every backend.

(``test_pretokenize.py``, ``test_native.py`` and ``test_host.py`` run every pattern of
``PATTERNS``, these four included, through their own, wider, tables.)
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any
from unittest import mock

import pytest
import torch
from bpe_strategies import TIKTOKEN_CHAR, rich_texts, runs
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import regex_piece_starts, regex_pieces, split_by, tiktoken_toy
from strategies import DEVICES, SETTINGS

from tensortext.bpe import Encoding, native
from tensortext.bpe.host import HostEncoder
from tensortext.bpe.patterns import (
    KINDS,
    PATTERNS,
    SP_PREFIX_PATTERN,
    SP_SUFFIX_PATTERN,
    TEKKEN_PATTERN,
    WHOLE_PATTERN,
    pattern_kind,
)
from tensortext.bpe.pretokenize import piece_starts
from tensortext.bpe.unicode import flag_bytes
from tensortext.bpe.vocab import Vocab

NATIVE = native._native
KIND_PATTERNS = {
    "sp_prefix": SP_PREFIX_PATTERN,
    "sp_suffix": SP_SUFFIX_PATTERN,
    "whole": WHOLE_PATTERN,
    "tekken": TEKKEN_PATTERN,
}
BY_KIND = pytest.mark.parametrize("kind", list(KIND_PATTERNS))
BYTES = [bytes([byte]) for byte in range(256)]
# SentencePiece's text reaches the split with U+0020 for its U+2581: runs of spaces between
# words, other whitespace (which is no space to these patterns), letters, digits, emoji.
SP_CHARS = " \u2581\n\t\r\u3000\xa0aZ1٣日é\u0301'!/😀"
TEXTS = st.one_of(
    rich_texts(other=TIKTOKEN_CHAR),
    runs(chars=SP_CHARS),
    st.text(alphabet=SP_CHARS, max_size=40),
)
CASES = {
    "empty": "",
    "one_space": " ",
    "all_spaces": "     ",
    "newlines": "\n\n\n",
    "space_newline": " \n \n ",
    "crlf": "a\r\n\r\nb\r\n",
    "words": "Hello world",
    "spaces_around": "  Hello   world  ",
    "sentencepiece_space": "\u2581Hello\u2581\u2581world\u2581",
    "tabs": "\tx\t y\t",
    "other_spaces": "a\u3000b\xa0c \u2028d",
    "contractions": "it's DON'T we'LL 'd",
    "digits": "1234567 89 ١٢٣ ½",
    "unicode": "日本語のテキスト Ünïcödé e\u0301 ǅemo ÀÀ日A",
    "emoji": "hi 👨\u200d👩\u200d👧 ! 👍🏽❤\ufe0f  😀",
    "code": "def f(x):\n    return x ** 2  # done\n",
    "punct_slash": "a/b//c /\n/ x?!\r\n\n",
}


def engine_pieces(kind: str, text: str, device: str = "cpu") -> dict[str, list[str]]:
    """The pieces of ``text`` from each engine's split of ``kind``."""
    codepoints = torch.tensor([ord(c) for c in text], dtype=torch.int32, device=device)
    starts = piece_starts(codepoints, torch.tensor([len(text)]), kind)  # type: ignore[arg-type]
    vocab = Vocab.from_ranks("bytes", kind, {token: i for i, token in enumerate(BYTES)}, {})
    pieces = {
        "tensor engine": split_by(starts.cpu().tolist(), text),
        "Python encoder": HostEncoder(vocab).split(text),
    }
    if NATIVE is not None:
        code = native._KIND_CODES[kind]
        encoder = NATIVE.Encoder(BYTES, list(range(256)), flag_bytes(), code)
        pieces["C encoder"] = encoder.split(text)
    return pieces


def assert_engines_split_as_regex(kind: str, text: str, device: str = "cpu") -> None:
    expected = regex_pieces(KIND_PATTERNS[kind], text)
    for engine, pieces in engine_pieces(kind, text, device).items():
        assert pieces == expected, f"{kind}, {engine}: {text!r}\n  {pieces!r}\n  != {expected!r}"


def test_the_kinds_are_known_by_name_and_pattern() -> None:
    for kind, pat_str in KIND_PATTERNS.items():
        assert kind in KINDS
        assert PATTERNS[pat_str] == kind
        assert pattern_kind(kind) == kind
        assert pattern_kind(pat_str) == kind
        assert pattern_kind(pat_str, engine="hf") == kind
        if NATIVE is not None:
            assert native.native_applies(kind)


@BY_KIND
@pytest.mark.parametrize("case", list(CASES))
def test_named_cases(kind: str, case: str) -> None:
    assert_engines_split_as_regex(kind, CASES[case])


@BY_KIND
@pytest.mark.parametrize("device", DEVICES)
@SETTINGS
@given(text=TEXTS)
def test_every_engine_splits_as_regex(kind: str, device: str, text: str) -> None:
    assert_engines_split_as_regex(kind, text, device)


@BY_KIND
@SETTINGS
@given(segments=st.lists(TEXTS, min_size=1, max_size=5))
def test_segments_split_alone_in_one_batch(kind: str, segments: list[str]) -> None:
    """The tensor engine splits each segment of a batch as if it were alone."""
    codepoints = torch.tensor([ord(c) for s in segments for c in s], dtype=torch.int32)
    lens = torch.tensor([len(s) for s in segments], dtype=torch.int64)
    got = piece_starts(codepoints, lens, kind).tolist()  # type: ignore[arg-type]
    assert got == regex_piece_starts(KIND_PATTERNS[kind], segments), segments


# ------------------------------------------------------------------ whole encodings
# Byte tokens and merges that span the splits' boundaries (a space and a word, spaces, a
# newline inside a word, CJK), so that a wrong cut changes the IDs.
MERGES = [
    "  ",
    " t",
    "th",
    " th",
    "he",
    "the",
    " the",
    "in",
    "ing",
    "    ",
    "\n ",
    "e\n",
    "日本",
    " w",
    "or",
    "ld",
    "12",
]
RANKS = {
    **{token: i for i, token in enumerate(BYTES)},
    **{token.encode(): 256 + i for i, token in enumerate(MERGES)},
    b"\xf0\x9f": 256 + len(MERGES),  # the first half of many emoji
}
ENCODE_TEXTS = st.lists(
    st.one_of(TEXTS, st.sampled_from(["the thing", "  the  ", "日本 12\n the", "world\n wor"])),
    max_size=4,
)


@cache
def toy_encodings(kind: str) -> tuple[Encoding, Encoding, Any]:
    """The encoding of ``RANKS`` split by ``kind`` (on the C encoder, where built), the same on
    the Python encoder (``TENSORTEXT_NATIVE`` is read at the first call), and tiktoken's."""
    pat_str = KIND_PATTERNS[kind]
    enc = Encoding("toy", pat_str=pat_str, mergeable_ranks=RANKS, special_tokens={})
    with mock.patch.dict(os.environ, {"TENSORTEXT_NATIVE": "0"}):
        python = Encoding._from_vocab(enc._vocab)
        python.encode_ordinary("warm up")
    return enc, python, tiktoken_toy(RANKS, pat_str=pat_str)


def assert_encodings_give_tiktokens_ids(
    kind: str, texts: list[str], *, tensor_engine: bool
) -> None:
    enc, python, reference = toy_encodings(kind)
    expected = reference.encode_ordinary_batch(texts)
    rows = {
        "encode_ordinary_batch": enc.encode_ordinary_batch(texts),
        "Python encoder": python.encode_ordinary_batch(texts),
    }
    if tensor_engine:
        ids, lengths = enc.encode_batch_to_tensor(texts, merge_backend="torch")
        rows["tensor engine"] = [ids[b, : lengths[b]].tolist() for b in range(len(texts))]
    for backend, got in rows.items():
        for text, row, want in zip(texts, got, expected, strict=True):
            assert row == want, f"{kind}, {backend}: {text!r}: {row} != tiktoken's {want}"


@BY_KIND
def test_encodings_of_named_cases(kind: str) -> None:
    assert_encodings_give_tiktokens_ids(kind, list(CASES.values()), tensor_engine=True)


@BY_KIND
@SETTINGS
@given(texts=ENCODE_TEXTS)
def test_encodings_give_tiktokens_ids(kind: str, texts: list[str]) -> None:
    """(The tensor engine, a tenth of a second a call on a CPU, runs the named cases.)"""
    assert_encodings_give_tiktokens_ids(kind, texts, tensor_engine=False)
