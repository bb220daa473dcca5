"""``encode_batch`` on several CPU cores without the C encoder: the Python encoder in worker
processes (and the thread helpers the C encoder shares).

tiktoken's ``encode_batch(num_threads=8)`` runs its Rust encoder on a thread pool, and so does
the C encoder (:mod:`tensortext.bpe.native`), which releases the GIL. Where it is not built
(or for a vocabulary it does not take), the Python encoder (:mod:`tensortext.bpe.host`) runs,
and one interpreter runs Python on one core at a time, so a large batch goes instead to worker
processes (:class:`Workers`, given the encoder as a callable), each with its own piece
cache. The workers start
on the first large call (the platform's default start method: ``fork`` on Linux up to Python
3.13) and stay for the next ones, with their caches warm; they ignore Ctrl-C (the caller's
process handles it) and end with the interpreter.

A forked child (``os.fork()``, a fork ``multiprocessing.Pool`` worker, ``datasets.map``'s
``num_proc``) and a daemon process encode in their own process. The parent's workers are not
the child's (see :class:`WorkerPool`); workers of its own would outlive a child that ends with
``os._exit``, as ``multiprocessing``'s workers do, skipping the exit handler that stops them;
and a daemon may not start processes. Such a child is one of several already.

On two cores, 1024 texts x 4 KB: 6.0 -> 9.8 MB/s (cl100k_base), 6.8 -> 12.5 MB/s (o200k_base).
Not 2x: the calling process spends ~15% of the time cutting the batch and rebuilding the rows
from the workers' flat arrays, and each worker's cache sees only its share of the text. Below
:data:`PARALLEL_MIN_CHARS` characters per call the workers do not pay: that much text takes
~0.15 s in one process, and a first call also pays the workers' start.
"""

from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.process
import os
import signal
import warnings
import weakref
from array import array
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from itertools import chain

from tensortext.bpe.cores import balanced_chunks, usable_cores
from tensortext.padded import split_rows

__all__ = [
    "PARALLEL_MIN_CHARS",
    "WorkerPool",
    "Workers",
    "balanced_chunks",
    "usable_cores",
    "worker_count",
]

EncodeMany = Callable[[list[str]], list[list[int]]]
"""Ordinary segments -> the tokens of each: what the workers run."""
PARALLEL_MIN_CHARS = 1 << 20
"""Characters of ordinary text in one call from which ``encode_batch`` uses worker processes."""
_CHUNKS_PER_WORKER = 1
"""Tasks per worker and call. One: the host encoder merges a call's new pieces together, and
on 1024 x 4 KB, 4 smaller tasks per worker were 25% slower than one."""


def worker_count(num_threads: int, texts: list[str]) -> int:
    """How many processes encode ``texts``: ``num_threads`` (tiktoken's argument), at most one
    per usable core and per text; 1 below :data:`PARALLEL_MIN_CHARS` characters in all, and in
    a forked child or a daemon process (see the module docstring)."""
    if num_threads == 1 or len(texts) == 1 or sum(map(len, texts)) < PARALLEL_MIN_CHARS:
        return 1
    if _FORKED or multiprocessing.current_process().daemon:
        return 1
    return max(1, min(num_threads, usable_cores(), len(texts)))


class WorkerPool:
    """``workers`` processes, each running ``encode_many`` (started on first use).

    ``before_start`` runs here first (to build what the workers share once forked, instead of
    each building its own: the tensor merges' tables, about a second and tens of MB per worker
    for cl100k_base); ``in_worker`` runs in each worker as it starts.

    A pool belongs to the process that made it (``pid``). A forked child inherits the object
    but not the threads that feed its workers: were the child to submit, nothing would collect
    the results, and were it to shut the pool down, it would stop its parent's workers (or wait
    on a lock some parent thread held at the fork). So the child never uses, joins or shuts
    down an inherited pool: it forgets it.
    """

    def __init__(
        self,
        encode_many: EncodeMany,
        workers: int,
        *,
        before_start: Callable[[], None] | None = None,
        in_worker: Callable[[], None] | None = None,
    ):
        self.workers = workers
        self.pid = os.getpid()
        if before_start is not None:
            before_start()
        self.executor = ProcessPoolExecutor(
            max_workers=workers, initializer=_start_worker, initargs=(encode_many, in_worker)
        )
        _LIVE_POOLS.add(self)

    def encode_many(self, texts: list[str], workers: int | None = None) -> list[list[int]]:
        """The pool's ``encode_many`` of ``texts``, in chunks across ``workers`` of the
        workers (default: all).

        Raises:
            BrokenProcessPool: a worker died (killed, out of memory); the caller encodes in
                its own process instead.
        """
        chunks = balanced_chunks(texts, (workers or self.workers) * _CHUNKS_PER_WORKER)
        rows: list[list[int]] = []
        for flat, lengths in self.executor.map(_encode_chunk, chunks):
            rows += split_rows(flat.tolist(), lengths)
        return rows

    @property
    def inherited(self) -> bool:
        """Whether this process is a fork of the one that made the pool (see the class)."""
        return self.pid != os.getpid()

    def shutdown(self) -> None:
        """Stop the workers (nothing, in a forked child: they are the parent's)."""
        if not self.inherited:
            self.executor.shutdown(wait=True, cancel_futures=True)


