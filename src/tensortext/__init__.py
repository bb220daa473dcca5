"""tensortext: a text pipeline that stays on the GPU as PyTorch tensors.

* :mod:`tensortext.bpe`: exact batched BPE, a drop-in for tiktoken (``get_encoding``,
  ``encoding_for_model``, ``Encoding``) with tensor variants (``encode_batch_to_tensor``).
* :mod:`tensortext.decode`: batched beam search over sentences x beams for any
  :class:`~tensortext.decode.Decoder`; :mod:`tensortext.lmbr` adds LMBR n-gram posteriors.
* :mod:`tensortext.bleu`: token-ID BLEU matching sacrebleu and NLTK exactly;
  :mod:`tensortext.chrf`: sacrebleu's chrF and chrF++; :mod:`tensortext.rouge`: rouge-score's
  ROUGE-N and ROUGE-L; :mod:`tensortext.mbr` reranks with any of them. The n-gram core BLEU,
  ROUGE and LMBR use is :mod:`tensortext.ngrams`; every metric class sums its statistics with
  :mod:`tensortext.accumulate`.
* :mod:`tensortext.padded`: the ragged-batch convention (``Padded``, ``PAD_ID``) every part follows.

``pip install tensortext`` is the tokenizer alone (no torch); ``pip install "tensortext[torch]"``
adds everything tensor-shaped. ``import tensortext`` loads neither torch nor numpy: each name is
imported when first used, and a name that needs torch says which extra to install.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tensortext.bleu import (
        BLEU,
        BleuConfig,
        bleu_from_stats,
        bleu_stats,
        corpus_bleu,
        sentence_bleu,
    )
    from tensortext.bpe import (
        Encoding,
        encoding_for_model,
        encoding_name_for_model,
        get_encoding,
        list_encoding_names,
    )
    from tensortext.padded import MISSING_REF, PAD_ID, Flat, Padded, pad_ragged, pad_ragged_refs

# Each public name's module, imported on first use (PEP 562): the command line catches a
# Ctrl-C only once its own code runs, and torch's import takes most of a second.
_HOMES = {
    **dict.fromkeys(
        ["BLEU", "BleuConfig", "bleu_from_stats", "bleu_stats", "corpus_bleu", "sentence_bleu"],
        "tensortext.bleu",
    ),
    **dict.fromkeys(
        [
            "Encoding",
            "encoding_for_model",
            "encoding_name_for_model",
            "get_encoding",
            "list_encoding_names",
        ],
        "tensortext.bpe",
    ),
    **dict.fromkeys(
        ["MISSING_REF", "PAD_ID", "Flat", "Padded", "pad_ragged", "pad_ragged_refs"],
        "tensortext.padded",
    ),
}


_SUBPACKAGES = (
    "accumulate",
    "bleu",
    "bpe",
    "chrf",
    "core",
    "decode",
    "formats",
    "lmbr",
    "load",
    "mbr",
    "model",
    "ngrams",
    "padded",
    "registry",
    "rouge",
)
"""Reachable as attributes after a bare ``import tensortext``, as when they were imported
eagerly; ``core``, ``load``, ``model`` and ``registry`` are tiktoken's modules of those names
(``import tensortext as tiktoken``)."""


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return _import(f"tensortext.{name}", name)  # sets the attribute itself
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'tensortext' has no attribute {name!r}")
    value = getattr(_import(home, name), name)
    globals()[name] = value  # later uses find it without this hook
    return value


def _import(module: str, name: str) -> Any:
    """``module``, imported; without torch, an ``ImportError`` that names the extra to install
    (the tokenizer needs no torch; the metrics, beam search and tensors do)."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise
        from tensortext._torch import INSTALL_HINT

        raise ImportError(f"tensortext.{name}: PyTorch is not installed; {INSTALL_HINT}") from error


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_HOMES) | set(_SUBPACKAGES))


__version__ = "0.3.0"

__all__ = [
    "BLEU",
    "MISSING_REF",
    "PAD_ID",
    "BleuConfig",
    "Encoding",
    "Flat",
    "Padded",
    "__version__",
    "bleu_from_stats",
    "bleu_stats",
    "corpus_bleu",
    "encoding_for_model",
    "encoding_name_for_model",
    "get_encoding",
    "list_encoding_names",
    "pad_ragged",
    "pad_ragged_refs",
    "sentence_bleu",
]
