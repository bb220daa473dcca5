"""File formats (``tensortext.formats``): text, and outputs that respect what the path is.

* :func:`read_text`, :func:`read_lines`: files and standard input, errors naming file and line.
* :func:`atomic_write` / :func:`output_target`: a regular file is replaced only on success; a
  symbolic link's target is replaced and the link stays; a FIFO, a device or a descriptor is
  written in place.
* Importing the module loads no LMBR; the evidence readers' old names still work.
"""

from __future__ import annotations

import io
import os
import re
import socket
import stat
import subprocess
import sys

import pytest

from tensortext.formats import atomic_write, output_target, read_lines, read_text

# --------------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------------


def test_read_text_from_files_and_stdin(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes("é\r\nline\u2028two\nlast".encode())
    assert read_text(path) == read_text(str(path)) == "é\r\nline\u2028two\nlast"
    assert read_lines(path) == ["é\r", "line\u2028two", "last"]  # \n only
    assert read_lines(None, io.StringIO("a\n\nb\n")) == ["a", "", "b"]
    assert read_lines("-", io.StringIO("")) == []
    separators = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\r"
    assert read_lines(None, io.StringIO(f"a{separators}b\nc")) == [f"a{separators}b", "c"]
    # A binary stdin is decoded as UTF-8 too.
    stdin = io.TextIOWrapper(io.BytesIO(b"x\ny\n"), encoding="latin-1")
    assert read_lines(None, stdin) == ["x", "y"]


def test_read_text_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok\nstill ok\nbad \xff byte\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 3: invalid UTF-8 (byte 16)")):
        read_text(path)
    with pytest.raises(OSError, match=re.escape(f"cannot read {tmp_path / 'missing'}")):
        read_lines(tmp_path / "missing")


def test_read_text_takes_a_codec(tmp_path):
    path = tmp_path / "latin.txt"
    path.write_bytes("café\n".encode("latin-1"))
    assert read_lines(path, encoding="latin-1") == ["café"]
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 1: invalid UTF-8 (byte 3)")):
        read_lines(path)
    with pytest.raises(ValueError, match="'klingon' is not a text encoding"):
        read_lines(tmp_path / "never-read", encoding="klingon")  # checked before the file


# --------------------------------------------------------------------------------------------
# atomic_write
# --------------------------------------------------------------------------------------------


def test_atomic_write_replaces_the_file_only_on_success(tmp_path):
    path = tmp_path / "out.txt"
    with atomic_write(path) as stream:
        stream.write("first\n")
        assert not path.exists()  # nothing visible before the block ends
    assert path.read_text(encoding="utf-8") == "first\n"
    with pytest.raises(RuntimeError, match="interrupted"), atomic_write(path) as stream:
        stream.write("half")
        raise RuntimeError("interrupted")
    assert path.read_text(encoding="utf-8") == "first\n"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]  # the temporary file is gone
    with atomic_write(str(path), "wb") as stream:
        stream.write("ü".encode())
    assert path.read_bytes() == "ü".encode()


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
def test_atomic_write_permissions(tmp_path):
    new = tmp_path / "new.txt"
    with atomic_write(new) as stream:
        stream.write("x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    kept = tmp_path / "kept.txt"
    kept.write_text("old")
    kept.chmod(0o600)
    with atomic_write(kept) as stream:
        stream.write("new")
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600 and kept.read_text() == "new"


def test_atomic_write_errors(tmp_path):
    with pytest.raises(ValueError, match="mode must be 'w' or 'wb'"), atomic_write(tmp_path, "a"):
        pass
    with pytest.raises(FileNotFoundError), atomic_write(tmp_path / "no" / "such" / "dir.txt"):
        pass


# --------------------------------------------------------------------------------------------
# atomic_write on what is not a regular file
# --------------------------------------------------------------------------------------------


def test_a_symlink_has_its_target_replaced(tmp_path):
    target = tmp_path / "data" / "target.txt"
    target.parent.mkdir()
    target.write_text("old")
    (tmp_path / "link").symlink_to("data/target.txt")
    (tmp_path / "chain").symlink_to(tmp_path / "link")
    assert output_target(tmp_path / "chain") == ("replace", str(target), None)
    with atomic_write(tmp_path / "chain") as stream:
        stream.write("new")
        assert target.read_text() == "old"  # still atomic: replaced when the block ends
    assert target.read_text() == "new"
    assert os.readlink(tmp_path / "link") == "data/target.txt"
    assert sorted(os.listdir(target.parent)) == ["target.txt"]
    with pytest.raises(RuntimeError), atomic_write(tmp_path / "link") as stream:
        stream.write("half")
        raise RuntimeError
    assert target.read_text() == "new" and sorted(os.listdir(target.parent)) == ["target.txt"]


def test_a_dangling_symlink_has_its_target_created(tmp_path):
    (tmp_path / "link").symlink_to("new.txt")
    with atomic_write(tmp_path / "link", "wb") as stream:
        stream.write(b"made")
    assert os.readlink(tmp_path / "link") == "new.txt"
    assert (tmp_path / "new.txt").read_bytes() == b"made"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # so that the writer's open returns
    try:
        assert output_target(fifo).how == "in_place"
        with atomic_write(fifo) as stream:
            stream.write("through the pipe\n")
        assert os.read(reader, 100) == b"through the pipe\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["fifo"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="descriptor paths (Linux)")
def test_a_descriptor_path_is_written_through_a_duplicate(tmp_path):
    read_end, write_end = os.pipe()
    try:
        for path in (f"/dev/fd/{write_end}", f"/proc/self/fd/{write_end}"):
            assert output_target(path) == ("descriptor", path, write_end)
            with atomic_write(path) as stream:
                stream.write("a")
        os.write(write_end, b"b")  # the caller's descriptor stays open
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as stream:
        assert stream.read() == b"aab"
    assert output_target("/dev/stdout").descriptor == 1
    assert output_target("/dev/stderr").descriptor == 2
    (tmp_path / "out").symlink_to("/dev/stdout")  # a link to it is the descriptor too
    assert output_target(tmp_path / "out").descriptor == 1
    with pytest.raises(OSError), atomic_write("/proc/self/fd/999"):  # not open
        pass


def test_what_cannot_be_written_is_refused_when_the_block_starts(tmp_path):
    with pytest.raises(IsADirectoryError, match="it is a directory"), atomic_write(tmp_path):
        pass
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    with pytest.raises(OSError, match="too many levels of symbolic links"):
        output_target(tmp_path / "a")
    if hasattr(socket, "AF_UNIX"):
        server = socket.socket(socket.AF_UNIX)
        try:
            server.bind(str(tmp_path / "sock"))
            with pytest.raises(OSError, match="it is a socket, not a file"):
                atomic_write(tmp_path / "sock").__enter__()
        finally:
            server.close()
    assert sorted(os.listdir(tmp_path)) == ["a", "b"] + (
        ["sock"] if hasattr(socket, "AF_UNIX") else []
    )


# --------------------------------------------------------------------------------------------
# No LMBR below the command line's text readers
# --------------------------------------------------------------------------------------------


LOADS_NO_LMBR = """
import sys
{body}
loaded = sorted(m for m in sys.modules if m.startswith("tensortext.lmbr"))
assert not loaded, loaded
"""


@pytest.mark.parametrize(
    "body",
    [
        "import tensortext.formats",
        "import tensortext.formats as f; f.read_lines; f.atomic_write; f.__all__",
        "from tensortext.formats import *",
        "import io; from tensortext.cli import main\n"
        "main(['bleu', 'r.txt', '-i', 'r.txt', '--device', 'cpu'], stdout=io.StringIO())",
    ],
    ids=["import", "attributes", "star", "bleu-command"],
)
def test_formats_and_the_bleu_command_load_no_lmbr(tmp_path, body):
    (tmp_path / "r.txt").write_text("1 2 3 4\n", encoding="utf-8")
    code = LOADS_NO_LMBR.format(body=body)
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr


def test_the_evidence_readers_keep_their_formats_names():
    import tensortext.formats as formats
    import tensortext.lmbr as lmbr

    assert formats.read_nbest is lmbr.read_nbest
    assert formats.write_nbest is lmbr.write_nbest
    assert formats.read_ngram_posterior_files is lmbr.read_ngram_posterior_files
    with pytest.raises(AttributeError, match="has no attribute 'read_posteriors'"):
        formats.read_posteriors  # noqa: B018
