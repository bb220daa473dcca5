#!/usr/bin/env python
"""Per-sentence token-ID BLEU (the RL-reward use case): tensortext vs. the usual baselines.

All implementations run side by side in one process on the same data:

* ``nltk``            NLTK ``sentence_bleu`` loop, ``SmoothingFunction().method3`` (the reference)
* ``sacrebleu``       sacreBLEU ``BLEU(tokenize="none", smooth_method="exp").sentence_score`` loop
                      on space-joined IDs
* ``torchmetrics``    ``torchmetrics.functional.text.bleu_score`` called once per sentence on
                      space-joined IDs (``smooth=False``)
* ``rxlm``            ``tensor_sentence_bleu`` from rxlm (module file loaded on its own)
* ``ours-nltk``       ``tensortext.sentence_bleu(compat="nltk", smooth_method="method3")``
* ``ours-sacrebleu``  ``tensortext.sentence_bleu(compat="sacrebleu", smooth_method="exp")``

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
import contextlib
import importlib.util
import itertools
import logging
import math
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

import common  # noqa: E402  (bench/ is not a package; run as a script)

VOCAB = 32000  # IDs are drawn from 1..VOCAB-1; 0 is never used (rxlm treats 0 as padding)
FULL_BATCHES = [16, 32, 64, 128, 256, 512]
FULL_SEQ_LENS = [256, 1024]
QUICK_BATCHES = [8, 32]
QUICK_SEQ_LENS = [128, 256]
IMPL_ORDER = ["nltk", "sacrebleu", "torchmetrics", "rxlm", "ours-nltk", "ours-sacrebleu"]
TARGET_POINT = (256, 1024)  # (batch, seq_len) the CPU targets refer to
REWARM_BELOW_S = 0.5  # fast implementations get an untimed call before each timed one

log = logging.getLogger("bench_bleu")


# --------------------------------------------------------------------------- data


@dataclass
class DataConfig:
    vocab: int = VOCAB
    zipf_s: float = 1.0  # token frequencies ~ 1/(rank + 2.7)^s, like natural text
    zipf_q: float = 2.7
    replace_min: float = 0.30  # fraction of reference tokens replaced, per row ~ U(min, max)
    replace_max: float = 0.50
    replace_span: tuple[int, int] = (1, 4)  # replaced spans are 1..4 tokens long
    shuffle_span: tuple[int, int] = (4, 32)  # reference is cut into spans of 4..32 tokens
    shuffle_window: float = 3.0  # ... which move by up to ~3 positions (local reordering)

    def as_dict(self) -> dict[str, Any]:
        return {
            "vocab": self.vocab,
            "ids": f"1..{self.vocab - 1} (no 0)",
            "token_distribution": f"Zipf-Mandelbrot, s={self.zipf_s}, q={self.zipf_q}, "
            "random rank->ID map",
            "reference": "hypothesis cut into spans of "
            f"{self.shuffle_span[0]}..{self.shuffle_span[1]} tokens, spans locally shuffled "
            f"(window ~{self.shuffle_window}), then {self.replace_min:.0%}..{self.replace_max:.0%}"
            f" of tokens replaced in runs of {self.replace_span[0]}..{self.replace_span[1]} by "
            "fresh samples; same length as the hypothesis; one reference",
        }


class DataMaker:
    def __init__(self, cfg: DataConfig, seed: int) -> None:
        self.cfg = cfg
        self.seed = seed
        rng = np.random.default_rng(seed)
        ids = rng.permutation(np.arange(1, cfg.vocab, dtype=np.int64))
        ranks = np.arange(1, cfg.vocab, dtype=np.float64)
        p = 1.0 / (ranks + cfg.zipf_q) ** cfg.zipf_s
        self.ids = ids
        self.cdf = np.cumsum(p / p.sum())
        self.cdf[-1] = 1.0

    def _sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        u = rng.random(size)
        return self.ids[np.searchsorted(self.cdf, u, side="right").clip(0, len(self.ids) - 1)]

    def make(self, batch: int, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(hyp [B, L], ref [B, L]) int64 on CPU."""
        cfg = self.cfg
        rng = np.random.default_rng([self.seed, batch, seq_len])
        hyp = self._sample(rng, (batch, seq_len))
        ref = np.empty_like(hyp)
        lo, hi = cfg.shuffle_span
        rlo, rhi = cfg.replace_span
        for b in range(batch):
            row = hyp[b]
            cuts = [0]
            while cuts[-1] < seq_len:
                cuts.append(min(seq_len, cuts[-1] + int(rng.integers(lo, hi + 1))))
            spans = [row[s:e] for s, e in itertools.pairwise(cuts)]
            keys = np.arange(len(spans)) + rng.random(len(spans)) * cfg.shuffle_window
            out = np.concatenate([spans[i] for i in np.argsort(keys, kind="stable")])
            frac = rng.uniform(cfg.replace_min, cfg.replace_max)
            mask = np.zeros(seq_len, dtype=bool)
            target = round(frac * seq_len)
            while mask.sum() < target:
                s = int(rng.integers(0, seq_len))
                mask[s : s + int(rng.integers(rlo, rhi + 1))] = True
            out[mask] = self._sample(rng, int(mask.sum()))
            ref[b] = out
        assert hyp.min() >= 1 and ref.min() >= 1
        return torch.from_numpy(hyp), torch.from_numpy(ref)


