"""chrF and chrF++ on batches of text or codepoint tensors, matching sacrebleu's ``CHRF`` exactly.

The pipeline of every entry point (torchmetrics' validate -> format -> update -> compute):

* :mod:`~tensortext.chrf.config`: :class:`ChrfConfig`, sacrebleu's six options and the dtype,
  validated once.
* :mod:`~tensortext.chrf.batch`: check the input and lay it out as groups of sequences of
  codepoints (text is encoded once for the batch); :mod:`~tensortext.chrf.text` holds the
  character classes (Python's whitespace, ASCII punctuation).
* :mod:`~tensortext.chrf.stats`: reduce each sentence to sacrebleu's segment statistics,
  ``[hyp_count, ref_count, match]`` per character order ``1..C`` and word order ``1..W`` of the
  best reference; :mod:`~tensortext.chrf.runs` finds every order's matches in one sort of
  packed keys, :mod:`~tensortext.chrf.words` gives chrF++'s words exact IDs.
* :mod:`~tensortext.chrf.score`: sacrebleu's ``_compute_f_score`` on rows of statistics; corpus
  chrF is the same formula on the summed row.
* :mod:`~tensortext.chrf.functional`: :func:`chrf_stats`, :func:`sentence_chrf`,
  :func:`corpus_chrf`, :func:`chrf_from_stats`; :mod:`~tensortext.chrf.pairwise`:
  :func:`pairwise_chrf` (every pair of ``N`` candidates, for MBR); :mod:`~tensortext.chrf.metric`:
  the :class:`CHRF` accumulator; :mod:`~tensortext.chrf.result`: :class:`CHRFScore`, what the CLI
  prints.

Scores are sacrebleu's divided by 100 (0..1). Text is scored on ``device`` (``None`` the CPU,
``"auto"`` CUDA when available); codepoint tensors where they are, with ``validate=True`` (the
default) checking lengths and codepoints first. No Python loop over the sentences; a few host
reads per call (sizes of ragged buffers, the alphabet) synchronise on CUDA.
"""

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)
from tensortext.chrf.config import ChrfConfig, ChrfOptions
from tensortext.chrf.functional import chrf_from_stats, chrf_stats, corpus_chrf, sentence_chrf
from tensortext.chrf.metric import CHRF
from tensortext.chrf.pairwise import pairwise_chrf
from tensortext.chrf.result import CHRFScore, chrf_score, chrf_scores

__all__ = [
    "CHRF",
    "CHRFScore",
    "ChrfConfig",
    "ChrfOptions",
    "chrf_from_stats",
    "chrf_score",
    "chrf_scores",
    "chrf_stats",
    "corpus_chrf",
    "pairwise_chrf",
    "sentence_chrf",
]
