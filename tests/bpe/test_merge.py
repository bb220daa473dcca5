"""BPE merges: ``merge_serial`` against tiktoken's quadratic algorithm, and the parallel
``merge_pieces`` (with its "irregular piece -> serial" fallback) against tiktoken itself.

The parallel passes equal the sequential order only while no merge creates a pair that ranks
below the pass's rank; ``merge_pieces`` must detect every piece where that happens.  Random small
vocabularies -- all 256 bytes plus random merges of random existing tokens, with random ranks
that are *not* monotone in the merge order, plus a few tokens no merge can reach -- over texts of
a few characters make such pieces common; every encoding must still equal tiktoken's.  The same
checks run for the Triton kernel (``merge_backend="triton"``): on CUDA, or under Triton's
interpreter on a machine without one.  HF-style files (merges in any order, merged IDs unrelated to
ranks) are compared with the ``tokenizers`` library.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.bpe import (
    LLAMA3_PAT_STR,
    WHOLE_TEXT_PATTERN,
    hf_byte_level_json,
    naive_byte_pair_merge,
    naive_pair_merge,
    tiktoken_toy,
)
from strategies import DEVICES, MAX_EXAMPLES, SETTINGS
from test_merge_triton import require_triton

from tensortext.bpe import Encoding, merge_pieces, merge_serial
from tensortext.bpe.patterns import CL100K_PATTERN
from tensortext.bpe.serial import merge_by_rank
from tensortext.bpe.vocab import Vocab

Ranks = dict[bytes, int]
Pairs = dict[tuple[int, int], tuple[int, int]]

# (device, merge_backend) pairs to check.  The Triton kernel runs on CUDA.  Without CUDA it runs
# under Triton's interpreter, which must be switched on (TRITON_INTERPRET=1) before triton is
# first imported: test_triton_kernel_under_interpreter reruns this file's Triton tests in a fresh
# process with the variable set.  The interpreter is slow: a tenth of the examples.
HAS_TRITON = importlib.util.find_spec("triton") is not None
INTERPRETING = os.environ.get("TRITON_INTERPRET") == "1"
TORCH_BACKENDS = [(device, "torch") for device in DEVICES]
TRITON_BACKENDS: list[tuple[str, str]] = []
if HAS_TRITON and "cuda" in DEVICES:
    TRITON_BACKENDS = [("cuda", "triton")]
elif HAS_TRITON and INTERPRETING:
    TRITON_BACKENDS = [("cpu", "triton")]
TRITON_EXAMPLES = MAX_EXAMPLES if "cuda" in DEVICES else max(MAX_EXAMPLES // 10, 3)


def by_backend(backends: list[tuple[str, str]]) -> pytest.MarkDecorator:
    ids = [f"{device}-{backend}" for device, backend in backends]
    return pytest.mark.parametrize(("device", "backend"), backends, ids=ids)


BY_BACKEND = by_backend(TORCH_BACKENDS + TRITON_BACKENDS)


def merge_impl(backend: str) -> Callable[..., torch.Tensor]:
    if backend == "torch":
        return merge_pieces
    from tensortext.bpe.merge_triton import merge_pieces_triton

    return merge_pieces_triton


# Characters of the toy texts: letters (one piece per run), a two-byte letter, a space (prefixes
# the next piece), digits (pieces of up to three) and punctuation.
CHARS = ["a", "b", "c", "\u00e9", " ", "1", "!"]


def byte_ranks(taken: set[int]) -> Ranks:
    """The 256 single bytes at the smallest ranks not in ``taken``."""
    free = (r for r in range(len(taken) + 256) if r not in taken)
    return {bytes([b]): next(free) for b in range(256)}


def tiktoken_pairs(ranks: Ranks) -> Pairs:
    """tiktoken's rule as a pair table: ``(left, right)`` merges iff ``left + right`` is a token,
    at that token's rank (built here independently of tensortext's vocab code)."""
    pairs: Pairs = {}
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = ranks.get(token[:cut]), ranks.get(token[cut:])
            if left is not None and right is not None:
                pairs[(left, right)] = (rank, rank)
    return pairs


@st.composite
def toy_vocabs(draw: st.DrawFn, max_merges: int = 40) -> tuple[list[str], Ranks]:
    """``(chars, ranks)``: all 256 bytes plus random merges of existing tokens (and a few
    orphan tokens), the new tokens at random distinct ranks interleaved with the bytes."""
    chars = draw(st.lists(st.sampled_from(CHARS), min_size=1, max_size=4, unique=True))
    units = sorted({bytes([b]) for char in chars for b in char.encode("utf-8")})
    tokens, known = list(units), set(units)
    new: list[bytes] = []
    for _ in range(draw(st.integers(1, max_merges))):
        # Prefer recent tokens, so that merge chains get deep.
        pool = tokens[-8:] if draw(st.booleans()) else tokens
        token = draw(st.sampled_from(pool)) + draw(st.sampled_from(pool))
        if len(token) <= 12 and token not in known:
            tokens.append(token)
            known.add(token)
            new.append(token)
    orphans = draw(st.lists(st.lists(st.sampled_from(units), min_size=2, max_size=5), max_size=3))
    for orphan in map(b"".join, orphans):
        if orphan not in known:
            known.add(orphan)
            new.append(orphan)
    new_ranks = draw(
        st.lists(
            st.integers(0, 3 * len(new) + 300), min_size=len(new), max_size=len(new), unique=True
        )
    )
    ranks = dict(zip(new, new_ranks, strict=True))
    ranks.update(byte_ranks(set(new_ranks)))
    return chars, ranks


def texts_over(chars: list[str], max_size: int = 30) -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(chars), max_size=max_size).map("".join)


def describe(ranks: Ranks) -> str:
    merged = sorted(((r, t) for t, r in ranks.items() if len(t) > 1))
    return "ranks: " + ", ".join(f"{t!r}={r}" for r, t in merged)


def assert_encodes_like_tiktoken(
    ranks: Ranks, texts: list[str], device: str = "cpu", backend: str = "torch"
) -> None:
    """Encoding (regex and whole-text pieces) == tiktoken with the same ranks, row by row."""
    enc = Encoding("toy", pat_str="cl100k", mergeable_ranks=ranks, special_tokens={})
    for pretokenize, pat_str in (("regex", CL100K_PATTERN), ("bytes", WHOLE_TEXT_PATTERN)):
        ref = tiktoken_toy(ranks, pat_str=pat_str)
        ids, lengths = enc.encode_batch_to_tensor(
            texts, pretokenize=pretokenize, device=device, merge_backend=backend
        )
        ids, lengths = ids.cpu(), lengths.cpu()
        for row, text in enumerate(texts):
            got = ids[row, : lengths[row]].tolist()
            expected = ref.encode_ordinary(text)
            assert got == expected, (
                f"{device}/{backend}, pretokenize={pretokenize}: text {text!r} "
                f"(row {row} of {len(texts)})\n"
                f"  ours     = {got}\n  tiktoken = {expected}\n  {describe(ranks)}"
            )
            if backend == "torch" and device == "cpu" and pretokenize == "regex":
                assert enc.encode(text) == expected
            assert enc.decode(got) == text


# --------------------------------------------------------------------------------------------
# merge_serial against the naive algorithm
# --------------------------------------------------------------------------------------------


@SETTINGS
@given(vocab=toy_vocabs(), data=st.data())
def test_merge_serial_matches_naive(vocab: tuple[list[str], Ranks], data: st.DataObject) -> None:
    chars, ranks = vocab
    units = sorted({bytes([b]) for char in chars for b in char.encode("utf-8")})
    pairs = tiktoken_pairs(ranks)
    byte_ids = [ranks[bytes([b])] for b in range(256)]
    pieces = data.draw(st.lists(st.lists(st.sampled_from(units), max_size=40), max_size=6))
    for piece in map(b"".join, pieces):
        expected = naive_byte_pair_merge(ranks, piece)
        got = merge_serial(piece, byte_ids, pairs)
        assert got == expected, f"piece {piece!r}: {got} != {expected}\n  {describe(ranks)}"


@SETTINGS
@given(vocab=toy_vocabs(), data=st.data())
def test_merge_by_rank_matches_naive(vocab: tuple[list[str], Ranks], data: st.DataObject) -> None:
    """The host encoder's rank-at-a-time merge, irregular vocabularies included (random ranks
    make merges that create pairs of ranks already passed: the heap then finishes)."""
    chars, ranks = vocab
    units = sorted({bytes([b]) for char in chars for b in char.encode("utf-8")})
    tokens: list[bytes | None] = [None] * (max(ranks.values()) + 1)
    for token, rank in ranks.items():
        tokens[rank] = token
    pieces = data.draw(st.lists(st.lists(st.sampled_from(units), max_size=60), max_size=6))
    for piece in map(b"".join, pieces):
        expected = naive_byte_pair_merge(ranks, piece)
        got = merge_by_rank(piece, ranks, tokens)
        assert got == expected, f"piece {piece!r}: {got} != {expected}\n  {describe(ranks)}"


def test_merge_by_rank_irregular_vocabulary(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bc`` (rank 300) merges first; then ``a`` + ``bc`` = ``abc`` has rank 290, below it:
    the sequential order continues with the heap."""
    import tensortext.bpe.serial as merge

    calls: list[list[bytes]] = []
    original = merge._merge_with_heap

    def counting(parts: list[bytes], ranks: Ranks) -> list[int]:
        calls.append(list(parts))
        return original(parts, ranks)

    monkeypatch.setattr(merge, "_merge_with_heap", counting)
    ranks = {**byte_ranks({290, 300, 310}), b"bc": 300, b"abc": 290, b"ab": 310}
    tokens: list[bytes | None] = [None] * 311
    for token, rank in ranks.items():
        tokens[rank] = token
    for piece in [b"abc", b"abcabc", b"aabcc", b"xabcbcab"]:
        assert merge_by_rank(piece, ranks, tokens) == naive_byte_pair_merge(ranks, piece), piece
    assert calls and calls[0] == [b"a", b"bc"]


