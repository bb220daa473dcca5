"""The ``tensortext`` command: one module per subcommand; ``main`` only dispatches.

Each subcommand module has ``add_arguments(parser)`` and ``run(args, stdout, stdin)``. No library
module sees argparse; user errors are :class:`~tensortext.cli.common.CliError`.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import TextIO

from tensortext import __version__
from tensortext.cli.common import CliError

__all__ = ["build_parser", "main"]

# (name, module, help): modules are imported only when their command runs or is parsed.
COMMANDS = (
    ("bleu", "bleu", "score hypotheses against reference files (sacrebleu-style output, 0-100)"),
    ("tokenize", "tokenize", "BPE-encode text, one line of token IDs per line (--decode reverses)"),
    ("translate", "translate", "beam-search a file with the bundled model or a HF model directory"),
    ("demo", "demo", "run the bundled demo: tokenize, translate and score bundled data"),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tensortext",
        description="A text pipeline on PyTorch tensors: exact batched BPE, batched beam search "
        "with LMBR, and token-ID BLEU.",
    )
    parser.add_argument("--version", action="version", version=f"tensortext {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module_name, help_text in COMMANDS:
        module = importlib.import_module(f"tensortext.cli.{module_name}")
        sub = commands.add_parser(name, help=help_text, description=module.__doc__)
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run)
    return parser


def main(
    argv: Sequence[str] | None = None, stdout: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    """Runs one subcommand; returns 0, or exits with status 2 and one line for a user error."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.handler(args, stdout or sys.stdout, stdin)
    except CliError as error:
        parser.exit(2, f"tensortext: error: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
