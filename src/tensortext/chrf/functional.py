"""The functional chrF API: each function is validate -> format -> statistics -> score.

The options are :class:`~tensortext.chrf.ChrfConfig`'s fields (sacrebleu's names and defaults)
as keywords, or one ``config=``; either way they are validated once, before any work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from torch import Tensor

from tensortext.chrf.batch import Device, format_pairs
from tensortext.chrf.config import ChrfConfig, resolve_config
from tensortext.chrf.score import check_stats, scores_from_stats
from tensortext.chrf.stats import compute_stats
from tensortext.padded import Padded

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from tensortext.chrf.config import ChrfOptions

__all__ = [
    "Hypotheses",
    "References",
    "chrf_from_stats",
    "chrf_stats",
    "corpus_chrf",
    "sentence_chrf",
]

Hypotheses = Sequence[str] | Tensor | Padded
References = Sequence[str] | Sequence[Sequence[str | None]] | Tensor | Padded


def chrf_stats(
    hyps: Hypotheses,
    refs: References,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    config: ChrfConfig | None = None,
    device: Device = None,
    validate: bool = True,
    **options: Unpack[ChrfOptions],
) -> Tensor:
    """chrF statistics per sentence: sacrebleu's segment statistics, as a tensor.

    Statistics add over any split of the batch: corpus chrF is the formula on ``stats.sum(0)``
    (see :func:`chrf_from_stats`).

    Args:
        hyps: ``B`` strings, or Unicode codepoints: a ``[B, L]`` integer tensor or a
            :class:`~tensortext.padded.Padded` (which carries ``hyp_lens``).
        refs: text: one string per sentence, or a list of strings per sentence (``None`` for a
            missing one; sacrebleu's ``corpus_score`` takes streams ``refs[r][b]``, this takes
            ``refs[b][r]``: pass ``list(zip(*streams))``). Codepoints: ``[B, L']`` or
            ``[B, R, L']``, or a ``Padded`` of either.
        hyp_lens: ``[B]`` lengths of codepoint hypotheses.
        ref_lens: ``[B]`` or ``[B, R]``; -1 (:data:`~tensortext.padded.MISSING_REF`) is a
            missing reference, 0 an empty one.
        pad_id: for codepoint tensors without lengths, every position equal to it (or to one of
            several) is removed; an all-padding reference slot is missing.
        config: all options at once (:class:`~tensortext.chrf.ChrfConfig`), or pass them as
            keywords (``char_order``, ``word_order``, ``beta``, ``lowercase``, ``whitespace``,
            ``eps_smoothing``, ``dtype``), not both. ``beta`` and ``eps_smoothing`` decide which
            reference is the best.
        device: where text is scored: ``None`` the CPU, ``"auto"`` CUDA when available.
            Codepoint tensors are scored where they are.
        validate: check lengths and codepoints of tensors (a host sync); ``False`` skips it
            (then codepoints outside ``0..0x10FFFF`` give meaningless counts).
        **options: the :class:`ChrfConfig` fields.

    Returns:
        ``[B, 3 * (C + W)]`` int64: per order (characters ``1..C``, then words ``1..W``)
        ``[hyp_count, ref_count, match]`` of the best reference. Sentences whose references
        are all missing get zeros.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape, device, length, codepoint
            or option value, or ``lowercase=True`` with codepoint tensors.

    Example:
        >>> chrf_stats(["abc"], ["abd"], char_order=2).tolist()
        [[3, 3, 2, 2, 2, 1]]
    """
    config = resolve_config(config, dict(options))
    grouped = format_pairs(
        hyps,
        refs,
        hyp_lens=hyp_lens,
        ref_lens=ref_lens,
        pad_id=pad_id,
        lowercase=config.lowercase,
        device=device,
        validate=validate,
    )
    return compute_stats(grouped, config)


def sentence_chrf(
    hyps: Hypotheses,
    refs: References,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    config: ChrfConfig | None = None,
    device: Device = None,
    validate: bool = True,
    **options: Unpack[ChrfOptions],
) -> Tensor:
    """Per-sentence chrF (chrF++ with ``word_order=2``) in 0..1, e.g. an RL reward per sample.

    Equals ``sacrebleu.metrics.CHRF(**options).sentence_score(hyp, refs).score / 100`` per
    sentence (missing references dropped, as sacrebleu drops ``None``).

    Args: as :func:`chrf_stats`.

    Returns:
        ``[B]`` scores of ``dtype`` (0 where every reference is missing).

    Raises:
        TypeError, ValueError: as :func:`chrf_stats`.

    Example:
        >>> sentence_chrf(["the cat sat", "a dog"], ["the cat sat", "the dog"]).tolist()[0]
        1.0
    """
    config = resolve_config(config, dict(options))
    stats = chrf_stats(
        hyps,
        refs,
        hyp_lens=hyp_lens,
        ref_lens=ref_lens,
        pad_id=pad_id,
        config=config,
        device=device,
        validate=validate,
    )
    return scores_from_stats(stats, config)


def corpus_chrf(
    hyps: Hypotheses,
    refs: References,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    config: ChrfConfig | None = None,
    device: Device = None,
    validate: bool = True,
    **options: Unpack[ChrfOptions],
) -> Tensor:
    """Corpus chrF in 0..1: the formula on the summed statistics of every sentence.

    Equals ``sacrebleu.metrics.CHRF(**options).corpus_score(hyps, streams).score / 100`` with
    ``streams = list(zip(*refs))`` (references as sacrebleu's streams).

    Args: as :func:`chrf_stats`.

    Returns:
        0-d tensor of ``dtype``.

    Raises:
        TypeError, ValueError: as :func:`chrf_stats`.

    Example:
        >>> round(float(corpus_chrf(["the cat sat", "a dog"], ["the cat sat", "the dog"])), 4)
        0.7769
    """
    config = resolve_config(config, dict(options))
    stats = chrf_stats(
        hyps,
        refs,
        hyp_lens=hyp_lens,
        ref_lens=ref_lens,
        pad_id=pad_id,
        config=config,
        device=device,
        validate=validate,
    )
    return scores_from_stats(stats.sum(0), config)


def chrf_from_stats(
    stats: Tensor, *, config: ChrfConfig | None = None, **options: Unpack[ChrfOptions]
) -> Tensor:
    """chrF in 0..1 from statistics, one score per row.

    ``chrf_from_stats(chrf_stats(h, r))`` is ``sentence_chrf(h, r)`` and
    ``chrf_from_stats(stats.sum(0))`` is ``corpus_chrf(h, r)``.

    Args:
        stats: ``[..., 3 * (C + W)]`` integer statistics from :func:`chrf_stats` with the same
            orders.
        config: all options at once, or pass them as keywords (not both).
        **options: the :class:`ChrfConfig` fields.

    Returns:
        ``[...]`` scores of ``dtype``.

    Raises:
        TypeError: ``stats`` not an integer tensor, or an option of the wrong type.
        ValueError: the wrong number of columns, or a wrong option value.

    Example:
        >>> import torch
        >>> chrf_from_stats(torch.tensor([3, 3, 3, 2, 2, 2]), char_order=2).tolist()
        1.0
    """
    config = resolve_config(config, dict(options))
    return scores_from_stats(check_stats(stats, config), config)