@st.composite
def pair_tables(draw: st.DrawFn) -> tuple[list[int], Pairs, list[int]]:
    """HF-style merges: ``(left, right) -> (rank, merged)`` with ranks independent of the IDs,
    and the same bytes reachable through different pairs."""
    alphabet = draw(st.lists(st.integers(0, 255), min_size=1, max_size=3, unique=True))
    ids = draw(st.permutations(range(256)))
    byte_ids = list(ids)
    spelled: dict[int, bytes] = {byte_ids[b]: bytes([b]) for b in range(256)}
    by_bytes = {v: k for k, v in spelled.items()}
    known = [byte_ids[b] for b in alphabet]
    pairs: Pairs = {}
    next_id = 256
    for _ in range(draw(st.integers(1, 30))):
        left, right = draw(st.sampled_from(known)), draw(st.sampled_from(known))
        if (left, right) in pairs:
            continue
        merged_bytes = spelled[left] + spelled[right]
        merged = by_bytes.get(merged_bytes)
        if merged is None:
            merged, next_id = next_id, next_id + 1
            spelled[merged], by_bytes[merged_bytes] = merged_bytes, merged
            known.append(merged)
        pairs[(left, right)] = (draw(st.integers(0, 1000)), merged)
    # Ranks must be distinct, as the order of a merges list makes them.
    ranked = sorted(pairs, key=lambda key: (pairs[key][0], key))
    pairs = {key: (rank, pairs[key][1]) for rank, key in enumerate(ranked)}
    return byte_ids, pairs, alphabet


