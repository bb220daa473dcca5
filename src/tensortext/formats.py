"""File formats: UTF-8 text and lines, and writes that never leave a half-written output.

Readers raise ``ValueError`` naming the file and line of a malformed entry (``OSError`` when a
file cannot be read); the CLI turns both into one-line errors. Writers that replace a file go
through :func:`atomic_write`, so a failed run never leaves a half-written output.

* :func:`read_text`, :func:`read_lines`: a file or standard input, lines split at ``\\n`` only.
* :func:`atomic_write`, :func:`output_target`: a regular file replaced through a temporary one; a
  symbolic link's target replaced; a FIFO, a device or ``/dev/stdout`` written in place.

Nothing model- or metric-specific lives here: LMBR's evidence files (Moses n-best lists, SGNMT
posterior files) are read by :mod:`tensortext.lmbr.files`. Their old names here
(``tensortext.formats.read_nbest``, ``write_nbest``, ``read_ngram_posterior_files``) still work,
loading :mod:`tensortext.lmbr` only when used.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Literal, NamedTuple, TextIO, overload

if TYPE_CHECKING:  # the names that moved, for type checkers (the import is lazy at run time)
    from tensortext.lmbr.files import read_nbest as read_nbest
    from tensortext.lmbr.files import read_ngram_posterior_files as read_ngram_posterior_files
    from tensortext.lmbr.files import write_nbest as write_nbest

__all__ = [
    "OutputTarget",
    "atomic_write",
    "output_target",
    "read_lines",
    "read_text",
]

# Names that moved to tensortext.lmbr.files, still reachable here (see __getattr__).
_MOVED_TO_LMBR = ("read_nbest", "read_ngram_posterior_files", "write_nbest")


def __getattr__(name: str) -> Any:
    """``tensortext.formats.read_nbest`` and the other evidence readers, imported when used:
    importing this module never loads LMBR (the BLEU command reads text through it)."""
    if name in _MOVED_TO_LMBR:
        from tensortext.lmbr import files

        return getattr(files, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MOVED_TO_LMBR))


def read_text(
    path: str | os.PathLike[str] | None, stdin: TextIO | None = None, encoding: str = "utf-8"
) -> str:
    """A text file; ``None`` or ``"-"`` reads standard input (``stdin`` or ``sys.stdin``).

    Args:
        path: The file, or ``None``/``"-"`` for standard input.
        stdin: The stream standing for standard input (default ``sys.stdin``).
        encoding: A Python codec name (default UTF-8; checked before anything is read).

    Raises:
        OSError: the file cannot be read (the message names it).
        ValueError: an unknown codec, or bytes the codec cannot decode (naming file and line).
    """
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise ValueError(f"{encoding!r} is not a text encoding Python knows") from None
    from_stdin = path is None or str(path) == "-"
    name = "<stdin>" if from_stdin else str(path)
    try:
        if from_stdin:
            stream = stdin if stdin is not None else sys.stdin
            data: str | bytes = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
        else:
            data = Path(str(path)).read_bytes()
    except OSError as error:
        raise OSError(f"cannot read {name}: {error.strerror or error}") from None
    if isinstance(data, str):
        return data
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise ValueError(
            f"{name}, line {line}: invalid {error.encoding.upper()} (byte {error.start}); is it a "
            "text file?"
        ) from None


def read_lines(
    path: str | os.PathLike[str] | None, stdin: TextIO | None = None, encoding: str = "utf-8"
) -> list[str]:
    """Lines of a text file (``None`` or ``"-"``: standard input), without the ``\\n``.

    Lines end at ``\\n`` only, as in sacrebleu: form feeds, ``\\r``, U+0085, U+2028 and other
    characters Python's ``str.splitlines`` breaks at stay inside the line. A last line without
    ``\\n`` counts; an empty file has no lines. Every reader of this package goes through here.

    Example:
        >>> import io
        >>> read_lines(None, io.StringIO("a\\u2028b\\x0cc\\nd\\n"))
        ['a\\u2028b\\x0cc', 'd']
    """
    text = read_text(path, stdin, encoding)
    if not text:
        return []
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


@overload
def atomic_write(
    path: str | os.PathLike[str], mode: Literal["w"] = "w", encoding: str | None = "utf-8"
) -> contextlib.AbstractContextManager[TextIO]: ...


@overload
def atomic_write(
    path: str | os.PathLike[str], mode: Literal["wb"], encoding: str | None = "utf-8"
) -> contextlib.AbstractContextManager[BinaryIO]: ...


def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", encoding: str | None = "utf-8"
) -> contextlib.AbstractContextManager[IO[Any]]:
    """Writes ``path`` through a temporary file in the same directory, renamed on success.

    The file is replaced only when the block finishes without an exception (``os.replace``,
    atomic on POSIX and Windows); on an error the temporary file is removed and ``path`` is left
    as it was. A new file gets the usual permissions (umask), a replaced one keeps its own.

    What ``path`` names decides how it is written (:func:`output_target`):

    * a regular file or a new path: replaced (created) as above. A replaced file is a new inode,
      so its other hard links keep the old content, as with ``sed -i``.
    * a symbolic link: its final target is replaced as above (the temporary file beside the
      target), and the link stays a link; a dangling link's target is created, as the shell's
      ``>`` does.
    * a FIFO, a character or block device (``/dev/null``): written in place, never replaced
      (opening a FIFO waits for a reader). What was written before an error stays written.
    * ``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``, ``/proc/self/fd/N``: written through a
      duplicate of that descriptor, at its offset, whatever it is open on (a pipe, a socket, a
      terminal, a file).

    Args:
        path: The file to write.
        mode: ``"w"`` (text) or ``"wb"`` (bytes).
        encoding: Text encoding (ignored for ``"wb"``).

    Returns:
        A context manager yielding the open temporary file (text or binary), or the open
        special file.

    Raises:
        ValueError: another ``mode``.
        OSError: when the block starts: the directory does not exist or is not writable, the
            path is a directory, a socket or a loop of links, or the descriptor it names is
            not open.

    Example:
        >>> import tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with atomic_write(os.path.join(folder, "out.txt")) as stream:
        ...     _ = stream.write("done\\n")
        >>> os.listdir(folder)
        ['out.txt']
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
    return _write_on_success(path, mode, encoding)


