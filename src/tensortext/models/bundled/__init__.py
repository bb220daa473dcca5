"""The bundled translator: a tiny trained Transformer that writes out numbers, dates and times.

* :mod:`~tensortext.models.bundled.model`: :class:`BundledTranslator`, a
  :class:`~tensortext.decode.Decoder` with a KV-cached step, and :class:`TranslatorState`.
* :mod:`~tensortext.models.bundled.layers`: its Transformer layers.
* :mod:`~tensortext.models.bundled.vocab`: the word vocabularies (text <-> IDs, ``Padded``).
* :mod:`~tensortext.models.bundled.load`: :func:`load_bundled_translator` (sha256-checked).

The weights and vocabularies live in ``tensortext/data/model`` (and ``data/evidence_model``, the
weaker system of the LMBR demo).
"""

from tensortext.models.bundled.config import BOS, EOS, PAD, TranslatorConfig
from tensortext.models.bundled.load import load_bundled_translator
from tensortext.models.bundled.model import BundledTranslator, TranslatorState
from tensortext.models.bundled.vocab import WordVocab

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "BundledTranslator",
    "TranslatorConfig",
    "TranslatorState",
    "WordVocab",
    "load_bundled_translator",
]
