"""Longest common subsequence lengths of many sequence pairs at once, bit-parallel.

ROUGE-L needs ``LCS(hyp, ref)`` for every pair. The textbook dynamic programme fills an
``n x m`` table; the bit-parallel form (Allison & Dix 1986, in Hyyro's 2004 formulation) keeps
one column of it as a bit vector ``V`` over the ``m`` reference positions and updates the whole
column per hypothesis token with word operations::

    V = all ones                              # m bits
    for each hypothesis token t:
        M = bits j where ref[j] == t          # the match mask of t
        V = (V + (V & M)) | (V & ~M)
    LCS = number of zero bits of V

A zero bit marks a position where the LCS grew; the addition's carries move each zero to the
first usable match to its right, which is exactly the DP's max/diagonal rule.

Here ``V`` is a row of int64 words per pair, each word carrying :data:`PAYLOAD_BITS` (56) bits
of ``V``, so the sum of two words never leaves its int64 and the carry out of a word is bit 56.
Carries between words are resolved without a loop over words: a word *generates* a carry (its
sum reached bit 56) or *propagates* one (its payload is all ones, so an incoming carry passes
through), and the carry into word ``w`` is set iff the last generating word below ``w`` comes
after the last word that does neither (two ``cummax`` scans over word indices).

Match masks are built per chunk of hypothesis positions by comparing tokens (``[Q, C, 64 W]``
booleans) and packing them into words: the booleans are one byte each, so eight of them read as
one int64 hold eight bits 8 apart; eight such lanes shifted by 0..7 and summed give a full word.
Reference positions are laid out once so that the packed bits come out in position order, and
every eighth byte is a dummy, leaving 56 payload bits. The chunk size ``C`` keeps the chunk's
comparison within 16 MiB (one hypothesis position at least), so memory is ``O(Q * (L + M))``
plus that buffer: linear in the lengths. The Python loop runs over hypothesis positions, never
over pairs, and nothing synchronises with the host.
"""

from __future__ import annotations

import sys

import torch
from torch import Tensor

__all__ = ["PAYLOAD_BITS", "lcs_lengths"]

PAYLOAD_BITS = 56
_PAYLOAD = (1 << PAYLOAD_BITS) - 1
# Bytes of the [Q, C, 64 W] comparison a chunk may hold (its packed words are as large again).
_CHUNK_BYTES = 1 << 24
# Padding never matches: hypothesis and reference padding get different negative sentinels.
_HYP_PAD, _REF_PAD = -1, -2