@SETTINGS
@given(table=pair_tables(), data=st.data())
def test_merge_serial_pair_table_matches_naive(
    table: tuple[list[int], Pairs, list[int]], data: st.DataObject
) -> None:
    byte_ids, pairs, alphabet = table
    piece_bytes = st.lists(st.sampled_from(alphabet), max_size=30).map(bytes)
    for piece in data.draw(st.lists(piece_bytes, max_size=6)):
        expected = naive_pair_merge(byte_ids, pairs, piece)
        got = merge_serial(piece, byte_ids, pairs)
        assert got == expected, f"piece {piece!r}: {got} != {expected}\n  pairs {pairs}"


def test_merge_serial_short_pieces() -> None:
    ranks = byte_ranks(set())
    pairs = tiktoken_pairs(ranks)
    byte_ids = list(range(256))
    assert merge_serial(b"", byte_ids, pairs) == []
    assert merge_serial(b"x", byte_ids, pairs) == [ord("x")]
    assert merge_serial(b"xy", byte_ids, pairs) == [ord("x"), ord("y")]


# --------------------------------------------------------------------------------------------
# Hand-built vocabularies whose ranks go down after a merge
# --------------------------------------------------------------------------------------------


def hand_vocab(merged: dict[str, int]) -> Ranks:
    ranks = {token.encode("utf-8"): rank for token, rank in merged.items()}
    ranks.update(byte_ranks(set(ranks.values())))
    return ranks


