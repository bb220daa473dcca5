"""Minimum Bayes risk reranking of N-best lists (or samples) with sentence BLEU.

Candidate ``i`` of a sentence scores its expected BLEU against the sentence's other candidates
as pseudo-references, ``sum_j w_j * BLEU(c_i, c_j)`` with ``w = softmax(alpha * scores)``
(Kumar & Byrne, 2004). All ``B * N * N`` pairs go through BLEU's stats -> score pair
(:mod:`tensortext.bleu`) in one batched call: no Python loop over sentences or pairs.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import Tensor

from tensortext._checks import check_float, check_float_tensor, check_integer_tensor, check_shape
from tensortext.bleu import BleuConfig
from tensortext.bleu.score import check_method6, score_stats
from tensortext.bleu.stats import Batch, check_values, compute_stats

__all__ = ["MBR_CONFIG", "MBRResult", "mbr_rerank"]

# sacrebleu's sentence_bleu default: without effective_order every candidate shorter than 4
# tokens scores 0, and short outputs could never win.
MBR_CONFIG = BleuConfig(effective_order=True)


class MBRResult(NamedTuple):
    """Output of :func:`mbr_rerank`."""

    best: Tensor  # [B] index of the candidate with the highest expected BLEU
    expected_bleu: Tensor  # [B, N] expected sentence BLEU of each candidate (-inf when absent)


def _check_inputs(candidates: object, lengths: object, scores: object | None) -> Tensor | None:
    """Types, shapes and devices of :func:`mbr_rerank`'s tensors; returns ``scores``."""
    ids = check_integer_tensor("candidates", candidates, shape="[B, N, L]")
    check_shape("candidates", ids, [None, None, None], "[B, N, L]")
    batch, num, _ = ids.shape
    if num == 0:
        raise ValueError(
            f"candidates has shape {list(ids.shape)}: no candidates (N = 0) to choose from; "
            "pass at least one candidate per sentence"
        )
    lens = check_integer_tensor("lengths", lengths, shape="[B, N]")
    check_shape("lengths", lens, [batch, num], f"[B, N] = [{batch}, {num}]")
    for name, tensor in (("lengths", lens), ("scores", scores)):
        if isinstance(tensor, Tensor) and tensor.device != ids.device:
            raise ValueError(
                f"{name} is on {tensor.device} but candidates is on {ids.device}; move both "
                "to one device"
            )
    if scores is None:
        return None
    checked = check_float_tensor("scores", scores, shape="[B, N]")
    check_shape("scores", checked, [batch, num], f"[B, N] = [{batch}, {num}]")
    return checked


def _check_score_values(scores: Tensor) -> None:
    """No NaN and no ``+inf`` in ``[B, N]`` scores (one host sync): ``+inf`` makes the softmax
    NaN, so ``argmax`` picks candidate 0; a NaN candidate silently counts as absent."""
    bad = scores.isnan() | (scores == math.inf)
    if bool(bad.any()):  # host sync: validation only
        sentence, candidate = (int(i) for i in bad.nonzero()[0])
        value = float(scores[sentence, candidate])
        raise ValueError(
            f"scores[{sentence}, {candidate}] is {value}; scores must be finite log-probabilities, "
            "or -inf for an absent candidate: fix the scores (e.g. "
            "scores.nan_to_num(nan=-math.inf)), or pass scores=None to weigh candidates uniformly"
        )


def _pairs(candidates: Tensor, lengths: Tensor) -> Batch:
    """Every (hypothesis i, pseudo-reference j) pair of each sentence as one BLEU batch:
    ``[B*N*N, L]`` hypotheses against ``[B*N*N, 1, L]`` references, row ``(b, i, j)``."""
    batch, num, width = candidates.shape
    pairs = batch * num * num
    return Batch(
        hyp_ids=candidates[:, :, None, :].expand(batch, num, num, width).reshape(pairs, width),
        hyp_lens=lengths[:, :, None].expand(batch, num, num).reshape(pairs).long(),
        ref_ids=candidates[:, None, :, :].expand(batch, num, num, width).reshape(pairs, 1, width),
        ref_lens=lengths[:, None, :].expand(batch, num, num).reshape(pairs, 1).long(),
    )


def mbr_rerank(
    candidates: Tensor,
    lengths: Tensor,
    scores: Tensor | None = None,
    *,
    alpha: float = 1.0,
    include_self: bool = True,
    config: BleuConfig = MBR_CONFIG,
    validate: bool = True,
) -> MBRResult:
    """Minimum Bayes risk reranking of N-best lists or samples with sentence BLEU.

    Args:
        candidates: ``[B, N, L]`` integer token IDs (without EOS), e.g.
            ``BeamOutput.without_eos().ids``.
        lengths: ``[B, N]`` integer lengths, ``0 <= lengths <= L``.
        scores: ``[B, N]`` float model scores, ``-inf`` marks an absent candidate; ``None``
            weighs the candidates uniformly. NaN and ``+inf`` are refused (with ``validate``;
            without it, that sentence's result is meaningless).
        alpha: scale of ``scores`` in the softmax.
        include_self: count ``BLEU(c_i, c_i)`` in the expectation (the textbook definition);
            ``False`` averages over the other candidates only, reweighted to sum to 1.
        config: the sentence-BLEU options; default :data:`MBR_CONFIG`, sacrebleu's
            sentence-level BLEU with ``effective_order=True``.
        validate: check lengths, IDs and the values of ``scores`` (one host sync each), and
            NLTK's method6.

    Returns:
        :class:`MBRResult` ``(best [B], expected_bleu [B, N])``.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape (``N = 0`` included),
            device or value (a NaN or ``+inf`` score included).

    Example:
        >>> candidates = torch.tensor([[[5, 6, 7], [5, 6, 8], [9, 9, 9]]])
        >>> mbr_rerank(candidates, torch.tensor([[3, 3, 3]])).best.tolist()
        [0]
    """
    checked_scores = _check_inputs(candidates, lengths, scores)
    check_float("alpha", alpha)
    if not isinstance(config, BleuConfig):
        raise TypeError(f"config must be a BleuConfig, got {type(config).__name__}")
    batch, num, width = candidates.shape
    device = candidates.device
    if validate:
        rows = candidates.reshape(batch * num, width)
        check_values("candidates", rows, lengths.reshape(-1), "lengths")
        if checked_scores is not None:
            _check_score_values(checked_scores)
    if checked_scores is None:
        checked_scores = torch.zeros((batch, num), dtype=torch.float32, device=device)
    present = checked_scores > -math.inf
    logits = torch.where(present, alpha * checked_scores, -math.inf)
    stats = compute_stats(_pairs(candidates, lengths), config)
    bleu = score_stats(stats, stats, config)  # [B*N*N]
    if validate:
        check_method6(bleu, config, "candidate pairs")
    evidence = logits[:, None, :].expand(batch, num, num)
    if not include_self:
        eye = torch.eye(num, dtype=torch.bool, device=device)
        evidence = evidence.masked_fill(eye, -math.inf)
    weights = torch.softmax(evidence, dim=2).nan_to_num(0.0)
    expected = (weights * bleu.view(batch, num, num).to(weights.dtype)).sum(dim=2)
    expected = expected.masked_fill(~present, -math.inf)
    return MBRResult(best=expected.argmax(dim=1), expected_bleu=expected)
