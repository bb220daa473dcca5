"""The Python encoder (``tensortext.bpe.host``): the split patterns translated for Python's
``re``, the piece cache and the heap merge, against the ``regex`` module, tiktoken and the
tensor engine. (The C encoder has ``test_native.py``.)

The list-returning methods (``encode``, ``encode_batch``, ...) run it where the C encoder is
not built, so the parity tests of ``test_encoding.py`` check it there; ``check_parity`` compares
the tensor engine too. This file checks the parts on their own, where a difference is easiest
to read.
"""

from __future__ import annotations

import sys

import pytest
from bpe_strategies import ANY_CHAR, TIKTOKEN_CHAR, rich_texts
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import naive_byte_pair_merge, regex_pieces, tiktoken_reference
from strategies import SETTINGS

from tensortext.bpe import Encoding, get_encoding, list_encoding_names
from tensortext.bpe import host as host_module
from tensortext.bpe.backends import python_backend
from tensortext.bpe.host import HostEncoder, host_pattern
from tensortext.bpe.patterns import PATTERNS
from tensortext.bpe.serial import merge_by_rank

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the host encoder needs possessive quantifiers (3.11)"
)

PATTERN_IDS = [f"{kind}-{index}" for index, kind in enumerate(PATTERNS.values())]
BY_PATTERN = pytest.mark.parametrize("pat_str", list(PATTERNS), ids=PATTERN_IDS)
ASTRAL = ["😀", "👩\u200d💻", "\U0001d400", "𐐀", "𠀀", "\U0001d7d9", "\U000e0001", "\U0010fffd"]
# Texts of rich atoms, arbitrary codepoints, astral ones, and lines that start with letters
# (where the host encoder cuts long texts into chunks).
TEXTS = rich_texts(other=ANY_CHAR)
CHUNKED = st.lists(
    st.one_of(
        TEXTS,
        st.sampled_from(ASTRAL),
        st.sampled_from(["\n", "x\n", ".\nA", " \nb", "\n\nc", "日\n本", "'s\n", "😀\nz"]),
    ),
    max_size=12,
).map("".join)


@BY_PATTERN
@SETTINGS
@given(text=TEXTS)
def test_pattern_splits_as_the_regex_module(pat_str: str, text: str) -> None:
    pattern = host_pattern(pat_str)
    assert pattern is not None
    assert pattern.findall(text) == regex_pieces(pat_str, text)


@BY_PATTERN
@SETTINGS
@given(text=CHUNKED)
def test_split_with_chunks_and_astral_codepoints(pat_str: str, text: str) -> None:
    """``split`` runs the BMP pattern on chunks without astral codepoints and the full one
    elsewhere: the pieces are the whole text's."""
    kind = PATTERNS[pat_str]
    encoder = HostEncoder(get_encoding("cl100k_base")._vocab)
    encoder.pat_str = pat_str
    assert encoder.split(text) == regex_pieces(pat_str, text), kind


@BY_PATTERN
def test_bmp_and_ascii_patterns(pat_str: str) -> None:
    bmp, ascii = host_pattern(pat_str, below=0x10000), host_pattern(pat_str, below=0x80)
    assert bmp is not None and ascii is not None
    text = "Hello, wörld! 123 ½ 日本語 ǅemo ʰ \u0301x \x1c\x85\u2028 it's\r\n\n  \tend  "
    assert bmp.findall(text) == regex_pieces(pat_str, text)
    text = "Hello, world! 123 it's\r\n\n  \tend \x1c\x1d\x0b\x0c I'LL x  "
    assert ascii.findall(text) == regex_pieces(pat_str, text)


@pytest.mark.parametrize("name", list_encoding_names())
@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world",
        "trailing spaces   ",
        "ends with a newline\n",
        "  \n\n  \r\n x",
        "\x1c\x1d \x1e\x1f\x85\xa0\u2028",
        "I'LL can'T we've HE'S it\u2019s",
        "'\u017f '\u212a '\u0130",  # long s, Kelvin sign, dotted I: case folding
        "1234567890 12.5% 0x1F \U0001d7d9\U0001d7da",
        "a" * 3000,  # one long piece
        "def f(x):\n    return x ** 2  # comment\n",
        "日本語のテキスト。\n中文文本\uff0c还有😀和👩\u200d💻。\n\U0001d400\U0001d401 𐐀𐐁 𠀀𠀁\n",
        "x <|endoftext|> y",
    ],
)
def test_hand_picked_against_tiktoken(name: str, text: str) -> None:
    enc = get_encoding(name)
    assert HostEncoder(enc._vocab).usable
    expected = tiktoken_reference(name).encode(text, disallowed_special=())
    assert enc.encode(text, disallowed_special=()) == expected


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR), max_size=4))
def test_encode_batch_equals_the_tensor_engine(name: str, texts: list[str]) -> None:
    enc = get_encoding(name)
    ids, lengths = enc.encode_batch_to_tensor(texts, disallowed_special=(), merge_backend="torch")
    tensor_rows = [row[:length] for row, length in zip(ids.tolist(), lengths.tolist(), strict=True)]
    assert enc.encode_ordinary_batch(texts) == tensor_rows


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
@SETTINGS
@given(piece=st.binary(max_size=40) | st.text(alphabet=TIKTOKEN_CHAR, max_size=12).map(str.encode))
def test_merge_by_rank_is_tiktokens_merge(name: str, piece: bytes) -> None:
    enc = get_encoding(name)
    ranks = enc._vocab.mergeable
    assert merge_by_rank(piece, ranks, enc._vocab.tokens) == naive_byte_pair_merge(ranks, piece)


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(host_module, "_CACHE_LIMIT", 4)
    encoder = HostEncoder(get_encoding("cl100k_base")._vocab)
    reference = tiktoken_reference("cl100k_base")
    for text in ["alpha", "beta gamma", "delta epsilon zeta iota kappa", "alpha beta", "eta " * 5]:
        assert encoder.encode_ordinary(text) == reference.encode(text)
        assert len(encoder.single) + len(encoder.multi) <= 4
    long_piece = "q" * (host_module._CACHED_PIECE_CHARS + 1)
    assert encoder.encode_ordinary(long_piece) == reference.encode(long_piece)
    assert long_piece not in encoder.single and long_piece not in encoder.multi  # not kept