class OutputTarget(NamedTuple):
    """Where and how :func:`atomic_write` writes a path (see :func:`output_target`)."""

    how: Literal["replace", "in_place", "descriptor"]
    """``replace``: a regular file or a new path, replaced through a temporary file;
    ``in_place``: a FIFO or a device, opened for writing; ``descriptor``: an open descriptor."""
    path: str
    """The path written: the final target of a symbolic link, else the path itself."""
    descriptor: int | None
    """For ``descriptor``: the descriptor number the path names (1 for ``/dev/stdout``)."""


# Links followed before a path is a loop (Linux's own limit).
_MAX_LINKS = 40

# Names of this process's open descriptors; matched before their (magic) links are read, whose
# text ("pipe:[123]") is no path.
_DESCRIPTOR_PATH = re.compile(r"/dev/fd/(\d+)|/proc/(?:self|thread-self|\d+)/fd/(\d+)")
_STANDARD_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}


def output_target(path: str | os.PathLike[str]) -> OutputTarget:
    """How :func:`atomic_write` writes ``path``: follows its symbolic links, looks at the file.

    Args:
        path: The output path.

    Returns:
        :class:`OutputTarget` ``(how, path, descriptor)``.

    Raises:
        OSError: ``path`` is a directory (``IsADirectoryError``), a socket, or a loop of links;
            or a folder on the way cannot be searched.

    Example:
        >>> output_target("/dev/stdout").descriptor
        1
    """
    current = os.fspath(path)
    for _ in range(_MAX_LINKS):
        descriptor = _descriptor_named(current)
        if descriptor is not None:
            return OutputTarget("descriptor", current, descriptor)
        try:
            info = os.lstat(current)
        except FileNotFoundError:  # a new file, or a dangling link's target
            return OutputTarget("replace", current, None)
        if stat.S_ISLNK(info.st_mode):
            current = os.path.join(os.path.dirname(current), os.readlink(current))
        elif stat.S_ISREG(info.st_mode):
            return OutputTarget("replace", current, None)
        elif stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "it is a directory", os.fspath(path))
        elif stat.S_ISSOCK(info.st_mode):
            raise OSError(errno.ENXIO, "it is a socket, not a file", os.fspath(path))
        else:
            return OutputTarget("in_place", current, None)
    raise OSError(errno.ELOOP, "too many levels of symbolic links", os.fspath(path))


def _descriptor_named(path: str) -> int | None:
    """The descriptor ``path`` names (``/dev/stdout``, ``/proc/self/fd/3``), or ``None``."""
    path = os.path.normpath(os.path.abspath(path))
    if path in _STANDARD_PATHS:
        return _STANDARD_PATHS[path]
    match = _DESCRIPTOR_PATH.fullmatch(path)
    if match is None:
        return None
    pid = re.match(r"/proc/(\d+)/", path)
    if pid is not None and int(pid.group(1)) != os.getpid():
        return None  # another process's descriptor: a plain path for us
    return int(match.group(1) or match.group(2))


@contextlib.contextmanager
def _write_on_success(
    path: str | os.PathLike[str], mode: str, encoding: str | None
) -> Iterator[IO[Any]]:
    """The body of :func:`atomic_write`."""
    target = output_target(path)
    text_encoding = None if mode == "wb" else encoding
    if target.how != "replace":
        if target.descriptor is not None:
            descriptor = os.dup(target.descriptor)
        else:
            descriptor = os.open(target.path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
        with open(descriptor, mode, encoding=text_encoding) as stream:
            yield stream
        return
    replaced = Path(target.path)
    descriptor, temporary = _create_temporary(replaced)
    try:
        if replaced.exists():
            os.chmod(temporary, stat.S_IMODE(replaced.stat().st_mode))
        with open(descriptor, mode, encoding=text_encoding) as stream:
            yield stream
        os.replace(temporary, replaced)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _create_temporary(target: Path) -> tuple[int, Path]:
    """A new file ``.<name>.<random>.tmp`` beside ``target``, opened for writing (umask mode)."""
    while True:
        temporary = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), temporary
        except FileExistsError:
            continue
