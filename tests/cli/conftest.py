"""The command-line tests start the real command in about 55 subprocesses: each gets one thread
for torch's intra-op pool (OpenMP, MKL), not one per core, so that the suite stays fast on two
busy cores. The encoder's own threads (``--workers``, ``num_threads``) are set explicitly and
are not capped by these variables, so tests of threads keep testing them."""

from __future__ import annotations

import pytest

ONE_THREAD = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""The environment every subprocess of these tests inherits."""


@pytest.fixture(autouse=True)
def one_torch_thread_per_subprocess(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ONE_THREAD.items():
        monkeypatch.setenv(name, value)
