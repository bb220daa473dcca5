"""chrF of every pair of candidates of a sentence (MBR's utility matrix) without ``N * N`` copies.

Entry ``[b, i, j]`` is sentence chrF of candidate ``i`` as the hypothesis against candidate
``j`` as the only reference. Each candidate's n-grams are counted once; the matches of all
``N * N`` pairs come from matrix products, because

    min(a, b) = sum over t >= 1 of [a >= t] * [b >= t].

For one sentence and order, give every *occurrence row* ``(n-gram g, t)`` with ``t`` up to the
largest count of ``g`` in any candidate a 0/1 column per candidate, ``X[(g, t), i] = [count of g
in candidate i >= t]``; then ``match[i, j] = sum over rows of X[row, i] * X[row, j]``, i.e.
``X^T X``. A candidate's ``t``-th occurrence of ``g`` is one 1 in row ``(g, t)``, so ``X`` has as
many ones as the candidates have n-grams. Rows come from the sorted keys of
:mod:`~tensortext.chrf.runs`: the positions of one n-gram are a run; sorting ``(run,
candidate)`` once more puts each candidate's occurrences of it side by side, and the ``t``-th of
them goes to row ``run start + t - 1`` (a run is at least as long as any candidate's count, so
rows of different runs never collide). The products are float32 sums of 0/1 values: exact
below ``2**24`` rows per sentence (float64 beyond).

``fastchrf.pairwise_chrf`` computes the same matrix for character n-grams, with one
difference: its ``remove_whitespace`` removes Unicode's White_Space (Rust's
``char::is_whitespace``), which lacks ``\\x1c``-``\\x1f``; sacrebleu, and this, remove all of
``str.split()``'s whitespace, those four included. It has no word n-grams (chrF++) or
lowercasing.

Host reads (a sync on CUDA): the alphabet size, the longest candidate and, per order, the
occurrence rows of the largest sentence (the width of ``X``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from tensortext.chrf.batch import Device, format_candidates
from tensortext.chrf.config import ChrfConfig, resolve_config
from tensortext.chrf.runs import SortedStep, iter_steps, keep_where, sort_values
from tensortext.chrf.score import scores_from_stats
from tensortext.chrf.stats import ngram_counts
from tensortext.chrf.text import alphabet
from tensortext.chrf.words import word_tokens
from tensortext.padded import Flat, Padded

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from tensortext.chrf.config import ChrfOptions

__all__ = ["pairwise_chrf", "pairwise_stats"]

_EXACT_FLOAT32 = 2**24  # float32 sums of 0/1 stay exact below this many rows
_TABLE_BUDGET = 2**26  # entries of the 0/1 occurrence table built at once (256 MB of float32)


def _running_start(bound: Tensor) -> Tensor:
    """``[P]``: for each position, the last position at or before it where ``bound`` holds
    (``bound[0]`` must hold)."""
    index = torch.arange(bound.numel(), device=bound.device)
    return torch.cummax(torch.where(bound, index, 0), 0).values


def _occurrence_rows(step: SortedStep, order: int, valid_counts: Tensor) -> tuple[Tensor, Tensor]:
    """``(sorted (run, candidate) keys [P], row [P])`` of the ``P`` n-grams of ``order``."""
    keys = step.keys
    slot_mask = (1 << step.slot_bits) - 1
    bounds = step.run_bounds(order)[:-1]
    run = torch.cumsum(bounds, 0).sub_(1)  # [T], by sorted key
    # Too-short n-grams (end code 0 in the last symbol) go past every real key and are cut off.
    beyond = torch.iinfo(torch.int64).max
    pair = torch.where(step.valid(order), (run << step.slot_bits) | (keys & slot_mask), beyond)
    pair = sort_values(pair, in_place=True)
    pair = pair[: int(valid_counts.sum())]  # host read
    run_of_pair = pair >> step.slot_bits
    first = torch.ones_like(pair, dtype=torch.bool)
    torch.ne(pair[1:], pair[:-1], out=first[1:])  # a candidate's first occurrence in the run
    run_first = torch.ones_like(first)
    torch.ne(run_of_pair[1:], run_of_pair[:-1], out=run_first[1:])
    index = torch.arange(pair.numel(), device=pair.device)
    # The t-th occurrence (t = 1 + index - its candidate's first) of a run starting at s: s + t - 1.
    return pair, _running_start(run_first) + index - _running_start(first)


def _pair_matches(step: SortedStep, order: int, lengths: Tensor, num_slots: int) -> Tensor:
    """``[G, K, K]`` int64: ``sum over n-grams of min(count in i, count in j)``."""
    groups = lengths.numel() // num_slots
    valid_counts = ngram_counts(lengths, order)[:, order - 1].view(groups, num_slots).sum(1)
    pair, row = _occurrence_rows(step, order, valid_counts)
    offsets = torch.nn.functional.pad(torch.cumsum(valid_counts, 0), (1, 0))  # [G + 1]
    used = torch.zeros(row.numel() + 1, dtype=torch.long, device=row.device)
    used.scatter_(0, row + 1, 1)
    rank = torch.cumsum(used, 0)  # rank[r + 1] - 1: the compact index of used row r
    base = rank.index_select(0, offsets)  # [G + 1]: used rows before each sentence
    width = max(int((base[1:] - base[:-1]).max()) if groups else 0, 1)  # host read
    group = torch.repeat_interleave(
        torch.arange(groups, device=row.device), valid_counts, output_size=row.numel()
    )
    local = rank.index_select(0, row + 1) - 1 - base.index_select(0, group)
    # X[g, local row, candidate] = 1, flat; then X^T X per sentence, a chunk of sentences at a
    # time so that X stays within _TABLE_BUDGET entries.
    cell = (group * width + local) * num_slots + (pair & ((1 << step.slot_bits) - 1))
    dtype = torch.float32 if width < _EXACT_FLOAT32 else torch.float64
    matches = torch.zeros(groups, num_slots, num_slots, dtype=torch.long, device=row.device)
    chunk = max(1, _TABLE_BUDGET // (width * num_slots))
    bounds = [*offsets[::chunk].tolist(), int(offsets[-1])]  # host read
    for index, first in enumerate(range(0, groups, chunk)):
        last = min(groups, first + chunk)
        table = torch.zeros((last - first) * width * num_slots, dtype=dtype, device=row.device)
        start, stop = bounds[index], bounds[index + 1]
        table.scatter_(0, cell[start:stop] - first * width * num_slots, 1.0)
        table = table.view(last - first, width, num_slots)  # X: [chunk, rows, K]
        matches[first:last] = torch.bmm(table.transpose(1, 2), table).round_().long()
    return matches


def _pairwise_orders(symbols: Flat, num_slots: int, bits: int, orders: int) -> Tensor:
    """``[G, K, K, N]`` matches of every ordered pair of a group's sequences, orders 1..N."""
    lengths = symbols.lengths
    groups = lengths.numel() // num_slots
    shape = (groups, num_slots, num_slots, orders)
    matches = torch.zeros(shape, dtype=torch.long, device=lengths.device)
    counted = min(orders, int(lengths.max()) if lengths.numel() else 0)  # host read
    if counted == 0:
        return matches
    end_codes = torch.zeros_like(lengths)  # one end code: too-short n-grams are masked
    for step in iter_steps(symbols, num_slots, bits, counted, end_codes):
        for order in step.orders:
            matches[..., order - 1] = _pair_matches(step, order, lengths, num_slots)
    return matches


