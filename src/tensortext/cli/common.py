"""What every ``tensortext`` subcommand shares: the user-error type, reading input, writing output.

A :class:`CliError` is a user's mistake: ``main`` prints it as one line
(``tensortext: error: ...``) and exits with status 2, never with a traceback. Output files are
written atomically (a temporary file renamed on success), so a failed run never destroys one;
a FIFO, a device or ``/dev/stdout`` is written in place (:func:`tensortext.formats.atomic_write`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal, TextIO

from tensortext import formats
from tensortext._checks import resolve_device
from tensortext._torch import INSTALL_HINT, torch_installed

if TYPE_CHECKING:
    import torch

__all__ = [
    "MAX_TOKEN_ID",
    "CliError",
    "add_device_argument",
    "check_int_flag",
    "check_output",
    "device_from",
    "host_or_device_from",
    "load_encoding",
    "open_output",
    "parse_id_lines",
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

    A FIFO or a device (``/dev/null``) is checked for write permission itself, and a path naming
    a descriptor (``/dev/stdout``) for being open for writing: their folders are not written.

    Args:
        output: The ``-o`` path (``None`` or ``-``: standard output, always fine).
        inputs: ``(flag, path)`` of each input file the command reads (``None``: not given).
    """
    if output is None or output == "-":
        return
    try:
        target = formats.output_target(output)
    except OSError as error:
        raise CliError(f"cannot write {output}: {error.strerror or error}") from None
    for flag, path in inputs:
        # A FIFO, a device or a descriptor is written in place: reading it is no conflict.
        if target.how == "replace" and path not in (None, "-") and _same_file(path, output):
            raise CliError(
                f"-o {output} is the {flag} file; write to another file (the input is read while "
                "the output is written)"
            )
    folder = os.path.dirname(target.path) or "."
    if target.how == "replace" and not os.path.isdir(folder):
        raise CliError(f"cannot write {output}: no directory {folder}")
    if not _writable(target):
        raise CliError(f"cannot write {output}: permission denied")


def _writable(target: formats.OutputTarget) -> bool:
    """Whether ``target`` can be written: a special file or a descriptor itself (``/dev`` is not
    writable by non-root users, ``/dev/null`` is), a replaced file its folder (and the file)."""
    if target.descriptor is not None:
        import fcntl  # POSIX, as are the paths that name descriptors

        try:
            flags = fcntl.fcntl(target.descriptor, fcntl.F_GETFL)
        except OSError:  # the descriptor is not open
            return False
        return flags & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)
    if target.how == "in_place":
        return os.access(target.path, os.W_OK)
    folder = os.path.dirname(target.path) or "."
    exists = os.path.exists(target.path)
    return os.access(folder, os.W_OK) and (not exists or os.access(target.path, os.W_OK))


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
    output stops the command before its work; an error or Ctrl-C leaves ``path`` as it was. A
    FIFO, a device or ``/dev/stdout`` is opened in place when the block starts instead
    (:func:`tensortext.formats.atomic_write`; a FIFO's open waits for its reader).
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


def host_or_device_from(args: argparse.Namespace) -> torch.device | Literal["cpu"]:
    """:func:`device_from`, but without torch (the tokenizer-only install) ``auto`` and ``cpu``
    are the string ``"cpu"`` (the host encoders need no torch) and any other device is refused,
    naming the extra to install."""
    if torch_installed():
        return device_from(args)
    spelled = str(args.device)
    if spelled in ("auto", "cpu"):
        return "cpu"
    shown = repr(spelled) if len(spelled) <= 40 else f"{spelled[:40]!r}..."
    raise CliError(f"--device {shown}: PyTorch is not installed; {INSTALL_HINT}")


def device_from(args: argparse.Namespace) -> torch.device:
    """The ``--device`` of ``args``: ``auto``, ``cpu``, ``cuda``, ``cuda:N`` (a GPU this machine
    has), or ``mps`` where torch has it; anything else is refused before any work.

    ``meta`` and the other devices torch names (``xpu``, ``hpu``, ...) are refused: the package
    is built and tested on these only, and ``meta`` tensors hold no values.
    """
    import torch

    spelled = str(args.device)
    shown = repr(spelled) if len(spelled) <= 40 else f"{spelled[:40]!r}..."
    accepted = "cpu, cuda, cuda:N, mps or auto" if _mps_available() else "cpu, cuda, cuda:N or auto"
    if spelled == "auto":
        return resolve_device("auto")
    try:
        device = torch.device(spelled)
    except (RuntimeError, ValueError):
        raise CliError(f"--device {shown} is not a torch device; pass {accepted}") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise CliError(f"--device {spelled}: CUDA is not available here; pass --device cpu")
        if device.index is not None and device.index >= count:
            raise CliError(
                f"--device {spelled}: this machine has {count} CUDA device"
                f"{'' if count == 1 else 's'}; pass cuda:0 to cuda:{count - 1}"
            )
    elif device.type != "cpu" and not (device.type == "mps" and _mps_available()):
        raise CliError(f"--device {shown} is not a device tensortext computes on; pass {accepted}")
    return device


def _mps_available() -> bool:
    """Whether torch can compute on Apple's Metal (``mps``) here."""
    import torch

    backend = getattr(torch.backends, "mps", None)
    return backend is not None and bool(backend.is_available())


MAX_TOKEN_ID = (1 << 63) - 1
"""The largest token ID a line of IDs may hold (token IDs are int64)."""


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
        # int() of over 4,300 digits raises; no ID of over 19 digits fits in int64 anyway
        long = next((token for token in tokens if len(token.lstrip("0")) > 19), None)
        ids = [] if long is not None else [int(token) for token in tokens]
        big = long or next((str(i) for i in ids if i > MAX_TOKEN_ID), None)
        if big is not None:
            shown = big if len(big) <= 40 else f"{big[:20]}...({len(big)} digits)"
            raise CliError(f"{name}, line {number}: token ID {shown} does not fit in int64")
        rows.append(ids)
    return rows


def _bad_id(tokens: list[str]) -> str:
    """What is wrong with the first token that is not ASCII digits."""
    bad = next(token for token in tokens if not (token.isascii() and token.isdigit()))
    digits = bad[1:]
    if bad.startswith("-") and digits.isascii() and digits.isdigit():
        return f"{bad!r}: token IDs must be non-negative"
    return f"{bad!r} is not a token ID (ASCII digits 0-9)"
