"""``tensortext tokenize``: BPE-encode documents to lines of token IDs or to token shards, or
decode lines of IDs back.

Encoding streams: documents (text lines, whole files, a field of JSON lines or a Parquet
column) are read one at a time and encoded in batches of about --batch-bytes characters, so
memory does not grow with the input. On a CPU a batch of 64K characters or more is split among
--workers threads (worker processes, from 2**20 characters, where the C encoder is not
built).

Shards (-o PREFIX writes PREFIX_000000.EXT, ... and the index PREFIX_index.json, which names
the dtype; the dtype is uint16 when every ID of the encoding fits, else uint32, little-endian):

  --format npy  np.save arrays: build-nanogpt's fineweb.py shards, read by its
                train_gpt2.py (np.load)
  --format raw  the tokens alone, no header: nanoGPT's train.bin, read by its train.py
                as np.memmap(path, dtype=np.uint16, mode="r"). The reader must know the
                dtype (the index and the summary line name it); shards join with
                cat PREFIX_*.raw > train.bin
  --format bin  llm.c's data files: 256 int32 header words (magic, version, token count),
                then the tokens. uint16: magic 20240520 version 1 (GPT-2), read by
                train_gpt2.c/.cu and train_gpt2.py; uint32: magic 20240801 version 7
                (Llama 3), read by train_llama3.py

--prepend-eot puts the end-of-text token before each document (build-nanogpt's and llm.c's
fineweb.py); --append-eot after it (nanoGPT's prepare.py)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TextIO

import numpy as np

from tensortext._torch import INSTALL_HINT, torch_installed
from tensortext.cli import corpus, long_documents, shard_formats, shards
from tensortext.cli.common import (
    CliError,
    add_device_argument,
    check_int_flag,
    check_output,
    host_or_device_from,
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
"""A batch's tokens ``(ids [T] uint32, lengths [B] int64)`` on the host."""
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
        "o200k_harmony), or the path of a tokenizer.json, SentencePiece .model or Tekken file, or "
        "of a directory holding one",
    )
    parser.add_argument(
        "-i",
        "--input",
        action="append",
        help="input file, '-' for standard input (the default), or a glob; repeat for several. "
        "A .jsonl file gives one document per line, a .parquet file one per row (see --field)",
    )
    parser.add_argument(
        "-o",
        "--output",
        help="output file (default: standard output); with --format npy, raw or bin, the "
        "prefix of the shards PREFIX_000000.npy ... and of the index PREFIX_index.json",
    )
    shard_formats.add_arguments(parser)
    _add_eot_arguments(parser)
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
        f"4096 for --format ids and --decode, else as many as --batch-bytes holds, at most "
        f"{MAX_BATCH_LINES})",
    )
    add_device_argument(parser)


def _add_eot_arguments(parser: argparse.ArgumentParser) -> None:
    """``--prepend-eot`` and ``--append-eot`` (one or the other: checked by :func:`run`)."""
    parser.add_argument(
        "--prepend-eot",
        action="store_true",
        help="the end-of-text token before every document (build-nanogpt's, llm.c's fineweb.py)",
    )
    parser.add_argument(
        "--append-eot",
        action="store_true",
        help="the end-of-text token after every document (nanoGPT's prepare.py)",
    )


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    check_int_flag("--batch-lines", args.batch_lines, 1, MAX_BATCH_LINES)
    check_int_flag("--batch-bytes", args.batch_bytes, 1, corpus.MAX_BATCH_BYTES)
    check_int_flag("--shard-tokens", args.shard_tokens, 1, shard_formats.MAX_SHARD_TOKENS)
    check_int_flag("--workers", args.workers, 1, 1024)
    check_int_flag("--max-document-bytes", args.max_document_bytes, 1, corpus.MAX_DOCUMENT_BYTES)
    inputs = corpus.expand_inputs(args.input or ["-"])
    to_shards = args.format != "ids"
    if args.append_eot and args.prepend_eot:
        raise CliError(
            "--append-eot and --prepend-eot: pass one of them (--prepend-eot puts the "
            "end-of-text token before each document, --append-eot after it)"
        )
    if args.decode and (to_shards or len(inputs) > 1 or args.whole_file or args.append_eot
                        or args.prepend_eot):  # fmt: skip
        raise CliError("--decode reads one file of ID lines: no --format, --whole-file, "
                       "--append-eot, --prepend-eot or several inputs")  # fmt: skip
    if to_shards and args.output in (None, "-"):
        raise CliError(f"--format {args.format} writes shard files: pass -o PREFIX")
    if to_shards:
        shards.check_prefix(args.output)
    corpus.check_inputs(inputs)
    named_inputs = [("-i", path) for path in inputs] + [("-e", args.encoding)]
    check_output(f"{args.output}_index.json" if to_shards else args.output, named_inputs)
    if to_shards:
        shards.check_folder(args.output)  # a stray file named like a shard: before any work
    device = host_or_device_from(args)
    if args.pretokenize == "bytes" and not torch_installed():  # the tensor engine's only
        raise CliError(f"--pretokenize bytes needs PyTorch, which is not installed: {INSTALL_HINT}")
    if to_shards:
        encoding = load_encoding(args.encoding)
        _eot_token(encoding, args)  # before any work
        dtype = shard_formats.shard_dtype(encoding, args.dtype)
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
         "append_eot": args.append_eot, "prepend_eot": args.prepend_eot, "inputs": inputs},
    )  # fmt: skip
    try:
        for ids, lengths, ends in _encoded_batches(encoding, inputs, args, device, stdin, progress):
            writer.add(ids, lengths, ends)
        index = writer.close()
    except BaseException:  # an error or Ctrl-C: no half-made set of shards
        writer.abort()
        raise
    layout = shard_formats.describe(args.format, dtype)
    progress.close(f"{len(index['shards'])} shards ({layout}), {args.output}_index.json")


