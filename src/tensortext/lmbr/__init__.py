"""LMBR: n-gram posteriors of an evidence space added at every beam-search step.

Iglesias et al. (2018), Equation 2, with the linear BLEU weights of Tromble et al. (2008):

* :mod:`~tensortext.lmbr.posteriors`: :class:`Evidence` (an N-best list as tensors),
  :func:`ngram_posteriors` and :class:`NgramPosteriors` (a trie of sorted tensors).
* :mod:`~tensortext.lmbr.bias`: :func:`lmbr_theta`, :class:`LMBRBias` (a ``score_bias`` of
  :func:`~tensortext.decode.beam_search`) and :func:`lmbr_bias_factory` (one bias per batch of
  :func:`~tensortext.decode.translate`).
* :mod:`~tensortext.lmbr.hf`: :class:`LMBRLogitsProcessor` for ``transformers``' ``generate``.
* :mod:`~tensortext.lmbr.files`: evidence files, :func:`read_nbest` / :func:`write_nbest` (Moses
  n-best lists) and :func:`read_ngram_posterior_files` (SGNMT/ucam-smt posterior files).

MBR reranking is :mod:`tensortext.mbr`.
"""

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)
from tensortext.lmbr.bias import LMBRBias, lmbr_bias_factory, lmbr_theta
from tensortext.lmbr.files import read_nbest, read_ngram_posterior_files, write_nbest
from tensortext.lmbr.hf import LMBRLogitsProcessor
from tensortext.lmbr.posteriors import Evidence, NgramPosteriors, ngram_posteriors

__all__ = [
    "Evidence",
    "LMBRBias",
    "LMBRLogitsProcessor",
    "NgramPosteriors",
    "lmbr_bias_factory",
    "lmbr_theta",
    "ngram_posteriors",
    "read_nbest",
    "read_ngram_posterior_files",
    "write_nbest",
]
