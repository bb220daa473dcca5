"""The C encoder's lookups under real hash collisions, against tiktoken.

``csrc/`` files each token under a 64-bit hash (``hash_bytes`` in ``tables.h``, exposed as
``tensortext.bpe._native.token_hash``) and must confirm the bytes before a slot answers a
lookup (a whole piece or a merge candidate), as must its per-call cache of merged pieces.
Random text never collides, so the strings here are derived from the hash: :func:`token_hash`
is a replica, checked against the C one, and each of its steps is a bijection of 64-bit words
(xor, multiplication by an odd constant, ``h ^= h >> s``), so it runs backwards through any
one aligned 8-byte chunk once the other bytes are fixed (:func:`forge`). Kinds of collision:

* full: the whole hash of a token, by an 8-byte string (for a token of another length: the
  hash of ``n <= 8`` bytes is injective in its length, checked too), or by a string of the
  token's length with its first chunk solved (the table's stored head differs) or its second
  (the head is the token's, the bytes after differ);
* partial: the top 32 and low 20 bits of a token's hash, so a tag of up to 32 bits matches
  and, in a table of up to 2**20 slots (cl100k_base's has 2**18, o200k_base's 2**19), the
  probe starts at the token's home slot: the 12 middle bits are free, 4096 strings per token;
* text: partial collisions of 8 printable bytes that are one piece under the split, with
  8-byte tokens (:func:`text_impostors`; a few per thousand tokens), among them the issue's
  ``"cEtHQqHw"`` against cl100k_base's ``" amazing"``; and full collisions of 16 printable
  bytes with a merged piece (:func:`text_twins`), for the cache.

Bytes go through the C encoder's ``encode_piece``, the Python merges and the tensor engine's;
texts through every backend: the C encoder (alone, and as ``encode``'s default), the Python
encoder (``TENSORTEXT_NATIVE=0`` when an encoding first encodes) and the tensor engine
(``merge_backend="torch"``). If the hash changes, rewrite :func:`token_hash` and its inverse
(:func:`forge_words`); the collisions follow.
"""

from __future__ import annotations

import itertools
from array import array
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import regex
from every_backend import NATIVE, assert_every_backend, c_encoder
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_reference
from oracles.educational import bpe_encode, bpe_encode_merges
from strategies import SETTINGS

from tensortext.bpe import get_encoding, native
from tensortext.bpe.engine import merge_byte_pieces
from tensortext.bpe.unicode import flag_bytes

pytestmark = pytest.mark.skipif(NATIVE is None, reason="built without a C compiler")

NAMES = ["cl100k_base", "o200k_base"]
Words = npt.NDArray[np.uint64]

# ---------------------------------------------------------------------------- the hash

MASK = 2**64 - 1
GOLDEN = 0x9E3779B97F4A7C15  # the chunk multiplier (odd: invertible mod 2**64)
LENGTH = 0xC2B2AE3D27D4EB4F  # the length's multiplier in the seed
FMIX = 0xFF51AFD7ED558CCD  # mix()'s multiplier (odd)


def _seed(n: int) -> int:
    return GOLDEN ^ (n * LENGTH & MASK)


def _mix(h: int) -> int:
    h ^= h >> 33
    h = h * FMIX & MASK
    return h ^ h >> 33


def token_hash(data: bytes) -> int:
    """``hash_bytes`` of csrc/tables.h: a seed from the length; each full 8-byte chunk (a
    little-endian word) xored in, multiplied and shifted; the zero-padded tail xored in and
    multiplied; then ``mix``."""
    n = len(data)
    h = _seed(n)
    full = n - n % 8
    for at in range(0, full, 8):
        h = (h ^ int.from_bytes(data[at : at + 8], "little")) * GOLDEN & MASK
        h ^= h >> 29
    if n % 8:
        h = (h ^ int.from_bytes(data[full:], "little")) * GOLDEN & MASK
    return _mix(h)


# The same steps backwards, on numpy words (which wrap mod 2**64).
_U = np.uint64
_GOLDEN_INVERSE = _U(pow(GOLDEN, -1, 2**64))
_FMIX_INVERSE = _U(pow(FMIX, -1, 2**64))


