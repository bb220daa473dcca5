"""Batched beam search over sentences x beams for any PyTorch model.

* :class:`Decoder`: the one model contract (``prepare``, ``step``, ``reorder``, EOS IDs).
* :func:`beam_search`: the search itself, given ``step_fn(tokens [B*K, t], state)``.
* :func:`translate`: a corpus in length-sorted batches with any :class:`Decoder`, results in
  input order.
* :mod:`tensortext.decode.hf`: ``HFDecoder`` and a drop-in ``generate`` for ``transformers``.

LMBR scores for the search live in :mod:`tensortext.lmbr`; the bundled model in
:mod:`tensortext.models.bundled`.
"""

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)
from tensortext.decode.beam import beam_search
from tensortext.decode.decoder import Decoder, reorder_state
from tensortext.decode.output import BeamOutput
from tensortext.decode.settings import EarlyStopping
from tensortext.decode.translate import BiasFactory, length_batches, translate

__all__ = [
    "BeamOutput",
    "BiasFactory",
    "Decoder",
    "EarlyStopping",
    "beam_search",
    "length_batches",
    "reorder_state",
    "translate",
]
