#!/usr/bin/env python
"""Data preparation end to end: ``tensortext tokenize`` against a nanoGPT-style script, from a
JSON-lines corpus to token shards.

The baseline (``corpus_baseline.py``) is what nanoGPT's ``fineweb.py`` does, on tiktoken built
offline from the same files: a ``multiprocessing.Pool`` of ``W`` processes runs
``encode_ordinary`` on each document (chunks of 16, in order), the end-of-text token follows
each document, and the tokens fill shards of ``--shard-tokens`` written with ``np.save``.
Ours is the command a user runs, ``tensortext tokenize -e NAME -i corpus.jsonl -o PREFIX
--format npy --append-eot --ordinary --workers W``, in a fresh process (start-up, reading and
writing included, as for the baseline). Both write every shard; the shards are checked
byte-identical.

For each (encoding, ``W``) it reports MB/s of input text (median of ``--repeat`` runs), tokens/s,
and the peak memory of the whole process tree (proportional set size of the parent and its
workers, sampled from ``/proc`` every 0.25 s). ``--mb`` sets the corpus size (documents of about
20 paragraphs of bench_bpe's corpus: docs, Python source, 16 scripts).

With ``--ray 1 2``, each encoding is also tokenized by ``tensortext.integrations.ray.Tokenize``
in 1, 2, ... Ray actors on a local cluster of as many CPUs (JSON lines to token arrays; the
token count is checked against the shards').

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_corpus.py                  # 64 MB, W = 1 and all cores
    PYTHONPATH=src python bench/bench_corpus.py --mb 200 --workers 2 --repeat 1   # memory

Writes bench/results/corpus-cpu.json (with ``--device cuda``: corpus-<gpu>.json).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

import common

from bench_bpe import corpus_paragraphs, tiktoken_reference

ROOT = common.BENCH_DIR.parent
CORES = os.cpu_count() or 1


def write_corpus(path: Path, megabytes: float) -> int:
    """A JSON-lines file of documents (about 20 paragraphs each); returns the text bytes."""
    paragraphs = corpus_paragraphs()
    total, start = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while total < megabytes * 1e6:
            doc = "".join(paragraphs[start : start + 20])
            start = (start + 20) % (len(paragraphs) - 20)
            out.write(json.dumps({"text": doc}) + "\n")
            total += len(doc.encode("utf-8"))
    return total


def write_spec(name: str, path: Path) -> Path:
    """tiktoken.Encoding's arguments for ``name`` (tests/oracles/bpe.py's offline build)."""
    reference = tiktoken_reference(name)
    spec = {"name": name, "pat_str": reference._pat_str,
            "mergeable_ranks": reference._mergeable_ranks,
            "special_tokens": reference._special_tokens}  # fmt: skip
    path.write_bytes(pickle.dumps(spec))
    return path


def ours_command(
    name: str, corpus: Path, prefix: Path, workers: int, shard_tokens: int, device: str
) -> list[str]:
    return [
        sys.executable, "-m", "tensortext.cli", "tokenize", "-e", name, "-i", str(corpus),
        "-o", str(prefix), "--format", "npy", "--append-eot", "--ordinary", "-q",
        "--workers", str(workers), "--shard-tokens", str(shard_tokens), "--device", device,
    ]  # fmt: skip


def tree_pss_kib(pid: int) -> int:
    """Proportional set size of ``pid`` and all its descendants (KiB, from /proc): pages that
    forked workers share with their parent count once, split among them, not once per process
    as resident sizes would."""
    total, stack = 0, [pid]
    while stack:
        current = stack.pop()
        try:
            rollup = Path(f"/proc/{current}/smaps_rollup").read_text()
            total += next(int(line.split()[1]) for line in rollup.splitlines()
                          if line.startswith("Pss:"))  # fmt: skip
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration, ValueError):
            continue
    return total


def python_path(*folders: Path) -> str:
    """``folders`` ahead of the caller's PYTHONPATH (which may hold the installed baselines)."""
    inherited = os.environ.get("PYTHONPATH", "")
    return os.pathsep.join([*map(str, folders), *([inherited] if inherited else [])])


def run_measured(command: list[str]) -> tuple[float, int]:
    """Seconds and peak tree PSS (KiB) of a command."""
    env = {**os.environ, "PYTHONPATH": python_path(ROOT / "src", common.BENCH_DIR)}
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=ROOT)
    peak = 0

    def sample() -> None:
        nonlocal peak
        while process.poll() is None:
            peak = max(peak, tree_pss_kib(process.pid))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    status = process.wait()
    seconds = time.perf_counter() - started
    sampler.join()
    if status != 0:
        raise RuntimeError(f"{command[:6]} exited with {status}")
    return seconds, peak


