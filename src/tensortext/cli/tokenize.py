"""``tensortext tokenize``: BPE-encode documents to lines of token IDs or to token shards
(nanoGPT's ``.npy``, llm.c's ``.bin``), or decode lines of IDs back.

Encoding streams: documents (text lines, whole files, or a field of JSON lines) are read one at
a time and encoded in batches of about ``--batch-bytes`` (on a CPU, a large batch is shared
among worker processes), so memory does not grow with the input."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from itertools import chain
from typing import Any, TextIO

import numpy as np

from tensortext.cli import corpus, long_documents, shards
from tensortext.cli.common import (
    CliError,
    add_device_argument,
    check_int_flag,
    check_output,
    device_from,
    load_encoding,
    open_output,
    parse_id_lines,
    read_lines,
)
from tensortext.padded import split_rows

__all__ = [
    "MAX_BATCH_LINES",
    "add_arguments",
    "run",
]

Batch = tuple[np.ndarray, np.ndarray]
"""A batch's tokens ``(ids [T], lengths [B])``, int64 on the host."""
Encoded = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A batch's tokens ``(ids [T], lengths [B], ends [B])``: ``ends`` is False for a part of a long
document that goes on in the next row."""

MAX_BATCH_LINES = 1 << 20
"""The largest ``--batch-lines``: a batch is padded to its longest line, so its size is bounded."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-e",
        "--encoding",
        required=True,
        metavar="ENCODING",
        help="an encoding name (gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base, "
        "o200k_harmony), a tokenizer.json path or a directory holding one",
    )
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        help="input file, '-' for standard input (the default), or a glob; repeat for several. "
        "A .jsonl file gives one document per line (see --field)",
    )
    parser.add_argument(
        "-o",
        "--output",
        help="output file (default: standard output); with --format npy or bin, the prefix of "
        "the shards PREFIX_000000.npy ... and of the index PREFIX_index.json",
    )
    corpus.add_arguments(parser)
    parser.add_argument("--decode", action="store_true", help="lines of IDs in, text out")
    parser.add_argument(
        "--allowed-special",
        nargs="+",
        default=[],
        metavar="TOKEN",
        help="special tokens to encode as such ('all' for every one)",
    )
    parser.add_argument(
        "--ordinary",
        action="store_true",
        help="encode special-token text as ordinary text instead of failing",
    )
    parser.add_argument(
        "--pretokenize",
        choices=["regex", "bytes"],
        default="regex",
        help="'bytes' is BlockBPE's byte-level split (IDs differ from tiktoken)",
    )
    parser.add_argument(
        "--batch-lines",
        type=int,
        help=f"documents encoded (or lines decoded) per batch, 1 to {MAX_BATCH_LINES} (default: "
        "4096 for ids, else as many as --batch-bytes holds)",
    )
    add_device_argument(parser)


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    check_int_flag("--batch-lines", args.batch_lines, 1, MAX_BATCH_LINES)
    check_int_flag("--batch-bytes", args.batch_bytes, 1, corpus.MAX_BATCH_BYTES)
    check_int_flag("--shard-tokens", args.shard_tokens, 1, corpus.MAX_SHARD_TOKENS)
    check_int_flag("--workers", args.workers, 1, 1024)
    check_int_flag("--max-document-bytes", args.max_document_bytes, 1, corpus.MAX_DOCUMENT_BYTES)
    inputs = corpus.expand_inputs(args.input or ["-"])
    to_shards = args.format != "ids"
    if args.decode and (to_shards or len(inputs) > 1 or args.whole_file or args.append_eot):
        raise CliError("--decode reads one file of ID lines: no --format, --whole-file, "
                       "--append-eot or several inputs")  # fmt: skip
    if to_shards and args.output in (None, "-"):
        raise CliError(f"--format {args.format} writes shard files: pass -o PREFIX")
    if to_shards:
        shards.check_prefix(args.output)
    corpus.check_inputs(inputs)
    named_inputs = [("-i", path) for path in inputs] + [("-e", args.encoding)]
    check_output(f"{args.output}_index.json" if to_shards else args.output, named_inputs)
    if to_shards:
        shards.check_folder(args.output)  # a stray file named like a shard: before any work
    device = device_from(args)
    if to_shards:
        encoding = load_encoding(args.encoding)
        dtype = _shard_dtype(encoding, args.dtype)
        _write_shards(encoding, inputs, args, device, stdin, dtype)
        return
    with open_output(args.output, stdout) as out:  # before the work: a bad -o costs nothing
        encoding = load_encoding(args.encoding)
        if args.decode:
            _decode_file(encoding, inputs[0], args.batch_lines or 4096, stdin, out)
            return
        progress = corpus.Progress(inputs, quiet=args.quiet, summary=corpus.stderr_is_terminal())
        for ids, lengths, ends in _encoded_batches(encoding, inputs, args, device, stdin, progress):
            rows = split_rows(ids.tolist(), lengths.tolist())
            # A part of a long document is never empty: its row goes on after a space.
            texts = [" ".join(map(str, row)) + ("\n" if end else " ") for row, end in
                     zip(rows, ends.tolist(), strict=True)]  # fmt: skip
            out.write("".join(texts))
        progress.close()


def _decode_file(encoding: Any, path: str, batch_lines: int, stdin: Any, out: TextIO) -> None:
    name = "<stdin>" if path == "-" else path
    lines = read_lines(path, stdin)
    for first in range(0, len(lines), batch_lines):
        chunk = lines[first : first + batch_lines]
        _decode_lines(encoding, parse_id_lines(chunk, name, first + 1), first, out)


