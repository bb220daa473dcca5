"""The tensor engine: split, look up and merge every text of a batch together, on any device.

:func:`encode_flat` turns prepared segments (the texts cut at special tokens) into the token IDs of
every text, concatenated (``tokens [T]``) with one length per text (``lengths [B]``);
:func:`pad_flat` pads that into :class:`~tensortext.padded.Padded` ``[B, L]``. Whether it runs,
and with the Triton kernel or not, is :mod:`tensortext.bpe.backends`' choice.
"""

from __future__ import annotations

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)

# isort: split
import itertools
import os

import torch

from tensortext.bpe.merge import MergeTables, expand_spans, lookup_pieces, merge_pieces
from tensortext.bpe.merge_triton import MAX_PIECE_BYTES, merge_pieces_triton
from tensortext.bpe.pretokenize import PatternKind, piece_starts
from tensortext.bpe.serial import char_parts, merge_parts_by_rank, merge_serial, merge_tokens
from tensortext.bpe.text import Segments
from tensortext.bpe.unicode import char_classes, codepoint_flags
from tensortext.bpe.vocab import Vocab
from tensortext.padded import Padded

__all__ = [
    "MAX_PASSES",
    "affix_flat",
    "encode_flat",
    "merge_byte_pieces",
    "pad_flat",
    "piece_texts",
]

# Parallel passes before a piece goes on with the sequential heap: a pass per distinct rank
# merged is cheap for words (a few passes) but not for a long run of random CJK (thousands).
MAX_PASSES = 64

_RAN_TORCH = False
"""Whether this process has run the engine's tensor passes (torch's intra-op threads started)."""


def _one_torch_thread_after_fork() -> None:
    """In a forked child of a process whose torch ran OpenMP threads, the next parallel region
    (any large tensor op: this engine's, the host encoder's merges) waits forever for threads
    that were not forked. As PyTorch's ``DataLoader`` does in its workers, the child runs
    torch on one thread (``torch.set_num_threads`` raises it again, at the caller's risk).
    Only where this engine ran in the parent: a process that never used it keeps its threads."""
    if not _RAN_TORCH:
        return
    if "OpenMP" in torch.__config__.parallel_info().rsplit("ATen parallel backend:", 1)[-1]:
        torch.set_num_threads(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_one_torch_thread_after_fork)


def _running_torch() -> None:
    """Marks this process as one whose forked children need :func:`_one_torch_thread_after_fork`."""
    global _RAN_TORCH
    _RAN_TORCH = True


def to_codepoints(text: str) -> torch.Tensor:
    if not text:
        return torch.zeros(0, dtype=torch.int32)
    return torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32)


def to_utf8(text: str) -> torch.Tensor:
    if not text:
        return torch.zeros(0, dtype=torch.uint8)
    return torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8)