# --------------------------------------------------------------------------- implementations


@dataclass
class Impl:
    key: str
    label: str
    description: str
    runs_on: str  # "host-cpu" or "device"
    compare_to: str | None  # baseline key for max |diff|
    make: Callable[[torch.Tensor, torch.Tensor], Callable[[], Any]] | None = None
    to_scores: Callable[[Any], np.ndarray] | None = None
    unavailable: str | None = None  # reason if it cannot run at all
    python_loop: bool = False  # pure-Python baseline: one warm-up call


def _rows(t: torch.Tensor) -> list[list[int]]:
    return t.tolist()  # type: ignore[no-any-return]


def _strings(t: torch.Tensor) -> list[str]:
    return [" ".join(map(str, row)) for row in t.tolist()]


def _list_scores(x: Any) -> np.ndarray:
    return np.asarray(x, dtype=np.float64)


def _tensor_scores(x: Any) -> np.ndarray:
    return x.detach().to("cpu", torch.float64).numpy()


def load_rxlm() -> tuple[Callable[..., torch.Tensor] | None, str | None, str | None]:
    """Load rxlm/metrics/tensorbleu.py alone (``import rxlm`` pulls heavy deps)."""
    spec = importlib.util.find_spec("rxlm")
    if spec is None or not spec.submodule_search_locations:
        return None, None, "rxlm not installed (pip install --no-deps rxlm)"
    path = Path(next(iter(spec.submodule_search_locations))) / "metrics" / "tensorbleu.py"
    if not path.is_file():
        return None, None, f"{path} not found"
    mspec = importlib.util.spec_from_file_location("_bench_rxlm_tensorbleu", path)
    assert mspec is not None and mspec.loader is not None
    mod = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(mod)
    return mod.tensor_sentence_bleu, str(path), None


def load_ours() -> tuple[Callable[..., torch.Tensor] | None, str | None, str | None]:
    def _try() -> tuple[Callable[..., torch.Tensor], str]:
        try:
            import tensortext

            fn = tensortext.sentence_bleu
        except (ImportError, AttributeError):
            from tensortext import bleu as _bleu

            fn = _bleu.sentence_bleu
        import tensortext

        return fn, str(Path(tensortext.__file__).parent)

    err: Exception | None = None
    try:
        fn, where = _try()
        return fn, where, None
    except Exception as exc:
        err = exc
    src = REPO_ROOT / "src"
    if src.is_dir() and str(src) not in sys.path:  # convenience: running without PYTHONPATH=src
        sys.path.insert(0, str(src))
        for name in [m for m in sys.modules if m.split(".")[0] == "tensortext"]:
            del sys.modules[name]
        try:
            fn, where = _try()
            return fn, where, None
        except Exception as exc:
            err = exc
    return None, None, f"tensortext.sentence_bleu not importable: {err!r}"


