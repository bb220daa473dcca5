"""``ROUGE``: a torchmetrics-style accumulator over the functions' stats -> score pair."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from tensortext.accumulate import SummedStats
from tensortext.rouge.config import DEFAULT_ROUGE_TYPES, RougeConfig, resolve_config
from tensortext.rouge.functional import DeviceArg, Hyps, Refs, rouge_from_stats
from tensortext.rouge.stats import compute_stats, prepare_batch

__all__ = ["ROUGE"]


class ROUGE:
    """Corpus ROUGE (the mean of sentence scores) accumulated over batches and processes.

    ``update`` adds each batch's statistics (per-sentence score sums and the sentence count);
    ``compute`` divides their sum, so any split of the data into batches, or into ranks of a
    ``torch.distributed`` process group (``compute`` all-reduces; all ranks must call it), gives
    :func:`~tensortext.rouge.corpus_rouge` of all of it.

    Args:
        rouge_types: ``"rouge1"`` .. ``"rouge9"``, ``"rougeL"``: the ``T`` scores, in order.
        use_stemmer: rouge-score's Porter stemming (text only; needs nltk).
        dtype: ``torch.float32`` or ``torch.float64``: of the statistics, their sums and scores.
        config: the three options above at once; pass either ``config`` or the keywords.
        validate: check each batch's lengths and IDs (a host sync per ``update``).

    Raises:
        TypeError, ValueError: a wrong option (see :class:`~tensortext.rouge.RougeConfig`).

    Example:
        >>> metric = ROUGE(rouge_types=["rouge1"])
        >>> _ = metric.update(["a b", "c d"], ["a b", "x y"])
        >>> metric.compute().tolist()
        [[0.5, 0.5, 0.5]]
    """

    def __init__(
        self,
        *,
        rouge_types: Sequence[str] = DEFAULT_ROUGE_TYPES,
        use_stemmer: bool = False,
        dtype: torch.dtype = torch.float32,
        config: RougeConfig | None = None,
        validate: bool = True,
    ) -> None:
        self.config = resolve_config(
            config, rouge_types=rouge_types, use_stemmer=use_stemmer, dtype=dtype
        )
        self.validate = validate
        self.summed = SummedStats(self.config.width, self.config.dtype)

    @property
    def stats(self) -> Tensor | None:
        """``[1 + 3T]`` statistics summed over this process's updates (``None`` before any)."""
        return self.summed.sum

    def reset(self) -> None:
        """Forgets everything accumulated."""
        self.summed.reset()

    def update(
        self,
        hyps: Hyps,
        refs: Refs,
        *,
        hyp_lens: Tensor | None = None,
        ref_lens: Tensor | None = None,
        pad_id: int | Sequence[int] | None = None,
        device: DeviceArg = None,
    ) -> Tensor:
        """Adds a batch; arguments as in :func:`~tensortext.rouge.rouge_stats`.

        Returns:
            ``[B, 1 + 3T]`` statistics of this batch.
        """
        batch = prepare_batch(
            hyps,
            refs,
            hyp_lens=hyp_lens,
            ref_lens=ref_lens,
            pad_id=pad_id,
            config=self.config,
            device=device,
            validate=self.validate,
        )
        stats = compute_stats(batch, self.config)
        self.summed.add(stats)
        return stats

    def compute(self) -> Tensor:
        """``[T, 3]`` corpus ``precision, recall, fmeasure`` of everything added (0 before any
        update)."""
        return rouge_from_stats(self.summed.total(), config=self.config)
