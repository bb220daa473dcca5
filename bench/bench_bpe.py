#!/usr/bin/env python
"""Batched BPE encoding: tensortext against tiktoken, HF tokenizers, bpe-openai and quicktok.

Every implementation encodes the same batches of real text, ``B`` texts of ``S`` UTF-8 bytes
each, cut at codepoint boundaries, of two kinds reported apart (``--text``): *mixed* (English
prose and docs, Python source, and the multilingual sample bundled for the demo: CJK, Indic
scripts with combining marks, Arabic, Cyrillic, emoji with ZWJ, digits, whitespace runs) and
*english* (the same docs and source without the multilingual sample or any non-ASCII
paragraph), where an ASCII fast path helps. For each (encoding, B, S) point it reports MB/s
(median of ``--repeat`` timed calls after warm-up; CUDA synchronised) and the fraction of rows
identical to tiktoken's IDs. Byte mode (``pretokenize="bytes"``, BlockBPE's method) also gets
the paper's Levenshtein similarity ``1 - lev(ours, tiktoken) / max(len)``, averaged over up to
64 rows.

Every CPU encoder runs on the same number of threads, every host core or ``--threads``:
tiktoken ``encode_ordinary_batch(num_threads=...)``, HF ``Tokenizer.encode_batch`` (its rayon
pool, with ``RAYON_NUM_THREADS`` set to that number before it starts; the tokenizer.json is
transformers' ``TikTokenConverter`` output for the same ranks),
bpe-openai ``encode_ordinary_batch(num_threads=...)`` and quicktok ``encode_batch(threads=...)``
(its own pool, on as many threads). Ours:

* ``ours_host``: ``encode_ordinary_batch(num_threads=...)``, tiktoken's call (the C host
  encoder, on that many threads from 64K characters per call), lists as tiktoken returns;
  ``ours_numpy``: ``encode_batch_to_numpy``, the same encoder to flat uint32 arrays, as
  quicktok returns them; ``ours_python``: the same
  call on the pure-Python host encoder (the fallback without a C compiler), one process,
  its piece cache emptied at each point and warm after the warm-up call;
* ``ours_flat``: ``encode_batch_to_flat`` on ``--device``, the tensor API's default (on a
  CPU the C host encoder on torch's threads; on CUDA the tensor engine); on CUDA also
  ``ours_host_copied``: the C host encoder on every host core, its flat IDs copied to the GPU;
* ``ours_tensor``: ``encode_batch_to_tensor(merge_backend="torch")``, the tensor engine, on
  ``--device`` (CPU: torch threads = cores unless ``--threads``); ``ours_bytes``: the same
  with BlockBPE's byte split; on CUDA ``ours_triton``: the tensor engine with the Triton merge
  kernel (``merge_backend="triton"``).

Then, unless ``--quick``: throughput against document length (``B`` texts of ``S`` bytes,
about 1 MB per point), the worst cases (long single pieces), the warm
``encode("hello world")`` and ``get_encoding`` + first ``encode`` in a fresh process.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_bpe.py                 # CUDA if available
    PYTHONPATH=src python bench/bench_bpe.py --device cpu
    PYTHONPATH=src python bench/bench_bpe.py --quick         # smoke test

Writes bench/results/bpe-<device-slug>.json and .png.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import itertools
import os
import random
import string
import subprocess
import sys
import timeit
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import torch

import common

from tensortext.bpe import Encoding, get_encoding
from tensortext.bpe.native import native_available
from tensortext.bpe.registry import ENCODINGS, mergeable_ranks, vocabulary_file
from tensortext.padded import Flat, FlatArrays, Padded

CORES = os.cpu_count() or 1
ROOT = common.BENCH_DIR.parent
MULTILINGUAL = resources.files("tensortext") / "data/demo/multilingual.txt"


def tests_on_path() -> None:
    """Put tests/ on ``sys.path``: its oracles are the benchmark's references too."""
    tests = str(ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def tiktoken_reference(name: str) -> Any:
    """The test suite's tiktoken oracle (tests/oracles/bpe.py): tests and benchmark share it."""
    tests_on_path()
    from oracles.bpe import tiktoken_reference

    return tiktoken_reference(name)


CORPUS_BYTES = 48_000_000
"""Enough distinct text that no timed batch repeats another (7 calls of 1024 x 4 KB)."""


TEXTS = ("mixed", "english")


def corpus_paragraphs(kind: str = "mixed") -> list[str]:
    """Paragraphs of real text: docs, Python source (ours, torch's, then the standard library's
    up to :data:`CORPUS_BYTES`) and, for ``kind="mixed"``, the multilingual sample; ``"english"``
    keeps the ASCII paragraphs of the docs and source only."""
    sources: list[Any] = [ROOT / "README.md", common.BENCH_DIR / "README.md", MULTILINGUAL]
    sources += sorted((ROOT / "src" / "tensortext").rglob("*.py"))
    sources += sorted(Path(torch.__file__).parent.glob("*.py"))[:30]
    sources += sorted(Path(os.__file__).parent.rglob("*.py"))
    paragraphs: list[str] = []
    total = 0
    for path in sources:
        if total > CORPUS_BYTES:
            break
        text = path.read_bytes().decode("utf-8", errors="replace")
        total += len(text)
        paragraphs += [p + "\n\n" for p in text.split("\n\n") if p.strip()]
    if kind == "english":
        paragraphs = [p for p in paragraphs if p.isascii()]
        random.Random(0).shuffle(paragraphs)
        return paragraphs
    multilingual = MULTILINGUAL.read_text(encoding="utf-8")
    paragraphs += [line + "\n" for line in multilingual.splitlines()] * 20  # ~1% of the bytes
    random.Random(0).shuffle(paragraphs)
    return paragraphs


def make_batch(stream: bytes, batch: int, size: int, offset: int) -> list[str]:
    """``batch`` texts of about ``size`` bytes from ``stream``, cut at codepoint boundaries."""
    texts = []
    for index in range(batch):
        start = (offset + index * size) % max(len(stream) - size - 4, 1)
        while start and stream[start] & 0xC0 == 0x80:
            start += 1
        end = start + size
        while end < len(stream) and stream[end] & 0xC0 == 0x80:
            end -= 1
        texts.append(stream[start:end].decode("utf-8"))
    return texts


def levenshtein(a: list[int], b: list[int]) -> int:
    """Edit distance, one numpy row per token of ``a`` (insertions via a running minimum)."""
    if not a or not b:
        return max(len(a), len(b))
    row = np.arange(len(b) + 1)
    b_arr = np.asarray(b)
    cols = np.arange(len(b) + 1)
    for i, token in enumerate(a, 1):
        diag = row[:-1] + (b_arr != token)
        new = np.empty_like(row)
        new[0] = i
        new[1:] = np.minimum(row[1:] + 1, diag)
        row = np.minimum.accumulate(new - cols) + cols
    return int(row[-1])


def hf_tokenizer(name: str) -> Any:
    """HF ``tokenizers.Tokenizer`` from transformers' TikTokenConverter, on the same ranks."""
    from transformers.convert_slow_tokenizer import TikTokenConverter

    path = Path("/tmp") / f"tensortext-bench-{name}.tiktoken"
    if not path.exists():
        path.write_bytes(gzip.decompress(vocabulary_file(name).read_bytes()))
    return TikTokenConverter(vocab_file=str(path), pattern=ENCODINGS[name].pat_str).converted()


def baselines(
    name: str, skip: set[str], threads: int
) -> tuple[dict[str, Callable[[list[str]], list[list[int]]]], dict[str, str]]:
    """Encoders ``texts -> IDs`` (the call we time; :func:`as_lists` reads what they return),
    and the baselines that are unavailable, with why."""
    fns: dict[str, Callable[[list[str]], list[list[int]]]] = {}
    missing: dict[str, str] = {}
    ref = tiktoken_reference(name)
    fns["tiktoken"] = lambda texts: ref.encode_ordinary_batch(texts, num_threads=threads)

    def load_hf() -> Callable[[list[str]], Any]:
        tok = hf_tokenizer(name)
        return lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]

    def load_bpe_openai() -> Callable[[list[str]], Any]:
        import bpe_openai

        enc = bpe_openai.get_encoding(name)
        return lambda texts: enc.encode_ordinary_batch(texts, num_threads=threads)

    def load_quicktok() -> Callable[[list[str]], Any]:
        import quicktok

        tok = quicktok.get_encoding(name)
        # (flat tokens, offsets); its own pool, threads=0 would be every core
        return lambda texts: tok.encode_batch(texts, threads=threads)

    loaders: dict[str, Callable[[], Callable[[list[str]], Any]]] = {
        "hf_tokenizers": load_hf,
        "bpe_openai": load_bpe_openai,
        "quicktok": load_quicktok,
    }
    for key, load in loaders.items():
        if key in skip:
            continue
        try:
            fns[key] = load()
        except Exception as error:
            missing[key] = f"{type(error).__name__}: {error}"
    return fns, missing


