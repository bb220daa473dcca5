"""Minimum Bayes risk reranking of N-best lists (or samples) with sentence BLEU, chrF or ROUGE.

Candidate ``i`` of a sentence scores its expected utility against the sentence's other
candidates as pseudo-references, ``sum_j w_j * U(c_i, c_j)`` with ``w = softmax(alpha * scores)``
(Kumar & Byrne, 2004). The ``B * N * N`` utilities come from one batched call: BLEU's stats ->
score pair (:mod:`tensortext.bleu`) on every pair, :func:`~tensortext.chrf.pairwise_chrf` (chrF,
the usual MBR utility), or :func:`~tensortext.rouge.pairwise_rouge` (its mean F-measure over the
configured ROUGE types); no Python loop over sentences or pairs.
"""

from __future__ import annotations

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)

# isort: split
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple, Union, cast

import torch
from torch import Tensor

from tensortext._checks import (
    brief,
    check_choice,
    check_float,
    check_float_tensor,
    check_integer_tensor,
    check_shape,
)
from tensortext.bleu import BleuConfig
from tensortext.bleu.score import check_method6, score_stats
from tensortext.bleu.stats import Batch, check_values, compute_stats
from tensortext.padded import Padded

if TYPE_CHECKING:
    from tensortext.chrf import ChrfConfig
    from tensortext.rouge import RougeConfig

__all__ = ["MBR_CONFIG", "MBRResult", "Metric", "mbr_rerank"]

Metric = Literal["bleu", "chrf", "rouge"]
MetricConfig = Union[BleuConfig, "ChrfConfig", "RougeConfig"]

# sacrebleu's sentence_bleu default: without effective_order every candidate shorter than 4
# tokens scores 0, and short outputs could never win.
MBR_CONFIG = BleuConfig(effective_order=True)


class MBRResult(NamedTuple):
    """Output of :func:`mbr_rerank`."""

    best: Tensor  # [B] index of the candidate with the highest expected utility
    expected_utility: Tensor  # [B, N] expected utility (0..1) of each candidate; -inf if absent

    @property
    def expected_bleu(self) -> Tensor:
        """``expected_utility`` under its earlier name (the utility is BLEU by default)."""
        return self.expected_utility


def _check_inputs(candidates: object, lengths: object, scores: object | None) -> Tensor | None:
    """Types, shapes and devices of :func:`mbr_rerank`'s tensors; returns ``scores``."""
    ids = check_integer_tensor("candidates", candidates, shape="[B, N, L]")
    check_shape("candidates", ids, [None, None, None], "[B, N, L]")
    batch, num, _ = ids.shape
    _check_some_candidates(batch, num)
    lens = check_integer_tensor("lengths", lengths, shape="[B, N]")
    check_shape("lengths", lens, [batch, num], f"[B, N] = [{batch}, {num}]")
    for name, tensor in (("lengths", lens), ("scores", scores)):
        if isinstance(tensor, Tensor) and tensor.device != ids.device:
            raise ValueError(
                f"{name} is on {tensor.device} but candidates is on {ids.device}; move both "
                "to one device"
            )
    return _check_scores(scores, batch, num)


def _check_some_candidates(batch: int, num: int) -> None:
    if num == 0:
        raise ValueError(
            f"candidates has shape [{batch}, 0, ...]: no candidates (N = 0) to choose from; "
            "pass at least one candidate per sentence"
        )


def _check_scores(scores: object | None, batch: int, num: int) -> Tensor | None:
    if scores is None:
        return None
    checked = check_float_tensor("scores", scores, shape="[B, N]")
    check_shape("scores", checked, [batch, num], f"[B, N] = [{batch}, {num}]")
    return checked


