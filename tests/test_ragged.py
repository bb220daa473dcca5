import torch

from tensortext.ragged import pad_ragged, pad_ragged_refs, unpad


def test_pad_ragged():
    ids, lengths = pad_ragged([[1, 2, 3], [], [4]])
    assert ids.shape == (3, 3)
    assert lengths.tolist() == [3, 0, 1]
    assert ids[0].tolist() == [1, 2, 3] and ids[2, 0] == 4


def test_pad_ragged_empty_batch():
    ids, lengths = pad_ragged([])
    assert ids.shape == (0, 1) and lengths.shape == (0,)


def test_pad_ragged_refs_variable_slots():
    ids, lengths = pad_ragged_refs([[[1, 2]], [[3], [4, 5, 6]]])
    assert ids.shape == (2, 2, 3)
    assert lengths.tolist() == [[2, 0], [1, 3]]
    assert ids[1, 1].tolist() == [4, 5, 6]
    assert ids.dtype == lengths.dtype == torch.long


def test_unpad_inverts_pad_ragged():
    rows = [[1, 2, 3], [], [4]]
    assert unpad(*pad_ragged(rows)) == rows
    assert unpad(*pad_ragged([])) == []
