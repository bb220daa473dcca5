"""BLEU's second half: scores from sufficient statistics, under sacrebleu's or NLTK's formulas.

Rows of ``[..., 2 + 2N']`` statistics (from :func:`~tensortext.bleu.stats.compute_stats`) are
scored over any leading dims: ``[B, ...]`` rows give sentence scores, a summed row corpus BLEU.

* ``compat="sacrebleu"``: ``sacrebleu.metrics.BLEU.compute_bleu``.
* ``compat="nltk"``: ``nltk.translate.bleu_score.corpus_bleu`` with
  ``SmoothingFunction().method0..7``, including NLTK's corpus-level quirks: methods 4-7 look at
  the corpus length and at the *last* sentence, so every row comes with the ``last`` row it reads.

:func:`score_stats` is the score half of the package's one stats -> score pair; the functions,
``BLEU``, the TRL reward, MBR and the CLI all reach it.
"""

from __future__ import annotations

import math
import sys
from typing import NamedTuple

import torch
from torch import Tensor

from tensortext.bleu.config import BleuConfig

__all__ = ["ScoreParts", "check_method6", "check_stats", "score_parts", "score_stats"]

# sacrebleu's my_log(0); any precision at 0 drives the score to exactly 0.
_SACREBLEU_LOG_ZERO = -9999999999.0
# NLTK method0 replaces a zero precision by sys.float_info.min; its log is finite.
_NLTK_LOG_ZERO = math.log(sys.float_info.min)


class ScoreParts(NamedTuple):
    """A score and the parts the reference libraries report beside it (sacrebleu's
    ``BLEUScore``), over leading dims ``[...]``."""

    score: Tensor  # [...] in 0..1
    precisions: Tensor  # [..., N] in percent, as reported: sacrebleu's smoothed, NLTK's plain
    brevity: Tensor  # [...] the brevity penalty


def _brevity(hyp_len: Tensor, ref_len: Tensor, compat: str) -> Tensor:
    """``exp(1 - r / c)`` when the hypotheses are shorter, else 1; 0 for shorter hypotheses of
    no tokens. Without tokens on either side sacrebleu says 1, NLTK 0 (the score is 0 anyway)."""
    shorter = hyp_len < ref_len if compat == "sacrebleu" else (hyp_len <= ref_len)
    return torch.where(
        shorter,
        torch.where(hyp_len > 0, torch.exp(1 - ref_len / hyp_len.clamp(min=1)), 0.0),
        1.0,
    )


def _sacrebleu_score(
    hyp_len: Tensor, ref_len: Tensor, correct: Tensor, total: Tensor, config: BleuConfig
) -> ScoreParts:
    """``sacrebleu.metrics.BLEU.compute_bleu`` over leading dims; inputs in ``config.dtype``.

    The reported precisions are computed as sacrebleu computes them (``100 * correct / total``,
    in that order), so that they round as sacrebleu's do.
    """
    num_orders = correct.shape[-1]
    any_match = (correct > 0).any(dim=-1)
    if config.method == "add-k":
        k = config.smoothing
        bump = torch.zeros(num_orders, dtype=correct.dtype, device=correct.device)
        bump[1:] = k
        correct, total = correct + bump, total + bump
    # sacrebleu stops at the first order without n-grams; later orders keep precision 0.
    alive = torch.cumprod(total != 0, dim=-1).bool()
    safe_total = torch.where(total == 0, 1, total)
    precision = correct / safe_total
    percent = 100.0 * correct / safe_total
    no_match = alive & (correct == 0)
    if config.method == "exp":
        halvings = torch.cumsum(no_match, dim=-1).to(correct.dtype)
        precision = torch.where(no_match, 1.0 / (2.0**halvings * safe_total), precision)
        percent = torch.where(no_match, 100.0 / (2.0**halvings * safe_total), percent)
    elif config.method == "floor":
        precision = torch.where(no_match, config.smoothing / safe_total, precision)
        percent = torch.where(no_match, 100.0 * config.smoothing / safe_total, percent)
    precision = torch.where(alive, precision, 0.0)
    # sacrebleu reports all precisions as 0 when nothing matches (its early return).
    percent = torch.where(alive & any_match.unsqueeze(-1), percent, 0.0)
    log_precision = torch.where(
        precision > 0, torch.log(torch.where(precision > 0, precision, 1.0)), _SACREBLEU_LOG_ZERO
    )
    if config.effective_order:
        eff_order = alive.sum(dim=-1).clamp(min=1)
    else:
        eff_order = torch.full_like(hyp_len, num_orders, dtype=torch.long)
    orders = torch.arange(num_orders, device=correct.device)
    used = orders < eff_order.unsqueeze(-1)
    mean_log = torch.where(used, log_precision, 0.0).sum(dim=-1) / eff_order.to(correct.dtype)
    brevity = _brevity(hyp_len, ref_len, "sacrebleu")
    return ScoreParts(torch.where(any_match, brevity * torch.exp(mean_log), 0.0), percent, brevity)


