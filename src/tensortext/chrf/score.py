"""chrF's formula on rows of statistics: sacrebleu's ``CHRF._compute_f_score``, operation for
operation.

Statistics are ``[..., 3 * (C + W)]`` integers, per order ``[hyp_count, ref_count, match]``;
a sentence's row or a corpus's summed row. The formula runs in float64 in sacrebleu's order of
operations (each order's terms summed left to right, ``(1 + beta**2) * prec * rec / denom``
grouped as Python groups it), so the per-reference scores that pick the best reference tie
exactly where sacrebleu's do, and scores equal sacrebleu's to the last bit or nearly.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tensortext._checks import check_integer_tensor
from tensortext.chrf.config import ChrfConfig

__all__ = ["check_stats", "sacrebleu_scores", "scores_from_stats"]

_EPS = 1e-16  # sacrebleu's epsilon for an order without n-grams or matches


def check_stats(stats: object, config: ChrfConfig, name: str = "stats") -> Tensor:
    """``stats`` is an integer tensor ``[..., 3 * (C + W)]`` for ``config``."""
    tensor = check_integer_tensor(name, stats, shape="[..., 3 * (C + W)]")
    width = 3 * config.orders
    if tensor.dim() == 0 or tensor.shape[-1] != width:
        raise ValueError(
            f"{name} must have {width} columns (3 per order: char_order={config.char_order}, "
            f"word_order={config.word_order}), got shape {list(tensor.shape)}; compute them with "
            "the same options"
        )
    return tensor


def sacrebleu_scores(stats: Tensor, config: ChrfConfig) -> Tensor:
    """sacrebleu's chrF (0..100) of each row, in float64.

    Args:
        stats: ``[..., 3 * (C + W)]`` integer statistics.
        config: ``beta``, ``eps_smoothing`` and the orders.

    Returns:
        ``[...]`` float64.
    """
    counts = stats.to(torch.float64).reshape(*stats.shape[:-1], config.orders, 3)
    hyp, ref, match = counts.unbind(-1)  # [..., O] each
    factor = float(config.beta**2)
    numerator = float(1 + config.beta**2)
    # sacrebleu: match / n if n > 0 else eps (the division by 0 is never selected).
    prec = torch.where(hyp > 0, match / hyp, _EPS)
    rec = torch.where(ref > 0, match / ref, _EPS)
    denom = factor * prec + rec
    term = torch.where(denom > 0, numerator * prec * rec / denom, _EPS)
    zero = stats.new_zeros(stats.shape[:-1], dtype=torch.float64)
    if config.eps_smoothing:
        total = zero
        for order in range(config.orders):  # left to right, as Python's += does
            total = total + term[..., order]
        return 100 * total / config.orders
    effective = (hyp > 0) & (ref > 0)
    sum_prec, sum_rec = zero, zero
    for order in range(config.orders):  # adding 0.0 for an order without n-grams changes nothing
        sum_prec = sum_prec + torch.where(effective[..., order], prec[..., order], 0.0)
        sum_rec = sum_rec + torch.where(effective[..., order], rec[..., order], 0.0)
    used = effective.sum(-1).to(torch.float64)
    avg_prec = torch.where(used > 0, sum_prec / used.clamp(min=1), 0.0)
    avg_rec = torch.where(used > 0, sum_rec / used.clamp(min=1), 0.0)
    score = numerator * avg_prec * avg_rec
    score = score / (factor * avg_prec + avg_rec)
    return torch.where(avg_prec + avg_rec != 0, 100 * score, 0.0)


def scores_from_stats(stats: Tensor, config: ChrfConfig) -> Tensor:
    """chrF in 0..1 of each row of ``[..., 3 * (C + W)]`` statistics, ``[...]`` of
    ``config.dtype`` (sacrebleu's score / 100)."""
    return (sacrebleu_scores(stats, config) / 100).to(config.dtype)