_LIVE_POOLS: weakref.WeakSet[WorkerPool] = weakref.WeakSet()


@atexit.register
def _shutdown_live_pools() -> None:
    """Stop the workers before the interpreter tears its modules down (else the executor's
    clean-up runs after, and prints an ignored exception at exit)."""
    for pool in list(_LIVE_POOLS):
        pool.shutdown()


_FORKED = False
"""Whether this process is a fork of the one that imported this module."""


def _forget_live_pools() -> None:
    """In a forked child: the parent's pools are not this process's to stop at exit.

    Their worker processes are not its children either, but ``multiprocessing`` lists them
    as such, and its exit handler would try to join them (an ignored ``AssertionError``
    printed at every normal exit of an ``os.fork()`` child).
    """
    global _FORKED
    _FORKED = True
    children = getattr(multiprocessing.process, "_children", None)
    for pool in list(_LIVE_POOLS):
        processes = getattr(pool.executor, "_processes", None) or {}
        if isinstance(children, set):
            children.difference_update(processes.values())
    _LIVE_POOLS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_live_pools)


class Workers:
    """The worker processes of one encoder, started by the first large call and kept for the
    next ones (a pool with fewer processes is replaced, one with more serves).

    Args:
        encode_many: the encoder, run in each worker and, if a worker dies, in this process.
        before_start, in_worker: as in :class:`WorkerPool`.
    """

    def __init__(
        self,
        encode_many: EncodeMany,
        *,
        before_start: Callable[[], None] | None = None,
        in_worker: Callable[[], None] | None = None,
    ):
        self.encode_many = encode_many
        self.before_start, self.in_worker = before_start, in_worker
        self.pool: WorkerPool | None = None

    def encoder(self, workers: int) -> EncodeMany:
        """``encode_many`` through ``workers`` processes. If a worker dies, the texts are
        encoded in this process with a ``RuntimeWarning``, and the next call starts a pool."""
        pool = self.pool
        if pool is None or pool.inherited or pool.workers < workers:
            self.shutdown()  # (an inherited pool is only forgotten)
            pool = self.pool = WorkerPool(
                self.encode_many, workers, before_start=self.before_start, in_worker=self.in_worker
            )

        def encode_many(texts: list[str]) -> list[list[int]]:
            try:
                return pool.encode_many(texts, workers)
            except BrokenProcessPool as error:
                warnings.warn(
                    f"tensortext: an encode_batch worker process died ({error}); encoding in "
                    "this process instead (pass num_threads=1 to skip the workers)",
                    RuntimeWarning,
                    stacklevel=6,  # encode_batch's caller
                )
                self.shutdown()
                return self.encode_many(texts)

        return encode_many

    def shutdown(self) -> None:
        """Stop the worker processes, if any (in a forked child, forget the parent's)."""
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown()


_WORKER_ENCODE: EncodeMany | None = None
"""The encoder of this worker process (set by :func:`_start_worker`)."""


def _start_worker(encode_many: EncodeMany, in_worker: Callable[[], None] | None) -> None:
    global _WORKER_ENCODE
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the calling process's to handle
    if in_worker is not None:
        in_worker()
    _WORKER_ENCODE = encode_many


def _encode_chunk(texts: list[str]) -> tuple[array[int], list[int]]:
    """The tokens of ``texts``, flat in an array with each text's count: a list of lists of
    ints takes 4x longer to unpickle in the calling process, which would then be the
    bottleneck."""
    assert _WORKER_ENCODE is not None, "set by the pool's initializer"
    rows = _WORKER_ENCODE(texts)
    return array("q", chain.from_iterable(rows)), list(map(len, rows))