# name -> (merged tokens with ranks, texts, texts whose single piece the passes must flag)
DOWN_VOCABS: dict[str, tuple[dict[str, int], list[str], list[str]]] = {
    # Merging the first "ab" of "abab" forms ("ab", "a") = "aba", which ranks below "ab":
    # sequentially "aba" + "b", while merging both "ab" in one pass gives "ab" + "ab".
    "between": (
        {"ab": 300, "aba": 260},
        ["abab", "ababab", "abababab", "xabab", " abab", "abab abab", "aabab"],
        ["abab", "ababab"],
    ),
    # Runs: "aaaa" sequentially "aa" -> "aaa" + "a"; one pass would make "aa" + "aa".
    "run": (
        {"aa": 300, "aaa": 260},
        ["aa", "aaa", "aaaa", "aaaaa", "aaaaaaaaaaa", " aaaa", "aaaa aaaa"],
        ["aaaa", "aaaaa"],
    ),
    # A merge forms a lower pair with its right neighbour ("ab" + "c" below "ab").
    "down_right": (
        {"ab": 300, "abc": 260, "bc": 400},
        ["abcabc", "abcab", "ababc", "abcbc", " abcabc"],
        ["abcabc"],
    ),
    # ... and with its left neighbour ("a" + "bc" below "bc").
    "down_left": (
        {"bc": 300, "abc": 260, "ab": 400},
        ["abcbc", "abcabc", "aabc", "abcbcbc"],
        ["abcbc"],
    ),
    # Chains that go down several times: "ab" -> "abc" -> "abcd", each lower.
    "chain": (
        {"ab": 400, "abc": 300, "abcd": 260, "cd": 350, "da": 270},
        ["abcdabcd", "abcdab", "cdabcd", "abdabcd", "abcdcdab"],
        ["abcdabcd"],
    ),
    # A token no merge reaches ("xyz": no "xy" or "yz"): whole-piece lookup finds it.
    "orphan": ({"xyz": 500, "ab": 300}, ["xyz", " xyz", "xyzxyz", "abxyz"], []),
}


@BY_BACKEND
@pytest.mark.parametrize("case", list(DOWN_VOCABS))
def test_down_ranks_match_tiktoken(case: str, device: str, backend: str) -> None:
    merged, texts, _ = DOWN_VOCABS[case]
    ranks = hand_vocab(merged)
    assert_encodes_like_tiktoken(ranks, texts, device, backend)
    for text in texts:  # each alone too
        assert_encodes_like_tiktoken(ranks, [text], device, backend)


def test_between_case_differs_from_one_pass() -> None:
    """The vocabulary really separates the orders: tiktoken's result is not what merging every
    lowest-rank pair in one pass would give."""
    ranks = hand_vocab({"ab": 300, "aba": 260})
    assert tiktoken_toy(ranks).encode_ordinary("abab") == [260, ranks[b"b"]]
    assert naive_byte_pair_merge(ranks, b"abab") == [260, ranks[b"b"]]  # not [300, 300]


@BY_BACKEND
@pytest.mark.parametrize("case", [c for c in DOWN_VOCABS if DOWN_VOCABS[c][2]])
def test_merge_pieces_flags_irregular_pieces(case: str, device: str, backend: str) -> None:
    merged, _, flagged = DOWN_VOCABS[case]
    ranks = hand_vocab(merged)
    for text in flagged:
        irregular, out, _ = run_merge_pieces(ranks, [text.encode("utf-8")], device, backend)
        assert irregular == [True], f"{case}: {text!r} not flagged"
        assert (out == -1).all(), f"{case}: {text!r} flagged but written"


@BY_BACKEND
def test_merge_pieces_monotone_vocabulary_is_regular(device: str, backend: str) -> None:
    """Ranks that only go up along every merge chain never need the serial fallback."""
    ranks = hand_vocab({"ab": 300, "abc": 310, "aa": 320, "aaa": 330, "aaaa": 340})
    pieces = [b"abcabc", b"aaaaaaa", b"ababab", b"cab", b"a", b"aab", b"a" * 64]
    irregular, out, starts = run_merge_pieces(ranks, pieces, device, backend)
    assert irregular == [False] * len(pieces)
    for piece, tokens in zip(pieces, tokens_of(out, starts, pieces), strict=True):
        assert tokens == naive_byte_pair_merge(ranks, piece), piece


