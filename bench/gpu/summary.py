#!/usr/bin/env python
"""The one table bench/gpu/run.sh prints last: each step's outcome and the headline numbers.

Exits 1 when a step was not ok (failed or ran out of time), so that run.sh does too.

Reads ``steps.tsv`` (order, name, status, seconds; written by run.sh) and the result files in the
folder. A number that is missing (a step failed or ran out of time before its point) is shown
as ``-``, and the table is still printed.

Usage::

    python bench/gpu/summary.py FOLDER [--wall SECONDS] [--mode full|quick|dry]
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Headline = Callable[[dict[str, Any]], str]


def _largest(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], Any]) -> Any:
    return max(rows, key=key) if rows else None


def bleu(payload: dict[str, Any]) -> str:
    """Ours against NLTK (and rxlm) at the largest batch x length that ran."""
    ok = [r for r in payload["results"] if r["status"] == "ok"]
    top = _largest(ok, lambda r: (r["batch"] * r["seq_len"], r["batch"]))
    if top is None:
        return "no point ran"
    at = {r["impl"]: r for r in ok if (r["batch"], r["seq_len"]) == (top["batch"], top["seq_len"])}
    ours = at.get("ours-nltk") or at.get("ours-sacrebleu") or {}
    rxlm = at.get("rxlm")
    vs_rxlm = f", {rxlm['median_s'] / ours['median_s']:.1f}x rxlm" if rxlm and ours else ""
    speedup = ours.get("speedup_vs_nltk")
    shown = f"{speedup:.3g}x NLTK" if speedup else "-"
    return f"{top['batch']}x{top['seq_len']}: ours {shown}{vs_rxlm}"


def bpe(payload: dict[str, Any]) -> str:
    """MB/s at the largest point: tiktoken, quicktok, our tensor engine and flat default."""
    rows = payload["rows"]
    top = _largest(rows, lambda r: (r["bytes"], r["encoding"]))
    if top is None:
        return "no point ran"
    impls = top["impls"]
    keys = ("tiktoken", "quicktok", "ours_flat", "ours_triton", "ours_tensor", "ours_host_copied")
    cells = [f"{k} {impls[k]['mb_per_s']:.1f}" for k in keys if "mb_per_s" in impls.get(k, {})]
    # Byte mode (BlockBPE's split) is not tiktoken's tokenization: not counted.
    exact = all(
        v.get("exact_rows") == v.get("rows")
        for key, v in impls.items()
        if "rows" in v and key != "ours_bytes"
    )
    label = f"{top['encoding']} {top['batch']}x{top['size']} MB/s: "
    return label + ", ".join(cells) + ("" if exact else "; NOT all rows identical")


def beam(payload: dict[str, Any]) -> str:
    """Speed-up over HF generate at the largest batch, per beam size; parity."""
    rows = [r for r in payload["hf"].get("results", []) if r.get("status") == "ok"]
    if not rows:
        return "no HF point ran"
    batch = max(r["batch"] for r in rows)
    cells = [f"K={r['beams']} {r['speedup']:.2f}x" for r in rows if r["batch"] == batch]
    same = all(r["parity"]["identical"] for r in rows)
    return f"B={batch} vs HF: " + ", ".join(cells) + ("; identical" if same else "; MISMATCH")


def lmbr(payload: dict[str, Any]) -> str:
    """Posteriors time at the largest n-best, LMBR decoding overhead, MBR against sacrebleu."""
    parts = payload["parts"]
    cells = []
    if parts.get("posteriors"):
        row = parts["posteriors"][-1]
        cells.append(f"posteriors {row['B']}x{row['M']} {row['posteriors_ms']:.2f} ms")
    for row in parts.get("decode", []):
        cells.append(f"overhead {row['B']}x{row['K']} {row['overhead_pct']:+.1f}%")
    if parts.get("mbr"):
        row = parts["mbr"][-1]
        ratio = row["sacrebleu_ms"] / row["ours_ms"]
        cells.append(f"MBR {row['B']}x{row['N']} {ratio:.0f}x sacrebleu")
    return ", ".join(cells) or "no part ran"


def corpus(payload: dict[str, Any]) -> str:
    """MB/s of the tokenize command against the baseline, shards identical."""
    cells = [
        f"{r['encoding']} W={r['workers']} {r['ours']['mb_per_s']:.1f} vs "
        f"{r['baseline']['mb_per_s']:.1f} MB/s" + ("" if r["identical"] else " NOT identical")
        for r in payload["rows"]
    ]
    return ", ".join(cells) or "no point ran"


def metrics(payload: dict[str, Any]) -> str:
    """Each part's speed-up of tensortext over its first baseline, and the largest difference."""
    cells = []
    for row in payload["rows"]:
        if row.get("status") == "ok" and row["impl"].startswith("tensortext") and "speedup" in row:
            what = row.get("metric") or row.get("input") or ""
            diff = row["max_abs_diff"]
            cells.append(f"{row['part']} {what} {row['speedup']:.1f}x (diff {diff:.0e})")
    return ", ".join(cells) or "no part ran"


