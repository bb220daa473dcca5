"""tensortext: a text pipeline that stays on the GPU as PyTorch tensors.

* :mod:`tensortext.bpe`: exact batched BPE, a drop-in for tiktoken (``get_encoding``,
  ``encoding_for_model``, ``Encoding``) with tensor variants (``encode_batch_to_tensor``).
* :mod:`tensortext.decode`: batched beam search over sentences x beams for any
  :class:`~tensortext.decode.Decoder`; :mod:`tensortext.lmbr` adds LMBR n-gram posteriors.
* :mod:`tensortext.bleu`: token-ID BLEU matching sacrebleu and NLTK exactly; :mod:`tensortext.mbr`
  reranks with it. The n-gram core both BLEU and LMBR use is :mod:`tensortext.ngrams`.
* :mod:`tensortext.padded`: the ragged-batch convention (``Padded``, ``PAD_ID``) every part follows.
"""

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