def _encoded_batches(
    encoding: Any,
    inputs: list[str],
    args: argparse.Namespace,
    device: Any,
    stdin: Any,
    progress: corpus.Progress,
) -> Iterator[Encoded]:
    """The tokens of each batch of documents, flat ``(ids [T], lengths [B], ends [B])``, with
    the end-of-text token before or after each document if asked. A long document comes in
    parts (see :mod:`~tensortext.cli.long_documents`) where the encoding's split is proven to
    allow it: the token goes before its first part or after its last, which may lie in another
    batch.

    With several threads or worker processes, batch ``k`` is encoded from a helper thread
    (which mostly waits on them, without the GIL) while this thread reads batch ``k + 1`` and
    the caller writes batch ``k - 1``: without that overlap, two workers kept 1.4 cores busy,
    not 2.
    """
    eot = _eot_token(encoding, args)
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

    def encode(batch: list[corpus.Document], starts: np.ndarray, ends: np.ndarray) -> Encoded:
        ids, lengths = _encode_flat(encoding, [document.text for document in batch], args, device)
        if eot is not None:
            marked = starts if args.prepend_eot else ends
            ids, lengths = _with_eot(ids, lengths, marked, eot, before=args.prepend_eot)
        return ids, lengths, ends

    overlap = args.workers > 1 and on_cpu(device)
    previous_ended = True  # the first row starts a document
    with ThreadPoolExecutor(max_workers=1) as runner:
        pending: tuple[list[corpus.Document], Future[Encoded]] | None = None
        for batch in batches:
            ends = np.fromiter((document.ends for document in batch), dtype=bool, count=len(batch))
            starts = np.concatenate(([previous_ended], ends[:-1]))  # [B] a document's first row
            previous_ended = bool(ends[-1])
            if not overlap:
                encoded = encode(batch, starts, ends)
                progress.update(batch, encoded[0].size)
                yield encoded
                continue
            submitted = (batch, runner.submit(encode, batch, starts, ends))
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


def _eot_token(encoding: Any, args: argparse.Namespace) -> int | None:
    """The end-of-text token if ``--prepend-eot`` or ``--append-eot`` asks for it, else None.

    Raises:
        CliError: the encoding has none.
    """
    flag = "--prepend-eot" if args.prepend_eot else "--append-eot" if args.append_eot else None
    if flag is None:
        return None
    try:
        return int(encoding.eot_token)
    except KeyError:
        raise CliError(f"{flag}: {encoding.name} has no <|endoftext|> token") from None


def _with_eot(
    ids: np.ndarray, lengths: np.ndarray, marked: np.ndarray, eot: int, *, before: bool
) -> Batch:
    """``(ids [T'], lengths [B])`` with ``eot`` before (or after) each row where ``marked [B]``
    (bool) is set.

    Example:
        >>> ids, lengths = _with_eot(np.array([5, 6, 7]), np.array([2, 0, 1]),
        ...                          np.array([True, True, False]), 9, before=True)
        >>> ids.tolist(), lengths.tolist()
        ([9, 5, 6, 9, 7], [3, 1, 1])
    """
    row_ends = np.cumsum(lengths)  # [B] where each row ends in ids
    at = (row_ends - lengths if before else row_ends)[marked]
    return np.insert(ids, at, eot), lengths + marked


def on_cpu(device: Any) -> bool:
    """Whether ``--device`` is the CPU (a ``torch.device``, or ``"cpu"`` without torch)."""
    return bool(getattr(device, "type", device) == "cpu")


def _encode_flat(encoding: Any, lines: list[str], args: argparse.Namespace, device: Any) -> Batch:
    """``(ids [T] uint32, lengths [B] int64)`` of the lines on the host: the C encoder's
    buffers as they are, or the tensor engine's IDs copied back."""
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
    try:
        if on_cpu(device) and args.pretokenize == "regex":  # the host encoders, no torch
            ids, lengths = encoding.encode_batch_to_numpy(
                lines, num_threads=args.workers, **specials
            )
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
    return flat.ids.cpu().numpy().astype(np.uint32), flat.lengths.cpu().numpy()


def _decode_lines(encoding: Any, rows: list[list[int]], first: int, out: TextIO) -> None:
    for number, row in enumerate(rows, first + 1):
        try:
            out.write(encoding.decode(row) + "\n")
        except ValueError as error:
            raise CliError(f"line {number}: {error}") from None
