"""Summed statistics for the metric classes: add rows per batch, sum them over processes.

Every metric here reduces a sentence to a row of statistics that add up (BLEU's counts,
chrF's character and word n-gram counts, ROUGE's per-sentence scores and a sentence count),
and its corpus score is a formula on the summed row. :class:`SummedStats` is that sum, kept on
the device of the rows, and all-reduced over a ``torch.distributed`` process group when read,
so every metric class (:class:`~tensortext.BLEU`, :class:`~tensortext.CHRF`,
:class:`~tensortext.ROUGE`) accumulates the same way (torchmetrics' ``dist_reduce_fx="sum"``).
"""

from __future__ import annotations

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)

# isort: split
import torch
import torch.distributed as dist
from torch import Tensor

__all__ = ["SummedStats", "distributed", "rank_device"]


def distributed() -> bool:
    """Whether a ``torch.distributed`` process group of more than one rank is running."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank_device() -> torch.device:
    """Where a rank without data joins the collectives: the device its backend needs."""
    if dist.is_available() and dist.is_initialized() and dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


class SummedStats:
    """The sum of ``[W]`` statistic rows added batch by batch.

    Args:
        width: ``W``, the length of a row.
        dtype: the dtype of the sum (``torch.int64`` for counts, a float dtype for scores).

    Example:
        >>> summed = SummedStats(2, torch.int64)
        >>> summed.add(torch.tensor([[1, 2], [3, 4]]))
        >>> summed.total().tolist()
        [4, 6]
    """

    def __init__(self, width: int, dtype: torch.dtype) -> None:
        self.width = width
        self.dtype = dtype
        self.sum: Tensor | None = None  # [W], on the device of the first rows added

    @property
    def seen(self) -> bool:
        """Whether any row was added since the last :meth:`reset`."""
        return self.sum is not None

    def reset(self) -> None:
        """Forgets every row."""
        self.sum = None

    def add(self, rows: Tensor) -> None:
        """Adds ``[B, W]`` rows (an empty batch adds nothing)."""
        if rows.shape[-1] != self.width:
            raise ValueError(f"statistics rows have width {rows.shape[-1]}, expected {self.width}")
        if rows.shape[0] == 0:
            return
        total = rows.sum(0, dtype=self.dtype)
        self.sum = total if self.sum is None else self.sum + total.to(self.sum.device)

    def device(self) -> torch.device:
        """Where the sum lives, or where a rank without data joins the collectives."""
        return self.sum.device if self.sum is not None else rank_device()

    def total(self) -> Tensor:
        """``[W]``: the sum over every :meth:`add` of this process and, when a process group of
        several ranks is running, of every rank (all ranks must call it: it is a collective)."""
        if self.sum is None:
            total = torch.zeros(self.width, dtype=self.dtype, device=self.device())
        else:
            total = self.sum.clone()
        if distributed():
            dist.all_reduce(total)
        return total