def _slot_positions(width: int, device: torch.device) -> tuple[Tensor, int]:
    """Where each reference position goes in the byte layout that packs into words.

    Slots are ``[8 lanes, W words, 8 bytes]``: the 8 bytes of (lane, word) read as one int64,
    shifted left by ``lane``, become bits ``8 * b + lane`` of the word, where ``b`` is the byte's
    significance in an int64 (the byte index on little-endian machines). Bytes of significance 7
    are dummies, so word ``w`` holds positions ``56 w .. 56 w + 55`` in bits ``0..55``.

    Returns:
        ``([64 W] int64, W)``: the reference position each slot holds (``-1`` for a dummy slot
        or one past ``width``), and the number of words ``W``.
    """
    words = max(1, -(-width // PAYLOAD_BITS))
    lane = torch.arange(8, device=device).view(8, 1, 1)
    word = torch.arange(words, device=device).view(1, words, 1)
    byte = torch.arange(8, device=device).view(1, 1, 8)
    significance = byte if sys.byteorder == "little" else 7 - byte
    position = word * PAYLOAD_BITS + 8 * significance + lane  # [8, W, 8]
    usable = (significance < 7) & (position < width)
    return torch.where(usable, position, -1).reshape(-1), words


def _pack_masks(matches: Tensor, words: int) -> Tensor:
    """``[Q, C, 64 W]`` booleans in slot layout -> ``[Q, C, W]`` int64 match masks."""
    num_pairs, chunk, _ = matches.shape
    # Eight booleans viewed as one int64 hold bits 0, 8, ..., 56 (one per byte).
    lanes = matches.view(torch.uint8).view(torch.int64).view(num_pairs, chunk, 8, words)
    shifts = torch.arange(8, device=matches.device).view(8, 1)
    # The lanes' bits are disjoint after shifting, so their sum is their bitwise or.
    return (lanes << shifts).sum(-2)


def _add_words(left: Tensor, right: Tensor) -> Tensor:
    """``left + right`` of ``[Q, W]`` multi-word numbers (56 payload bits per word, least
    significant word first), the carry out of the top word dropped."""
    total = left + right  # [Q, W], each < 2**57
    low = total & _PAYLOAD
    words = total.shape[1]
    if words == 1:
        return low
    generates = (total >> PAYLOAD_BITS).bool()
    propagates = low == _PAYLOAD
    index = torch.arange(words, device=total.device)
    last_generate = torch.where(generates, index, -1).cummax(dim=1).values
    last_kill = torch.where(generates | propagates, -1, index).cummax(dim=1).values
    carry_out = (last_generate > last_kill).long()  # [Q, W]: carry out of word w
    carry_in = torch.nn.functional.pad(carry_out[:, :-1], (1, 0))
    return (low + carry_in) & _PAYLOAD


def _count_ones(bits: Tensor, width: Tensor) -> Tensor:
    """Set bits of ``[Q, W]`` words among positions ``0..width-1``, ``[Q]`` int64."""
    offsets = torch.arange(PAYLOAD_BITS, device=bits.device)
    unpacked = (bits.unsqueeze(-1) >> offsets) & 1  # [Q, W, 56]
    position = torch.arange(bits.shape[1], device=bits.device).unsqueeze(1) * PAYLOAD_BITS
    inside = (position + offsets) < width.view(-1, 1, 1)
    return (unpacked * inside).sum(dim=(1, 2))


def lcs_lengths(hyp_ids: Tensor, hyp_lens: Tensor, ref_ids: Tensor, ref_lens: Tensor) -> Tensor:
    """Length of the longest common subsequence of every pair ``(hyp_ids[q], ref_ids[q])``.

    Equals the dynamic programme of ``rouge_score.rouge_scorer._lcs_table`` on each pair (see the
    module docstring for the algorithm and its memory).

    Args:
        hyp_ids: ``[Q, L]`` integer IDs, non-negative inside each sequence; any integer dtype
            (int16 compares fastest).
        hyp_lens: ``[Q]`` lengths, ``0 <= hyp_lens <= L``.
        ref_ids: ``[Q, M]`` integer IDs of the same dtype, non-negative inside each sequence.
        ref_lens: ``[Q]`` lengths, ``<= M``; a negative length is an empty sequence.

    Returns:
        ``[Q]`` int64.

    Example:
        >>> hyp, ref = torch.tensor([[1, 2, 3, 4]]), torch.tensor([[2, 4, 3]])
        >>> lcs_lengths(hyp, torch.tensor([4]), ref, torch.tensor([3])).tolist()
        [2]
    """
    num_pairs, hyp_width = hyp_ids.shape
    device = hyp_ids.device
    ref_lens = ref_lens.long().clamp(min=0)
    if hyp_ids.dtype == torch.uint8:  # the sentinels are negative
        hyp_ids, ref_ids = hyp_ids.short(), ref_ids.short()
    slots, words = _slot_positions(ref_ids.shape[1], device)
    inside_ref = torch.arange(ref_ids.shape[1], device=device) < ref_lens.unsqueeze(1)
    refs = ref_ids.masked_fill(~inside_ref, _REF_PAD)
    refs = torch.nn.functional.pad(refs, (0, 1), value=_REF_PAD)  # column M: every dummy slot
    ref_slots = refs[:, torch.where(slots < 0, ref_ids.shape[1], slots)]  # [Q, 64 W]
    inside_hyp = torch.arange(hyp_width, device=device) < hyp_lens.long().unsqueeze(1)
    hyps = hyp_ids.masked_fill(~inside_hyp, _HYP_PAD)
    column = torch.full((num_pairs, words), _PAYLOAD, dtype=torch.long, device=device)
    chunk = max(1, _CHUNK_BYTES // max(1, num_pairs * 64 * words))
    for start in range(0, hyp_width, chunk):
        tokens = hyps[:, start : start + chunk]  # [Q, C]
        masks = _pack_masks(tokens.unsqueeze(-1) == ref_slots.unsqueeze(1), words)  # [Q, C, W]
        for step in range(tokens.shape[1]):
            match = masks[:, step]
            column = _add_words(column, column & match) | (column & ~match)
    return ref_lens - _count_ones(column, ref_lens)