def _nltk_score(
    hyp_len: Tensor,
    ref_len: Tensor,
    correct: Tensor,
    total: Tensor,
    config: BleuConfig,
    last: tuple[Tensor, Tensor, Tensor],
) -> ScoreParts:
    """``nltk.translate.bleu_score.corpus_bleu`` from statistics over leading dims.

    ``last`` is ``(hyp_len, correct_5, total_5)`` of the sentence NLTK's methods 5-7 read: the
    sentence itself at sentence level, the last sentence at corpus level. The reported
    precisions are NLTK's modified precisions, before smoothing.
    """
    num_orders = correct.shape[-1]
    method = config.method
    total = total.clamp(min=1)
    zero = correct == 0
    precision = correct / total
    percent = 100.0 * correct / total
    log_floor: Tensor | None = None
    if method == "method0":
        log_floor = zero
    elif method == "method1":
        precision = torch.where(zero, config.smoothing / total, precision)
    elif method == "method2":
        add_one = torch.ones(num_orders, dtype=correct.dtype, device=correct.device)
        add_one[0] = 0
        precision = (correct + add_one) / (total + add_one)
    elif method == "method3":
        halvings = torch.cumsum(zero, dim=-1).to(correct.dtype)
        precision = torch.where(zero, 1.0 / (2.0**halvings * total), precision)
    if method in ("method4", "method7"):
        precision = _nltk_method4(precision, zero, total, hyp_len, config.smoothing)
    if method in ("method5", "method7"):
        last_precision = last[1] / last[2].clamp(min=1)
        precision = _nltk_method5(precision, last_precision)
    invalid = torch.zeros_like(hyp_len, dtype=torch.bool)
    if method == "method6":
        precision = _nltk_method6(precision, correct, last[0], config.smoothing)
        invalid = correct[..., 2] == 0

    positive = precision > 0
    log_precision = torch.where(positive, torch.log(torch.where(positive, precision, 1.0)), 0.0)
    if log_floor is not None:
        log_precision = torch.where(log_floor, _NLTK_LOG_ZERO, log_precision)
    weights = _nltk_weights(hyp_len, num_orders, config)
    brevity = _brevity(hyp_len, ref_len, "nltk")
    score = brevity * torch.exp((weights * log_precision).sum(dim=-1))
    no_unigram = correct[..., 0] == 0
    score = torch.where(invalid, torch.nan, score)
    return ScoreParts(torch.where(no_unigram, 0.0, score), percent, brevity)


def _nltk_method4(
    precision: Tensor, zero: Tensor, total: Tensor, hyp_len: Tensor, k: float
) -> Tensor:
    """Chen & Cherry method 4: a zero precision becomes ``ln(len) / (2**i * k * total)``."""
    applies = zero & (hyp_len > 1).unsqueeze(-1)
    halvings = torch.cumsum(applies, dim=-1).to(precision.dtype)
    log_len = torch.log(hyp_len.clamp(min=1).to(precision.dtype)).unsqueeze(-1)
    smoothed = 1.0 / (2.0**halvings * k / log_len.where(log_len > 0, 1.0)) / total
    return torch.where(applies, smoothed, precision)


def _nltk_method5(precision: Tensor, next_after_last: Tensor) -> Tensor:
    """Chen & Cherry method 5: average of the n-1, n and n+1 precisions, left to right."""
    # The order after the last is always the 5-gram precision (NLTK's hard-coded order 5).
    following = torch.cat([precision[..., 1:], next_after_last.unsqueeze(-1)], dim=-1)
    smoothed = []
    previous = precision[..., 0] + 1
    for order in range(precision.shape[-1]):
        previous = (previous + precision[..., order] + following[..., order]) / 3
        smoothed.append(previous)
    return torch.stack(smoothed, dim=-1)


def _nltk_method6(precision: Tensor, correct: Tensor, hyp_len: Tensor, alpha: float) -> Tensor:
    """Chen & Cherry method 6: interpolate with a geometric prior from the two lower orders."""
    columns = list(precision.unbind(dim=-1))
    for order in range(2, len(columns)):
        before, prev = columns[order - 2], columns[order - 1]
        prior = torch.where(before == 0, 0.0, prev**2 / torch.where(before == 0, 1.0, before))
        # NLTK counts the n-grams of the (last) hypothesis itself, not the clamped total.
        count = (hyp_len - order).clamp(min=0).to(precision.dtype)
        columns[order] = (correct[..., order] + alpha * prior) / (count + alpha)
    return torch.stack(columns, dim=-1)


