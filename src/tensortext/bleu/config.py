"""``BleuConfig``: BLEU's eight scoring options, declared and validated in one place.

A config is checked once, when it is built (wrong types raise ``TypeError``, wrong values
``ValueError``, each naming the option and the fix), and it resolves what the options mean:
sacrebleu's smoothing names are NLTK's methods 0-3 under ``compat="nltk"``, and
``smooth_value=None`` becomes the reference library's default. Everything downstream reads the
resolved fields :attr:`BleuConfig.method` and :attr:`BleuConfig.smoothing` and never re-checks.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from tensortext._checks import (
    MAX_NGRAM_ORDER,
    brief,
    check_choice,
    check_float,
    check_ngram_order,
)
from tensortext._checks import resolve_config as checked_config

__all__ = ["NLTK_METHODS", "SACREBLEU_METHODS", "BleuConfig", "Compat", "resolve_config"]

Compat = Literal["sacrebleu", "nltk"]

SACREBLEU_METHODS = ("none", "floor", "add-k", "exp")
NLTK_METHODS = tuple(f"method{i}" for i in range(8))
# Chen & Cherry (2014) numbering: sacrebleu's names are NLTK's methods 0-3.
SACREBLEU_TO_NLTK = {"none": "method0", "floor": "method1", "add-k": "method2", "exp": "method3"}
# The SmoothingFunction parameter each NLTK method reads, and its default.
NLTK_SMOOTH_DEFAULTS = {"method1": 0.1, "method4": 5.0, "method6": 5.0, "method7": 5.0}
# sacrebleu's floor and k.
SACREBLEU_SMOOTH_DEFAULTS = {"floor": 0.1, "add-k": 1.0}


@dataclass(frozen=True)
class BleuConfig:
    """BLEU's scoring options, validated once (the names and defaults of sacrebleu and NLTK).

    Args:
        max_ngram_order: highest n-gram order ``N``, ``1 <= N <=``
            :data:`~tensortext._checks.MAX_NGRAM_ORDER` (1000).
        weights: NLTK's per-order weights (``compat="nltk"`` only), ``N`` finite numbers (so
            at most 1000) in any sequence NLTK takes (a list, a tuple, a numpy array); ``None``
            is uniform ``1/N``. Stored as a tuple of floats.
        smooth_method: sacrebleu's ``"none"``, ``"floor"``, ``"add-k"``, ``"exp"``; with
            ``compat="nltk"`` also ``"method0"`` .. ``"method7"`` (the sacrebleu names are
            NLTK's methods 0-3).
        smooth_value: sacrebleu's floor / k; NLTK's ``epsilon`` (method1), ``k`` (methods 4
            and 7) or ``alpha`` (method6). ``None`` takes the library's default.
        effective_order: sacrebleu's option: drop orders without any n-gram.
        compat: ``"sacrebleu"`` or ``"nltk"``: whose definition to match exactly.
        auto_reweigh: NLTK's option: uniform weights over ``len(hyp)`` orders when the
            hypothesis is shorter than 4 and the weights are NLTK's default.
        dtype: ``torch.float32`` or ``torch.float64``: the dtype of scores and arithmetic.

    Attributes:
        method: the resolved smoothing method (a sacrebleu name, or ``"methodK"`` for NLTK).
        smoothing: the resolved smoothing parameter (0.0 for methods that take none).

    Raises:
        TypeError: an option of the wrong type (``dtype`` not float32/float64 included).
        ValueError: an unknown value or a combination the chosen ``compat`` does not have.

    Example:
        >>> BleuConfig(compat="nltk", smooth_method="floor").method
        'method1'
        >>> BleuConfig(smooth_method="add-k").smoothing
        1.0
    """

    max_ngram_order: int = 4
    weights: Sequence[float] | None = None
    smooth_method: str = "exp"
    smooth_value: float | None = None
    effective_order: bool = False
    compat: Compat = "sacrebleu"
    auto_reweigh: bool = False
    dtype: torch.dtype = torch.float32
    method: str = field(init=False, repr=False, compare=False)
    smoothing: float = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._check_types()
        if self.weights is not None:  # a tuple keeps the frozen config hashable
            object.__setattr__(self, "weights", _weights_tuple(self.weights))
        check_choice("compat", self.compat, ("sacrebleu", "nltk"))
        method = self._sacrebleu_method() if self.compat == "sacrebleu" else self._nltk_method()
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "smoothing", self._smoothing(method))

    @property
    def needs_order5(self) -> bool:
        """NLTK's methods 5 and 7 read the 5-gram precision of the (last) sentence."""
        return self.method in ("method5", "method7")

    @property
    def stats_order(self) -> int:
        """The order statistics must have: ``max_ngram_order``, at least 5 when needed."""
        return max(self.max_ngram_order, 5) if self.needs_order5 else self.max_ngram_order

    def _check_types(self) -> None:
        check_ngram_order("max_ngram_order", self.max_ngram_order)
        if not isinstance(self.smooth_method, str):
            raise TypeError(
                "smooth_method must be a str such as 'exp', got "
                f"{type(self.smooth_method).__name__}"
            )
        if self.smooth_value is not None:
            check_float("smooth_value", self.smooth_value)
        for name in ("effective_order", "auto_reweigh"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be True or False, got {brief(getattr(self, name))}")
        # Half precision cannot even hold corpus counts above 65504 exactly; refuse it.
        if self.dtype not in (torch.float32, torch.float64):
            raise TypeError(f"dtype must be torch.float32 or torch.float64, got {self.dtype}")

    def _sacrebleu_method(self) -> str:
        """Checks the options under sacrebleu's definition; returns the method name."""
        if self.smooth_method not in SACREBLEU_METHODS:
            hint = ""
            if self.smooth_method in NLTK_METHODS:
                hint = f" ({brief(self.smooth_method)} is an NLTK method: pass compat='nltk')"
            raise ValueError(
                f"smooth_method must be one of {SACREBLEU_METHODS} with compat='sacrebleu', "
                f"got {brief(self.smooth_method)}{hint}"
            )
        if self.weights is not None:
            raise ValueError(
                "weights are not part of sacrebleu's BLEU; pass weights=None, or compat='nltk' "
                "for weighted n-gram orders"
            )
        if self.auto_reweigh:
            raise ValueError("auto_reweigh is an NLTK option; pass compat='nltk' to use it")
        return self.smooth_method

    def _nltk_method(self) -> str:
        """Checks the options under NLTK's definition; returns ``"methodK"``."""
        method = SACREBLEU_TO_NLTK.get(self.smooth_method, self.smooth_method)
        if method not in NLTK_METHODS:
            raise ValueError(
                f"smooth_method must be one of {NLTK_METHODS} (or the sacrebleu aliases "
                f"{SACREBLEU_METHODS}) with compat='nltk', got {brief(self.smooth_method)}"
            )
        if self.effective_order:
            raise ValueError("effective_order is a sacrebleu option; pass compat='sacrebleu'")
        if method == "method6" and self.max_ngram_order < 3:
            raise ValueError("NLTK's method6 needs trigram precision; pass max_ngram_order >= 3")
        if self.weights is not None and len(self.weights) > MAX_NGRAM_ORDER:
            raise ValueError(
                f"weights has {len(self.weights)} entries, one per n-gram order; at most "
                f"{MAX_NGRAM_ORDER} orders are supported (tensortext._checks.MAX_NGRAM_ORDER)"
            )
        if self.weights is not None and len(self.weights) != self.max_ngram_order:
            raise ValueError(
                f"weights has {len(self.weights)} entries but max_ngram_order="
                f"{self.max_ngram_order}; pass max_ngram_order={len(self.weights)}"
            )
        return method

    def _smoothing(self, method: str) -> float:
        """The smoothing parameter of ``method``: ``smooth_value`` or the library default."""
        defaults = SACREBLEU_SMOOTH_DEFAULTS if self.compat == "sacrebleu" else NLTK_SMOOTH_DEFAULTS
        if method in defaults:
            if self.smooth_value is None:
                return defaults[method]
            if method in ("method4", "method7") and not self.smooth_value > 0:
                # NLTK divides by k (ZeroDivisionError at 0); a negative k is a negative count.
                raise ValueError(
                    f"NLTK's {method} divides by its k: smooth_value must be > 0, got "
                    f"{self.smooth_value!r}; pass e.g. smooth_value=5 (NLTK's default)"
                )
            return float(self.smooth_value)
        if self.smooth_value is None:
            return 0.0
        if self.compat == "sacrebleu":
            raise ValueError(
                f"smooth_method={brief(self.smooth_method)} takes no smooth_value; pass "
                "smooth_value=None"
            )
        # NLTK's method2 always adds 1; sacrebleu's add-k takes any k.
        hint = " (it always adds 1; compat='sacrebleu' takes any k)" if method == "method2" else ""
        raise ValueError(f"NLTK's {method} takes no smooth_value{hint}; pass smooth_value=None")


def _weights_tuple(weights: object) -> tuple[float, ...]:
    """NLTK's ``weights`` as a tuple of floats: any ordered collection of real numbers, as NLTK
    takes them (a list, a tuple, a 1-D numpy array or tensor, numpy scalars in a list).

    Raises:
        TypeError: for a str, a set, a mapping, a non-iterable, or an entry that is no real
            number (a bool included).
        ValueError: for an array of more than one dimension, or an entry that is not finite.

    Example:
        >>> import numpy as np
        >>> _weights_tuple(np.array([0.5, 0.5]))
        (0.5, 0.5)
    """
    if isinstance(weights, str | bytes | Mapping | AbstractSet) or not isinstance(
        weights, Iterable
    ):
        raise TypeError(
            "weights must be a sequence of numbers (a list, a tuple, a 1-D array) or None, got "
            f"{type(weights).__name__}"
        )
    shape = getattr(weights, "shape", None)  # numpy arrays and tensors
    if shape is not None and len(shape) != 1:
        raise ValueError(
            f"weights must be one-dimensional, one weight per n-gram order; got shape "
            f"{tuple(shape)}"
        )
    entries = weights.tolist() if shape is not None and hasattr(weights, "tolist") else weights
    return tuple(check_float("weights", _python_number(entry)) for entry in entries)


def _python_number(value: object) -> object:
    """A numpy scalar (``np.float32``, ``np.int64``) as a Python float; anything else as is."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool | int | float):
        return float(value)
    return value


def resolve_config(config: BleuConfig | None, **options: Any) -> BleuConfig:
    """The config of a call that takes ``config=`` or the options as keywords, not both
    (:func:`tensortext._checks.resolve_config` for :class:`BleuConfig`)."""
    return checked_config(BleuConfig, config, options)
