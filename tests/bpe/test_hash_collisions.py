"""Whole-piece lookups under real hash collisions (issue 16, item 23).

``lookup_pieces`` finds the token that spells a whole piece by a 62-bit key (two polynomial
hashes modulo primes below 2**31, :func:`tensortext.bpe.merge.piece_keys`), then confirms the
bytes. Random text never collides, so the pairs below were constructed: two strings of ``n``
bytes collide when their byte differences ``d`` satisfy ``sum(d[k] * base**k) == 0`` modulo
both primes, which makes ``d`` a short vector of an ``(n + 2)``-dimensional lattice (rows
``e_k`` followed by ``W * hash_powers(n)[:, k]``, plus two rows ``W * prime``); LLL reduction
(``sympy``'s ``DomainMatrix.lll``) finds one with ``|d[k]| <= 6``, and both strings are then
lowercase letters: one piece each under cl100k's split.

In each pair the first string is a token that no merge reaches (so only the lookup can give
it) and the second is not a token (so only the merges may). The pair lookup needs no such test:
its keys, ``left * n_vocab + right``, are exact.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_toy
from strategies import DEVICES, SETTINGS

from tensortext.bpe import Encoding
from tensortext.bpe.merge import hash_powers, lookup_pieces, piece_keys
from tensortext.bpe.patterns import CL100K_PATTERN
from tensortext.bpe.vocab import Vocab

# (token, impostor): equal keys under the shipped hash, different bytes.
COLLISIONS = [
    (b"gbcaaegaadacaada", b"aaagbaadgacaafab"),
    (b"acaadccaaaabceaaaabc", b"aadbaaacabdaaaddafaa"),
    (b"baaadaaaadaabaebbaaababa", b"aabaaaabaaabaeaaabdcaaaa"),
]
TOKENS = [token for token, _ in COLLISIONS]
IMPOSTORS = [impostor for _, impostor in COLLISIONS]
# Every byte, a few merges (so an impostor merges into something), and the orphan tokens.
RANKS = {
    **{bytes([b]): b for b in range(256)},
    b"aa": 256,
    b"ab": 257,
    b"ad": 258,
    **{token: 259 + index for index, token in enumerate(TOKENS)},
}


def keys_of(pieces: list[bytes]) -> list[int]:
    data = torch.frombuffer(bytearray(b"".join(pieces)), dtype=torch.uint8)
    lens = torch.tensor([len(piece) for piece in pieces])
    starts = torch.cumsum(lens, 0) - lens
    return piece_keys(data, starts, lens, hash_powers(int(lens.max()))).tolist()


def test_the_pairs_collide() -> None:
    """The premise: if the hash changes, build new pairs as the module docstring says."""
    for token, impostor in COLLISIONS:
        assert token != impostor and len(token) == len(impostor)
        assert impostor not in RANKS
        key, other = keys_of([token, impostor])
        assert key == other, f"{token!r} and {impostor!r} no longer collide: rebuild the pairs"


@pytest.mark.parametrize("device", DEVICES)
def test_lookup_confirms_the_bytes(device: str) -> None:
    """Each token is found, and its impostor (same key, same length) is not."""
    vocab = Vocab.from_ranks("collisions", CL100K_PATTERN, RANKS, {})
    pieces = [piece for pair in COLLISIONS for piece in pair]  # token, impostor, token, ...
    lens = torch.tensor([len(piece) for piece in pieces], device=device)
    data = torch.frombuffer(bytearray(b"".join(pieces)), dtype=torch.uint8).to(device)
    tables = vocab.tables(torch.device(device))
    found = lookup_pieces(data, torch.cumsum(lens, 0) - lens, lens, tables)
    expected = [id_ for token in TOKENS for id_ in (RANKS[token], -1)]
    assert found.tolist() == expected


def assert_like_tiktoken(texts: list[str], device: str) -> None:
    reference = tiktoken_toy(RANKS, pat_str=CL100K_PATTERN)
    ours = Encoding("collisions", pat_str=CL100K_PATTERN, mergeable_ranks=RANKS, special_tokens={})
    ids, lengths = ours.encode_batch_to_tensor(texts, device=device, merge_backend="torch")
    for row, text in enumerate(texts):
        expected = reference.encode_ordinary(text)
        got = ids[row, : lengths[row]].tolist()
        assert got == expected, f"row {row} on {device}: {text!r}: {got} != {expected}"
        assert ours.encode_ordinary(text) == expected, f"encode_ordinary: {text!r}"


@pytest.mark.parametrize("device", DEVICES)
def test_colliding_pieces_like_tiktoken(device: str) -> None:
    token, impostor = (piece.decode() for piece in COLLISIONS[0])
    texts = [
        impostor,
        token,
        f"{impostor}\n{token}\n{impostor}",  # three pieces: the key hits twice, the bytes once
        f"{token} {impostor}",  # " impostor" is one piece of another length: no collision
        "\n".join(piece.decode() for pair in COLLISIONS for piece in pair),
        "",
    ]
    assert_like_tiktoken(texts, device)


# Whole pieces (tokens and impostors) and what splits or extends them.
ATOMS = [piece.decode() for pair in COLLISIONS for piece in pair] + ["\n", " ", "a", "1", "é"]


@SETTINGS
@given(st.lists(st.lists(st.sampled_from(ATOMS), max_size=8).map("".join), max_size=6))
def test_random_mixtures_like_tiktoken(texts: list[str]) -> None:
    for device in DEVICES:
        assert_like_tiktoken(texts, device)