def _shard_dtype(encoding: Any, dtype: str | None) -> str:
    fits = encoding.max_token_value < 1 << 16
    if dtype == "uint16" and not fits:
        raise CliError(
            f"--dtype uint16 cannot hold {encoding.name}'s IDs (up to {encoding.max_token_value}); "
            "use --dtype uint32"
        )
    return dtype or ("uint16" if fits else "uint32")


def _write_shards(
    encoding: Any, inputs: list[str], args: argparse.Namespace, device: Any, stdin: Any, dtype: str
) -> None:
    progress = corpus.Progress(inputs, quiet=args.quiet, summary=True)  # before the staging
    writer = shards.ShardWriter(
        args.output,
        args.format,
        dtype,
        args.shard_tokens,
        {"encoding": encoding.name, "vocab_sha256": corpus.vocab_sha256(encoding),
         "append_eot": args.append_eot, "inputs": inputs},
    )  # fmt: skip
    try:
        for ids, lengths, ends in _encoded_batches(encoding, inputs, args, device, stdin, progress):
            writer.add(ids, lengths, ends)
        index = writer.close()
    except BaseException:  # an error or Ctrl-C: no half-made set of shards
        writer.abort()
        raise
    progress.close(f"{len(index['shards'])} shards, {args.output}_index.json")


def _encoded_batches(
    encoding: Any,
    inputs: list[str],
    args: argparse.Namespace,
    device: Any,
    stdin: Any,
    progress: corpus.Progress,
) -> Iterator[Encoded]:
    """The tokens of each batch of documents, flat ``(ids [T], lengths [B], ends [B])``, with
    the end-of-text token if asked. A long document comes in parts (see
    :mod:`~tensortext.cli.long_documents`) where the encoding's split is proven to allow it.

    With several threads or worker processes, batch ``k`` is encoded from a helper thread
    (which mostly waits on them, without the GIL) while this thread reads batch ``k + 1`` and
    the caller writes batch ``k - 1``: without that overlap, two workers kept 1.4 cores busy,
    not 2.
    """
    eot = _eot_token(encoding) if args.append_eot else None
    documents = corpus.read_documents(
        inputs,
        whole_file=args.whole_file,
        field=args.field,
        stdin=stdin,
        max_document_bytes=args.max_document_bytes,
        cut_long=args.pretokenize == "regex" and long_documents.splits_exactly(encoding),
        batch_bytes=args.batch_bytes,
    )
    default_lines = 4096 if args.format == "ids" else MAX_BATCH_LINES
    batches = corpus.batches(documents, args.batch_bytes, args.batch_lines or default_lines)

    def encode(batch: list[corpus.Document]) -> Encoded:
        ids, lengths = _encode_flat(encoding, [document.text for document in batch], args, device)
        ends = np.fromiter((document.ends for document in batch), dtype=bool, count=len(batch))
        if eot is None:
            return ids, lengths, ends
        return np.insert(ids, np.cumsum(lengths)[ends], eot), lengths + ends, ends

    overlap = args.workers > 1 and device.type == "cpu"
    with ThreadPoolExecutor(max_workers=1) as runner:
        pending: tuple[list[corpus.Document], Future[Encoded]] | None = None
        for batch in batches:
            if not overlap:
                encoded = encode(batch)
                progress.update(batch, encoded[0].size)
                yield encoded
                continue
            submitted = (batch, runner.submit(encode, batch))
            if pending is not None:
                yield _finished(pending, progress)
            pending = submitted
        if pending is not None:
            yield _finished(pending, progress)


def _finished(
    pending: tuple[list[corpus.Document], Future[Encoded]], progress: corpus.Progress
) -> Encoded:
    batch, future = pending
    encoded = future.result()
    progress.update(batch, encoded[0].size)
    return encoded


def _eot_token(encoding: Any) -> int:
    try:
        return int(encoding.eot_token)
    except KeyError:
        raise CliError(f"--append-eot: {encoding.name} has no <|endoftext|> token") from None


def _encode_flat(encoding: Any, lines: list[str], args: argparse.Namespace, device: Any) -> Batch:
    """``(ids [T], lengths [B])`` of the lines, int64 on the host."""
    allowed: Any = "all" if args.allowed_special == ["all"] else set(args.allowed_special)
    unknown = set() if allowed == "all" else allowed - encoding.special_tokens_set
    if unknown:
        raise CliError(
            f"--allowed-special {sorted(unknown)[0]!r} is no special token of {encoding.name}; "
            f"it has {sorted(encoding.special_tokens_set)[:8]}"
        )
    specials: dict[str, Any] = {
        "allowed_special": allowed,
        "disallowed_special": () if args.ordinary else "all",
    }
    python_host = encoding._host.native is None  # the Python encoder's worker processes
    try:
        if device.type == "cpu" and args.pretokenize == "regex" and python_host:
            rows = encoding.encode_batch(lines, num_threads=args.workers, **specials)
            lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
            ids = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=lengths.sum())
            return ids, lengths
        flat = encoding.encode_batch_to_flat(
            lines, device=device, pretokenize=args.pretokenize, num_threads=args.workers,
            **specials,
        )  # fmt: skip
    except ValueError as error:
        message = str(error)
        if "disallowed" in message:  # the API's hint names keywords, not flags
            message = message.split(". ")[0] + "; pass --allowed-special or --ordinary"
        raise CliError(message) from None
    return flat.ids.cpu().numpy(), flat.lengths.cpu().numpy()


def _decode_lines(encoding: Any, rows: list[list[int]], first: int, out: TextIO) -> None:
    for number, row in enumerate(rows, first + 1):
        try:
            out.write(encoding.decode(row) + "\n")
        except ValueError as error:
            raise CliError(f"line {number}: {error}") from None
