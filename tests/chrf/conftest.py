"""The chrF tests run torch on one thread: their inputs are tiny, and waking a second
intra-op thread on a busy machine costs more than the work (results do not depend on it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
