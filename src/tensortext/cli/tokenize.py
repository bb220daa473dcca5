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

from tensortext.cli import corpus
from tensortext.cli.common import (
    CliError,
    add_device_argument,
    check_int_flag,
    check_output,
    device_from,
    open_output,
    read_lines,
    user_errors,
)
from tensortext.padded import split_rows

__all__ = [
    "MAX_BATCH_LINES",
    "MAX_TOKEN_ID",
    "add_arguments",
    "load_encoding",
    "parse_id_lines",
    "run",
]

Batch = tuple[np.ndarray, np.ndarray]
"""A batch's tokens ``(ids [T], lengths [B])``, int64 on the host."""

MAX_TOKEN_ID = (1 << 63) - 1
"""The largest token ID a line of IDs may hold (token IDs are int64)."""

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


def load_encoding(spec: str) -> Any:
    """An encoding by name or ``tokenizer.json`` path; a bad one is the user's error."""
    from tensortext.bpe import load_encoding as load

    with user_errors(OSError, ValueError, ImportError):
        return load(spec)


def parse_id_lines(
    lines: list[str], name: str, first_line: int = 1, hint: str = ""
) -> list[list[int]]:
    """Whitespace-separated token IDs per line: ASCII digits only, each below 2**63.

    Errors name ``name``, the line and the token; ``hint`` ends the message of a non-ID token.
    """
    rows = []
    for number, line in enumerate(lines, first_line):
        tokens = line.split()
        if not all(token.isascii() and token.isdigit() for token in tokens):
            raise CliError(f"{name}, line {number}: {_bad_id(tokens)}{hint}")
        ids = [int(token) for token in tokens]
        if any(i > MAX_TOKEN_ID for i in ids):
            big = next(i for i in ids if i > MAX_TOKEN_ID)
            raise CliError(f"{name}, line {number}: token ID {big} does not fit in int64")
        rows.append(ids)
    return rows


def _bad_id(tokens: list[str]) -> str:
    """What is wrong with the first token that is not ASCII digits."""
    bad = next(token for token in tokens if not (token.isascii() and token.isdigit()))
    digits = bad[1:]
    if bad.startswith("-") and digits.isascii() and digits.isdigit():
        return f"{bad!r}: token IDs must be non-negative"
    return f"{bad!r} is not a token ID (ASCII digits 0-9)"


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    check_int_flag("--batch-lines", args.batch_lines, 1, MAX_BATCH_LINES)
    check_int_flag("--batch-bytes", args.batch_bytes, 1, corpus.MAX_BATCH_BYTES)
    check_int_flag("--shard-tokens", args.shard_tokens, 1, corpus.MAX_SHARD_TOKENS)
    check_int_flag("--workers", args.workers, 1, 1024)
    inputs = corpus.expand_inputs(args.input or ["-"])
    shards = args.format != "ids"
    if args.decode and (shards or len(inputs) > 1 or args.whole_file or args.append_eot):
        raise CliError("--decode reads one file of ID lines: no --format, --whole-file, "
                       "--append-eot or several inputs")  # fmt: skip
    if shards and args.output in (None, "-"):
        raise CliError(f"--format {args.format} writes shard files: pass -o PREFIX")
    corpus.check_inputs(inputs)
    named_inputs = [("-i", path) for path in inputs] + [("-e", args.encoding)]
    check_output(f"{args.output}_index.json" if shards else args.output, named_inputs)
    device = device_from(args)
    if shards:
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
        for ids, lengths in _encoded_batches(encoding, inputs, args, device, stdin, progress):
            rows = split_rows(ids.tolist(), lengths.tolist())
            out.write("".join(" ".join(map(str, row)) + "\n" for row in rows))
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
    writer = corpus.ShardWriter(
        args.output,
        args.format,
        dtype,
        args.shard_tokens,
        {"encoding": encoding.name, "vocab_sha256": corpus.vocab_sha256(encoding),
         "append_eot": args.append_eot, "inputs": inputs},
    )  # fmt: skip
    progress = corpus.Progress(inputs, quiet=args.quiet, summary=True)
    try:
        for ids, lengths in _encoded_batches(encoding, inputs, args, device, stdin, progress):
            writer.add(ids, lengths)
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
) -> Iterator[Batch]:
    """The tokens of each batch of documents, flat ``(ids [T], lengths [B])``, with the
    end-of-text token if asked.

    With several threads or worker processes, batch ``k`` is encoded from a helper thread
    (which mostly waits on them, without the GIL) while this thread reads batch ``k + 1`` and
    the caller writes batch ``k - 1``: without that overlap, two workers kept 1.4 cores busy,
    not 2.
    """
    eot = _eot_token(encoding) if args.append_eot else None
    documents = corpus.read_documents(
        inputs, whole_file=args.whole_file, field=args.field, stdin=stdin
    )
    default_lines = 4096 if args.format == "ids" else MAX_BATCH_LINES
    batches = corpus.batches(documents, args.batch_bytes, args.batch_lines or default_lines)

    def encode(batch: list[corpus.Document]) -> Batch:
        ids, lengths = _encode_flat(encoding, [document.text for document in batch], args, device)
        if eot is None:
            return ids, lengths
        return np.insert(ids, np.cumsum(lengths), eot), lengths + 1

    overlap = args.workers > 1 and device.type == "cpu"
    with ThreadPoolExecutor(max_workers=1) as runner:
        pending: tuple[list[corpus.Document], Future[Batch]] | None = None
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
    pending: tuple[list[corpus.Document], Future[Batch]], progress: corpus.Progress
) -> Batch:
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
