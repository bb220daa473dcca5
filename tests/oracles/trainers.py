"""Trainer oracles (tests/cli/test_cli_shard_formats.py): how nanoGPT, build-nanogpt and llm.c
write and read token shards, re-expressed in Python from their sources (read, not copied), so
that ``tensortext tokenize``'s shards are checked by the logic of the programs that train on
them.

Sources, on GitHub (default branch unless named):

- ``karpathy/nanoGPT`` ``train.py``, ``get_batch``: ``np.memmap('train.bin', dtype=np.uint16,
  mode='r')``; ``data/openwebtext/prepare.py`` appends the end-of-text token.
- ``karpathy/build-nanogpt`` ``fineweb.py`` (``tokenize`` and the shard loop: the end-of-text
  token before each document, shards of ``shard_size`` tokens, ``np.save``) and
  ``train_gpt2.py``'s ``load_tokens`` (``np.load``, then int32).
- ``karpathy/llm.c`` ``dev/data/data_common.py`` (``HEADERS_INFO``, ``write_datafile``),
  ``dev/data/fineweb.py`` (the same shard loop as build-nanogpt's, ``token_dtype`` by
  ``--model_desc``), ``llmc/dataloader.h`` (``dataloader_load_shard_``, ``dataloader_init``:
  GPT-2 files only on master, both layouts on the ``llama3`` branch), and ``train_gpt2.py`` /
  ``train_llama3.py`` (``_peek_data_shard``, ``_load_data_shard``).

Where a trainer would ``exit`` or fail an ``assert``, these raise :class:`Refused` naming the
check.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

GPT2_MAGIC, LLAMA3_MAGIC = 20240520, 20240801
HEADER_SIZE = 256  # int32 words; llm.c's HEADER_SIZE
HEADERS_INFO: dict[str, dict[str, Any]] = {
    "gpt-2": {"magic": GPT2_MAGIC, "version": 1, "token_dtype": np.uint16},
    "llama-3": {"magic": LLAMA3_MAGIC, "version": 7, "token_dtype": np.uint32},
}
"""The layouts of llm.c's ``data_common.py``, by ``model_desc``."""


class Refused(AssertionError):
    """The trainer would stop on this file (``exit(1)`` or a failed ``assert``)."""


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise Refused(message)


# nanoGPT ------------------------------------------------------------------------------------


def nanogpt_train_data(path: str | Path, dtype: Any = np.uint16) -> np.ndarray:
    """nanoGPT ``train.py``'s ``get_batch``: the whole file as tokens (``uint16`` there; a
    uint32 set needs the user to change it)."""
    return np.memmap(path, dtype=dtype, mode="r")


# build-nanogpt ------------------------------------------------------------------------------


def build_nanogpt_load_tokens(path: str | Path) -> np.ndarray:
    """build-nanogpt ``train_gpt2.py``'s ``load_tokens``, without the final
    ``torch.tensor(..., dtype=torch.long)`` (which keeps the values)."""
    return np.load(path).astype(np.int32)


def fineweb_shards(
    docs: Sequence[str], encoding: Any, shard_size: int, token_dtype: Any = np.uint16
) -> list[np.ndarray]:
    """The shards build-nanogpt's ``fineweb.py`` writes (``np.save`` of each), or llm.c's
    ``dev/data/fineweb.py`` with ``token_dtype`` (``write_datafile`` of each): every document is
    the end-of-text token, then ``encode_ordinary`` of its text; a document that does not fit
    goes on in the next shard. As there, no document may be longer than a shard."""

    def document_tokens(doc: str) -> np.ndarray:
        ids = np.array([encoding.eot_token, *encoding.encode_ordinary(doc)])
        if token_dtype == np.uint16:  # their check before the cast
            _check(bool(((ids >= 0) & (ids < 1 << 16)).all()), "IDs beyond uint16")
        return ids.astype(token_dtype)

    shards: list[np.ndarray] = []
    buffer = np.empty(shard_size, dtype=token_dtype)
    filled = 0
    for ids in map(document_tokens, docs):
        # Strictly less: a document that fills the shard exactly goes the "full" way, which
        # writes the shard and starts the next one empty.
        if filled + ids.size < shard_size:
            buffer[filled : filled + ids.size] = ids
            filled += ids.size
            continue
        fits = shard_size - filled
        buffer[filled:] = ids[:fits]
        shards.append(buffer.copy())
        # (their slice assignment fails for a document longer than what is left + a shard)
        _check(ids.size - fits <= shard_size, "a document longer than a shard")
        buffer[: ids.size - fits] = ids[fits:]
        filled = ids.size - fits
    if filled:
        shards.append(buffer[:filled].copy())
    return shards


