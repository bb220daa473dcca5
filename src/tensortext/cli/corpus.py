"""``tensortext tokenize`` for data preparation: documents streamed from text or JSON-lines files,
token shards in nanoGPT's ``.npy`` or llm.c's ``.bin`` layout, and their index.

Memory stays bounded whatever the input size: documents are read one at a time and encoded in
batches of about ``--batch-bytes``; a shard's tokens fill one buffer (grown by doubling up to
``--shard-tokens``), and each full shard is written to a temporary file, all of them renamed
when the run succeeds. A document's tokens run over into the next shard when one fills, as in
nanoGPT's ``fineweb.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import io
import json
import os
import secrets
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from tensortext import formats
from tensortext.cli.common import CliError

__all__ = [
    "BIN_MAGIC",
    "MAX_BATCH_BYTES",
    "MAX_SHARD_TOKENS",
    "Document",
    "Progress",
    "ShardWriter",
    "add_arguments",
    "batches",
    "check_inputs",
    "expand_inputs",
    "read_documents",
    "stderr_is_terminal",
    "vocab_sha256",
    "write_shard",
]

MAX_BATCH_BYTES = 1 << 30
"""The largest ``--batch-bytes`` (a batch is held in memory with its tokens)."""
MAX_SHARD_TOKENS = (1 << 31) - 1
"""The largest ``--shard-tokens``: llm.c's header holds the count as an int32."""
BIN_MAGIC = 20240520
"""llm.c's data file magic: a 256 x int32 header (magic, version, token count), then tokens."""
BIN_VERSIONS = {"uint16": 1, "uint32": 2}


@dataclass(frozen=True)
class Document:
    text: str
    source_bytes: int  # bytes of input it came from (for the progress bar)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The data-preparation flags of ``tensortext tokenize``."""
    parser.add_argument(
        "--format",
        choices=["ids", "npy", "bin"],
        default="ids",
        help="ids: a line of IDs per document (default); npy: nanoGPT's shards (np.save); bin: "
        "llm.c's shards (256 x int32 header: 20240520, version, token count)",
    )
    parser.add_argument(
        "--dtype",
        choices=["uint16", "uint32"],
        help="token type of the shards (default: uint16 when every ID fits, else uint32)",
    )
    parser.add_argument(
        "--shard-tokens",
        type=int,
        default=100_000_000,
        help=f"tokens per shard, 1 to {MAX_SHARD_TOKENS} (default: 100000000, as nanoGPT)",
    )
    parser.add_argument(
        "--append-eot", action="store_true", help="the end-of-text token after every document"
    )
    parser.add_argument(
        "--whole-file", action="store_true", help="each input file is one document, not a line each"
    )
    parser.add_argument(
        "--field",
        default="text",
        help="the .jsonl records' field or the .parquet column to encode (default: text)",
    )
    parser.add_argument(
        "--batch-bytes",
        type=int,
        default=1 << 21,
        help=f"characters encoded per batch, 1 to {MAX_BATCH_BYTES} (default: 2 MiB; a batch is "
        "shared among --workers)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=8,
        help="on a CPU, the most threads that share a batch of 64K characters or more (worker "
        "processes, from 1 MB, where the C encoder is not built; encode_batch's num_threads; at "
        "most one per usable core; default: 8)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")


def expand_inputs(inputs: list[str]) -> list[str]:
    """The inputs, each glob (``*``, ``?``, ``[``) replaced by its matches in sorted order
    unless a file has that very name.

    Raises:
        CliError: a glob that matches no file.
    """
    paths: list[str] = []
    for path in inputs:
        if path == "-" or os.path.exists(path) or not any(c in path for c in "*?["):
            paths.append(path)
            continue
        matches = sorted(glob.glob(path))
        if not matches:
            raise CliError(f"-i {path}: no file matches")
        paths += matches
    return paths


def check_inputs(inputs: list[str]) -> None:
    """Refuses, before any work, an input file that is missing, a directory or unreadable."""
    for path in inputs:
        if path == "-":
            continue
        if not os.path.exists(path):
            raise CliError(f"cannot read {path}: no such file")
        if os.path.isdir(path):
            raise CliError(f"cannot read {path}: it is a directory")
        if not os.access(path, os.R_OK):
            raise CliError(f"cannot read {path}: permission denied")


def read_documents(
    inputs: list[str], *, whole_file: bool, field: str, stdin: Any
) -> Iterator[Document]:
    """The documents of each input in turn (``-``: standard input).

    A ``.jsonl`` input gives one document per non-blank line, the string at key ``field``; a
    ``.parquet`` input one per row of column ``field`` (pyarrow, the ``[parquet]`` extra); any
    other input gives one per line (ending at ``\\n`` only, as every reader of the package), or
    the whole file with ``whole_file``. Invalid UTF-8, a line that is no JSON object, or a
    missing or non-string field raises :class:`CliError` naming the file and line (or row).
    """
    for path in inputs:
        name = "<stdin>" if path == "-" else path
        if path.endswith(".parquet"):
            yield from _parquet_rows(path, field)
            continue
        with _open_binary(path, stdin) as stream:
            if path.endswith(".jsonl"):
                yield from _json_lines(stream, name, field)
            elif whole_file:
                data = stream.read()
                yield Document(_decode(data, name, 1), len(data))
            else:
                for number, raw in enumerate(stream, 1):
                    line = raw[:-1] if raw.endswith(b"\n") else raw
                    yield Document(_decode(line, name, number), len(raw))


