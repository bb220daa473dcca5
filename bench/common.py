"""Shared helpers for the tensortext benchmarks (BLEU today; BPE and beam search later).

What is here:

* :func:`device_info` -- a human-readable device name, a short slug for file names and the host
  CPU description (CPU baselines such as NLTK always run on the host CPU, even in a CUDA run).
* :func:`time_fn` -- median wall-clock time of a callable (warm-up runs first, CUDA synchronised
  around every call), optionally with the peak *extra* memory of one of the warm-up calls.
* :func:`peak_extra_memory` -- the same memory measurement on its own.
* :func:`run_metadata`, :func:`write_json`, :func:`results_path` -- result files with metadata.
* :func:`new_figure` / :func:`save_figure` -- matplotlib with the non-interactive Agg backend.

Peak extra memory
-----------------
On CUDA: ``torch.cuda.memory_allocated()`` is the baseline, the peak counters are reset with
``torch.cuda.reset_peak_memory_stats()``, and the result is ``max_memory_allocated() - baseline``
(tensors created by the call, including its output, caching-allocator slack excluded).

On CPU: the process' resident-set high-water mark.  ``malloc_trim(0)`` first hands freed heap
pages back to the kernel (so a call that reuses them has to fault them in again and is counted),
then writing ``5`` to ``/proc/self/clear_refs`` resets ``VmHWM`` to the current ``VmRSS``; after
the call, ``VmHWM - VmRSS(before)`` is the peak extra resident memory.  See bench/README.md for
the limits of this method (whole process, page granularity, Linux only).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import datetime as _dt
import gc
import importlib.metadata
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
MiB = 1024.0 * 1024.0


# --------------------------------------------------------------------------- device


def cpu_model_name() -> str:
    """CPU model from /proc/cpuinfo (falls back to platform.processor())."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _cuda_slug(name: str) -> str:
    """'NVIDIA H100 80GB HBM3' -> 'h100'; 'NVIDIA GeForce RTX 4090' -> 'rtx4090'."""
    words = [w for w in re.split(r"[\s_]+", name.lower()) if w and w not in {"nvidia", "geforce"}]
    prev = ""
    for word in words:
        m = re.match(r"[a-z]*\d+[a-z]?", word)
        if m and any(ch.isdigit() for ch in m.group(0)):
            tok = m.group(0)
            if tok.isdigit() and prev.isalpha():
                tok = prev + tok
            return re.sub(r"[^a-z0-9]+", "-", tok)
        prev = word
    return re.sub(r"[^a-z0-9]+", "-", "-".join(words))[:24].strip("-") or "cuda"


@dataclass
class DeviceInfo:
    device: torch.device
    name: str  # human readable, e.g. "AMD EPYC (2 logical CPUs), 1 torch thread"
    slug: str  # for file names, e.g. "cpu-1t", "h100"
    host_cpu: str  # the host CPU, where Python baselines run
    threads: int  # torch.get_num_threads()

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": str(self.device),
            "name": self.name,
            "slug": self.slug,
            "host_cpu": self.host_cpu,
            "torch_threads": self.threads,
            "logical_cpus": os.cpu_count(),
        }