def build_impls(args: argparse.Namespace) -> tuple[dict[str, Impl], dict[str, Any]]:
    info: dict[str, Any] = {}
    impls: dict[str, Impl] = {}

    # NLTK ------------------------------------------------------------------
    try:
        from nltk.translate.bleu_score import SmoothingFunction
        from nltk.translate.bleu_score import sentence_bleu as nltk_sentence_bleu

        method3 = SmoothingFunction().method3

        def make_nltk(hyp: torch.Tensor, ref: torch.Tensor) -> Callable[[], Any]:
            def run() -> list[float]:
                hs, rs = _rows(hyp), _rows(ref)
                return [
                    nltk_sentence_bleu([r], h, smoothing_function=method3)
                    for h, r in zip(hs, rs, strict=True)
                ]

            return run

        nltk_unavail = None
    except ImportError as exc:
        make_nltk, nltk_unavail = None, repr(exc)  # type: ignore[assignment]
    impls["nltk"] = Impl(
        "nltk",
        "NLTK (method3)",
        "nltk.translate.bleu_score.sentence_bleu, "
        "SmoothingFunction().method3, loop over sentences, inputs via .tolist()",
        "host-cpu",
        None,
        make_nltk,
        _list_scores,
        nltk_unavail,
        python_loop=True,
    )

    # sacreBLEU -------------------------------------------------------------
    try:
        from sacrebleu.metrics import BLEU

        logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # per-call effective_order warning
        sacre = BLEU(tokenize="none", smooth_method="exp", effective_order=False)

        def make_sacre(hyp: torch.Tensor, ref: torch.Tensor) -> Callable[[], Any]:
            def run() -> list[float]:
                hs, rs = _strings(hyp), _strings(ref)
                return [
                    sacre.sentence_score(h, [r]).score / 100.0 for h, r in zip(hs, rs, strict=True)
                ]

            return run

        sacre_unavail = None
    except ImportError as exc:
        make_sacre, sacre_unavail = None, repr(exc)  # type: ignore[assignment]
    impls["sacrebleu"] = Impl(
        "sacrebleu",
        "sacreBLEU (exp)",
        'sacrebleu BLEU(tokenize="none", smooth_method="exp", '
        "effective_order=False).sentence_score loop on space-joined IDs, score/100",
        "host-cpu",
        "nltk",
        make_sacre,
        _list_scores,
        sacre_unavail,
        python_loop=True,
    )

    # torchmetrics ----------------------------------------------------------
    try:
        from torchmetrics.functional.text import bleu_score as tm_bleu

        def make_tm(hyp: torch.Tensor, ref: torch.Tensor) -> Callable[[], Any]:
            def run() -> list[float]:
                hs, rs = _strings(hyp), _strings(ref)
                return [
                    float(tm_bleu([h], [[r]], n_gram=4, smooth=False))
                    for h, r in zip(hs, rs, strict=True)
                ]

            return run

        tm_unavail = None
    except ImportError as exc:
        make_tm, tm_unavail = None, repr(exc)  # type: ignore[assignment]
    impls["torchmetrics"] = Impl(
        "torchmetrics",
        "torchmetrics (loop)",
        "torchmetrics.functional.text.bleu_score("
        "n_gram=4, smooth=False) called once per sentence on space-joined IDs (CPU)",
        "host-cpu",
        "nltk",
        make_tm,
        _list_scores,
        tm_unavail,
        python_loop=True,
    )

    # rxlm ------------------------------------------------------------------
    rx_fn, rx_path, rx_unavail = load_rxlm()
    info["rxlm_module"] = rx_path

    def make_rx(hyp: torch.Tensor, ref: torch.Tensor) -> Callable[[], Any]:
        assert rx_fn is not None
        ref3 = ref.unsqueeze(1)  # [B, 1, L]

        def run() -> torch.Tensor:
            return rx_fn(hyp, ref3)  # pad_token_id=0 (absent), smoothing 'exp'

        return run

    impls["rxlm"] = Impl(
        "rxlm",
        "rxlm TensorBLEU",
        "rxlm/metrics/tensorbleu.py tensor_sentence_bleu(cand, "
        "refs[:, None]) with its defaults (pad 0, smoothing 'exp'); module file loaded alone",
        "device",
        "nltk",
        make_rx if rx_fn else None,
        _tensor_scores,
        rx_unavail,
    )

    # ours ------------------------------------------------------------------
    ours, ours_where, ours_unavail = load_ours()
    info["tensortext_module"] = ours_where
    validate = not args.no_validate

    def make_ours(compat: str, smooth: str) -> Callable[..., Callable[[], Any]]:
        def make(hyp: torch.Tensor, ref: torch.Tensor) -> Callable[[], Any]:
            assert ours is not None

            def run() -> torch.Tensor:
                return ours(hyp, ref, compat=compat, smooth_method=smooth, validate=validate)

            return run

        return make

    impls["ours-nltk"] = Impl(
        "ours-nltk",
        "tensortext (nltk)",
        'tensortext.sentence_bleu(compat="nltk", '
        f'smooth_method="method3", validate={validate}), float32',
        "device",
        "nltk",
        make_ours("nltk", "method3") if ours else None,
        _tensor_scores,
        ours_unavail,
    )
    impls["ours-sacrebleu"] = Impl(
        "ours-sacrebleu",
        "tensortext (sacrebleu)",
        'tensortext.sentence_bleu(compat="sacrebleu"'
        f', smooth_method="exp", validate={validate}), float32',
        "device",
        "sacrebleu",
        make_ours("sacrebleu", "exp") if ours else None,
        _tensor_scores,
        ours_unavail,
    )
    info["ours_fn"] = ours
    mod = sys.modules.get("tensortext")
    info["tensortext_version"] = getattr(mod, "__version__", None) if mod else None
    return impls, info


