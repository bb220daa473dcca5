"""Token shard sets for ``tensortext tokenize --format npy|raw|bin``, each run's set replacing
the last one with that prefix as one step (the layouts: :mod:`~tensortext.cli.shard_formats`).

A run writes its shards and index into a hidden staging folder ``.BASE.tensortext-PID-RANDOM/``
beside the prefix (``BASE``: its last component; the PID is for people), under their final
names: a glob of the prefix never sees them, so an error or a signal while encoding leaves the
earlier set as it was. The run holds an exclusive ``flock`` on ``lock`` there for its whole
life: a staging folder whose lock can be taken is an ended run's, whatever its PID (over NFS,
as good as the server's locks; without ``flock``, as on Windows, none is swept). A ``flock`` on
the prefix's folder serializes steps 0-4 and sweeps. Only the set in place is ever removed (the
index ``BASE_index.json`` and the shards it lists); a file named like a shard
(``BASE_NNNNNN.npy|raw|bin``) that no index lists stops a run before any work. When the run
succeeds, under the folder lock:

0. Unfinished committed switches are rolled forward (dropped if the set they replace is gone);
   staging folders of ended runs are deleted.
1. **Commit point.** The shards and index were ``fsync``-ed when written. ``switch.json`` (new
   files, index last; the old set's files, index first; the old index's sha256) is written,
   ``fsync``-ed and renamed into the staging folder, which is ``fsync``-ed. Before it exists
   the run never happened (an unreadable one counts as absent); once it exists the switch is
   rolled forward by whoever gets there: this run, or the next one with this prefix.
2. **Old run out.** The old set's files move into ``staging/old/`` (made with the folder).
3. **New run in.** The new shards, then the new index, are renamed into place; the prefix's
   folder is ``fsync``-ed.
4. ``switch.json`` is removed, then the staging folder with the old files.

Rolling forward is idempotent: until a new file has left the staging folder, step 2 is (re)done;
after, only the files still staged move. It happens only while the index in place is the one
the journal replaces (or none, mid-switch): a stale journal never lands on a newer set.
SIGINT, SIGTERM and SIGHUP wait until step 4 is done (exit 130 or 143). Only SIGKILL or a power
cut stops a switch half-way; the next run finishes it first (after a power cut, the journal and
new files are durable, the renames as ordered as the file system keeps them). Runs also sweep
earlier versions' ``.BASE_NNNNNN.npy.RANDOM.part`` and ``.BASE_index.json.RANDOM.tmp`` files.

A document counts in the shard holding its last token; a document with no tokens (an empty
line without ``--append-eot``) in the shard holding the token before it (the first shard if
none). An input with no tokens gives one empty shard and an index of 0 tokens.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import os
import re
import secrets
import shutil
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from tensortext.cli.common import CliError
from tensortext.cli.shard_formats import FORMATS, write_shard

__all__ = ["SWITCH_SIGNAL_ENV", "ShardWriter", "check_folder", "check_prefix", "write_shard"]

JOURNAL, TRASH, LOCK = "switch.json", "old", "lock"  # in a staging folder
SWITCH_SIGNAL_ENV = "TENSORTEXT_TEST_SWITCH_SIGNAL"
"""For tests only: ``SIGNAME@N`` sends that signal to the process after the switch's N-th rename."""


def check_prefix(prefix: str) -> None:
    """Refuses, before any work, a ``-o`` prefix that names no file stem in a folder.

    Raises:
        CliError: an empty prefix, one ending in ``/``, or one naming a folder (``.``, ``sub``).
    """
    if not prefix:
        raise CliError("-o '': pass a prefix for the shards, such as shards/train")
    if prefix.endswith(("/", os.sep)) or os.path.isdir(prefix) or Path(prefix).name in ("", ".."):
        raise CliError(
            f"-o {prefix} is a folder, not a prefix: pass one inside it, such as "
            f"{os.path.join(prefix, 'shard')} (files {os.path.join(prefix, 'shard_000000')}...)"
        )


def check_folder(prefix: str) -> None:
    """Finishes or sweeps what ended runs with this prefix left, then refuses, before any work,
    files named like its shards that its index does not list.

    Raises:
        CliError: such a file, or an index that cannot be read as one.
        OSError: the folder cannot be read or locked.
    """
    folder, base = Path(prefix).parent, Path(prefix).name
    if not folder.is_dir():
        return
    with _signals_deferred(), _folder_lock(folder):
        _settle(folder, base)
        _set_in_place(folder, base)


def _run_files(base: str, index: bool = True) -> re.Pattern[str]:
    """The names of a set with prefix ``base``: shards, and its index unless not ``index``."""
    extensions = "|".join(FORMATS)
    return re.compile(rf"{re.escape(base)}_(?:\d{{6,}}\.(?:{extensions}){'|index.json' * index})")