def encode_flat(
    vocab: Vocab,
    segments: Segments,
    n_texts: int,
    device: torch.device,
    kind: PatternKind,
    *,
    triton: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The tokens of ``n_texts`` texts given as segments: ``(tokens [T], lengths [B])`` int64.

    An ordinary segment is split with the ``kind`` rules; a special one is its token. With
    ``triton``, pieces up to ``MAX_PIECE_BYTES`` merge in the Triton kernel.
    """
    _running_torch()
    texts, special_list, owner_list = segments
    joined = "".join(texts)
    codepoints = to_codepoints(joined).to(device)
    data = to_utf8(joined).to(device)
    segment_lens = torch.tensor([len(seg) for seg in texts], dtype=torch.int64).to(device)
    segment_special = torch.tensor(special_list, dtype=torch.int64).to(device)
    text_of_segment = torch.tensor(owner_list, dtype=torch.int64).to(device)
    n = codepoints.numel()
    segment_of_cp = torch.repeat_interleave(
        torch.arange(segment_lens.numel(), device=device), segment_lens, output_size=n
    )
    starts_mask = piece_starts(codepoints, segment_lens, kind)
    starts_mask = _cut_classes(codepoints, segment_of_cp, starts_mask, vocab.cuts)
    # A special token's segment is one piece, whatever the regex says.
    special_of_cp = segment_special[segment_of_cp]
    segment_first = torch.zeros_like(starts_mask)
    segment_first[(torch.cumsum(segment_lens, 0) - segment_lens)[segment_lens > 0]] = True
    starts_mask = torch.where(special_of_cp >= 0, segment_first, starts_mask)
    cp_bytes = (
        1
        + (codepoints >= 0x80).long()
        + (codepoints >= 0x800).long()
        + (codepoints >= 0x10000).long()
    )
    byte_start = torch.cumsum(cp_bytes, 0) - cp_bytes  # [n]
    piece_cp = starts_mask.nonzero().squeeze(1)
    piece_start = byte_start[piece_cp]
    piece_len = torch.diff(piece_start, append=piece_start.new_tensor([data.numel()]))
    out = torch.full((data.numel() + 1,), -1, dtype=torch.int64, device=device)
    special_of_piece = special_of_cp[piece_cp]
    ordinary = special_of_piece < 0
    out[piece_start[~ordinary]] = special_of_piece[~ordinary]
    # Whole-piece lookups, then merges for the rest.
    piece_start, piece_len = piece_start[ordinary], piece_len[ordinary]
    tables = vocab.tables(device)
    whole = lookup_pieces(data, piece_start, piece_len, tables)
    hit = whole >= 0
    out[piece_start[hit]] = whole[hit]
    rest_start, rest_len = piece_start[~hit], piece_len[~hit]
    irregular, unfinished = _merge(data, rest_start, rest_len, tables, out, triton)
    if bool((irregular | unfinished).any()):  # rare: one sync, then host work
        _merge_serially(vocab, data, rest_start, rest_len, irregular, unfinished, out)
    segment_bytes = torch.zeros(segment_lens.numel(), dtype=torch.int64, device=device)
    segment_bytes.index_add_(0, segment_of_cp, cp_bytes)
    text_bytes = torch.zeros(n_texts, dtype=torch.int64, device=device)
    text_bytes.index_add_(0, text_of_segment, segment_bytes)
    tokens, lengths = _collect(out[:-1], text_bytes)
    if vocab.fuse_unk and vocab.unknown_ids is not None and vocab.unknown_ids[256] >= 0:
        tokens, lengths = _fuse_unknown(tokens, lengths, vocab.unknown_ids[256])
    return tokens, lengths


def _cut_classes(
    codepoints: torch.Tensor,
    segment: torch.Tensor,
    starts: torch.Tensor,
    cuts: list[list[bool]] | None,
) -> torch.Tensor:
    """``starts [n]`` with a piece also starting between two characters of one segment whose
    classes no token holds side by side (:attr:`Vocab.cuts`; SentencePiece only)."""
    if cuts is None or codepoints.numel() < 2:
        return starts
    classes = char_classes(codepoints, codepoint_flags(codepoints), torch.where).long()
    table = torch.tensor(cuts, dtype=torch.bool, device=codepoints.device)
    cut = table[classes[:-1], classes[1:]] & (segment[1:] == segment[:-1])
    return starts | torch.cat([cut.new_zeros(1), cut])


def _fuse_unknown(
    tokens: torch.Tensor, lengths: torch.Tensor, unk: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(tokens [T], lengths [B])`` with each run of ``unk`` in a text made one."""
    text = torch.repeat_interleave(
        torch.arange(lengths.numel(), device=tokens.device), lengths, output_size=tokens.numel()
    )
    repeat = (tokens[1:] == unk) & (tokens[:-1] == unk) & (text[1:] == text[:-1])
    keep = torch.cat([repeat.new_ones(min(1, tokens.numel())), ~repeat])
    return tokens[keep], torch.bincount(text[keep], minlength=lengths.numel())


def merge_byte_pieces(vocab: Vocab, pieces: list[bytes]) -> list[list[int]]:
    """The tokens of each piece, merged from its bytes (no split, no whole-piece lookup), all
    pieces in the same parallel passes on the CPU: the host encoder's merges when a batch has
    many new pieces."""
    _running_torch()
    lens = torch.tensor([len(piece) for piece in pieces], dtype=torch.int64)
    joined = b"".join(pieces)
    data = torch.frombuffer(bytearray(joined), dtype=torch.uint8) if joined else lens[:0].byte()
    starts = torch.cumsum(lens, 0) - lens
    out = torch.full((data.numel() + 1,), -1, dtype=torch.int64)
    tables = vocab.tables(torch.device("cpu"))
    irregular, unfinished = _merge(data, starts, lens, tables, out, triton=False)
    if bool((irregular | unfinished).any()):  # rare: the sequential merges on the host
        _merge_serially(vocab, data, starts, lens, irregular, unfinished, out)
    tokens, counts = _collect(out[:-1], lens)
    flat, rows, start = tokens.tolist(), [], 0
    for count in counts.tolist():
        rows.append(flat[start : start + count])
        start += count
    return rows


def piece_texts(text: str, kind: PatternKind) -> list[str]:
    """The pieces the ``kind`` rules cut one ordinary segment into (on the CPU)."""
    if not text:
        return []
    starts = piece_starts(to_codepoints(text), torch.tensor([len(text)]), kind)
    bounds = [*starts.nonzero().squeeze(1).tolist(), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


def _merge_serially(
    vocab: Vocab,
    data: torch.Tensor,
    starts: torch.Tensor,
    lens: torch.Tensor,
    irregular: torch.Tensor,
    unfinished: torch.Tensor,
    out: torch.Tensor,
) -> None:
    """The sequential merges, on the host: irregular pieces from their bytes, unfinished ones
    from the tokens the passes left in ``out``."""
    host = bytes(data.cpu().numpy()) if data.numel() else b""
    byte_ids = vocab.byte_ids
    pairs, tokens = vocab.pairs, vocab.tokens
    positions: list[int] = []
    values: list[int] = []
    for start, length in zip(starts[irregular].tolist(), lens[irregular].tolist(), strict=True):
        if vocab.unknown_ids is not None:  # SentencePiece: from its characters
            offsets, first = char_parts(host[start : start + length], vocab)
            for index, token in merge_tokens(first, pairs):
                positions.append(start + offsets[index])
                values.append(token)
            continue
        for token in merge_serial(host[start : start + length], byte_ids, pairs):
            positions.append(start)
            values.append(token)
            start += len(tokens[token] or b"")
    for start, length in zip(starts[unfinished].tolist(), lens[unfinished].tolist(), strict=True):
        span = out[start : start + length]
        offsets = (span >= 0).nonzero().squeeze(1).tolist()
        merged = span[offsets].tolist()
        span.fill_(-1)
        if vocab.ranks_are_ids:  # rank at a time from the passes' state (merge_parts_by_rank)
            parts = [tokens[token] or b"" for token in merged]
            for token in merge_parts_by_rank(parts, vocab.mergeable, tokens):
                positions.append(start)
                values.append(token)
                start += len(tokens[token] or b"")
            continue
        for index, token in merge_tokens(merged, pairs):
            positions.append(start + offsets[index])
            values.append(token)
    if positions:
        out[torch.tensor(positions, device=out.device)] = torch.tensor(values, device=out.device)


def _merge(
    data: torch.Tensor,
    starts: torch.Tensor,
    lens: torch.Tensor,
    tables: MergeTables,
    out: torch.Tensor,
    triton: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge with the torch passes or (``triton``) the kernel for short pieces; returns the
    ``[P]`` bool masks of the pieces the sequential merges must do (irregular) or finish
    (unfinished after ``MAX_PASSES``)."""
    unfinished = torch.zeros(starts.numel(), dtype=torch.bool, device=data.device)
    if not triton or tables.char_units:  # (the kernel merges bytes, not characters)
        irregular = merge_pieces(
            data, starts, lens, tables, out, max_passes=MAX_PASSES, unfinished=unfinished
        )
        return irregular, unfinished
    short = lens <= MAX_PIECE_BYTES  # at most MAX_PIECE_BYTES - 1 passes: never unfinished
    irregular = torch.zeros_like(short)
    irregular[short] = merge_pieces_triton(data, starts[short], lens[short], tables, out)
    long_unfinished = torch.zeros(int((~short).sum()), dtype=torch.bool, device=data.device)
    irregular[~short] = merge_pieces(
        data,
        starts[~short],
        lens[~short],
        tables,
        out,
        max_passes=MAX_PASSES,
        unfinished=long_unfinished,
    )
    unfinished[~short] = long_unfinished
    return irregular, unfinished


def _collect(
    token_at_byte: torch.Tensor, text_bytes: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens written at their first byte -> ``(tokens [T], lengths [B])``."""
    positions = (token_at_byte >= 0).nonzero().squeeze(1)
    text_ends = torch.cumsum(text_bytes, 0)
    text_of_token = torch.searchsorted(text_ends, positions, right=True)
    lengths = torch.bincount(text_of_token, minlength=text_bytes.numel())
    return token_at_byte[positions], lengths


def affix_flat(
    tokens: torch.Tensor,
    lengths: torch.Tensor,
    prefix: tuple[int, ...] = (),
    suffix: tuple[int, ...] = (),
) -> tuple[torch.Tensor, torch.Tensor]:
    """``tokens [T]`` of rows ``lengths [B]`` with ``prefix`` and ``suffix`` IDs around each row:
    ``(tokens [T + B * extra], lengths [B])``."""
    extra = len(prefix) + len(suffix)
    if not extra:
        return tokens, lengths
    device = tokens.device
    rows = lengths.numel()
    out_lengths = lengths + extra
    out_starts = torch.cumsum(out_lengths, 0) - out_lengths  # [B]
    total = tokens.numel() + rows * extra
    out = torch.empty(total, dtype=torch.int64, device=device)
    row_of, column = expand_spans(lengths, tokens.numel())  # [T] each
    out[out_starts[row_of] + len(prefix) + column] = tokens
    for k, token in enumerate(prefix):
        out[out_starts + k] = token
    for k, token in enumerate(suffix):
        out[out_starts + len(prefix) + lengths + k] = token
    return out, out_lengths


def pad_flat(
    tokens: torch.Tensor,
    lengths: torch.Tensor,
    pad_id: int,
    prefix: tuple[int, ...] = (),
    suffix: tuple[int, ...] = (),
) -> Padded:
    """``tokens [T]`` of ``B`` rows (``lengths [B]``) -> ``Padded(ids [B, L], lengths [B])``,
    with ``prefix`` and ``suffix`` IDs around each row."""
    device = tokens.device
    extra = len(prefix) + len(suffix)
    rows = lengths.numel()
    row_of, column = expand_spans(lengths, tokens.numel())  # [T] each
    out_lengths = lengths + extra
    width = int(out_lengths.max()) if rows else 0
    padded = torch.full((rows, width), pad_id, dtype=torch.int64, device=device)
    padded[row_of, column + len(prefix)] = tokens
    if prefix:
        padded[:, : len(prefix)] = torch.tensor(prefix, dtype=torch.int64, device=device)
    if suffix:
        at = lengths[:, None] + len(prefix) + torch.arange(len(suffix), device=device)
        padded.scatter_(1, at, torch.tensor(suffix, device=device).expand(rows, -1).contiguous())
    return Padded(padded, out_lengths)
