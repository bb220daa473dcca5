"""chrF's statistics: character and word n-gram counts of each hypothesis against its references.

Per sentence and order (character orders ``1..C``, then word orders ``1..W``) sacrebleu keeps
``[hyp_count, ref_count, match]`` of the reference with the best sentence chrF:

* ``hyp_count`` is the hypothesis's n-grams of that order, or 0 if the reference has none;
* ``ref_count`` the reference's n-grams; ``match`` the sum over the hypothesis's n-grams of
  ``min(count in hypothesis, count in reference)``.

Characters are codepoints; without ``whitespace`` every character of ``str.split()``'s
whitespace is removed first. Matches come from sorted packed keys
(:mod:`~tensortext.chrf.runs`): one sort of the whole batch covers the six character orders of a
typical batch, with no loop over sentences. The best reference is picked by sacrebleu's own
float64 formula, the first of equal scores winning, as sacrebleu's strict ``>`` does. A sentence
whose references are all missing gets zero statistics (sacrebleu fails on it; zero statistics
are what one empty reference gives).

Host reads (a sync on CUDA): the size of the alphabet (it decides the key width), the longest
sequence (orders beyond it have no n-grams) and, for chrF++, the token counts.
"""

from __future__ import annotations

import torch
from torch import Tensor

from tensortext.chrf.batch import Grouped
from tensortext.chrf.config import ChrfConfig
from tensortext.chrf.runs import group_offsets, iter_steps, keep_where, slot_matches
from tensortext.chrf.score import sacrebleu_scores
from tensortext.chrf.text import alphabet
from tensortext.chrf.words import word_tokens
from tensortext.padded import Flat

__all__ = ["compute_stats", "count_orders", "ngram_counts"]


def ngram_counts(lengths: Tensor, orders: int) -> Tensor:
    """``[..., N]``: n-grams of orders ``1..N`` in sequences of ``lengths [...]``."""
    order = torch.arange(1, orders + 1, device=lengths.device)
    return (lengths.unsqueeze(-1) - order + 1).clamp(min=0)


def count_orders(symbols: Flat, num_slots: int, bits: int, orders: int) -> Tensor:
    """``[G, K - 1, N]`` matches of slot 0 against each other slot, orders ``1..N``.

    Args:
        symbols: ``(codes [T] >= 2, lengths [G * K])`` in group order.
        num_slots: ``K >= 2``.
        bits: bits of the codes.
        orders: ``N``.
    """
    lengths = symbols.lengths
    groups = lengths.numel() // num_slots
    matches = torch.zeros(groups, num_slots - 1, orders, dtype=torch.long, device=lengths.device)
    longest = int(lengths.max()) if lengths.numel() else 0  # host read
    counted = min(orders, longest)  # longer n-grams exist nowhere
    if counted == 0:
        return matches
    # End codes: 0 past a hypothesis, 1 past a reference, so too-short n-grams never match.
    end_codes = (torch.arange(lengths.numel(), device=lengths.device) % num_slots > 0).int()
    offsets = group_offsets(lengths, num_slots)
    for step in iter_steps(symbols, num_slots, bits, counted, end_codes):
        for order in step.orders:
            matches[:, :, order - 1] = slot_matches(step, order, offsets)
    return matches


def _order_stats(matches: Tensor, lengths: Tensor) -> Tensor:
    """``[G, K - 1, N, 3]``: ``[hyp_count, ref_count, match]`` of each hypothesis-reference pair."""
    counts = ngram_counts(lengths, matches.shape[-1])  # [G, K, N]
    hyp = counts[:, :1].expand_as(matches)
    ref = counts[:, 1:]
    hyp = torch.where(ref > 0, hyp, 0)  # sacrebleu counts hits only against a reference n-gram
    return torch.stack([hyp, ref, matches], dim=-1)


def compute_stats(grouped: Grouped, config: ChrfConfig) -> Tensor:
    """The statistics half of chrF's stats -> score pair.

    Args:
        grouped: from :func:`~tensortext.chrf.batch.format_pairs` (``K = 1 + R`` slots).
        config: the options (orders, whitespace; beta and eps_smoothing pick the reference).

    Returns:
        ``[B, 3 * (C + W)]`` int64, per order ``[hyp_count, ref_count, match]``.
    """
    raw, slots = grouped.text, grouped.num_slots
    groups = grouped.present.shape[0]
    if slots == 1:  # [B, 0, L'] references: none anywhere
        return torch.zeros(groups, 3 * config.orders, dtype=torch.long, device=raw.ids.device)
    found = alphabet(raw.ids)
    codes = Flat(found.codes, raw.lengths)
    space = found.space.index_select(0, found.codes)
    chars = codes if config.whitespace else keep_where(codes, ~space)[0]
    char_matches = count_orders(chars, slots, found.bits, config.char_order)
    per_ref = [_order_stats(char_matches, chars.lengths.view(groups, slots))]
    if config.word_order:
        words, word_bits = word_tokens(codes, space, found)
        word_matches = count_orders(words, slots, word_bits, config.word_order)
        per_ref.append(_order_stats(word_matches, words.lengths.view(groups, slots)))
    stats = torch.cat(per_ref, dim=2).flatten(2)  # [B, R, 3 * (C + W)]
    return _best_reference(stats, grouped.present[:, 1:], config)


def _best_reference(stats: Tensor, present: Tensor, config: ChrfConfig) -> Tensor:
    """``[B, 3O]``: the row of ``stats [B, R, 3O]`` with the best sentence chrF among present
    references (the first of equals); zeros where none is present."""
    scores = sacrebleu_scores(stats, config).masked_fill(~present, -torch.inf)  # [B, R]
    best = scores.argmax(dim=1)  # the first maximum, as sacrebleu's strict ">"
    chosen = stats.gather(1, best.view(-1, 1, 1).expand(-1, 1, stats.shape[-1])).squeeze(1)
    return torch.where(present.any(dim=1, keepdim=True), chosen, 0)
