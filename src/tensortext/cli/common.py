"""What every ``tensortext`` subcommand shares: the user-error type, reading input, writing output.

A :class:`CliError` is a user's mistake: ``main`` prints it as one line
(``tensortext: error: ...``) and exits with status 2, never with a traceback. Output files are
written atomically (a temporary file renamed on success), so a failed run never destroys one.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TextIO

import torch

from tensortext import formats
from tensortext._checks import resolve_device

__all__ = [
    "CliError",
    "add_device_argument",
    "device_from",
    "open_output",
    "read_lines",
    "user_errors",
]


class CliError(Exception):
    """A user error: printed as ``tensortext: error: ...`` with exit status 2."""


@contextlib.contextmanager
def user_errors(*types: type[Exception]) -> Iterator[None]:
    """Turns the given exception types (default ``ValueError``, ``OSError``) into
    :class:`CliError`: raised by a library call on the user's input, they are the user's mistake."""
    caught = types or (ValueError, OSError)
    try:
        yield
    except caught as error:
        raise CliError(str(error)) from None


def read_lines(path: str | None, stdin: TextIO | None = None, encoding: str = "utf-8") -> list[str]:
    """Lines of a text file (``None`` or ``-``: standard input), split at ``\\n`` only."""
    with user_errors():
        return formats.read_lines(path, stdin, encoding)


@contextlib.contextmanager
def open_output(path: str | None, stdout: TextIO) -> Iterator[TextIO]:
    """``stdout``, or ``path`` written atomically: replaced only when the block succeeds."""
    if path is None or path == "-":
        yield stdout
        return
    try:
        with formats.atomic_write(path) as stream:
            yield stream
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror or error}") from None


def add_device_argument(parser: argparse.ArgumentParser) -> None:
    """``--device``: a torch device, or ``auto`` (CUDA when available; the default)."""
    parser.add_argument(
        "--device", default="auto", help="torch device: cpu, cuda, cuda:1 or auto (default)"
    )


def device_from(args: argparse.Namespace) -> torch.device:
    """The ``--device`` of ``args`` under the package's device rule."""
    with user_errors(ValueError, TypeError):
        return resolve_device(args.device)