def as_lists(value: Any) -> list[list[int]]:
    if isinstance(value, Flat):  # ours: Flat(ids [T], lengths [B])
        return value.tolist()
    if isinstance(value, FlatArrays):  # ours: numpy (ids [T], lengths [B])
        ends = np.cumsum(value.lengths).tolist()
        ids = value.ids.tolist()
        return [ids[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
    if isinstance(value, tuple) and len(value) == 2 and hasattr(value[0], "dtype"):
        if isinstance(value[0], torch.Tensor):  # ours: Padded(ids [B, L], lengths [B])
            return Padded(*value).tolist()
        flat, offsets = value  # quicktok: flat tokens + offsets
        flat, offsets = flat.tolist(), list(offsets)
        return [flat[a:b] for a, b in itertools.pairwise(offsets)]
    return [list(row) for row in value]


def run_point(
    name: str,
    batch: int,
    size: int,
    text: str,
    stream: bytes,
    fns: dict[str, Callable[[list[str]], Any]],
    args: argparse.Namespace,
    dev: torch.device,
) -> dict[str, Any]:
    """MB/s of each encoder on ``batch`` texts of ``size`` bytes of ``stream`` (``text``: its
    kind, mixed or english). Every call gets a batch it has
    not seen (the same sequence for every encoder), as in a pass over a corpus: the host
    encoder's piece cache then helps only as much as real text repeats itself."""
    calls = 2 + args.repeat  # warm-up and timed calls
    start = batch * 7919 + size
    batches = [make_batch(stream, batch, size, start + k * batch * size) for k in range(calls)]
    nbytes = sum(len(t.encode("utf-8")) for texts in batches for t in texts) / calls
    row: dict[str, Any] = {
        "encoding": name,
        "text": text,
        "batch": batch,
        "size": size,
        "bytes": nbytes,
        "impls": {},
    }
    if nbytes > args.bytes_mode_max_mb * 1e6:  # BlockBPE's split takes ~400 passes per text
        fns = {key: fn for key, fn in fns.items() if key != "ours_bytes"}
        row["skipped"] = {"ours_bytes": f"batch over --bytes-mode-max-mb {args.bytes_mode_max_mb}"}
    for fn in fns.values():
        getattr(fn, "reset", lambda: None)()
    last: dict[str, list[str]] = {}

    def feeding(key: str, fn: Callable[[list[str]], Any]) -> Callable[[], Any]:
        cycle = itertools.cycle(batches)

        def call() -> Any:
            last[key] = texts = next(cycle)
            return fn(texts)

        return call

    timed = {key: feeding(key, fn) for key, fn in fns.items()}
    timings, errors = common.time_interleaved(
        timed, warmup=1, repeat=args.repeat, device=dev, budget_s=args.budget
    )
    reference = tiktoken_reference(name)
    for key in fns:
        if key in errors:
            row["impls"][key] = {"error": repr(errors[key])}
            continue
        out = as_lists(timings[key].value)
        expected = reference.encode_ordinary_batch(last[key], num_threads=1)
        same = sum(a == b for a, b in zip(out, expected, strict=True))
        entry = {
            "median_s": timings[key].median_s,
            "mb_per_s": nbytes / timings[key].median_s / 1e6,
            "exact_rows": same,
            "rows": batch,
            "samples_s": timings[key].samples_s,
        }
        if key == "ours_bytes":
            sample = list(range(min(batch, 64)))
            sims = [
                1 - levenshtein(out[i], expected[i]) / max(len(out[i]), len(expected[i]), 1)
                for i in sample
            ]
            entry["levenshtein_similarity"] = float(np.mean(sims))
        row["impls"][key] = entry
    return row


def print_row(row: dict[str, Any]) -> None:
    cells = []
    for key, entry in row["impls"].items():
        if "error" in entry:
            cells.append(f"{key}=ERR")
            continue
        exact = (
            ""
            if entry["exact_rows"] == entry["rows"]
            else f" ({entry['exact_rows']}/{entry['rows']} exact)"
        )
        sim = (
            f" sim {entry['levenshtein_similarity']:.3f}"
            if "levenshtein_similarity" in entry
            else ""
        )
        cells.append(f"{key} {entry['mb_per_s']:.2f}{exact}{sim}")
    print(
        f"{row['encoding']:12s} {row.get('text', 'mixed'):7s} B={row['batch']:5d} "
        f"S={row['size']:5d}  MB/s: " + " | ".join(cells),
        flush=True,
    )


def markdown(rows: list[dict[str, Any]]) -> str:
    keys = list(dict.fromkeys(k for row in rows for k in row["impls"]))
    lines = [
        "| encoding | text | B x S | " + " | ".join(keys) + " |",
        "|---|---|---|" + "---:|" * len(keys),
    ]
    for row in rows:
        cells = []
        for key in keys:
            entry = row["impls"].get(key)
            if entry is None or "error" in entry:
                cells.append("-")
                continue
            mark = (
                ""
                if entry["exact_rows"] == entry["rows"]
                else f" ({entry['exact_rows']}/{entry['rows']})"
            )
            cells.append(f"{entry['mb_per_s']:.2f}{mark}")
        lines.append(
            f"| {row['encoding']} | {row.get('text', 'mixed')} | {row['batch']} x {row['size']} | "
            + " | ".join(cells)
            + " |"
        )
    return "\n".join(lines)


def markdown_extras(payload: dict[str, Any]) -> str:
    """The worst cases and small inputs as markdown tables (seconds; microseconds)."""
    lines = ["| encoding | worst case | tiktoken s | ours_host s | ours_python s | ours_tensor s "
             "| identical |", "|---|---|---:|---:|---:|---:|---|"]  # fmt: skip
    for row in payload.get("worst_cases", []):
        seconds = row["seconds"]
        cells = [f"{v:.3f}" if isinstance(v, float) else "-" for v in seconds.values()]
        same = "yes" if all(row["identical"].values()) else f"NO {row['identical']}"
        lines.append(f"| {row['encoding']} | {row['case']} | " + " | ".join(cells) + f" | {same} |")
    lines += ["", "| encoding | warm encode('hello world') us, tiktoken / ours | get_encoding + "
              "first encode s, tiktoken / ours |", "|---|---:|---:|"]  # fmt: skip
    for row in payload.get("small_inputs", []):
        warm, start = row["warm_us"], row["startup_s"]
        lines.append(f"| {row['encoding']} | {warm['tiktoken']:.1f} / {warm['ours']:.1f} | "
                     f"{start['tiktoken']:.3f} / {start['ours']:.3f} |")  # fmt: skip
    sweep = payload.get("length_sweep", [])
    if sweep:
        lines += ["", "Length sweep (MB/s, B x S with B * S about 1 MB):", "", markdown(sweep)]
    return "\n".join(lines)


def plot(
    rows: list[dict[str, Any]], sweep: list[dict[str, Any]], info: common.DeviceInfo, path: Path
) -> Path:
    names = list(dict.fromkeys(row["encoding"] for row in rows))
    fig, axes = common.new_figure(len(names) * (2 if sweep else 1), width=6.5)
    for ax, name in zip(axes[len(names) :], names, strict=False):
        points = [r for r in sweep if r["encoding"] == name]
        for key in dict.fromkeys(k for r in points for k in r["impls"]):
            xs = [r["size"] for r in points]
            ys = [r["impls"].get(key, {}).get("mb_per_s", float("nan")) for r in points]
            ax.plot(xs, ys, marker="o", label=key)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("document length S (bytes); B = 1 MB / S")
        ax.set_ylabel("MB/s (median)")
        ax.set_title(f"{name}: throughput vs document length, {info.name}", fontsize=8)
        ax.legend(fontsize=7)
    for ax, name in zip(axes, names, strict=False):
        points = [r for r in rows if r["encoding"] == name]
        labels = [f"{r['batch']}x{r['size']}" for r in points]
        keys = list(dict.fromkeys(k for r in points for k in r["impls"]))
        for key in keys:
            ys = [r["impls"].get(key, {}).get("mb_per_s", float("nan")) for r in points]
            ax.plot(range(len(points)), ys, marker="o", label=key)
        ax.set_xticks(range(len(points)), labels, rotation=60, fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("MB/s (median)")
        ax.set_title(f"{name} on {info.name}", fontsize=8)
        ax.legend(fontsize=7)
    return common.save_figure(fig, path)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_arguments(parser, "bpe", threads_help="torch CPU threads (default: all cores)",
                         quick_help="two small points, a smoke test", repeat=5,
                         repeat_help="timed calls per point (default 5)")  # fmt: skip
    parser.add_argument("--encodings", nargs="+", default=["cl100k_base", "o200k_base"])
    parser.add_argument(
        "--text", nargs="+", choices=TEXTS, default=list(TEXTS),
        help="the kinds of text, each reported apart (default: mixed english)",
    )  # fmt: skip
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 16, 256, 1024])
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 1024, 4096])
    parser.add_argument(
        "--budget", type=float, default=20.0, help="seconds of timed calls per impl and point"
    )
    parser.add_argument("--skip", nargs="*", default=[], help="baselines to leave out")
    parser.add_argument(
        "--hf-files", action="store_true",
        help="only Hugging Face tokenizer.json files (merges lists) against tokenizers, with "
        "RAYON_NUM_THREADS = --threads; writes bpe-hf-<device>.json",
    )  # fmt: skip
    parser.add_argument(
        "--sentencepiece", action="store_true",
        help="only SentencePiece BPE (tokenizer.model.v1) and Tekken against sentencepiece, "
        "tokenizers, mistral-common, tiktoken and quicktok; writes bpe-sp-<device>.json",
    )  # fmt: skip
    parser.add_argument(
        "--no-extras", action="store_true",
        help="leave out the length sweep, worst cases and small inputs",
    )  # fmt: skip
    parser.add_argument(
        "--bytes-mode-max-mb",
        type=float,
        default=None,
        help="time pretokenize='bytes' only on batches up to this size (default: 1 on CPU)",
    )
    args = common.parse(parser, argv)
    if args.quick:
        args.batches, args.sizes, args.repeat, args.encodings = [1, 16], [256], 3, ["cl100k_base"]
        args.text = ["mixed"]
    if args.bytes_mode_max_mb is None:
        args.bytes_mode_max_mb = 1.0 if args.device == "cpu" else 1e9
    return args


