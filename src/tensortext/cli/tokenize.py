"""``tensortext tokenize``: BPE-encode text lines to lines of token IDs, or decode them back."""

from __future__ import annotations

import argparse
from typing import Any, TextIO

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

__all__ = [
    "MAX_BATCH_LINES",
    "MAX_TOKEN_ID",
    "add_arguments",
    "load_encoding",
    "parse_id_lines",
    "run",
]

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
    parser.add_argument(
        "--batch-lines",
        type=int,
        default=4096,
        help=f"lines encoded or decoded per batch, 1 to {MAX_BATCH_LINES} (default: 4096)",
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
    check_output(args.output, [("-i", args.input), ("-e", args.encoding)])
    device = device_from(args)
    name = args.input or "<stdin>"
    with open_output(args.output, stdout) as out:  # before the work: a bad -o costs nothing
        encoding = load_encoding(args.encoding)
        lines = read_lines(args.input, stdin)
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
    specials: dict[str, Any] = {
        "allowed_special": allowed,
        "disallowed_special": () if args.ordinary else "all",
    }
    try:
        if device.type == "cpu" and args.pretokenize == "regex":  # the host encoder's lists
            rows: list[list[int]] = encoding.encode_batch(lines, **specials)
            return rows
        padded = encoding.encode_batch_to_tensor(
            lines, device=device, pretokenize=args.pretokenize, **specials
        )
    except ValueError as error:
        message = str(error)
        if "disallowed" in message:  # the API's hint names keywords, not flags
            message = message.split(". ")[0] + "; pass --allowed-special or --ordinary"
        raise CliError(message) from None
    rows = padded.tolist()
    return rows


def _decode_lines(encoding: Any, rows: list[list[int]], first: int, out: TextIO) -> None:
    for number, row in enumerate(rows, first + 1):
        try:
            out.write(encoding.decode(row) + "\n")
        except ValueError as error:
            raise CliError(f"line {number}: {error}") from None
