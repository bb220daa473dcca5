"""The short-text path (``tensortext.bpe.short``): tiktoken's IDs without a tensor pass."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import regex_pieces, tiktoken_reference
from strategies import SETTINGS

from tensortext.bpe import get_encoding, list_encoding_names
from tensortext.bpe.short import MAX_SHORT_CHARS, ShortPath, ascii_pattern

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the short path needs possessive quantifiers (3.11)"
)

NAMES = list_encoding_names()
# Every ASCII character, weighted towards what the patterns distinguish: letters of both cases,
# digits, apostrophes and contractions, every kind of whitespace (\x1c-\x1f are whitespace to
# Python's \s but not to tiktoken's), slashes and other punctuation.
ASCII_TEXT = st.lists(
    st.one_of(
        st.characters(min_codepoint=0, max_codepoint=127),
        st.sampled_from(list("aZ9' \t\n\r\x0b\x0c\x1c\x1f/-")),
        st.sampled_from(["'s", "'LL", "'Ve", "\r\n", "  ", "123456", "Hello", "wORLD"]),
    ),
    max_size=40,
).map("".join)


def short_path(name: str) -> ShortPath:
    encoding = get_encoding(name)
    return ShortPath(encoding._pat_str, encoding._mergeable_ranks, list(encoding._special_tokens))


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=ASCII_TEXT)
def test_short_path_equals_tiktoken_on_ascii(name: str, text: str) -> None:
    got = short_path(name).encode(text)
    assert got == tiktoken_reference(name).encode(text, disallowed_special=())


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(text=ASCII_TEXT)
def test_ascii_pattern_splits_as_the_regex_module(name: str, text: str) -> None:
    pattern = ascii_pattern(get_encoding(name)._pat_str)
    assert pattern is not None
    pieces = pattern.findall(text)
    assert "".join(pieces) == text
    # tiktoken's \s is White_Space: \x1c-\x1f are punctuation to it, whitespace to the regex
    # module (and to Python's re), so the oracle only sees texts without them.
    if not any("\x1c" <= char <= "\x1f" for char in text):
        assert pieces == regex_pieces(get_encoding(name)._pat_str, text)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "r50k_base"])
@pytest.mark.parametrize(
    "text",
    [
        "",
        "hello world",
        "trailing spaces   ",
        "ends with a newline\n",
        "  \n\n  \r\n x",
        "\x1c\x1d \x1e\x1f",
        "I'LL can'T we've HE'S",
        "1234567890 12.5% 0x1F",
        "a" * MAX_SHORT_CHARS,  # one long piece: the heap merge
        "ab" * 700 + " " + "zq" * 300,
        "def f(x):\n    return x ** 2  # comment\n",
    ],
)
def test_short_path_hand_picked(name: str, text: str) -> None:
    assert short_path(name).encode(text) == tiktoken_reference(name).encode(text)


def test_short_path_declines_what_it_cannot_do() -> None:
    path = short_path("cl100k_base")
    assert path.encode("a" * (MAX_SHORT_CHARS + 1)) is None  # long: a tensor pass amortizes
    assert path.encode("caf\u00e9") is None  # not ASCII
    assert path.encode("x <|endoftext|>") is None  # special-token text
    assert path.encode("x <|endoftext|") == tiktoken_reference("cl100k_base").encode(
        "x <|endoftext|"
    )  # a special token's first character alone is text
    assert ascii_pattern(r"\p{Han}+|\w+") is None  # constructs it does not translate
    assert ascii_pattern(r"(a)|b") is None  # a capturing group would change findall


def test_the_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from tensortext.bpe import short

    monkeypatch.setattr(short, "_CACHE_LIMIT", 4)
    path = short_path("cl100k_base")
    for word in ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]:
        path.encode(word)
        assert len(path.cache) <= 4
    assert path.encode("alpha beta") == tiktoken_reference("cl100k_base").encode("alpha beta")


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_harmony"])
def test_encode_takes_the_short_path_and_agrees_with_the_tensor_path(name: str) -> None:
    encoding = get_encoding(name)
    text = "Short texts skip the tensor pass, 42 times over.\n"
    calls = []
    original = encoding._short_path.encode

    def spy(value: str) -> list[int] | None:
        result = original(value)
        calls.append(result is not None)
        return result

    encoding._short_path.encode = spy  # type: ignore[method-assign]
    try:
        assert encoding.encode(text) == encoding.encode_batch_to_tensor([text]).tolist()[0]
        assert calls == [True]
        # Special-token text and non-ASCII text take the tensor path, with its checks.
        assert encoding.encode("<|endoftext|>", allowed_special="all") == [encoding.eot_token]
        with pytest.raises(ValueError, match="disallowed"):
            encoding.encode("<|endoftext|>")
        assert encoding.encode("naïve") == tiktoken_reference(name).encode("naïve")
        assert calls[1:] == [False, False, False]
    finally:
        del encoding._short_path.encode