def run_merge_pieces(
    ranks: Ranks, pieces: list[bytes], device: str = "cpu", backend: str = "torch"
) -> tuple[list[bool], Any, list[int]]:
    """``merge_pieces`` (or the Triton kernel) on ``pieces`` laid back to back:
    (irregular flags, out, starts)."""
    vocab = Vocab.from_ranks("toy", "cl100k", ranks, {})
    tables = vocab.tables(torch.device(device))
    data = torch.tensor(list(b"".join(pieces)), dtype=torch.uint8, device=device)
    lens = torch.tensor([len(p) for p in pieces], dtype=torch.int64, device=device)
    starts = torch.cumsum(lens, 0) - lens
    out = torch.full((data.numel() + 1,), -1, dtype=torch.int64, device=device)
    irregular = merge_impl(backend)(data, starts, lens, tables, out)
    assert irregular.dtype == torch.bool and irregular.shape == (len(pieces),)
    return irregular.tolist(), out[:-1].cpu(), starts.tolist()


def tokens_of(out: Any, starts: list[int], pieces: list[bytes]) -> list[list[int]]:
    spans = [out[s : s + len(p)] for s, p in zip(starts, pieces, strict=True)]
    return [span[span >= 0].tolist() for span in spans]


# --------------------------------------------------------------------------------------------
# Random vocabularies: the detection of irregular pieces must be complete
# --------------------------------------------------------------------------------------------


def check_regular_pieces_are_sequential(
    device: str, backend: str, vocab: tuple[list[str], Ranks], data: st.DataObject
) -> None:
    """Every piece the parallel merge does not flag holds tiktoken's sequential result; flagged
    pieces are left unwritten.  (The Triton kernel takes pieces of up to 64 bytes.)"""
    chars, ranks = vocab
    units = sorted({bytes([b]) for char in chars for b in char.encode("utf-8")})
    piece = st.lists(st.sampled_from(units), min_size=1, max_size=64).map(b"".join)
    pieces = data.draw(st.lists(piece, min_size=1, max_size=8))
    irregular, out, starts = run_merge_pieces(ranks, pieces, device, backend)
    for flagged, piece_bytes, tokens in zip(
        irregular, pieces, tokens_of(out, starts, pieces), strict=True
    ):
        if flagged:
            assert tokens == [], f"flagged piece {piece_bytes!r} was written: {tokens}"
        else:
            expected = naive_byte_pair_merge(ranks, piece_bytes)
            assert tokens == expected, (
                f"{device}/{backend}: unflagged piece {piece_bytes!r} (batch {pieces!r}):\n"
                f"  parallel   = {tokens}\n  sequential = {expected}\n  {describe(ranks)}"
            )


def check_random_vocabulary(
    device: str, backend: str, vocab: tuple[list[str], Ranks], data: st.DataObject
) -> None:
    """Texts of up to 40 characters: whole-text pieces of more than 64 bytes exercise the
    kernel's torch fallback next to the kernel."""
    chars, ranks = vocab
    texts = data.draw(st.lists(texts_over(chars, 40), min_size=1, max_size=5), label="texts")
    assert_encodes_like_tiktoken(ranks, texts, device, backend)


@by_backend(TORCH_BACKENDS)
@settings(SETTINGS, max_examples=5 * MAX_EXAMPLES)
@given(vocab=toy_vocabs(), data=st.data())
def test_merge_pieces_regular_pieces_are_sequential(
    device: str, backend: str, vocab: tuple[list[str], Ranks], data: st.DataObject
) -> None:
    check_regular_pieces_are_sequential(device, backend, vocab, data)


@by_backend(TORCH_BACKENDS)
@settings(SETTINGS, max_examples=3 * MAX_EXAMPLES)
@given(vocab=toy_vocabs(), data=st.data())
def test_random_vocabulary_matches_tiktoken(
    device: str, backend: str, vocab: tuple[list[str], Ranks], data: st.DataObject
) -> None:
    check_random_vocabulary(device, backend, vocab, data)


