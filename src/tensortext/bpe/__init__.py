"""Exact batched BPE: tiktoken's token IDs from tensor operations over a whole batch.

tiktoken's names with tiktoken's types (:func:`get_encoding`, :func:`encoding_for_model`,
:class:`Encoding` with every method of ``tiktoken.Encoding``), the tensor variants under their own
names (``Encoding.encode_to_tensor``, ``Encoding.encode_batch_to_tensor`` -> ``Padded``), and the
pieces they are made of: :func:`piece_starts` (regex-exact pre-tokenization) and
:func:`merge_pieces` (parallel merges).
"""

from tensortext.bpe.core import Encoding
from tensortext.bpe.decoding import UnknownTokenError
from tensortext.bpe.merge import merge_pieces, merge_serial
from tensortext.bpe.models import encoding_for_model, encoding_name_for_model
from tensortext.bpe.pretokenize import PATTERNS, pattern_kind, piece_starts
from tensortext.bpe.registry import get_encoding, list_encoding_names, load_encoding

__all__ = [
    "PATTERNS",
    "Encoding",
    "UnknownTokenError",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "load_encoding",
    "merge_pieces",
    "merge_serial",
    "pattern_kind",
    "piece_starts",
]
