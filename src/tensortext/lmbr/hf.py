"""LMBR for ``transformers``' own ``generate``: :class:`LMBRLogitsProcessor`."""

from __future__ import annotations

from torch import Tensor

from tensortext.lmbr.bias import LMBRBias

__all__ = ["LMBRLogitsProcessor"]


class LMBRLogitsProcessor:
    """:class:`~tensortext.lmbr.LMBRBias` as a ``transformers`` logits processor for
    ``generate(num_beams=K)``.

    HF passes log-probabilities of ``input_ids [B*K, t]`` in beam search, row ``r`` belonging to
    sentence ``r // K``. For encoder-decoder models ``input_ids`` starts with the decoder start
    token (``prompt_len=1``); for decoder-only models set ``prompt_len`` to the prompt width.

    Args:
        bias: The bias of the ``B`` sentences being generated.
    """

    def __init__(self, bias: LMBRBias) -> None:
        self.bias = bias

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        """``scores [B*K, V]`` plus the bias of the prefixes ``input_ids [B*K, t]``."""
        return scores + self.bias(input_ids).to(scores.dtype)
