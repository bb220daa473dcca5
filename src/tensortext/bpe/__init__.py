"""Exact batched BPE: tiktoken's token IDs from tensor operations over a whole batch.

tiktoken's names with tiktoken's types (:func:`get_encoding`, :func:`encoding_for_model`,
:class:`Encoding` with every method of ``tiktoken.Encoding``), the tensor variants under their own
names (``Encoding.encode_to_tensor``, ``Encoding.encode_batch_to_tensor`` -> ``Padded``), and the
pieces they are made of: :func:`piece_starts` (regex-exact pre-tokenization) and
:func:`merge_pieces` (parallel merges).

The tokenizer needs no torch: :class:`Encoding`'s list and numpy methods run on the host
encoders. ``piece_starts``, ``merge_pieces`` and the tensor methods import torch when first
used.
"""

import importlib
from typing import TYPE_CHECKING, Any

from tensortext.bpe.core import Encoding
from tensortext.bpe.decoding import UnknownTokenError
from tensortext.bpe.models import encoding_for_model, encoding_name_for_model
from tensortext.bpe.patterns import PATTERNS, pattern_kind
from tensortext.bpe.registry import get_encoding, list_encoding_names, load_encoding
from tensortext.bpe.serial import merge_serial

if TYPE_CHECKING:
    from tensortext.bpe.merge import merge_pieces as merge_pieces
    from tensortext.bpe.pretokenize import piece_starts as piece_starts

_TENSOR_NAMES = {
    "merge_pieces": "tensortext.bpe.merge",
    "piece_starts": "tensortext.bpe.pretokenize",
}


def __getattr__(name: str) -> Any:
    home = _TENSOR_NAMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tensortext.bpe' has no attribute {name!r}")
    from tensortext._torch import require_torch

    require_torch(f"tensortext.bpe.{name}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_TENSOR_NAMES))


__all__ = [
    "PATTERNS",
    "Encoding",
    "UnknownTokenError",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "load_encoding",
    "merge_serial",
    "pattern_kind",
]  # with merge_pieces and piece_starts, which need torch (so `import *` works without it)
