"""The ``tensortext`` command: one module per subcommand; ``main`` only dispatches.

Each subcommand module has ``add_arguments(parser)`` and ``run(args, stdout, stdin)``. No library
module sees argparse; user errors are :class:`~tensortext.cli.common.CliError`.

Exit statuses: 0 done; 2 a user error (one line on stderr: a bad flag, file or input); 1 the
system refused (disk full, ...); 130 interrupted (Ctrl-C, SIGINT); 143 terminated (SIGTERM, as
``kill`` sends; handled as Ctrl-C is: temporary files removed, earlier outputs kept); 141 standard
output closed early (``tensortext tokenize | head``), quietly, as ``cat`` does. Never a traceback
for any of these, including a Ctrl-C while the subcommand's modules (torch) are imported: this
module imports nothing heavy itself.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, TextIO

__all__ = ["build_parser", "main"]

# (name, module, help): a module is imported only when its command runs (so ``tokenize`` never
# imports torch, which the other commands need).
COMMANDS = (
    ("bleu", "bleu", "score hypotheses against reference files: BLEU, chrF (sacrebleu's output)"),
    ("tokenize", "tokenize", "BPE-encode text, one line of token IDs per line (--decode reverses)"),
    ("translate", "translate", "beam-search a file with the bundled model or a HF model directory"),
    ("demo", "demo", "run the bundled demo: tokenize, translate and score bundled data"),
)


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (the usage is one ``--help`` away) and no abbreviated
    options, for the command and every subcommand (their parsers are of this class): an
    abbreviation would read sacrebleu's ``-t`` (a test set) as ``-tok``, and a flag added later
    would change what an old abbreviation means."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so that the same clean-up runs."""


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The command's parser. With ``argv``, only the subcommand it names (its first word that
    is no option) gets its arguments, and only that subcommand's module is imported: the
    others are listed for ``--help`` and an unknown word is refused by name. Without ``argv``,
    every subcommand is complete (for tests and documentation).

    Raises:
        SystemExit: status 2 with one line naming ``pip install "tensortext[torch]"``, for a
            subcommand that needs torch where it is not installed.
    """
    from tensortext import __version__

    chosen = None
    if argv is not None:
        chosen = next((word for word in argv if not word.startswith("-")), "")

    parser = _Parser(
        prog="tensortext",
        description="A text pipeline on PyTorch tensors: exact batched BPE (tiktoken's and "
        "Hugging Face's encodings), sacrebleu's BLEU and chrF, and batched beam search with LMBR.",
    )
    parser.add_argument("--version", action="version", version=f"tensortext {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, module_name, help_text in COMMANDS:
        if chosen is not None and name != chosen:  # never parsed: only listed in --help
            commands.add_parser(name, help=help_text)
            continue
        module = _subcommand(name, module_name)
        sub = commands.add_parser(
            name,
            help=help_text,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run)
    return parser


def _subcommand(name: str, module_name: str) -> Any:
    """The module of subcommand ``name``, or exit 2 naming the extra it needs."""
    try:
        return importlib.import_module(f"tensortext.cli.{module_name}")
    except ModuleNotFoundError as error:
        if error.name != "torch":
            raise
        from tensortext._torch import INSTALL_HINT

        _fail(2, f"tensortext: error: tensortext {name} needs PyTorch, which is not installed: "
              f"{INSTALL_HINT}")  # fmt: skip


def main(
    argv: Sequence[str] | None = None, stdout: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    """Runs one subcommand and returns 0, or raises ``SystemExit`` with the status of a failure
    (see the module's docstring)."""
    try:
        with _sigterm_as_interrupt():
            return _run(argv, stdout, stdin)
    except Terminated:
        _fail(143, "tensortext: terminated")
    except KeyboardInterrupt:  # also while the modules below are imported
        _fail(130, "tensortext: interrupted")


def _run(argv: Sequence[str] | None, stdout: TextIO | None, stdin: TextIO | None) -> int:
    from tensortext.bpe.native import native_available
    from tensortext.cli.common import CliError

    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words)
    args = parser.parse_args(words)
    try:
        native_available()  # a TENSORTEXT_NATIVE it does not understand: before any work
    except ValueError as error:
        _fail(2, f"tensortext: error: {error}")
    try:
        args.handler(args, stdout or sys.stdout, stdin)
    except CliError as error:
        _fail(2, f"tensortext: error: {error}")
    except BrokenPipeError:
        _silence_stdout()
        raise SystemExit(141) from None
    except OSError as error:  # not the user's input: the disk, the terminal, ...
        _fail(1, f"tensortext: error: {error}")
    return 0


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` while the block runs (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminate(number: int, frame: object) -> None:
        raise Terminated

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fail(status: int, line: str) -> NoReturn:
    sys.stderr.write(line + "\n")
    raise SystemExit(status)


def _silence_stdout() -> None:
    """Points stdout at /dev/null, so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is no file (a test's StringIO)
        pass


if __name__ == "__main__":
    sys.exit(main())
