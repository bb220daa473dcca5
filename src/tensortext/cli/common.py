"""What every ``tensortext`` subcommand shares: the user-error type, reading input, writing output.

A :class:`CliError` is a user's mistake: ``main`` prints it as one line
(``tensortext: error: ...``) and exits with status 2, never with a traceback. Output files are
written atomically (a temporary file renamed on success), so a failed run never destroys one.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import TextIO

import torch

from tensortext import formats
from tensortext._checks import resolve_device

__all__ = [
    "CliError",
    "add_device_argument",
    "check_int_flag",
    "check_output",
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


def check_int_flag(flag: str, value: int | None, low: int, high: int) -> None:
    """Refuses an integer flag outside ``[low, high]`` (``None``: not given) before any work."""
    if value is not None and not low <= value <= high:
        raise CliError(f"{flag} must be between {low} and {high}, got {value}")


def check_output(output: str | None, inputs: Iterable[tuple[str, str | None]]) -> None:
    """Refuses an output path that cannot be written or that is one of the inputs, before any work.

    Args:
        output: The ``-o`` path (``None`` or ``-``: standard output, always fine).
        inputs: ``(flag, path)`` of each input file the command reads (``None``: not given).
    """
    if output is None or output == "-":
        return
    for flag, path in inputs:
        if path is not None and path != "-" and _same_file(path, output):
            raise CliError(
                f"-o {output} is the {flag} file; write to another file (the input is read while "
                "the output is written)"
            )
    if os.path.isdir(output):
        raise CliError(f"cannot write {output}: it is a directory")
    folder = os.path.dirname(output) or "."
    if not os.path.isdir(folder):
        raise CliError(f"cannot write {output}: no directory {folder}")
    exists = os.path.exists(output)
    if not os.access(folder, os.W_OK) or (exists and not os.access(output, os.W_OK)):
        raise CliError(f"cannot write {output}: permission denied")


def _same_file(first: str, second: str) -> bool:
    """Whether two existing paths name one file (links and relative spellings included)."""
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist: the output is new, or the input is missing
        return False


@contextlib.contextmanager
def open_output(path: str | None, stdout: TextIO) -> Iterator[TextIO]:
    """``stdout``, or ``path`` written atomically: replaced only when the block succeeds.

    The temporary file beside ``path`` is created when the block starts, so an unwritable
    output stops the command before its work; an error or Ctrl-C leaves ``path`` as it was.
    """
    if path is None or path == "-":
        yield stdout
        return
    manager = formats.atomic_write(path)
    try:
        stream = manager.__enter__()
    except OSError as error:
        raise CliError(f"cannot write {path}: {error.strerror or error}") from None
    try:
        yield stream
    except BaseException as error:  # the work failed: drop the temporary file, keep path
        manager.__exit__(type(error), error, error.__traceback__)
        raise
    try:
        manager.__exit__(None, None, None)
    except OSError as error:  # errors of the work itself are not the output's
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