def rxlm_peak_estimate(hyp: torch.Tensor, ref: torch.Tensor) -> int:
    """Bytes rxlm's per-sentence path needs at its peak (dominant term only).

    For each order n it builds int64 count matrices of shape [B, U_n] (U_n = distinct n-grams in
    the whole batch, hypotheses + references) and holds 4 of them at once (candidate counts,
    running max, this reference's counts, torch.maximum's output) while the previous order's
    matrices are still referenced; U_4 is the largest.  Measured peaks on CPU are 5.1-5.3x
    ``B * U_4 * 8`` bytes at 64..512 x 256..1024, hence the factor 5.5.
    """
    b = hyp.shape[0]
    both = torch.cat([hyp, ref], 0).cpu()
    g = both.unfold(1, 4, 1).reshape(-1, 4).to(torch.int64)
    key = ((g[:, 0] * VOCAB + g[:, 1]) * VOCAB + g[:, 2]) * VOCAB + g[:, 3]  # < 2^60
    u4 = int(torch.unique(key).numel())
    return int(5.5 * b * u4 * 8)


# --------------------------------------------------------------------------- running


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--device",
        choices=["cpu", "cuda"],
        default=common.default_device(),
        help="device for the tensor implementations (default: cuda if available)",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch.set_num_threads (default 1 on CPU, torch's default on CUDA)",
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke test: batches {QUICK_BATCHES} x seq lens {QUICK_SEQ_LENS}, repeat 3",
    )
    p.add_argument("--repeat", type=int, default=None, help="timed calls per point (default 7)")
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
        help="stop timing a point once its timed calls used this many seconds (at least 3 "
        "calls are always timed; only slow points are affected: Python loops, rxlm at large "
        "sizes) (default 20)",
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
        help="skip rxlm where its predicted peak exceeds this fraction of free memory "
        "(default 0.9)",
    )
    p.add_argument("--no-validate", action="store_true", help="call tensortext with validate=False")
    p.add_argument(
        "--time-limit",
        type=float,
        default=0.0,
        help="start no new grid point after this many seconds; the rest are recorded as "
        "skipped (0: no limit). The JSON is rewritten after every point.",
    )
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--name", default="bleu", help="result file stem (default: bleu)")
    p.add_argument("--out-dir", type=Path, default=common.RESULTS_DIR)
    p.add_argument("--no-plot", action="store_true")
    p.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="JSON",
        help="print the markdown table (as in bench/README.md) of an existing result file, "
        "run nothing",
    )
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        p.error("--device cuda requested but torch.cuda.is_available() is False")
    if args.batches is None:
        args.batches = QUICK_BATCHES if args.quick else FULL_BATCHES
    if args.seq_lens is None:
        args.seq_lens = QUICK_SEQ_LENS if args.quick else FULL_SEQ_LENS
    if args.repeat is None:
        args.repeat = 3 if args.quick else 7
    if args.quick:
        args.warmup = min(args.warmup, 1)
        args.budget = min(args.budget, 2.0)
    if "nltk" not in args.impls:
        args.impls = ["nltk", *args.impls]
    args.impls = [k for k in IMPL_ORDER if k in args.impls]
    return args