def device_info(device: torch.device | str) -> DeviceInfo:
    """Describe ``device``; call after ``torch.set_num_threads``."""
    device = torch.device(device)
    threads = torch.get_num_threads()
    host = f"{cpu_model_name()} ({os.cpu_count()} logical CPUs)"
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        gpu = torch.cuda.get_device_name(idx)
        return DeviceInfo(device, gpu, _cuda_slug(gpu), host, threads)
    name = f"{host}, {threads} torch thread{'s' if threads != 1 else ''}"
    return DeviceInfo(device, name, f"cpu-{threads}t", host, threads)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def synchronize(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


# --------------------------------------------------------------------------- memory

_LIBC: Any = None


def _libc() -> Any:
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        except OSError:
            _LIBC = False
    return _LIBC


def _malloc_trim() -> None:
    libc = _libc()
    if libc and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def _proc_status_kib(key: str) -> int | None:
    try:
        with open("/proc/self/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpu_peak_tracking_available() -> bool:
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        return False
    return _proc_status_kib("VmHWM") is not None


class PeakMemory:
    """Context manager: ``with PeakMemory(dev) as pm: fn()``; then ``pm.extra_bytes``.

    ``extra_bytes`` is None when the platform cannot measure it (non-Linux CPU).
    """

    def __init__(self, device: torch.device | str) -> None:
        self.device = torch.device(device)
        self.extra_bytes: int | None = None
        self._base = 0

    def __enter__(self) -> PeakMemory:
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self._base = torch.cuda.memory_allocated(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            _malloc_trim()
            self._ok = cpu_peak_tracking_available()  # also resets VmHWM := VmRSS
            self._base = (_proc_status_kib("VmRSS") or 0) * 1024
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            self.extra_bytes = max(0, torch.cuda.max_memory_allocated(self.device) - self._base)
        elif self._ok:
            hwm = _proc_status_kib("VmHWM")
            if hwm is not None:
                self.extra_bytes = max(0, hwm * 1024 - self._base)


def peak_extra_memory(fn: Callable[[], Any], device: torch.device | str) -> tuple[int | None, Any]:
    """Run ``fn`` once; return (peak extra bytes or None, fn's result)."""
    with PeakMemory(device) as pm:
        out = fn()
    return pm.extra_bytes, out


def available_memory_bytes(device: torch.device | str) -> int | None:
    """Free memory that a new allocation could use (CUDA: mem_get_info; CPU: MemAvailable)."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _total = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


# --------------------------------------------------------------------------- timing


@dataclass
class Timing:
    median_s: float
    samples_s: list[float]
    warmup: int
    peak_extra_bytes: int | None = None  # measured on the last warm-up call, if requested
    value: Any = field(default=None, repr=False)  # result of the last call

    @property
    def peak_extra_mib(self) -> float | None:
        return None if self.peak_extra_bytes is None else self.peak_extra_bytes / MiB

    def as_dict(self) -> dict[str, Any]:
        return {
            "median_s": self.median_s,
            "min_s": min(self.samples_s),
            "samples_s": self.samples_s,
            "n_samples": len(self.samples_s),
            "warmup": self.warmup,
            "peak_extra_mib": self.peak_extra_mib,
        }


def time_fn(
    fn: Callable[[], Any],
    *,
    warmup: int = 2,
    repeat: int = 7,
    device: torch.device | str = "cpu",
    budget_s: float | None = None,
    min_repeat: int = 3,
    measure_memory: bool = False,
    memory_device: torch.device | str | None = None,
) -> Timing:
    """Median wall-clock seconds of ``fn()`` over ``repeat`` calls after ``warmup`` calls.

    Each call is bracketed by ``torch.cuda.synchronize`` when ``device`` is CUDA, so the time
    includes the kernels and any host-side work (end-to-end latency, as a caller sees it).
    With ``budget_s``, timing stops early once the timed calls have used ``budget_s`` seconds
    and at least ``min_repeat`` samples exist (for slow pure-Python baselines).
    With ``measure_memory``, the last warm-up call (an extra call if ``warmup == 0``) is run under
    :class:`PeakMemory`; that call is never part of the timing samples.  ``memory_device``
    (default ``device``) says whose memory to watch, e.g. "cpu" for a Python baseline that is
    timed in a CUDA run.
    """
    device = torch.device(device)
    mem_device = device if memory_device is None else torch.device(memory_device)
    peak: int | None = None
    value: Any = None
    n_warm = max(warmup, 1 if measure_memory else 0)
    for i in range(n_warm):
        if measure_memory and i == n_warm - 1:
            peak, value = peak_extra_memory(fn, mem_device)
        else:
            synchronize(device)
            value = fn()
            synchronize(device)
    samples: list[float] = []
    spent = 0.0
    for _ in range(max(repeat, 1)):
        synchronize(device)
        t0 = time.perf_counter()
        value = fn()
        synchronize(device)
        dt = time.perf_counter() - t0
        samples.append(dt)
        spent += dt
        if budget_s is not None and spent >= budget_s and len(samples) >= min_repeat:
            break
    return Timing(statistics.median(samples), samples, n_warm, peak, value)


def time_interleaved(
    fns: dict[str, Callable[[], Any]],
    *,
    warmup: int | dict[str, int] = 2,
    repeat: int = 7,
    device: torch.device | str = "cpu",
    budget_s: float | None = None,
    min_repeat: int = 3,
    measure_memory: bool = False,
    memory_device: torch.device | str | dict[str, torch.device | str] | None = None,
    rewarm_below_s: float | None = 0.5,
) -> tuple[dict[str, Timing], dict[str, BaseException]]:
    """Like :func:`time_fn` for several callables, timed in round-robin order.

    Warm-up (and the memory measurement, on the last warm-up call) is done per callable first;
    then each of ``repeat`` rounds times every callable once; round ``k`` starts at the ``k``-th
    callable (rotation), so that each one follows each other one about equally often: a callable
    that runs right after one that churned through gigabytes (cold caches, fresh pages from the
    kernel) is measurably slower, and a fixed order would always charge that to the same one; the
    median then drops those few calls.  Moreover a callable whose last call took less than
    ``rewarm_below_s`` gets one untimed call right before its timed one in every round, so fast
    code is timed warm (as in a loop of its own) rather than after a memory-hungry neighbour;
    slow code is dominated by its own work and is not re-warmed.  On a machine whose speed
    drifts (shared or SMT siblings busy, thermal limits) interleaving keeps the ratios between
    implementations fair, which timing one after the other does not.  A callable whose
    timed calls have used ``budget_s`` seconds (after ``min_repeat`` samples) leaves the rounds.
    A callable that raises is dropped and its exception returned; the others go on.
    """
    device = torch.device(device)
    timings: dict[str, Timing] = {}
    errors: dict[str, BaseException] = {}
    samples: dict[str, list[float]] = {}
    values: dict[str, Any] = {}
    peaks: dict[str, int | None] = {}
    n_warm: dict[str, int] = {}
    last_dt: dict[str, float] = {}
    for key, fn in fns.items():
        w = warmup[key] if isinstance(warmup, dict) else warmup
        if isinstance(memory_device, dict):
            mdev = torch.device(memory_device.get(key, device))
        else:
            mdev = device if memory_device is None else torch.device(memory_device)
        n_warm[key] = max(w, 1 if measure_memory else 0)
        peaks[key] = None
        try:
            for i in range(n_warm[key]):
                t0 = time.perf_counter()
                if measure_memory and i == n_warm[key] - 1:
                    peaks[key], values[key] = peak_extra_memory(fn, mdev)
                else:
                    synchronize(device)
                    values[key] = fn()
                    synchronize(device)
                last_dt[key] = time.perf_counter() - t0
        except Exception as exc:
            errors[key] = exc
            continue
        samples[key] = []
    active = list(samples)
    spent = dict.fromkeys(active, 0.0)
    for rnd in range(max(repeat, 1)):
        if not active:
            break
        k = rnd % len(active)
        for key in active[k:] + active[:k]:
            try:
                prev = samples[key][-1] if samples[key] else last_dt.get(key, 0.0)
                if rewarm_below_s is not None and prev < rewarm_below_s:
                    synchronize(device)
                    fns[key]()
                synchronize(device)
                t0 = time.perf_counter()
                values[key] = fns[key]()
                synchronize(device)
            except Exception as exc:
                errors[key] = exc
                active.remove(key)
                del samples[key]
                continue
            dt = time.perf_counter() - t0
            samples[key].append(dt)
            spent[key] += dt
            if budget_s is not None and spent[key] >= budget_s and len(samples[key]) >= min_repeat:
                active.remove(key)
    for key, smp in samples.items():
        timings[key] = Timing(statistics.median(smp), smp, n_warm[key], peaks[key], values[key])
    return timings, errors


# --------------------------------------------------------------------------- results


def package_versions(names: Iterable[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def run_metadata(info: DeviceInfo, packages: Sequence[str] = ()) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": info.as_dict(),
        "thread_count": info.threads,
        "versions": package_versions(["torch", *packages]),
        "loadavg_at_start": loadavg(),
        "git": git_state(),
    }
    if info.device.type == "cuda":
        meta["cuda_capability"] = list(torch.cuda.get_device_capability(info.device))
    return meta


def git_state(repo: Path = BENCH_DIR.parent) -> dict[str, Any] | None:
    """Commit of the checkout being measured and whether src/ differs from it."""

    def git(*a: str) -> str:
        out = subprocess.run(
            ["git", "-C", str(repo), *a], capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip()

    try:
        return {
            "commit": git("rev-parse", "HEAD"),
            "subject": git("log", "-1", "--format=%s"),
            "src_dirty": bool(git("status", "--porcelain", "--", "src")),
        }
    except (OSError, subprocess.SubprocessError):
        return None


def loadavg() -> list[float] | None:
    """1/5/15-minute load averages: a busy machine makes timings noisy."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


def results_path(name: str, info: DeviceInfo, suffix: str, out_dir: Path | None = None) -> Path:
    out_dir = RESULTS_DIR if out_dir is None else out_dir
    return out_dir / f"{name}-{info.slug}{suffix}"


def _json_default(obj: Any) -> Any:
    if isinstance(obj, torch.Tensor):
        return obj.tolist()
    if isinstance(obj, (Path, torch.device, torch.dtype)):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj)!r}")


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, default=_json_default, allow_nan=True)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def new_figure(ncols: int, *, width: float = 6.0, height: float = 4.5) -> tuple[Any, Any]:
    """(fig, axes list) with the Agg backend, one panel per column."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, list(axes[0])


def save_figure(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def fmt_bytes_mib(n: int | None) -> str:
    return "n/a" if n is None else f"{n / MiB:.1f}"