def _unshift(h: Words, shift: int) -> Words:
    """The inverse of ``h ^= h >> shift``: each pass fixes ``shift`` more high bits."""
    x = h
    for _ in range(64 // shift):
        x = h ^ (x >> _U(shift))
    return x


def _unmix(h: Words) -> Words:
    return _unshift(_unshift(h, 33) * _FMIX_INVERSE, 33)


def _back(after: Words, known: Any) -> Words:
    """One full chunk backwards from the state after it: the chunk's word if ``known`` is the
    state before it, the state before it if ``known`` is the word."""
    return (_unshift(after, 29) * _GOLDEN_INVERSE) ^ known


def _word(data: bytes) -> Any:
    return _U(int.from_bytes(data, "little"))


def forge_words(targets: Words, data: bytes, chunk: int) -> Words:
    """The little-endian words that, put in ``data`` (8 bytes or more) at ``8 * chunk``, make
    the whole hash to each of ``targets``: one each, as the hash is a bijection of that chunk."""
    n, start = len(data), 8 * chunk
    assert start + 8 <= n, "a full chunk of data"
    # Forward from the seed to the state before the chunk ...
    state = _seed(n)
    for at in range(0, start, 8):
        state = (state ^ int.from_bytes(data[at : at + 8], "little")) * GOLDEN & MASK
        state ^= state >> 29
    # ... and backward from each target to the state after it.
    x = _unmix(np.asarray(targets, dtype=_U).reshape(-1))
    full = n - n % 8
    if n % 8:
        x = (x * _GOLDEN_INVERSE) ^ _word(data[full:])
    for at in range(full - 8, start, -8):
        x = _back(x, _word(data[at : at + 8]))
    return _back(x, _U(state))


def forge(targets: Words, data: bytes, chunk: int) -> list[bytes]:
    """``data`` with the chunk of :func:`forge_words` in place, for each target."""
    start = 8 * chunk
    chunks = forge_words(targets, data, chunk).astype("<u8").view(np.uint8).reshape(-1, 8)
    return [data[:start] + bytes(middle) + data[start + 8 :] for middle in chunks]


# A tag of up to 32 bits and a table of up to 2**20 slots leave the 12 bits between free.
TAG_BITS, SLOT_BITS = 32, 20
FREE_BITS = 64 - TAG_BITS - SLOT_BITS
TAG_AND_SLOT = MASK ^ ((2**FREE_BITS - 1) << SLOT_BITS)


def byte_impostors(token: bytes) -> list[tuple[str, bytes]]:
    """``(kind, impostor)`` pairs: strings whose hash is ``token``'s ("full") or agrees with it
    in the tag and slot bits only ("partial"), of 8 bytes, or of the token's length with its
    head (first chunk) or the chunk after solved. The other bytes are the token's, or its
    bytes inverted where a full collision needs them to differ."""
    hashed = token_hash(token)
    full = np.array([hashed], dtype=_U)
    near = np.array([hashed ^ (k << SLOT_BITS) for k in (1, 2)], dtype=_U)
    inverted = bytes(byte ^ 0xFF for byte in token)
    found = [("8 bytes, partial", forged) for forged in forge(near, bytes(8), 0)]
    if len(token) != 8:  # (of 8 bytes, only the token itself has its hash)
        found += [("8 bytes, full", forged) for forged in forge(full, bytes(8), 0)]
    if len(token) > 8:
        found += [("head, full", forged) for forged in forge(full, token[:8] + inverted[8:], 0)]
        found += [("only the head, partial", forged) for forged in forge(near, token, 0)]
    if len(token) >= 16:
        found += [("same head, partial", forged) for forged in forge(near, token, 1)]
    if len(token) > 16:
        same_head = token[:16] + inverted[16:]
        found += [("same head, full", forged) for forged in forge(full, same_head, 1)]
    return found


@cache
def text_impostors(name: str, count: int = 6) -> tuple[tuple[str, bytes], ...]:
    """``count`` pairs ``(text, token)``: ``text`` is 8 bytes of printable ASCII, no token, and
    one piece under ``name``'s split; its hash agrees with 8-byte ``token``'s in the tag and
    slot bits. The tokens are tried in rank order."""
    reference = tiktoken_reference(name)
    ranks, pat_str = reference._mergeable_ranks, reference._pat_str
    tokens = sorted((token for token in ranks if len(token) == 8), key=ranks.__getitem__)
    middles = np.arange(2**FREE_BITS, dtype=_U) << _U(SLOT_BITS)
    found: list[tuple[str, bytes]] = []
    batch = 256
    for first in range(0, len(tokens), batch):
        group = tokens[first : first + batch]
        hashes = np.array([token_hash(token) for token in group], dtype=_U)
        targets = (hashes[:, None] & _U(TAG_AND_SLOT)) | middles[None, :]  # [tokens, 4096]
        chunks = forge_words(targets, bytes(8), 0).astype("<u8").view(np.uint8).reshape(-1, 8)
        printable = ((chunks >= 0x20) & (chunks <= 0x7E)).all(axis=1)
        for index in np.flatnonzero(printable).tolist():
            text = chunks[index].tobytes().decode("ascii")
            if text.encode() not in ranks and regex.findall(pat_str, text) == [text]:
                found.append((text, group[index >> FREE_BITS]))
                if len(found) == count:
                    return tuple(found)
    raise AssertionError(f"{name}: fewer than {count} printable impostors")


TWIN_OF = "Internationalize"  # 16 bytes, two tokens in cl100k_base
LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", dtype=np.uint8)


@cache
def text_twins(text: str, count: int = 3) -> tuple[str, ...]:
    """``count`` other strings of ``text``'s 16 bytes and whole hash, printable and one piece
    under cl100k_base's split: the second chunk random letters (a fixed seed), the first
    solved backwards through the hash."""
    assert len(text.encode()) == 16
    pat_str = tiktoken_reference("cl100k_base")._pat_str
    seconds = np.random.default_rng(0).choice(LETTERS, size=(1 << 20, 8)).view("<u8").ravel()
    target = np.array([token_hash(text.encode())], dtype=_U)
    heads = _back(_back(_unmix(target), seconds), _U(_seed(16)))
    head_bytes = heads.astype("<u8").view(np.uint8).reshape(-1, 8)
    found: list[str] = []
    for index in np.flatnonzero(((head_bytes >= 0x20) & (head_bytes <= 0x7E)).all(axis=1)):
        twin = (head_bytes[index].tobytes() + seconds[index : index + 1].tobytes()).decode()
        if regex.findall(pat_str, twin) == [twin] and len(found) < count:
            found.append(twin)
    assert len(found) == count, f"fewer than {count} twins of {text!r}"
    return tuple(found)


# ---------------------------------------------------------------------------- the replica


@SETTINGS
@given(data=st.binary(max_size=40))
def test_the_replica_is_the_c_hash(data: bytes) -> None:
    assert token_hash(data) == NATIVE.token_hash(data)


@SETTINGS
@given(
    data=st.binary(min_size=8, max_size=40), chunk=st.integers(0, 4), target=st.integers(0, MASK)
)
def test_forge_hits_any_target(data: bytes, chunk: int, target: int) -> None:
    """The inverse: the forged string has the target hash, in C too."""
    chunk = min(chunk, len(data) // 8 - 1)
    (forged,) = forge(np.array([target], dtype=_U), data, chunk)
    assert len(forged) == len(data)
    assert (
        forged[: 8 * chunk] == data[: 8 * chunk]
        and forged[8 * chunk + 8 :] == data[8 * chunk + 8 :]
    )
    assert NATIVE.token_hash(forged) == target


@SETTINGS
@given(data=st.binary(min_size=1, max_size=8))
def test_short_strings_share_their_hash_with_no_string_of_their_length(data: bytes) -> None:
    """Up to 8 bytes, the hash of one length is a bijection of the zero-padded word: a token
    that short has no impostor of its own length."""
    target = np.array([token_hash(data)], dtype=_U)
    if len(data) == 8:
        assert forge(target, bytes(8), 0) == [data]
    else:  # one step, (seed ^ word) * GOLDEN, before mix
        word = (_unmix(target) * _GOLDEN_INVERSE) ^ _U(_seed(len(data)))
        assert int(word[0]) == int.from_bytes(data, "little")


# ---------------------------------------------------------------------------- bytes

LENGTHS = [2, 3, 5, 7, 8, 9, 12, 15, 16, 17, 23, 24, 31]


@pytest.mark.parametrize("name", NAMES)
def test_impostors_merge_like_tiktoken(name: str) -> None:
    """Impostors of the first token of each length in ``LENGTHS`` (of more than one distinct
    byte) are no token: every backend merges their bytes as tiktoken does, never into the
    token whose hash they share, alone or after one more byte."""
    reference = tiktoken_reference(name)
    ranks = reference._mergeable_ranks
    firsts: dict[int, bytes] = {}
    for token in sorted(ranks, key=ranks.__getitem__):
        if len(set(token)) > 1:
            firsts.setdefault(len(token), token)
    cases = [(firsts[n], *impostor) for n in LENGTHS for impostor in byte_impostors(firsts[n])]
    encoder, enc = c_encoder(name), get_encoding(name)
    pieces = [impostor for _, _, impostor in cases]
    tensor_rows = merge_byte_pieces(enc._vocab, pieces)
    for (token, kind, impostor), tensor_row in zip(cases, tensor_rows, strict=True):
        where = f"{impostor!r} ({kind} collision with {token!r})"
        mask = MASK if kind.endswith("full") else TAG_AND_SLOT
        assert NATIVE.token_hash(impostor) & mask == NATIVE.token_hash(token) & mask, where
        assert impostor not in ranks and impostor != token, where
        expected = reference._encode_single_piece(impostor)
        assert expected != [ranks[token]], where
        assert encoder.encode_piece(impostor) == expected, f"C encoder: {where}"
        assert enc._encode_single_piece(impostor) == expected, f"Python merges: {where}"
        assert tensor_row == expected, f"tensor engine: {where}"
        for longer in (b"x" + impostor, impostor + b"x"):
            expected = reference._encode_single_piece(longer)
            assert encoder.encode_piece(longer) == expected, f"C encoder: {longer!r}, {where}"


def test_a_merged_pair_that_collides() -> None:
    """A toy vocabulary where merging reaches two parts whose concatenation has the full hash
    of a token of its length: the pair lookup, not only the whole-piece one, confirms bytes.

    ``right`` is 8 ``q`` bytes and ``left`` is forged so that ``left + right`` hashes as
    ``target``; merges reach both (``left`` through its prefixes).
    """
    target, right = b"0123456789abcdef", b"q" * 8
    (forged,) = forge(np.array([token_hash(target)], dtype=_U), bytes(8) + right, 0)
    left = forged[:8]
    merges = [(b"q", b"q"), (b"qq", b"qq"), (b"qqqq", b"qqqq")]
    merges += [(left[: end - 1], left[end - 1 : end]) for end in range(2, 9)]
    ranks = {bytes([byte]): byte for byte in range(256)}
    for token in [*(a + b for a, b in merges), target]:
        ranks.setdefault(token, len(ranks))
    assert left + right not in ranks
    assert bpe_encode(ranks, left + right) == [ranks[left], ranks[right]], "the premise"
    pieces = [left + right, right * 40 + left + right, b"z" + left + right]  # (2nd: the heap)
    kind = native._KIND_CODES["cl100k"]
    for whole_piece in (False, True):
        encoder = NATIVE.Encoder(
            list(ranks), list(ranks.values()), flag_bytes(), kind, whole_piece=whole_piece
        )
        for piece in pieces:
            assert encoder.encode_piece(piece) == bpe_encode(ranks, piece), (piece, whole_piece)
    # A merges list keys its pairs by IDs: only the whole-piece lookup hashes bytes there.
    vocab = {token: 2 * index + 1 for index, token in enumerate(ranks)}  # IDs are not ranks
    quads = [(vocab[a], vocab[b], rank, vocab[a + b]) for rank, (a, b) in enumerate(merges)]
    encoder = NATIVE.Encoder(
        list(vocab),
        list(vocab.values()),
        flag_bytes(),
        kind,
        merges=array("I", itertools.chain.from_iterable(quads)).tobytes(),
        whole_piece=True,
    )
    for piece in pieces:
        expected = bpe_encode_merges(vocab, merges, piece, ignore_merges=True)
        assert encoder.encode_piece(piece) == expected, piece


# ---------------------------------------------------------------------------- text


def test_the_issue_example_on_every_backend() -> None:
    """``"cEtHQqHw"``'s hash under the hash of the time agreed with ``" amazing"``'s in the
    top 32 and low 20 bits; it must give tiktoken's six tokens, not ``[8056]``."""
    assert tiktoken_reference("cl100k_base").encode("cEtHQqHw") == [66, 32960, 90719, 80, 39, 86]
    assert_every_backend("cl100k_base", ["cEtHQqHw", " amazing", "cEtHQqHw amazing cEtHQqHw"])


def test_merged_pieces_with_one_hash_in_one_call() -> None:
    """Pieces of one length and one whole hash, neither a token, alternating in one text: a
    cache of merged pieces keyed by the hash (the C encoder keeps one per call) must confirm
    the bytes before it answers."""
    twins = text_twins(TWIN_OF)
    pat_str = tiktoken_reference("cl100k_base")._pat_str
    for twin in twins:
        assert NATIVE.token_hash(twin.encode()) == NATIVE.token_hash(TWIN_OF.encode())
        assert regex.findall(pat_str, twin) == [twin] and len(twin.encode()) == 16
    pieces = [TWIN_OF, *twins] * 40  # past the cache's start (32 merged pieces)
    assert_every_backend("cl100k_base", ["\n".join(pieces), *twins])


@pytest.mark.parametrize("name", NAMES)
def test_printable_impostors_on_every_backend(name: str) -> None:
    """Each 8-byte text shares the tag and home slot of an 8-byte token and must not be it."""
    pairs = text_impostors(name)
    ranks = tiktoken_reference(name)._mergeable_ranks
    encoder = c_encoder(name)
    for text, token in pairs:  # the premise, from the C hash
        data = text.encode()
        assert NATIVE.token_hash(data) & TAG_AND_SLOT == NATIVE.token_hash(token) & TAG_AND_SLOT
        assert encoder.encode_piece(data) != [ranks[token]], (text, token)
    texts = [text for text, _ in pairs]
    tokens = [token.decode("utf-8", "replace") for _, token in pairs]
    assert_every_backend(name, [*texts, *tokens, "\n".join(texts), "".join(texts)])
