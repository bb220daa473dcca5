"""UTF-8 width boundaries through every backend, against tiktoken.

A codepoint takes 1 byte up to U+007F, 2 up to U+07FF, 3 up to U+FFFF and 4 up to U+10FFFF.
The encoders that write UTF-8 themselves (the C encoder's scanner, the tensor engine's byte
expansion) must change width at exactly those codepoints; one off by one still gives tokens, the
wrong ones: U+0800 written in two bytes gives ``[156, 222]`` with cl100k_base, not tiktoken's
``[156, 64319]``. So each boundary codepoint (and those of the surrogate gap, U+D7FF and U+E000)
goes through alone, in runs (one past 256 bytes: the heap merges), inside words, and next to
spaces, digits and punctuation, where the split cuts; then random strings drawn around them.

The backends are those of ``every_backend.py`` (:func:`assert_every_backend`): the C
encoder alone and as ``encode``'s default, the Python encoder (``TENSORTEXT_NATIVE=0``) and the
tensor engine (``merge_backend="torch"``).
"""

from __future__ import annotations

import pytest
from every_backend import NATIVE, assert_every_backend
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_reference
from strategies import SETTINGS

pytestmark = pytest.mark.skipif(NATIVE is None, reason="built without a C compiler")

NAMES = ["r50k_base", "cl100k_base", "o200k_base"]
# The last codepoint of each width and the first of the next, and the surrogate gap's edges.
BOUNDARIES = [0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF]
CONTEXTS = [
    "{c}",
    "{c}{c}",
    "{c}{c}{c}",
    "{c}" * 17,
    "{c}" * 100,  # 100 to 400 bytes: past 256, the heap merges
    "a{c}b",
    " x{c}y",
    "ab{c}cd{c}ef",
    "{c}a",
    "a{c}",
    " {c}",
    "{c} ",
    "  {c}  {c}",
    "\n{c}\n",
    "1{c}2",
    "123{c}4567",
    "{c}1",
    "!{c}?",
    ".{c}.",
    "'{c}s",
    "{c}'s",
    "{c}'S x",
    "é{c}日",
]


def boundary_texts(codepoints: list[int]) -> list[str]:
    return [context.format(c=chr(codepoint)) for codepoint in codepoints for context in CONTEXTS]


def test_u0800_is_three_bytes() -> None:
    """The case a width off by one gives: tiktoken's two tokens, through every backend."""
    assert tiktoken_reference("cl100k_base").encode("\u0800") == [156, 64319]
    assert_every_backend("cl100k_base", ["\u0800", "a\u0800b"])


@pytest.mark.parametrize("name", NAMES)
def test_each_boundary_in_context(name: str) -> None:
    assert_every_backend(name, boundary_texts(BOUNDARIES))


@pytest.mark.parametrize("name", NAMES)
def test_all_boundaries_together(name: str) -> None:
    every = "".join(map(chr, BOUNDARIES))
    texts = [every, every[::-1], " ".join(every), f"x{every}y", f"1{every}2", every * 50]
    assert_every_backend(name, texts)


# Codepoints within 3 of a boundary (no surrogates), and what the split treats apart.
NEAR = st.sampled_from(BOUNDARIES).flatmap(
    lambda edge: (
        st.integers(max(edge - 3, 0), min(edge + 3, 0x10FFFF))
        .filter(lambda codepoint: not 0xD800 <= codepoint <= 0xDFFF)
        .map(chr)
    )
)
AROUND = st.sampled_from([*"aZé日 \n\t1 9!.'s", "'s", "  ", "\r\n"])
TEXTS = st.lists(st.one_of(NEAR, NEAR, AROUND), max_size=24).map("".join)


@pytest.mark.parametrize("name", NAMES)
@SETTINGS
@given(texts=st.lists(TEXTS, min_size=1, max_size=4))
def test_random_strings_around_the_boundaries(name: str, texts: list[str]) -> None:
    assert_every_backend(name, texts)
