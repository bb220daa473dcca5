"""PyTorch as an optional dependency: the tokenizer runs without it (``pip install tensortext``);
everything tensor-shaped needs it (``pip install "tensortext[torch]"``)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from functools import cache
from types import ModuleType

__all__ = ["INSTALL_HINT", "require_torch", "torch_installed"]

INSTALL_HINT = 'pip install "tensortext[torch]"'


def torch_installed() -> bool:
    """Whether ``import torch`` would succeed, without importing it (a second or more)."""
    if "torch" in sys.modules:
        return sys.modules["torch"] is not None
    return _torch_found()


@cache
def _torch_found() -> bool:
    """Whether torch is on the path (looked up once: it scans ``sys.path``)."""
    return importlib.util.find_spec("torch") is not None


def require_torch(what: str) -> ModuleType:
    """``torch``, imported, or an ``ImportError`` saying that ``what`` needs it and how to get it.

    Example:
        >>> require_torch("encode_to_tensor").__name__
        'torch'
    """
    try:
        return importlib.import_module("torch")
    except ImportError as error:
        raise ImportError(
            f"{what}: PyTorch is not installed; {INSTALL_HINT} (the tokenizer's list and numpy "
            "methods work without it)"
        ) from error