def _json_lines(stream: BinaryIO, name: str, key: str) -> Iterator[Document]:
    for number, raw in enumerate(stream, 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(_decode(raw, name, number))
        except json.JSONDecodeError as error:
            raise CliError(f"{name}, line {number}: not JSON ({error.msg})") from None
        if not isinstance(record, dict):
            raise CliError(f"{name}, line {number}: a JSON {type(record).__name__}, not an object")
        if key not in record:
            keys = ", ".join(sorted(map(str, record))[:8])
            raise CliError(
                f"{name}, line {number}: no field {key!r} (it has: {keys}); pass --field"
            )
        if not isinstance(record[key], str):
            kind = type(record[key]).__name__
            raise CliError(f"{name}, line {number}: field {key!r} is a {kind}, not a string")
        yield Document(record[key], len(raw))


def _parquet_rows(path: str, key: str) -> Iterator[Document]:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise CliError(
            f"{path}: reading Parquet needs pyarrow: pip install 'tensortext[parquet]'"
        ) from None
    try:
        table = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as error:
        raise CliError(f"{path}: not a Parquet file ({error})") from None
    schema = table.schema_arrow
    if key not in schema.names:
        columns = ", ".join(schema.names[:8])
        raise CliError(f"{path}: no column {key!r} (it has: {columns}); pass --field")
    kind = schema.field(key).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise CliError(f"{path}: column {key!r} holds {kind}, not strings")
    row = 0
    for batch in table.iter_batches(columns=[key], batch_size=4096):
        for text in batch.column(0).to_pylist():
            row += 1
            if text is None:
                raise CliError(f"{path}, row {row}: {key!r} is null")
            yield Document(text, len(text))


def _open_binary(path: str, stdin: Any) -> Any:
    if path == "-":
        stream = stdin if stdin is not None else sys.stdin
        return _NoClose(stream.buffer if hasattr(stream, "buffer") else stream)
    try:
        return open(path, "rb")  # closed by the caller's with
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from None


class _NoClose:
    """Standard input in a ``with`` block that must not close it; text streams give bytes."""

    def __init__(self, stream: Any):
        self.stream = stream

    def __enter__(self) -> Any:
        if isinstance(self.stream.read(0), str):  # a StringIO standing for stdin (tests)
            return io.BytesIO(self.stream.read().encode("utf-8"))
        return self.stream

    def __exit__(self, *exc: object) -> None:
        return None


def _decode(data: bytes, name: str, line: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        where = data[: error.start].count(b"\n") + line
        raise CliError(f"{name}, line {where}: invalid UTF-8; is it a text file?") from None


def batches(
    documents: Iterable[Document], batch_bytes: int, batch_docs: int
) -> Iterator[list[Document]]:
    """Runs of consecutive documents of about ``batch_bytes`` characters, at most
    ``batch_docs`` documents each (a longer document is a batch of its own)."""
    batch: list[Document] = []
    size = 0
    for document in documents:
        batch.append(document)
        size += len(document.text)
        if size >= batch_bytes or len(batch) >= batch_docs:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def vocab_sha256(encoding: Any) -> str:
    """sha256 of the encoding's ranks as a tiktoken file (tiktoken's published hash for the
    OpenAI encodings)."""
    from tensortext.bpe.openai_files import tiktoken_file_bytes
    from tensortext.bpe.vocab import sha256_of

    return sha256_of(tiktoken_file_bytes(encoding._mergeable_ranks))


@dataclass
class ShardWriter:
    """Token shards ``PREFIX_000000.npy`` (or ``.bin``), each ``shard_tokens`` long but the
    last, and the index ``PREFIX_index.json``. Shards are written under temporary names as they
    fill and renamed at :meth:`close`, so a failed or interrupted run (:meth:`abort`) leaves
    the files of an earlier run with the same prefix as they were."""

    prefix: str
    file_format: str  # "npy" or "bin"
    dtype: str  # "uint16" or "uint32"
    shard_tokens: int
    index_fields: dict[str, Any]
    shards: list[dict[str, Any]] = field(default_factory=list)
    _buffer: Any = None
    _filled: int = 0
    _documents: int = 0
    _staged: list[Path] = field(default_factory=list)  # shards written under temporary names

    def abort(self) -> None:
        """Removes the shards written so far (the run failed: files of an earlier run with
        this prefix stay as they were)."""
        for staged in self._staged:
            with contextlib.suppress(OSError):
                os.unlink(staged)
        self._staged = []

    def add(self, ids: np.ndarray, lengths: np.ndarray) -> None:
        """Appends each document's tokens (``ids [T]``, ``lengths [B]``, one document after
        another), writing every shard that fills. A document counts in the shard that holds
        its last token (an empty one, in the shard being filled)."""
        total = int(lengths.sum())
        self._grow(min(self.shard_tokens, self._filled + total))
        flat = ids.astype(self.dtype, copy=False)  # the IDs fit: checked against the vocabulary
        ends = np.cumsum(lengths)[lengths > 0]
        start = 0
        while start < total:
            take = min(self.shard_tokens - self._filled, total - start)
            self._buffer[self._filled : self._filled + take] = flat[start : start + take]
            self._filled += take
            self._documents += int(np.count_nonzero((ends > start) & (ends <= start + take)))
            start += take
            if self._filled == self.shard_tokens:
                self._write()
        self._documents += int(np.count_nonzero(lengths == 0))

    def _grow(self, needed: int) -> None:
        """A buffer of at least ``needed`` tokens (doubling, at most ``shard_tokens``)."""
        size = 0 if self._buffer is None else self._buffer.size
        if size >= needed:
            return
        grown = np.empty(min(self.shard_tokens, max(needed, 2 * size, 1 << 20)), self.dtype)
        if self._buffer is not None:
            grown[: self._filled] = self._buffer[: self._filled]
        self._buffer = grown

    def close(self) -> dict[str, Any]:
        """Writes the last, partial shard, gives every shard its name, then writes the index;
        returns the index."""
        if self._filled or not self.shards:
            self._write()
        for staged, shard in zip(self._staged, self.shards, strict=True):
            os.replace(staged, Path(self.prefix).with_name(shard["file"]))
        self._staged = []
        index = {
            **self.index_fields,
            "format": self.file_format,
            "dtype": self.dtype,
            "shard_tokens": self.shard_tokens,
            "tokens": sum(shard["tokens"] for shard in self.shards),
            "documents": sum(shard["documents"] for shard in self.shards),
            "shards": self.shards,
        }
        with formats.atomic_write(f"{self.prefix}_index.json") as stream:
            json.dump(index, stream, indent=1)
            stream.write("\n")
        return index

    def _write(self) -> None:
        path = f"{self.prefix}_{len(self.shards):06d}.{self.file_format}"
        buffer = self._buffer if self._buffer is not None else np.empty(0, dtype=self.dtype)
        tokens = buffer[: self._filled]
        staged = Path(path).with_name(f".{Path(path).name}.{secrets.token_hex(4)}.part")
        self._staged.append(staged)
        with formats.atomic_write(staged, "wb") as stream:
            write_shard(stream, tokens, self.file_format)
        self.shards.append(
            {"file": Path(path).name, "tokens": int(tokens.size), "documents": self._documents}
        )
        self._filled = self._documents = 0


def write_shard(stream: BinaryIO, tokens: Any, file_format: str) -> None:
    """``tokens`` (uint16 or uint32) as nanoGPT's ``np.save`` or llm.c's ``write_datafile``."""
    if file_format == "npy":
        np.save(stream, tokens)
        return
    header = np.zeros(256, dtype=np.int32)
    header[:3] = (BIN_MAGIC, BIN_VERSIONS[str(tokens.dtype)], tokens.size)
    stream.write(header.tobytes())
    stream.write(np.ascontiguousarray(tokens).data.cast("B"))


def stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed
        return False


class Progress:
    """A progress bar over the input bytes (tqdm, on standard error when it is a terminal) and
    a summary line at the end (documents, tokens, MB/s, tokens/s); ``quiet`` turns both off."""

    def __init__(self, inputs: list[str], *, quiet: bool, summary: bool):
        self.summary = summary and not quiet
        self.started = time.perf_counter()
        self.documents = self.tokens = self.bytes = 0
        self.bar: Any = None
        if not quiet and stderr_is_terminal():
            from tqdm import tqdm  # type: ignore[import-untyped]

            # Parquet is compressed: its rows are counted in characters, so no total is known.
            files = [path for path in inputs if path != "-" and not path.endswith(".parquet")]
            total = sum(map(os.path.getsize, files)) if len(files) == len(inputs) else None
            self.bar = tqdm(
                total=total, unit="B", unit_scale=True, desc="tokenize", file=sys.stderr
            )

    def update(self, batch: list[Document], tokens: int) -> None:
        read = sum(document.source_bytes for document in batch)
        self.bytes += read
        self.documents += len(batch)
        self.tokens += tokens
        if self.bar is not None:
            self.bar.update(read)

    def close(self, wrote: str = "") -> None:
        if self.bar is not None:
            self.bar.close()
        if self.summary:
            seconds = max(time.perf_counter() - self.started, 1e-9)
            megabytes = self.bytes / 1e6
            print(
                f"tokenize: {self.documents:,} documents, {self.tokens:,} tokens from "
                f"{megabytes:.1f} MB in {seconds:.1f} s ({megabytes / seconds:.2f} MB/s, "
                f"{self.tokens / seconds:,.0f} tokens/s)" + (f"; wrote {wrote}" if wrote else ""),
                file=sys.stderr,
            )
