"""``tensortext tokenize`` for data preparation: documents streamed from text, JSON-lines or
Parquet files (the shards' layouts: :mod:`tensortext.cli.shard_formats`).

Memory stays bounded whatever the input size: documents are read one at a time and encoded in
batches of about ``--batch-bytes``; :mod:`tensortext.cli.shards` fills the shards (a document's
tokens run over into the next shard when one fills, as in nanoGPT's ``fineweb.py``) and puts a
run's set in place of the last one as one step.
"""

from __future__ import annotations

import argparse
import functools
import glob
import io
import json
import os
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np

from tensortext.cli import long_documents
from tensortext.cli.common import CliError

__all__ = [
    "DEFAULT_DOCUMENT_BYTES",
    "MAX_BATCH_BYTES",
    "MAX_DOCUMENT_BYTES",
    "Document",
    "Progress",
    "add_arguments",
    "batches",
    "check_inputs",
    "expand_inputs",
    "read_documents",
    "stderr_is_terminal",
    "vocab_sha256",
]

MAX_BATCH_BYTES = 1 << 30
"""The largest ``--batch-bytes`` (a batch is held in memory with its tokens)."""
DEFAULT_DOCUMENT_BYTES = 1 << 24
"""The default ``--max-document-bytes``: a document is held whole while it is encoded."""
MAX_DOCUMENT_BYTES = 1 << 30
"""The largest ``--max-document-bytes``."""


