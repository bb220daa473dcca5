#!/usr/bin/env python
"""Per-sentence token-ID BLEU (the RL-reward use case): tensortext vs. the usual baselines.

All implementations run side by side in one process on the same data:

* ``nltk``            NLTK ``sentence_bleu`` loop, ``SmoothingFunction().method3`` (the reference)
* ``sacrebleu``       sacreBLEU ``BLEU(tokenize="none", smooth_method="exp").sentence_score`` loop
                      on space-joined IDs
* ``torchmetrics``    ``torchmetrics.functional.text.bleu_score`` called once per sentence on
                      space-joined IDs (``smooth=False``)
* ``rxlm``            ``tensor_sentence_bleu`` from rxlm (module file loaded on its own)
* ``ours-nltk``       ``tensortext.bleu.sentence_bleu(compat="nltk", smooth_method="method3")``
* ``ours-sacrebleu``  ``tensortext.bleu.sentence_bleu(compat="sacrebleu", smooth_method="exp")``

The Python baselines always run on the host CPU; their timings include turning the ID tensors
into lists / strings (``.tolist()``, which on CUDA includes the device-to-host copy), since an RL
loop has the IDs as tensors.  The tensor implementations run on ``--device``.

Usage (from the repository root)::

    PYTHONPATH=src python bench/bench_bleu.py                 # full grid, CUDA if available
    PYTHONPATH=src python bench/bench_bleu.py --device cpu --threads 1
    PYTHONPATH=src python bench/bench_bleu.py --quick         # smoke test, < 1 minute

Writes bench/results/bleu-<device-slug>.json and .png.
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

import common
from bleu_baselines import (
    DataConfig,
    DataMaker,
    Scorer,
    load_nltk,
    load_ours,
    load_rxlm,
    load_sacrebleu,
    load_torchmetrics,
    rxlm_module_path,
    rxlm_peak_estimate,
)

FULL_BATCHES = [16, 32, 64, 128, 256, 512]
FULL_SEQ_LENS = [256, 1024]
QUICK_BATCHES = [8, 32]
QUICK_SEQ_LENS = [128, 256]
IMPL_ORDER = ["nltk", "sacrebleu", "torchmetrics", "rxlm", "ours-nltk", "ours-sacrebleu"]
TARGET_POINT = (256, 1024)  # (batch, seq_len) the CPU targets refer to
REWARM_BELOW_S = 0.5  # fast implementations get an untimed call before each timed one

log = logging.getLogger("bench_bleu")


# --------------------------------------------------------------------------- implementations


@dataclass
class Impl:
    label: str
    description: str
    runs_on: str  # "host-cpu" (a Python loop) or "device"
    compare_to: str | None  # baseline key for max |diff|
    load: Callable[[], Scorer]
    fn: Scorer | None = None
    unavailable: str | None = None  # why it cannot run at all

    def scores(self, value: Any) -> np.ndarray:
        if self.runs_on == "host-cpu":
            return np.asarray(value, dtype=np.float64)
        return value.detach().to("cpu", torch.float64).numpy()  # type: ignore[no-any-return]


def build_impls(args: argparse.Namespace) -> dict[str, Impl]:
    v = not args.no_validate
    impls = {
        "nltk": Impl("NLTK (method3)", "nltk.translate.bleu_score.sentence_bleu, "
                     "SmoothingFunction().method3, loop over sentences, inputs via .tolist()",
                     "host-cpu", None, load_nltk),
        "sacrebleu": Impl("sacreBLEU (exp)", 'sacrebleu BLEU(tokenize="none", smooth_method='
                          '"exp", effective_order=False).sentence_score loop on space-joined IDs, '
                          "score/100", "host-cpu", "nltk", load_sacrebleu),
        "torchmetrics": Impl("torchmetrics (loop)", "torchmetrics.functional.text.bleu_score("
                             "n_gram=4, smooth=False) called once per sentence on space-joined "
                             "IDs (CPU)", "host-cpu", "nltk", load_torchmetrics),
        "rxlm": Impl("rxlm TensorBLEU", "rxlm/metrics/tensorbleu.py tensor_sentence_bleu(cand, "
                     "refs[:, None]) with its defaults (pad 0, smoothing 'exp'); module file "
                     "loaded alone", "device", "nltk", load_rxlm),
        "ours-nltk": Impl("tensortext (nltk)", 'tensortext.sentence_bleu(compat="nltk", '
                          f'smooth_method="method3", validate={v}), float32', "device", "nltk",
                          load_ours("nltk", "method3", v)),
        "ours-sacrebleu": Impl("tensortext (sacrebleu)", 'tensortext.sentence_bleu(compat='
                               f'"sacrebleu", smooth_method="exp", validate={v}), float32',
                               "device", "sacrebleu", load_ours("sacrebleu", "exp", v)),
    }  # fmt: skip
    for key in args.impls:
        try:
            impls[key].fn = impls[key].load()
        except Exception as exc:
            impls[key].unavailable = repr(exc)
            log.warning("%s unavailable: %s", key, exc)
    return impls


def module_info() -> dict[str, Any]:
    import tensortext

    try:
        rxlm: str | None = str(rxlm_module_path())
    except ImportError:
        rxlm = None
    return {
        "rxlm_module": rxlm,
        "tensortext_module": str(Path(tensortext.__file__).parent),
        "tensortext_version": getattr(tensortext, "__version__", None),
    }


# --------------------------------------------------------------------------- one grid point


def max_abs_diff(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None:
        return None
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def skip_reason(key: str, args: argparse.Namespace, hyp: Tensor, ref: Tensor) -> dict[str, Any]:
    """Fields of a row that is not run (torchmetrics too slow, rxlm out of memory), else {}."""
    batch, seq_len = hyp.shape
    limit = args.torchmetrics_max_tokens
    if key == "torchmetrics" and limit and batch * seq_len > limit:
        why = f"batch*seq_len > --torchmetrics-max-tokens={limit} (too slow)"
        return {"status": "skipped", "reason": why}
    if key == "rxlm":
        need = rxlm_peak_estimate(hyp, ref)
        free = common.available_memory_bytes(hyp.device)
        out: dict[str, Any] = {"predicted_peak_mib": need / common.MiB}
        if free is not None and need > args.rxlm_mem_fraction * free:
            out.update(status="skipped", reason=f"predicted peak {need / 2**30:.1f} GiB > "
                       f"{args.rxlm_mem_fraction:.0%} of free {free / 2**30:.1f} GiB")  # fmt: skip
        return out
    return {}


def run_point(
    impls: dict[str, Impl], args: argparse.Namespace, dev: torch.device, hyp: Tensor, ref: Tensor
) -> list[dict[str, Any]]:
    batch, seq_len = hyp.shape
    hyp, ref = hyp.to(dev), ref.to(dev)
    rows: dict[str, dict[str, Any]] = {}
    fns: dict[str, Callable[[], Any]] = {}
    for key in args.impls:
        impl = impls[key]
        row = rows[key] = {"batch": batch, "seq_len": seq_len, "impl": key, "label": impl.label,
                           "status": "ok"}  # fmt: skip
        if impl.fn is None:
            row.update(status="unavailable", reason=impl.unavailable)
            continue
        row.update(skip_reason(key, args, hyp, ref))
        if row["status"] == "ok":
            fns[key] = partial(impl.fn, hyp, ref)
    # Round-robin timing: drifting machine speed hits all implementations alike.  Peak memory is
    # measured on the last warm-up call of each, never on a timed call.
    timings, errors = common.time_interleaved(
        fns,
        warmup={k: 1 if impls[k].runs_on == "host-cpu" else args.warmup for k in fns},
        repeat=args.repeat,
        device=dev,
        budget_s=args.budget,
        measure_memory=True,
        memory_device={k: dev if impls[k].runs_on == "device" else "cpu" for k in fns},
        rewarm_below_s=REWARM_BELOW_S,
    )
    scores: dict[str, np.ndarray] = {}
    for key, exc in errors.items():
        rows[key].update(common.error_fields(exc))
        log.warning("%s failed at B=%d L=%d: %s", key, batch, seq_len, exc)
    for key, timing in timings.items():
        impl, row = impls[key], rows[key]
        s = scores[key] = impl.scores(timing.value)
        row.update(timing.as_dict(), mean_score=float(s.mean()), min_score=float(s.min()))
        if impl.compare_to:
            row["diff_vs"] = impl.compare_to
            row["max_abs_diff"] = max_abs_diff(s, scores.get(impl.compare_to))
        row["max_abs_diff_vs_nltk"] = max_abs_diff(s, scores.get("nltk"))
        if key.startswith("ours"):  # accuracy of the same call in float64 (untimed)
            try:
                s64 = impl.scores(impl.fn(hyp, ref, dtype=torch.float64))  # type: ignore[misc]
                row["max_abs_diff_float64"] = max_abs_diff(s64, scores.get(impl.compare_to or ""))
            except Exception as exc:
                row.update(max_abs_diff_float64=None, float64_error=repr(exc))
    return add_speedups(list(rows.values()))


def add_speedups(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    load = common.loadavg_1m()
    ok = {r["impl"]: r for r in rows if r["status"] == "ok"}
    for r in rows:
        r["loadavg_1m_after"] = load
        if r["status"] != "ok":
            continue
        r["speedup_vs_nltk"] = ok["nltk"]["median_s"] / r["median_s"] if "nltk" in ok else None
        if r["impl"].startswith("ours") and "rxlm" in ok:
            r["speedup_vs_rxlm"] = ok["rxlm"]["median_s"] / r["median_s"]
    return rows


# --------------------------------------------------------------------------- reporting


def print_rows(rows: list[dict[str, Any]], header: bool) -> None:
    fmt = common.fmt
    if header:
        print(f"{'L':>5} {'B':>4}  {'implementation':<23} {'median ms':>10} {'x NLTK':>8} "
              f"{'peak MiB':>9} {'max|diff|':>9} {'vs':<9} {'n':>2}  note", flush=True)  # fmt: skip
    for r in rows:
        head = f"{r['seq_len']:>5} {r['batch']:>4}  {r['label']:<23}"
        if r["status"] != "ok":
            print(f"{head} {r['status']:>10}  {r.get('reason', '')}", flush=True)
            continue
        note = f"x rxlm {r['speedup_vs_rxlm']:.1f}" if "speedup_vs_rxlm" in r else ""
        print(f"{head} {r['median_s'] * 1e3:>10.2f} {fmt(r.get('speedup_vs_nltk'), '.1f'):>8} "
              f"{fmt(r.get('peak_extra_mib'), '.1f'):>9} {fmt(r.get('max_abs_diff'), '.1e'):>9} "
              f"{r.get('diff_vs', ''):<9} {r['n_samples']:>2}  {note}", flush=True)  # fmt: skip


def markdown_report(payload: dict[str, Any]) -> str:
    """The README table for a result JSON: one row per (seq len, batch), ms and x NLTK."""
    res = payload["results"]
    keys = [k for k in IMPL_ORDER if k in payload["implementations"]]
    header = ["L", "B", *(payload["implementations"][k]["label"] for k in keys)]
    header += ["ours peak MiB", "rxlm peak MiB"]
    lines = []
    for L, B in sorted({(r["seq_len"], r["batch"]) for r in res}):
        at = {r["impl"]: r for r in res if r["seq_len"] == L and r["batch"] == B}
        cells = [str(L), str(B)]
        for k in keys:
            r = at.get(k)
            if not r or r["status"] != "ok":
                cells.append(r["status"] if r else "-")
            elif k == "nltk":
                cells.append(f"{r['median_s'] * 1e3:.1f} ms")
            else:
                cells.append(f"{r['median_s'] * 1e3:.1f} ms ({r['speedup_vs_nltk']:.2g}x)")
        for k in ("ours-nltk", "rxlm"):
            ok = k in at and at[k]["status"] == "ok"
            cells.append(common.fmt(at[k].get("peak_extra_mib"), ".0f") if ok else "-")
        lines.append(cells)
    return common.markdown_table(header, lines, "r" * len(header))


def plot(payload: dict[str, Any], info: common.DeviceInfo, path: Path) -> Path:
    results, impls = payload["results"], payload["implementations"]
    seq_lens = sorted({r["seq_len"] for r in results})
    fig, axes = common.new_figure(len(seq_lens))
    markers = dict(zip(IMPL_ORDER, "osv^DP", strict=True))
    for ax, L in zip(axes, seq_lens, strict=True):
        for key in impls:
            pts = sorted((r["batch"], r["median_s"]) for r in results if r["impl"] == key
                         and r["seq_len"] == L and r["status"] == "ok")  # fmt: skip
            if not pts:
                continue
            on_host = impls[key]["runs_on"] == "host CPU" or info.device.type == "cpu"
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[key],
                    label=impls[key]["label"] + ("" if on_host else f" [{info.slug}]"),
                    linestyle="-" if key.startswith("ours") else "--")  # fmt: skip
        common.log2_xticks(ax, sorted({r["batch"] for r in results if r["seq_len"] == L}))
        ax.set_yscale("log")
        ax.set_xlabel("batch size (sentences)")
        ax.set_ylabel("median time per batch (s)")
        ax.set_title(f"per-sentence BLEU, seq len {L}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    host = f" (Python baselines: {info.host_cpu})" if info.device.type == "cuda" else ""
    fig.suptitle(info.name + host, fontsize=9)
    return common.save_figure(fig, path)


def checks(results: list[dict[str, Any]], dev: torch.device) -> dict[str, Any]:
    """The targets at batch 256 x seq len 1024 (stated for CPU), evaluated where present."""
    b, L = TARGET_POINT
    at = {r["impl"]: r for r in results
          if r["batch"] == b and r["seq_len"] == L and r["status"] == "ok"}  # fmt: skip
    out: dict[str, Any] = {"point": {"batch": b, "seq_len": L}, "device": str(dev)}
    rx = at.get("rxlm")
    for key in ("ours-nltk", "ours-sacrebleu"):
        if key in at:
            r, mib = at[key], at[key].get("peak_extra_mib")
            out[key] = {
                "speedup_vs_nltk": r.get("speedup_vs_nltk"),
                "speedup_vs_nltk_ge_5": (r.get("speedup_vs_nltk") or 0) >= 5,
                "faster_than_rxlm": rx["median_s"] > r["median_s"] if rx else None,
                "peak_extra_mib": mib,
                "peak_extra_le_100mib": mib <= 100 if mib is not None else None,
            }
    if rx:
        out["rxlm_peak_extra_mib"] = rx.get("peak_extra_mib")
    diffs = [r["max_abs_diff"] for r in results if r["status"] == "ok"
             and r["impl"].startswith("ours") and r.get("max_abs_diff") is not None]  # fmt: skip
    out["ours_max_abs_diff_overall"] = max(diffs) if diffs else None
    return out


def make_payload(args: argparse.Namespace, run: common.Run, impls: dict[str, Impl],
                 meta: dict[str, Any], modules: dict[str, Any],
                 results: list[dict[str, Any]]) -> dict[str, Any]:  # fmt: skip
    config = {
        "batches": args.batches, "seq_lens": args.seq_lens, "repeat": args.repeat,
        "warmup_tensor_impls": args.warmup, "warmup_python_loops": 1, "budget_s": args.budget,
        "time_limit_s": args.time_limit or None, "seed": args.seed, "quick": args.quick,
        "validate": not args.no_validate,
        "torchmetrics_max_tokens": args.torchmetrics_max_tokens or None,
        "rxlm_mem_fraction": args.rxlm_mem_fraction, "data": DataConfig().as_dict(),
        "timing": "median wall-clock seconds per batch call; CUDA synchronised before and after "
        "each call; implementations interleaved round-robin (rotating start) per grid point; one "
        "untimed call right before each timed one for implementations whose last call took < "
        "rewarm_below_s; Python loops include tensor->list/string conversion",
        "rewarm_below_s": REWARM_BELOW_S,
        "memory": "peak extra bytes of one untimed call: CUDA max_memory_allocated minus "
        "memory_allocated before; CPU VmHWM after minus VmRSS before, with malloc_trim(0) and "
        "/proc/self/clear_refs=5 before the call (see bench/README.md)",
    }  # fmt: skip
    implementations = {
        k: {"label": impls[k].label, "description": impls[k].description,
            "runs_on": "host CPU" if impls[k].runs_on == "host-cpu" else str(run.device),
            "max_abs_diff_vs": impls[k].compare_to, "unavailable": impls[k].unavailable}
        for k in args.impls
    }  # fmt: skip
    return {
        "benchmark": "per-sentence token-ID BLEU", "metadata": meta, "config": config,
        "implementations": implementations, "modules": modules, "results": results,
        "checks": checks(results, run.device), "loadavg_at_end": common.loadavg(),
        "wall_time_s": run.elapsed(),
    }  # fmt: skip


# --------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    common.add_arguments(p, "bleu", threads_help="torch.set_num_threads (default 1 on CPU)",
                         quick_help=f"smoke test: batches {QUICK_BATCHES} x seq lens "
                         f"{QUICK_SEQ_LENS}, repeat 3", repeat_help="timed calls per point "
                         "(default 7)")  # fmt: skip
    p.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="warm-up calls for tensor implementations (Python loops get 1)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="stop timing a point once its timed calls used this many seconds (at "
        "least 3 calls are always timed) (default 20)",
    )
    p.add_argument("--batches", type=int, nargs="+", default=None)
    p.add_argument("--seq-lens", type=int, nargs="+", default=None)
    p.add_argument(
        "--impls",
        nargs="+",
        choices=IMPL_ORDER,
        default=IMPL_ORDER,
        help="implementations to run (nltk is always run: it is the reference)",
    )
    p.add_argument(
        "--torchmetrics-max-tokens",
        type=int,
        default=0,
        help="skip torchmetrics where batch*seq_len exceeds this (0: never skip)",
    )
    p.add_argument(
        "--rxlm-mem-fraction",
        type=float,
        default=0.9,
        help="skip rxlm where its predicted peak exceeds this fraction of free "
        "memory (default 0.9)",
    )
    p.add_argument("--no-validate", action="store_true", help="call tensortext with validate=False")
    p.add_argument("--seed", type=int, default=1234)  # fmt: skip
    args = common.parse(p, argv)
    args.batches = args.batches or (QUICK_BATCHES if args.quick else FULL_BATCHES)
    args.seq_lens = args.seq_lens or (QUICK_SEQ_LENS if args.quick else FULL_SEQ_LENS)
    args.repeat = args.repeat or (3 if args.quick else 7)
    if args.quick:
        args.warmup, args.budget = min(args.warmup, 1), min(args.budget, 2.0)
    args.impls = [k for k in IMPL_ORDER if k in args.impls or k == "nltk"]
    return args


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    warnings.filterwarnings("ignore", message=".*effective_order.*")
    args = parse_args(argv)
    if args.report is not None:
        print(markdown_report(common.read_json(args.report)))
        return 0
    run = common.start(args, cpu_threads=1)
    dev = run.device
    impls = build_impls(args)
    print(f"grid: batches {args.batches} x seq lens {args.seq_lens}, repeat {args.repeat}",
          flush=True)  # fmt: skip
    maker = DataMaker(DataConfig(), args.seed)
    # Warm every implementation once on a tiny input: lazy imports, kernel caches, first-call
    # allocations must not count in the first grid point's memory.
    h0, r0 = (t.to(dev) for t in maker.make(2, 32))
    for key in args.impls:
        try:
            if impls[key].fn is not None:
                impls[key].fn(h0, r0)  # type: ignore[misc]
        except Exception as exc:
            log.warning("warm-up of %s failed: %s", key, exc)
    common.synchronize(dev)
    meta = common.run_metadata(
        run.info, ["tensortext", "nltk", "sacrebleu", "torchmetrics", "rxlm", "numpy", "matplotlib"]
    )
    results: list[dict[str, Any]] = []
    for L in args.seq_lens:
        for B in args.batches:
            if run.out_of_time():
                rows = [{"batch": B, "seq_len": L, "impl": k, "label": impls[k].label,
                         **common.skipped_fields(args.time_limit)} for k in args.impls]  # fmt: skip
            else:
                rows = run_point(impls, args, dev, *maker.make(B, L))
            print_rows(rows, header=not results)
            results.extend(rows)
            # after every point, so that a run killed at a time limit leaves its results
            payload = make_payload(args, run, impls, meta, module_info(), results)
            common.write_json(run.json_path, payload)
    print(f"\nwrote {run.json_path}", flush=True)
    common.write_plot(args, lambda: plot(payload, run.info, run.png_path))
    print(f"checks @ B={TARGET_POINT[0]} L={TARGET_POINT[1]}: {payload['checks']}", flush=True)
    print(f"total wall time {payload['wall_time_s']:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
