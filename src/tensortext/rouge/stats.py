"""ROUGE's statistics: per-reference precision, recall and F-measure, the best reference kept.

A sentence becomes ``[1, p_1, r_1, f_1, ..., p_T, r_T, f_T]``: a sentence count, then for each
ROUGE type the scores against the reference with the highest F-measure (the first on ties,
rouge-score's ``score_multi``). Rows add up, and corpus ROUGE is their mean (the sums divided by
the count), what rouge-score's aggregator and torchmetrics report.

Both ROUGE-N and ROUGE-L reduce a (hypothesis, reference) pair to three integers ``(overlap,
hypothesis total, reference total)`` and one formula, rouge-score's: ``P = overlap / max(hyp,
1)``, ``R = overlap / max(ref, 1)``, ``F = 2PR / (P + R)`` (0 when ``P + R = 0``). ROUGE-N's
overlap is ``sum over n-grams of min(count in hyp, count in ref)`` and its totals the n-gram
counts; ROUGE-L's overlap is the LCS length (:mod:`~tensortext.rouge.lcs`) and its totals the
lengths (an empty side gives 0 either way, as rouge-score's early return does). The formula and
the choice of reference run in float64 with rouge-score's operation order, so the chosen
reference is rouge-score's even where two F-measures differ in the last bit; the result is then
cast to ``config.dtype``.

Counting goes through the shared n-gram core (:mod:`tensortext.ngrams`): one pool of sequences,
n-gram IDs per sentence group, counts per slot. Nothing loops over the batch or syncs the host.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import torch
from torch import Tensor

from tensortext._checks import check_integer_tensor, check_lengths, resolve_device
from tensortext.bleu.stats import Batch, check_values, format_batch
from tensortext.ngrams import count_ngrams, first_occurrences, iter_ngram_ids
from tensortext.padded import Padded
from tensortext.rouge.config import RougeConfig
from tensortext.rouge.lcs import lcs_lengths
from tensortext.rouge.text import encode_candidates, encode_texts, is_text

__all__ = [
    "compute_stats",
    "pairwise_scores",
    "prepare_batch",
    "prepare_candidates",
    "reference_scores",
]

DeviceArg = torch.device | str | None


def _id_device(device: DeviceArg, ids: Tensor, name: str) -> None:
    """Token IDs stay where they are: ``device`` may only repeat their device."""
    if device is None or device == "auto":
        return
    wanted = resolve_device(device)
    if wanted.type != ids.device.type or wanted.index not in (None, ids.device.index):
        raise ValueError(
            f"{name} is on {ids.device} but device={str(device)!r}; device places text input, "
            f"token IDs are scored where they are (move them with .to({str(device)!r}))"
        )


def prepare_batch(
    hyps: object,
    refs: object,
    *,
    hyp_lens: Tensor | None,
    ref_lens: Tensor | None,
    pad_id: int | Sequence[int] | None,
    config: RougeConfig,
    device: DeviceArg,
    validate: bool,
) -> Batch:
    """Checks and formats token IDs (as BLEU does) or tokenizes text, before any work.

    Returns:
        A :class:`~tensortext.bleu.stats.Batch` with references as ``[B, R, L']``.

    Raises:
        TypeError: neither token IDs nor text, or a wrong type inside. ValueError: a wrong
            shape, device or value, or an option that does not fit the input kind.
    """
    if isinstance(hyps, (Tensor, Padded)):
        if config.use_stemmer:
            raise ValueError(
                "use_stemmer=True stems words of text; token IDs are compared as given: pass "
                "text, or use_stemmer=False"
            )
        if not isinstance(refs, (Tensor, Padded)):
            raise TypeError(
                f"hyps are token IDs, so refs must be a tensor or Padded of IDs too, got "
                f"{type(refs).__name__}"
            )
        _id_device(device, hyps.ids if isinstance(hyps, Padded) else hyps, "hyps")
        return format_batch(
            hyps, refs, hyp_lens=hyp_lens, ref_lens=ref_lens, pad_id=pad_id, validate=validate
        )
    if not is_text(hyps):
        raise TypeError(
            f"hyps must be token IDs (a [B, L] tensor or Padded) or a list of strings, got "
            f"{type(hyps).__name__}"
        )
    for name, value in (("hyp_lens", hyp_lens), ("ref_lens", ref_lens), ("pad_id", pad_id)):
        if value is not None:
            raise ValueError(f"{name} is for token IDs; text carries its own lengths: pass None")
    hyp_ids, ref_ids = encode_texts(
        hyps, refs, use_stemmer=config.use_stemmer, device=resolve_device(device)
    )
    return format_batch(hyp_ids, ref_ids, validate=False)


def prepare_candidates(
    candidates: object, *, config: RougeConfig, device: DeviceArg, validate: bool
) -> Padded:
    """``[B, N, L]`` candidate IDs with ``[B, N]`` int64 lengths, from a ``Padded`` or from
    ``B`` lists of ``N`` strings (tokenized)."""
    if isinstance(candidates, Padded):
        if config.use_stemmer:
            raise ValueError("use_stemmer=True stems text; pass text candidates, or False")
        ids = check_integer_tensor("candidates.ids", candidates.ids, shape="[B, N, L]")
        if ids.dim() != 3:
            raise ValueError(f"candidates.ids must be [B, N, L], got shape {list(ids.shape)}")
        lengths = check_lengths(
            "candidates.lengths", candidates.lengths, ids.shape[:2], ids.device, "candidates.ids"
        ).long()
        _id_device(device, ids, "candidates")
        if validate:
            flat = ids.reshape(ids.shape[0] * ids.shape[1], ids.shape[2])
            check_values("candidates.ids", flat, lengths.reshape(-1), "candidates.lengths")
        return Padded(ids, lengths)
    if not is_text(candidates):
        raise TypeError(
            "candidates must be a Padded of [B, N, L] token IDs or B lists of N strings, got "
            f"{type(candidates).__name__}"
        )
    return encode_candidates(
        candidates, use_stemmer=config.use_stemmer, device=resolve_device(device)
    )


def _group_local(ids: Tensor, groups: Tensor, num_groups: int, bound: int) -> Tensor:
    """Order-1 n-gram IDs (``[S, W]``, ``-1`` outside) made dense within each group, in the
    smallest integer dtype that holds ``bound`` (a group's positions): the LCS compares them."""
    dtype = torch.int16 if bound < 2**15 else torch.int32 if bound < 2**31 else torch.int64
    if ids.numel() == 0:
        return ids.to(dtype)
    # Group g's IDs are one contiguous range (compact IDs sort by group first): subtract its
    # smallest ID.
    spread = ids.numel() + 1
    row_min = torch.where(ids >= 0, ids, spread).amin(dim=1)
    lowest = torch.full((num_groups,), spread, dtype=torch.long, device=ids.device)
    lowest.scatter_reduce_(0, groups, row_min, reduce="amin")
    local = (ids - lowest[groups].unsqueeze(1)).clamp(min=0)
    return local.to(dtype)


def _overlaps(ids: Tensor, slots: Tensor, num_slots: int, num_queries: int) -> Tensor:
    """ROUGE-N overlaps of each query row with every slot of its group, ``[Q, K]`` int64.

    Entry ``[q, k]`` is ``sum over n-grams g of row q of min(count of g in row q, count of g in
    the rows of slot k)``; query rows are the first ``Q`` rows of ``ids`` and count in their own
    slot only.
    """
    num_rows, width = ids.shape
    counts = count_ngrams(ids, slots, num_slots)  # [S * W, K]
    query_ids = ids[:num_queries]  # [Q, W]
    inside = query_ids >= 0
    rows = torch.arange(num_queries, device=ids.device).unsqueeze(1)
    # Each distinct n-gram of a row counts once, at its first position.
    keys = torch.where(inside, rows * (num_rows * width) + query_ids, -1)
    first = first_occurrences(keys.reshape(-1)).view(num_queries, width) & inside
    table = counts[query_ids.clamp(min=0)]  # [Q, W, K]
    own_slot = slots[:num_queries].view(-1, 1, 1).expand(num_queries, width, 1)
    own = table.gather(2, own_slot)  # [Q, W, 1]
    return (torch.minimum(own, table) * first.unsqueeze(-1)).sum(dim=1, dtype=torch.long)


def _pool_counts(
    pool: Tensor,
    lengths: Tensor,
    groups: Tensor,
    slots: Tensor,
    num_slots: int,
    num_queries: int,
    config: RougeConfig,
) -> tuple[dict[int, Tensor], Tensor]:
    """``({n: [Q, K] overlaps} for the configured orders, order-1 IDs [S, W])``."""
    wanted = {order for order in config.ngram_orders if order > 0}
    overlaps: dict[int, Tensor] = {}
    ids_by_order: Iterator[Tensor] = iter_ngram_ids(
        pool, lengths, groups, max(1, config.max_ngram_order)
    )
    unigram_ids = pool.new_empty(0)
    for order, ids in enumerate(ids_by_order, start=1):
        if order == 1:
            unigram_ids = ids
        if order in wanted:
            overlaps[order] = _overlaps(ids, slots, num_slots, num_queries)
    return overlaps, unigram_ids


def _prf(overlap: Tensor, hyp_total: Tensor, ref_total: Tensor) -> Tensor:
    """rouge-score's precision, recall and F-measure, ``[..., 3]`` float64, computed in its
    operation order so that ties and near-ties compare as they do there."""
    matched = overlap.double()
    precision = matched / hyp_total.clamp(min=1)
    recall = matched / ref_total.clamp(min=1)
    both = precision + recall
    fmeasure = torch.where(both > 0, 2 * precision * recall / both, 0.0)
    return torch.stack([precision, recall, fmeasure], dim=-1)


def _type_scores(
    config: RougeConfig,
    overlaps: dict[int, Tensor],
    lcs: Tensor,
    hyp_lens: Tensor,
    ref_lens: Tensor,
) -> Tensor:
    """``[..., T, 3]`` float64 scores of each ROUGE type, from overlaps ``[...]`` per order and
    the LCS lengths ``[...]``; ``hyp_lens`` and ``ref_lens`` broadcast against them."""
    per_type = []
    for order in config.ngram_orders:
        if order == 0:
            per_type.append(_prf(lcs, hyp_lens, ref_lens))
        else:
            hyp_total = (hyp_lens - order + 1).clamp(min=0)
            ref_total = (ref_lens - order + 1).clamp(min=0)
            per_type.append(_prf(overlaps[order], hyp_total, ref_total))
    return torch.stack(per_type, dim=-2)


def _sentence_pool(batch: Batch) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Hypotheses then references as one ``[B + B*R, W]`` pool, with lengths (missing = 0),
    groups (the sentence) and slots (0 = hypothesis, ``1 + r`` = reference ``r``)."""
    hyp_ids, ref_ids = batch.hyp_ids, batch.ref_ids
    batch_size, num_refs, ref_width = ref_ids.shape
    width = max(hyp_ids.shape[1], ref_width)
    pad = torch.nn.functional.pad
    pool = torch.cat(
        [
            pad(hyp_ids.long(), (0, width - hyp_ids.shape[1])),
            pad(ref_ids.long(), (0, width - ref_width)).view(batch_size * num_refs, width),
        ]
    )
    lengths = torch.cat([batch.hyp_lens, batch.ref_lens.reshape(-1).clamp(min=0)])
    sentence = torch.arange(batch_size, device=hyp_ids.device)
    groups = torch.cat([sentence, sentence.repeat_interleave(num_refs)])
    reference = torch.arange(1, num_refs + 1, device=hyp_ids.device)
    slots = torch.cat([torch.zeros_like(sentence), reference.repeat(batch_size)])
    return pool, lengths, groups, slots


def reference_scores(batch: Batch, config: RougeConfig) -> Tensor:
    """Scores of every hypothesis against each of its reference slots, ``[B, R, T, 3]``
    float64 (a missing slot scores as an empty reference: 0)."""
    batch_size, num_refs, _ = batch.ref_ids.shape
    pool, lengths, groups, slots = _sentence_pool(batch)
    overlaps, unigram_ids = _pool_counts(
        pool, lengths, groups, slots, 1 + num_refs, batch_size, config
    )
    ref_overlaps = {order: found[:, 1:] for order, found in overlaps.items()}  # [B, R]
    hyp_lens = batch.hyp_lens.unsqueeze(1)  # [B, 1]
    ref_lens = batch.ref_lens.clamp(min=0)  # [B, R]
    lcs = torch.zeros_like(ref_lens)
    if 0 in config.ngram_orders and batch_size and num_refs:
        local = _group_local(unigram_ids, groups, batch_size, (1 + num_refs) * pool.shape[1])
        # Back to each side's own width: the LCS loops over hypothesis positions.
        hyp_width, ref_width = batch.hyp_ids.shape[1], batch.ref_ids.shape[2]
        hyp_local = local[:batch_size, :hyp_width].unsqueeze(1)
        pairs = batch_size * num_refs
        lcs = lcs_lengths(
            hyp_local.expand(batch_size, num_refs, hyp_width).reshape(pairs, hyp_width),
            hyp_lens.expand(batch_size, num_refs).reshape(-1),
            local[batch_size:, :ref_width],
            ref_lens.reshape(-1),
        ).view(batch_size, num_refs)
    return _type_scores(config, ref_overlaps, lcs, hyp_lens, ref_lens)


def compute_stats(batch: Batch, config: RougeConfig) -> Tensor:
    """The statistics half of ROUGE's stats -> score pair.

    Args:
        batch: from :func:`prepare_batch`.
        config: the ROUGE types and the dtype.

    Returns:
        ``[B, 1 + 3T]`` of ``config.dtype``: 1, then ``precision, recall, fmeasure`` per type
        against the reference with the highest F-measure (the first on ties).
    """
    scores = reference_scores(batch, config)  # [B, R, T, 3]
    batch_size, num_refs, num_types, _ = scores.shape
    if num_refs == 0:  # no reference slots at all: as one empty reference
        best = scores.new_zeros(batch_size, num_types, 3)
    else:
        # torch.argmax returns the first maximum, as np.argmax in rouge-score's score_multi.
        choice = scores[..., 2].argmax(dim=1, keepdim=True)  # [B, 1, T]
        index = choice.unsqueeze(-1).expand(batch_size, 1, num_types, 3)
        best = scores.gather(1, index).squeeze(1)  # [B, T, 3]
    count = best.new_ones(batch_size, 1)
    return torch.cat([count, best.reshape(batch_size, 3 * num_types)], dim=1).to(config.dtype)


def pairwise_scores(candidates: Padded, config: RougeConfig) -> Tensor:
    """Scores of every candidate against every candidate of its sentence.

    Each candidate's n-grams are counted once; only the LCS runs per pair.

    Args:
        candidates: ``[B, N, L]`` IDs with ``[B, N]`` int64 lengths (from
            :func:`prepare_candidates`).
        config: the ROUGE types and the dtype.

    Returns:
        ``[B, N, N, T, 3]`` of ``config.dtype``; ``[b, i, j]`` scores candidate ``i`` as the
        hypothesis against candidate ``j`` as the reference.
    """
    ids, lengths = candidates
    batch_size, num, width = ids.shape
    device = ids.device
    rows = batch_size * num
    pool = ids.reshape(rows, width).long()
    flat_lens = lengths.reshape(rows)
    groups = torch.arange(batch_size, device=device).repeat_interleave(num)
    slots = torch.arange(num, device=device).repeat(batch_size)
    overlaps, unigram_ids = _pool_counts(pool, flat_lens, groups, slots, num, rows, config)
    pair_overlaps = {order: found.view(batch_size, num, num) for order, found in overlaps.items()}
    hyp_lens = lengths.unsqueeze(2)  # [B, N, 1]
    ref_lens = lengths.unsqueeze(1)  # [B, 1, N]
    lcs = torch.zeros(batch_size, num, num, dtype=torch.long, device=device)
    if 0 in config.ngram_orders and rows:
        local = _group_local(unigram_ids, groups, batch_size, num * width).view(
            batch_size, num, width
        )
        shape, pairs = (batch_size, num, num, width), batch_size * num * num
        lcs = lcs_lengths(
            local.unsqueeze(2).expand(shape).reshape(pairs, width),
            hyp_lens.expand(batch_size, num, num).reshape(-1),
            local.unsqueeze(1).expand(shape).reshape(pairs, width),
            ref_lens.expand(batch_size, num, num).reshape(-1),
        ).view(batch_size, num, num)
    return _type_scores(config, pair_overlaps, lcs, hyp_lens, ref_lens).to(config.dtype)
