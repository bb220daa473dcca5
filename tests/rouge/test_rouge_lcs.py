"""The bit-parallel LCS (``tensortext.rouge.lcs``) against rouge-score's dynamic programme.

Tiny alphabets make matches frequent (the carries ripple far); lengths straddle the word size
(56 payload bits: 55, 56, 57, 111, 112, 113) and the sizes the issue names (0, 1, 61..65, 127,
128, 200, 1000); several pairs of different lengths share one call, so padding and the
sentinels are exercised; the hypothesis chunk size is forced down to 1 and odd sizes.
"""

from __future__ import annotations

import random

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from oracles.rouge import dp_lcs, numpy_lcs
from strategies import SETTINGS

import tensortext.rouge.lcs as lcs_module
from tensortext.rouge import lcs_lengths

SIZES = [0, 1, 55, 56, 57, 61, 62, 63, 64, 65, 111, 112, 113, 127, 128, 200]


def _pack(seqs, dtype, junk):
    width = max([0, *map(len, seqs)]) + 2
    ids = torch.full((len(seqs), width), junk, dtype=dtype)
    for row, seq in enumerate(seqs):
        ids[row, : len(seq)] = torch.tensor(seq, dtype=dtype)
    return ids, torch.tensor([len(seq) for seq in seqs])


def _lcs(pairs, dtype=torch.int64, device="cpu"):
    hyps, hyp_lens = _pack([a for a, _ in pairs], dtype, junk=0)
    refs, ref_lens = _pack([b for _, b in pairs], dtype, junk=0)  # junk = a real token
    out = lcs_lengths(hyps.to(device), hyp_lens.to(device), refs.to(device), ref_lens.to(device))
    assert out.dtype == torch.int64 and out.device.type == torch.device(device).type
    return out.cpu().tolist()


def _random_pairs(seed, count, sizes, alphabets=(1, 2, 3, 5)):
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        k = rng.choice(alphabets)
        a = [rng.randrange(k) for _ in range(rng.choice(sizes))]
        b = [rng.randrange(k) for _ in range(rng.choice(sizes))]
        pairs.append((a, b))
    return pairs


@pytest.mark.parametrize("dtype", [torch.int16, torch.int32, torch.int64, torch.uint8])
def test_word_boundaries_against_rouge_score_dp(dtype):
    pairs = _random_pairs(dtype.itemsize, 120, SIZES)
    expected = [dp_lcs(a, b) for a, b in pairs]
    assert _lcs(pairs, dtype) == expected


def test_long_pairs_against_numpy_dp():
    pairs = _random_pairs(7, 6, [1000, 999, 1001, 300], alphabets=(2, 3, 26))
    pairs += [([0] * 1000, [0] * 1000), ([0] * 1000, [1] * 1000), ([0, 1] * 500, [1, 0] * 500)]
    assert _lcs(pairs) == [numpy_lcs(a, b) for a, b in pairs]


def test_numpy_dp_is_rouge_score_dp():
    pairs = _random_pairs(3, 60, [0, 1, 5, 17, 40])
    assert [numpy_lcs(a, b) for a, b in pairs] == [dp_lcs(a, b) for a, b in pairs]


@pytest.mark.parametrize("chunk_bytes", [1, 64 * 3 * 7, 64 * 5 * 13])
def test_any_chunk_size(monkeypatch, chunk_bytes):
    """Chunks of 1 hypothesis position, and of sizes that do not divide the length."""
    monkeypatch.setattr(lcs_module, "_CHUNK_BYTES", chunk_bytes)
    pairs = _random_pairs(11, 12, [0, 3, 57, 130])
    assert _lcs(pairs) == [dp_lcs(a, b) for a, b in pairs]


def test_edge_cases():
    cases = {
        "both empty": ([], []),
        "empty hypothesis": ([], [1, 2]),
        "empty reference": ([1, 2], []),
        "one token, equal": ([4], [4]),
        "one token, different": ([4], [5]),
        "no common token": ([1] * 70, [2] * 70),
        "identical across words": (list(range(200)), list(range(200))),
        "reversed": (list(range(120)), list(range(119, -1, -1))),
        "subsequence": (list(range(0, 300, 3)), list(range(300))),
    }
    pairs = list(cases.values())
    assert dict(zip(cases, _lcs(pairs), strict=True)) == {
        name: dp_lcs(a, b) for name, (a, b) in cases.items()
    }


def test_no_pairs_and_zero_width():
    empty = torch.zeros(0, 0, dtype=torch.long)
    assert lcs_lengths(empty, torch.zeros(0), empty, torch.zeros(0)).tolist() == []
    zero = torch.zeros(2, 0, dtype=torch.long)
    assert lcs_lengths(zero, torch.zeros(2), zero, torch.tensor([0, -1])).tolist() == [0, 0]


@SETTINGS
@given(
    k=st.integers(1, 4),
    data=st.data(),
)
def test_random_pairs_against_rouge_score_dp(k, data):
    seq = st.lists(st.integers(0, k - 1), max_size=150)
    pairs = data.draw(st.lists(st.tuples(seq, seq), min_size=1, max_size=4), label="pairs")
    assert _lcs(pairs) == [dp_lcs(a, b) for a, b in pairs]


def test_cuda_equals_dp(device):
    pairs = _random_pairs(5, 40, SIZES)
    assert _lcs(pairs, torch.int16, device) == [dp_lcs(a, b) for a, b in pairs]