if TRITON_BACKENDS:

    @by_backend(TRITON_BACKENDS)
    @settings(SETTINGS, max_examples=5 * TRITON_EXAMPLES)
    @given(vocab=toy_vocabs(), data=st.data())
    def test_triton_regular_pieces_are_sequential(
        device: str, backend: str, vocab: tuple[list[str], Ranks], data: st.DataObject
    ) -> None:
        check_regular_pieces_are_sequential(device, backend, vocab, data)

    @by_backend(TRITON_BACKENDS)
    @settings(SETTINGS, max_examples=3 * TRITON_EXAMPLES)
    @given(vocab=toy_vocabs(), data=st.data())
    def test_triton_random_vocabulary_matches_tiktoken(
        device: str, backend: str, vocab: tuple[list[str], Ranks], data: st.DataObject
    ) -> None:
        check_random_vocabulary(device, backend, vocab, data)


if not TRITON_BACKENDS:  # (where they are, they run here, above)

    def test_triton_kernel_under_interpreter() -> None:
        """This file's Triton tests in a fresh process under TRITON_INTERPRET=1 (no CUDA here);
        a visible skip without triton, a failure in CI (:func:`require_triton`)."""
        require_triton()
        root = Path(__file__).resolve().parents[2]
        result = subprocess.run(
            [sys.executable, "-m", "pytest", str(Path(__file__)), "-q", "-x", "-k", "triton"],
            cwd=root,
            env={**os.environ, "TRITON_INTERPRET": "1"},
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-3000:]
        passed = re.search(r"(\d+) passed", result.stdout)
        assert passed and int(passed.group(1)) >= 10, result.stdout[-3000:]


# HF-style files: merges in an arbitrary order, merged IDs unrelated to ranks -- compared with
# the `tokenizers` library itself.


@st.composite
def hf_vocabs(draw: st.DrawFn) -> tuple[list[str], dict[bytes, int], list[tuple[bytes, bytes]]]:
    chars = draw(st.lists(st.sampled_from(CHARS), min_size=1, max_size=4, unique=True))
    units = sorted({bytes([b]) for char in chars for b in char.encode("utf-8")})
    tokens = list(units)
    merges: list[tuple[bytes, bytes]] = []
    made = set(units)
    for _ in range(draw(st.integers(1, 30))):
        pool = tokens[-8:] if draw(st.booleans()) else tokens
        left, right = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        # One merge per resulting token (HF's heap can apply a stale entry whose pair maps to
        # the same new token; sequential BPE is only defined without such duplicates).
        if left + right not in made and len(left + right) <= 12:
            made.add(left + right)
            tokens.append(left + right)
            merges.append((left, right))
    order = draw(st.permutations(range(len(merges))))
    merges = [merges[i] for i in order]  # ranks not monotone in the order of creation
    ids = draw(st.permutations(range(256 + len(tokens) - len(units))))
    everything = [bytes([b]) for b in range(256)] + tokens[len(units) :]
    return chars, dict(zip(everything, ids, strict=True)), merges


