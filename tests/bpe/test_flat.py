"""``Encoding.encode_batch_to_flat``: the batch without padding (``Flat(ids [T], lengths [B])``),
row for row tiktoken's IDs and ``encode_batch_to_tensor``'s, with memory that follows the
tokens, not the longest row. (Post-processor tokens: ``test_hf_json.py``.)"""

from __future__ import annotations

import pytest
import torch
from bpe_strategies import TIKTOKEN_CHAR, rich_texts
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_reference
from strategies import SETTINGS

from tensortext import Flat, get_encoding


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR), max_size=6))
def test_rows_equal_tiktoken_and_the_padded_batch(name: str, texts: list[str]) -> None:
    enc = get_encoding(name)
    flat = enc.encode_batch_to_flat(texts, disallowed_special=())
    expected = tiktoken_reference(name).encode_ordinary_batch(texts)
    assert isinstance(flat, Flat)
    assert flat.tolist() == expected
    assert flat.tolist() == enc.encode_batch_to_tensor(texts, disallowed_special=()).tolist()
    assert flat.offsets.tolist() == [0, *torch.tensor([len(r) for r in expected]).cumsum(0)]


def test_one_long_document_costs_only_its_own_length() -> None:
    """256 short texts and one of 200 KB: the padded batch is 257 x the long row; the flat one
    holds the tokens."""
    enc = get_encoding("cl100k_base")
    texts = ["short text, a few tokens"] * 256 + ["word " * 40_000]
    flat = enc.encode_batch_to_flat(texts)
    padded = enc.encode_batch_to_tensor(texts)
    assert flat.ids.numel() == int(flat.lengths.sum()) == 256 * 6 + 40_001  # "word" x40k, " "
    assert padded.ids.numel() == 257 * 40_001
    assert flat.tolist() == padded.tolist()


def test_edge_batches() -> None:
    enc = get_encoding("cl100k_base")
    empty = enc.encode_batch_to_flat([])
    assert empty.ids.shape == (0,) and empty.lengths.shape == (0,)
    assert empty.offsets.tolist() == [0] and empty.tolist() == []
    assert enc.encode_batch_to_flat(["", ""]).tolist() == [[], []]
    special = enc.encode_batch_to_flat(["a<|endoftext|>"], allowed_special="all")
    assert special.tolist() == [[64, 100257]]
    with pytest.raises(ValueError, match="disallowed_special"):
        enc.encode_batch_to_flat(["<|endoftext|>"])
    with pytest.raises(TypeError, match="texts"):
        enc.encode_batch_to_flat("not a list")  # type: ignore[arg-type]
