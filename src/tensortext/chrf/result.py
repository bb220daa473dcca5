"""``CHRFScore``: a chrF score as sacrebleu's ``CHRFScore`` holds and prints it.

:func:`chrf_score` turns a row of statistics (a sentence's, or a corpus's summed row) into one,
and :func:`chrf_scores` every row of a batch at once, with the formula the tensor functions
use, so that whatever prints a score (the CLI) prints exactly what ``sacrebleu`` prints and
never re-derives it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from torch import Tensor

from tensortext.chrf.config import ChrfConfig
from tensortext.chrf.score import check_stats, sacrebleu_scores

__all__ = ["CHRFScore", "chrf_score", "chrf_scores"]


@dataclass(frozen=True)
class CHRFScore:
    """One chrF score in sacrebleu's terms (0-100).

    Attributes:
        score: chrF in percent (0-100), as sacrebleu computes it.
        char_order: character n-gram order.
        word_order: word n-gram order (2 is chrF++).
        beta: the recall weight, as given (sacrebleu's name shows ``2`` for the int 2).

    Example:
        >>> import torch
        >>> score = chrf_score(torch.tensor([3, 3, 3, 2, 2, 2]), ChrfConfig(char_order=2))
        >>> score.format(), score.format(signature="nrefs:1|case:mixed")
        ('chrF2 = 100.00', 'chrF2|nrefs:1|case:mixed = 100.00')
    """

    score: float
    char_order: int
    word_order: int
    beta: float

    @property
    def name(self) -> str:
        """sacrebleu's name: ``chrF2``, ``chrF2++`` (one ``+`` per word order)."""
        return f"chrF{self.beta}" + "+" * self.word_order

    def __str__(self) -> str:
        """:meth:`format`, as sacrebleu's ``str(score)``."""
        return self.format()

    def format(
        self, width: int = 2, score_only: bool = False, signature: str = "", is_json: bool = False
    ) -> str:
        """sacrebleu's ``Score.format``: ``chrF2|signature = 12.34``, the score only, or JSON.

        Args:
            width: decimals of the score.
            score_only: only the score, e.g. ``"12.34"`` (this wins over ``is_json``, as in
                sacrebleu).
            signature: put after the name and ``|`` when given (``key:value|...``).
            is_json: sacrebleu's JSON record (``name``, ``score``, ``signature`` and each
                signature field), indented by 1. (sacrebleu fails on an empty signature here;
                this leaves the fields out.)
        """
        text = f"{self.score:.{width}f}"
        if score_only:
            return text
        if is_json:
            record: dict[str, object] = {
                "name": self.name,
                "score": float(text),
                "signature": signature,
            }
            for field in signature.split("|") if signature else ():
                key, value = field.split(":")
                record[key] = value
            return json.dumps(record, indent=1, ensure_ascii=False)
        name = f"{self.name}|{signature}" if signature else self.name
        return f"{name} = {text}"


def chrf_score(stats: Tensor, config: ChrfConfig) -> CHRFScore:
    """The :class:`CHRFScore` of one row of statistics (a sentence's, or ``stats.sum(0)``).

    Args:
        stats: ``[3 * (C + W)]`` integer statistics from :func:`~tensortext.chrf.chrf_stats`.
        config: the options they were computed with.

    Returns:
        sacrebleu's ``CHRF(...).corpus_score`` (or ``sentence_score``) of the same data.

    Raises:
        TypeError: ``stats`` is not an integer tensor. ValueError: not one row of the width
            ``config`` needs.
    """
    row = check_stats(stats, config)
    if row.dim() != 1:
        raise ValueError(
            f"stats must be one row [3 * (C + W)], got shape {list(row.shape)}; pass "
            "stats.sum(0) for a corpus, or one sentence's row"
        )
    return CHRFScore(
        score=float(sacrebleu_scores(row, config)),  # one host read
        char_order=config.char_order,
        word_order=config.word_order,
        beta=config.beta,
    )


def chrf_scores(stats: Tensor, config: ChrfConfig) -> list[CHRFScore]:
    """One :class:`CHRFScore` per row of ``[B, 3 * (C + W)]`` statistics (sentence-level
    output), with one host copy for the batch.

    Raises:
        TypeError: ``stats`` is not an integer tensor. ValueError: not rows of the width
            ``config`` needs.

    Example:
        >>> import torch
        >>> rows = torch.tensor([[3, 3, 3, 2, 2, 2], [3, 3, 0, 2, 2, 0]])
        >>> [str(s) for s in chrf_scores(rows, ChrfConfig(char_order=2))]
        ['chrF2 = 100.00', 'chrF2 = 0.00']
    """
    rows = check_stats(stats, config)
    if rows.dim() != 2:
        raise ValueError(f"stats must be rows [B, 3 * (C + W)], got shape {list(rows.shape)}")
    return [
        CHRFScore(score, config.char_order, config.word_order, config.beta)
        for score in sacrebleu_scores(rows, config).tolist()
    ]
