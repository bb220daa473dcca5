"""``decode`` and its family take what tiktoken's take: lists, numpy arrays of any integer dtype,
``np.memmap`` slices (a nanoGPT ``train.bin``) and torch tensors; the results equal tiktoken's
on the same IDs as a list (r50k_base, whose IDs fit uint16)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from oracles.bpe import tiktoken_reference

import tensortext

TEXT = "hello world, Caf\u00e9 \u4f60\u597d \U0001f600"
DTYPES = [np.uint16, np.int32, np.uint32, np.int64, np.uint64]


@pytest.fixture(scope="module")
def enc() -> tensortext.Encoding:
    return tensortext.get_encoding("r50k_base")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda dtype: np.dtype(dtype).name)
def test_numpy_arrays_decode_as_lists(enc: tensortext.Encoding, dtype: type) -> None:
    reference = tiktoken_reference("r50k_base")
    ids = reference.encode(TEXT)
    array = np.array(ids, dtype=dtype)
    assert enc.decode(array) == reference.decode(ids) == TEXT
    assert enc.decode_bytes(array) == reference.decode_bytes(ids)
    assert enc.decode_tokens_bytes(array) == reference.decode_tokens_bytes(ids)
    assert enc.decode_with_offsets(array) == reference.decode_with_offsets(ids)
    assert enc.decode_batch([array, array[:2]]) == reference.decode_batch([ids, ids[:2]])
    assert enc.decode_batch(np.stack([array, array])) == [TEXT, TEXT]
    assert enc.decode(enc.encode_to_numpy(TEXT)) == TEXT  # the round trip a user tries first


def test_a_memmap_slice_decodes(enc: tensortext.Encoding, tmp_path: Path) -> None:
    """nanoGPT's ``np.memmap(path, dtype=np.uint16)`` of a ``train.bin``, sliced."""
    ids = enc.encode(TEXT)
    path = tmp_path / "train.bin"
    np.array(ids, dtype=np.uint16).tofile(path)
    data = np.memmap(path, dtype=np.uint16, mode="r")
    assert enc.decode(data[:5]) == enc.decode(ids[:5])
    assert enc.decode(data) == TEXT


def test_tensors_decode(enc: tensortext.Encoding) -> None:
    ids = enc.encode(TEXT)
    assert enc.decode(torch.tensor(ids)) == TEXT
    assert enc.decode(torch.tensor(ids, dtype=torch.int32)) == TEXT
    assert enc.decode_batch(torch.tensor([ids, ids])) == [TEXT, TEXT]


def test_a_small_dtype_batch_longer_than_its_range(enc: tensortext.Encoding) -> None:
    """The lengths of a ``[B, L]`` tensor are int64, whatever the IDs' dtype (300 > 255)."""
    assert enc.decode_batch(torch.zeros(1, 300, dtype=torch.uint8)) == ["!" * 300]  # ID 0: "!"


@pytest.mark.parametrize(
    ("tokens", "error", "message"),
    [
        (np.array([1.0, 2.0]), TypeError, "dtype float64"),
        (np.array([True]), TypeError, "dtype bool"),
        (np.array([[1, 2]]), ValueError, "one-dimensional"),
        (np.array([10**9], dtype=np.int64), ValueError, "not a token"),
        (np.array([-1], dtype=np.int32), ValueError, "not a token"),
    ],
    ids=["float", "bool", "2-d", "too-large", "negative"],
)
def test_bad_arrays_are_refused(
    enc: tensortext.Encoding, tokens: np.ndarray, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        enc.decode(tokens)


def test_a_one_dimensional_array_is_no_batch(enc: tensortext.Encoding) -> None:
    with pytest.raises(ValueError, match=r"\[B, L\] array"):
        enc.decode_batch(np.array([1, 2, 3]))