def test_what_is_not_translated() -> None:
    assert host_pattern(r"\p{Han}+|\w+") is None  # an unknown property
    assert host_pattern(r"[\p{Lu}]+") is None  # Lu without Lt: they share a table flag
    assert host_pattern(r"[a-z]+") is None  # ranges are not translated
    assert host_pattern(r"(a)|b") is None  # a capturing group would change findall
    assert host_pattern(r"[[:alpha:]]") is None  # POSIX classes


@pytest.mark.parametrize(("family", "usable"), [("qwen3", True), ("deepseek_v3", False)])
def test_hugging_face_files_on_either_engine(
    family: str, usable: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the C encoder, Qwen3's regex is translated (its merges list goes through the pair
    table); DeepSeek-V3's sequence of splits is not, so the tensor engine encodes it. Both
    equal ``tokenizers`` (with the C encoder, which takes both, too)."""
    from oracles.hf import hf_file, hf_tokenizer

    enc, reference = Encoding.from_hf_json(hf_file(family)), hf_tokenizer(family)
    assert HostEncoder(enc._vocab).usable is usable
    monkeypatch.setenv("TENSORTEXT_NATIVE", "0")  # read at the first encode: a new encoding
    assert enc.encode("x") == reference.encode("x", add_special_tokens=False).ids
    assert enc._backends.get().name == ("python" if usable else "torch")
    for text in ["Hello, world! 123456", "日本語のテキスト😀 it's", "  \n\n def f(x):\n\treturn"]:
        assert enc.encode(text) == reference.encode(text, add_special_tokens=False).ids, text


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR), max_size=4))
def test_new_pieces_through_the_tensor_merges(name: str, texts: list[str]) -> None:
    """With the thresholds at 1, every new piece of a call goes through one batch of the
    tensor merges (``merge_byte_pieces``), as in bulk work: tiktoken's IDs."""
    encoder = python_backend(get_encoding(name)._vocab).host
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(host_module, "_TENSOR_MERGE_MIN", 1)
        patch.setattr(host_module, "_BUILD_TABLES_MIN", 1)
        got = encoder.encode_many(texts)
    reference = tiktoken_reference(name)
    assert got == [reference.encode_ordinary(text) for text in texts]


def test_each_new_piece_is_encoded_once() -> None:
    """A piece new to the cache that a batch repeats is merged once, and texts of the same
    call share it."""
    encoder = HostEncoder(get_encoding("cl100k_base")._vocab)
    merged: list[list[bytes]] = []
    original = encoder._merge

    def counting(pieces: list[bytes]) -> list[list[int]]:
        merged.append(pieces)
        return original(pieces)

    encoder._merge = counting  # type: ignore[method-assign]
    texts = ["zqxv zqxv", "zqxv", " zqxv zqxv"]
    reference = tiktoken_reference("cl100k_base")
    assert encoder.encode_many(texts) == [reference.encode(text) for text in texts]
    assert sorted(merged[0]) == [b" zqxv", b"zqxv"]
    assert encoder.encode_many(texts) == [reference.encode(text) for text in texts]
    assert len(merged) == 1  # the second call: all from the cache


def test_hugging_face_merges_list_through_the_tensor_merges() -> None:
    """Qwen3's merges list (ranks are not IDs) in the batched tensor merges."""
    from oracles.hf import hf_file, hf_tokenizer

    encoder = python_backend(Encoding.from_hf_json(hf_file("qwen3"))._vocab).host
    texts = ["Tokenizers merge zqxvw and Grüße, 日本語のテキスト", "  def f(x):\n\treturn x"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(host_module, "_TENSOR_MERGE_MIN", 1)
        patch.setattr(host_module, "_BUILD_TABLES_MIN", 1)
        got = encoder.encode_many(texts)
    reference = hf_tokenizer("qwen3")
    assert got == [reference.encode(text, add_special_tokens=False).ids for text in texts]
