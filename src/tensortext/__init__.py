"""tensortext: a text pipeline that stays on the GPU as PyTorch tensors.

Exact batched BPE (``get_encoding``, ``Encoding``: tiktoken's IDs, see :mod:`tensortext.bpe`).
Token-ID BLEU (``sentence_bleu``, ``corpus_bleu``, ``bleu_stats``, ``BLEU``) matching sacrebleu
and NLTK exactly; the shared n-gram core lives in :mod:`tensortext.ngrams`.
"""

from tensortext.bleu import bleu_from_stats, bleu_stats, corpus_bleu, sentence_bleu
from tensortext.bpe import Encoding, get_encoding, list_encoding_names
from tensortext.metric import BLEU

__version__ = "0.1.0"

__all__ = [
    "BLEU",
    "Encoding",
    "__version__",
    "bleu_from_stats",
    "bleu_stats",
    "corpus_bleu",
    "get_encoding",
    "list_encoding_names",
    "sentence_bleu",
]