def _check_texts(
    candidates: Sequence[Sequence[str]], lengths: object, scores: object
) -> Tensor | None:
    """Shapes of text candidates (``B`` lists of ``N`` strings); returns ``scores``."""
    if lengths is not None:
        raise ValueError("text candidates carry their lengths; pass lengths=None")
    batch = len(candidates)
    num = len(candidates[0]) if batch else 1
    for index, row in enumerate(candidates):
        if isinstance(row, str) or not isinstance(row, Sequence):
            raise TypeError(f"candidates[{index}] must be a list of strings, got {brief(row)}")
        if len(row) != num:
            raise ValueError(
                f"candidates[{index}] has {len(row)} candidates but candidates[0] has {num}; "
                "every sentence needs the same N (pad with '' and a score of -inf)"
            )
    _check_some_candidates(batch, num)
    return _check_scores(scores, batch, num)


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
    candidates: Tensor | Sequence[Sequence[str]],
    lengths: Tensor | None = None,
    scores: Tensor | None = None,
    *,
    metric: Metric = "bleu",
    alpha: float = 1.0,
    include_self: bool = True,
    config: MetricConfig | None = None,
    validate: bool = True,
) -> MBRResult:
    """Minimum Bayes risk reranking of N-best lists or samples with sentence BLEU, chrF or ROUGE.

    Args:
        candidates: ``[B, N, L]`` integer IDs (without EOS), e.g.
            ``BeamOutput.without_eos().ids``: token IDs for ``"bleu"`` and ``"rouge"``, Unicode
            codepoints for ``"chrf"``. For ``"chrf"`` and ``"rouge"`` also text: ``B`` lists of
            ``N`` strings (then ``lengths=None``).
        lengths: ``[B, N]`` integer lengths, ``0 <= lengths <= L`` (tensor candidates only).
        scores: ``[B, N]`` float model scores, ``-inf`` marks an absent candidate; ``None``
            weighs the candidates uniformly. NaN and ``+inf`` are refused (with ``validate``;
            without it, that sentence's result is meaningless).
        metric: the utility: ``"bleu"`` (default; sentence BLEU), ``"chrf"`` (sacrebleu's chrF,
            or chrF++ with ``ChrfConfig(word_order=2)``) or ``"rouge"`` (rouge-score's
            F-measure, averaged over ``config.rouge_types``).
        alpha: scale of ``scores`` in the softmax.
        include_self: count ``U(c_i, c_i)`` in the expectation (the textbook definition);
            ``False`` averages over the other candidates only, reweighted to sum to 1.
        config: the utility's options, a :class:`~tensortext.bleu.BleuConfig`,
            :class:`~tensortext.chrf.ChrfConfig` or :class:`~tensortext.rouge.RougeConfig`
            matching ``metric``; default :data:`MBR_CONFIG` (sacrebleu's sentence BLEU with
            ``effective_order=True``), ``ChrfConfig()``, or ``RougeConfig(rouge_types=
            ("rougeL",))``.
        validate: check lengths, IDs and the values of ``scores`` (one host sync each), and
            NLTK's method6.

    Returns:
        :class:`MBRResult` ``(best [B], expected_utility [B, N])``, on the device of the
        candidates (of ``scores`` for text, else the CPU).

    Raises:
        TypeError: a wrong type or dtype, or a config of another metric. ValueError: a wrong
            shape (``N = 0`` included), device or value (a NaN or ``+inf`` score included).

    Example:
        >>> candidates = torch.tensor([[[5, 6, 7], [5, 6, 8], [9, 9, 9]]])
        >>> mbr_rerank(candidates, torch.tensor([[3, 3, 3]])).best.tolist()
        [0]
        >>> texts = [["the cat sat", "the cat sat down", "a dog ran"]]
        >>> mbr_rerank(texts, metric="chrf").best.tolist()  # the closest to the others
        [1]
    """
    check_choice("metric", metric, ("bleu", "chrf", "rouge"))
    check_float("alpha", alpha)
    resolved = _resolve_config(metric, config)
    if isinstance(candidates, Tensor):
        checked_scores = _check_inputs(candidates, lengths, scores)
        batch, num, width = candidates.shape
        device = candidates.device
        if validate:
            rows = candidates.reshape(batch * num, width)
            check_values("candidates", rows, lengths.reshape(-1), "lengths")  # type: ignore[union-attr]
    else:
        checked_scores = _check_texts(candidates, lengths, scores)
        batch, num = len(candidates), len(candidates[0]) if candidates else 1
        device = checked_scores.device if checked_scores is not None else torch.device("cpu")
    if validate and checked_scores is not None:
        _check_score_values(checked_scores)
    utility = _utilities(metric, resolved, candidates, lengths, device, validate)  # [B, N, N]
    if checked_scores is None:
        checked_scores = torch.zeros((batch, num), dtype=torch.float32, device=device)
    present = checked_scores > -math.inf
    logits = torch.where(present, alpha * checked_scores, -math.inf)
    evidence = logits[:, None, :].expand(batch, num, num)
    if not include_self:
        eye = torch.eye(num, dtype=torch.bool, device=device)
        evidence = evidence.masked_fill(eye, -math.inf)
    weights = torch.softmax(evidence, dim=2).nan_to_num(0.0)
    expected = (weights * utility.to(device=device, dtype=weights.dtype)).sum(dim=2)
    expected = expected.masked_fill(~present, -math.inf)
    return MBRResult(best=expected.argmax(dim=1), expected_utility=expected)


