"""``BLEU``: a torchmetrics-style accumulator over the same stats -> score pair as the functions."""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch import Tensor

from tensortext.accumulate import SummedStats, distributed
from tensortext.bleu.config import BleuConfig, Compat, resolve_config
from tensortext.bleu.score import check_method6, score_stats
from tensortext.bleu.stats import compute_stats, format_batch, last_row
from tensortext.padded import Padded

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
        max_ngram_order: highest n-gram order ``N``.
        weights: NLTK's per-order weights (``compat="nltk"`` only); default uniform ``1/N``.
        smooth_method: sacrebleu's ``"none"``, ``"floor"``, ``"add-k"``, ``"exp"``; with
            ``compat="nltk"`` also ``"method0"`` .. ``"method7"``.
        smooth_value: the method's parameter (floor, k, epsilon, alpha); ``None``: the
            library's default.
        effective_order: sacrebleu's option: drop orders without any n-gram.
        compat: ``"sacrebleu"`` or ``"nltk"``: whose definition to match exactly.
        auto_reweigh: NLTK's option for hypotheses shorter than 4.
        dtype: ``torch.float32`` or ``torch.float64``, of the result and the arithmetic.
        config: all of the eight options above at once (see :class:`BleuConfig`); pass either
            ``config`` or the option keywords.
        validate: check each batch's lengths and IDs (a host sync per ``update``), and NLTK's
            method6 in ``compute``; ``False`` skips it.

    Raises:
        TypeError, ValueError: a wrong option (see :class:`BleuConfig`).

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
        config: BleuConfig | None = None,
        validate: bool = True,
    ) -> None:
        self.config = resolve_config(
            config,
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
        self.summed = SummedStats(2 + 2 * self.config.stats_order, torch.int64)
        self.last_stats: Tensor | None = None  # [2 + 2N'] statistics of the last sentence

    @property
    def stats(self) -> Tensor | None:
        """``[2 + 2N']`` statistics summed over this process's updates (``None`` before any)."""
        return self.summed.sum

    def reset(self) -> None:
        """Forgets everything accumulated."""
        self.summed.reset()
        self.last_stats = None

    def update(
        self,
        hyp_ids: Tensor | Padded,
        ref_ids: Tensor | Padded,
        *,
        hyp_lens: Tensor | None = None,
        ref_lens: Tensor | None = None,
        pad_id: int | Sequence[int] | None = None,
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
        stats = compute_stats(batch, self.config)
        if stats.shape[0] == 0:
            return stats
        self.summed.add(stats)
        # A private copy: a view would change if the caller edits the returned stats in place.
        self.last_stats = last_row(stats).clone()
        return stats

    def compute(self) -> Tensor:
        """Corpus BLEU of everything added so far (0 before any update), a 0-d tensor."""
        stats = self.summed.total()  # all-reduced over ranks
        last = torch.zeros_like(stats)
        if self.last_stats is not None:
            last = self.last_stats.to(stats.device)
        if distributed():
            last = _last_of_ranks(last, seen=self.summed.seen)
        score = score_stats(stats, last, self.config)
        if self.validate:
            check_method6(score, self.config, "corpus")
        return score


def _last_of_ranks(last: Tensor, *, seen: bool) -> Tensor:
    """The last sentence's statistics of the highest rank with data."""
    world = dist.get_world_size()
    rank = dist.get_rank()
    # Each rank offers its last row tagged with (rank + 1) if it saw data, else 0.
    tagged = torch.cat([last, torch.tensor([rank + 1 if seen else 0], device=last.device)])
    gathered = [torch.empty_like(tagged) for _ in range(world)]
    dist.all_gather(gathered, tagged)
    table = torch.stack(gathered)  # [world, 2 + 2N' + 1]
    return table[table[:, -1].argmax(), :-1]