def baseline_command(
    spec: Path, corpus: Path, prefix: Path, workers: int, shard_tokens: int
) -> list[str]:
    script = common.BENCH_DIR / "corpus_baseline.py"
    return [sys.executable, str(script), str(spec), str(corpus), str(prefix), str(workers),
            str(shard_tokens)]  # fmt: skip


def same_shards(first: Path, second: Path) -> bool:
    names = sorted(path.name for path in first.glob("*.npy"))
    return names == sorted(path.name for path in second.glob("*.npy")) and all(
        (first / name).read_bytes() == (second / name).read_bytes() for name in names
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=64.0, help="corpus size (default 64)")
    parser.add_argument(
        "--device", choices=["cpu", "cuda"], default="cpu",
        help="tensortext tokenize --device (default cpu: the C host encoder)",
    )  # fmt: skip
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    parser.add_argument("--workers", type=int, nargs="+", default=sorted({1, CORES}))
    parser.add_argument("--shard-tokens", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=common.BENCH_DIR / "results")
    parser.add_argument("--name", default="corpus")
    parser.add_argument("--no-plot", action="store_true", help="skip the PNG")
    parser.add_argument("--report", type=Path, help="print the table of a result file")
    parser.add_argument("--ray", type=int, nargs="*", default=[],
                        help="also Tokenize through Ray Data with these actor counts")  # fmt: skip
    return parser.parse_args(argv)


def measure_point(
    name: str, workers: int, corpus: Path, folder: Path, args: argparse.Namespace
) -> dict[str, Any]:
    """Both commands ``--repeat`` times on one (encoding, workers) point; shards compared."""
    spec = write_spec(name, folder / "spec.pickle")
    commands = {
        "baseline": lambda out: baseline_command(spec, corpus, out, workers, args.shard_tokens),
        "ours": lambda out: ours_command(
            name, corpus, out, workers, args.shard_tokens, args.device
        ),
    }
    nbytes = args.corpus_bytes
    row: dict[str, Any] = {"encoding": name, "workers": workers}
    for key, make in commands.items():
        out = folder / key
        out.mkdir(exist_ok=True)
        runs = []
        for _ in range(args.repeat):
            for old in out.glob("*"):
                old.unlink()
            runs.append(run_measured(make(out / "shard")))
        seconds = statistics.median(s for s, _ in runs)
        row[key] = {
            "seconds": seconds,
            "mb_per_s": nbytes / seconds / 1e6,
            "peak_pss_mib": max(peak for _, peak in runs) / 1024,
            "samples_s": [s for s, _ in runs],
        }
    row["tokens"] = sum(np.load(p, mmap_mode="r").size for p in (folder / "ours").glob("*.npy"))
    row["identical"] = same_shards(folder / "baseline", folder / "ours")
    return row


def print_row(row: dict[str, Any]) -> None:
    cells = [
        f"{key} {row[key]['mb_per_s']:.2f} MB/s ({row[key]['peak_pss_mib']:.0f} MiB)"
        for key in ("baseline", "ours")
    ]
    rate = row["tokens"] / row["ours"]["seconds"]
    print(f"{row['encoding']:12s} W={row['workers']}: " + " | ".join(cells)
          + f" | ours {rate:,.0f} tokens/s | identical {row['identical']}", flush=True)  # fmt: skip


RAY_RUN = """
import json, sys, time
import ray, ray.data
from tensortext.integrations.ray import Tokenize
name, corpus, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
ray.init(num_cpus=workers + 1, include_dashboard=False, log_to_driver=False)  # +1: the reads
ray.data.DataContext.get_current().enable_progress_bars = False
start = time.perf_counter()
ds = ray.data.read_json(corpus).map_batches(
    Tokenize, concurrency=workers, batch_size=256,
    fn_constructor_kwargs={"encoding": name, "append_eot": True, "disallowed_special": ()})
tokens = sum(len(row) for batch in ds.iter_batches(batch_size=None, batch_format="numpy")
             for row in batch["input_ids"])
print(json.dumps({"seconds": time.perf_counter() - start, "tokens": tokens}))
"""


