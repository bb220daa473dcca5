"""The functional ROUGE API: each function is validate -> format -> statistics -> score.

Every function takes token IDs (a ``[B, L]`` tensor or :class:`~tensortext.padded.Padded`, as
the BLEU functions take them: the TensorBLEU-style reward inside training) or text (lists of
strings, tokenized as rouge-score tokenizes them). The options are keywords with rouge-score's
names and defaults, or one ``config=``:class:`~tensortext.rouge.RougeConfig`; either way they
are validated once, before any work.

Scores are ``[..., T, 3]``: for each of the ``T`` configured ROUGE types, ``precision, recall,
fmeasure`` (rouge-score's ``Score`` fields, in its order), in 0..1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from tensortext._checks import check_float_tensor
from tensortext.padded import Padded
from tensortext.rouge.config import DEFAULT_ROUGE_TYPES, RougeConfig, resolve_config
from tensortext.rouge.stats import (
    compute_stats,
    pairwise_scores,
    prepare_batch,
    prepare_candidates,
)

__all__ = [
    "MEASURES",
    "Hyps",
    "Refs",
    "corpus_rouge",
    "pairwise_rouge",
    "rouge_dict",
    "rouge_from_stats",
    "rouge_stats",
    "sentence_rouge",
]

# The last dim of every score tensor, in rouge-score's Score order.
MEASURES = ("precision", "recall", "fmeasure")

Hyps = Tensor | Padded | Sequence[str]
Refs = Tensor | Padded | Sequence[str] | Sequence[Sequence[str | None]]
DeviceArg = torch.device | str | Literal["auto"] | None


def rouge_stats(
    hyps: Hyps,
    refs: Refs,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
    use_stemmer: bool = False,
    dtype: torch.dtype = torch.float32,
    config: RougeConfig | None = None,
    device: DeviceArg = None,
    validate: bool = True,
) -> Tensor:
    """ROUGE statistics per sentence: rows that add up over any split of the batch.

    Corpus ROUGE is :func:`rouge_from_stats` of ``stats.sum(0)``: the mean of the sentence
    scores (rouge-score's aggregator's ``mid``, torchmetrics' ``ROUGEScore``).

    Args:
        hyps: ``[B, L]`` integer token IDs or a :class:`~tensortext.padded.Padded` (called
            ``hyp_ids`` in error messages, as in BLEU); or ``B`` strings.
        refs: for IDs, ``[B, L']`` or ``[B, R, L']`` (or a ``Padded`` of either); for text,
            ``B`` strings or ``B`` sequences of strings where ``None`` is a missing reference.
            A sentence without any reference scores 0, as against one empty reference.
        hyp_lens: ``[B]`` hypothesis lengths (IDs only).
        ref_lens: ``[B]`` or ``[B, R]``; -1 (:data:`~tensortext.padded.MISSING_REF`) marks a
            slot without a reference (IDs only).
        pad_id: for IDs without lengths, every token equal to it (or to one of several) is
            removed; no default.
        rouge_types: ``"rouge1"`` .. ``"rouge9"``, ``"rougeL"``: the ``T`` scores, in order.
        use_stemmer: rouge-score's Porter stemming (text only; needs nltk).
        dtype: ``torch.float32`` or ``torch.float64``.
        config: all three options at once (see :class:`~tensortext.rouge.RougeConfig`);
            pass either ``config`` or the option keywords.
        device: where text is scored (``None`` the CPU, ``"auto"`` CUDA when available); token
            IDs are scored on their own device.
        validate: check lengths and IDs (one host sync); ``False`` skips it.

    Returns:
        ``[B, 1 + 3T]`` of ``dtype``: 1 (a sentence count), then ``precision, recall,
        fmeasure`` of each type against the reference with the highest F-measure of that type
        (the first on ties, as rouge-score's ``score_multi``).

    Raises:
        TypeError: a wrong type or dtype (inputs, lengths, ``pad_id``, an option).
        ValueError: a wrong shape, device, length, negative ID or option value.

    Example:
        >>> rouge_stats(["the cat sat"], ["the cat ran"], rouge_types=["rouge1"]).tolist()
        [[1.0, 0.6666666865348816, 0.6666666865348816, 0.6666666865348816]]
    """
    config = resolve_config(config, rouge_types=rouge_types, use_stemmer=use_stemmer, dtype=dtype)
    batch = prepare_batch(
        hyps,
        refs,
        hyp_lens=hyp_lens,
        ref_lens=ref_lens,
        pad_id=pad_id,
        config=config,
        device=device,
        validate=validate,
    )
    return compute_stats(batch, config)


def rouge_from_stats(
    stats: Tensor,
    *,
    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
    config: RougeConfig | None = None,
) -> Tensor:
    """ROUGE from statistics: the score sums divided by the sentence count.

    ``rouge_from_stats(rouge_stats(h, r))`` is ``sentence_rouge(h, r)``, and
    ``rouge_from_stats(rouge_stats(h, r).sum(0))`` is ``corpus_rouge(h, r)``.

    Args:
        stats: ``[..., 1 + 3T]`` floating statistics from :func:`rouge_stats` (or sums of them).
        rouge_types: the ``T`` types the statistics hold, in order.
        config: instead of ``rouge_types``.

    Returns:
        ``[..., T, 3]`` ``precision, recall, fmeasure`` of ``stats.dtype`` (0 for a count of 0).

    Raises:
        TypeError: ``stats`` not a floating tensor. ValueError: a column count that does not
            fit the types.

    Example:
        >>> rouge_from_stats(torch.tensor([2.0, 1.5, 1.0, 1.2]), rouge_types=["rougeL"]).tolist()
        [[0.75, 0.5, 0.6000000238418579]]
    """
    config = resolve_config(config, rouge_types=rouge_types)
    stats = check_float_tensor("stats", stats, shape="[..., 1 + 3T]")
    if stats.dim() == 0 or stats.shape[-1] != config.width:
        raise ValueError(
            f"stats must have {config.width} columns (1 + 3 x {len(config.rouge_types)} for "
            f"{config.rouge_types}), got shape {list(stats.shape)}; pass the rouge_types the "
            "statistics were computed with"
        )
    count = stats[..., :1].clamp(min=1)
    sums = stats[..., 1:].reshape(*stats.shape[:-1], len(config.rouge_types), 3)
    return sums / count.unsqueeze(-1)


def sentence_rouge(
    hyps: Hyps,
    refs: Refs,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
    use_stemmer: bool = False,
    dtype: torch.dtype = torch.float32,
    config: RougeConfig | None = None,
    device: DeviceArg = None,
    validate: bool = True,
) -> Tensor:
    """Per-sentence ROUGE of a batch (an RL reward per sample).

    Equals ``rouge_score.rouge_scorer.RougeScorer(rouge_types, use_stemmer).score_multi(refs,
    hyp)`` per sentence (``score(ref, hyp)`` for one reference); token IDs score as their
    space-joined decimal strings would.

    Args:
        hyps: ``[B, L]`` token IDs or a ``Padded``, or ``B`` strings.
        refs: ``[B, L']`` / ``[B, R, L']`` IDs or a ``Padded``; or ``B`` strings or ``B``
            sequences of strings (``None`` = missing).
        hyp_lens: ``[B]`` hypothesis lengths (IDs only).
        ref_lens: ``[B]`` or ``[B, R]``, -1 for a missing slot (IDs only).
        pad_id: for IDs without lengths: the padding token(s) to remove; no default.
        rouge_types: ``"rouge1"`` .. ``"rouge9"``, ``"rougeL"``.
        use_stemmer: rouge-score's Porter stemming (text only; needs nltk).
        dtype: ``torch.float32`` or ``torch.float64``.
        config: the three options above at once; pass either ``config`` or the keywords.
        device: where text is scored; token IDs are scored on their own device.
        validate: check lengths and IDs (one host sync); ``False`` skips it.

    Returns:
        ``[B, T, 3]`` ``precision, recall, fmeasure`` of ``dtype``.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape, device, length, negative
            ID or option value.

    Example:
        >>> hyp, ref = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[5, 6, 9, 8]])
        >>> sentence_rouge(hyp, ref, rouge_types=["rouge2", "rougeL"]).tolist()
        [[[0.3333333432674408, 0.3333333432674408, 0.3333333432674408], [0.75, 0.75, 0.75]]]
    """
    stats = rouge_stats(
        hyps,
        refs,
        hyp_lens=hyp_lens,
        ref_lens=ref_lens,
        pad_id=pad_id,
        rouge_types=rouge_types,
        use_stemmer=use_stemmer,
        dtype=dtype,
        config=config,
        device=device,
        validate=validate,
    )
    return stats[:, 1:].reshape(stats.shape[0], stats.shape[1] // 3, 3)  # [B, T, 3]


def corpus_rouge(
    hyps: Hyps,
    refs: Refs,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
    use_stemmer: bool = False,
    dtype: torch.dtype = torch.float32,
    config: RougeConfig | None = None,
    device: DeviceArg = None,
    validate: bool = True,
) -> Tensor:
    """Corpus ROUGE: the mean of the sentence scores (0 for an empty batch).

    Equals the mean over sentences of rouge-score's scores (its ``BootstrapAggregator`` reports
    a bootstrap estimate of it as ``mid``) and torchmetrics' ``ROUGEScore(accumulate="best")``.

    Args:
        hyps: ``[B, L]`` token IDs or a ``Padded``, or ``B`` strings.
        refs: ``[B, L']`` / ``[B, R, L']`` IDs or a ``Padded``; or ``B`` strings or ``B``
            sequences of strings (``None`` = missing).
        hyp_lens: ``[B]`` hypothesis lengths (IDs only).
        ref_lens: ``[B]`` or ``[B, R]``, -1 for a missing slot (IDs only).
        pad_id: for IDs without lengths: the padding token(s) to remove; no default.
        rouge_types: ``"rouge1"`` .. ``"rouge9"``, ``"rougeL"``.
        use_stemmer: rouge-score's Porter stemming (text only; needs nltk).
        dtype: ``torch.float32`` or ``torch.float64``.
        config: the three options above at once; pass either ``config`` or the keywords.
        device: where text is scored; token IDs are scored on their own device.
        validate: check lengths and IDs (one host sync); ``False`` skips it.

    Returns:
        ``[T, 3]`` ``precision, recall, fmeasure`` of ``dtype``.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape, device, length, negative
            ID or option value.

    Example:
        >>> corpus_rouge(["a b", "c d"], ["a b", "x y"], rouge_types=["rouge1"]).tolist()
        [[0.5, 0.5, 0.5]]
    """
    config = resolve_config(config, rouge_types=rouge_types, use_stemmer=use_stemmer, dtype=dtype)
    stats = rouge_stats(
        hyps,
        refs,
        hyp_lens=hyp_lens,
        ref_lens=ref_lens,
        pad_id=pad_id,
        config=config,
        device=device,
        validate=validate,
    )
    return rouge_from_stats(stats.sum(0), config=config)


def pairwise_rouge(
    candidates: Padded | Sequence[Sequence[str]],
    *,
    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
    use_stemmer: bool = False,
    dtype: torch.dtype = torch.float32,
    config: RougeConfig | None = None,
    device: DeviceArg = None,
    validate: bool = True,
) -> Tensor:
    """ROUGE of every candidate against every other candidate of its sentence (for MBR).

    Each candidate's n-grams are counted once for all its pairs; the LCS runs per pair.

    Args:
        candidates: a :class:`~tensortext.padded.Padded` of ``[B, N, L]`` token IDs with
            ``[B, N]`` lengths, or ``B`` lists of ``N`` strings.
        rouge_types: ``"rouge1"`` .. ``"rouge9"``, ``"rougeL"``.
        use_stemmer: rouge-score's Porter stemming (text only; needs nltk).
        dtype: ``torch.float32`` or ``torch.float64``.
        config: the three options above at once; pass either ``config`` or the keywords.
        device: where text is scored; token IDs are scored on their own device.
        validate: check lengths and IDs (one host sync); ``False`` skips it.

    Returns:
        ``[B, N, N, T, 3]`` of ``dtype``: ``[b, i, j]`` is ``sentence_rouge`` of candidate ``i``
        as the hypothesis against candidate ``j`` as the reference.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape, device, length, negative
            ID, option value, or rows of different ``N``.

    Example:
        >>> scores = pairwise_rouge([["a b c", "a c"]], rouge_types=["rougeL"])
        >>> scores[0, :, :, 0, 2].tolist()  # F-measures
        [[1.0, 0.800000011920929], [0.800000011920929, 1.0]]
    """
    config = resolve_config(config, rouge_types=rouge_types, use_stemmer=use_stemmer, dtype=dtype)
    padded = prepare_candidates(candidates, config=config, device=device, validate=validate)
    return pairwise_scores(padded, config)


def rouge_dict(
    scores: Tensor,
    *,
    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
    config: RougeConfig | None = None,
) -> dict[str, Tensor]:
    """``[..., T, 3]`` scores as torchmetrics' ``rouge_score`` dict.

    Args:
        scores: ``[..., T, 3]`` from :func:`sentence_rouge`, :func:`corpus_rouge`, ...
        rouge_types: the ``T`` types of ``scores``, in order.
        config: instead of ``rouge_types``.

    Returns:
        ``{"rouge1_fmeasure": [...], "rouge1_precision": [...], "rouge1_recall": [...], ...}``
        (torchmetrics' keys and order), views of ``scores``.

    Raises:
        TypeError: ``scores`` not a floating tensor. ValueError: a shape that does not fit.

    Example:
        >>> rouge_dict(torch.tensor([[1.0, 0.5, 0.6]]), rouge_types=["rougeL"])["rougeL_recall"]
        tensor(0.5000)
    """
    config = resolve_config(config, rouge_types=rouge_types)
    scores = check_float_tensor("scores", scores, shape="[..., T, 3]")
    expected = (len(config.rouge_types), 3)
    if scores.dim() < 2 or tuple(scores.shape[-2:]) != expected:
        raise ValueError(
            f"scores must be [..., {expected[0]}, 3] for rouge_types={config.rouge_types}, got "
            f"shape {list(scores.shape)}"
        )
    out = {}
    for index, name in enumerate(config.rouge_types):
        for measure in ("fmeasure", "precision", "recall"):
            out[f"{name}_{measure}"] = scores[..., index, MEASURES.index(measure)]
    return out
