"""The functional BLEU API: each function is validate -> format -> statistics -> score.

The scoring options are keywords with sacrebleu's and NLTK's names and defaults (a drop-in for
either library), or one ``config=``:class:`~tensortext.bleu.BleuConfig`; either way they are
validated once, into one ``BleuConfig``, before any work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from tensortext.bleu.config import BleuConfig, Compat, resolve_config
from tensortext.bleu.score import check_method6, check_stats, score_stats
from tensortext.bleu.stats import compute_stats, format_batch, last_row
from tensortext.padded import Padded

__all__ = ["bleu_from_stats", "bleu_stats", "corpus_bleu", "sentence_bleu"]


def bleu_stats(
    hyp_ids: Tensor | Padded,
    ref_ids: Tensor | Padded,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    max_ngram_order: int = 4,
    compat: Compat = "sacrebleu",
    config: BleuConfig | None = None,
    validate: bool = True,
) -> Tensor:
    """BLEU sufficient statistics per sentence.

    Statistics add over any split of the batch: corpus BLEU is the formula on ``stats.sum(0)``
    (see :func:`bleu_from_stats`).

    Args:
        hyp_ids: ``[B, L]`` integer token IDs of the hypotheses, or a
            :class:`~tensortext.padded.Padded` (which carries ``hyp_lens``).
        ref_ids: ``[B, L']`` (one reference each) or ``[B, R, L']`` (``R`` reference slots), or
            a ``Padded`` of either (which carries ``ref_lens``).
        hyp_lens: ``[B]`` lengths of the hypotheses; positions at or past them are ignored.
        ref_lens: ``[B]`` or ``[B, R]``; -1 (:data:`~tensortext.padded.MISSING_REF`) means
            "no reference in this slot" (sacrebleu's ``None``), 0 is an empty reference
            (sacrebleu's ``""``, NLTK's ``[]``). A sentence whose slots are all missing is
            scored against one empty reference. With ``pad_id`` and no ``ref_lens``, an
            all-padding slot of ``[B, R, L']`` references is missing.
        pad_id: for a tensor without lengths, every token equal to ``pad_id`` is removed,
            wherever it is; a tuple such as ``(pad_token_id, -100)`` removes each of them
            (predictions and labels padded differently, as in a ``Seq2SeqTrainer``). No
            default: ID 0 is a real token in GPT-2, cl100k and o200k. With neither lengths
            nor ``pad_id`` every position counts.
        max_ngram_order: highest n-gram order ``N``.
        compat: ``"sacrebleu"`` counts ``total_n = max(0, len - n + 1)``; ``"nltk"`` counts
            ``max(1, len - n + 1)`` per sentence, as NLTK's corpus BLEU sums them.
        config: instead of ``max_ngram_order`` and ``compat``: the statistics ``config`` needs
            (``N = config.stats_order``: 5 or more for NLTK's methods 5 and 7).
        validate: check lengths and IDs (one host sync); ``False`` skips it.

    Returns:
        ``[B, 2 + 2N]`` int64: ``hyp_len, ref_len, correct_1..N, total_1..N`` where ``ref_len``
        is the closest reference length (ties go to the shorter reference).

    Raises:
        TypeError: a wrong type or dtype (IDs, lengths, ``pad_id``, an option).
        ValueError: a wrong shape, device, length, negative ID or option value.

    Example:
        >>> hyp = torch.tensor([[5, 6, 7, 8]])
        >>> bleu_stats(hyp, hyp).tolist()
        [[4, 4, 4, 3, 2, 1, 4, 3, 2, 1]]
    """
    config = resolve_config(config, max_ngram_order=max_ngram_order, compat=compat)
    batch = format_batch(
        hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, pad_id=pad_id, validate=validate
    )
    return compute_stats(batch, config)


def sentence_bleu(
    hyp_ids: Tensor | Padded,
    ref_ids: Tensor | Padded,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
    compat: Compat = "sacrebleu",
    auto_reweigh: bool = False,
    dtype: torch.dtype = torch.float32,
    config: BleuConfig | None = None,
    validate: bool = True,
) -> Tensor:
    """Per-sentence BLEU of a batch, in 0..1 (an RL reward per sample).

    Equals ``sacrebleu.metrics.BLEU(tokenize="none", ...).sentence_score`` on space-joined IDs
    divided by 100 (``compat="sacrebleu"``), or ``nltk.translate.bleu_score.sentence_bleu`` on
    ID lists with ``SmoothingFunction().<method>`` (``compat="nltk"``).

    Args:
        hyp_ids: ``[B, L]`` integer token IDs of the hypotheses, or a
            :class:`~tensortext.padded.Padded` (which carries ``hyp_lens``).
        ref_ids: ``[B, L']`` (one reference each) or ``[B, R, L']`` (``R`` reference slots), or
            a ``Padded`` of either (which carries ``ref_lens``).
        hyp_lens: ``[B]`` hypothesis lengths; positions at or past them are ignored.
        ref_lens: ``[B]`` or ``[B, R]``; -1 (:data:`~tensortext.padded.MISSING_REF`) means
            "no reference in this slot" (sacrebleu's ``None``), 0 is an empty reference
            (sacrebleu's ``""``, NLTK's ``[]``). A sentence whose slots are all missing is
            scored against one empty reference. With ``pad_id`` and no ``ref_lens``, an
            all-padding slot of ``[B, R, L']`` references is missing.
        pad_id: for a tensor without lengths, every token equal to ``pad_id`` is removed,
            wherever it is; a tuple such as ``(pad_token_id, -100)`` removes each of them
            (predictions and labels padded differently, as in a ``Seq2SeqTrainer``). No
            default: ID 0 is a real token in GPT-2, cl100k and o200k.
        max_ngram_order: highest n-gram order ``N``.
        weights: NLTK's per-order weights (``compat="nltk"`` only); default uniform ``1/N``.
        smooth_method: sacrebleu's ``"none"``, ``"floor"``, ``"add-k"``, ``"exp"``; with
            ``compat="nltk"`` also ``"method0"`` .. ``"method7"``.
        smooth_value: the method's parameter (floor, k, epsilon, alpha); ``None``: the
            library's default.
        effective_order: sacrebleu's option: drop orders without any n-gram.
        compat: ``"sacrebleu"`` or ``"nltk"``: whose definition to match exactly.
        auto_reweigh: NLTK's option for hypotheses shorter than 4.
        dtype: ``torch.float32`` or ``torch.float64``, of the result and the arithmetic.
        config: all of the eight options above at once (see :class:`BleuConfig`, which
            documents each); pass either ``config`` or the option keywords.
        validate: check lengths and IDs (host sync); ``False`` skips it. With NLTK's method6
            it also turns the error for missing trigram matches into NaN.

    Returns:
        ``[B]`` scores of ``dtype``, in 0..1 with the default smoothing. As in the reference
        libraries, NLTK's methods 4, 5 and 7 and sacrebleu's ``floor`` above 1 can exceed 1.

    Raises:
        TypeError: a wrong type or dtype (IDs, lengths, ``pad_id``, an option).
        ValueError: a wrong shape, device, length, negative ID or option value, before any
            work; with NLTK's method6 and ``validate``, a hypothesis without trigram matches.

    Example:
        >>> hyp = torch.tensor([[5, 6, 7, 8], [5, 6, 9, 9]])
        >>> ref = torch.tensor([[5, 6, 7, 8], [5, 6, 7, 8]])
        >>> sentence_bleu(hyp, ref).tolist()[0]
        1.0
        >>> round(float(sentence_bleu(hyp, ref, config=BleuConfig(max_ngram_order=2))[1]), 4)
        0.4082
    """
    config = resolve_config(
        config,
        max_ngram_order=max_ngram_order,
        weights=weights,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        compat=compat,
        auto_reweigh=auto_reweigh,
        dtype=dtype,
    )
    batch = format_batch(
        hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, pad_id=pad_id, validate=validate
    )
    return _bleu(compute_stats(batch, config), config, "sentence", validate)


def corpus_bleu(
    hyp_ids: Tensor | Padded,
    ref_ids: Tensor | Padded,
    *,
    hyp_lens: Tensor | None = None,
    ref_lens: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
    compat: Compat = "sacrebleu",
    auto_reweigh: bool = False,
    dtype: torch.dtype = torch.float32,
    config: BleuConfig | None = None,
    validate: bool = True,
) -> Tensor:
    """Corpus BLEU of a batch, in 0..1: the BLEU formula on summed statistics.

    Equals ``sacrebleu.metrics.BLEU(tokenize="none", ...).corpus_score`` divided by 100
    (``compat="sacrebleu"``) or ``nltk.translate.bleu_score.corpus_bleu`` (``compat="nltk"``,
    including its use of the last sentence in methods 5-7).

    Args:
        hyp_ids: ``[B, L]`` integer token IDs of the hypotheses, or a
            :class:`~tensortext.padded.Padded` (which carries ``hyp_lens``).
        ref_ids: ``[B, L']`` (one reference each) or ``[B, R, L']`` (``R`` reference slots), or
            a ``Padded`` of either (which carries ``ref_lens``).
        hyp_lens: ``[B]`` hypothesis lengths; positions at or past them are ignored.
        ref_lens: ``[B]`` or ``[B, R]``; -1 (:data:`~tensortext.padded.MISSING_REF`) means
            "no reference in this slot" (sacrebleu's ``None``), 0 is an empty reference
            (sacrebleu's ``""``, NLTK's ``[]``). A sentence whose slots are all missing is
            scored against one empty reference. With ``pad_id`` and no ``ref_lens``, an
            all-padding slot of ``[B, R, L']`` references is missing.
        pad_id: for a tensor without lengths, every token equal to ``pad_id`` is removed,
            wherever it is; a tuple such as ``(pad_token_id, -100)`` removes each of them
            (predictions and labels padded differently, as in a ``Seq2SeqTrainer``). No
            default: ID 0 is a real token in GPT-2, cl100k and o200k.
        max_ngram_order: highest n-gram order ``N``.
        weights: NLTK's per-order weights (``compat="nltk"`` only); default uniform ``1/N``.
        smooth_method: sacrebleu's ``"none"``, ``"floor"``, ``"add-k"``, ``"exp"``; with
            ``compat="nltk"`` also ``"method0"`` .. ``"method7"``.
        smooth_value: the method's parameter (floor, k, epsilon, alpha); ``None``: the
            library's default.
        effective_order: sacrebleu's option: drop orders without any n-gram.
        compat: ``"sacrebleu"`` or ``"nltk"``: whose definition to match exactly.
        auto_reweigh: NLTK's option for hypotheses shorter than 4.
        dtype: ``torch.float32`` or ``torch.float64``, of the result and the arithmetic.
        config: all of the eight options above at once (see :class:`BleuConfig`, which
            documents each); pass either ``config`` or the option keywords.
        validate: check lengths and IDs (host sync); ``False`` skips it. With NLTK's method6
            it also turns the error for missing trigram matches into NaN.

    Returns:
        0-d tensor of ``dtype``.

    Raises:
        TypeError: a wrong type or dtype (IDs, lengths, ``pad_id``, an option).
        ValueError: a wrong shape, device, length, negative ID or option value, before any
            work; with NLTK's method6 and ``validate``, a corpus without trigram matches.

    Example:
        >>> hyp = torch.tensor([[5, 6, 7, 8], [5, 6, 9, 9]])
        >>> ref = torch.tensor([[5, 6, 7, 8], [5, 6, 7, 8]])
        >>> round(float(corpus_bleu(hyp, ref)), 4)
        0.5946
    """
    config = resolve_config(
        config,
        max_ngram_order=max_ngram_order,
        weights=weights,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        compat=compat,
        auto_reweigh=auto_reweigh,
        dtype=dtype,
    )
    batch = format_batch(
        hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens, pad_id=pad_id, validate=validate
    )
    return _bleu(compute_stats(batch, config), config, "corpus", validate)


def _bleu(
    stats: Tensor, config: BleuConfig, level: Literal["sentence", "corpus"], validate: bool
) -> Tensor:
    """The step sentence and corpus BLEU share: score ``[B, 2 + 2N]`` statistics per row, or
    their sum with the last sentence as NLTK's ``last``; then method6's check."""
    if level == "sentence":
        scores = score_stats(stats, stats, config)
    else:
        scores = score_stats(stats.sum(0), last_row(stats), config)
    if validate:
        check_method6(scores, config, "hypothesis" if level == "sentence" else "corpus")
    return scores


def bleu_from_stats(
    stats: Tensor,
    *,
    last_stats: Tensor | None = None,
    max_ngram_order: int = 4,
    weights: Sequence[float] | None = None,
    smooth_method: str = "exp",
    smooth_value: float | None = None,
    effective_order: bool = False,
    compat: Compat = "sacrebleu",
    auto_reweigh: bool = False,
    dtype: torch.dtype = torch.float32,
    config: BleuConfig | None = None,
) -> Tensor:
    """BLEU from sufficient statistics, one score per row.

    ``bleu_from_stats(bleu_stats(h, r))`` is ``sentence_bleu(h, r)``, and
    ``bleu_from_stats(stats.sum(0), last_stats=stats[-1])`` is ``corpus_bleu(h, r)``.

    Args:
        stats: ``[..., 2 + 2N']`` int64 from :func:`bleu_stats` with ``N' >= max_ngram_order``
            and the same ``compat`` (``N' >= 5`` for NLTK's methods 5 and 7).
        last_stats: same shape as ``stats``: the sentence NLTK's methods 5-7 read (its own row
            at sentence level, the corpus's last sentence at corpus level). Default: ``stats``.
        max_ngram_order: highest n-gram order ``N``.
        weights: NLTK's per-order weights (``compat="nltk"`` only); default uniform ``1/N``.
        smooth_method: sacrebleu's ``"none"``, ``"floor"``, ``"add-k"``, ``"exp"``; with
            ``compat="nltk"`` also ``"method0"`` .. ``"method7"``.
        smooth_value: the method's parameter (floor, k, epsilon, alpha); ``None``: the
            library's default.
        effective_order: sacrebleu's option: drop orders without any n-gram.
        compat: ``"sacrebleu"`` or ``"nltk"``: whose definition to match exactly.
        auto_reweigh: NLTK's option for hypotheses shorter than 4.
        dtype: ``torch.float32`` or ``torch.float64``, of the result and the arithmetic.
        config: all of the eight options above at once (see :class:`BleuConfig`); pass either
            ``config`` or the option keywords.

    Returns:
        ``[...]`` scores in 0..1 of ``dtype`` (NaN where NLTK's method6 is undefined).

    Raises:
        TypeError: ``stats`` not an integer tensor, or an option of the wrong type.
        ValueError: too few columns for the options, or a wrong option value.

    Example:
        >>> stats = torch.tensor([[4, 4, 4, 3, 2, 1, 4, 3, 2, 1]])
        >>> bleu_from_stats(stats).tolist()
        [1.0]
    """
    config = resolve_config(
        config,
        max_ngram_order=max_ngram_order,
        weights=weights,
        smooth_method=smooth_method,
        smooth_value=smooth_value,
        effective_order=effective_order,
        compat=compat,
        auto_reweigh=auto_reweigh,
        dtype=dtype,
    )
    stats = check_stats(stats, config)
    if last_stats is None:
        last_stats = stats
    elif check_stats(last_stats, config, "last_stats").shape[-1] != stats.shape[-1]:
        raise ValueError(
            f"last_stats has {last_stats.shape[-1]} columns but stats has {stats.shape[-1]}"
        )
    return score_stats(stats, last_stats.expand_as(stats), config)
