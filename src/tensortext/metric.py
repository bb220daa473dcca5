"""``BLEU``: a torchmetrics-style accumulator over the functional BLEU API."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch import Tensor

from tensortext.bleu import (
    Compat,
    _last_row,
    _method6_check,
    _score,
    _stats_from_batch,
    format_batch,
    make_config,
)

__all__ = ["BLEU"]


class BLEU:
    """Corpus BLEU accumulated over batches (and over processes).

    ``update`` adds each batch's sufficient statistics; ``compute`` scores their sum, so any
    split of the data into batches, or into ranks of a ``torch.distributed`` process group, gives
    the same corpus score as one call to :func:`tensortext.corpus_bleu` on all of it. With a
    process group initialised, ``compute`` sums the statistics of every rank with ``all_reduce``
    (all ranks must call it); NLTK's methods 5-7 read the last sentence of the highest rank that
    saw data, as if the ranks' data were concatenated in rank order.

    Args:
        max_ngram_order, weights, smooth_method, smooth_value, effective_order, compat,
            auto_reweigh, dtype, validate: as in :func:`tensortext.sentence_bleu`.

    Example:
        >>> metric = BLEU()
        >>> batch_stats = metric.update(torch.tensor([[5, 6, 7, 8]]), torch.tensor([[5, 6, 7, 8]]))
        >>> float(metric.compute())
        1.0
    """

    def __init__(
        self,
        *,
        max_ngram_order: int = 4,
        weights: Sequence[float] | None = None,
        smooth_method: str = "exp",
        smooth_value: float | None = None,
        effective_order: bool = False,
        compat: Compat = "sacrebleu",
        auto_reweigh: bool = False,
        dtype: torch.dtype = torch.float32,
        validate: bool = True,
    ) -> None:
        self.config = make_config(
            max_ngram_order=max_ngram_order,
            weights=weights,
            smooth_method=smooth_method,
            smooth_value=smooth_value,
            effective_order=effective_order,
            compat=compat,
            auto_reweigh=auto_reweigh,
            dtype=dtype,
        )
        self.validate = validate
        self.stats: Tensor | None = None  # [2 + 2N'] summed statistics
        self.last_stats: Tensor | None = None  # [2 + 2N'] statistics of the last sentence

    def reset(self) -> None:
        """Forgets everything accumulated."""
        self.stats = None
        self.last_stats = None

    def update(
        self,
        hyp_ids: Tensor,
        ref_ids: Tensor,
        *,
        hyp_lens: Tensor | None = None,
        ref_lens: Tensor | None = None,
        pad_id: int | None = None,
    ) -> Tensor:
        """Adds a batch; arguments as in :func:`tensortext.bleu_stats`.

        Returns:
            ``[B, 2 + 2N']`` statistics of this batch.
        """
        batch = format_batch(
            hyp_ids,
            ref_ids,
            hyp_lens=hyp_lens,
            ref_lens=ref_lens,
            pad_id=pad_id,
            validate=self.validate,
        )
        stats = _stats_from_batch(batch, self.config.stats_order, self.config.compat)
        if stats.shape[0] == 0:
            return stats
        total = stats.sum(0)
        self.stats = total if self.stats is None else self.stats + total.to(self.stats.device)
        self.last_stats = _last_row(stats)
        return stats

    def compute(self) -> Tensor:
        """Corpus BLEU of everything added so far (0 before any update), a 0-d tensor."""
        width = 2 + 2 * self.config.stats_order
        device = self._device()
        stats = torch.zeros(width, dtype=torch.long, device=device)
        last = torch.zeros(width, dtype=torch.long, device=device)
        if self.stats is not None and self.last_stats is not None:
            stats, last = self.stats.to(device).clone(), self.last_stats.to(device)
        if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            stats, last = _all_reduce(stats, last, seen=self.stats is not None)
        score = _score(stats, last, self.config)
        if self.validate and self.config.method == "method6":
            _method6_check(score, "corpus")
        return score

    def _device(self) -> torch.device:
        if self.stats is not None:
            return self.stats.device
        # A rank without data still joins the collectives, on the device its backend needs.
        if dist.is_available() and dist.is_initialized() and dist.get_backend() == "nccl":
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")


def _all_reduce(stats: Tensor, last: Tensor, *, seen: bool) -> tuple[Tensor, Tensor]:
    """Sums statistics over ranks; the last sentence comes from the highest rank with data."""
    dist.all_reduce(stats)
    world = dist.get_world_size()
    rank = dist.get_rank()
    # Each rank offers its last row tagged with (rank + 1) if it saw data, else 0.
    tagged = torch.cat([last, torch.tensor([rank + 1 if seen else 0], device=last.device)])
    gathered = [torch.empty_like(tagged) for _ in range(world)]
    dist.all_gather(gathered, tagged)
    table = torch.stack(gathered)  # [world, 2 + 2N' + 1]
    chosen = table[table[:, -1].argmax(), :-1]
    return stats, chosen
