"""``encode_batch`` in a forked child after the parent used its thread pool (the C encoder) or
its worker processes (``TENSORTEXT_NATIVE=0``): ``os.fork()``, a fork ``multiprocessing.Pool``
and ``datasets.map(num_proc=2)`` give tiktoken's IDs instead of hanging.

Each case runs in its own interpreter, in a session of its own, under a timeout: a hang fails
the test (and its process group is killed) rather than stalling the suite.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from oracles.bpe import tiktoken_reference

TEXTS = [
    "hello world",
    "日本語のテキスト 😀 and some ASCII",
    "def f(x):\n    return x + 1\n" * 50,
    "It's 2026. " * 40,
    "hello world " * 3000,  # large enough for torch's intra-op threads in the tensor engine
]
HANG_TIMEOUT_S = 300
"""Far above a normal run (seconds); only reached if a child hangs."""

# The parent encodes with the pools in use: any batch goes to two threads or two worker
# processes, whatever this machine's core count.
PRELUDE = """
import json, os, sys
import torch
import tensortext
from tensortext.bpe import native, parallel

native.usable_cores = parallel.usable_cores = lambda: 2
native.THREADS_MIN_CHARS = parallel.PARALLEL_MIN_CHARS = 1
torch.set_num_threads(2)
TEXTS = json.loads(sys.argv[1])
enc = tensortext.get_encoding("cl100k_base")


def encode(texts):
    return enc.encode_batch(texts)


def encode_tensor(texts):
    ids, lengths = enc.encode_batch_to_tensor(texts, merge_backend="torch")
    return [row[:n].tolist() for row, n in zip(ids, lengths.tolist())]


def report(**results):
    print(json.dumps(results), flush=True)


report(parent=encode(TEXTS), parent_tensor=encode_tensor(TEXTS))
if native.native_available():
    assert native._executor.cache_info().currsize == 1, "the thread pool was not used"
else:
    assert enc._backends.get().workers.pool is not None, "the worker processes were not used"
"""

OS_FORK = """
pid = os.fork()
if pid == 0:
    report(child=encode(TEXTS), child_tensor=encode_tensor(TEXTS))
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
report(parent_after=encode(TEXTS))
"""

FORK_POOL = """
import multiprocessing

with multiprocessing.get_context("fork").Pool(2) as pool:
    report(pool=pool.map(encode, [TEXTS, TEXTS[::-1]]))
"""

DATASETS_MAP = """
import datasets

ds = datasets.Dataset.from_dict({"text": TEXTS * 2})
ds = ds.map(
    lambda batch: {"ids": encode(batch["text"])}, batched=True, batch_size=2, num_proc=2
)
report(datasets=ds.to_dict()["ids"])
"""

BACKENDS = pytest.mark.parametrize("native", [True, False], ids=["c_threads", "python_workers"])


def run_script(body: str, *, native: bool, tmp_path: Path) -> dict[str, object]:
    """Run ``PRELUDE + body`` in a new session; its JSON lines merged into one dict."""
    env = {
        **os.environ,
        "TENSORTEXT_NATIVE": "1" if native else "0",
        "HF_DATASETS_CACHE": str(tmp_path / "hf"),
        "HF_DATASETS_OFFLINE": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-c", PRELUDE + body, json.dumps(TEXTS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=HANG_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the script and every child it forked
        out, err = process.communicate()
        reported = [next(iter(json.loads(line))) for line in out.splitlines()]
        pytest.fail(f"hung (killed after {HANG_TIMEOUT_S} s) after reporting {reported}")
    assert process.returncode == 0, err[-3000:]
    results: dict[str, object] = {}
    for line in out.splitlines():
        results.update(json.loads(line))
    return results


def expected() -> list[list[int]]:
    rows: list[list[int]] = tiktoken_reference("cl100k_base").encode_batch(TEXTS)
    return rows


@BACKENDS
def test_os_fork_child_encodes(native: bool, tmp_path: Path) -> None:
    """The child's ``encode_batch`` and tensor engine (torch's threads used in the parent)
    give tiktoken's IDs, and the parent's pools still serve it afterwards."""
    results = run_script(OS_FORK, native=native, tmp_path=tmp_path)
    want = expected()
    for key in ("parent", "parent_tensor", "child", "child_tensor", "parent_after"):
        assert results[key] == want, key


@BACKENDS
def test_fork_pool_maps_encode_batch(native: bool, tmp_path: Path) -> None:
    results = run_script(FORK_POOL, native=native, tmp_path=tmp_path)
    assert results["parent"] == expected()
    assert results["pool"] == [expected(), expected()[::-1]]


@BACKENDS
def test_datasets_map_num_proc(native: bool, tmp_path: Path) -> None:
    results = run_script(DATASETS_MAP, native=native, tmp_path=tmp_path)
    assert results["parent"] == expected()
    assert results["datasets"] == expected() * 2


CACHED_PROPERTY_HELD = """
import threading
from functools import cached_property

from tensortext.bpe.core import Encoding

# A thread of the parent is inside a cached_property of Encoding (building a table) at the fork:
# it holds the class's one lock for that property, which the child inherits held.
backends = vars(Encoding)["_backends"]
assert isinstance(backends, cached_property)
lock = backends.lock
held, release = threading.Event(), threading.Event()


def hold() -> None:
    with lock:
        held.set()
        release.wait()


thread = threading.Thread(target=hold)
thread.start()
held.wait()
pid = os.fork()
if pid == 0:
    other = tensortext.get_encoding("r50k_base")  # its _backends is not built yet
    report(child_other=other.encode_batch(["hello world"]))
    os._exit(0)
release.set()
thread.join()
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
"""


@pytest.mark.skipif(
    sys.version_info >= (3, 12), reason="functools.cached_property holds no lock from Python 3.12"
)
def test_a_cached_property_lock_held_at_the_fork(tmp_path: Path) -> None:
    """Before 3.12, ``cached_property`` computes under one lock per class: the child renews it
    (else its first use of any encoding's property waits forever)."""
    results = run_script(CACHED_PROPERTY_HELD, native=True, tmp_path=tmp_path)
    assert results["child_other"] == tiktoken_reference("r50k_base").encode_batch(["hello world"])


def test_a_child_keeps_torchs_threads_where_the_engine_never_ran() -> None:
    """Only a parent that ran the tensor engine has its children run torch on one thread."""
    script = """
import os, torch
torch.set_num_threads(2)
import tensortext
tensortext.get_encoding("gpt2").encode_batch(["hello world"])  # the C or Python host encoder
pid = os.fork()
if pid == 0:
    os._exit(torch.get_num_threads())
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_TIMEOUT_S
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["2"]
