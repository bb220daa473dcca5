"""chrF's inputs, checked and laid out as groups of sequences of codepoints.

Every chrF computation compares sequences within a *group*: a hypothesis with its references
(:func:`format_pairs`, ``K = 1 + R`` slots per group), or the ``N`` candidates of one sentence
(:func:`format_candidates`, ``K = N`` slots). Both return a :class:`Grouped`: all sequences as
one :class:`~tensortext.padded.Flat` stream of codepoints in group order (group ``g``, slot ``k``
is sequence ``g * K + k``), so that the counting never loops over sentences.

Text is encoded once for the batch (:func:`~tensortext.chrf.text.encode_texts`); codepoint
tensors follow BLEU's conventions (a :class:`~tensortext.padded.Padded`, or a tensor with
lengths or ``pad_id``; :data:`~tensortext.padded.MISSING_REF` marks a missing reference).
Cutting padded rows into one flat stream reads its size on the host (a sync on CUDA).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal, NamedTuple, cast

import torch
from torch import Tensor

from tensortext._checks import (
    DeviceLike,
    check_integer_tensor,
    check_lengths,
    check_pad_ids,
    check_same_device,
    resolve_device,
)
from tensortext.chrf.runs import positions
from tensortext.chrf.text import MAX_CODEPOINT, encode_texts
from tensortext.ngrams import strip_padding
from tensortext.padded import MISSING_REF, Flat, Padded, text_reference_sets

__all__ = ["Grouped", "format_candidates", "format_pairs"]

Device = DeviceLike | Literal["auto"] | None


class Grouped(NamedTuple):
    """``G`` groups of ``K`` sequences each, as one flat stream in group order."""

    text: Flat  # codepoints [T] int64, lengths [G * K] int64 (0 for a missing sequence)
    present: Tensor  # [G, K] bool: False where a reference is missing

    @property
    def num_slots(self) -> int:
        """``K``, the sequences per group."""
        return int(self.present.shape[1])


def _is_text(name: str, value: object) -> bool:
    """Whether ``value`` is text (a sequence of strings or string lists) or codepoint tensors."""
    if isinstance(value, (Tensor, Padded)):
        return False
    if isinstance(value, str):
        raise TypeError(f"{name} must be a list of strings, got one str; pass [{name}]")
    if not isinstance(value, Sequence):
        raise TypeError(
            f"{name} must be a list of strings or a codepoint tensor (Padded or [B, L] integer "
            f"tensor), got {type(value).__name__}"
        )
    return True


def _from_texts(
    texts: list[str],
    present: list[bool] | None,
    slots: int,
    lowercase: bool,
    name: str,
    device: Device,
) -> Grouped:
    """Texts in group order as a :class:`Grouped` on ``device`` (``present=None``: all are)."""
    if lowercase:  # str.lower is context-sensitive (final sigma): lower each text, as sacrebleu
        texts = list(map(str.lower, texts))
    target = resolve_device(device)
    codes, lengths = encode_texts(texts, name)
    if present is None:
        flags = torch.ones(len(texts), dtype=torch.bool)
    else:
        flags = torch.tensor(present, dtype=torch.bool)
    return Grouped(Flat(codes.to(target), lengths.to(target)), flags.view(-1, slots).to(target))


_SHAPES = {
    "hyps": ((2,), "[B, L]"),
    "refs": ((2, 3), "[B, L] or [B, R, L]"),
    "candidates": ((3,), "[B, N, L]"),
}


def _unpack(
    name: str, value: Tensor | Padded, lens_name: str, lengths: Tensor | None
) -> tuple[Tensor, Tensor | None]:
    """``(ids, lengths)`` of a tensor with optional lengths or of a :class:`Padded`, checked
    to be integers of the shapes argument ``name`` takes."""
    raw: object = value
    if isinstance(value, Padded):
        if lengths is not None:
            raise ValueError(
                f"{name} is a Padded, which carries its lengths; pass {lens_name}=None"
            )
        raw, lengths = value.ids, value.lengths
    dims, shapes = _SHAPES[name]
    ids = check_integer_tensor(name, raw, shape=shapes)
    if ids.dim() not in dims:
        raise ValueError(f"{name} must be {shapes} codepoints, got shape {list(ids.shape)}")
    return ids, lengths


def _resolve(
    name: str,
    ids: Tensor,
    lens_name: str,
    lengths: Tensor | None,
    pad_ids: tuple[int, ...] | None,
    missing: bool,
) -> tuple[Tensor, Tensor]:
    """``(ids, lengths)``: given lengths (checked), else ``pad_ids`` removed, else full rows."""
    if lengths is not None:
        return ids, check_lengths(lens_name, lengths, ids.shape[:-1], ids.device, name).long()
    if pad_ids is None:
        full = torch.full(ids.shape[:-1], ids.shape[-1], dtype=torch.long, device=ids.device)
        return ids, full
    ids, found = strip_padding(ids, pad_ids)
    if missing and ids.dim() == 3:
        # An all-padding slot of [B, R, L'] references is a missing reference.
        found = found.masked_fill(found == 0, MISSING_REF)
    return ids, found


def _check_values(
    name: str, ids: Tensor, lengths: Tensor, lens_name: str | None, missing: bool
) -> None:
    """Host-syncing checks: lengths within ``0..L`` (or missing), codepoints in ``0..0x10FFFF``."""
    width = ids.shape[-1]
    if lens_name is not None and lengths.numel() > 0:
        lowest = MISSING_REF if missing else 0
        bad = (lengths < lowest) | (lengths > width)
        if bool(bad.any()):  # host sync
            where = [int(i) for i in bad.nonzero()[0]]
            raise ValueError(
                f"{lens_name}{where} = {int(lengths[tuple(where)])} is outside {lowest}..{width} "
                f"(the padded length of {name})"
            )
    inside = torch.arange(width, device=ids.device) < lengths.unsqueeze(-1)
    bad = inside & ((ids < 0) | (ids > MAX_CODEPOINT))
    if bool(bad.any()):  # host sync
        where = [int(i) for i in bad.nonzero()[0]]
        raise ValueError(
            f"{name}{where} = {int(ids[tuple(where)])} is not a Unicode codepoint (0..0x10FFFF) "
            "inside the sequence; if it is padding, pass pad_id=<that value> or the lengths"
        )


def _check_device(device: Device, actual: torch.device) -> None:
    """``device`` is for text; with tensors it may only name the tensors' own device (``"cuda"``
    names any CUDA device)."""
    if device is None:
        return
    wanted = resolve_device(device)
    if wanted.type != actual.type or (wanted.index is not None and wanted != actual):
        raise ValueError(
            f"device={str(device)!r}, but the codepoint tensors are on {actual}; the device "
            "follows tensor input: pass device=None, or move the tensors"
        )


def _flatten(ids: Tensor, lengths: Tensor) -> Flat:
    """Rows ``[S, L]`` cut at ``lengths [S]`` (``<= 0``: empty) into one stream."""
    keep = torch.arange(ids.shape[-1], device=ids.device) < lengths.unsqueeze(-1)
    kept = ids.reshape(-1).index_select(0, positions(keep.reshape(-1)))
    return Flat(kept.long(), lengths.clamp(min=0))


def _refuse_lowercase(lowercase: bool) -> None:
    if lowercase:
        raise ValueError(
            "lowercase=True needs text: str.lower() is context-sensitive (final sigma) and can "
            "change lengths, so it cannot be done on codepoints; pass the text, or lowercase the "
            "text before encoding it and pass lowercase=False"
        )


def _pairs_from_text(
    hyps: Sequence[str], refs: Sequence[object], lowercase: bool, device: Device
) -> Grouped:
    """Text hypotheses and references as groups; missing references are empty and absent."""
    if len(refs) == len(hyps) and all(type(ref) is str for ref in refs):  # one reference each
        pairs = zip(hyps, cast("Sequence[str]", refs), strict=True)
        return _from_texts(
            list(itertools.chain.from_iterable(pairs)), None, 2, lowercase, "hyps and refs", device
        )
    sets = text_reference_sets(refs, len(hyps))
    slots = max([len(s) for s in sets] + [1])
    texts: list[str] = []
    present: list[bool] = []
    for hyp, refs_of_hyp in zip(hyps, sets, strict=True):  # input layout, not scoring
        padded = refs_of_hyp + [None] * (slots - len(refs_of_hyp))
        texts += [hyp, *(ref or "" for ref in padded)]
        present += [True, *(ref is not None for ref in padded)]
    return _from_texts(texts, present, 1 + slots, lowercase, "hyps and refs", device)


def format_pairs(
    hyps: Sequence[str] | Tensor | Padded,
    refs: Sequence[str] | Sequence[Sequence[str | None]] | Tensor | Padded,
    *,
    hyp_lens: Tensor | None,
    ref_lens: Tensor | None,
    pad_id: int | Sequence[int] | None,
    lowercase: bool,
    device: Device,
    validate: bool,
) -> Grouped:
    """Hypotheses and their references as groups ``[hyp, ref_1 .. ref_R]`` (``K = 1 + R``).

    Args: as :func:`~tensortext.chrf.chrf_stats`; ``lowercase`` is the config's option.

    Raises:
        TypeError: a wrong type or dtype, text mixed with tensors.
        ValueError: a wrong shape, batch size, device or value; ``lowercase`` with tensors.
    """
    if _is_text("hyps", hyps) != _is_text("refs", refs):
        raise TypeError("hyps and refs must both be text or both be codepoint tensors")
    if not isinstance(hyps, (Tensor, Padded)) and not isinstance(refs, (Tensor, Padded)):
        if hyp_lens is not None or ref_lens is not None or pad_id is not None:
            raise ValueError("hyp_lens, ref_lens and pad_id are for codepoint tensors; pass None")
        return _pairs_from_text(hyps, refs, lowercase, device)
    _refuse_lowercase(lowercase)
    hyp_ids, hyp_lens = _unpack("hyps", hyps, "hyp_lens", hyp_lens)  # type: ignore[arg-type]
    ref_ids, ref_lens = _unpack("refs", refs, "ref_lens", ref_lens)  # type: ignore[arg-type]
    if ref_ids.shape[0] != hyp_ids.shape[0]:
        raise ValueError(
            f"hyps has {hyp_ids.shape[0]} rows but refs has {ref_ids.shape[0]}; give one "
            "reference set per hypothesis"
        )
    check_same_device("refs", ref_ids, hyp_ids.device, "hyps")
    _check_device(device, hyp_ids.device)
    pad_ids = (
        None if pad_id is None else check_pad_ids(pad_id, [("hyps", hyp_ids), ("refs", ref_ids)])
    )
    hyp_given, ref_given = hyp_lens is not None, ref_lens is not None
    hyp_ids, hyp_lens = _resolve("hyps", hyp_ids, "hyp_lens", hyp_lens, pad_ids, False)
    ref_ids, ref_lens = _resolve("refs", ref_ids, "ref_lens", ref_lens, pad_ids, True)
    if validate:
        _check_values("hyps", hyp_ids, hyp_lens, "hyp_lens" if hyp_given else None, False)
        _check_values("refs", ref_ids, ref_lens, "ref_lens" if ref_given else None, True)
    if ref_ids.dim() == 2:
        ref_ids, ref_lens = ref_ids.unsqueeze(1), ref_lens.unsqueeze(1)
    width = max(hyp_ids.shape[-1], ref_ids.shape[-1])
    rows = torch.cat(
        [
            torch.nn.functional.pad(hyp_ids.long(), (0, width - hyp_ids.shape[-1])).unsqueeze(1),
            torch.nn.functional.pad(ref_ids.long(), (0, width - ref_ids.shape[-1])),
        ],
        dim=1,
    )  # [B, K, W]
    lengths = torch.cat([hyp_lens.unsqueeze(1), ref_lens], dim=1)  # [B, K]
    return Grouped(_flatten(rows.flatten(0, 1), lengths.reshape(-1)), lengths >= 0)


def format_candidates(
    candidates: Sequence[Sequence[str]] | Tensor | Padded,
    *,
    lengths: Tensor | None,
    pad_id: int | Sequence[int] | None,
    lowercase: bool,
    device: Device,
    validate: bool,
) -> Grouped:
    """The ``N`` candidates of each of ``B`` sentences as groups (``K = N``).

    Args: as :func:`~tensortext.chrf.pairwise_chrf`; ``lowercase`` is the config's option.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape, device or value, rows of
            different ``N``, or ``lowercase`` with tensors.
    """
    if _is_text("candidates", candidates):
        rows = list(candidates)
        for row in rows:
            if isinstance(row, str) or not isinstance(row, Sequence):
                raise TypeError(
                    f"candidates must be B lists of N strings, got a {type(row).__name__} row"
                )
        num = len(rows[0]) if rows else 1
        if any(len(row) != num for row in rows):
            sizes = sorted({len(row) for row in rows})
            raise ValueError(
                f"every sentence needs the same number N of candidates, got N in {sizes}; pad "
                "the short lists (e.g. with empty strings) or score them in separate calls"
            )
        if num == 0:
            raise ValueError("candidates has no candidates (N = 0); give at least one")
        texts = [text for row in rows for text in row]
        return _from_texts(texts, None, num, lowercase, "candidates", device)
    _refuse_lowercase(lowercase)
    ids, lengths = _unpack("candidates", candidates, "lengths", lengths)  # type: ignore[arg-type]
    _check_device(device, ids.device)
    if ids.shape[1] == 0:
        raise ValueError("candidates has no candidates (N = 0); give at least one")
    pad_ids = None if pad_id is None else check_pad_ids(pad_id, [("candidates", ids)])
    given = lengths is not None
    ids, lengths = _resolve("candidates", ids, "lengths", lengths, pad_ids, False)
    if validate:
        _check_values("candidates", ids, lengths, "lengths" if given else None, False)
    present = torch.ones(ids.shape[:2], dtype=torch.bool, device=ids.device)
    return Grouped(_flatten(ids.flatten(0, 1), lengths.reshape(-1)), present)
