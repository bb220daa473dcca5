"""The C encoder (``tensortext.bpe._native``, loaded by ``tensortext.bpe.native``): its split
against the ``regex`` module, its merges against tiktoken's (short pieces and the heap of long
ones), whole texts against tiktoken and the pure-Python host encoder, its threads, the fallback
without it, and bad input to the extension type.

``Encoding``'s list-returning methods run it wherever it applies, so the parity tests of
``test_encoding.py`` and ``test_drop_in.py`` check it too; this file checks the parts alone.
"""

from __future__ import annotations

import dataclasses
import os
import random
import subprocess
import sys
from functools import cache
from typing import Any

import pytest
import torch
from bpe_strategies import ANY_CHAR, TIKTOKEN_CHAR, rich_texts, runs
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import naive_byte_pair_merge, regex_pieces, tiktoken_reference
from oracles.hf import hf_pieces
from strategies import SETTINGS

from tensortext.bpe import Encoding, get_encoding, native
from tensortext.bpe.backends import choose_backend, python_backend
from tensortext.bpe.host import python_split_available
from tensortext.bpe.patterns import DEEPSEEK_V3_SPLITS, PATTERNS
from tensortext.bpe.text import prepare_segments
from tensortext.bpe.unicode import flag_bytes

NATIVE = native._native
# (tests/test_static.py fails where a C compiler is found but the extension is not built)
pytestmark = pytest.mark.skipif(NATIVE is None, reason="built without a C compiler")

PATTERN_IDS = [f"{kind}-{index}" for index, kind in enumerate(PATTERNS.values())]
BY_PATTERN = pytest.mark.parametrize("pat_str", list(PATTERNS), ids=PATTERN_IDS)
TIKTOKEN_NAMES = ["r50k_base", "cl100k_base", "o200k_base"]
BYTES = [bytes([byte]) for byte in range(256)]
# Pieces longer than csrc/tables.h's SHORT_PIECE (256 bytes): the heap merges them.
LONG_PIECES = st.lists(
    st.sampled_from([b"a", b"b", b"e", b" ", b"th", b"in", b"\xe4\xb8\x80", b"\xc3\xa9", b"\x00"]),
    min_size=200,
    max_size=400,
).map(b"".join)


# Kana and CJK at the edges of DeepSeek-V3's ranges (U+9FA5 in, U+9FA6 out), kana marks and
# punctuation inside them, digits, ASCII punctuation before letters.
DEEPSEEK_CHARS = "日本あーカ\u30a0・\u309b\u3099\u9fa5\u9fa6\u3040\u30ff12345 .a-Z\n\r'"


def c_encoder(enc: Encoding) -> Any:
    """The C encoder ``enc`` runs on a CPU (its backend's, built once)."""
    backend = enc._backends.get()
    assert backend.name == "c"
    return backend.encoder  # type: ignore[attr-defined]


def splitter(pat_str: str) -> Any:
    """A C encoder with the 256 byte tokens and ``pat_str``'s split rules (or a kind's)."""
    kind = native._KIND_CODES[PATTERNS.get(pat_str, pat_str)]
    return NATIVE.Encoder(BYTES, list(range(256)), flag_bytes(), kind)


@BY_PATTERN
@SETTINGS
@given(text=rich_texts(other=ANY_CHAR) | runs())
def test_split_is_the_regex_modules(pat_str: str, text: str) -> None:
    assert splitter(pat_str).split(text) == regex_pieces(pat_str, text)


@BY_PATTERN
@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "  \n  ",  # \s++$ (r50k, cl100k) against \s*[\r\n]+ (o200k, Llama-3)
        "a \n\n b\r\n",
        "\u0301123",  # a mark before digits: o200k's letter piece without its prefix
        "!\u0301x",
        "ÀÀ日A日AA.",  # o200k: the upper run gives back to its last Lm/Lo/mark
        "ǅemo WORLD'S it'\u017f I'LL",
        "1234567 ١٢٣٤",
        "x/\n/y ?!\r\n\n",
        "😀\U0001d400 𐐀\U0010fffd",
    ],
)
def test_split_hand_picked(pat_str: str, text: str) -> None:
    assert splitter(pat_str).split(text) == regex_pieces(pat_str, text)


@SETTINGS
@given(text=rich_texts(other=ANY_CHAR) | runs() | st.text(alphabet=DEEPSEEK_CHARS))
def test_deepseek_v3_split_is_tokenizers(text: str) -> None:
    """DeepSeek-V3's Sequence of three Isolated splits: ``tokenizers``' own pre-tokenizer."""
    assert splitter("deepseek_v3").split(text) == hf_pieces(DEEPSEEK_V3_SPLITS, text)