def _pair_stats(matches: Tensor, lengths: Tensor) -> Tensor:
    """``[G, K, K, N, 3]``: ``[hyp_count, ref_count, match]`` of hypothesis ``i``, reference
    ``j``."""
    counts = ngram_counts(lengths, matches.shape[-1])  # [G, K, N]
    hyp = counts.unsqueeze(2).expand_as(matches)  # row i
    ref = counts.unsqueeze(1).expand_as(matches)  # column j
    return torch.stack([torch.where(ref > 0, hyp, 0), ref, matches], dim=-1)


def pairwise_stats(candidates: Flat, num_candidates: int, config: ChrfConfig) -> Tensor:
    """``[B, N, N, 3 * (C + W)]`` int64 statistics of candidate ``i`` against candidate ``j``.

    Args:
        candidates: ``(codepoints [T], lengths [B * N])``, sentence by sentence.
        num_candidates: ``N``.
        config: the orders and ``whitespace``.
    """
    groups = candidates.lengths.numel() // num_candidates
    found = alphabet(candidates.ids)
    codes = Flat(found.codes, candidates.lengths)
    space = found.space.index_select(0, found.codes)
    chars = codes if config.whitespace else keep_where(codes, ~space)[0]
    matches = _pairwise_orders(chars, num_candidates, found.bits, config.char_order)
    stats = [_pair_stats(matches, chars.lengths.view(groups, num_candidates))]
    if config.word_order:
        words, word_bits = word_tokens(codes, space, found)
        matches = _pairwise_orders(words, num_candidates, word_bits, config.word_order)
        stats.append(_pair_stats(matches, words.lengths.view(groups, num_candidates)))
    return torch.cat(stats, dim=3).flatten(3)


