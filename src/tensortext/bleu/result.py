"""``BLEUScore``: a score with the parts it came from, as sacrebleu's ``BLEUScore`` reports them.

:func:`bleu_scores` turns rows of sufficient statistics into score objects with one call of
:func:`~tensortext.bleu.score.score_parts` (the formula the tensors functions use), so that
nothing that prints a score (the CLI) re-derives precisions, smoothing or the brevity penalty.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from tensortext.bleu.config import BleuConfig
from tensortext.bleu.score import check_stats, score_parts

__all__ = ["BLEUScore", "bleu_scores"]


@dataclass(frozen=True)
class BLEUScore:
    """One BLEU score in sacrebleu's terms (0-100), with its statistics.

    Attributes:
        score: BLEU in percent (0-100), as sacrebleu prints it.
        counts: ``N`` matched n-gram counts ``correct_1..N``; with sacrebleu's ``add-k``,
            ``k`` is added to orders 2..N as sacrebleu adds it (when anything matches, up to
            the first order without n-grams), so the fields equal sacrebleu's.
        totals: ``N`` hypothesis n-gram counts ``total_1..N`` (``add-k`` as ``counts``).
        precisions: ``N`` precisions in percent: smoothed as the score uses them under
            ``compat="sacrebleu"`` (0 from the first order without n-grams on, all 0 when
            nothing matches), NLTK's modified precisions under ``compat="nltk"``.
        bp: the brevity penalty.
        sys_len: hypothesis length (summed over a corpus).
        ref_len: closest reference length (summed over a corpus).

    Example:
        >>> import torch
        >>> [score] = bleu_scores(torch.tensor([4, 4, 4, 3, 2, 1, 4, 3, 2, 1]), BleuConfig())
        >>> score.format(width=1)
        'BLEU = 100.0 100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 4 ref_len = 4)'
    """

    score: float
    counts: tuple[float, ...]
    totals: tuple[float, ...]
    precisions: tuple[float, ...]
    bp: float
    sys_len: int
    ref_len: int

    def __str__(self) -> str:
        """:meth:`format`, as sacrebleu's ``str(score)``."""
        return self.format()

    @property
    def ratio(self) -> float:
        """``sys_len / ref_len`` (0 without reference tokens, as in sacrebleu)."""
        return self.sys_len / self.ref_len if self.ref_len else 0.0

    @property
    def verbose(self) -> str:
        """sacrebleu's verbose part: ``P1/P2/... (BP = ... ratio = ... hyp_len = ... ref_len
        = ...)``."""
        precisions = "/".join(f"{p:.1f}" for p in self.precisions)
        return (
            f"{precisions} (BP = {self.bp:.3f} ratio = {self.ratio:.3f} "
            f"hyp_len = {self.sys_len:d} ref_len = {self.ref_len:d})"
        )

    def format(self, width: int = 2, score_only: bool = False, signature: str = "") -> str:
        """sacrebleu's ``Score.format``: ``BLEU|signature = 12.34 verbose``, or the score only.

        Args:
            width: decimals of the score.
            score_only: only the score, e.g. ``"12.34"``.
            signature: put after ``BLEU|`` when given.
        """
        score = f"{self.score:.{width}f}"
        if score_only:
            return score
        name = f"BLEU|{signature}" if signature else "BLEU"
        return f"{name} = {score} {self.verbose}"


def bleu_scores(
    stats: Tensor, config: BleuConfig, *, last_stats: Tensor | None = None
) -> list[BLEUScore]:
    """Score objects of rows of statistics: one per row of ``[B, 2 + 2N']``, or one for a
    single (e.g. summed, corpus) row ``[2 + 2N']``.

    Args:
        stats: integer statistics from :func:`~tensortext.bleu.bleu_stats` (``N'`` may exceed
            ``config.max_ngram_order``; the extra orders are ignored).
        config: the scoring options.
        last_stats: the sentence NLTK's methods 5-7 read (see
            :func:`~tensortext.bleu.bleu_from_stats`); default ``stats``.

    Returns:
        ``B`` (or one) :class:`BLEUScore`; NaN scores where NLTK's method6 is undefined.

    Raises:
        TypeError, ValueError: ``stats`` that are not integer statistics with enough orders.
    """
    stats = check_stats(stats, config)
    last = stats if last_stats is None else check_stats(last_stats, config, "last_stats")
    rows = stats.reshape(-1, stats.shape[-1])
    parts = score_parts(rows, last.expand_as(stats).reshape(rows.shape), config)
    order, stats_orders = config.max_ngram_order, (rows.shape[-1] - 2) // 2
    # One host copy of each part, then plain Python objects.
    scores, precisions, brevity = parts.score.tolist(), parts.precisions.tolist(), parts.brevity
    add_k = config.smoothing if config.method == "add-k" else None
    return [
        BLEUScore(
            score=100.0 * score,
            **_reported_counts(
                row[2 : 2 + order], row[2 + stats_orders : 2 + stats_orders + order], add_k
            ),
            precisions=tuple(row_precisions),
            bp=bp,
            sys_len=row[0],
            ref_len=row[1],
        )
        for score, row, row_precisions, bp in zip(
            scores, rows.tolist(), precisions, brevity.tolist(), strict=True
        )
    ]


def _reported_counts(
    counts: list[int], totals: list[int], add_k: float | None
) -> dict[str, tuple[float, ...]]:
    """``counts`` and ``totals`` as sacrebleu's ``BLEUScore`` holds them: under ``add-k``
    (``add_k``), ``k`` added to orders 2..N in place, when anything matched, until the first
    order whose total is still 0."""
    if add_k is None or not any(counts):
        return {"counts": tuple(counts), "totals": tuple(totals)}
    k = int(add_k) if float(add_k).is_integer() else add_k  # sacrebleu's k=1 keeps ints
    correct: list[float] = list(counts)
    total: list[float] = list(totals)
    for n in range(1, len(total)):
        correct[n] += k
        total[n] += k
        if total[n] == 0:
            break
    return {"counts": tuple(correct), "totals": tuple(total)}
