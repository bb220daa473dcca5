"""``encode_batch`` in worker processes (``tensortext.bpe.parallel``): tiktoken's IDs, in order,
with special tokens; small calls stay in the process; a dead worker costs a warning, not the
result; workers ignore Ctrl-C. The workers serve the Python host encoder (without the C one),
which these tests put on the encodings; the C encoder's threads are in ``test_native.py``."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from bpe_strategies import TIKTOKEN_CHAR, rich_texts
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_reference
from strategies import SETTINGS

from tensortext.bpe import Encoding, get_encoding, parallel
from tensortext.bpe.backends import PythonBackend, python_backend

pytestmark = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="the host encoder needs possessive quantifiers (3.11)"
)

TEXTS = [
    "def f(x):\n    return x + 1\n",
    "日本語のテキスト、そして emoji 😀👩\u200d💻 and <|endoftext|> inside",
    "",
    "Grüße aus Köln! It's 2026; numbers 1234567890.",
    "  \n\n\t mixed   whitespace \r\n",
] * 7


@cache
def python_encoder(name: str) -> PythonBackend:
    """One Python encoder per encoding for this module (its workers serve every test)."""
    return python_backend(get_encoding(name)._vocab)


def python_host(encoding: Encoding, patch: pytest.MonkeyPatch) -> Encoding:
    """``encoding`` with the pure-Python encoder on the CPU (the one the workers are for)."""
    key = ("cpu", "auto", encoding._vocab.kind)
    patch.setitem(encoding._backends._built, key, python_encoder(encoding.name))
    return encoding


def python(encoding: Encoding) -> PythonBackend:
    backend = encoding._backends.get()
    assert isinstance(backend, PythonBackend)
    return backend


def has_pool(encoding: Encoding) -> bool:
    return python(encoding).workers.pool is not None


@pytest.fixture
def enc(monkeypatch: pytest.MonkeyPatch) -> Iterator[Encoding]:
    """cl100k_base with the worker threshold at 1 character and two usable cores (whatever
    this machine has); its workers are stopped afterwards."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CHARS", 1)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    encoding = python_host(get_encoding("cl100k_base"), monkeypatch)
    encoding._shutdown_workers()
    yield encoding
    encoding._shutdown_workers()


def worker_pids(encoding: Encoding) -> list[int]:
    pool = python(encoding).workers.pool
    assert pool is not None
    return list(pool.executor._processes)


def test_workers_give_tiktokens_ids_in_order(enc: Encoding) -> None:
    reference = tiktoken_reference("cl100k_base")
    allowed = {"<|endoftext|>"}
    got = enc.encode_batch(TEXTS, num_threads=2, allowed_special=allowed)
    assert got == reference.encode_batch(TEXTS, allowed_special=allowed)
    pids = worker_pids(enc)
    assert len(pids) == 2 and os.getpid() not in pids
    # The pool stays for the next call.
    assert enc.encode_ordinary_batch(TEXTS[::-1]) == reference.encode_ordinary_batch(TEXTS[::-1])
    assert worker_pids(enc) == pids


@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR), min_size=2, max_size=6))
def test_workers_on_random_texts(texts: list[str]) -> None:
    with pytest.MonkeyPatch.context() as patch:
        encoding = python_host(get_encoding("o200k_base"), patch)
        patch.setattr(parallel, "PARALLEL_MIN_CHARS", 1)
        patch.setattr(parallel, "usable_cores", lambda: 2)
        got = encoding.encode_ordinary_batch(texts, num_threads=2)
    assert got == tiktoken_reference("o200k_base").encode_ordinary_batch(texts)


@pytest.fixture(autouse=True, scope="module")
def stop_o200k_workers() -> Iterator[None]:
    yield
    python_encoder("o200k_base").workers.shutdown()


@pytest.mark.parametrize(
    ("num_threads", "texts"),
    [(1, TEXTS), (8, TEXTS[:1]), (8, ["", ""])],
    ids=["num_threads=1", "one text", "no text"],
)
def test_calls_that_stay_in_this_process(
    enc: Encoding, num_threads: int, texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CHARS", 2)  # "" + "" is below it
    reference = tiktoken_reference("cl100k_base")
    assert enc.encode_ordinary_batch(texts, num_threads=num_threads) == [
        reference.encode_ordinary(text) for text in texts
    ]
    assert not has_pool(enc)


def test_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "usable_cores", lambda: 4)
    big = ["x" * parallel.PARALLEL_MIN_CHARS]
    assert parallel.worker_count(8, big * 10) == 4  # one per core
    assert parallel.worker_count(3, big * 10) == 3  # num_threads
    assert parallel.worker_count(8, big * 2) == 2  # one per text
    assert parallel.worker_count(8, big) == 1
    assert parallel.worker_count(8, ["x"] * 10) == 1  # too little text