def _nltk_weights(hyp_len: Tensor, num_orders: int, config: BleuConfig) -> Tensor:
    """``[..., N]`` weights, with NLTK's ``auto_reweigh`` for short hypotheses."""
    device, dtype = hyp_len.device, config.dtype
    if config.weights is None:
        base = torch.full((num_orders,), 1.0 / num_orders, dtype=dtype, device=device)
    else:
        # A blocking host-to-device copy would synchronise; this one does not.
        base = torch.tensor(config.weights, dtype=dtype).to(device, non_blocking=True)
    base = base.expand(*hyp_len.shape, num_orders)
    # NLTK reweighs only when the weights are exactly its default (0.25,) * 4.
    is_default = (config.weights is None and num_orders == 4) or config.weights == (0.25,) * 4
    if not (config.auto_reweigh and is_default):
        return base
    orders = torch.arange(num_orders, device=device)
    short = hyp_len.clamp(min=1).unsqueeze(-1).to(dtype)
    reweighed = torch.where(orders < short, 1.0 / short, 0.0)
    return torch.where((hyp_len < 4).unsqueeze(-1), reweighed, base)


def score_stats(stats: Tensor, last: Tensor, config: BleuConfig) -> Tensor:
    """Scores rows of statistics under ``config``: the score half of the stats -> score pair.

    ``score_parts(stats, last, config).score``; see :func:`score_parts` for the arguments.

    Returns:
        ``[...]`` scores of ``config.dtype``; NaN where NLTK's method6 is undefined (see
        :func:`check_method6`).
    """
    return score_parts(stats, last, config).score


def score_parts(stats: Tensor, last: Tensor, config: BleuConfig) -> ScoreParts:
    """Scores rows of statistics under ``config``, with the precisions and brevity penalty
    that went into them (what sacrebleu's ``BLEUScore`` reports).

    Args:
        stats: ``[..., 2 + 2N']`` integer statistics with ``N' >= config.stats_order`` (checked
            by :func:`check_stats` where they come from the user).
        last: the shape of ``stats``: for each row, the statistics of the sentence NLTK's
            methods 5-7 read (the row itself at sentence level, the last sentence at corpus
            level). Unused under sacrebleu.
        config: the scoring options.

    Returns:
        :class:`ScoreParts` of ``config.dtype``: ``score [...]`` (NaN where NLTK's method6 is
        undefined, see :func:`check_method6`), ``precisions [..., N]`` in percent and
        ``brevity [...]``.
    """
    num_orders = config.max_ngram_order
    stats_orders = (stats.shape[-1] - 2) // 2
    values = stats.to(config.dtype)
    hyp_len, ref_len = values[..., 0], values[..., 1]
    correct = values[..., 2 : 2 + num_orders]
    total = values[..., 2 + stats_orders : 2 + stats_orders + num_orders]
    if config.compat == "sacrebleu":
        return _sacrebleu_score(hyp_len, ref_len, correct, total, config)
    last_values = last.to(config.dtype)
    order5 = min(5, stats_orders) - 1
    last_info = (
        last_values[..., 0],
        last_values[..., 2 + order5],
        last_values[..., 2 + stats_orders + order5],
    )
    return _nltk_score(hyp_len, ref_len, correct, total, config, last_info)


def check_stats(stats: object, config: BleuConfig, name: str = "stats") -> Tensor:
    """User-given statistics: an integer tensor ``[..., 2 + 2N]`` with enough orders."""
    if not isinstance(stats, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(stats).__name__}")
    if stats.dtype == torch.bool or stats.is_floating_point() or stats.is_complex():
        raise TypeError(f"{name} must be integer counts from bleu_stats, got dtype {stats.dtype}")
    width = stats.shape[-1] if stats.dim() else 0
    if width < 2 + 2 * config.stats_order or width % 2:
        hint = " (NLTK's methods 5 and 7 read 5-gram precision)" if config.needs_order5 else ""
        raise ValueError(
            f"{name} must be [..., 2 + 2N] with N >= {config.stats_order}, got shape "
            f"{list(stats.shape)}; compute them with max_ngram_order={config.stats_order}{hint}"
        )
    return stats


def check_method6(scores: Tensor, config: BleuConfig, what: str) -> None:
    """NLTK's method6 asserts trigram matches; we raise instead of returning NaN.

    A host sync, so callers run it only with ``validate=True``.
    """
    if config.method != "method6":
        return
    invalid = scores.isnan()
    if bool(invalid.any()):  # host sync
        row = int(invalid.nonzero()[0, 0]) if invalid.dim() else None
        where = f" (first at row {row})" if row is not None else ""
        raise ValueError(
            f"NLTK's method6 is undefined without trigram matches{where} in the {what}; "
            "choose another smooth_method, or pass validate=False to get NaN there"
        )
