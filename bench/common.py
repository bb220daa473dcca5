"""The one timing and reporting module of the tensortext benchmarks (every bench_*.py uses it).

* Device: :func:`device_info` (human-readable name, a slug for file names, the host CPU where the
  Python baselines run), :func:`synchronize`, :func:`set_threads`.
* Memory: :class:`PeakMemory` / :func:`peak_extra_memory` (peak *extra* memory of one call),
  :func:`available_memory_bytes`.
* Timing: :func:`time_interleaved` (several callables, round-robin) and :func:`time_fn` (one);
  warm-up calls first, ``torch.cuda.synchronize`` around every call on CUDA, median reported.
* Results: :func:`run_metadata` (versions, git commit, load), :func:`write_json` (atomic),
  :func:`markdown_table`, :func:`new_figure` / :func:`save_figure` (matplotlib, Agg backend).
* Command line: :func:`add_arguments` (the options every script shares) and :func:`start`.

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

import argparse
import contextlib
import ctypes
import ctypes.util
import datetime as _dt
import gc
import importlib.metadata
import importlib.util
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

BENCH_DIR = Path(__file__).resolve().parent
RESULTS_DIR = BENCH_DIR / "results"
MiB = 1024.0 * 1024.0

# Convenience: run from a checkout without PYTHONPATH=src (an installed tensortext comes first).
if importlib.util.find_spec("tensortext") is None and (BENCH_DIR.parent / "src").is_dir():
    sys.path.append(str(BENCH_DIR.parent / "src"))


# --------------------------------------------------------------------------- device


def cpu_model_name() -> str:
    """CPU model from /proc/cpuinfo (falls back to platform.processor())."""
    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def cuda_slug(name: str) -> str:
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
        return DeviceInfo(device, gpu, cuda_slug(gpu), host, threads)
    name = f"{host}, {threads} torch thread{'s' if threads != 1 else ''}"
    return DeviceInfo(device, name, f"cpu-{threads}t", host, threads)


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def synchronize(device: torch.device | str) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def set_threads(threads: int | None) -> None:
    """``torch.set_num_threads`` (and the inter-op pool, if still settable); None: leave as is."""
    if threads is not None:
        torch.set_num_threads(threads)
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(threads)


# --------------------------------------------------------------------------- memory

_LIBC: Any = None


def _malloc_trim() -> None:
    global _LIBC
    if _LIBC is None:
        try:
            _LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        except OSError:
            _LIBC = False
    if _LIBC and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


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
    """Resets ``VmHWM`` to ``VmRSS``; False where /proc/self/clear_refs cannot be written."""
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
        self._ok = False

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

    @property
    def extra_mib(self) -> float | None:
        return None if self.extra_bytes is None else self.extra_bytes / MiB


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


def _timed_call(fn: Callable[[], Any], device: torch.device) -> tuple[float, Any]:
    synchronize(device)
    t0 = time.perf_counter()
    value = fn()
    synchronize(device)
    return time.perf_counter() - t0, value


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
    """Median wall-clock seconds of several callables, timed in round-robin order.

    Each callable first gets its ``warmup`` calls (with ``measure_memory``, the last one, or an
    extra one if ``warmup == 0``, runs under :class:`PeakMemory` on ``memory_device``, default
    ``device``; e.g. "cpu" for a Python baseline in a CUDA run).  Then each of ``repeat`` rounds
    times every callable once; round ``k`` starts at the ``k``-th callable (rotation), so that
    each one follows each other one about equally often: a callable that runs right after one
    that churned through gigabytes (cold caches, fresh pages from the kernel) is measurably
    slower, and a fixed order would always charge that to the same one.  A callable whose last
    call took less than ``rewarm_below_s`` gets one untimed call right before its timed one, so
    fast code is timed warm (as in a loop of its own).  On a machine whose speed drifts (busy
    SMT siblings, thermal limits) interleaving keeps the ratios fair.  Every call is bracketed
    by ``torch.cuda.synchronize`` on CUDA (end-to-end latency, as a caller sees it).  A callable
    whose timed calls used ``budget_s`` seconds (after ``min_repeat`` samples) leaves the rounds;
    one that raises is dropped and its exception returned; the others go on.
    """
    device = torch.device(device)
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
                    _, values[key] = _timed_call(fn, device)
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
                    _timed_call(fns[key], device)
                dt, values[key] = _timed_call(fns[key], device)
            except Exception as exc:
                errors[key] = exc
                active.remove(key)
                del samples[key]
                continue
            samples[key].append(dt)
            spent[key] += dt
            if budget_s is not None and spent[key] >= budget_s and len(samples[key]) >= min_repeat:
                active.remove(key)
    timings = {
        key: Timing(statistics.median(smp), smp, n_warm[key], peaks[key], values[key])
        for key, smp in samples.items()
    }
    return timings, errors


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
    """:func:`time_interleaved` for one callable (no re-warming); its exception propagates."""
    timings, errors = time_interleaved(
        {"fn": fn},
        warmup=warmup,
        repeat=repeat,
        device=device,
        budget_s=budget_s,
        min_repeat=min_repeat,
        measure_memory=measure_memory,
        memory_device=memory_device,
        rewarm_below_s=None,
    )
    if errors:
        raise errors["fn"]
    return timings["fn"]


# --------------------------------------------------------------------------- results


def package_versions(names: Iterable[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


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


def loadavg_1m() -> float | None:
    load = loadavg()
    return load[0] if load else None


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


def error_fields(exc: BaseException) -> dict[str, Any]:
    """Row fields of a point that raised: status, reason and the last frames."""
    return {
        "status": "error",
        "reason": f"{type(exc).__name__}: {exc}",
        "traceback": "".join(traceback.format_exception(exc, limit=-4)),
    }


def skipped_fields(time_limit: float) -> dict[str, Any]:
    return {"status": "skipped", "reason": f"--time-limit {time_limit:g} s reached"}


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
    """Write ``payload`` atomically (a temporary file, then ``os.replace``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(payload, fh, indent=2, default=_json_default, allow_nan=True)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def fmt(x: float | None, spec: str) -> str:
    """``format(x, spec)``, or "-" for None / NaN."""
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str) -> str:
    """A markdown table; ``align`` has one letter per column, ``l`` or ``r``."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "".join("---:|" if a == "r" else "---|" for a in align))
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def new_figure(ncols: int, *, width: float = 6.0, height: float = 4.5) -> tuple[Any, Any]:
    """(fig, axes list) with the Agg backend, one panel per column."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)
    return fig, list(axes[0])


