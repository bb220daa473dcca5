"""``RougeConfig``: which ROUGE scores to compute and how, declared and validated in one place.

A config is checked once, when it is built (wrong types raise ``TypeError``, wrong values
``ValueError``, each naming the option and the fix), and resolves each ROUGE type to what the
statistics need: :attr:`RougeConfig.ngram_orders` (``n`` for ``rougeN``, 0 for ``rougeL``).
Everything downstream reads the resolved fields and never re-checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from tensortext._checks import brief
from tensortext._checks import resolve_config as checked_config
from tensortext.rouge.text import porter_stemmer

__all__ = ["DEFAULT_ROUGE_TYPES", "ROUGE_TYPES", "RougeConfig", "resolve_config"]

# rouge-score's ``rouge[0-9]$`` with n > 0, and its LCS score.
ROUGE_TYPES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL")
DEFAULT_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")


@dataclass(frozen=True)
class RougeConfig:
    """ROUGE's options, validated once (the names and defaults of ``rouge-score``).

    Args:
        rouge_types: the scores to compute, in this order: ``"rouge1"`` .. ``"rouge9"``
            (n-gram overlap) and ``"rougeL"`` (longest common subsequence); stored as a tuple.
            rouge-score's ``"rougeLsum"`` is not supported.
        use_stemmer: rouge-score's option: nltk's Porter stemmer on words longer than 3
            characters (text input only; needs ``nltk``).
        dtype: ``torch.float32`` or ``torch.float64``: the dtype of scores and statistics.

    Attributes:
        ngram_orders: per ROUGE type, its n-gram order ``n``, or 0 for ``rougeL``.

    Raises:
        TypeError: an option of the wrong type (``dtype`` not float32/float64 included).
        ValueError: an unknown, duplicate or missing ROUGE type.
        ImportError: ``use_stemmer=True`` without nltk installed.

    Example:
        >>> RougeConfig(rouge_types=["rouge2", "rougeL"]).ngram_orders
        (2, 0)
    """

    rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES
    use_stemmer: bool = False
    dtype: torch.dtype = torch.float32
    ngram_orders: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        types = _check_rouge_types(self.rouge_types)
        object.__setattr__(self, "rouge_types", types)
        if not isinstance(self.use_stemmer, bool):
            raise TypeError(f"use_stemmer must be True or False, got {brief(self.use_stemmer)}")
        if self.use_stemmer:
            porter_stemmer()  # ImportError naming `pip install nltk`, before any work
        # Half precision cannot even hold a sentence count above 2048 exactly; refuse it.
        if self.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"dtype must be torch.float32 or torch.float64, got {self.dtype}")
        orders = tuple(0 if name == "rougeL" else int(name[5:]) for name in types)
        object.__setattr__(self, "ngram_orders", orders)

    @property
    def max_ngram_order(self) -> int:
        """The highest n-gram order among the types (0 when there is only ``rougeL``)."""
        return max(self.ngram_orders)

    @property
    def width(self) -> int:
        """Columns of a statistics row: the sentence count, then 3 per ROUGE type."""
        return 1 + 3 * len(self.ngram_orders)


def _check_rouge_types(rouge_types: object) -> tuple[str, ...]:
    """``rouge_types`` as a tuple of known, distinct names."""
    if isinstance(rouge_types, str) or not isinstance(rouge_types, Sequence):
        hint = f"; pass ({rouge_types!r},)" if isinstance(rouge_types, str) else ""
        raise TypeError(
            f"rouge_types must be a sequence of names such as ('rouge1', 'rougeL'), got "
            f"{type(rouge_types).__name__} {brief(rouge_types)}{hint}"
        )
    types = tuple(rouge_types)
    if not types:
        raise ValueError(f"rouge_types is empty; pass some of {ROUGE_TYPES}")
    for name in types:
        if not isinstance(name, str):
            raise TypeError(f"rouge_types must hold strings, got {brief(name)}")
        if name == "rougeLsum":
            raise ValueError(
                "rouge_types: 'rougeLsum' (rouge-score's summary-level LCS over newline-split "
                "sentences) is not supported; use 'rougeL'"
            )
        if name not in ROUGE_TYPES:
            raise ValueError(f"rouge_types: unknown type {brief(name)}; valid: {ROUGE_TYPES}")
    if len(set(types)) != len(types):
        repeated = next(name for name in types if types.count(name) > 1)
        raise ValueError(
            f"rouge_types names {repeated!r} twice; pass each once (valid: {ROUGE_TYPES})"
        )
    return types


def resolve_config(config: RougeConfig | None, **options: Any) -> RougeConfig:
    """The config of a call that takes ``config=`` or the options as keywords, not both
    (:func:`tensortext._checks.resolve_config` for :class:`RougeConfig`)."""
    return checked_config(RougeConfig, config, options)
