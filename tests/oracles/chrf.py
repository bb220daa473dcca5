"""chrF oracles (tests/chrf): sacrebleu's ``CHRF`` and fastchrf on plain Python strings.

Conventions shared by every wrapper:

* ``hyps``: ``list[str]``, one hypothesis per sentence.
* ``refs``: ``list[list[str | None]]``, the references of each sentence (``None`` = missing).
  sacrebleu drops ``None``; a sentence whose references are all missing makes sacrebleu fail,
  and tensortext scores it as zero statistics, which is what one empty reference gives, so the
  oracles pass sacrebleu ``[""]`` for it.
* ``options``: :class:`~tensortext.chrf.ChrfConfig`'s fields without ``dtype`` (sacrebleu's
  names).

The reference libraries are imported unconditionally: a missing library is a test failure.
"""

from __future__ import annotations

from typing import Any

import fastchrf
import torch
from sacrebleu.metrics import CHRF as SacreCHRF

from tensortext.padded import MISSING_REF, Padded, pad_ragged, pad_ragged_refs

Refs = list[list[str | None]]

# float32 holds a score in [0, 1] to ~6e-8 and the formula rounds a handful of times, so 1e-6
# catches any formula difference; float64 runs sacrebleu's own operations in its order, so
# only the final /100 can differ from sacrebleu's value / 100: 1e-12 is loose for that.
ATOL = {torch.float32: 1e-6, torch.float64: 1e-12}


def metric(**options: Any) -> SacreCHRF:
    """sacrebleu's ``CHRF`` with ``options`` (tensortext's names are sacrebleu's)."""
    return SacreCHRF(**options)


def present(refs_of_sentence: list[str | None]) -> list[str]:
    """The references sacrebleu sees: ``None`` dropped, ``[""]`` if nothing is left."""
    kept = [ref for ref in refs_of_sentence if ref is not None]
    return kept or [""]


def ref_stats(hyps: list[str], refs: Refs, **options: Any) -> list[list[int]]:
    """sacrebleu's segment statistics per sentence (the best reference's)."""
    chrf = metric(**options)
    return [
        [int(x) for x in chrf._extract_corpus_statistics([hyp], [[r] for r in present(row)])[0]]
        for hyp, row in zip(hyps, refs, strict=True)
    ]


def ref_sentence(hyps: list[str], refs: Refs, **options: Any) -> list[float]:
    """``CHRF.sentence_score(...).score / 100`` per sentence."""
    chrf = metric(**options)
    return [
        chrf.sentence_score(hyp, present(row)).score / 100
        for hyp, row in zip(hyps, refs, strict=True)
    ]


def ref_corpus(hyps: list[str], refs: Refs, **options: Any) -> float:
    """``CHRF.corpus_score(hyps, streams).score / 100`` (references as sacrebleu's streams)."""
    rows = [present(row) if all(r is None for r in row) else row for row in refs]
    width = max([len(row) for row in rows] + [1])
    streams = [[row[k] if k < len(row) else None for row in rows] for k in range(width)]
    return metric(**options).corpus_score(hyps, streams).score / 100


def ref_pairwise(candidates: list[list[str]], **options: Any) -> list[list[list[float]]]:
    """``[b][i][j]``: sentence chrF of candidate ``i`` against candidate ``j``."""
    chrf = metric(**options)
    return [
        [[chrf.sentence_score(hyp, [ref]).score / 100 for ref in row] for hyp in row]
        for row in candidates
    ]


def fastchrf_pairwise(candidates: list[list[str]], **options: Any) -> torch.Tensor:
    """``fastchrf.pairwise_chrf(candidates, candidates) / 100`` as a float64 ``[B, N, N]``."""
    scores = fastchrf.pairwise_chrf(candidates, candidates, **options)
    return (
        torch.tensor(scores, dtype=torch.float64).reshape(
            len(candidates), len(candidates[0]) if candidates else 0, -1
        )
        / 100
    )


def codepoints(texts: list[str]) -> Padded:
    """``[B, L]`` codepoints of ``texts`` (``PAD_ID`` padding) with their lengths."""
    return pad_ragged([[ord(c) for c in text] for text in texts])


def codepoint_refs(refs: Refs) -> Padded:
    """``[B, R, L]`` codepoints of ``refs`` with lengths, :data:`MISSING_REF` for ``None``."""
    padded = pad_ragged_refs([[[ord(c) for c in (r or "")] for r in row] for row in refs])
    width = padded.lengths.shape[1]
    missing = torch.tensor(
        [[k >= len(row) or row[k] is None for k in range(width)] for row in refs],
        dtype=torch.bool,
    ).view(len(refs), width)
    return Padded(padded.ids, padded.lengths.masked_fill(missing, MISSING_REF))


def assert_scores_close(
    actual: torch.Tensor, expected: Any, *, dtype: torch.dtype, label: str, inputs: Any = None
) -> None:
    """``actual`` equals ``expected`` within :data:`ATOL` of ``dtype`` (rtol=0), naming the
    first differing entry and its inputs on failure."""
    exp = torch.tensor(expected, dtype=torch.float64)
    act = actual.detach().to("cpu", torch.float64)
    assert act.shape == exp.shape, f"{label}: shape {tuple(act.shape)} != {tuple(exp.shape)}"
    bad = (act - exp).abs() > ATOL[dtype]
    if bad.any():
        where = tuple(int(i) for i in bad.nonzero()[0])
        entry = inputs
        for index in where[:1]:
            entry = inputs[index] if inputs is not None else None
        raise AssertionError(
            f"{label}: first difference at {list(where)}: ours={act[where].item()!r} "
            f"reference={exp[where].item()!r} (atol={ATOL[dtype]}); input {entry!r}"
        )


def assert_stats_equal(
    actual: torch.Tensor, expected: list[list[int]], *, label: str, inputs: Any = None
) -> None:
    """Exact equality of integer statistics, naming the first differing sentence."""
    rows = actual.tolist()
    assert len(rows) == len(expected), f"{label}: {len(rows)} rows != {len(expected)}"
    for index, (ours, theirs) in enumerate(zip(rows, expected, strict=True)):
        if ours != theirs:
            entry = inputs[index] if inputs is not None else None
            raise AssertionError(
                f"{label}: sentence {index} differs\n ours:      {ours}\n reference: {theirs}\n"
                f" input: {entry!r}"
            )
