"""The ragged-batch convention: ``Padded``, ``PAD_ID``, ``pad_ragged`` and ``pad_ragged_refs``."""

import pytest
import torch

from tensortext.padded import MISSING_REF, PAD_ID, Padded, pad_ragged, pad_ragged_refs


def test_pad_ragged():
    ids, lengths = pad_ragged([[1, 2, 3], [], [4]])
    assert ids.shape == (3, 3)
    assert lengths.tolist() == [3, 0, 1]
    assert ids[0].tolist() == [1, 2, 3] and ids[2, 0] == 4


def test_padding_holds_pad_id():
    padded = pad_ragged([[0, 5], [], [7]])
    assert PAD_ID == -1
    assert padded.ids.tolist() == [[0, 5], [-1, -1], [7, -1]]
    assert isinstance(padded, Padded) and padded.lengths.dtype == torch.long


def test_pad_ragged_empty_batch():
    ids, lengths = pad_ragged([])
    assert ids.shape == (0, 1) and lengths.shape == (0,)
    # Issue 16 item 17: no sentences used to fail to reshape ("0 elements into [0, 1, -1]").
    ids, lengths = pad_ragged_refs([])
    assert ids.shape == (0, 1, 1) and lengths.shape == (0, 1)


def test_pad_ragged_refs_variable_slots():
    ids, lengths = pad_ragged_refs([[[1, 2]], [[3], [4, 5, 6]]])
    assert ids.shape == (2, 2, 3)
    assert lengths.tolist() == [[2, MISSING_REF], [1, 3]]  # an unused slot is missing
    assert ids[1, 1].tolist() == [4, 5, 6]
    assert ids[0, 1].tolist() == [PAD_ID] * 3
    assert ids.dtype == lengths.dtype == torch.long


def test_pad_ragged_refs_empty_reference_is_not_missing():
    """Issue 16 item 5: an empty reference (length 0) and an unused slot (MISSING_REF) differ."""
    ids, lengths = pad_ragged_refs([[[5, 6], []], [[7]], []])
    assert MISSING_REF == -1
    assert lengths.tolist() == [[2, 0], [1, MISSING_REF], [MISSING_REF, MISSING_REF]]
    assert ids[0, 1].tolist() == ids[1, 1].tolist() == [PAD_ID] * 2


def test_tolist_inverts_pad_ragged():
    rows = [[1, 2, 3], [], [4]]
    assert pad_ragged(rows).tolist() == rows
    assert pad_ragged([]).tolist() == []


def test_tolist_needs_two_dimensions():
    refs = pad_ragged_refs([[[1, 2]]])
    with pytest.raises(ValueError, match=r"ids \[B, L\]"):
        refs.tolist()


def test_to_moves_both_tensors():
    padded = pad_ragged([[1]]).to("cpu")
    assert padded.ids.device == padded.lengths.device == torch.device("cpu")
