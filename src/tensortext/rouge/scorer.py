"""``RougeScorer``: a drop-in for ``rouge_score.rouge_scorer.RougeScorer`` on the tensor path.

``score`` and ``score_multi`` take and return what rouge-score's do (a dict of ``Score``
named tuples of Python floats, equal to rouge-score's: the arithmetic is float64 in its
operation order); ``score_batch`` is ours: many pairs in one batched call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import torch

from tensortext._checks import brief
from tensortext.rouge.config import RougeConfig
from tensortext.rouge.functional import sentence_rouge

__all__ = ["RougeScorer", "Score"]


class Score(NamedTuple):
    """One ROUGE score, rouge-score's ``Score`` fields: floats in 0..1."""

    precision: float
    recall: float
    fmeasure: float


class RougeScorer:
    """rouge-score's ``RougeScorer`` with its default tokenizer, scored on tensors.

    Args:
        rouge_types: ``"rouge1"`` .. ``"rouge9"``, ``"rougeL"`` (a name given twice is scored
            once, as rouge-score's dict keeps one entry); ``"rougeLsum"`` is not supported.
        use_stemmer: nltk's Porter stemmer on words longer than 3 characters.
        split_summaries: rouge-score's option for ``rougeLsum``; only ``False`` is accepted.
        tokenizer: rouge-score's custom tokenizer hook; only ``None`` (its default tokenizer)
            is accepted.

    Raises:
        TypeError, ValueError: an unknown ROUGE type or an unsupported option, at construction
            (rouge-score raises for unknown types at the first ``score``).
        ImportError: ``use_stemmer=True`` without nltk.

    Example:
        >>> scorer = RougeScorer(["rouge1", "rougeL"])
        >>> scorer.score("The quick brown fox", "the quick fox")["rougeL"]
        Score(precision=1.0, recall=0.75, fmeasure=0.8571428571428571)
    """

    def __init__(
        self,
        rouge_types: Sequence[str],
        use_stemmer: bool = False,
        split_summaries: bool = False,
        tokenizer: object = None,
    ) -> None:
        if split_summaries is not False:
            raise ValueError(
                "split_summaries applies to rougeLsum, which tensortext does not support; pass "
                "split_summaries=False"
            )
        if tokenizer is not None:
            raise ValueError(
                "a custom tokenizer is not supported: tensortext implements rouge-score's "
                "DefaultTokenizer; pass tokenizer=None (and use_stemmer=...)"
            )
        names = rouge_types
        if not isinstance(rouge_types, str) and isinstance(rouge_types, Sequence):
            names = tuple(dict.fromkeys(rouge_types))
        self.config = RougeConfig(rouge_types=names, use_stemmer=use_stemmer, dtype=torch.float64)
        self.rouge_types = list(self.config.rouge_types)

    def score(self, target: str, prediction: str) -> dict[str, Score]:
        """ROUGE of ``prediction`` against ``target`` (the reference comes first, as in
        rouge-score).

        Returns:
            ``{rouge_type: Score(precision, recall, fmeasure)}`` in ``rouge_types`` order.

        Raises:
            TypeError: ``target`` or ``prediction`` is not a string.
        """
        for name, text in (("target", target), ("prediction", prediction)):
            if not isinstance(text, str):
                raise TypeError(f"{name} must be a str, got {type(text).__name__} {brief(text)}")
        return self.score_batch([target], [prediction])[0]

    def score_multi(self, targets: Sequence[str], prediction: str) -> dict[str, Score]:
        """ROUGE of ``prediction`` against several targets: per type, the target with the
        highest F-measure (the first on ties), as rouge-score's ``score_multi``.

        Raises:
            ValueError: ``targets`` is empty (rouge-score fails on it too).
        """
        if isinstance(targets, str) or not isinstance(targets, Sequence):
            raise TypeError(f"targets must be a list of strings, got {brief(targets)}")
        if not targets:
            raise ValueError("targets is empty; pass at least one target text")
        return self.score_batch([list(targets)], [prediction])[0]

    def score_batch(
        self, targets: Sequence[str] | Sequence[Sequence[str]], predictions: Sequence[str]
    ) -> list[dict[str, Score]]:
        """Many pairs at once (tensortext's addition, not in rouge-score).

        Args:
            targets: ``B`` target texts, or ``B`` lists of targets (``score_multi`` each).
            predictions: ``B`` predicted texts.

        Returns:
            ``B`` dicts, as ``score`` (or ``score_multi``) of each pair would return them.

        Example:
            >>> scores = RougeScorer(["rouge1"]).score_batch(["a b", "c d"], ["a b", "c"])
            >>> [s["rouge1"].fmeasure for s in scores]
            [1.0, 0.6666666666666666]
        """
        scores = sentence_rouge(predictions, targets, config=self.config)  # [B, T, 3]
        rows = scores.tolist()  # the one host copy: Python floats out
        return [
            {name: Score(*row[index]) for index, name in enumerate(self.rouge_types)}
            for row in rows
        ]