def ray_point(name: str, workers: int, corpus: Path, nbytes: int) -> dict[str, Any]:
    """``Tokenize`` in ``workers`` Ray actors on a local cluster of ``workers + 1`` CPUs (one
    for the reading tasks: with as many CPUs as actors, the actors take them all), from the
    JSON-lines file to token arrays (``ray.init`` not timed)."""
    env = {**os.environ, "PYTHONPATH": python_path(ROOT / "src")}
    command = [sys.executable, "-c", RAY_RUN, name, str(corpus), str(workers)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"encoding": name, "workers": workers, **result,
            "mb_per_s": nbytes / result["seconds"] / 1e6}  # fmt: skip


def markdown(rows: list[dict[str, Any]]) -> str:
    header = ["encoding", "workers", "baseline MB/s", "ours MB/s", "ours tokens/s",
              "baseline peak MiB", "ours peak MiB", "identical"]  # fmt: skip
    cells = [
        [row["encoding"], str(row["workers"]),
         f"{row['baseline']['mb_per_s']:.2f}", f"{row['ours']['mb_per_s']:.2f}",
         f"{row['tokens'] / row['ours']['seconds']:,.0f}",
         f"{row['baseline']['peak_pss_mib']:.0f}", f"{row['ours']['peak_pss_mib']:.0f}",
         "yes" if row["identical"] else "NO"]
        for row in rows
    ]  # fmt: skip
    return common.markdown_table(header, cells, "lrrrrrrl")


def plot(rows: list[dict[str, Any]], title: str, path: Path) -> Path:
    """MB/s and peak memory of both, per (encoding, workers)."""
    fig, (speed, memory) = common.new_figure(2)
    labels = [f"{row['encoding']}\nW={row['workers']}" for row in rows]
    x = np.arange(len(rows))
    for offset, key in ((-0.2, "baseline"), (0.2, "ours")):
        speed.bar(x + offset, [row[key]["mb_per_s"] for row in rows], 0.4, label=key)
        memory.bar(x + offset, [row[key]["peak_pss_mib"] for row in rows], 0.4, label=key)
    for ax, label in ((speed, "MB/s of text, files to shards"), (memory, "peak memory, MiB (PSS)")):
        ax.set_xticks(x, labels)
        ax.set_ylabel(label)
        ax.set_title(title, fontsize=8)
        ax.legend()
    return common.save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report is not None:
        report = common.read_json(args.report)
        print(markdown(report["rows"]))
        if not args.no_plot:
            title = f"tokenize vs nanoGPT-style tiktoken, {report['corpus_bytes'] / 1e6:.0f} MB"
            print(f"wrote {plot(report['rows'], title, args.report.with_suffix('.png'))}")
        return 0
    info = common.device_info(args.device)
    payload: dict[str, Any] = {
        "meta": common.run_metadata(info, ["tiktoken", "numpy"]),
        "host_cores": CORES,
        "device": args.device,
        "rows": [],
    }
    slug = "cpu" if args.device == "cpu" else info.slug  # the tree's threads: not torch's
    path = args.out_dir / f"{args.name}-{slug}.json"
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        corpus = folder / "corpus.jsonl"
        args.corpus_bytes = payload["corpus_bytes"] = write_corpus(corpus, args.mb)
        print(f"{info.name}: {args.corpus_bytes / 1e6:.1f} MB of text, "
              f"{corpus.stat().st_size / 1e6:.1f} MB of JSON lines")  # fmt: skip
        for encoding in args.encodings:
            for workers in args.workers:
                row = measure_point(encoding, workers, corpus, folder, args)
                print_row(row)
                payload["rows"].append(row)
                common.write_json(path, payload)
            for workers in args.ray:
                point = ray_point(encoding, workers, corpus, args.corpus_bytes)
                ours = next((r for r in payload["rows"] if r["encoding"] == encoding), None)
                point["same_token_count"] = ours is not None and ours["tokens"] == point["tokens"]
                print(f"{encoding:12s} Ray, {workers} actors: {point['mb_per_s']:.2f} MB/s, "
                      f"{point['tokens']:,} tokens", flush=True)  # fmt: skip
                payload.setdefault("ray", []).append(point)
                common.write_json(path, payload)
    print(markdown(payload["rows"]))
    print(f"wrote {path}")
    title = f"tokenize vs nanoGPT-style tiktoken, {args.corpus_bytes / 1e6:.0f} MB, {info.name}"
    common.write_plot(args, lambda: plot(payload["rows"], title, path.with_suffix(".png")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