@dataclass(frozen=True)
class Document:
    text: str
    source_bytes: int  # bytes of input it came from (for the progress bar)
    ends: bool = True  # False: a part of a long document, which goes on in the next one


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The data-preparation flags of ``tensortext tokenize``."""
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
        help=f"characters encoded per batch, 1 to {MAX_BATCH_BYTES} (default: 2097152; a batch is "
        "shared among --workers)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=8,
        help="encoder threads on a CPU, 1 to 1024, at most one per usable core (default: 8; "
        "encode_batch's num_threads): a batch of 65536 characters or more is split among them. "
        "Where the C encoder is not built, worker processes instead, from 1048576 characters. "
        "Above 1, the next batch is read while one is encoded. With --pretokenize bytes or on a "
        "GPU the tensor engine encodes (on torch's threads)",
    )
    parser.add_argument(
        "--max-document-bytes",
        type=int,
        default=DEFAULT_DOCUMENT_BYTES,
        help=f"the longest JSON line or Parquet value, 1 to {MAX_DOCUMENT_BYTES}; longer ones are "
        "refused (default: 16 MiB; each is held whole, about 15 bytes of memory per byte). Text "
        "lines and --whole-file files are encoded in parts where the encoding's split allows it "
        "(gpt2 ... o200k); this many bytes with no place to cut are refused",
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
    inputs: list[str],
    *,
    whole_file: bool,
    field: str,
    stdin: Any,
    max_document_bytes: int = DEFAULT_DOCUMENT_BYTES,
    cut_long: bool = False,
    batch_bytes: int = MAX_BATCH_BYTES,
) -> Iterator[Document]:
    """The documents of each input in turn (``-``: standard input).

    A ``.jsonl`` input gives one document per non-blank line, the string at key ``field``; a
    ``.parquet`` input one per row of column ``field`` (pyarrow, the ``[parquet]`` extra); any
    other input gives one per line (ending at ``\\n`` only, as every reader of the package), or
    the whole file with ``whole_file``. No more than ``max_document_bytes + 1`` bytes of a line
    or file are read before a longer one is refused, so memory stays bounded whatever the input;
    with ``cut_long`` (for an encoding where :mod:`~tensortext.cli.long_documents` proves it
    exact) a long text line or file comes in parts instead, and only ``max_document_bytes``
    with no place to cut them are refused. Parquet values become strings about
    ``batch_bytes`` at a time, each checked against ``max_document_bytes`` first.

    Raises:
        CliError: naming the file and line (or row): invalid UTF-8, a line that is no JSON
            object (or nests too deeply), a missing or non-string field, a document above
            ``max_document_bytes``, or Parquet data that cannot be read.
    """
    for path in inputs:
        name = "<stdin>" if path == "-" else path
        if path.endswith(".parquet"):
            yield from _parquet_rows(path, field, max_document_bytes, batch_bytes)
            continue
        with _open_binary(path, stdin) as stream:
            if path.endswith(".jsonl"):
                yield from _json_lines(stream, name, field, max_document_bytes)
            elif whole_file and cut_long:
                read = functools.partial(_read, stream.read, long_documents.BLOCK_BYTES, name)
                blocks = iter(read, b"")
                message = _too_long(name, max_document_bytes, "(--whole-file) ")
                yield from _parts(blocks, max_document_bytes, message, name, 1)
            elif cut_long:
                yield from _long_lines(stream, name, max_document_bytes)
            elif whole_file:
                data = _read(stream.read, max_document_bytes + 1, name)
                if len(data) > max_document_bytes:
                    raise CliError(_too_long(name, max_document_bytes, "(--whole-file) "))
                yield Document(_decode(data, name, 1), len(data))
            else:
                for number, raw in _lines(stream, name, max_document_bytes):
                    line = raw[:-1] if raw.endswith(b"\n") else raw
                    yield Document(_decode(line, name, number), len(raw))


def _too_long(where: str, limit: int, what: str = "") -> str:
    return (
        f"{where}: a document {what}of more than {limit} bytes; split it, or raise "
        f"--max-document-bytes (up to {MAX_DOCUMENT_BYTES}; memory grows about 15 bytes per byte)"
    )


def _read(read: Any, size: int, name: str) -> bytes:
    try:
        data: bytes = read(size)
    except OSError as error:
        raise CliError(f"cannot read {name}: {error.strerror or error}") from None
    return data


def _lines(stream: BinaryIO, name: str, limit: int) -> Iterator[tuple[int, bytes]]:
    """``(line number, line with its \\n)``; a line above ``limit`` bytes is refused once
    ``limit + 1`` of its bytes are read (a CR-only file is one line)."""
    number = 0
    while raw := _read(stream.readline, limit + 1, name):
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise CliError(_too_long(f"{name}, line {number}", limit))
        yield number, raw


def _long_lines(stream: BinaryIO, name: str, limit: int) -> Iterator[Document]:
    """The lines of ``stream``, a line of more than a block in parts."""
    block_bytes = long_documents.BLOCK_BYTES
    number = 0
    while first := _read(stream.readline, block_bytes, name):
        number += 1
        ends = first.endswith(b"\n")
        if (ends or len(first) < block_bytes) and len(first) <= limit + ends:  # limit + its \n
            line = first[:-1] if ends else first
            yield Document(_decode(line, name, number), len(first))
            continue
        blocks = _rest_of_line(stream, first, name)
        yield from _parts(blocks, limit, _too_long(f"{name}, line {number}", limit), name, number)


def _rest_of_line(stream: BinaryIO, first: bytes, name: str) -> Iterator[bytes]:
    """The blocks of a long line, the first one given, without its ``\n``."""
    block = first
    while not block.endswith(b"\n"):
        yield block
        block = _read(stream.readline, long_documents.BLOCK_BYTES, name)
        if not block:
            return
    yield block[:-1]


def _parts(
    blocks: Iterator[bytes], limit: int, too_long: str, name: str, line: int
) -> Iterator[Document]:
    def where(newlines: int) -> str:
        return f"{name}, line {line + newlines}"

    for text, size, last in long_documents.parts(blocks, limit, too_long, where):
        yield Document(text, size, ends=last)


def _json_lines(stream: BinaryIO, name: str, key: str, limit: int) -> Iterator[Document]:
    for number, raw in _lines(stream, name, limit):
        if not raw.strip():
            continue
        try:
            record = json.loads(_decode(raw, name, number))
        except json.JSONDecodeError as error:
            raise CliError(f"{name}, line {number}: not JSON ({error.msg})") from None
        except RecursionError:
            raise CliError(f"{name}, line {number}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise CliError(f"{name}, line {number}: a JSON {type(record).__name__}, not an object")
        if key not in record:
            keys = ", ".join(sorted(map(str, record))[:8])[:200]
            raise CliError(
                f"{name}, line {number}: no field {key!r} (it has: {keys}); pass --field"
            )
        if not isinstance(record[key], str):
            kind = type(record[key]).__name__
            raise CliError(f"{name}, line {number}: field {key!r} is a {kind}, not a string")
        yield Document(record[key], len(raw))


def _parquet_rows(path: str, key: str, limit: int, batch_bytes: int) -> Iterator[Document]:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.compute as pc  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise CliError(
            f"{path}: reading Parquet needs pyarrow: pip install 'tensortext[parquet]'"
        ) from None
    try:
        table = pq.ParquetFile(path)
    except (OSError, pa.ArrowException) as error:
        raise CliError(f"{path}: not a Parquet file ({_one_line(error)})") from None
    schema = table.schema_arrow
    if key not in schema.names:
        columns = ", ".join(schema.names[:8])[:200]
        raise CliError(f"{path}: no column {key!r} (it has: {columns}); pass --field")
    kind = schema.field(key).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        raise CliError(f"{path}: column {key!r} holds {kind}, not strings")
    row = 0
    batches = table.iter_batches(columns=[key], batch_size=_parquet_batch_rows(table, batch_bytes))
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                return
            column = batch.column(0)
            sizes = pc.binary_length(column).fill_null(0).to_numpy(zero_copy_only=False)
        except (OSError, pa.ArrowException) as error:  # a corrupt page, a failed read
            raise CliError(f"{path}: cannot read its Parquet data ({_one_line(error)})") from None
        for start, stop in _runs(sizes, batch_bytes):
            too_long = np.flatnonzero(sizes[start:stop] > limit)  # checked before conversion
            end = start + int(too_long[0]) if too_long.size else stop
            texts = _strings(column.slice(start, end - start), path, key, row)
            for offset, text in enumerate(texts, start):
                row += 1
                if text is None:
                    raise CliError(f"{path}, row {row}: {key!r} is null")
                yield Document(text, int(sizes[offset]))
            if too_long.size:
                raise CliError(_too_long(f"{path}, row {row + 1}", limit))


def _parquet_batch_rows(table: Any, batch_bytes: int) -> int:
    """Rows read at a time: about ``batch_bytes`` of the file's uncompressed data (1 to 4096)."""
    metadata = table.metadata
    total = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    return int(min(4096, max(1, batch_bytes * metadata.num_rows // max(total, 1))))


def _runs(sizes: np.ndarray, batch_bytes: int) -> Iterator[tuple[int, int]]:
    """``(start, stop)`` of consecutive rows of at most ``batch_bytes`` in all (a longer row
    alone)."""
    ends = np.cumsum(sizes)  # [rows]
    start = 0
    while start < sizes.size:
        before = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, before + batch_bytes, side="right")))
        yield start, stop
        start = stop


def _one_line(error: BaseException) -> str:
    """A library's message on one line, at most 200 characters."""
    return " ".join(str(error).split())[:200]


def _strings(column: Any, path: str, key: str, first_row: int) -> list[str | None]:
    """The column's values; invalid UTF-8 is refused naming its row."""
    try:
        values: list[str | None] = column.to_pylist()
    except UnicodeDecodeError:
        for offset in range(len(column)):
            try:
                column[offset].as_py()
            except UnicodeDecodeError:
                row = first_row + offset + 1
                raise CliError(f"{path}, row {row}: column {key!r} holds invalid UTF-8") from None
        raise
    return values


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
        self.documents += sum(document.ends for document in batch)
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