def _staging_names(base: str) -> re.Pattern[str]:
    return re.compile(rf"\.{re.escape(base)}\.tensortext-\d+-[0-9a-f]{{8}}")


def _legacy_parts(base: str) -> re.Pattern[str]:
    """Earlier versions' temporary shards, and indexes of ``formats.atomic_write``."""
    stem = rf"\.{re.escape(base)}_\d{{6,}}\.(?:npy|bin)\.[0-9a-f]{{8}}\.part"
    index = rf"\.{re.escape(base)}_index\.json\.[0-9a-f]{{8}}\.tmp"
    return re.compile(rf"{stem}|\.{stem}\.[0-9a-f]{{8}}\.tmp|(?P<index>{index})")


def _is_ours(path: Path) -> bool:
    """An index's temporary file holds the start of a JSON object, or nothing yet."""
    with contextlib.suppress(OSError), open(path, "rb") as stream:
        return stream.read(1) in (b"", b"{")
    return False


def _set_in_place(folder: Path, base: str) -> list[str]:
    """The files of the set in place, its index first.

    Raises:
        CliError: a file named like a shard that the index does not list (or with no index), or
            an index that is no shard index.
    """
    index = folder / f"{base}_index.json"
    listed: list[str] = []
    if has_index := os.path.lexists(index):
        try:
            listed = [shard["file"] for shard in json.loads(index.read_bytes())["shards"]]
            if not all(isinstance(name, str) for name in listed):
                raise TypeError("a shard's file is no string")
        except OSError as error:
            raise CliError(f"cannot read {index}: {error.strerror or error}") from None
        except (ValueError, KeyError, TypeError):
            raise CliError(
                f"{index} is no index of token shards; move it away or choose another -o prefix"
            ) from None
    shard_names = _run_files(base, index=False)
    present = sorted(name for name in os.listdir(folder) if shard_names.fullmatch(name))
    strays = [name for name in present if name not in set(listed)]
    if strays:
        raise CliError(
            f"{folder / strays[0]} is no shard of {index}; move it away or choose another -o prefix"
        )
    return [index.name] * has_index + [name for name in listed if name in present]


def _digest(path: Path) -> str | None:
    """sha256 of a file's bytes; None if there is none."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _if_ended(staging: Path) -> Iterator[bool]:
    """Whether the run of a staging folder has ended: its ``lock`` can be taken (held while the
    block runs). Without ``fcntl`` (Windows) no run is known to have ended."""
    try:
        import fcntl
    except ImportError:
        yield False
        return
    try:
        descriptor = os.open(staging / LOCK, os.O_RDONLY)
    except OSError as error:  # none: it is made with the folder, under the folder lock
        yield isinstance(error, FileNotFoundError)  # (no permission: not ours to judge)
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        ended = True
    except OSError:
        ended = False
    try:
        yield ended
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on the folder (none where ``fcntl`` is missing)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _fsync_folder(folder: Path) -> None:
    """Makes the folder's entries durable (POSIX; a file system that cannot is let be)."""
    if os.name == "posix":
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        except OSError as error:
            if error.errno not in (errno.EINVAL, errno.ENOTSUP):
                raise
        finally:
            os.close(descriptor)


def _settle(folder: Path, base: str, own: Path | None = None) -> None:
    """Step 0 of the module's docstring, under the folder lock: every committed switch but
    ``own`` rolled forward or dropped, ended runs' staging folders and legacy files deleted."""
    staging, legacy = _staging_names(base), _legacy_parts(base)
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        if staging.fullmatch(entry) and path != own:
            # A journal is written and applied under the folder lock, so one seen here belongs
            # to no switch under way: rolling it forward is safe even if its run still lives.
            if (path / JOURNAL).exists():
                _switch(folder, base, path)
                continue
            with _if_ended(path) as ended:
                if ended:
                    shutil.rmtree(path, ignore_errors=True)
        elif (old := legacy.fullmatch(entry)) and (old["index"] is None or _is_ours(path)):
            with contextlib.suppress(OSError):
                os.unlink(path)


