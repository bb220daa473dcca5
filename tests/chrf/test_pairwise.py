"""``pairwise_chrf`` against sacrebleu on every pair, ``sentence_chrf`` on every pair, and fastchrf.

fastchrf removes Rust's ``char::is_whitespace``, which lacks ``\\x1c``-``\\x1f`` (sacrebleu's
``str.split()`` has them): the fastchrf comparison draws texts without those four.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from chrf_texts import alphabets, noisy_copy, options, texts
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.chrf import assert_scores_close, fastchrf_pairwise, ref_pairwise
from strategies import MAX_EXAMPLES, SETTINGS

import tensortext.chrf.pairwise
from tensortext.chrf import ChrfConfig, pairwise_chrf, sentence_chrf
from tensortext.padded import Padded, pad_ragged

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))


@st.composite
def candidate_lists(draw: st.DrawFn, max_batch: int = 3, max_num: int = 5) -> list[list[str]]:
    """``B`` sentences of ``N`` candidates, most of them noisy copies of one another."""
    alphabet = draw(alphabets())
    num = draw(st.integers(1, max_num))
    rows = []
    for _ in range(draw(st.integers(0, max_batch))):
        base = draw(texts(alphabet))
        rows.append([draw(noisy_copy(base, alphabet)) for _ in range(num)])
    return rows


@SETTINGS
@given(
    candidates=candidate_lists(),
    opts=options(),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_pairwise_equals_sacrebleu(
    candidates: list[list[str]], opts: dict[str, Any], dtype: torch.dtype
) -> None:
    ours = pairwise_chrf(candidates, dtype=dtype, **opts)
    num = len(candidates[0]) if candidates else 1
    assert ours.shape == (len(candidates), num, num) and ours.dtype == dtype
    if candidates:
        assert_scores_close(
            ours,
            ref_pairwise(candidates, **opts),
            dtype=dtype,
            label=f"pairwise {opts}",
            inputs=candidates,
        )


@FEWER
@given(candidates=candidate_lists(), opts=options(lowercase=False))
def test_pairwise_equals_sentence_chrf_and_tensors(
    candidates: list[list[str]], opts: dict[str, Any]
) -> None:
    """Every pair through sentence_chrf (bit for bit: same statistics, same formula), and the
    candidates as a [B, N, L] codepoint Padded."""
    if not candidates:
        return
    config = ChrfConfig(**opts, dtype=torch.float64)
    ours = pairwise_chrf(candidates, config=config)
    batch, num = len(candidates), len(candidates[0])
    hyps = [row[i] for row in candidates for i in range(num) for _ in range(num)]
    refs = [row[j] for row in candidates for _ in range(num) for j in range(num)]
    pairs = sentence_chrf(hyps, refs, config=config).view(batch, num, num)
    assert torch.equal(ours, pairs)
    flat = pad_ragged([[ord(c) for c in text] for row in candidates for text in row])
    tensors = Padded(flat.ids.view(batch, num, -1), flat.lengths.view(batch, num))
    assert torch.equal(pairwise_chrf(tensors, config=config), ours)
    assert torch.equal(pairwise_chrf(tensors.ids, lengths=tensors.lengths, config=config), ours)


ASCII_SPACES = st.sampled_from(["ab c", "ab c\t\n", "ab\u3000c\xa0", "aé😀 b", "a b(.)"])


@FEWER
@given(
    alphabet=ASCII_SPACES,
    seed=st.integers(0, 2**16),
    char_order=st.integers(1, 7),
    beta=st.sampled_from([1.0, 2.0, 3.0]),
    eps=st.booleans(),
    whitespace=st.booleans(),
)
def test_pairwise_equals_fastchrf(
    alphabet: str, seed: int, char_order: int, beta: float, eps: bool, whitespace: bool
) -> None:
    import random

    rng = random.Random(seed)
    candidates = [
        ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))) for _ in range(5)]
        for _ in range(3)
    ]
    theirs = fastchrf_pairwise(
        candidates,
        char_order=char_order,
        beta=beta,
        eps_smoothing=eps,
        remove_whitespace=not whitespace,
    )
    ours = pairwise_chrf(
        candidates,
        char_order=char_order,
        beta=beta,
        eps_smoothing=eps,
        whitespace=whitespace,
        dtype=torch.float64,
    )
    assert_scores_close(
        ours, theirs.tolist(), dtype=torch.float64, label="fastchrf", inputs=candidates
    )


def test_pairwise_of_similar_samples() -> None:
    """MBR-like: 4 sentences x 16 samples of ~150 characters that share most n-grams."""
    import random

    rng = random.Random(5)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "(quickly)", "home."]
    candidates = []
    for _ in range(4):
        base = [rng.choice(words) for _ in range(30)]
        rows = []
        for _ in range(16):
            sample = list(base)
            sample[rng.randrange(30)] = rng.choice(words)
            rows.append(" ".join(sample))
        candidates.append(rows)
    for opts in ({}, {"word_order": 2}):
        ours = pairwise_chrf(candidates, dtype=torch.float64, **opts)
        assert_scores_close(
            ours, ref_pairwise(candidates, **opts), dtype=torch.float64, label=f"samples {opts}"
        )


def test_pairwise_in_chunks_of_sentences(monkeypatch: pytest.MonkeyPatch) -> None:
    """A tiny table budget scores one sentence at a time: the same matrices."""
    candidates = [["the cat", "the cat sat", ""], ["日本", "日本語", "(hi)"], ["a", "a", "b"]]
    expected = pairwise_chrf(candidates, word_order=2)
    monkeypatch.setattr(tensortext.chrf.pairwise, "_TABLE_BUDGET", 1)
    assert torch.equal(pairwise_chrf(candidates, word_order=2), expected)


def test_pairwise_on_every_device(device: str) -> None:
    candidates = [["the cat", "the cat sat", ""], ["日本", "日本語", "(hi)"]]
    expected = pairwise_chrf(candidates, word_order=2)
    assert torch.equal(pairwise_chrf(candidates, word_order=2, device=device).cpu(), expected)