def ours(
    enc: Any, dev: torch.device, pretokenize: str, merge_backend: str = "torch"
) -> Callable[[list[str]], Any]:
    """The tensor engine: its torch passes (on a CPU, ``"auto"`` is the C encoder), or on CUDA
    the Triton merge kernel (``merge_backend="triton"``)."""
    return lambda texts: enc.encode_batch_to_tensor(
        texts, device=dev, disallowed_special=(), pretokenize=pretokenize,
        merge_backend=merge_backend,
    )  # fmt: skip


def ours_numpy(enc: Any, threads: int) -> Callable[[list[str]], Any]:
    """``encode_batch_to_numpy``: flat uint32 IDs and lengths, no list per text (quicktok's
    output, and what a shard writer takes)."""
    return lambda texts: enc.encode_batch_to_numpy(
        texts, num_threads=threads, disallowed_special=()
    )


def ours_flat(enc: Any, dev: torch.device) -> Callable[[list[str]], Any]:
    return lambda texts: enc.encode_batch_to_flat(texts, device=dev, disallowed_special=())


def ours_host_copied(enc: Any, dev: torch.device) -> Callable[[list[str]], Any]:
    """On a GPU: the C host encoder on every core, then the flat IDs copied to ``dev`` (the
    alternative to the tensor engine there)."""

    def encode(texts: list[str]) -> Flat:
        flat = enc.encode_batch_to_flat(texts, disallowed_special=(), num_threads=CORES)
        return Flat(flat.ids.to(dev), flat.lengths.to(dev))

    return encode


