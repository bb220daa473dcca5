"""chrF++'s words on codepoint tensors: sacrebleu's tokenization, and exact word IDs.

**Tokens.** sacrebleu (``CHRF._remove_punctuation``) splits a line on whitespace
(``str.split()``) and then, for every word of two or more characters, splits off its *last*
character if that is ASCII punctuation, else its *first* character if that is (``"(hi)"``
becomes ``"(hi"`` and ``")"``). A word n-gram is ``" ".join`` of ``n`` tokens; tokens hold no
whitespace, so two word n-grams are equal exactly when their token sequences are. Every token
is a contiguous run of the line with its whitespace removed, so tokenizing is a few flags on
that stream: a token starts where a word starts, at a split-off last character, and right after
a split-off first character.

**Exact IDs.** A token of at most ``k`` characters (``k * b <= 62`` for ``b``-bit character
codes) is its ``k`` codes packed into one integer, zero-padded: equal integers are equal
tokens. Longer tokens get IDs by prefix doubling over their characters: the rank of the block
of ``k * 2**(l+1)`` characters at ``i`` is the rank of the pair (block of ``k * 2**l`` at ``i``,
block of ``k * 2**l`` at ``i + k * 2**l``), blocks cut at the token's end; after
``ceil(log2(longest / k))`` rounds the block at a token's start is the whole token. Ranks come
from sorting (:func:`~tensortext.ngrams.compact_ids`): no hashing, so no collisions to verify.
The number of rounds and the sizes of the token arrays are read on the host (a sync on CUDA).
"""

from __future__ import annotations

import torch
from torch import Tensor

from tensortext.chrf.runs import KEY_BITS, keep_where, positions, segment_sums
from tensortext.chrf.text import Alphabet
from tensortext.ngrams import compact_ids
from tensortext.padded import Flat

__all__ = ["word_tokens"]


def _sequence_edges(lengths: Tensor, total: int) -> tuple[Tensor, Tensor]:
    """``(first [T], last [T])`` bool: the first and the last position of each sequence."""
    ends = torch.cumsum(lengths, 0)
    nonempty = lengths > 0
    first = torch.zeros(total + 1, dtype=torch.bool, device=lengths.device)
    last = torch.zeros(total + 1, dtype=torch.bool, device=lengths.device)
    first[torch.where(nonempty, ends - lengths, total)] = True  # empty sequences spill at T
    last[torch.where(nonempty, ends - 1, total)] = True
    return first[:total], last[:total]


def _token_starts(codes: Flat, space: Tensor, punctuation: Tensor) -> tuple[Flat, Tensor]:
    """``(stripped, token_start [T'] bool)``: the codes without whitespace, and where tokens
    start among them."""
    total = codes.ids.numel()
    first, last = _sequence_edges(codes.lengths, total)
    after_space = torch.cat([space.new_ones(1), space[:-1]]) | first
    before_space = torch.cat([space[1:], space.new_ones(1)]) | last
    stripped, kept = keep_where(codes, ~space)
    word_start = after_space.index_select(0, kept)
    word_end = before_space.index_select(0, kept)
    punct = punctuation.index_select(0, stripped.ids)
    # A word of 2+ characters whose last character is punctuation: that character is a token.
    split_last = word_end & ~word_start & punct
    # Else, if its first character is punctuation, the token after it starts one later. The
    # last character's class is looked up through the word's index (one spill slot at the end).
    word = torch.cumsum(word_start, 0).sub_(1)
    words = kept.numel()
    last_punct = torch.zeros(words + 1, dtype=torch.bool, device=space.device)
    last_punct.scatter_(0, torch.where(word_end, word, words), punct & word_end)
    split_first = word_start & ~word_end & punct & ~last_punct.index_select(0, word.clamp(min=0))
    after_first = torch.cat([split_first.new_zeros(1), split_first[:-1]])
    return stripped, word_start | split_last | after_first


def _pack_chars(chars: Tensor, starts: Tensor, ends: Tensor, width: int, bits: int) -> Tensor:
    """``[P]``: up to ``width`` codes from each start, stopping at its end, packed high to low
    (0 past the end; codes are ``>= 1``)."""
    padded = torch.cat([chars, chars.new_zeros(width)])
    packed = torch.zeros_like(starts)
    for j in range(width):
        code = torch.where(starts + j < ends, padded.index_select(0, starts + j), 0)
        packed.mul_(1 << bits).add_(code)
    return packed


def _long_token_ranks(
    chars: Tensor, starts: Tensor, lengths: Tensor, block: int, bits: int, longest: int
) -> Tensor:
    """Exact ranks (equal iff equal text) of tokens longer than ``block`` codes, by doubling."""
    device = chars.device
    total = int(lengths.sum())
    token = torch.repeat_interleave(
        torch.arange(lengths.numel(), device=device), lengths, output_size=total
    )
    sub_start = torch.cumsum(lengths, 0) - lengths  # where each token starts in the sub-stream
    offset = torch.arange(total, device=device) - sub_start.index_select(0, token)
    source = starts.index_select(0, token) + offset  # position in the stripped stream
    end_in_sub = (sub_start + lengths).index_select(0, token)
    source_end = (starts + lengths).index_select(0, token)
    block_ids = compact_ids(_pack_chars(chars, source, source_end, block, bits)) + 1
    index = torch.arange(total, device=device)
    size = block
    while size < longest:
        ahead = index + size
        following = torch.where(
            ahead < end_in_sub, block_ids.index_select(0, ahead.clamp(max=total - 1)), 0
        )
        block_ids = compact_ids(block_ids * (total + 1) + following) + 1
        size *= 2
    return block_ids.index_select(0, sub_start)


def word_tokens(codes: Flat, space: Tensor, found: Alphabet) -> tuple[Flat, int]:
    """chrF++'s tokens of every sequence, as compact IDs: ``(Flat(ids [T_w], counts [S]), bits)``.

    Args:
        codes: ``(codes [T], lengths [S])`` from ``found``, whitespace included.
        space: ``[T]`` bool, which positions are whitespace.
        found: the batch's :class:`~tensortext.chrf.text.Alphabet`.

    Returns:
        Token IDs ``>= 2`` (equal iff the tokens are), in sequence order, with each sequence's
        token count, and the bits the IDs need.
    """
    stripped, token_start = _token_starts(codes, space, found.punctuation)
    chars = stripped.ids - 1  # >= 1: 0 pads a block
    starts = positions(token_start)  # [T_tokens]
    num_tokens = starts.numel()
    ends = torch.cat([starts[1:], starts.new_tensor([chars.numel()])])
    lengths = ends - starts  # tokens never cross sequences: each sequence starts a word
    block = KEY_BITS // found.bits
    keys = _pack_chars(chars, starts, ends, block, found.bits)
    longest = int(lengths.max()) if num_tokens else 0  # host read
    if longest > block:
        long = lengths > block
        long_ids = _long_token_ranks(chars, starts[long], lengths[long], block, found.bits, longest)
        keys[long] = long_ids + (1 << KEY_BITS)  # above every packed key
    ids = compact_ids(keys) + 2
    counts = segment_sums(token_start, stripped.lengths)
    return Flat(ids, counts), (num_tokens + 1).bit_length()
