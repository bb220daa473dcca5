"""``CHRF``: a torchmetrics-style accumulator over the same stats -> score pair as the functions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from tensortext.accumulate import SummedStats
from tensortext.chrf.batch import Device, format_pairs
from tensortext.chrf.config import ChrfConfig, resolve_config
from tensortext.chrf.functional import Hypotheses, References
from tensortext.chrf.result import CHRFScore, chrf_score
from tensortext.chrf.score import scores_from_stats
from tensortext.chrf.stats import compute_stats

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from tensortext.chrf.config import ChrfOptions

__all__ = ["CHRF"]


class CHRF:
    """Corpus chrF (or chrF++) accumulated over batches and over processes.

    ``update`` adds each batch's statistics; ``compute`` scores their sum, so any split of the
    data into batches, or into the ranks of a ``torch.distributed`` process group, gives the
    corpus score of one :func:`~tensortext.chrf.corpus_chrf` call on all of it (``compute`` is
    then a collective: every rank must call it).

    Args:
        config: all options at once (:class:`~tensortext.chrf.ChrfConfig`), or pass them as
            keywords (sacrebleu's ``char_order``, ``word_order``, ``beta``, ``lowercase``,
            ``whitespace``, ``eps_smoothing``, and ``dtype``), not both.
        device: where text batches are scored (``None`` the CPU, ``"auto"`` CUDA when
            available); tensors are scored where they are.
        validate: check each tensor batch's lengths and codepoints (a host sync per update).
        **options: the :class:`ChrfConfig` fields.

    Raises:
        TypeError, ValueError: a wrong option (see :class:`~tensortext.chrf.ChrfConfig`).

    Example:
        >>> metric = CHRF(word_order=2)
        >>> batch_stats = metric.update(["the cat sat"], ["the cat sat"])
        >>> float(metric.compute()), str(metric.score())
        (1.0, 'chrF2++ = 100.00')
    """

    def __init__(
        self,
        *,
        config: ChrfConfig | None = None,
        device: Device = None,
        validate: bool = True,
        **options: Unpack[ChrfOptions],
    ) -> None:
        self.config = resolve_config(config, dict(options))
        self.device = device
        self.validate = validate
        self.summed = SummedStats(3 * self.config.orders, torch.int64)

    @property
    def stats(self) -> Tensor | None:
        """``[3 * (C + W)]`` statistics summed over this process's updates (``None`` before)."""
        return self.summed.sum

    def reset(self) -> None:
        """Forgets everything accumulated."""
        self.summed.reset()

    def update(
        self,
        hyps: Hypotheses,
        refs: References,
        *,
        hyp_lens: Tensor | None = None,
        ref_lens: Tensor | None = None,
        pad_id: int | Sequence[int] | None = None,
    ) -> Tensor:
        """Adds a batch; arguments as in :func:`~tensortext.chrf.chrf_stats`.

        Returns:
            ``[B, 3 * (C + W)]`` statistics of this batch.
        """
        grouped = format_pairs(
            hyps,
            refs,
            hyp_lens=hyp_lens,
            ref_lens=ref_lens,
            pad_id=pad_id,
            lowercase=self.config.lowercase,
            device=self.device,
            validate=self.validate,
        )
        stats = compute_stats(grouped, self.config)
        self.summed.add(stats)
        return stats

    def compute(self) -> Tensor:
        """Corpus chrF in 0..1 of everything added so far, 0-d (before any update, the score of
        zero statistics: 0, or sacrebleu's ``1e-16`` with ``eps_smoothing``)."""
        return scores_from_stats(self.summed.total(), self.config)

    def score(self) -> CHRFScore:
        """:meth:`compute` as sacrebleu's score object (0-100, its name, its ``format``)."""
        return chrf_score(self.summed.total(), self.config)
