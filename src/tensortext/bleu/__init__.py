"""Token-ID BLEU on padded batches, matching sacrebleu and NLTK exactly.

The pipeline of every entry point (torchmetrics' validate -> format -> update -> compute):

* :mod:`~tensortext.bleu.config`: :class:`BleuConfig`, the eight scoring options, validated once.
* :mod:`~tensortext.bleu.stats`: check and format a batch, reduce each sentence to sacrebleu's
  sufficient statistics ``[hyp_len, ref_len, correct_1..N, total_1..N]``.
* :mod:`~tensortext.bleu.score`: sacrebleu's or NLTK's formula on rows of statistics; corpus
  BLEU is the same formula on the summed row.
* :mod:`~tensortext.bleu.functional`: :func:`bleu_stats`, :func:`sentence_bleu`,
  :func:`corpus_bleu`, :func:`bleu_from_stats`; :mod:`~tensortext.bleu.metric`: the
  :class:`BLEU` accumulator (batches and ``torch.distributed`` ranks).
* :mod:`~tensortext.bleu.result`: :class:`BLEUScore`, a score with its precisions, brevity
  penalty and lengths, as sacrebleu reports them (what the CLI prints).

``compat="sacrebleu"`` equals ``sacrebleu.metrics.BLEU(tokenize="none", ...)`` on space-joined
IDs; ``compat="nltk"`` equals ``nltk.translate.bleu_score`` with ``SmoothingFunction().method0..7``,
including NLTK's corpus-level quirks (methods 4-7 read the corpus length and the *last* sentence).
No Python loop over the batch and no host synchronisation unless ``validate=True`` (the
default), which checks lengths and IDs once before any work.
"""

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)
from tensortext.bleu.config import NLTK_METHODS, SACREBLEU_METHODS, BleuConfig, Compat
from tensortext.bleu.functional import bleu_from_stats, bleu_stats, corpus_bleu, sentence_bleu
from tensortext.bleu.metric import BLEU
from tensortext.bleu.result import BLEUScore, bleu_scores

__all__ = [
    "BLEU",
    "NLTK_METHODS",
    "SACREBLEU_METHODS",
    "BLEUScore",
    "BleuConfig",
    "Compat",
    "bleu_from_stats",
    "bleu_scores",
    "bleu_stats",
    "corpus_bleu",
    "sentence_bleu",
]