def pairwise_chrf(
    candidates: Sequence[Sequence[str]] | Tensor | Padded,
    *,
    lengths: Tensor | None = None,
    pad_id: int | Sequence[int] | None = None,
    config: ChrfConfig | None = None,
    device: Device = None,
    validate: bool = True,
    **options: Unpack[ChrfOptions],
) -> Tensor:
    """Sentence chrF of every ordered pair of a sentence's candidates, in 0..1.

    ``[b, i, j]`` equals ``sacrebleu.metrics.CHRF(**options).sentence_score(candidates[b][i],
    [candidates[b][j]]).score / 100``, and :func:`~tensortext.chrf.sentence_chrf` of that pair.
    Each candidate's n-grams are counted once and the matches of all pairs come from one
    ``[N, rows] x [rows, N]`` product per sentence and order (see the module docstring).

    Args:
        candidates: ``B`` lists of ``N`` strings (every list the same ``N``), or codepoints:
            a ``[B, N, L]`` integer tensor or a :class:`~tensortext.padded.Padded` of one.
        lengths: ``[B, N]`` lengths of codepoint candidates.
        pad_id: for codepoint tensors without lengths, every position equal to it is removed.
        config: all options at once (:class:`~tensortext.chrf.ChrfConfig`), or pass them as
            keywords, not both.
        device: where text is scored (``None`` the CPU, ``"auto"`` CUDA when available);
            tensors are scored where they are.
        validate: check lengths and codepoints of tensors (a host sync).
        **options: the :class:`ChrfConfig` fields.

    Returns:
        ``[B, N, N]`` of ``dtype``.

    Raises:
        TypeError: a wrong type or dtype. ValueError: a wrong shape, device, length,
            codepoint or option, lists of different ``N``, ``N = 0``, or ``lowercase`` with
            tensors.

    Example:
        >>> scores = pairwise_chrf([["the cat", "the cat", "a dog"]])
        >>> scores.shape, float(scores[0, 0, 1])
        (torch.Size([1, 3, 3]), 1.0)
    """
    config = resolve_config(config, dict(options))
    grouped = format_candidates(
        candidates,
        lengths=lengths,
        pad_id=pad_id,
        lowercase=config.lowercase,
        device=device,
        validate=validate,
    )
    stats = pairwise_stats(grouped.text, grouped.num_slots, config)
    return scores_from_stats(stats, config)