def _resolve_config(metric: str, config: object) -> MetricConfig:
    """The config of ``metric``: ``config``, checked, or the metric's MBR default."""
    if metric == "bleu":
        expected: type = BleuConfig
        default: object = MBR_CONFIG
    elif metric == "chrf":
        from tensortext.chrf import ChrfConfig

        expected, default = ChrfConfig, None
    else:
        from tensortext.rouge import RougeConfig

        expected, default = RougeConfig, None
    if config is None:
        if default is None:
            default = expected(rouge_types=("rougeL",)) if metric == "rouge" else expected()
        return default  # type: ignore[return-value]
    if not isinstance(config, expected):
        raise TypeError(
            f"metric={metric!r} takes a {expected.__name__} as config, got "
            f"{type(config).__name__}; pass config=None for its MBR default"
        )
    return config  # type: ignore[return-value]


def _utilities(
    metric: str,
    config: MetricConfig,
    candidates: Tensor | Sequence[Sequence[str]],
    lengths: Tensor | None,
    device: torch.device,
    validate: bool,
) -> Tensor:
    """``[B, N, N]`` utilities: entry ``[b, i, j]`` scores candidate ``i`` against ``j``."""
    if metric == "bleu":
        if not isinstance(candidates, Tensor) or lengths is None:
            raise TypeError(
                "metric='bleu' scores token IDs: pass candidates as a [B, N, L] tensor with "
                "lengths (text candidates work with metric='chrf' or 'rouge')"
            )
        assert isinstance(config, BleuConfig)
        stats = compute_stats(_pairs(candidates, lengths), config)
        bleu = score_stats(stats, stats, config)  # [B*N*N]
        if validate:
            check_method6(bleu, config, "candidate pairs")
        return bleu.view(candidates.shape[0], candidates.shape[1], candidates.shape[1])
    given: Padded | Sequence[Sequence[str]] = candidates  # type: ignore[assignment]
    if isinstance(candidates, Tensor):
        given = Padded(candidates, cast(Tensor, lengths))
    if metric == "chrf":
        from tensortext.chrf import ChrfConfig, pairwise_chrf

        assert isinstance(config, ChrfConfig)
        return pairwise_chrf(given, config=config, device=device, validate=validate)
    from tensortext.rouge import RougeConfig, pairwise_rouge

    assert isinstance(config, RougeConfig)
    scores = pairwise_rouge(given, config=config, device=device, validate=validate)
    return scores[..., 2].mean(dim=-1)  # [B, N, N, T, 3] -> mean F over the types
