"""ROUGE-N and ROUGE-L on batched tensors, matching Google's ``rouge-score`` exactly.

The pipeline of every entry point (torchmetrics' validate -> format -> update -> compute):

* :mod:`~tensortext.rouge.config`: :class:`RougeConfig` (ROUGE types, stemming, dtype),
  validated once.
* :mod:`~tensortext.rouge.text`: rouge-score's default tokenizer (and nltk's Porter stemmer,
  cached per word); text becomes token IDs through one vocabulary per call.
* :mod:`~tensortext.rouge.stats`: per-reference ROUGE-N overlaps (the shared n-gram core) and
  LCS lengths (:mod:`~tensortext.rouge.lcs`, bit-parallel, memory linear in the lengths); each
  sentence becomes ``[1, p, r, f per type]`` against its best reference. Rows add up; corpus
  ROUGE is their mean.
* :mod:`~tensortext.rouge.functional`: :func:`rouge_stats`, :func:`sentence_rouge`,
  :func:`corpus_rouge`, :func:`rouge_from_stats`, :func:`pairwise_rouge` (MBR),
  :func:`rouge_dict` (torchmetrics' keys); :mod:`~tensortext.rouge.metric`: the :class:`ROUGE`
  accumulator (batches and ``torch.distributed`` ranks).
* :mod:`~tensortext.rouge.scorer`: :class:`RougeScorer`, a drop-in for rouge-score's, with
  ``score_batch`` for many pairs at once.

Token IDs score as rouge-score scores their space-joined decimal strings. Types ``rouge1`` ..
``rouge9`` and ``rougeL``; ``rougeLsum`` is not supported. No Python loop over the batch and no
host synchronisation unless ``validate=True`` (the default), which checks lengths and IDs once.
"""

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)
from tensortext.rouge.config import DEFAULT_ROUGE_TYPES, ROUGE_TYPES, RougeConfig
from tensortext.rouge.functional import (
    MEASURES,
    corpus_rouge,
    pairwise_rouge,
    rouge_dict,
    rouge_from_stats,
    rouge_stats,
    sentence_rouge,
)
from tensortext.rouge.lcs import lcs_lengths
from tensortext.rouge.metric import ROUGE
from tensortext.rouge.scorer import RougeScorer, Score
from tensortext.rouge.text import tokenize

__all__ = [
    "DEFAULT_ROUGE_TYPES",
    "MEASURES",
    "ROUGE",
    "ROUGE_TYPES",
    "RougeConfig",
    "RougeScorer",
    "Score",
    "corpus_rouge",
    "lcs_lengths",
    "pairwise_rouge",
    "rouge_dict",
    "rouge_from_stats",
    "rouge_stats",
    "sentence_rouge",
    "tokenize",
]