HEADLINES: dict[str, tuple[str, Headline]] = {
    "bench-bleu": ("bleu-*.json", bleu),
    "bench-bpe": ("bpe-*.json", bpe),
    "bench-beam": ("beam-*.json", beam),
    "bench-lmbr": ("lmbr-*.json", lmbr),
    "bench-corpus": ("corpus-*.json", corpus),
    "bench-metrics": ("metrics-*.json", metrics),
}


def pytest_line(log: Path) -> str:
    """pytest's closing line (``N passed, M skipped in S s``)."""
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    closing = [line for line in lines if " in " in line and ("passed" in line or "error" in line
               or "failed" in line or "skipped" in line or "deselected" in line)]  # fmt: skip
    return closing[-1].strip("= ") if closing else "no pytest summary line"


def environment_line(log: Path) -> str:
    """torch and CUDA versions, the device, whether the C extension loaded (run.sh's check)."""
    lines = log.read_text(errors="replace").splitlines() if log.is_file() else []
    cells = [line for line in lines if line.startswith(("torch ", "device "))]
    cells += [line[line.index("C encoder") :] for line in lines if "C encoder" in line]
    return "; ".join(cells)


def headline(folder: Path, name: str) -> str:
    if name == "environment":
        return environment_line(folder / "environment.log")
    if name in ("cuda-tests", "device-tests"):
        return pytest_line(folder / f"{name}.log")
    if name not in HEADLINES:
        return ""
    pattern, make = HEADLINES[name]
    files = sorted(folder.glob(pattern))
    if not files:
        return "no result file"
    try:
        return make(json.loads(files[0].read_text(encoding="utf-8")))
    except (KeyError, TypeError, ValueError, ZeroDivisionError) as error:
        return f"unreadable result: {type(error).__name__}: {error}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--wall", type=float, default=None, help="seconds the whole run took")
    parser.add_argument("--mode", default="full")
    args = parser.parse_args(argv)
    steps_file = args.folder / "steps.tsv"
    lines = [line.split("\t") for line in steps_file.read_text().splitlines() if line.strip()]
    # (order, name, status, seconds); the dry run's steps finish in any order
    steps = [row[1:] for row in sorted(lines, key=lambda row: int(row[0]))]
    print(f"\n## GPU run summary ({args.mode})\n")
    print("| step | status | s | headline |")
    print("|---|---|---:|---|")
    for name, status, seconds in steps:
        print(f"| {name} | {status} | {seconds} | {headline(args.folder, name)} |")
    failed = [name for name, status, _ in steps if status != "ok"]
    wall = f" in {args.wall:.0f} s" if args.wall is not None else ""
    print(f"\n{len(steps) - len(failed)} of {len(steps)} steps ok{wall}"
          + (f"; not ok: {', '.join(failed)}" if failed else ""))  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
