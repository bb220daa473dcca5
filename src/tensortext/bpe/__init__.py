"""Exact batched BPE: tiktoken's token IDs from tensor operations over a whole batch.

``get_encoding("cl100k_base")`` / ``"o200k_base"``, :class:`Encoding` (tiktoken's API plus
``encode_batch`` returning padded ``ids [B, L]`` and ``lengths [B]``), and the pieces it is made of:
:func:`piece_starts` (regex-exact pre-tokenization) and :func:`merge_pieces` (parallel merges).
"""

from tensortext.bpe.core import Encoding
from tensortext.bpe.merge import merge_pieces, merge_serial
from tensortext.bpe.pretokenize import PATTERNS, pattern_kind, piece_starts
from tensortext.bpe.registry import get_encoding, list_encoding_names, load_encoding

__all__ = [
    "PATTERNS",
    "Encoding",
    "get_encoding",
    "list_encoding_names",
    "load_encoding",
    "merge_pieces",
    "merge_serial",
    "pattern_kind",
    "piece_starts",
]
