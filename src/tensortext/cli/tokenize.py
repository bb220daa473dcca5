"""``tensortext tokenize``: BPE-encode text lines to lines of token IDs, or decode them back."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

from tensortext.cli.common import (
    CliError,
    add_device_argument,
    device_from,
    open_output,
    read_lines,
    user_errors,
)

__all__ = ["add_arguments", "load_encoding", "parse_id_lines", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-e",
        "--encoding",
        required=True,
        metavar="ENCODING",
        help="an encoding name (gpt2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base, "
        "o200k_harmony), a tokenizer.json path or a directory holding one",
    )
    parser.add_argument("-i", "--input", help="input file (default: standard input)")
    parser.add_argument("-o", "--output", help="output file (default: standard output)")
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
    parser.add_argument("--batch-lines", type=int, default=4096, help="lines per batch")
    add_device_argument(parser)


def load_encoding(spec: str) -> Any:
    """An encoding by name or ``tokenizer.json`` path; a bad one is the user's error."""
    from tensortext.bpe import load_encoding as load

    with user_errors(OSError, ValueError, ImportError):
        return load(spec)


def parse_id_lines(lines: list[str], name: str, first_line: int = 1) -> list[list[int]]:
    """Space-separated non-negative integer IDs per line; errors name ``name`` and the line."""
    rows = []
    for number, line in enumerate(lines, first_line):
        try:
            ids = [int(token) for token in line.split()]
        except ValueError:
            bad = next(t for t in line.split() if not t.lstrip("-").isdigit())
            raise CliError(
                f"{name}, line {number}: {bad!r} is not an integer token ID; pass "
                "--tokenize none to score whitespace tokens"
            ) from None
        if any(i < 0 for i in ids):
            raise CliError(f"{name}, line {number}: token IDs must be non-negative")
        rows.append(ids)
    return rows


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    if args.batch_lines < 1:
        raise CliError(f"--batch-lines must be >= 1, got {args.batch_lines}")
    device = device_from(args)
    encoding = load_encoding(args.encoding)
    lines = read_lines(args.input, stdin)
    name = args.input or "<stdin>"
    with open_output(args.output, stdout) as out:
        for first in range(0, len(lines), args.batch_lines):
            chunk = lines[first : first + args.batch_lines]
            if args.decode:
                _decode_lines(encoding, parse_id_lines(chunk, name, first + 1), first, out)
            else:
                for row in _encode_lines(encoding, chunk, args, device):
                    out.write(" ".join(map(str, row)) + "\n")


def _encode_lines(
    encoding: Any, lines: list[str], args: argparse.Namespace, device: Any
) -> list[list[int]]:
    allowed: Any = "all" if args.allowed_special == ["all"] else set(args.allowed_special)
    unknown = set() if allowed == "all" else allowed - encoding.special_tokens_set
    if unknown:
        raise CliError(
            f"--allowed-special {sorted(unknown)[0]!r} is no special token of {encoding.name}; "
            f"it has {sorted(encoding.special_tokens_set)[:8]}"
        )
    try:
        padded = encoding.encode_batch_to_tensor(
            lines,
            device=device,
            allowed_special=allowed,
            disallowed_special=() if args.ordinary else "all",
            pretokenize=args.pretokenize,
        )
    except ValueError as error:
        message = str(error)
        if "disallowed" in message:  # the API's hint names keywords, not flags
            message = message.split(". ")[0] + "; pass --allowed-special or --ordinary"
        raise CliError(message) from None
    rows: list[list[int]] = padded.tolist()
    return rows


def _decode_lines(encoding: Any, rows: list[list[int]], first: int, out: TextIO) -> None:
    for number, row in enumerate(rows, first + 1):
        try:
            out.write(encoding.decode(row) + "\n")
        except ValueError as error:
            raise CliError(f"line {number}: {error}") from None
