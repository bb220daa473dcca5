"""The one model contract of tensortext's decoding: :class:`Decoder`.

A decoder scores next tokens for ``N`` sentences x ``K`` beams at once. Its state is explicit:
``prepare`` returns it, ``step`` and ``reorder`` take it and return the state to continue from
(they may update buffers in place and return an object sharing them, as a KV cache does).
Nothing is hidden on the decoder object, so one decoder can serve several searches.

Implemented by the bundled model (:class:`tensortext.models.bundled.BundledTranslator`) and by
:class:`tensortext.decode.hf.HFDecoder` for ``transformers`` models; :func:`translate` and
:func:`~tensortext.decode.hf.generate` take any of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from torch import Tensor

__all__ = ["Decoder", "reorder_state"]


@runtime_checkable
class Decoder(Protocol):
    """What :func:`~tensortext.decode.translate` needs from a model.

    Attributes:
        eos_id: end-of-sequence ID, or several (any of them ends a hypothesis).
        vocab_size: ``V``, the width of the log-probabilities ``step`` returns, or ``None`` if
            unknown before the first step.
    """

    @property
    def eos_id(self) -> int | Sequence[int]: ...

    @property
    def vocab_size(self) -> int | None: ...

    def prepare(self, src_ids: Tensor, lengths: Tensor, num_beams: int) -> tuple[Tensor, Any]:
        """Encodes ``N`` sources once; returns ``(start_ids [N, P], state)``.

        Args:
            src_ids: ``[N, S]`` int64 source (or prompt) tokens, right-padded.
            lengths: ``[N]`` int64 real tokens per row.
            num_beams: ``K``; the state holds ``N * K`` decoder rows, row ``r`` belonging to
                sentence ``r // K``.

        Returns:
            The first decoder tokens of each sentence (the decoder start token, or the prompt)
            and the state for :meth:`step`.
        """
        ...

    def step(self, tokens: Tensor, state: Any) -> tuple[Tensor, Any]:
        """``tokens [N*K, t]`` (every prefix so far) -> ``(log_probs [N*K, V], state)``."""
        ...

    def reorder(self, state: Any, beam_idx: Tensor) -> Any:
        """The state whose row ``r`` is row ``beam_idx[r]`` of ``state`` (``[N*K]`` int64)."""
        ...


def reorder_state(state: Any, beam_idx: Tensor) -> Any:
    """Default reorder: ``state.reorder(beam_idx)`` or ``index_select`` on dim 0 of every tensor.

    Args:
        state: ``None``, an object with a ``reorder(beam_idx)`` method, a tensor with leading
            dimension ``B*K``, or a (nested) tuple, list or dict of those.
        beam_idx: ``[B*K]`` int64; row ``r`` of the new state is row ``beam_idx[r]`` of the old.

    Returns:
        The reordered state (a new object; tensors are not modified in place).
    """
    if state is None:
        return None
    if isinstance(state, Tensor):
        return state.index_select(0, beam_idx)
    reorder = getattr(state, "reorder", None)
    if callable(reorder):
        return reorder(beam_idx)
    if isinstance(state, tuple) and hasattr(state, "_fields"):  # NamedTuple
        return type(state)(*(reorder_state(item, beam_idx) for item in state))
    if isinstance(state, (tuple, list)):
        return type(state)(reorder_state(item, beam_idx) for item in state)
    if isinstance(state, Mapping):
        return {key: reorder_state(value, beam_idx) for key, value in state.items()}
    raise TypeError(
        f"beam_search cannot reorder a state of type {type(state).__name__}; pass reorder=fn "
        "(fn(state, beam_idx) -> state), give the state a reorder(beam_idx) method, or use "
        "tensors / tuples / dicts of tensors with the B*K rows on dim 0"
    )