def max_abs_diff(a: np.ndarray | None, b: np.ndarray | None) -> float | None:
    if a is None or b is None:
        return None
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def run_point(
    impls: dict[str, Impl],
    args: argparse.Namespace,
    dev: torch.device,
    batch: int,
    seq_len: int,
    hyp_cpu: torch.Tensor,
    ref_cpu: torch.Tensor,
    extra: dict[str, Any],
) -> list[dict[str, Any]]:
    hyp, ref = hyp_cpu.to(dev), ref_cpu.to(dev)
    scores: dict[str, np.ndarray] = {}
    rows: list[dict[str, Any]] = []
    fns: dict[str, Callable[[], Any]] = {}
    warm: dict[str, int] = {}
    mem_dev: dict[str, torch.device | str] = {}
    for key in args.impls:
        impl = impls[key]
        row: dict[str, Any] = {
            "batch": batch,
            "seq_len": seq_len,
            "impl": key,
            "label": impl.label,
            "status": "ok",
        }
        rows.append(row)
        if impl.unavailable or impl.make is None:
            row.update(status="unavailable", reason=impl.unavailable)
            continue
        if (
            key == "torchmetrics"
            and args.torchmetrics_max_tokens
            and batch * seq_len > args.torchmetrics_max_tokens
        ):
            row.update(
                status="skipped",
                reason=f"batch*seq_len > --torchmetrics-max-tokens="
                f"{args.torchmetrics_max_tokens} (too slow)",
            )
            continue
        if key == "rxlm":
            need = rxlm_peak_estimate(hyp_cpu, ref_cpu)
            free = common.available_memory_bytes(dev)
            row["predicted_peak_mib"] = need / common.MiB
            if free is not None and need > args.rxlm_mem_fraction * free:
                row.update(
                    status="skipped",
                    reason=f"predicted peak {need / 2**30:.1f} GiB > "
                    f"{args.rxlm_mem_fraction:.0%} of free {free / 2**30:.1f} GiB",
                )
                continue
        try:
            fns[key] = impl.make(hyp, ref)
        except Exception as exc:
            row.update(status="error", reason=f"{type(exc).__name__}: {exc}")
            continue
        warm[key] = 1 if impl.python_loop else args.warmup
        mem_dev[key] = dev if impl.runs_on == "device" else torch.device("cpu")

    # Round-robin timing: every implementation once per round, so drifting machine speed
    # (a busy SMT sibling, another process) hits all of them alike.  Peak memory is measured on
    # the last warm-up call of each, never on a timed call.
    timings, errors = common.time_interleaved(
        fns,
        warmup=warm,
        repeat=args.repeat,
        device=dev,
        budget_s=args.budget,
        measure_memory=True,
        memory_device=mem_dev,
        rewarm_below_s=REWARM_BELOW_S,
    )
    for row in rows:
        key = row["impl"]
        impl = impls[key]
        if key in errors:
            exc = errors[key]
            row.update(
                status="error",
                reason=f"{type(exc).__name__}: {exc}",
                traceback="".join(traceback.format_exception(exc, limit=-4)),
            )
            log.warning("%s failed at B=%d L=%d: %s", key, batch, seq_len, exc)
            continue
        if key not in timings:
            continue
        timing = timings[key]
        assert impl.to_scores is not None
        s = impl.to_scores(timing.value)
        scores[key] = s
        row.update(timing.as_dict())
        row["mean_score"] = float(s.mean())
        row["min_score"] = float(s.min())
        if impl.compare_to:
            row["diff_vs"] = impl.compare_to
            row["max_abs_diff"] = max_abs_diff(s, scores.get(impl.compare_to))
        row["max_abs_diff_vs_nltk"] = max_abs_diff(s, scores.get("nltk"))
        if key.startswith("ours") and extra.get("ours_fn") is not None:
            # accuracy of the same call in float64 (untimed)
            compat, smooth = ("nltk", "method3") if key == "ours-nltk" else ("sacrebleu", "exp")
            try:
                s64 = _tensor_scores(
                    extra["ours_fn"](
                        hyp, ref, compat=compat, smooth_method=smooth, dtype=torch.float64
                    )
                )
                row["max_abs_diff_float64"] = max_abs_diff(s64, scores.get(impl.compare_to or ""))
            except Exception as exc:
                row["max_abs_diff_float64"] = None
                row["float64_error"] = repr(exc)
    load = common.loadavg()
    for r in rows:
        r["loadavg_1m_after"] = load[0] if load else None
    base = next((r for r in rows if r["impl"] == "nltk" and r["status"] == "ok"), None)
    rx = next((r for r in rows if r["impl"] == "rxlm" and r["status"] == "ok"), None)
    for r in rows:
        if r["status"] != "ok":
            continue
        r["speedup_vs_nltk"] = base["median_s"] / r["median_s"] if base else None
        if r["impl"].startswith("ours") and rx:
            r["speedup_vs_rxlm"] = rx["median_s"] / r["median_s"]
    return rows