@functools.cache
def _ranks(name: str) -> dict[bytes, int]:
    return mergeable_ranks(ENCODINGS[name].ranks)


def fresh_encoding(name: str, *, native: bool = True) -> Encoding:
    """A new ``Encoding`` of ``name`` through the public constructor, so with empty caches
    (``get_encoding`` shares one per process). ``native=False``: the pure-Python host encoder,
    chosen by the public switch ``TENSORTEXT_NATIVE=0``, which holds while the encoding's host
    encoder is made (at its first call, made here)."""
    spec = ENCODINGS[name]
    saved = os.environ.get("TENSORTEXT_NATIVE")
    if not native:
        os.environ["TENSORTEXT_NATIVE"] = "0"
    try:
        enc = Encoding(
            name, pat_str=spec.pat_str, mergeable_ranks=_ranks(name),
            special_tokens=dict(spec.special_tokens), explicit_n_vocab=spec.explicit_n_vocab,
        )  # fmt: skip
        enc.encode_ordinary("warm")
    finally:
        if saved is None:
            os.environ.pop("TENSORTEXT_NATIVE", None)
        else:
            os.environ["TENSORTEXT_NATIVE"] = saved
    return enc


class Fresh:
    """``encode_ordinary_batch(num_threads=threads)`` of an encoding made anew at each point
    (``reset``): the Python encoder's piece cache starts empty at each point and is warm after
    the warm-up call (the C encoder has no cache)."""

    def __init__(self, name: str, threads: int, *, native: bool = True):
        self.name, self.threads, self.native = name, threads, native
        self.enc = fresh_encoding(name, native=native)

    def reset(self) -> None:
        self.enc = fresh_encoding(self.name, native=self.native)

    def __call__(self, texts: list[str]) -> Any:
        return self.enc.encode_ordinary_batch(texts, num_threads=self.threads)