@pytest.mark.parametrize("name", TIKTOKEN_NAMES)
@SETTINGS
@given(piece=st.binary(min_size=1, max_size=48) | LONG_PIECES)
def test_merges_are_tiktokens(name: str, piece: bytes) -> None:
    encoder = c_encoder(get_encoding(name))
    assert encoder.encode_piece(piece) == naive_byte_pair_merge(
        get_encoding(name)._vocab.mergeable, piece
    )


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR) | runs(), max_size=4))
def test_texts_against_tiktoken_and_the_python_encoder(name: str, texts: list[str]) -> None:
    enc = get_encoding(name)
    expected = tiktoken_reference(name).encode_ordinary_batch(texts)
    assert enc.encode_ordinary_batch(texts, num_threads=1) == expected
    assert python_backend(enc._vocab).host.encode_many(texts) == expected


@pytest.mark.parametrize("name", TIKTOKEN_NAMES)
def test_hard_inputs_against_tiktoken(name: str) -> None:
    rng = random.Random(7)
    texts = [
        "",
        "a",
        "\ud800abc x\udfff",  # lone surrogates: tiktoken's U+FFFD
        "a" * 100_000,  # one long piece of one letter (the heap)
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(50_000)),
        "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(20_000)),  # one CJK piece
        "".join(
            rng.choice(" \n\t日本é\u0301ǅ's\u017f1½/!😀") for _ in range(1_000_000)
        ),  # 1M chars
    ]
    reference = tiktoken_reference(name)
    enc = get_encoding(name)
    for text in texts:
        assert enc.encode(text, disallowed_special=()) == reference.encode(
            text, disallowed_special=()
        ), text[:40]


def test_threads_give_the_same_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call above THREADS_MIN_CHARS is cut into one run of texts per thread; the rows come
    back in order and equal tiktoken's, with special tokens between segments."""
    chunk_counts: list[int] = []
    balanced = native.balanced_chunks

    def spy(texts: list[str], count: int) -> list[list[str]]:
        chunks = balanced(texts, count)
        chunk_counts.append(len(chunks))
        return chunks

    monkeypatch.setattr(native, "balanced_chunks", spy)
    monkeypatch.setattr(native, "usable_cores", lambda: 4)
    rng = random.Random(3)
    alphabet = "abc XYZ 日本語 é\u0301 123 !? \n\t 😀 '"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 3000))) for _ in range(97)]
    texts[5] += "<|endoftext|>" + texts[6]
    reference = tiktoken_reference("cl100k_base")
    expected = reference.encode_batch(texts, allowed_special="all")
    enc = get_encoding("cl100k_base")
    for _ in range(3):
        assert enc.encode_batch(texts, num_threads=4, allowed_special="all") == expected
    assert chunk_counts == [4, 4, 4]
    monkeypatch.setattr(native, "THREADS_MIN_CHARS", 10**9)  # a small call: one thread
    assert enc.encode_batch(texts, num_threads=4, allowed_special="all") == expected
    assert chunk_counts == [4, 4, 4]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@SETTINGS
@given(
    texts=st.lists(
        st.lists(
            rich_texts(other=TIKTOKEN_CHAR) | st.sampled_from(["<|endoftext|>", "<|fim_prefix|>"]),
            max_size=4,
        ).map("".join),
        max_size=5,
    )
)
def test_flat_tensors_with_special_tokens(name: str, texts: list[str]) -> None:
    """On a CPU, ``encode_batch_to_flat`` (``merge_backend="auto"``) takes the C encoder's flat
    output and puts the special tokens between the segments: tiktoken's rows."""
    enc = get_encoding(name)
    options: dict[str, Any] = {"allowed_special": enc.special_tokens_set - {"<|fim_prefix|>"}}
    options["disallowed_special"] = ()
    flat = enc.encode_batch_to_flat(texts, **options)
    assert flat.ids.dtype == flat.lengths.dtype == torch.int64
    assert flat.tolist() == tiktoken_reference(name).encode_batch(texts, **options)
    assert (
        flat.tolist() == enc.encode_batch_to_flat(texts, merge_backend="torch", **options).tolist()
    )


def test_switched_off_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = Encoding._from_vocab(get_encoding("o200k_base")._vocab)
    monkeypatch.setenv("TENSORTEXT_NATIVE", "0")
    assert not native.native_available()
    text = "Grüße, 世界! it's 2026 😀"
    assert enc.encode(text) == tiktoken_reference("o200k_base").encode(text)
    assert enc._backends.get().name == "python"  # chosen at the first encode, and kept
    monkeypatch.setenv("TENSORTEXT_NATIVE", "1")
    assert enc._backends.get().name == "python"


