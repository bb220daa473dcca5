"""Every encoder of an encoding, checked against tiktoken on the same texts (used by the tests
of hash collisions and UTF-8 boundaries): the C encoder alone and as ``encode``'s default on a
CPU, the Python encoder (``TENSORTEXT_NATIVE=0`` when an encoding first encodes) and the tensor
engine (``merge_backend="torch"``)."""

from __future__ import annotations

import os
from functools import cache
from typing import Any
from unittest import mock

from oracles.bpe import tiktoken_reference

from tensortext.bpe import Encoding, get_encoding, native
from tensortext.bpe.unicode import flag_bytes

NATIVE = native._native
"""The C extension, or ``None`` where it was built without a C compiler."""


@cache
def c_encoder(name: str) -> Any:
    """The C encoder of tiktoken's own ranks for ``name`` (whatever ``encode`` would choose)."""
    reference = tiktoken_reference(name)
    ranks = reference._mergeable_ranks
    kind = native._KIND_CODES[get_encoding(name).pattern_kind]
    return NATIVE.Encoder(list(ranks), list(ranks.values()), flag_bytes(), kind)


@cache
def python_encoding(name: str) -> Encoding:
    """``name``, built afresh, on the Python encoder: ``TENSORTEXT_NATIVE`` is read when an
    encoding first encodes. (It shares the registry's vocabulary, and so its tensor tables.)"""
    with mock.patch.dict(os.environ, {"TENSORTEXT_NATIVE": "0"}):
        assert not native.native_available()
        enc = Encoding._from_vocab(get_encoding(name)._vocab)
        enc.encode_ordinary("warm up")
    return enc


def assert_every_backend(name: str, texts: list[str]) -> None:
    """tiktoken's rows from the C encoder (alone, and as ``encode``'s default on a CPU), the
    Python encoder and the tensor engine."""
    expected = [tiktoken_reference(name).encode_ordinary(text) for text in texts]
    enc = get_encoding(name)
    ids, lengths = enc.encode_batch_to_tensor(texts, device="cpu", merge_backend="torch")
    backends = {
        "C encoder": c_encoder(name).encode_many(texts),
        "encode (default)": enc.encode_ordinary_batch(texts),
        "Python encoder": python_encoding(name).encode_ordinary_batch(texts),
        "tensor engine": [ids[row, : lengths[row]].tolist() for row in range(len(texts))],
    }
    for backend, rows in backends.items():
        for text, row, want in zip(texts, rows, expected, strict=True):
            assert row == want, f"{name}, {backend}: {text!r}: {row} != tiktoken's {want}"
