"""What ``tensortext bleu`` does between reading lines and printing: statistics of a whole corpus
in bounded memory, and sacrebleu's output (JSON records, aligned text lines, score only).

Statistics are computed in blocks of segments of similar length (sorted by their longest side),
so padding stays small and memory stays bounded whatever the corpus size; every segment's row
is the same as in one big batch, since each row depends on its own segment only.
"""

from __future__ import annotations

import bisect
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import Any, NamedTuple

import torch
from torch import Tensor

from tensortext.bleu import BleuConfig, bleu_stats
from tensortext.padded import PAD_ID, Flat, Padded

__all__ = [
    "BLOCK_POSITIONS",
    "Rows",
    "bleu_corpus_stats",
    "blocks",
    "flat_rows",
    "format_results",
    "json_record",
]

BLOCK_POSITIONS = {"cpu": 1 << 17, "cuda": 1 << 22}
"""Token positions (hypotheses and references, padding included) per block of BLEU work: on
the CPU, blocks whose buffers stay in cache are fastest; a GPU wants few, large launches."""


class Rows(NamedTuple):
    """A :class:`~tensortext.padded.Flat` ready for row lookups: ``source [T + 1]`` (its IDs
    and one :data:`PAD_ID`), ``starts [B]`` and ``lengths [B]``."""

    source: Tensor
    starts: Tensor
    lengths: Tensor

    @classmethod
    def of(cls, flat: Flat) -> Rows:
        pad = torch.full((1,), PAD_ID, dtype=torch.long)
        return cls(torch.cat([flat.ids.long(), pad]), flat.offsets[:-1], flat.lengths)

    def padded(self, rows: Tensor, width: int) -> Tensor:
        """``[b, width]``: rows ``rows``, :data:`PAD_ID` past their lengths."""
        columns = torch.arange(width)
        inside = columns < self.lengths[rows].unsqueeze(1)
        pad_position = self.source.numel() - 1
        positions = torch.where(inside, self.starts[rows].unsqueeze(1) + columns, pad_position)
        return self.source[positions]


def flat_rows(rows: Sequence[Sequence[int]]) -> Flat:
    """Lists of IDs as one :class:`~tensortext.padded.Flat`."""
    lengths = torch.tensor([len(row) for row in rows], dtype=torch.long)
    ids = torch.tensor(list(itertools.chain.from_iterable(rows)), dtype=torch.long)
    return Flat(ids, lengths)


def blocks(widths: Sequence[int], max_positions: int) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive blocks of ascending ``widths``, each holding as many rows
    as fit ``rows * widest <= max_positions`` (at least one)."""
    start = 0
    while start < len(widths):
        # (end - start) * widths[end - 1] grows with end: the largest end that fits.
        end = bisect.bisect_right(
            range(start + 1, len(widths) + 1),
            max_positions,
            key=lambda stop: (stop - start) * widths[stop - 1],
        )
        end = max(start + 1, start + end)
        yield start, end
        start = end


def bleu_corpus_stats(
    hyps: Flat, refs: Sequence[Flat], config: BleuConfig, device: torch.device
) -> Tensor:
    """BLEU statistics of every segment, in blocks of similar lengths.

    Args:
        hyps: ``B`` hypotheses.
        refs: ``R`` reference streams of ``B`` segments each (an empty segment is an empty
            reference, as sacrebleu scores an empty line of a reference file).
        config: the scoring options.
        device: where the statistics are computed.

    Returns:
        ``[B, 2 + 2N]`` int64 on the CPU, in the order of the input.
    """
    sides = [Rows.of(hyps), *(Rows.of(ref) for ref in refs)]
    widths = torch.stack([side.lengths for side in sides]).amax(0).clamp(min=1)  # [B]
    order = torch.argsort(widths, stable=True)
    sorted_widths = widths[order].tolist()
    stats = torch.zeros(len(sorted_widths), 2 + 2 * config.stats_order, dtype=torch.long)
    budget = BLOCK_POSITIONS.get(device.type, BLOCK_POSITIONS["cuda"]) // len(sides)
    for start, end in blocks(sorted_widths, budget):
        rows, width = order[start:end], sorted_widths[end - 1]
        hyp = Padded(sides[0].padded(rows, width), sides[0].lengths[rows])
        ref = Padded(
            torch.stack([side.padded(rows, width) for side in sides[1:]], 1),  # [b, R, W]
            torch.stack([side.lengths[rows] for side in sides[1:]], 1),  # [b, R]
        )
        stats[rows] = bleu_stats(hyp.to(device), ref.to(device), config=config).cpu()
    return stats


def json_record(
    name: str,
    score: float,
    width: int,
    fields: dict[str, str],
    verbose: str = "",
    extra: dict[str, Any] | None = None,
    indent: int | None = 1,
) -> str:
    """sacrebleu's JSON of a score: ``name, score`` (rounded to ``width``), ``signature``,
    ``verbose_score`` (when there is one), the signature's fields, then ``extra``."""
    record: dict[str, Any] = {
        "name": name,
        "score": float(f"{score:.{width}f}"),
        "signature": "|".join(f"{key}:{value}" for key, value in fields.items()),
    }
    if verbose:
        record["verbose_score"] = verbose
    record.update(fields)
    record.update(extra or {})
    return json.dumps(record, indent=indent, ensure_ascii=False)


def format_results(results: Sequence[str], json_format: bool, score_only: bool) -> str:
    """The results of several metrics, as sacrebleu prints them: one JSON value or a JSON list
    ``[...]`` of them; text lines right-aligned at their ``=``; scores only, one a line.

    Example:
        >>> print(format_results(["BLEU|a = 1.0 x", "chrF2|bc = 2.0"], False, False))
          BLEU|a = 1.0 x
        chrF2|bc = 2.0
    """
    if json_format:
        return results[0] if len(results) == 1 else "[\n" + ",\n".join(results) + "\n]"
    if score_only or len(results) == 1:
        return "\n".join(results)
    name_widths = [line.index("=") - 1 for line in results]
    widest = max(name_widths)
    return "\n".join(
        f"{line[:name_width]:>{widest}}{line[name_width:]}"
        for name_width, line in zip(name_widths, results, strict=True)
    )