def log2_xticks(ax: Any, xs: Sequence[int]) -> None:
    """A base-2 log x axis labelled exactly at ``xs``."""
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.xaxis.set_minor_locator(NullLocator())


def write_plot(args: argparse.Namespace, draw: Callable[[], Path]) -> None:
    """Draw the PNG unless ``--no-plot``; without matplotlib, say so and go on."""
    if args.no_plot:
        return
    try:
        print(f"wrote {draw()}", flush=True)
    except ImportError as exc:
        print(f"no plot: {exc} (pip install matplotlib)", flush=True)


def save_figure(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- command line


def add_arguments(
    parser: argparse.ArgumentParser,
    name: str,
    *,
    threads_help: str,
    quick_help: str,
    repeat_help: str,
    repeat: int | None = None,
    report: bool = True,
) -> None:
    """The options every benchmark has: device, threads, quick, repeat, time limit, output."""
    parser.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default=default_device(),
        help="device for tensortext (default: cuda if available)",
    )
    parser.add_argument("--threads", type=int, default=None, help=threads_help)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--repeat", type=int, default=repeat, help=repeat_help)
    parser.add_argument(
        "--time-limit",
        type=float,
        default=0.0,
        help="start no new point after this many seconds; the rest are recorded as skipped "
        "(0: no limit). The JSON is rewritten after every point.",
    )
    parser.add_argument(
        "--name", default=None, help=f"result file stem (default: {name}, {name}-quick)"
    )
    parser.add_argument("--out-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--no-plot", action="store_true", help="write no PNG")
    if report:
        parser.add_argument(
            "--report",
            type=Path,
            default=None,
            metavar="JSON",
            help="print the markdown tables (as in bench/README.md) of a result file, run nothing",
        )
    parser.set_defaults(bench_name=name)


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """Parse, refuse ``--device cuda`` without CUDA, and fill the result file stem."""
    args = parser.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        parser.error("--device cuda requested but torch.cuda.is_available() is False")
    if args.name is None:
        args.name = args.bench_name + ("-quick" if args.quick else "")
    return args


@dataclass
class Run:
    """One benchmark run: its device, output files and clock."""

    info: DeviceInfo
    json_path: Path
    png_path: Path
    time_limit: float = 0.0
    started: float = field(default_factory=time.perf_counter)

    @property
    def device(self) -> torch.device:
        return self.info.device

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def out_of_time(self) -> bool:
        return bool(self.time_limit) and self.elapsed() > self.time_limit


def start(args: argparse.Namespace, *, cpu_threads: int | None) -> Run:
    """Set the thread count (``--threads``, else ``cpu_threads`` on CPU), print the device."""
    dev = torch.device(args.device)
    default = cpu_threads if dev.type == "cpu" else None
    set_threads(args.threads if args.threads is not None else default)
    info = device_info(dev)
    print(f"device: {info.name}   slug: {info.slug}   torch {torch.__version__}", flush=True)
    if dev.type == "cuda":
        print(f"host CPU (Python baselines): {info.host_cpu}", flush=True)
    return Run(
        info,
        results_path(args.name, info, ".json", args.out_dir),
        results_path(args.name, info, ".png", args.out_dir),
        args.time_limit,
    )
