"""Reference slots for tensortext: the shared test helpers mark an absent slot with length 0,
which tensortext reads as an *empty* reference since issue 16 item 5. These wrappers give such
slots ``MISSING_REF`` (-1) instead, so the tensors say what the oracle's lists say (``[]`` in a
slot list = no reference there; ``oracles.bleu.present_refs`` drops it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from hypothesis import strategies as st
from oracles.bleu import pack_refs as _pack_refs
from strategies import Case
from strategies import cases as _cases
from strategies import dense_cases as _dense_cases
from strategies import encodings as _encodings

from tensortext.padded import MISSING_REF


def absent_mask(slots: Sequence[Sequence[Sequence[int]]], num_slots: int) -> torch.Tensor:
    """``[B, R]`` bool: slot ``r`` of row ``b`` is absent (empty in the lists, or past the row's
    slots)."""
    return torch.tensor(
        [[r >= len(row) or len(row[r]) == 0 for r in range(num_slots)] for row in slots],
        dtype=torch.bool,
    ).reshape(len(slots), num_slots)


def pack_refs(
    slots: Sequence[Sequence[Sequence[int]]], **options: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """``oracles.bleu.pack_refs`` with absent slots marked ``MISSING_REF``."""
    ids, lens = _pack_refs(slots, **options)
    return ids, lens.masked_fill(absent_mask(slots, lens.shape[1]).to(lens.device), MISSING_REF)


def mark_missing(case: Case) -> Case:
    """A case whose ``[B, R]`` ``ref_lens`` mark its absent slots ``MISSING_REF``. (``[B]``
    lengths have one slot: a missing and an empty reference score alike there.)"""
    lens = case.kwargs.get("ref_lens")
    if lens is None or lens.dim() != 2:
        return case
    absent = absent_mask(case.slots, lens.shape[1]).to(lens.device)
    kwargs = {**case.kwargs, "ref_lens": lens.masked_fill(absent, MISSING_REF)}
    return Case(case.hyps, case.slots, kwargs, case.encoding)


def cases(**options: Any) -> st.SearchStrategy[Case]:
    return _cases(**options).map(mark_missing)


def dense_cases(**options: Any) -> st.SearchStrategy[Case]:
    return _dense_cases(**options).map(mark_missing)


def encodings(*args: Any, **options: Any) -> st.SearchStrategy[Case]:
    return _encodings(*args, **options).map(mark_missing)
