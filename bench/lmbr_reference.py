"""What bench_lmbr.py checks against: synthetic n-best lists and the definitions in Python.

* :func:`synthetic_nbest`: n-best lists whose hypotheses share most n-grams, as real ones do.
* :func:`python_posteriors`: the n-gram posteriors by their definition, one dict per sentence.
* :func:`python_step`: the LMBR bias of live prefixes the way SGNMT's ``ngramc`` predictor
  computes it, a Python loop over hypotheses and their histories.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

VOCAB = 32000
MAX_ORDER = 4


def synthetic_nbest(
    B: int, M: int, length: int, seed: int, device: torch.device
) -> tuple[Tensor, Tensor, Tensor]:
    """N-best lists that look like real ones: every hypothesis of a sentence is its best one with
    ~15% of the tokens replaced from a few alternatives and a random length change, so n-grams
    repeat across hypotheses.  Scores fall with the rank."""
    gen = torch.Generator().manual_seed(seed)
    base = torch.randint(3, VOCAB, (B, 1, length + 4), generator=gen)
    alternatives = torch.randint(3, VOCAB, (B, 1, 8), generator=gen)
    pick = torch.randint(0, 8, (B, M, length + 4), generator=gen)
    replace = torch.rand((B, M, length + 4), generator=gen) < 0.15
    ids = torch.where(replace, alternatives.expand(B, M, 8).gather(2, pick), base)
    lengths = (length + torch.randint(-4, 5, (B, M), generator=gen)).clamp(1, length + 4)
    scores = -torch.arange(M, dtype=torch.float64).expand(B, M) * 0.1 - torch.rand(
        (B, M), generator=gen, dtype=torch.float64
    )
    return ids.to(device), lengths.to(device), scores.to(device)


def python_posteriors(
    ids: Tensor, lengths: Tensor, scores: Tensor, alpha: float
) -> list[dict[tuple[int, ...], float]]:
    """The definition, one sentence and hypothesis at a time (dicts of n-grams)."""
    out = []
    for sent_ids, sent_lens, sent_scores in zip(
        ids.tolist(), lengths.tolist(), scores.tolist(), strict=True
    ):
        peak = max(alpha * s for s in sent_scores)
        weights = [math.exp(alpha * s - peak) for s in sent_scores]
        total = sum(weights)
        table: dict[tuple[int, ...], float] = {}
        for hyp, n_tokens, weight in zip(sent_ids, sent_lens, weights, strict=True):
            hyp = hyp[:n_tokens]
            grams = {
                tuple(hyp[i : i + n])
                for n in range(1, MAX_ORDER + 1)
                for i in range(len(hyp) - n + 1)
            }
            for gram in grams:
                table[gram] = table.get(gram, 0.0) + weight / total
        out.append(table)
    return out


def python_step(
    tables: list[dict[tuple[int, ...], float]],
    prefixes: list[list[int]],
    K: int,
    theta: list[float],
    eos_id: int,
) -> Tensor:
    """SGNMT's way: for each live hypothesis, collect the n-grams its histories extend."""
    rows = []
    by_history: list[dict[tuple[int, ...], list[tuple[int, float]]]] = []
    for table in tables:  # an index of history -> continuations, built once per sentence
        index: dict[tuple[int, ...], list[tuple[int, float]]] = {}
        for gram, value in table.items():
            index.setdefault(gram[:-1], []).append((gram[-1], value))
        by_history.append(index)
    for row, prefix in enumerate(prefixes):
        scores = torch.full((VOCAB,), theta[0], dtype=torch.float64)
        scores[eos_id] = 0.0
        index = by_history[row // K]
        for n in range(1, MAX_ORDER + 1):
            if len(prefix) < n - 1:
                break
            history = tuple(prefix[len(prefix) - (n - 1) :]) if n > 1 else ()
            for token, value in index.get(history, ()):
                scores[token] += theta[n] * value
        rows.append(scores)
    return torch.stack(rows)