def ours_host(name: str, threads: int) -> Callable[[list[str]], Any]:
    """``encode_ordinary_batch(num_threads=threads)``, as tiktoken is called."""
    return Fresh(name, threads)


def ours_python(name: str) -> Callable[[list[str]], Any]:
    """The pure-Python host encoder (no C) on one core, ``encode_ordinary_batch``."""
    return Fresh(name, 1, native=False)


def our_encoders(
    name: str, dev: torch.device, threads: int
) -> dict[str, Callable[[list[str]], Any]]:
    enc = get_encoding(name)
    fns = {
        "ours_host": ours_host(name, threads),
        "ours_numpy": ours_numpy(enc, threads),
        "ours_python": ours_python(name),
        "ours_flat": ours_flat(enc, dev),
        "ours_tensor": ours(enc, dev, "regex"),
        "ours_bytes": ours(enc, dev, "bytes"),
    }
    if dev.type == "cuda":
        fns["ours_triton"] = ours(enc, dev, "regex", merge_backend="triton")
        fns["ours_host_copied"] = ours_host_copied(enc, dev)
    return fns


# --------------------------------------------------------------------------------------------
# Document length, worst cases, small inputs
# --------------------------------------------------------------------------------------------

LENGTHS = [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576]
WORST_CASES: dict[str, Callable[[random.Random], str]] = {
    "200k random CJK (one piece)": lambda rng: "".join(
        chr(rng.randrange(0x4E00, 0x9FA5)) for _ in range(200_000)
    ),
    "1 MB random a-z (one piece)": lambda rng: "".join(
        rng.choices(string.ascii_lowercase, k=1_000_000)
    ),
    "1 MB of one character": lambda rng: "a" * 1_000_000,
}
STARTUP = """
import sys, time
sys.path.insert(0, {tests!r})
import tiktoken, torch, tensortext.bpe
from oracles.bpe import tiktoken_reference
torch.set_num_threads(1)
which, name = sys.argv[1], sys.argv[2]
start = time.perf_counter()
if which == "tiktoken":
    tiktoken_reference(name).encode("hello world")
else:
    tensortext.bpe.get_encoding(name).encode("hello world")
print(time.perf_counter() - start)
"""