# llm.c --------------------------------------------------------------------------------------


def llmc_write_datafile(toks: Sequence[int] | np.ndarray, model_desc: str = "gpt-2") -> bytes:
    """The bytes llm.c's ``write_datafile(filename, toks, model_desc)`` writes: 256 int32
    words (magic, version, token count, zeros), then the tokens in ``model_desc``'s dtype."""
    _check(len(toks) < 1 << 31, "write_datafile: too many tokens for an int32 count")
    _check(model_desc in HEADERS_INFO, f"write_datafile: no model_desc {model_desc!r}")
    layout = HEADERS_INFO[model_desc]
    words = np.zeros(HEADER_SIZE, dtype=np.int32)
    words[:3] = layout["magic"], layout["version"], len(toks)
    return words.tobytes() + np.asarray(toks, dtype=layout["token_dtype"]).tobytes()


def llmc_c_load_shard(path: str | Path, branch: str = "master") -> np.ndarray:
    """``llmc/dataloader.h``'s ``dataloader_load_shard_``: the header checks, then the tokens as
    ``dataloader_next_batch`` reads them (``fread`` of ``token_dtype``-sized values after the
    header, in the machine's byte order: little-endian where llm.c runs).

    ``branch``: ``"master"`` (GPT-2 files only: uint16) or ``"llama3"`` (either magic; the
    token size follows it).
    """
    data = Path(path).read_bytes()
    _check(len(data) >= HEADER_SIZE * 4, "dataloader.h: the header cannot be read")
    magic, version, ntok = np.frombuffer(data[: HEADER_SIZE * 4], dtype="<i4")[:3].tolist()
    magics = (GPT2_MAGIC,) if branch == "master" else (GPT2_MAGIC, LLAMA3_MAGIC)
    _check(magic in magics, f"dataloader.h ({branch}): bad magic {magic}")
    _check(version == (1 if magic == GPT2_MAGIC else 7), f"dataloader.h: bad version {version}")
    token_size = 2 if magic == GPT2_MAGIC else 4
    _check(ntok > 0, "dataloader.h: assert(ntok > 0)")
    size = HEADER_SIZE * 4 + ntok * token_size
    _check(len(data) == size, f"dataloader.h: {len(data)} bytes, not the header's {size}")
    return np.frombuffer(data[HEADER_SIZE * 4 :], dtype=f"<u{token_size}")


def llmc_c_dataloader_init(
    paths: Sequence[str | Path], B: int, T: int, num_processes: int = 1, branch: str = "master"
) -> np.ndarray:
    """``dataloader_init``: every shard loaded (in glob order: sorted names), each holding at
    least one batch plus one token, all of one token size (``llama3`` branch); the tokens of
    all shards, one after another."""
    shards = [llmc_c_load_shard(path, branch) for path in sorted(map(str, paths))]
    for tokens in shards:
        _check(tokens.size > num_processes * B * T, "dataloader.h: a shard under one batch")
        _check(tokens.dtype == shards[0].dtype, "dataloader.h: shards of two token sizes")
    return np.concatenate(shards)


def _load_data_shard(path: str | Path, magic: int, version: int, dtype: Any) -> np.ndarray:
    """``_peek_data_shard`` and ``_load_data_shard`` of llm.c's Python trainers: the header
    as native int32, its magic and version checked, the rest of the file as ``dtype``, as many
    as the header counts."""
    with open(path, "rb") as stream:
        header = np.frombuffer(stream.read(HEADER_SIZE * 4), dtype=np.int32)
        _check(header[0] == magic, f"train_*.py: magic {header[0]}, not {magic}")
        _check(header[1] == version, f"train_*.py: version {header[1]}, not {version}")
        tokens = np.frombuffer(stream.read(), dtype=dtype)
    _check(len(tokens) == header[2], f"train_*.py: {len(tokens)} tokens, header {header[2]}")
    return tokens


def llmc_train_gpt2_py_load(path: str | Path) -> np.ndarray:
    """llm.c ``train_gpt2.py``'s shard reader (GPT-2 layout, uint16)."""
    return _load_data_shard(path, GPT2_MAGIC, 1, np.uint16)


def llmc_train_llama3_py_load(path: str | Path) -> np.ndarray:
    """llm.c ``train_llama3.py``'s shard reader (Llama 3 layout, uint32)."""
    return _load_data_shard(path, LLAMA3_MAGIC, 7, np.uint32)
