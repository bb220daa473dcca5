"""Vocabularies read by the C encoder (``_native.from_tiktoken``;
:func:`tensortext.bpe.native.vocab_from_tiktoken`): the same tokens, IDs and errors as the
Python reader, no Python object per token until ``Vocab.tokens`` or ``mergeable`` is read, and
the Python reader wherever the file is not in the canonical form (it names the bad line).
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_reference
from strategies import SETTINGS

import tensortext
from tensortext.bpe import Encoding, native
from tensortext.bpe.registry import ENCODINGS, RANKS_SHA256, mergeable_ranks, vocabulary_file
from tensortext.bpe.unicode import flag_bytes
from tensortext.bpe.vocab import Vocab, id_bound, read_tiktoken_file, read_vocabulary_bytes

_native = pytest.importorskip("tensortext.bpe._native") if native.native_available() else None
pytestmark = pytest.mark.skipif(_native is None, reason="the C encoder is not built")

BYTES = {bytes([b]): b for b in range(256)}
CL100K = 1  # the C encoder's code of the cl100k split


def file_bytes(ranks: dict[bytes, int], *, newline: str = "\n") -> bytes:
    lines = (f"{base64.b64encode(token).decode()} {rank}{newline}" for token, rank in ranks.items())
    return "".join(lines).encode("ascii")


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_shipped_files_read_as_in_python(name: str) -> None:
    data = read_vocabulary_bytes(vocabulary_file(name), expected_hash=RANKS_SHA256[name])
    expected = read_tiktoken_file(vocabulary_file(name))
    encoder = _native.from_tiktoken(data, flag_bytes(), CL100K)
    assert encoder.ranks() == expected
    assert encoder.counts() == (len(expected), max(expected.values()) + 1)
    tokens = encoder.tokens_by_id(max(expected.values()) + 1)
    assert all(tokens[rank] == token for token, rank in expected.items())
    assert encoder.token_bytes(expected[b" amazing"]) == b" amazing"
    assert encoder.token_bytes(-1) is encoder.token_bytes(len(tokens)) is None


@pytest.mark.parametrize(
    "data",
    [
        b"",  # no tokens
        file_bytes({**BYTES, b"ab": 256}).replace(b"YWI= 256", b"YWI= 255"),  # a rank twice
        file_bytes({**BYTES, b"ab": 256}) + b"YWI= 257\n",  # a token twice
        file_bytes({bytes([b]): b for b in range(255)}),  # byte 0xff missing
        file_bytes(BYTES) + b"YWI 256\n",  # base64 without its padding
        file_bytes(BYTES) + b"YW*= 256\n",  # not base64
        file_bytes(BYTES) + b"YWI=  256\n",  # two spaces
        file_bytes(BYTES) + b"YWI=\t256\n",  # a tab
        file_bytes(BYTES) + b"YWI= -256\n",  # a sign
        file_bytes(BYTES) + b"YWI= 2147483648\n",  # 2**31
        file_bytes(BYTES) + b"YWI= 99999999999999999999999\n",
        file_bytes(BYTES) + b"YWI=\n",  # no rank
        file_bytes(BYTES) + b" 256\n",  # no token
        file_bytes(BYTES) + b"= 256\n",
    ],
    ids=lambda data: repr(data[-24:]),
)
def test_anything_not_canonical_goes_to_the_python_reader(data: bytes) -> None:
    assert _native.from_tiktoken(data, flag_bytes(), CL100K) is None


def test_crlf_blank_lines_and_no_final_newline() -> None:
    ranks = {**BYTES, b"ab": 256, b"abc": 300}
    data = file_bytes(ranks, newline="\r\n") + b"\r\n\n" + b"YWJjZA== 301"
    assert _native.from_tiktoken(data, flag_bytes(), CL100K).ranks() == {**ranks, b"abcd": 301}


@given(
    st.lists(st.binary(min_size=2, max_size=40), max_size=60, unique=True),
    st.randoms(use_true_random=False),
)
@SETTINGS
def test_random_vocabularies_read_as_in_python(
    tmp_path_factory: pytest.TempPathFactory, extra: list[bytes], rng: object
) -> None:
    extra = [token for token in extra if token not in BYTES]
    ids = list(range(256, 256 + 3 * len(extra)))
    rng.shuffle(ids)  # type: ignore[attr-defined]
    ranks = {**BYTES, **dict(zip(extra, ids, strict=False))}
    path = tmp_path_factory.mktemp("vocab") / "toy.tiktoken"
    path.write_bytes(file_bytes(ranks))
    encoder = _native.from_tiktoken(path.read_bytes(), flag_bytes(), CL100K)
    assert encoder.ranks() == read_tiktoken_file(path) == ranks
    for token, token_id in ranks.items():
        assert encoder.token_bytes(token_id) == token
        assert encoder.encode_piece(token) == [token_id]


# --------------------------------------------------------------------------------------------
# The vocabulary the C encoder holds
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "r50k_base", "o200k_harmony"])
def test_get_encoding_is_held_by_the_c_encoder_and_agrees(name: str) -> None:
    """Held by C (nothing built per token), then, once read, the same tokens as the Python
    reader, and tiktoken's IDs, n_vocab and decode."""
    spec = ENCODINGS[name]
    held = Encoding._from_vocab(
        native.vocab_from_tiktoken(  # a fresh one: get_encoding's may have been read already
            name,
            spec.pat_str,
            read_vocabulary_bytes(
                vocabulary_file(spec.ranks)
                if spec.ranks != "r50k_base"
                else Path(native.__file__).with_name("data") / "r50k_base.tiktoken.gz"
            ),
            dict(spec.special_tokens),
            explicit_n_vocab=spec.explicit_n_vocab,
        ),
        spec.pat_str,
    )
    vocab = held._vocab
    assert vocab.native is not None
    assert "tokens" not in vocab.__dict__ and "mergeable" not in vocab.__dict__
    reference = tiktoken_reference(name)
    assert held.n_vocab == reference.n_vocab and "tokens" not in vocab.__dict__
    text = "hello world <|endoftext|> naïve 日本語 😀  \n\n 12345"
    ids = held.encode(text, allowed_special="all")
    assert ids == reference.encode(text, allowed_special="all")
    assert "tokens" not in vocab.__dict__ and "mergeable" not in vocab.__dict__
    assert held.decode(ids) == text  # builds tokens
    assert vocab.mergeable == mergeable_ranks(spec.ranks)
    python = Vocab.from_ranks(
        name, spec.pat_str, mergeable_ranks(spec.ranks), dict(spec.special_tokens)
    )
    assert vocab.tokens == python.tokens and vocab.n_vocab == python.n_vocab


