"""``-o`` of ``tokenize`` and ``translate`` respects what the path is.

A regular file is replaced through a temporary file; a symbolic link's target is replaced and
the link stays; a FIFO, a character device and ``/dev/stdout`` are written in place. Non-root
users may write ``/dev/null`` and ``/dev/stdout`` (their folder, ``/dev``, is not theirs).

Every test runs the real command (``python -m tensortext.cli``) in a subprocess.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_process import assert_user_error
from cli_process import run_cli as cli

IS_ROOT = os.name == "posix" and os.geteuid() == 0
NOBODY = 65534

# The smallest input of each command and what it prints for it: cl100k's ID of "hello", and the
# bundled translator's output for "2 3" (tests/cli/test_cli_translate.py checks it on the CPU).
INPUTS = {"tokenize": "hello\n", "translate": "2 3\n"}
EXPECTED = {"tokenize": "15339\n", "translate": "twenty three\n"}
ARGS = {
    "tokenize": ("tokenize", "-e", "cl100k_base", "-i", "in.txt", "--device", "cpu"),
    "translate": ("translate", "-q", "-i", "in.txt", "--device", "cpu"),
}
COMMANDS = sorted(ARGS)


def assert_ok(result: subprocess.CompletedProcess[str], stdout: str = "") -> None:
    assert result.returncode == 0, result.stderr
    assert result.stderr == "" and result.stdout == stdout


@pytest.fixture(params=COMMANDS)
def command(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """``tokenize`` or ``translate``, its input written to ``tmp_path / "in.txt"``."""
    (tmp_path / "in.txt").write_text(INPUTS[request.param], encoding="utf-8")
    return str(request.param)


def test_a_fifo_is_written_in_place(command: str, tmp_path: Path) -> None:
    """The FIFO used to be replaced by a regular file, and its reader got nothing.

    The read end is opened first, without blocking: the command's open then finds its reader
    (a FIFO's writer waits for one), and a test of a command that replaced the FIFO reads an
    end-of-file instead of waiting forever. The output fits in the pipe's buffer.
    """
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        result = cli(tmp_path, *ARGS[command], "-o", fifo.name)
        received = b""
        while chunk := os.read(reader, 1 << 16):  # b"" once the writer has closed its end
            received += chunk
    finally:
        os.close(reader)
    assert_ok(result)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received.decode() == EXPECTED[command]


def test_a_symlink_stays_a_link_to_the_new_content(command: str, tmp_path: Path) -> None:
    """The link used to become a regular file, and its target kept the old content."""
    (tmp_path / "data").mkdir()
    target = tmp_path / "data" / "target.txt"
    target.write_text("old\n", encoding="utf-8")
    target.chmod(0o640)
    (tmp_path / "link.txt").symlink_to("data/target.txt")  # relative, as users write them
    (tmp_path / "second").symlink_to(target)
    (tmp_path / "chain").symlink_to("link.txt")  # a link to the link
    hard = tmp_path / "hard.txt"
    os.link(target, hard)
    for output, want in (("link.txt", "data/target.txt"), ("chain", "link.txt")):
        assert_ok(cli(tmp_path, *ARGS[command], "-o", output))
        assert os.readlink(tmp_path / output) == want
    assert target.read_text(encoding="utf-8") == EXPECTED[command]
    assert (tmp_path / "second").read_text(encoding="utf-8") == EXPECTED[command]
    assert stat.S_IMODE(target.stat().st_mode) == 0o640  # the target keeps its permissions
    # The target is replaced by a new file (atomically): a hard link keeps the old one.
    assert hard.read_text(encoding="utf-8") == "old\n"
    assert sorted(os.listdir(tmp_path / "data")) == ["target.txt"]  # no temporary file left


def test_a_dangling_symlink_gets_its_target(command: str, tmp_path: Path) -> None:
    (tmp_path / "link.txt").symlink_to("new.txt")
    assert_ok(cli(tmp_path, *ARGS[command], "-o", "link.txt"))
    assert os.readlink(tmp_path / "link.txt") == "new.txt"
    assert (tmp_path / "new.txt").read_text(encoding="utf-8") == EXPECTED[command]


def test_a_loop_of_links_is_one_line(command: str, tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    result = cli(tmp_path, *ARGS[command], "-o", "a")
    assert_user_error(result, "cannot write a: too many levels of symbolic links")


def device_folder(folder: Path) -> Path:
    """``/dev``, or as root a private stand-in for it in ``folder``.

    Root can replace ``/dev/null`` or ``/dev/stdout``, and a command that did so (the bug
    these tests catch) would break the machine, so as root the tests write ``folder/dev``:
    a folder only root may write, as ``/dev`` is, holding a character device with
    ``/dev/null``'s numbers and ``stdout``/``stderr`` links to ``/proc/self/fd/1`` and ``2``,
    as Linux's are. A non-root user cannot replace the real ones.
    """
    if not IS_ROOT:
        return Path("/dev")
    dev = folder / "dev"
    dev.mkdir()
    dev.chmod(0o755)
    os.mknod(dev / "null", stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    (dev / "null").chmod(0o666)
    for number, name in enumerate(["stdin", "stdout", "stderr"]):
        (dev / name).symlink_to(f"/proc/self/fd/{number}")
    return dev


def test_a_character_device_stays_a_device(command: str, tmp_path: Path) -> None:
    """As root, ``-o /dev/null`` used to replace the device node by a regular file."""
    null = device_folder(tmp_path) / "null"
    assert_ok(cli(tmp_path, *ARGS[command], "-o", str(null)))
    assert stat.S_ISCHR(os.lstat(null).st_mode)
    assert os.lstat(null).st_rdev == os.stat("/dev/null").st_rdev
    if IS_ROOT:  # no temporary file beside the device
        assert sorted(os.listdir(null.parent)) == ["null", "stderr", "stdin", "stdout"]


def test_dev_stdout_is_written_in_place(command: str, tmp_path: Path) -> None:
    dev = device_folder(tmp_path)
    assert_ok(cli(tmp_path, *ARGS[command], "-o", str(dev / "stdout")), stdout=EXPECTED[command])
    result = cli(tmp_path, *ARGS[command], "-o", str(dev / "stderr"))
    assert result.returncode == 0 and result.stderr == EXPECTED[command]
    assert os.readlink(dev / "stdout").endswith("/fd/1")  # still links
    assert os.readlink(dev / "stderr").endswith("/fd/2")


def test_a_closed_descriptor_is_one_line(command: str, tmp_path: Path) -> None:
    result = cli(tmp_path, *ARGS[command], "-o", "/proc/self/fd/999")  # not open
    assert_user_error(result, "cannot write /proc/self/fd/999: permission denied")


@pytest.mark.parametrize("name", ["null", "stdout"])
def test_a_non_root_user_may_write_dev_null_and_dev_stdout(command: str, name: str) -> None:
    """Both used to be refused as non-root: ``/dev`` is not writable; the files are.

    As root, the command runs with ``nobody``'s real user and group ids, from a folder that user
    can read: permission checks (``access(2)``) use the real ids. The effective ids stay root's,
    because the interpreter may live where ``nobody`` cannot read (``/root/.pyenv``); so the
    command writes the stand-ins of :func:`device_folder`.
    """
    preexec_fn: Callable[[], None] | None = None
    if IS_ROOT:

        def preexec_fn() -> None:
            os.setresgid(NOBODY, 0, 0)
            os.setresuid(NOBODY, 0, 0)

    folder = Path(tempfile.mkdtemp(prefix="tensortext-outputs-"))
    try:
        folder.chmod(0o755)
        (folder / "in.txt").write_text(INPUTS[command], encoding="utf-8")
        (folder / "in.txt").chmod(0o644)
        output = device_folder(folder) / name
        before = sorted(os.listdir(folder))
        result = cli(folder, *ARGS[command], "-o", str(output), preexec_fn=preexec_fn)
        assert sorted(os.listdir(folder)) == before
        assert output.is_symlink() if name == "stdout" else output.is_char_device()
    finally:
        shutil.rmtree(folder)
    assert_ok(result, stdout=EXPECTED[command] if name == "stdout" else "")
