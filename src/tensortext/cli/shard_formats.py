"""The byte layouts of ``tensortext tokenize``'s token shards, and the one rule for their dtype.

A shard holds a run of the token stream as unsigned integers, little-endian: ``uint16`` when the
encoding's largest ID (special tokens included) is below 65536, else ``uint32`` (``--dtype``
overrides it; ``uint16`` is refused where an ID would not fit). The index ``PREFIX_index.json``
records ``format``, ``dtype`` and ``byte_order`` whatever the layout.

``npy``
    ``np.save``'s header (format 1.0), then the tokens: what build-nanogpt's ``fineweb.py``
    writes and its ``train_gpt2.py`` reads (``np.load``). The file names its dtype.
``raw``
    The tokens and nothing else: nanoGPT's ``train.bin``, which its ``train.py`` reads with
    ``np.memmap(path, dtype=np.uint16, mode="r")``. The file cannot say its dtype, so the reader
    must know it (the index and the summary line name it). Headerless shards join by
    concatenation: ``cat PREFIX_*.raw > train.bin``.
``bin``
    llm.c's data file (``dev/data/data_common.py``'s ``write_datafile``): 256 int32 words,
    ``[magic, version, token count, 0, ...]``, then the tokens. ``uint16`` is the GPT-2 layout
    (magic 20240520, version 1), read by ``train_gpt2.c``/``.cu`` (``llmc/dataloader.h``) and
    ``train_gpt2.py``; ``uint32`` the Llama 3 layout (magic 20240801, version 7), read by
    ``train_llama3.py`` and the C dataloader of llm.c's ``llama3`` branch. The loaders check
    the magic, the version, that the file holds exactly the count's tokens, and (the C one)
    that the count is above 0: the one empty shard of an input with no tokens is no llm.c file.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from tensortext.cli.common import CliError

__all__ = [
    "BIN_HEADER_WORDS",
    "BIN_LAYOUTS",
    "FORMATS",
    "MAX_SHARD_TOKENS",
    "BinLayout",
    "add_arguments",
    "describe",
    "shard_dtype",
    "write_shard",
]

FORMATS = ("npy", "raw", "bin")
"""The shard layouts, each its files' extension (``PREFIX_000000.npy``)."""
MAX_SHARD_TOKENS = (1 << 31) - 1
"""The largest ``--shard-tokens``: llm.c's header holds the count as an int32, and a shard is
held in memory while it fills (2 or 4 bytes a token)."""
BIN_HEADER_WORDS = 256
"""An llm.c data file starts with this many int32 words (1024 bytes)."""


@dataclass(frozen=True)
class BinLayout:
    """The header of an llm.c data file holding one token dtype."""

    model: str  # llm.c's ``model_desc``
    magic: int
    version: int


BIN_LAYOUTS = {
    "uint16": BinLayout("gpt-2", 20240520, 1),
    "uint32": BinLayout("llama-3", 20240801, 7),
}
"""llm.c's ``HEADERS_INFO``, by token dtype."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--format``, ``--dtype`` and ``--shard-tokens`` of ``tensortext tokenize``."""
    parser.add_argument(
        "--format",
        choices=["ids", *FORMATS],
        default="ids",
        help="ids: a line of IDs per document (default); npy: np.save shards (build-nanogpt's "
        "train_gpt2.py, np.load); raw: headerless tokens (nanoGPT's train.bin: np.memmap with "
        "the dtype the index names); bin: llm.c's data files (256 x int32 header; uint16: magic "
        "20240520 version 1 for train_gpt2.c/.py, uint32: 20240801 version 7 for "
        "train_llama3.py)",
    )
    parser.add_argument(
        "--dtype",
        choices=["uint16", "uint32"],
        help="token type of the shards, little-endian (default: uint16 when every ID of the "
        "encoding is below 65536, else uint32); with --format bin it picks llm.c's layout",
    )
    parser.add_argument(
        "--shard-tokens",
        type=int,
        default=100_000_000,
        help=f"tokens per shard, 1 to {MAX_SHARD_TOKENS}; a shard is held in memory while it "
        "fills (default: 100000000, as build-nanogpt's and llm.c's fineweb.py)",
    )


def shard_dtype(encoding: Any, dtype: str | None) -> str:
    """The shards' dtype: ``dtype`` (``--dtype``) if given, else the narrowest that holds every
    ID of ``encoding`` (its ``max_token_value``, special tokens included).

    Raises:
        CliError: ``uint16`` for an encoding with an ID of 65536 or more.
    """
    fits = encoding.max_token_value < 1 << 16
    if dtype == "uint16" and not fits:
        raise CliError(
            f"--dtype uint16 cannot hold {encoding.name}'s IDs (up to {encoding.max_token_value}); "
            "use --dtype uint32"
        )
    return dtype or ("uint16" if fits else "uint32")


def describe(file_format: str, dtype: str) -> str:
    """What a reader must know of the shards, for the summary line.

    Example:
        >>> describe("raw", "uint16")
        'raw: headerless little-endian uint16'
    """
    if file_format == "raw":
        return f"raw: headerless little-endian {dtype}"
    if file_format == "bin":
        layout = BIN_LAYOUTS[dtype]
        header = f"magic {layout.magic} version {layout.version}"
        return f"bin: llm.c {layout.model} layout, {header}, {dtype}"
    return f"{file_format}: {dtype}"


def write_shard(stream: BinaryIO, tokens: np.ndarray, file_format: str) -> None:
    """``tokens [T]`` (uint16 or uint32) in ``file_format``'s layout (see the module's
    docstring), little-endian on every host.

    The bytes go through ``stream.write``, not ``ndarray.tofile`` (which ``np.save`` uses), so
    a full disk raises ``OSError`` with its ``errno`` (ENOSPC) rather than a count of bytes.

    Example:
        >>> import io
        >>> stream = io.BytesIO()
        >>> write_shard(stream, np.array([1, 2], dtype=np.uint16), "bin")
        >>> words = np.frombuffer(stream.getvalue()[:12], dtype="<i4")
        >>> words.tolist(), len(stream.getvalue())
        ([20240520, 1, 2], 1028)
    """
    little = np.ascontiguousarray(tokens, dtype=tokens.dtype.newbyteorder("<"))
    if file_format == "npy":
        npy: Any = np.lib.format  # (typed in some numpy releases only)
        header = npy.header_data_from_array_1_0(little)
        npy.write_array_header_1_0(stream, header)  # np.save's, for a 1-D array
    elif file_format == "bin":
        layout = BIN_LAYOUTS[tokens.dtype.name]
        header_words = np.zeros(BIN_HEADER_WORDS, dtype="<i4")
        header_words[:3] = (layout.magic, layout.version, tokens.size)
        stream.write(header_words.tobytes())
    stream.write(little.view(np.uint8).data)
