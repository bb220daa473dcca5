"""The shared n-gram core against a brute-force Python oracle."""

from __future__ import annotations

import os

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tensortext.ngrams import compact_ids, count_ngrams, ngram_ids, strip_padding

EXAMPLES = int(os.environ.get("TENSORTEXT_HYPOTHESIS_EXAMPLES", "60"))


def oracle_equal(tokens, lengths, groups, order, a, b):
    """Whether positions a=(s, i) and b=(t, j) hold the same valid n-gram of `order`."""
    (s, i), (t, j) = a, b
    if i + order > lengths[s] or j + order > lengths[t] or groups[s] != groups[t]:
        return None
    return tokens[s][i : i + order] == tokens[t][j : j + order]


@st.composite
def pools(draw):
    rows = draw(st.integers(1, 5))
    width = draw(st.integers(0, 9))
    big = draw(st.booleans())
    token = st.integers(-3, 3) if not big else st.sampled_from([0, 2**20, 2**40, -(2**40), 2**62])
    tokens = [[draw(token) for _ in range(width)] for _ in range(rows)]
    lengths = [draw(st.integers(0, width)) for _ in range(rows)]
    groups = [draw(st.integers(0, rows - 1)) for _ in range(rows)]
    return tokens, lengths, groups


@settings(max_examples=EXAMPLES, deadline=None)
@given(pools(), st.integers(1, 4))
def test_ngram_ids_match_the_oracle(pool, max_order):
    tokens, lengths, groups = pool
    ids = ngram_ids(
        torch.tensor(tokens, dtype=torch.long).view(len(tokens), -1),
        torch.tensor(lengths),
        torch.tensor(groups),
        max_order,
    )
    rows, width = len(tokens), len(tokens[0])
    assert ids.shape == (max_order, rows, width)
    positions = [(s, i) for s in range(rows) for i in range(width)]
    for order in range(1, max_order + 1):
        table = ids[order - 1]
        for a in positions:
            valid = a[1] + order <= lengths[a[0]]
            assert (table[a] >= 0) == valid, (order, a)
            if not valid:
                assert table[a] == -1
                continue
            assert 0 <= table[a] < rows * width
            for b in positions:
                same = oracle_equal(tokens, lengths, groups, order, a, b)
                if same is not None:
                    assert (table[a] == table[b]) == same, (order, a, b)


def test_compact_ids_are_dense_and_ordered():
    keys = torch.tensor([50, -7, 50, 3, 2**62, -7])
    assert compact_ids(keys).tolist() == [2, 0, 2, 1, 3, 0]
    assert compact_ids(torch.zeros(0, dtype=torch.long)).shape == (0,)


def test_strip_padding_removes_pads_anywhere():
    ids = torch.tensor([[9, 1, 9, 2, 9], [9, 9, 9, 9, 9], [3, 4, 5, 6, 7]])
    stripped, lengths = strip_padding(ids, 9)
    assert lengths.tolist() == [2, 0, 5]
    assert stripped[0, :2].tolist() == [1, 2]
    assert stripped[2].tolist() == [3, 4, 5, 6, 7]


def test_empty_pool():
    ids = ngram_ids(torch.zeros(0, 4, dtype=torch.long), torch.zeros(0), torch.zeros(0), 3)
    assert ids.shape == (3, 0, 4)


def test_orders_longer_than_the_pool():
    ids = ngram_ids(torch.tensor([[5], [5]]), torch.tensor([1, 1]), torch.tensor([0, 0]), 4)
    assert ids[0].tolist() == [[0], [0]]
    assert (ids[1:] == -1).all()


def test_count_ngrams_per_slot():
    tokens = torch.tensor([[1, 2, 1, 2], [1, 2, 0, 0], [2, 1, 2, 9]])
    lengths, groups, slots = (
        torch.tensor([4, 2, 3]),
        torch.tensor([0, 0, 0]),
        torch.tensor([0, 1, 1]),
    )
    unigrams, bigrams = ngram_ids(tokens, lengths, groups, 2)
    counts = count_ngrams(bigrams, slots, 2)
    assert counts.shape == (12, 2) and counts.dtype == torch.int32
    one_two, two_one = bigrams[0, 0], bigrams[0, 1]
    assert counts[one_two].tolist() == [2, 2]  # "1 2": twice in row 0, once each in rows 1, 2
    assert counts[two_one].tolist() == [1, 1]
    assert int(counts.sum()) == 3 + 1 + 2  # every valid bigram counted once
    assert count_ngrams(unigrams, slots, 2)[unigrams[2, 2]].tolist() == [2, 3]  # token 2
