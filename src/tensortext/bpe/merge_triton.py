"""Triton kernel for the merges: one program per piece, one lane per byte of the piece.

The same passes as :func:`tensortext.bpe.merge.merge_pieces` (the reference, with the same
signature and results), fused into one launch: each program keeps its piece in registers,
marks merged-away bytes dead instead of compacting, and finds neighbours in "alive" order with
scans. Pieces longer than ``BLOCK`` bytes stay on the torch path.
"""

from __future__ import annotations

import importlib.util
import math
import os

import torch

from tensortext.bpe.merge import MergeTables

__all__ = ["MAX_PIECE_BYTES", "merge_pieces_triton", "triton_usable"]

MAX_PIECE_BYTES = 64  # lanes per program: pieces up to this many bytes use the kernel


def triton_usable(device: torch.device) -> bool:
    """Whether the kernel can run on ``device`` (CUDA, or any device under TRITON_INTERPRET=1)."""
    if importlib.util.find_spec("triton") is None:
        return False
    return device.type == "cuda" or os.environ.get("TRITON_INTERPRET") == "1"


def merge_pieces_triton(
    data: torch.Tensor,
    starts: torch.Tensor,
    lens: torch.Tensor,
    tables: MergeTables,
    out: torch.Tensor,
) -> torch.Tensor:
    """:func:`tensortext.bpe.merge.merge_pieces` in one kernel launch (pieces ``<= 64`` bytes).

    Same arguments, effects and return value (``[P]`` bool, pieces for the serial path).
    """
    if importlib.util.find_spec("triton") is None:
        raise RuntimeError("merge_pieces_triton needs the 'triton' package: pip install triton")
    # Imported here: importing triton is slow, and triton.jit reads TRITON_INTERPRET then.
    from tensortext.bpe._merge_kernel import merge_kernel

    num_pieces = starts.numel()
    irregular = torch.zeros(num_pieces, dtype=torch.int8, device=data.device)
    if num_pieces == 0:
        return irregular.bool()
    num_pairs = tables.pair_keys.numel()
    merge_kernel[(num_pieces,)](
        data,
        starts,
        lens,
        tables.byte_ids,
        tables.pair_keys,
        tables.pair_ranks,
        tables.pair_ids,
        num_pairs,
        tables.key_base,
        out,
        irregular,
        BLOCK=MAX_PIECE_BYTES,
        SEARCH_STEPS=max(1, math.ceil(math.log2(max(num_pairs, 2)))) + 1,
    )
    return irregular.bool()
