"""Hypothesis strategies for the BLEU parity tests.

A :class:`Case` is one logical batch (plain lists, for the reference libraries) together with one
tensor encoding of it (for tensortext).  Vocabularies are tiny so that n-gram matches of every
order are frequent, and IDs come either from a small range or from [2**20, 2**40] so that any
implementation that hashes or packs IDs into fewer bits is caught.

The number of examples per test comes from ``TENSORTEXT_HYPOTHESIS_EXAMPLES`` (default 60).
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any

import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from oracles.bleu import (
    NLTK_METHODS,
    NLTK_SMOOTH_PARAM,
    SACREBLEU_SMOOTH_VALUE_METHODS,
    pack_hyps,
    pack_refs,
    pad_with_id,
    present_refs,
)

MAX_EXAMPLES = int(os.environ.get("TENSORTEXT_HYPOTHESIS_EXAMPLES", "60"))

SETTINGS = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

MAX_LEN = 30
SMALL_IDS = (0, 9)
LARGE_IDS = (2**20, 2**40)
INT32_MAX = 2**31 - 1


@dataclass
class Case:
    hyps: list[list[int]]
    slots: list[list[list[int]]]  # per row, per slot; [] = absent slot
    kwargs: dict[str, Any] = field(default_factory=dict)  # tensors + pad_id for tensortext
    encoding: str = ""

    @property
    def refs(self) -> list[list[list[int]]]:
        return present_refs(self.slots)

    def to(self, device: str) -> Case:
        kw = {
            k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in self.kwargs.items()
        }
        return Case(self.hyps, self.slots, kw, self.encoding)

    def rows(self, index: list[int] | slice) -> Case:
        """Select rows of both the lists and the tensors (same widths)."""
        idx = list(range(len(self.hyps)))[index] if isinstance(index, slice) else list(index)
        t_idx = torch.tensor(idx, dtype=torch.long)
        kw = {
            k: (v.index_select(0, t_idx.to(v.device)) if isinstance(v, torch.Tensor) else v)
            for k, v in self.kwargs.items()
        }
        return Case([self.hyps[i] for i in idx], [self.slots[i] for i in idx], kw, self.encoding)


# --------------------------------------------------------------------------------------------
# Logical batches
# --------------------------------------------------------------------------------------------


@st.composite
def alphabets(draw: st.DrawFn) -> list[int]:
    kind = draw(st.sampled_from(["small", "small", "large", "mixed"]))
    size = draw(st.integers(1, 6))
    small = st.integers(*SMALL_IDS)
    large = st.integers(*LARGE_IDS)
    elem = {"small": small, "large": large, "mixed": st.one_of(small, large)}[kind]
    return draw(st.lists(elem, min_size=size, max_size=size, unique=True))


@st.composite
def sequences(draw: st.DrawFn, alphabet: list[int], max_len: int = MAX_LEN) -> list[int]:
    # Mostly short, sometimes up to max_len.
    limit = draw(st.sampled_from([6, 12, max_len]))
    return draw(st.lists(st.sampled_from(alphabet), max_size=limit))


@st.composite
def derived(draw: st.DrawFn, base: list[int], alphabet: list[int]) -> list[int]:
    """A noisy copy of ``base`` (a window with a few substitutions / insertions / deletions),
    so that long n-gram matches are common."""
    if not base:
        return draw(sequences(alphabet))
    start = draw(st.integers(0, len(base)))
    stop = draw(st.integers(start, len(base)))
    out = list(base[start:stop]) if draw(st.booleans()) else list(base)
    for _ in range(draw(st.integers(0, 3))):
        op = draw(st.sampled_from(["sub", "ins", "del"]))
        pos = draw(st.integers(0, len(out)))
        tok = draw(st.sampled_from(alphabet))
        if op == "sub" and pos < len(out):
            out[pos] = tok
        elif op == "ins":
            out.insert(pos, tok)
        elif op == "del" and pos < len(out):
            del out[pos]
    return out[:MAX_LEN]


@st.composite
def logical_batches(
    draw: st.DrawFn,
    *,
    min_rows: int = 0,
    max_rows: int = 6,
    ref_dim: int | None = None,
) -> tuple[list[list[int]], list[list[list[int]]], int]:
    """Returns ``(hyps, slots, ref_dim)``.  For ref_dim 2 every row has exactly one slot; for
    ref_dim 3 every row has R in 1..3 slots, any of which may be absent (empty)."""
    alphabet = draw(alphabets())
    b = draw(st.integers(min_rows, max_rows))
    dim = draw(st.sampled_from([2, 3])) if ref_dim is None else ref_dim
    r = 1 if dim == 2 else draw(st.integers(1, 3))
    hyps, slots = [], []
    for _ in range(b):
        hyp = draw(sequences(alphabet))
        row = []
        for _ in range(r):
            kind = draw(st.sampled_from(["derived", "derived", "independent", "absent"]))
            if kind == "absent":
                row.append([])
            elif kind == "derived":
                row.append(draw(derived(hyp, alphabet)))
            else:
                row.append(draw(sequences(alphabet)))
        hyps.append(hyp)
        slots.append(row)
    return hyps, slots, dim


# --------------------------------------------------------------------------------------------
# Tensor encodings of a logical batch
# --------------------------------------------------------------------------------------------


def _fits_int32(values: list[int]) -> bool:
    return all(-(2**31) <= v <= INT32_MAX for v in values)


@st.composite
def encodings(
    draw: st.DrawFn,
    hyps: list[list[int]],
    slots: list[list[list[int]]],
    ref_dim: int,
    *,
    hyp_mode: str | None = None,
    ref_mode: str | None = None,
) -> Case:
    """Encode a logical batch.  Per tensor, the mode is ``"lens"`` (explicit lengths; positions
    past the length hold junk, possibly negative or equal to pad_id) or ``"pad"`` (no lengths;
    ``pad_id`` tokens placed right, left or scattered inside)."""
    hyp_mode = hyp_mode or draw(st.sampled_from(["lens", "pad"]))
    ref_mode = ref_mode or draw(st.sampled_from(["lens", "pad"]))
    hyp_tokens = {t for h in hyps for t in h}
    ref_tokens = {t for row in slots for s in row for t in s}
    forbidden = (hyp_tokens if hyp_mode == "pad" else set()) | (
        ref_tokens if ref_mode == "pad" else set()
    )
    if "pad" in (hyp_mode, ref_mode):
        pad_id = draw(
            st.one_of(
                st.sampled_from([0, 1, 3, -1, -100, 2**40 + 1]),
                st.integers(*SMALL_IDS),
            ).filter(lambda p: p not in forbidden)
        )
    else:
        # pad_id may still be passed: explicit lengths take priority, so it must be ignored
        # even when it equals real tokens.
        candidates = sorted(hyp_tokens | ref_tokens) or [0]
        pad_id = draw(st.one_of(st.none(), st.sampled_from(candidates)))
    junk = draw(st.sampled_from([7, 0, -1, 2**40 + 3] + ([pad_id] if pad_id is not None else [])))

    all_values = list(hyp_tokens | ref_tokens) + [junk] + ([pad_id] if pad_id is not None else [])
    id_dtype = torch.int64
    if _fits_int32(all_values) and draw(st.booleans()):
        id_dtype = torch.int32
    lens_dtype = draw(st.sampled_from([torch.int64, torch.int32]))
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))

    kwargs: dict[str, Any] = {"pad_id": pad_id}
    desc = []
    # Hypotheses.
    hyp_width = max([0, *(len(h) for h in hyps)]) + draw(st.integers(0, 3))
    if hyp_mode == "lens":
        ids, lens = pack_hyps(hyps, width=hyp_width, junk=junk, dtype=id_dtype)
        kwargs.update(hyp_ids=ids, hyp_lens=lens.to(lens_dtype))
        desc.append(f"hyp=lens(junk={junk})")
    else:
        layout = draw(st.sampled_from(["right", "left", "inner"]))
        ids = pad_with_id(
            hyps, pad_id=pad_id, width=hyp_width, layout=layout, rng=rnd, dtype=id_dtype
        )
        kwargs.update(hyp_ids=ids, hyp_lens=None)
        desc.append(f"hyp=pad({layout})")
    # References.
    b = len(hyps)
    r = max([1, *(len(row) for row in slots)])
    ref_width = max([0, *(len(s) for row in slots for s in row)]) + draw(st.integers(0, 3))
    if ref_mode == "lens":
        ids, lens = pack_refs(slots, num_slots=r, width=ref_width, junk=junk, dtype=id_dtype)
        if ref_dim == 2:
            ids, lens = ids[:, 0, :], lens[:, 0]
        kwargs.update(ref_ids=ids, ref_lens=lens.to(lens_dtype))
        desc.append(f"ref{ref_dim}d=lens(junk={junk})")
    else:
        layout = draw(st.sampled_from(["right", "left", "inner"]))
        flat = [row[j] for row in slots for j in range(r)]
        ids = pad_with_id(
            flat, pad_id=pad_id, width=ref_width, layout=layout, rng=rnd, dtype=id_dtype
        )
        ids = ids.reshape(b, r, ref_width)
        if ref_dim == 2:
            ids = ids[:, 0, :]
        kwargs.update(ref_ids=ids, ref_lens=None)
        desc.append(f"ref{ref_dim}d=pad({layout})")
    desc.append(f"pad_id={pad_id} ids={id_dtype} lens={lens_dtype}")
    return Case(hyps, slots, kwargs, " ".join(desc))


@st.composite
def cases(
    draw: st.DrawFn,
    *,
    min_rows: int = 0,
    max_rows: int = 6,
    ref_dim: int | None = None,
    hyp_mode: str | None = None,
    ref_mode: str | None = None,
) -> Case:
    hyps, slots, dim = draw(logical_batches(min_rows=min_rows, max_rows=max_rows, ref_dim=ref_dim))
    return draw(encodings(hyps, slots, dim, hyp_mode=hyp_mode, ref_mode=ref_mode))


@st.composite
def dense_cases(draw: st.DrawFn) -> Case:
    """No lengths and no pad_id: every position of every tensor counts (fixed widths, 2-D or
    3-D refs, widths possibly 0)."""
    alphabet = draw(alphabets())
    b = draw(st.integers(0, 5))
    hyp_w = draw(st.integers(0, 12))
    ref_w = draw(st.integers(0, 12))
    dim = draw(st.sampled_from([2, 3]))
    r = 1 if dim == 2 else draw(st.integers(1, 3))
    tok = st.sampled_from(alphabet)
    hyps = [draw(st.lists(tok, min_size=hyp_w, max_size=hyp_w)) for _ in range(b)]
    slots = [
        [draw(st.lists(tok, min_size=ref_w, max_size=ref_w)) for _ in range(r)] for _ in range(b)
    ]
    hyp_ids = torch.tensor(hyps, dtype=torch.int64).reshape(b, hyp_w)
    ref_ids = torch.tensor(slots, dtype=torch.int64).reshape(b, r, ref_w)
    if dim == 2:
        ref_ids = ref_ids[:, 0, :]
    kwargs = {
        "hyp_ids": hyp_ids,
        "ref_ids": ref_ids,
        "hyp_lens": None,
        "ref_lens": None,
        "pad_id": None,
    }
    return Case(hyps, slots, kwargs, f"dense ref{dim}d")


# --------------------------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------------------------

dtypes = st.sampled_from([torch.float32, torch.float64])
devices = st.sampled_from(DEVICES)
orders = st.integers(1, 6)
smooth_values = st.sampled_from([0.01, 0.1, 0.5, 1, 1.0, 2, 3.5, 5, 10])
weight_values = st.sampled_from([0.0, 0.01, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.7, 1.0])


@st.composite
def sacrebleu_options(draw: st.DrawFn, smooth_method: str) -> dict[str, Any]:
    value = None
    if smooth_method in SACREBLEU_SMOOTH_VALUE_METHODS:
        value = draw(st.one_of(st.none(), smooth_values))
    return {
        "compat": "sacrebleu",
        "max_ngram_order": draw(orders),
        "smooth_method": smooth_method,
        "smooth_value": value,
        "effective_order": draw(st.booleans()),
    }


@st.composite
def nltk_options(draw: st.DrawFn, smooth_method: str) -> dict[str, Any]:
    from oracles.bleu import nltk_method_name

    method = nltk_method_name(smooth_method)
    n = draw(st.integers(3, 6) if method == "method6" else orders)
    # Force N=4 often: that is the only order at which NLTK's auto_reweigh can fire.
    n = draw(st.sampled_from([n, 4]))
    weights = draw(
        st.one_of(
            st.none(),
            st.just((0.25, 0.25, 0.25, 0.25)) if n == 4 else st.none(),
            st.lists(weight_values, min_size=n, max_size=n).map(tuple),
        )
    )
    value = None
    if method in NLTK_SMOOTH_PARAM:
        value = draw(st.one_of(st.none(), smooth_values))
    return {
        "compat": "nltk",
        "max_ngram_order": n,
        "weights": weights,
        "smooth_method": smooth_method,
        "smooth_value": value,
        "auto_reweigh": draw(st.booleans()),
    }


@st.composite
def any_options(draw: st.DrawFn, *, nltk_methods: tuple[str, ...] = NLTK_METHODS) -> dict[str, Any]:
    from oracles.bleu import SACREBLEU_METHODS

    if draw(st.booleans()):
        return draw(sacrebleu_options(draw(st.sampled_from(SACREBLEU_METHODS))))
    return draw(nltk_options(draw(st.sampled_from(nltk_methods))))
