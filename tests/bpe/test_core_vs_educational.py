"""The C core (``tensortext.bpe._native.Encoder``) against the educational encoder
(``tests/oracles/educational.py``) on random vocabularies.

Real vocabularies hide most of the merge order: their tokens are reached by their own merges,
ranks follow training, and IDs equal ranks. Random ones do not: a vocabulary here is learnt from
a random source the way BPE training grows one (each merge joins two tokens that sit side by
side in the source, or doubles one, at a rank above every earlier one), plus tokens no merge
reaches (only the whole-piece lookup finds them), with ranks that may start high (the heap
packs a rank and a position into one word; ranks near 2**32 once). Pieces are slices of the
source, tokens, tokens repeated (equal ranks side by side: the leftmost merges first), runs of
one byte, and pieces over 256 bytes (the C heap rather than its scan).

Both merge rules run: tiktoken's (a token's rank is its ID) and a Hugging Face merges list
(IDs unrelated to ranks, given to C as ``(left, right, rank, merged)`` uint32 quads), each with
and without the whole-piece lookup. Whole texts then go through the C split of every pattern
kind and its merges, against the ``regex`` module's split and the educational merges. The
oracle itself is checked against tiktoken and ``tokenizers`` on the same vocabularies.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import textwrap
from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import hf_byte_level_json, tiktoken_toy
from oracles.educational import bpe_encode, bpe_encode_merges, encode, encode_merges
from strategies import SETTINGS

from tensortext.bpe import native
from tensortext.bpe.patterns import LLAMA3_PATTERN, O200K_PATTERN, PATTERNS
from tensortext.bpe.unicode import flag_bytes

NATIVE = native._native
pytestmark = pytest.mark.skipif(NATIVE is None, reason="built without a C compiler")

PATTERN_IDS = [f"{kind}-{index}" for index, kind in enumerate(PATTERNS.values())]
BY_PATTERN = pytest.mark.parametrize("pat_str", list(PATTERNS), ids=PATTERN_IDS)
BYTES = [bytes([byte]) for byte in range(256)]
SHORT_PIECE = 256  # csrc/tables.h: longer pieces merge through the heap
# Where merge ranks start: right after the bytes, or high. (IDs up to the C API's bound,
# 2**32 - 2, are checked once, in a process of bounded memory: test_ids_near_the_bound.)
RANK_BASES = [256, 70_000, 2**24 - 100_000]


@dataclass
class Vocabulary:
    """A random byte-level BPE vocabulary and the source it was learnt from."""

    merges: list[tuple[bytes, bytes]]  # in rank order
    ranks: dict[bytes, int]  # tiktoken's rule: bytes -> rank = ID
    ids: dict[bytes, int]  # a merges list's: bytes -> ID, unrelated to ranks
    orphans: list[bytes]  # tokens no merge makes
    source: bytes

    def rank_encoder(self, *, kind: str = "cl100k", whole_piece: bool = True) -> Any:
        code = native._KIND_CODES[kind]
        tokens = list(self.ranks)
        return NATIVE.Encoder(
            tokens, list(self.ranks.values()), flag_bytes(), code, whole_piece=whole_piece
        )

    def merges_encoder(self, *, kind: str = "cl100k", whole_piece: bool = False) -> Any:
        ids = self.ids
        quads = [(ids[a], ids[b], rank, ids[a + b]) for rank, (a, b) in enumerate(self.merges)]
        return NATIVE.Encoder(
            list(ids),
            list(ids.values()),
            flag_bytes(),
            native._KIND_CODES[kind],
            merges=array("I", itertools.chain.from_iterable(quads)).tobytes(),
            whole_piece=whole_piece,
        )


def _tokens_at(source: bytes, start: int, tokens: set[bytes]) -> list[bytes]:
    """The tokens that ``source`` spells from ``start`` (the byte there at least)."""
    ends = range(start + 1, min(start + 16, len(source)) + 1)
    return [source[start:end] for end in ends if source[start:end] in tokens]


@st.composite
def vocabularies(draw: st.DrawFn, source: bytes, max_merges: int = 48) -> Vocabulary:
    """Merges learnt from ``source``: each joins two tokens that meet in it (or doubles one),
    the new token ranked above all before; then a few orphans, two tokens that meet in
    ``source`` joined without a merge (only the whole-piece lookup finds them)."""
    tokens = set(BYTES)
    merges: list[tuple[bytes, bytes]] = []
    orphans: list[bytes] = []
    learns = len(source) >= 2
    steps, orphan_steps = (draw(st.integers(0, n)) if learns else 0 for n in (max_merges, 4))
    for step in range(steps + orphan_steps):
        start = draw(st.integers(0, len(source) - 2))
        left = draw(st.sampled_from(_tokens_at(source[:-1], start, tokens)))
        right = draw(st.sampled_from(_tokens_at(source, start + len(left), tokens)))
        if draw(st.integers(0, 3)) == 0:  # a token doubled: equal pairs that overlap in runs
            right = left
        if step < steps and (left, right) not in merges:
            merges.append((left, right))  # (the same token from two merges is allowed)
            tokens.add(left + right)
        elif step >= steps and left + right not in tokens:
            orphans.append(left + right)
            tokens.add(left + right)
    # tiktoken's rule: the bytes first (in any order), then each new token at the next rank.
    byte_ranks = draw(st.sampled_from(["in order", "shuffled"]))
    order = list(range(256))
    if byte_ranks == "shuffled":
        draw(st.randoms(use_true_random=False)).shuffle(order)
    ranks = {BYTES[byte]: rank for byte, rank in zip(order, range(256), strict=True)}
    rank = draw(st.sampled_from(RANK_BASES))
    for token in [left + right for left, right in merges] + orphans:
        if token not in ranks:
            ranks[token] = rank
            rank += draw(st.sampled_from([1, 1, 1, 2, 1000]))
    # A merges list's IDs: any order, maybe large.
    ids = list(ranks)
    draw(st.randoms(use_true_random=False)).shuffle(ids)
    base = draw(st.sampled_from([0, 5, 2**24]))
    ids_by_token = {token: base + index for index, token in enumerate(ids)}
    return Vocabulary(merges, ranks, ids_by_token, orphans, source)


@st.composite
def pieces_of(draw: st.DrawFn, vocabulary: Vocabulary) -> bytes:
    """A slice of the source, one of the tokens (whole-piece lookups; orphans), a token
    repeated, a run of one byte, or a piece past the heap's threshold made of bytes and slices
    of the source."""
    source = vocabulary.source
    kind = draw(st.sampled_from(["slice", "slice", "token", "repeat", "run", "long"]))
    if kind == "slice":
        start = draw(st.integers(0, len(source) - 1))
        return source[start : draw(st.integers(start + 1, len(source)))]
    if kind == "token":
        return draw(st.sampled_from(vocabulary.orphans or list(vocabulary.ranks)[255:]))
    if kind == "repeat":  # equal pairs side by side: which merges first decides
        token = draw(st.sampled_from(list(vocabulary.ranks)[255:]))
        return token * draw(st.integers(2, 9)) + token[: draw(st.integers(0, len(token)))]
    byte = source[draw(st.integers(0, len(source) - 1))]
    if kind == "run":
        return bytes([byte]) * draw(st.integers(1, 700))
    parts = draw(st.lists(st.sampled_from([source, source[: len(source) // 2], bytes([byte])])))
    piece = b"".join(parts)
    return piece + source * (SHORT_PIECE // len(source) + 1) if len(piece) <= SHORT_PIECE else piece


SOURCES = st.one_of(
    st.lists(st.sampled_from(b"ab"), min_size=2, max_size=60).map(bytes),
    st.lists(st.sampled_from(b"abcde \xc3\xa9"), min_size=2, max_size=60).map(bytes),
    st.binary(min_size=2, max_size=60),
)


@st.composite
def piece_cases(draw: st.DrawFn) -> tuple[Vocabulary, list[bytes]]:
    source = draw(SOURCES)
    vocabulary = draw(vocabularies(source))
    return vocabulary, draw(st.lists(pieces_of(vocabulary), min_size=1, max_size=6))


def first_difference(got: list[int], want: list[int]) -> str:
    at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), None)
    at = min(len(got), len(want)) if at is None else at
    return f"first difference at token {at}: {got[at : at + 4]} != {want[at : at + 4]}"


# ---------------------------------------------------------------------------- pieces


@SETTINGS
@given(case=piece_cases())
def test_tiktoken_rule_pieces(case: tuple[Vocabulary, list[bytes]]) -> None:
    vocabulary, pieces = case
    ranks = vocabulary.ranks
    for whole_piece in (True, False):
        encoder = vocabulary.rank_encoder(whole_piece=whole_piece)
        for piece in pieces:
            whole = ranks.get(piece) if whole_piece else None
            expected = [whole] if whole is not None else bpe_encode(ranks, piece)
            got = encoder.encode_piece(piece)
            assert got == expected, (piece[:40], whole_piece, first_difference(got, expected))


@SETTINGS
@given(case=piece_cases())
def test_merges_list_pieces(case: tuple[Vocabulary, list[bytes]]) -> None:
    vocabulary, pieces = case
    for whole_piece in (False, True):
        encoder = vocabulary.merges_encoder(whole_piece=whole_piece)
        for piece in pieces:
            expected = bpe_encode_merges(
                vocabulary.ids, vocabulary.merges, piece, ignore_merges=whole_piece
            )
            got = encoder.encode_piece(piece)
            assert got == expected, (piece[:40], whole_piece, first_difference(got, expected))


def test_equal_ranks_merge_leftmost_first() -> None:
    """``aaa`` with ``aa`` is ``aa a``; ``aaaaa`` with ``aa`` and ``aaaa`` is ``aaaa a``, in the
    scan and in the heap (the run repeated past 256 bytes)."""
    ranks = {**{byte: index for index, byte in enumerate(BYTES)}, b"aa": 256, b"aaaa": 257}
    vocabulary = Vocabulary([(b"a", b"a"), (b"aa", b"aa")], ranks, dict(ranks), [], b"a")
    a, aa, aaaa = ranks[b"a"], ranks[b"aa"], ranks[b"aaaa"]
    assert bpe_encode(ranks, b"aaa") == [aa, a]
    assert bpe_encode(ranks, b"aaaaa") == [aaaa, a]
    for n in (3, 5, 7, 257, 258, 259, 301):
        expected = [aaaa] * (n // 4) + [aa] * (n % 4 // 2) + [a] * (n % 2)
        assert bpe_encode(ranks, b"a" * n) == expected
        assert vocabulary.rank_encoder().encode_piece(b"a" * n) == expected, n
        assert vocabulary.merges_encoder().encode_piece(b"a" * n) == expected, n


def test_the_whole_piece_lookup_finds_what_merges_miss() -> None:
    """``abcd`` is a token that merging its bytes does not reach (``bc`` merges first, and
    neither ``abc`` nor ``bcd`` is a token): tiktoken's lookup finds it, the merges alone not."""
    merges = [(b"b", b"c"), (b"a", b"b"), (b"c", b"d")]
    ranks = {**{byte: index for index, byte in enumerate(BYTES)}, b"bc": 256, b"ab": 257}
    ranks.update({b"cd": 258, b"abcd": 259})
    vocabulary = Vocabulary(merges, ranks, dict(ranks), [b"abcd"], b"abcd")
    merged = [ranks[b"a"], ranks[b"bc"], ranks[b"d"]]
    assert bpe_encode(ranks, b"abcd") == merged
    assert encode(ranks, O200K_PATTERN, "abcd abcd") == [259, ranks[b" "], *merged]
    for whole_piece, expected in ((True, [259]), (False, merged)):
        for encoder in (
            vocabulary.rank_encoder(whole_piece=whole_piece),
            vocabulary.merges_encoder(whole_piece=whole_piece),
        ):
            assert encoder.encode_piece(b"abcd") == expected
            assert encoder.encode_many(["abcd"]) == [expected]