def fmt(x: float | None, spec: str) -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def print_rows(rows: list[dict[str, Any]], header: bool) -> None:
    if header:
        print(
            f"{'L':>5} {'B':>4}  {'implementation':<23} {'median ms':>10} {'x NLTK':>8} "
            f"{'peak MiB':>9} {'max|diff|':>9} {'vs':<9} {'n':>2}  note",
            flush=True,
        )
    for r in rows:
        if r["status"] != "ok":
            print(
                f"{r['seq_len']:>5} {r['batch']:>4}  {r['label']:<23} {r['status']:>10}  "
                f"{r.get('reason', '')}",
                flush=True,
            )
            continue
        print(
            f"{r['seq_len']:>5} {r['batch']:>4}  {r['label']:<23} "
            f"{r['median_s'] * 1e3:>10.2f} {fmt(r.get('speedup_vs_nltk'), '.1f'):>8} "
            f"{fmt(r.get('peak_extra_mib'), '.1f'):>9} {fmt(r.get('max_abs_diff'), '.1e'):>9} "
            f"{r.get('diff_vs', ''):<9} {r['n_samples']:>2}  "
            + (f"x rxlm {r['speedup_vs_rxlm']:.1f}" if "speedup_vs_rxlm" in r else ""),
            flush=True,
        )


def markdown_table(payload: dict[str, Any]) -> str:
    """The README table for a result JSON: one row per (seq len, batch), ms and x NLTK."""
    res = payload["results"]
    keys = [k for k in IMPL_ORDER if k in payload["implementations"]]
    labels = [payload["implementations"][k]["label"] for k in keys]
    lines = [
        "| L | B | " + " | ".join(labels) + " | ours peak MiB | rxlm peak MiB |",
        "|---:|---:|" + "---:|" * (len(keys) + 2),
    ]
    points = sorted({(r["seq_len"], r["batch"]) for r in res})
    for L, B in points:
        at = {r["impl"]: r for r in res if r["seq_len"] == L and r["batch"] == B}
        cells = []
        for k in keys:
            r = at.get(k)
            if not r or r["status"] != "ok":
                cells.append(r["status"] if r else "-")
            elif k == "nltk":
                cells.append(f"{r['median_s'] * 1e3:.1f} ms")
            else:
                cells.append(f"{r['median_s'] * 1e3:.1f} ms ({r['speedup_vs_nltk']:.2g}x)")
        mem = [
            fmt(at[k].get("peak_extra_mib"), ".0f") if k in at and at[k]["status"] == "ok" else "-"
            for k in ("ours-nltk", "rxlm")
        ]
        lines.append(f"| {L} | {B} | " + " | ".join(cells) + f" | {mem[0]} | {mem[1]} |")
    return "\n".join(lines)