def test_get_encoding_holds_its_vocabulary_in_c() -> None:
    assert tensortext.get_encoding("cl100k_base")._vocab.native is not None


def test_a_held_vocabulary_pickles_with_its_tokens() -> None:
    spec = ENCODINGS["cl100k_base"]
    data = read_vocabulary_bytes(vocabulary_file("cl100k_base"))
    vocab = native.vocab_from_tiktoken("cl100k_base", spec.pat_str, data, {"<|x|>": 100300})
    assert vocab is not None
    copy = pickle.loads(pickle.dumps(vocab))
    assert copy.native is None and copy.tokens == vocab.tokens
    assert copy.mergeable == vocab.mergeable and copy.special_tokens == {"<|x|>": 100300}
    assert copy.tokens[100300] == b"<|x|>"


def test_the_special_token_checks_are_the_constructors(tmp_path: Path) -> None:
    path = tmp_path / "toy.tiktoken"
    path.write_bytes(file_bytes({**BYTES, b"ab": 256}))
    for specials, message in [
        ({"<|s|>": 256}, "special token '<|s|>' reuses ID 256 of a mergeable token"),
        ({"<|s|>": -1}, "special token '<|s|>' has ID -1"),
        ({"<|s|>": 10**9}, "special token '<|s|>' has ID 1000000000"),
    ]:
        for read in (
            lambda specials=specials: Encoding.from_tiktoken_file(
                path, pat_str="cl100k", special_tokens=specials
            ),
            lambda specials=specials: Encoding(
                "toy",
                pat_str="cl100k",
                mergeable_ranks=read_tiktoken_file(path),
                special_tokens=specials,
            ),
        ):
            with pytest.raises(ValueError, match=message.replace("|", r"\|")):
                read()
    with pytest.raises(TypeError, match="special_tokens keys must be str"):
        bad: dict = {b"x": 300}
        Encoding.from_tiktoken_file(path, pat_str="cl100k", special_tokens=bad)


def test_explicit_n_vocab_is_checked() -> None:
    spec = ENCODINGS["cl100k_base"]
    data = read_vocabulary_bytes(vocabulary_file("cl100k_base"))
    with pytest.raises(ValueError, match="explicit_n_vocab=5, but the IDs need 100277"):
        native.vocab_from_tiktoken(
            "cl100k_base", spec.pat_str, data, dict(spec.special_tokens), explicit_n_vocab=5
        )


def test_a_malformed_file_is_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "toy.tiktoken.gz"
    path.write_bytes(gzip.compress(file_bytes(BYTES) + b"YWI= 256\nnot base64!\n"))
    with pytest.raises(
        ValueError, match=r"toy\.tiktoken\.gz:258: malformed token or rank in b'not base64!'"
    ):
        Encoding.from_tiktoken_file(path, pat_str="cl100k", special_tokens={})


def test_switched_off_the_file_is_read_in_python() -> None:
    program = (
        "import tensortext\n"
        "enc = tensortext.get_encoding('cl100k_base')\n"
        "print(enc._vocab.native is None, enc.encode('hello world'))\n"
    )
    env = {**os.environ, "TENSORTEXT_NATIVE": "0"}
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip() == "True [15339, 1917]"


def test_replace_makes_a_vocabulary_of_its_own() -> None:
    """``dataclasses.replace`` of a held vocabulary copies the tokens, not the C encoder (whose
    split and rule would no longer be the copy's)."""
    held = tensortext.get_encoding("r50k_base")._vocab
    copy = dataclasses.replace(held, whole_piece_lookup=False)
    assert copy.native is None and copy.mergeable == held.mergeable
    assert native.native_encoder(copy) is not held.native


def test_a_subclass_is_made_by_its_constructor(tmp_path: Path) -> None:
    class Named(Encoding):
        def __init__(self, name: str, **kwargs: Any) -> None:
            super().__init__(name, **kwargs)
            self.note = "made by __init__"

    path = tmp_path / "toy.tiktoken"
    path.write_bytes(file_bytes({**BYTES, b"ab": 256}))
    enc = Named.from_tiktoken_file(path, pat_str="cl100k", special_tokens={})
    assert enc.note == "made by __init__" and enc.encode("abab") == [256, 256]


def test_ranks_past_the_file_bound_are_refused_by_both_readers(tmp_path: Path) -> None:
    """The bound on a file's ranks counts its lines, not the special tokens given with it."""
    path = tmp_path / "toy.tiktoken"
    path.write_bytes(file_bytes({**BYTES, b"ab": id_bound(257)}))
    with pytest.raises(ValueError, match=r"toy\.tiktoken:257: rank 1049604 is too large"):
        Encoding.from_tiktoken_file(path, pat_str="cl100k", special_tokens={"<|s|>": 257})
