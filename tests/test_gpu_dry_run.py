"""bench/gpu/run.sh, the one command for a lent GPU machine, dry-run on the CPU.

A GPU is lent rarely and briefly, so the command must work the first time: ``TT_GPU_DRY_RUN=1``
takes every step of it (the CUDA tests, every benchmark, the summary table, the packed results)
on the CPU with tiny sizes and the Python running this test instead of the carried wheels. See
bench/README.md, "The GPU run".
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ["bleu-cpu-1t", "bpe-cpu-1t", "beam-cpu-1t", "lmbr-quick-cpu-1t", "corpus-cpu",
              "metrics-quick-cpu-1t"]  # fmt: skip
STEPS = ["environment", "cuda-tests", "device-tests"] + [f"bench-{n}" for n in
         ("bleu", "bpe", "beam", "lmbr", "corpus", "metrics")]  # fmt: skip


def test_gpu_run_script_goes_through_every_step_on_the_cpu(tmp_path: Path) -> None:
    env = {**os.environ, "TT_GPU_DRY_RUN": "1", "PYTHON": sys.executable, "OUT": str(tmp_path)}
    done = subprocess.run(
        ["bash", str(ROOT / "bench" / "gpu" / "run.sh")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # Few files at the top of $OUT: the device tool brings back at most 8.
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "gpu-run.tar.gz", "pytest.log", "summary.txt"
    ]  # fmt: skip

    summary = (tmp_path / "summary.txt").read_text(encoding="utf-8")
    assert f"{len(STEPS)} of {len(STEPS)} steps ok" in summary, summary
    rows = {line.split(" | ")[0].strip("| "): line for line in summary.splitlines()}
    for step in STEPS:
        assert "| ok |" in rows[step], summary
    for step in STEPS[1:]:  # every test and benchmark step has a headline from its output
        assert "no result file" not in rows[step] and "unreadable" not in rows[step], summary

    pytest_log = (tmp_path / "pytest.log").read_text(encoding="utf-8")
    assert "needs a CUDA device" in pytest_log  # the CUDA tests were collected, then skipped

    with tarfile.open(tmp_path / "gpu-run.tar.gz") as archive:
        members = {Path(m.name).name: m for m in archive.getmembers() if m.isfile()}
        for stem in BENCHMARKS:
            payload = json.load(archive.extractfile(members[f"{stem}.json"]))  # type: ignore[arg-type]
            assert payload, stem
        for step in STEPS:
            assert f"{step}.log" in members
        if importlib.util.find_spec("matplotlib") is not None:  # the bench extra; else no PNG
            assert {f"{stem}.png" for stem in BENCHMARKS[:4]} <= members.keys()
