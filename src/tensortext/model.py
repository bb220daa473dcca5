"""``tiktoken.model`` under tensortext: which encoding each OpenAI model name uses.

The same names as tiktoken's module (``import tensortext as tiktoken`` then
``tiktoken.model.MODEL_TO_ENCODING``), over the tables of :mod:`tensortext.bpe.models`.

Example:
    >>> from tensortext import model
    >>> model.MODEL_TO_ENCODING["gpt-4o"], model.encoding_name_for_model("gpt-4-0613")
    ('o200k_base', 'cl100k_base')
"""

from tensortext.bpe.core import Encoding
from tensortext.bpe.models import (
    MODEL_PREFIX_TO_ENCODING,
    MODEL_TO_ENCODING,
    encoding_for_model,
    encoding_name_for_model,
)
from tensortext.bpe.registry import get_encoding

__all__ = [
    "MODEL_PREFIX_TO_ENCODING",
    "MODEL_TO_ENCODING",
    "Encoding",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
]