@pytest.mark.parametrize("ignore_merges", [False, True])
@pytest.mark.parametrize("pattern", [LLAMA3_PAT_STR, CL100K_PATTERN], ids=["llama3", "cl100k"])
@SETTINGS
@given(vocab=hf_vocabs(), data=st.data())
def test_random_hf_merges_match_tokenizers(
    pattern: str,
    ignore_merges: bool,
    vocab: tuple[list[str], dict[bytes, int], list[tuple[bytes, bytes]]],
    data: st.DataObject,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tokenizers import Tokenizer

    chars, ids, merges = vocab
    # (Oniguruma, which HF uses, reads cl100k's possessive `{1,3}+` as a repeat: from_hf_json
    # must split digit runs the way tokenizers does, not the way tiktoken does.)
    spec = hf_byte_level_json(ids, merges, pattern=pattern, ignore_merges=ignore_merges)
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    hf = Tokenizer.from_file(str(path))
    enc = Encoding.from_hf_json(path)
    texts = data.draw(st.lists(texts_over(chars), min_size=1, max_size=5), label="texts")
    got_ids, lengths = enc.encode_batch_to_tensor(texts)
    for row, text in enumerate(texts):
        expected = hf.encode(text, add_special_tokens=False).ids
        got = got_ids[row, : lengths[row]].tolist()
        assert got == expected, (
            f"text {text!r}: ours {got} != tokenizers {expected}\n  merges {merges}"
        )


# Pass limit: after `max_passes`, pieces go on with the sequential heap from where they are.


@SETTINGS
@given(
    texts=st.lists(
        st.text(alphabet=st.sampled_from(list("abcab ab日本語")), min_size=1, max_size=30),
        min_size=1,
        max_size=6,
    ),
    max_passes=st.integers(0, 4),
)
def test_stopped_passes_then_merge_tokens_equal_the_full_merge(
    texts: list[str], max_passes: int
) -> None:
    from oracles.bpe import tiktoken_reference

    from tensortext.bpe import get_encoding
    from tensortext.bpe.serial import merge_parts_by_rank, merge_tokens

    enc = get_encoding("cl100k_base")
    tables = enc._vocab.tables(torch.device("cpu"))
    pieces = [text.encode("utf-8") for text in texts]
    data = torch.frombuffer(bytearray(b"".join(pieces)), dtype=torch.uint8)
    lens = torch.tensor([len(piece) for piece in pieces])
    starts = torch.cumsum(lens, 0) - lens
    out = torch.full((data.numel() + 1,), -1)
    unfinished = torch.zeros(len(pieces), dtype=torch.bool)
    irregular = merge_pieces(
        data, starts, lens, tables, out, max_passes=max_passes, unfinished=unfinished
    )
    assert not irregular.any()
    reference = tiktoken_reference("cl100k_base")
    for index, piece in enumerate(pieces):
        span = out[int(starts[index]) : int(starts[index] + lens[index])]
        tokens = span[span >= 0].tolist()
        if unfinished[index]:  # both continuations: over the pair table, and rank at a time
            vocab = enc._vocab
            by_rank = merge_parts_by_rank(
                [vocab.tokens[t] for t in tokens], vocab.mergeable, vocab.tokens
            )  # type: ignore[misc]
            tokens = [token for _, token in merge_tokens(tokens, vocab.pairs)]
            assert by_rank == tokens, piece
        expected = reference._encode_single_piece(piece) if len(piece) > 1 else None
        expected = expected or [reference.encode_single_token(piece)]
        assert tokens == expected, piece


def test_long_pieces_finish_sequentially(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random CJK without punctuation is one long piece needing thousands of distinct ranks."""
    import random

    from oracles.bpe import tiktoken_reference

    import tensortext.bpe.engine as engine
    from tensortext.bpe import get_encoding

    calls: list[int] = []
    original = engine.merge_parts_by_rank

    def counting(parts: list[bytes], ranks: Any, tokens: Any) -> Any:
        calls.append(len(parts))
        return original(parts, ranks, tokens)

    monkeypatch.setattr(engine, "merge_parts_by_rank", counting)
    rng = random.Random(0)
    text = "".join(chr(rng.randrange(0x4E00, 0x4E00 + 3000)) for _ in range(3000))
    for name in ("cl100k_base", "o200k_base"):
        expected = tiktoken_reference(name).encode_ordinary(text)
        assert get_encoding(name).encode_ordinary(text) == expected  # the host encoder
        ids, lengths = get_encoding(name).encode_batch_to_tensor(
            [text], disallowed_special=(), merge_backend="torch"
        )
        assert ids[0, : lengths[0]].tolist() == expected  # the tensor engine
    assert calls, "the pass limit was never reached: the sequential continuation is untested"


@settings(SETTINGS, max_examples=3 * MAX_EXAMPLES)
@given(vocab=toy_vocabs(), data=st.data(), max_passes=st.integers(0, 3))
def test_random_vocabulary_with_a_pass_limit_matches_tiktoken(
    vocab: tuple[list[str], Ranks], data: st.DataObject, max_passes: int
) -> None:
    """Stopping the passes early (even right after a pass that went irregular) and finishing
    with the heap still gives tiktoken's IDs, for vocabularies whose ranks go down."""
    import tensortext.bpe.engine as engine

    chars, ranks = vocab
    texts = data.draw(st.lists(texts_over(chars, 40), min_size=1, max_size=5), label="texts")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "MAX_PASSES", max_passes)
        assert_encodes_like_tiktoken(ranks, texts)