def test_ids_near_the_bound() -> None:
    """The C API takes IDs up to 2**32 - 2: a vocabulary with two there is built and merges in
    a process limited to 1 GiB of address space (a table sized by the largest ID would take
    16 GiB; in the test process, that would take the machine)."""
    tokens, ids = [*BYTES, b"ab", b"abab"], [*range(256), 2**32 - 3, 2**32 - 2]
    program = textwrap.dedent(
        f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from tensortext.bpe import native
        from tensortext.bpe.unicode import flag_bytes
        kind = native._KIND_CODES["cl100k"]
        encoder = native._native.Encoder({tokens!r}, {ids!r}, flag_bytes(), kind)
        print([encoder.encode_piece(b"ababab"), encoder.encode_many(["abab ab"])])
        """
    )
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-1500:]
    ranks = dict(zip(tokens, ids, strict=True))
    expected = [bpe_encode(ranks, b"ababab"), [encode(ranks, O200K_PATTERN, "abab ab")]]
    assert json.loads(result.stdout) == expected


# ---------------------------------------------------------------------------- texts

# Characters each split treats apart, all in the Unicode that both the ``regex`` module and
# tensortext's table know alike.
TEXT_ATOMS = [
    *"abcXYZ",
    "é",
    "ß",
    "ǅ",
    "日本",
    "한",
    "क\u093f",
    "e\u0301",
    *"19",
    "٣",
    "½",
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "\xa0",
    "\u3000",
    "'s",
    "'LL",
    "'",
    *"!.-/",
    "€",
    "😀",
]
TEXTS = st.lists(st.sampled_from(TEXT_ATOMS), max_size=30).map("".join)


@st.composite
def text_cases(draw: st.DrawFn) -> tuple[Vocabulary, list[str]]:
    """Texts, and a vocabulary learnt from them (so their pieces merge)."""
    texts = draw(st.lists(TEXTS, min_size=1, max_size=5))
    source = "".join(texts).encode()
    return draw(vocabularies(source if len(source) >= 2 else b"ab", max_merges=80)), texts


def assert_flat_equals_rows(encoder: Any, texts: list[str], rows: list[list[int]]) -> None:
    tokens, lengths = encoder.encode_flat(texts)
    assert np.frombuffer(tokens, dtype=np.uint32).tolist() == [t for row in rows for t in row]
    assert np.frombuffer(lengths, dtype=np.int64).tolist() == [len(row) for row in rows]


@BY_PATTERN
@SETTINGS
@given(case=text_cases())
def test_texts_tiktoken_rule(pat_str: str, case: tuple[Vocabulary, list[str]]) -> None:
    vocabulary, texts = case
    encoder = vocabulary.rank_encoder(kind=PATTERNS[pat_str])
    expected = [encode(vocabulary.ranks, pat_str, text) for text in texts]
    got = encoder.encode_many(texts)
    for text, row, want in zip(texts, got, expected, strict=True):
        assert row == want, f"{text!r}: {first_difference(row, want)}"
    assert_flat_equals_rows(encoder, texts, got)


@BY_PATTERN
@SETTINGS
@given(case=text_cases(), whole_piece=st.booleans())
def test_texts_merges_list(
    pat_str: str, case: tuple[Vocabulary, list[str]], whole_piece: bool
) -> None:
    vocabulary, texts = case
    encoder = vocabulary.merges_encoder(kind=PATTERNS[pat_str], whole_piece=whole_piece)
    options = {"ignore_merges": whole_piece}
    expected = [
        encode_merges(vocabulary.ids, vocabulary.merges, pat_str, text, **options) for text in texts
    ]
    got = encoder.encode_many(texts)
    for text, row, want in zip(texts, got, expected, strict=True):
        assert row == want, f"{text!r}: {first_difference(row, want)}"
    assert_flat_equals_rows(encoder, texts, got)


# ---------------------------------------------------------------------------- the oracle


@SETTINGS
@given(case=text_cases())
def test_the_educational_encoder_is_tiktoken(case: tuple[Vocabulary, list[str]]) -> None:
    vocabulary, texts = case
    reference = tiktoken_toy(vocabulary.ranks, pat_str=O200K_PATTERN)
    for text in texts:
        assert encode(vocabulary.ranks, O200K_PATTERN, text) == reference.encode_ordinary(text)


@SETTINGS
@given(case=text_cases(), ignore_merges=st.booleans())
def test_the_educational_merges_are_tokenizers(
    case: tuple[Vocabulary, list[str]], ignore_merges: bool
) -> None:
    """Against ``tokenizers`` with Llama-3's split (on which Oniguruma and ``regex`` agree)."""
    from tokenizers import Tokenizer

    vocabulary, texts = case
    spec = hf_byte_level_json(
        vocabulary.ids, vocabulary.merges, pattern=LLAMA3_PATTERN, ignore_merges=ignore_merges
    )
    reference = Tokenizer.from_str(json.dumps(spec))
    for text in texts:
        expected = reference.encode(text, add_special_tokens=False).ids
        got = encode_merges(
            vocabulary.ids, vocabulary.merges, LLAMA3_PATTERN, text, ignore_merges=ignore_merges
        )
        assert got == expected, f"{text!r}: {first_difference(got, expected)}"
