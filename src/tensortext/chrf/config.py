"""``ChrfConfig``: chrF's options with sacrebleu's names and defaults, validated once.

A config is checked when it is built (a wrong type raises ``TypeError``, a wrong value
``ValueError``, each naming the option and the fix); everything downstream reads its fields and
never re-checks. Functions take either ``config=`` or the options as keywords, not both
(:func:`resolve_config`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, TypedDict

import torch

from tensortext._checks import MAX_NGRAM_ORDER, brief, check_int, check_ngram_order

__all__ = ["ChrfConfig", "ChrfOptions", "resolve_config"]


@dataclass(frozen=True)
class ChrfConfig:
    """chrF's scoring options (``sacrebleu.metrics.CHRF``'s names and defaults).

    Args:
        char_order: highest character n-gram order ``C``, ``1 <= C <=``
            :data:`~tensortext._checks.MAX_NGRAM_ORDER`.
        word_order: highest word n-gram order ``W``, ``0 <= W <= MAX_NGRAM_ORDER``; 2 is chrF++.
        beta: weight of recall against precision, ``> 0`` and finite; an ``int`` (sacrebleu's
            type, which its name ``chrF2`` shows) or a ``float``.
        lowercase: score ``str.lower()`` of the text (text input only: lowercasing is
            context-sensitive, e.g. the final sigma, so it is not done on codepoints).
        whitespace: keep whitespace in character n-grams (sacrebleu's ``whitespace=True``,
            ``remove_whitespace=False`` in ``sacrebleu.corpus_chrf``).
        eps_smoothing: chrF++.py's, NLTK's and Moses' epsilon smoothing; ``False`` averages
            precision and recall over the orders that have n-grams (sacrebleu's default).
        dtype: ``torch.float32`` or ``torch.float64``, the dtype of the scores (the formula
            runs in float64 either way, as sacrebleu's Python floats do).

    Raises:
        TypeError: an option of the wrong type. ValueError: an option out of range.

    Example:
        >>> ChrfConfig(word_order=2).name
        'chrF2++'
    """

    char_order: int = 6
    word_order: int = 0
    beta: float = 2
    lowercase: bool = False
    whitespace: bool = False
    eps_smoothing: bool = False
    dtype: torch.dtype = torch.float32

    def __post_init__(self) -> None:
        check_ngram_order("char_order", self.char_order)
        check_int("word_order", self.word_order, minimum=0)
        if self.word_order > MAX_NGRAM_ORDER:
            raise ValueError(
                f"word_order must be <= {MAX_NGRAM_ORDER}, got {brief(self.word_order)}; "
                "chrF++ is word_order=2"
            )
        if isinstance(self.beta, bool) or not isinstance(self.beta, (int, float)):
            raise TypeError(f"beta must be a number, got {type(self.beta).__name__}")
        try:
            factor = float(self.beta) ** 2
        except OverflowError:  # an int beyond float range, or its square
            factor = math.inf
        if not (self.beta > 0 and math.isfinite(factor) and factor > 0):
            raise ValueError(
                f"beta must be > 0 with a finite, nonzero square, got {brief(self.beta)}; "
                "pass e.g. beta=2 (sacrebleu's default)"
            )
        for name in ("lowercase", "whitespace", "eps_smoothing"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {brief(getattr(self, name))}")
        if self.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"dtype must be torch.float32 or torch.float64, got {self.dtype}")

    @property
    def orders(self) -> int:
        """``C + W``: statistics hold ``3 * (C + W)`` numbers per sentence."""
        return self.char_order + self.word_order

    @property
    def name(self) -> str:
        """sacrebleu's name of the score: ``chrF2``, ``chrF2++`` (``word_order`` plus signs)."""
        return f"chrF{self.beta}" + "+" * self.word_order


class ChrfOptions(TypedDict, total=False):
    """:class:`ChrfConfig`'s fields, as the keywords of the functions and of ``CHRF``."""

    char_order: int
    word_order: int
    beta: float
    lowercase: bool
    whitespace: bool
    eps_smoothing: bool
    dtype: torch.dtype


_FIELDS = tuple(option.name for option in dataclasses.fields(ChrfConfig))


def resolve_config(config: ChrfConfig | None, options: dict[str, Any]) -> ChrfConfig:
    """The config of a call that takes ``config=`` or the options as keywords, not both.

    Args:
        config: a :class:`ChrfConfig`, or ``None`` to build one from ``options``.
        options: the keyword options the caller got (only those given).

    Raises:
        TypeError: ``config`` is not a ``ChrfConfig``, or an unknown option name.
        ValueError: both ``config`` and options, or a bad option value.
    """
    unknown = [name for name in options if name not in _FIELDS]
    if unknown:
        raise TypeError(f"unknown chrF option {unknown[0]!r}; the options are {', '.join(_FIELDS)}")
    if config is None:
        return ChrfConfig(**options)
    if not isinstance(config, ChrfConfig):
        raise TypeError(f"config must be a ChrfConfig or None, got {type(config).__name__}")
    if options:
        given = ", ".join(f"{name}={brief(value)}" for name, value in options.items())
        first = next(iter(options))
        raise ValueError(
            f"got config= and {given}; pass the options either in the ChrfConfig or as "
            f"keywords (e.g. config=dataclasses.replace(config, {first}=...))"
        )
    return config