def test_balanced_chunks_keep_the_order() -> None:
    texts = ["a" * n for n in [5, 1, 1, 1, 1, 1, 9, 0, 1]]
    chunks = parallel.balanced_chunks(texts, 3)
    assert [text for chunk in chunks for text in chunk] == texts
    assert len(chunks) == 3


def test_disallowed_special_raises_before_any_worker_starts(enc: Encoding) -> None:
    with pytest.raises(ValueError, match="disallowed_special"):
        enc.encode_batch(TEXTS, num_threads=2)
    assert not has_pool(enc)


def test_a_dead_worker_costs_a_warning_not_the_result(enc: Encoding) -> None:
    reference = tiktoken_reference("cl100k_base").encode_ordinary_batch(TEXTS)
    assert enc.encode_ordinary_batch(TEXTS, num_threads=2) == reference
    for pid in worker_pids(enc):
        os.kill(pid, signal.SIGKILL)
    with pytest.warns(RuntimeWarning, match="worker process died"):
        assert enc.encode_ordinary_batch(TEXTS, num_threads=2) == reference
    assert not has_pool(enc)
    assert enc.encode_ordinary_batch(TEXTS, num_threads=2) == reference  # a new pool
    assert len(worker_pids(enc)) == 2


def test_a_forked_child_encodes_in_its_own_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its parent's workers are not its own, and its own would outlive an ``os._exit``
    (the end to end cases: ``test_fork.py``)."""
    monkeypatch.setattr(parallel, "PARALLEL_MIN_CHARS", 1)
    monkeypatch.setattr(parallel, "usable_cores", lambda: 2)
    assert parallel.worker_count(8, TEXTS) == 2
    monkeypatch.setattr(parallel, "_FORKED", True)
    assert parallel.worker_count(8, TEXTS) == 1


def test_workers_ignore_ctrl_c(enc: Encoding) -> None:
    """Ctrl-C reaches every process of the terminal's group: the caller handles it (the CLI
    exits 130); the workers neither die nor print a traceback."""
    reference = tiktoken_reference("cl100k_base").encode_ordinary_batch(TEXTS)
    assert enc.encode_ordinary_batch(TEXTS, num_threads=2) == reference
    pids = worker_pids(enc)
    pool = python(enc).workers.pool
    assert pool is not None
    executor = pool.executor
    # The barrier makes every worker take one task (each waits there until all have one):
    # once before the signal, so that every worker has run its initializer (a worker still
    # starting, on a busy machine, has not set Ctrl-C aside yet), and once after it. A signal
    # is delivered before its process runs any more of its own code: a task that each worker
    # finishes after the kill shows it survived.
    with multiprocessing.Manager() as manager:

        def every_worker_answers() -> None:
            barrier = manager.Barrier(len(pids))
            answered = list(executor.map(pid_after_barrier, [barrier] * len(pids)))
            assert sorted(answered) == sorted(pids)

        every_worker_answers()
        for pid in pids:
            os.kill(pid, signal.SIGINT)
        every_worker_answers()
    assert enc.encode_ordinary_batch(TEXTS, num_threads=2) == reference
    assert worker_pids(enc) == pids


def pid_after_barrier(barrier: Any) -> int:
    """Run in a worker: its PID, once every worker has reached ``barrier``."""
    barrier.wait(timeout=120)  # (a worker missing: BrokenBarrierError, not a hang)
    return os.getpid()


def test_a_pool_serves_fewer_workers_and_grows_for_more(
    enc: Encoding, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "usable_cores", lambda: 3)
    reference = tiktoken_reference("cl100k_base").encode_ordinary_batch(TEXTS)
    assert enc.encode_ordinary_batch(TEXTS, num_threads=2) == reference
    pids = worker_pids(enc)
    assert enc.encode_ordinary_batch(TEXTS, num_threads=3) == reference
    assert len(worker_pids(enc)) == 3 and worker_pids(enc) != pids  # a bigger pool
    pids = worker_pids(enc)
    assert enc.encode_ordinary_batch(TEXTS, num_threads=2) == reference
    assert worker_pids(enc) == pids  # the same pool, two of its workers