def length_sweep(
    name: str, text: str, stream: bytes, fns: dict[str, Callable[[list[str]], Any]],
    args: argparse.Namespace, dev: torch.device,
) -> list[dict[str, Any]]:  # fmt: skip
    """MB/s against document length: ``B`` texts of ``S`` bytes, ``B * S`` about 1 MB."""
    keep = ("tiktoken", "quicktok", "hf_tokenizers", "ours_host", "ours_numpy", "ours_python",
            "ours_tensor")  # fmt: skip
    chosen = {key: fn for key, fn in fns.items() if key in keep}
    rows = []
    for size in LENGTHS:
        row = run_point(name, max(1, 2**20 // size), size, text, stream, chosen, args, dev)
        row["sweep"] = True
        print_row(row)
        rows.append(row)
    return rows


def worst_cases(name: str, args: argparse.Namespace, dev: torch.device) -> list[dict[str, Any]]:
    """Long single pieces: seconds for tiktoken ``encode_ordinary``, ours (the C host encoder,
    the Python one, the tensor engine), outputs checked identical."""
    enc, ref = get_encoding(name), tiktoken_reference(name)
    python = fresh_encoding(name, native=False)
    rows = []
    for label, make in WORST_CASES.items():
        text = make(random.Random(0))
        timed = {
            "tiktoken": lambda text=text: ref.encode_ordinary(text),
            "ours_host": lambda text=text: enc.encode_ordinary(text),
            "ours_python": lambda text=text: python.encode_ordinary(text),
            "ours_tensor": lambda text=text: enc.encode_batch_to_tensor(
                [text], device=dev, disallowed_special=(), merge_backend="torch"
            ),
        }
        timings, errors = common.time_interleaved(
            timed, warmup={"tiktoken": 1, "ours_host": 1, "ours_python": 1, "ours_tensor": 0},
            repeat=3,
            device=dev, budget_s=args.budget,
        )  # fmt: skip
        expected = timings["tiktoken"].value
        row: dict[str, Any] = {"encoding": name, "case": label, "seconds": {}, "identical": {}}
        for key in timed:
            if key in errors:
                row["seconds"][key] = repr(errors[key])
                continue
            row["seconds"][key] = timings[key].median_s
            value = timings[key].value
            got = as_lists(value)[0] if key == "ours_tensor" else list(value)
            row["identical"][key] = got == expected
        cells = " | ".join(f"{k} {v:.3f}s" for k, v in row["seconds"].items())
        print(f"{name:12s} {label:30s} {cells}", flush=True)
        rows.append(row)
    return rows


HF_FAMILIES = ("qwen3", "deepseek_v3")


def hf_files(stream: bytes, args: argparse.Namespace, dev: torch.device, threads: int) -> list[
    dict[str, Any]
]:  # fmt: skip
    """The tokenizer.json files the tests check (merges lists; ``tests/oracles/hf.py``) on 1024
    texts of 4 KB: ``tokenizers``' ``encode_batch`` against ours (``Encoding.from_hf_json``,
    ``encode_batch(num_threads=threads, allowed_special="all")``: ``tokenizers`` always matches
    added tokens in the text), outputs checked identical."""
    tests_on_path()
    from oracles.hf import hf_file, hf_tokenizer

    from tensortext.bpe import Encoding

    texts = make_batch(stream, 1024, 4096, 4096 * 7919)
    nbytes = sum(len(text.encode("utf-8")) for text in texts)
    rows = []
    for family in HF_FAMILIES:
        try:
            path = hf_file(family)
        except (AssertionError, ImportError) as error:  # the [dev] extra ships the files
            print(f"{family}: no tokenizer.json ({error})")
            continue
        ours, ref = Encoding.from_hf_json(path), hf_tokenizer(family)
        timed = {
            "hf_tokenizers": lambda ref=ref: [
                e.ids for e in ref.encode_batch(texts, add_special_tokens=False)
            ],
            "ours_host": lambda ours=ours: ours.encode_batch(
                texts, num_threads=threads, allowed_special="all"
            ),
        }
        timings, errors = common.time_interleaved(
            timed, warmup=1, repeat=args.repeat, device=dev, budget_s=args.budget
        )
        row: dict[str, Any] = {"family": family, "bytes": nbytes, "mb_per_s": {},
                               "c_extension": native_available()}  # fmt: skip
        for key in timed:
            if key in errors:
                row["mb_per_s"][key] = repr(errors[key])
            else:
                row["mb_per_s"][key] = nbytes / timings[key].median_s / 1e6
        row["identical"] = not errors and (
            timings["hf_tokenizers"].value == timings["ours_host"].value
        )
        print(f"{family:12s} 1024 x 4096 MB/s: {row['mb_per_s']} identical {row['identical']} "
              f"C extension {row['c_extension']}", flush=True)  # fmt: skip
        rows.append(row)
    return rows


def small_inputs(name: str) -> dict[str, Any]:
    """Warm ``encode("hello world")`` in microseconds, and ``get_encoding`` (tiktoken: its
    constructor on the same files) + first ``encode`` in seconds, in a fresh process."""
    enc, ref = get_encoding(name), tiktoken_reference(name)
    row: dict[str, Any] = {"encoding": name, "warm_us": {}, "startup_s": {}}
    for key, fn in (("tiktoken", ref.encode), ("ours", enc.encode)):
        fn("hello world")
        number = 20_000
        best = min(timeit.repeat(lambda fn=fn: fn("hello world"), number=number, repeat=5))
        row["warm_us"][key] = best / number * 1e6
        command = [sys.executable, "-c", STARTUP.format(tests=str(ROOT / "tests")), key, name]
        runs = [subprocess.run(command, capture_output=True, text=True, check=True) for _ in "abc"]
        row["startup_s"][key] = sorted(float(done.stdout) for done in runs)[1]
    print(f"{name:12s} encode('hello world') warm us: {row['warm_us']}; "
          f"get_encoding + first encode s: {row['startup_s']}", flush=True)  # fmt: skip
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.report is not None:
        report = common.read_json(args.report)
        print(markdown(report["rows"]))
        print(markdown_extras(report))
        return 0
    threads = args.threads if args.threads is not None else CORES
    os.environ["RAYON_NUM_THREADS"] = str(threads)  # tokenizers' pool, before it starts
    run = common.start(args, cpu_threads=CORES)
    streams = {text: "".join(corpus_paragraphs(text)).encode("utf-8") for text in args.text}
    stream = next(iter(streams.values()))
    if args.sentencepiece:
        import bpe_sentencepiece

        tests_on_path()
        path = run.json_path.with_name(run.json_path.name.replace("bpe-", "bpe-sp-", 1))
        sp = {"meta": common.run_metadata(
            run.info, ["sentencepiece", "tokenizers", "mistral-common", "tiktoken", "quicktok-v1"]
        ), "threads": threads}  # fmt: skip
        sp.update(bpe_sentencepiece.run(streams, make_batch, args, run.device, threads,
                                        ROOT / "tests"))  # fmt: skip
        common.write_json(path, sp)
        print(f"wrote {path}")
        title = f"SentencePiece and Tekken, 1024 x 4 KB, {threads} thread(s): {run.info.name}"
        png = path.with_suffix(".png")
        common.write_plot(args, lambda: bpe_sentencepiece.plot(sp["rows"], title, png))
        return 0
    if args.hf_files:
        path = run.json_path.with_name(run.json_path.name.replace("bpe-", "bpe-hf-", 1))
        hf = {"meta": common.run_metadata(run.info, ["tokenizers"]), "threads": threads}
        hf["rows"] = hf_files(stream, args, run.device, threads)
        common.write_json(path, hf)
        print(f"wrote {path}")
        return 0
    payload: dict[str, Any] = {
        "meta": common.run_metadata(
            run.info, ["tiktoken", "tokenizers", "bpe-openai", "quicktok-v1", "transformers"]
        ),
        "host_cores": CORES,
        "corpus_bytes": {text: len(data) for text, data in streams.items()},
        "quick": args.quick,
        "unavailable": {},
        "rows": [],
    }
    print(f"CPU baselines use {threads} host threads")
    payload["baseline_threads"] = threads
    for key in ("length_sweep", "worst_cases", "small_inputs"):
        payload[key] = []
    for name in args.encodings:
        fns, missing = baselines(name, set(args.skip), threads)
        payload["unavailable"][name] = missing
        for key, why in missing.items():
            print(f"{name}: {key} unavailable ({why})")
        fns.update(our_encoders(name, run.device, threads))
        for text, data in streams.items():
            for size in args.sizes:
                for batch in args.batches:
                    if run.out_of_time():
                        print("time limit reached; remaining points skipped")
                        break
                    row = run_point(name, batch, size, text, data, fns, args, run.device)
                    payload["rows"].append(row)
                    print_row(row)
                    common.write_json(run.json_path, payload)
        if args.quick or args.no_extras or run.out_of_time():
            continue
        payload["small_inputs"].append(small_inputs(name))
        payload["worst_cases"] += worst_cases(name, args, run.device)
        for text, data in streams.items():
            payload["length_sweep"] += length_sweep(name, text, data, fns, args, run.device)
        common.write_json(run.json_path, payload)
    print(markdown(payload["rows"]))
    print(markdown_extras(payload))
    print(f"wrote {run.json_path}")
    common.write_plot(
        args, lambda: plot(payload["rows"], payload["length_sweep"], run.info, run.png_path)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
