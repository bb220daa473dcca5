"""What bench_bleu.py compares: its synthetic data and the implementations it times.

* :class:`DataMaker`: token-ID sentence pairs, Zipfian tokens, locally shuffled references with
  30-50 % of the tokens replaced, so that every n-gram order has matches.
* ``load_*``: each returns ``score(hyp [B, L], ref [B, L]) -> B scores`` or raises ImportError.
"""

from __future__ import annotations

import importlib.util
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

VOCAB = 32000  # IDs are drawn from 1..VOCAB-1; 0 is never used (rxlm treats 0 as padding)
Scorer = Callable[[Tensor, Tensor], Any]  # (hyp [B, L], ref [B, L]) -> B scores


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
    """``make(batch, seq_len)``: the same seeded pair for the same point, whatever ran before."""

    def __init__(self, cfg: DataConfig, seed: int) -> None:
        self.cfg = cfg
        self.seed = seed
        rng = np.random.default_rng(seed)
        self.ids = rng.permutation(np.arange(1, cfg.vocab, dtype=np.int64))
        ranks = np.arange(1, cfg.vocab, dtype=np.float64)
        p = 1.0 / (ranks + cfg.zipf_q) ** cfg.zipf_s
        self.cdf = np.cumsum(p / p.sum())
        self.cdf[-1] = 1.0

    def _sample(self, rng: np.random.Generator, size: int | tuple[int, ...]) -> np.ndarray:
        u = rng.random(size)
        return self.ids[np.searchsorted(self.cdf, u, side="right").clip(0, len(self.ids) - 1)]

    def _reference(self, rng: np.random.Generator, row: np.ndarray) -> np.ndarray:
        cfg, seq_len = self.cfg, len(row)
        (lo, hi), (rlo, rhi) = cfg.shuffle_span, cfg.replace_span
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
        return out

    def make(self, batch: int, seq_len: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(hyp [B, L], ref [B, L]) int64 on CPU."""
        rng = np.random.default_rng([self.seed, batch, seq_len])
        hyp = self._sample(rng, (batch, seq_len))
        ref = np.stack([self._reference(rng, hyp[b]) for b in range(batch)])
        return torch.from_numpy(hyp), torch.from_numpy(ref)


# --------------------------------------------------------------------------- implementations


def load_nltk() -> Scorer:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    method3 = SmoothingFunction().method3

    def run(hyp: Tensor, ref: Tensor) -> list[float]:
        pairs = zip(hyp.tolist(), ref.tolist(), strict=True)
        return [sentence_bleu([r], h, smoothing_function=method3) for h, r in pairs]

    return run


def _strings(t: Tensor) -> list[str]:
    return [" ".join(map(str, row)) for row in t.tolist()]


def load_sacrebleu() -> Scorer:
    from sacrebleu.metrics import BLEU

    logging.getLogger("sacrebleu").setLevel(logging.ERROR)  # per-call effective_order warning
    sacre = BLEU(tokenize="none", smooth_method="exp", effective_order=False)

    def run(hyp: Tensor, ref: Tensor) -> list[float]:
        pairs = zip(_strings(hyp), _strings(ref), strict=True)
        return [sacre.sentence_score(h, [r]).score / 100.0 for h, r in pairs]

    return run


def load_torchmetrics() -> Scorer:
    from torchmetrics.functional.text import bleu_score

    def run(hyp: Tensor, ref: Tensor) -> list[float]:
        pairs = zip(_strings(hyp), _strings(ref), strict=True)
        return [float(bleu_score([h], [[r]], n_gram=4, smooth=False)) for h, r in pairs]

    return run


def rxlm_module_path() -> Path:
    spec = importlib.util.find_spec("rxlm")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("rxlm not installed (pip install --no-deps rxlm)")
    path = Path(next(iter(spec.submodule_search_locations))) / "metrics" / "tensorbleu.py"
    if not path.is_file():
        raise ImportError(f"{path} not found")
    return path


def load_rxlm() -> Scorer:
    """rxlm/metrics/tensorbleu.py loaded alone (``import rxlm`` pulls in heavy dependencies)."""
    mspec = importlib.util.spec_from_file_location("_bench_rxlm", rxlm_module_path())
    assert mspec is not None and mspec.loader is not None
    module = importlib.util.module_from_spec(mspec)
    mspec.loader.exec_module(module)
    # [B, 1, L]: one reference per hypothesis; defaults pad_token_id=0 (absent), smoothing 'exp'
    return lambda hyp, ref: module.tensor_sentence_bleu(hyp, ref.unsqueeze(1))


def load_ours(compat: str, smooth: str, validate: bool) -> Callable[[], Scorer]:
    def load() -> Scorer:
        from tensortext.bleu import sentence_bleu

        return partial(sentence_bleu, compat=compat, smooth_method=smooth, validate=validate)

    return load


def rxlm_peak_estimate(hyp: Tensor, ref: Tensor) -> int:
    """Bytes rxlm's per-sentence path needs at its peak (dominant term only).

    For each order n it builds int64 count matrices of shape [B, U_n] (U_n = distinct n-grams in
    the whole batch, hypotheses + references) and holds 4 of them at once (candidate counts,
    running max, this reference's counts, torch.maximum's output) while the previous order's
    matrices are still referenced; U_4 is the largest.  Measured peaks on CPU are 5.1-5.3x
    ``B * U_4 * 8`` bytes at 64..512 x 256..1024, hence the factor 5.5.
    """
    g = torch.cat([hyp, ref], 0).cpu().unfold(1, 4, 1).reshape(-1, 4).to(torch.int64)
    key = ((g[:, 0] * VOCAB + g[:, 1]) * VOCAB + g[:, 2]) * VOCAB + g[:, 3]  # < 2^60
    return int(5.5 * hyp.shape[0] * int(torch.unique(key).numel()) * 8)