def plot(
    results: list[dict[str, Any]],
    impls: dict[str, Impl],
    args: argparse.Namespace,
    info: common.DeviceInfo,
    path: Path,
) -> Path:
    from matplotlib.ticker import NullLocator

    seq_lens = sorted({r["seq_len"] for r in results})
    fig, axes = common.new_figure(len(seq_lens))
    markers = dict(zip(IMPL_ORDER, "osv^DP", strict=True))
    for ax, L in zip(axes, seq_lens, strict=True):
        for key in args.impls:
            pts = sorted(
                (r["batch"], r["median_s"])
                for r in results
                if r["seq_len"] == L and r["impl"] == key and r["status"] == "ok"
            )
            if not pts:
                continue
            where = (
                ""
                if impls[key].runs_on == "host-cpu" or info.device.type == "cpu"
                else f" [{info.slug}]"
            )
            ax.plot(
                [p[0] for p in pts],
                [p[1] for p in pts],
                marker=markers[key],
                label=impls[key].label + where,
                linestyle="-" if key.startswith("ours") else "--",
            )
        ax.set_xscale("log", base=2)
        batches = sorted({r["batch"] for r in results if r["seq_len"] == L})
        ax.set_xticks(batches, [str(b) for b in batches])
        ax.xaxis.set_minor_locator(NullLocator())
        ax.set_yscale("log")
        ax.set_xlabel("batch size (sentences)")
        ax.set_ylabel("median time per batch (s)")
        ax.set_title(f"per-sentence BLEU, seq len {L}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"{info.name}"
        + (f" (Python baselines: {info.host_cpu})" if info.device.type == "cuda" else ""),
        fontsize=9,
    )
    return common.save_figure(fig, path)


def checks(results: list[dict[str, Any]], dev: torch.device) -> dict[str, Any]:
    """The targets at batch 256 x seq len 1024 (stated for CPU), evaluated where present."""
    b, L = TARGET_POINT
    at = {r["impl"]: r for r in results if r["batch"] == b and r["seq_len"] == L}
    out: dict[str, Any] = {"point": {"batch": b, "seq_len": L}, "device": str(dev)}
    for key in ("ours-nltk", "ours-sacrebleu"):
        r = at.get(key)
        if not r or r["status"] != "ok":
            continue
        rx = at.get("rxlm")
        out[key] = {
            "speedup_vs_nltk": r.get("speedup_vs_nltk"),
            "speedup_vs_nltk_ge_5": (r.get("speedup_vs_nltk") or 0) >= 5,
            "faster_than_rxlm": (rx["median_s"] > r["median_s"])
            if rx and rx["status"] == "ok"
            else None,
            "peak_extra_mib": r.get("peak_extra_mib"),
            "peak_extra_le_100mib": (r["peak_extra_mib"] <= 100)
            if r.get("peak_extra_mib") is not None
            else None,
        }
    rx = at.get("rxlm")
    if rx and rx["status"] == "ok":
        out["rxlm_peak_extra_mib"] = rx.get("peak_extra_mib")
    diffs = [
        r.get("max_abs_diff")
        for r in results
        if r["status"] == "ok"
        and r["impl"].startswith("ours")
        and r.get("max_abs_diff") is not None
    ]
    out["ours_max_abs_diff_overall"] = max(diffs) if diffs else None
    return out


def make_payload(
    args: argparse.Namespace,
    dev: torch.device,
    impls: dict[str, Impl],
    extra: dict[str, Any],
    meta: dict[str, Any],
    results: list[dict[str, Any]],
    t_start: float,
) -> dict[str, Any]:
    return {
        "benchmark": "per-sentence token-ID BLEU",
        "metadata": meta,
        "config": {
            "batches": args.batches,
            "seq_lens": args.seq_lens,
            "repeat": args.repeat,
            "warmup_tensor_impls": args.warmup,
            "warmup_python_loops": 1,
            "budget_s": args.budget,
            "time_limit_s": args.time_limit or None,
            "seed": args.seed,
            "quick": args.quick,
            "validate": not args.no_validate,
            "torchmetrics_max_tokens": args.torchmetrics_max_tokens or None,
            "rxlm_mem_fraction": args.rxlm_mem_fraction,
            "data": DataConfig().as_dict(),
            "timing": "median wall-clock seconds per batch call; CUDA synchronised before and "
            "after each call; implementations interleaved round-robin (rotating start) per grid "
            "point; one untimed call right before each timed one for implementations whose last "
            "call took < rewarm_below_s; Python loops include tensor->list/string conversion",
            "rewarm_below_s": REWARM_BELOW_S,
            "memory": "peak extra bytes of one untimed call: CUDA max_memory_allocated minus "
            "memory_allocated before; CPU VmHWM after minus VmRSS before, with malloc_trim(0) "
            "and /proc/self/clear_refs=5 before the call (see bench/README.md)",
        },
        "implementations": {
            k: {
                "label": impls[k].label,
                "description": impls[k].description,
                "runs_on": "host CPU" if impls[k].runs_on == "host-cpu" else str(dev),
                "max_abs_diff_vs": impls[k].compare_to,
                "unavailable": impls[k].unavailable,
            }
            for k in args.impls
        },
        "modules": {k: v for k, v in extra.items() if k != "ours_fn"},
        "results": results,
        "checks": checks(results, dev),
        "loadavg_at_end": common.loadavg(),
        "wall_time_s": time.perf_counter() - t_start,
    }


