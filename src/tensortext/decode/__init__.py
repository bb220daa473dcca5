"""Batched beam search over sentences x beams for any PyTorch model.

* :func:`beam_search`: the decoder, given ``step_fn(tokens [B*K, t], state)``.
* :func:`translate`: a corpus in length-sorted batches, results in input order.
* :mod:`tensortext.decode.lmbr`: LMBR n-gram posteriors as a per-step bias, MBR reranking.
* :mod:`tensortext.decode.hf`: ``generate(model, input_ids, ...)`` for ``transformers`` models.
* :mod:`tensortext.decode.bundled`: the small trained translator shipped with the package.
"""

from tensortext.decode.beam import BeamOutput, beam_search, reorder_state
from tensortext.decode.lmbr import (
    LMBRBias,
    LMBRLogitsProcessor,
    NgramPosteriors,
    lmbr_theta,
    mbr_rerank,
    ngram_posteriors,
)
from tensortext.decode.translate import Seq2SeqModel, length_batches, translate

__all__ = [
    "BeamOutput",
    "LMBRBias",
    "LMBRLogitsProcessor",
    "NgramPosteriors",
    "Seq2SeqModel",
    "beam_search",
    "length_batches",
    "lmbr_theta",
    "mbr_rerank",
    "ngram_posteriors",
    "reorder_state",
    "translate",
]