def _read_journal(staging: Path, base: str) -> tuple[list[str], list[str], str | None] | None:
    """``(new files, old files, sha256 of the old index)``; None for a journal that is missing
    or unreadable (its rename, after its ``fsync``, never happened) or names foreign files."""
    try:
        journal = json.loads((staging / JOURNAL).read_bytes())
        new, old, replaces = journal["files"], journal["old"], journal["replaces"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    names = new + old if isinstance(new, list) and isinstance(old, list) else [None]
    owned = all(isinstance(name, str) and _run_files(base).fullmatch(name) for name in names)
    return (new, old, replaces) if owned and isinstance(replaces, (str, type(None))) else None


def _switch(folder: Path, base: str, staging: Path) -> None:
    """Steps 2-4 of the module's docstring, from wherever an earlier try stopped; a staging
    folder whose journal is unreadable or stale is deleted instead."""
    journal = _read_journal(staging, base)
    if journal is None:
        shutil.rmtree(staging, ignore_errors=True)
        return
    new_files, old_files, replaces = journal
    staged = [name for name in new_files if (staging / name).exists()]
    moved_none = len(staged) == len(new_files)
    in_place = _digest(folder / f"{base}_index.json")
    # The old index leaves first and the new one comes last: mid-switch there is none.
    if in_place is not None and not (moved_none and in_place == replaces):
        shutil.rmtree(staging, ignore_errors=True)  # a newer set (or this one, whole) is there
        return
    renamed = _test_hook()
    if moved_none:  # no new file moved yet: the old set may still be there
        if not (staging / TRASH).is_dir():
            (staging / TRASH).mkdir()
        for name in old_files:
            with contextlib.suppress(FileNotFoundError):
                os.replace(folder / name, staging / TRASH / name)
                renamed()
    for name in staged:  # the index is last
        os.replace(staging / name, folder / name)
        renamed()
    _fsync_folder(folder)
    os.unlink(staging / JOURNAL)
    shutil.rmtree(staging, ignore_errors=True)


def _test_hook() -> Callable[[], None]:
    """Called after each rename of a switch: sends ``SWITCH_SIGNAL_ENV``'s signal (``NAME@N``)
    after the N-th; tests only."""
    name, _, after = os.environ.get(SWITCH_SIGNAL_ENV, "").partition("@")
    count = itertools.count(1)

    def renamed() -> None:
        if name and next(count) == int(after or 1):
            os.kill(os.getpid(), getattr(signal, name))

    return renamed


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP wait until the block ends, then act as they would have.

    Blocked in this thread (``pthread_sigmask``); one delivered to another thread (an encoder's)
    runs a handler that only records it. All are re-raised after the block.
    """
    if threading.current_thread() is not threading.main_thread() or os.name != "posix":
        yield
        return
    names = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
    caught: list[int] = []

    def record(number: int, _: object) -> None:
        caught.append(number)

    previous = {name: signal.signal(name, record) for name in names}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, names)
    try:
        yield
    finally:
        for name, handler in previous.items():  # still blocked: pending ones reach these
            signal.signal(name, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for number in dict.fromkeys(caught):
            signal.raise_signal(number)


def _cannot_write(path: str | Path, error: OSError) -> OSError:
    """``cannot write PATH: no space left on device``, the reason in words, not numbers."""
    reason = error.strerror or (
        os.strerror(error.errno) if error.errno else str(error) or type(error).__name__
    )
    failed = OSError(f"cannot write {path}: {reason[:1].lower()}{reason[1:200]}")
    failed.errno = error.errno
    return failed


class ShardWriter:
    """Token shards ``PREFIX_000000.npy`` (or ``.raw``, ``.bin``), each ``shard_tokens`` long
    but the last, and the index ``PREFIX_index.json``, replacing the set of an earlier run as
    one step at :meth:`close` (see the module's docstring); :meth:`abort` drops the run.

    Creating the writer finishes or sweeps what ended runs with this prefix left, and refuses
    files named like its shards that its index does not list (:func:`check_folder`)."""

    def __init__(
        self,
        prefix: str,
        file_format: str,
        dtype: str,
        shard_tokens: int,
        index_fields: dict[str, Any],
    ):
        self.prefix, self.file_format, self.dtype = prefix, file_format, dtype
        self.shard_tokens, self.index_fields = shard_tokens, index_fields
        self.shards: list[dict[str, Any]] = []
        self._buffer: Any = None
        self._filled = self._documents = 0
        self._folder, self._base = Path(prefix).parent, Path(prefix).name
        self._lock: int | None = None
        try:
            with _signals_deferred(), _folder_lock(self._folder):
                _settle(self._folder, self._base)
                _set_in_place(self._folder, self._base)
                self._staging = self._folder / f".{self._base}.tensortext-{os.getpid()}-" \
                    f"{secrets.token_hex(4)}"  # fmt: skip
                self._staging.mkdir()
                # Made under the folder lock: no sweeper sees the folder without its lock.
                self._lock = os.open(self._staging / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
                with contextlib.suppress(ImportError):
                    import fcntl

                    fcntl.flock(self._lock, fcntl.LOCK_EX)
                (self._staging / TRASH).mkdir()  # now: a full disk must not stop step 2
        except OSError as error:
            raise _cannot_write(prefix, error) from None

    def _release(self) -> None:
        lock, self._lock = self._lock, None
        if lock is not None:
            os.close(lock)

    def abort(self) -> None:
        """Drops this run's files (the earlier run's stay as they were); once the switch has
        begun, finishes it instead (its new set is complete)."""
        try:
            if (self._staging / JOURNAL).exists():
                deferred = _signals_deferred()
                with contextlib.suppress(OSError), deferred, _folder_lock(self._folder):
                    _switch(self._folder, self._base, self._staging)
                return
            shutil.rmtree(self._staging, ignore_errors=True)
        finally:
            self._release()

    def add(self, ids: np.ndarray, lengths: np.ndarray, finals: np.ndarray | None = None) -> None:
        """Appends each document's tokens (``ids [T]``, ``lengths [B]``, one document after
        another), writing each full shard once the next token arrives (so that documents with
        no tokens after it count in it). ``finals [B]`` (bool) is False for a row that is a part
        of a long document going on in the next row (all True if not given)."""
        ends = np.cumsum(lengths)  # [B] where each row ends in ids
        total = int(ends[-1]) if ends.size else 0
        if finals is not None:
            ends = ends[finals]  # where each document ends
        flat = ids.astype(self.dtype, copy=False)  # the IDs fit: checked against the vocabulary
        self._documents += int(np.count_nonzero(ends == 0))  # before this batch's first token
        start = 0
        while start < total:
            if self._filled == self.shard_tokens:
                self._write()
            take = min(self.shard_tokens - self._filled, total - start)
            self._grow(self._filled + take)
            self._buffer[self._filled : self._filled + take] = flat[start : start + take]
            self._filled += take
            self._documents += int(np.count_nonzero((ends > start) & (ends <= start + take)))
            start += take

    def _grow(self, needed: int) -> None:
        """A buffer of at least ``needed`` tokens (doubling, at most ``shard_tokens``)."""
        size = 0 if self._buffer is None else self._buffer.size
        if size >= needed:
            return
        grown = np.empty(min(self.shard_tokens, max(needed, 2 * size, 1 << 20)), self.dtype)
        if self._buffer is not None:
            grown[: self._filled] = self._buffer[: self._filled]
        self._buffer = grown

    def close(self) -> dict[str, Any]:
        """Writes the last shard (an empty one if no token came) and the index, then puts the
        set in place of the earlier one; returns the index.

        Raises:
            CliError: a file named like a shard that no index lists appeared during the run.
            OSError: a file could not be written (once committed, :meth:`abort` or the next run
                with this prefix finishes the switch).
        """
        if self._filled or not self.shards:
            self._write()
        index = {
            **self.index_fields,
            "format": self.file_format,
            "dtype": self.dtype,
            "byte_order": "little",
            "shard_tokens": self.shard_tokens,
            "tokens": sum(shard["tokens"] for shard in self.shards),
            "documents": sum(shard["documents"] for shard in self.shards),
            "shards": self.shards,
        }
        index_name = f"{self._base}_index.json"
        files = [shard["file"] for shard in self.shards] + [index_name]
        self._write_text(index_name, json.dumps(index, indent=1) + "\n")
        try:
            with _signals_deferred(), _folder_lock(self._folder):
                _settle(self._folder, self._base, own=self._staging)
                old = _set_in_place(self._folder, self._base)
                replaces = _digest(self._folder / index_name)
                journal = {"files": files, "old": old, "replaces": replaces}
                self._write_text(JOURNAL, json.dumps(journal) + "\n")  # the commit point
                _fsync_folder(self._staging)
                _switch(self._folder, self._base, self._staging)
        except OSError as error:  # the next run with this prefix rolls it forward
            raise _cannot_write(self.prefix + "_*", error) from None
        self._release()
        return index

    def _write_text(self, name: str, text: str) -> None:
        """A file of the staging folder, written whole and ``fsync``-ed before it gets
        ``name``."""
        temporary = self._staging / f".{name}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as stream:
                stream.write(text)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            raise _cannot_write(self._folder / name, error) from None
        os.replace(temporary, self._staging / name)

    def _write(self) -> None:
        name = f"{self._base}_{len(self.shards):06d}.{self.file_format}"
        buffer = self._buffer if self._buffer is not None else np.empty(0, dtype=self.dtype)
        tokens = buffer[: self._filled]
        try:
            with open(self._staging / name, "xb") as stream:
                write_shard(stream, tokens, self.file_format)
                stream.flush()
                os.fsync(stream.fileno())
        except OSError as error:
            raise _cannot_write(self._folder / name, error) from None
        self.shards.append({"file": name, "tokens": int(tokens.size), "documents": self._documents})
        self._filled = self._documents = 0