@pytest.mark.parametrize("value", ["1", "true", "True", "YES", "on", "On", "", " yes "])
def test_switched_on_by_the_usual_spellings(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TENSORTEXT_NATIVE", value)
    assert native.native_available()
    assert choose_backend(get_encoding("o200k_base")._vocab) == "c"


@pytest.mark.parametrize("value", ["0", "false", "FALSE", "No", "off", "OFF", " 0"])
def test_switched_off_by_the_usual_spellings(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TENSORTEXT_NATIVE", value)
    assert not native.native_available()
    assert choose_backend(get_encoding("o200k_base")._vocab) == "python"


@pytest.mark.parametrize("value", ["garbage", "2", "-1", "n", "disable", "offf", "x" * 1000])
def test_other_values_are_refused_at_first_use(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("TENSORTEXT_NATIVE", value)
    accepted = "1/true/yes/on .* 0/false/no/off"
    with pytest.raises(ValueError, match=f"^TENSORTEXT_NATIVE=.* {accepted}") as caught:
        choose_backend(get_encoding("o200k_base")._vocab)
    assert len(str(caught.value)) < 200  # the value is cut, not printed whole


def test_a_bad_value_does_not_break_the_import() -> None:
    """Read when an encoding first encodes: ``import tensortext`` works, ``encode`` says."""
    program = (
        "import tensortext\n"
        "enc = tensortext.get_encoding('r50k_base')\n"
        "try:\n"
        "    enc.encode('hi')\n"
        "except ValueError as error:\n"
        "    print(error)\n"
    )
    env = {**os.environ, "TENSORTEXT_NATIVE": "maybe"}
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.startswith("TENSORTEXT_NATIVE='maybe' is not understood"), result.stdout


def test_the_segment_limit_is_named_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A segment (a text, or a part between allowed special tokens) over the C encoder's
    limit: a ``ValueError`` naming it and the fix, from every method that runs the C encoder
    (the limit made small here; the real one is checked against the C encoder below)."""
    enc = get_encoding("r50k_base")
    monkeypatch.setattr(native, "MAX_SEGMENT_CHARS", 10)
    message = r"a text holds a segment of 11 characters; the C encoder takes at most 10 .*split"
    calls = [enc.encode, enc.encode_ordinary, lambda text: enc.encode_batch(["ok", text]),
             lambda text: enc.encode_batch_to_tensor(["ok", text])]  # fmt: skip
    for call in calls:
        with pytest.raises(ValueError, match=message):
            call("a" * 11)
    cut = "a" * 10 + "<|endoftext|>" + "a" * 10  # two segments of 10
    assert enc.encode(cut, allowed_special="all") == tiktoken_reference("r50k_base").encode(
        cut, allowed_special="all"
    )


def test_the_segment_limit_is_the_c_encoders() -> None:
    """The C encoder refuses one character more than :data:`native.MAX_SEGMENT_CHARS`
    (2**30 - 2): a 1 GiB string, refused before any work."""
    assert native.MAX_SEGMENT_CHARS == 2**30 - 2
    too_long = "a" * (native.MAX_SEGMENT_CHARS + 1)
    with pytest.raises(ValueError, match=r"2\*\*30"):
        splitter("cl100k").encode_many([too_long])
    with pytest.raises(ValueError, match=r"segment of 1,073,741,823 characters.*1,073,741,822"):
        native.threaded_encoder(splitter("cl100k"), 1)([too_long])


@pytest.mark.parametrize("family", ["qwen3", "deepseek_v3"])
@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR) | runs(), max_size=4))
def test_merges_lists_against_tokenizers(family: str, texts: list[str]) -> None:
    """Qwen3's and DeepSeek-V3's tokenizer.json (merges lists: ranks are not IDs) in the C
    encoder: the IDs of ``tokenizers``, of the Python host encoder (Qwen3) and of the tensor
    engine. (``test_merge.py`` draws random merges lists, with and without ``ignore_merges``,
    against ``tokenizers`` too.)"""
    from oracles.hf import hf_tokenizer

    enc = hf_encoding(family)
    assert not enc._vocab.ranks_are_ids and enc._backends.get().name == "c"
    reference = hf_tokenizer(family)
    expected = [reference.encode(text, add_special_tokens=False).ids for text in texts]
    assert enc.encode_ordinary_batch(texts) == expected
    if python_split_available(enc._vocab.kind):  # not DeepSeek-V3's sequence (tensor engine)
        segments = prepare_segments(enc._vocab, texts, frozenset())  # Qwen3's NFC normalizer
        assert python_backend(enc._vocab).rows(segments, len(texts), 1) == expected
    engine = enc.encode_batch_to_flat(texts, disallowed_special=(), merge_backend="torch")
    assert engine.tolist() == expected


@cache
def hf_encoding(family: str) -> Encoding:
    from oracles.hf import hf_file

    return Encoding.from_hf_json(hf_file(family))


def test_what_stays_in_python() -> None:
    """BlockBPE's byte split (one piece per segment) is not the C encoder's."""
    vocab = get_encoding("cl100k_base")._vocab
    assert native.native_encoder(dataclasses.replace(vocab, kind="bytes")) is None


def test_the_extension_rejects_bad_input() -> None:
    table, kind = flag_bytes(), native._KIND_CODES["cl100k"]
    with pytest.raises(ValueError, match="byte 0 is not a token"):
        NATIVE.Encoder(BYTES[1:], list(range(1, 256)), table, kind)
    with pytest.raises(ValueError, match="0x110000"):
        NATIVE.Encoder(BYTES, list(range(256)), table[:100], kind)
    with pytest.raises(ValueError, match="known kind"):
        NATIVE.Encoder(BYTES, list(range(256)), table, 99)
    with pytest.raises(ValueError, match="same nonzero length"):
        NATIVE.Encoder(BYTES, list(range(255)), table, kind)
    with pytest.raises(TypeError, match="nonempty bytes"):
        NATIVE.Encoder([*BYTES, "ab"], list(range(257)), table, kind)
    with pytest.raises(OverflowError):
        NATIVE.Encoder(BYTES, [*range(255), -1], table, kind)
    with pytest.raises(ValueError, match="bytes of token 256 repeat"):
        NATIVE.Encoder([*BYTES, b"a"], list(range(257)), table, kind)
    with pytest.raises(TypeError, match="uint32s"):
        NATIVE.Encoder(BYTES, list(range(256)), table, kind, merges=b"123")
    quad = bytes(16)  # (0, 0) -> rank 0, ID 0, twice
    with pytest.raises(ValueError, match="entry 1 repeats"):
        NATIVE.Encoder(BYTES, list(range(256)), table, kind, merges=quad + quad)
    encoder = NATIVE.Encoder(BYTES, list(range(256)), table, kind)
    with pytest.raises(TypeError, match="list of str"):
        encoder.encode_many("abc")
    with pytest.raises(TypeError, match="expected str, got int"):
        encoder.encode_many(["a", 1])
    with pytest.raises(TypeError, match="nonempty bytes"):
        encoder.encode_piece(b"")
    assert encoder.encode_many(["ab", ""]) == [[97, 98], []]
    # Lone surrogates (which Encoding replaces before) become U+FFFD here too, as in tiktoken.
    assert encoder.encode_many(["\ud800"]) == [list("\ufffd".encode())]
    # Initialized once (another thread may be using the tables); never used uninitialized.
    with pytest.raises(RuntimeError, match="initialized once"):
        encoder.__init__(BYTES, list(range(256)), table, kind)
    assert encoder.encode_many(["ab"]) == [[97, 98]]
    blank = NATIVE.Encoder.__new__(NATIVE.Encoder)
    for method in (blank.encode_many, blank.encode_flat, blank.split):
        with pytest.raises(RuntimeError, match="before a successful __init__"):
            method(["x"] if method != blank.split else "x")
    with pytest.raises(RuntimeError, match="before a successful __init__"):
        blank.encode_piece(b"x")


def test_a_large_batch_as_lists_shares_one_int_per_id() -> None:
    """From 65,536 tokens in a call, the C encoder makes the int of every ID once and the
    lists share them: the same IDs as tiktoken, before and after, large and small calls."""
    encoder = native.native_encoder(Encoding._from_vocab(get_encoding("r50k_base")._vocab)._vocab)
    assert encoder is not None
    reference = tiktoken_reference("r50k_base")
    small = ["hello world", "", " naïve 日本 😀"]
    assert encoder.encode_many(small) == reference.encode_ordinary_batch(small)
    texts = [f"hello world {k} " * 4000 for k in range(10)]  # 120k tokens
    rows = encoder.encode_many(texts)
    assert rows == reference.encode_ordinary_batch(texts)
    assert rows[0][0] is rows[1][0] is rows[9][0]  # one int object for ID 31373
    assert encoder.encode_many(small) == reference.encode_ordinary_batch(small)
    assert encoder.encode_many(["x" * 50_000]) == [reference.encode_ordinary("x" * 50_000)]