def main(argv: list[str] | None = None) -> int:
    t_start = time.perf_counter()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    warnings.filterwarnings("ignore", message=".*effective_order.*")
    args = parse_args(argv)
    if args.report is not None:
        import json

        print(markdown_table(json.loads(args.report.read_text(encoding="utf-8"))))
        return 0
    dev = torch.device(args.device)
    threads = args.threads if args.threads is not None else (1 if dev.type == "cpu" else None)
    if threads is not None:
        torch.set_num_threads(threads)
        with contextlib.suppress(RuntimeError):
            torch.set_num_interop_threads(threads)
    info = common.device_info(dev)
    impls, extra = build_impls(args)
    for key in args.impls:
        if impls[key].unavailable:
            log.warning("%s unavailable: %s", key, impls[key].unavailable)

    print(f"device: {info.name}   slug: {info.slug}   torch {torch.__version__}", flush=True)
    if dev.type == "cuda":
        print(f"host CPU (Python baselines): {info.host_cpu}", flush=True)
    print(
        f"grid: batches {args.batches} x seq lens {args.seq_lens}, repeat {args.repeat}", flush=True
    )

    maker = DataMaker(DataConfig(), args.seed)
    # Warm every implementation once on a tiny input: lazy imports, kernel caches, first-call
    # allocations must not count in the first grid point's memory.
    h0, r0 = maker.make(2, 32)
    for key in args.impls:
        impl = impls[key]
        if impl.make is not None and not impl.unavailable:
            try:
                impl.make(h0.to(dev), r0.to(dev))()
            except Exception as exc:
                log.warning("warm-up of %s failed: %s", key, exc)
    common.synchronize(dev)

    json_path = common.results_path(args.name, info, ".json", args.out_dir)
    png_path = common.results_path(args.name, info, ".png", args.out_dir)
    meta = common.run_metadata(
        info, ["tensortext", "nltk", "sacrebleu", "torchmetrics", "rxlm", "numpy", "matplotlib"]
    )
    results: list[dict[str, Any]] = []
    first = True
    for L in args.seq_lens:
        for B in args.batches:
            elapsed = time.perf_counter() - t_start
            if args.time_limit and elapsed > args.time_limit:
                rows = [
                    {
                        "batch": B,
                        "seq_len": L,
                        "impl": k,
                        "label": impls[k].label,
                        "status": "skipped",
                        "reason": f"--time-limit {args.time_limit:g} s reached",
                    }
                    for k in args.impls
                ]
            else:
                hyp, ref = maker.make(B, L)
                rows = run_point(impls, args, dev, B, L, hyp, ref, extra)
            print_rows(rows, header=first)
            first = False
            results.extend(rows)
            # after every point, so that a run killed at a time limit leaves its results
            payload = make_payload(args, dev, impls, extra, meta, results, t_start)
            common.write_json(json_path, payload)

    payload = make_payload(args, dev, impls, extra, meta, results, t_start)
    common.write_json(json_path, payload)
    print(f"\nwrote {json_path}", flush=True)
    if not args.no_plot:
        print(f"wrote {plot(results, impls, args, info, png_path)}", flush=True)
    print(f"checks @ B={TARGET_POINT[0]} L={TARGET_POINT[1]}: {payload['checks']}", flush=True)
    print(f"total wall time {payload['wall_time_s']:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
