"""How a batch is shared among CPU cores: the cores this process may use, and a batch cut into
runs of similar size. Both the C encoder's threads (:mod:`tensortext.bpe.native`) and the Python
encoder's worker processes (:mod:`tensortext.bpe.parallel`) use them; this module imports
nothing heavy, so the C path never loads ``multiprocessing``."""

from __future__ import annotations

import os

__all__ = ["balanced_chunks", "usable_cores"]


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask where the platform has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def balanced_chunks(texts: list[str], count: int) -> list[list[str]]:
    """``texts`` cut into at most ``count`` runs of consecutive texts with similar character
    totals (the order is kept, so the rows come back in place)."""
    total = sum(map(len, texts))
    target = max(total // max(count, 1), 1)
    chunks: list[list[str]] = []
    current: list[str] = []
    size = 0
    for text in texts:
        current.append(text)
        size += len(text)
        if size >= target:
            chunks.append(current)
            current, size = [], 0
    if current:
        chunks.append(current)
    return chunks
