"""``tensortext tokenize``: inputs that used to end in a traceback, a vague message or gigabytes
of memory (deeply nested JSON, invalid UTF-8 or a corrupt page in Parquet, a document of hundreds
of MB, a full disk, Ctrl-C while torch imports) end in one line naming the file, and leave the
user's files as they were.

Every command runs the real ``python -m tensortext.cli`` in a subprocess, but for the full disk
(ENOSPC injected into the shard writer, in this process).
"""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cli_process import COMMAND, TIMEOUT

from tensortext.cli import corpus, main, shards
from tensortext.cli.common import CliError


def tokenize(folder: Path, *args: str, shell: str = "") -> subprocess.CompletedProcess[str]:
    """``tensortext tokenize -e cl100k_base ARGS`` in ``folder`` (after ``shell`` commands)."""
    argv = [*COMMAND, "tokenize", "-e", "cl100k_base", *args]
    if shell:
        argv = ["sh", "-c", f'{shell}; exec "$@"', "sh", *argv]
    return subprocess.run(
        argv,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        stdin=subprocess.DEVNULL,
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


def assert_one_line(result: subprocess.CompletedProcess[str], status: int, message: str) -> None:
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("tensortext: error: ")
    assert message in result.stderr, result.stderr


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "p_000000.npy").write_bytes(b"an earlier run's shard")
    index = '{"shards": [{"file": "p_000000.npy"}]}\n'  # it lists its shard
    (tmp_path / "p_index.json").write_text(index, encoding="utf-8")
    return tmp_path


def test_deeply_nested_json(folder: Path) -> None:
    (folder / "in.jsonl").write_text('{"text": "fine"}\n' + "[" * 100_000 + "\n", "utf-8")
    before = snapshot(folder)
    result = tokenize(folder, "-i", "in.jsonl", "-o", "p", "--format", "npy")
    assert_one_line(result, 2, "in.jsonl, line 2: JSON nested too deeply")
    assert snapshot(folder) == before


def invalid_utf8_strings() -> pa.Array:
    """``["ok", "bad\\xff\\xfe", "end"]`` as a string array (pyarrow checks nothing here)."""
    offsets = pa.py_buffer(b"".join(n.to_bytes(4, "little") for n in (0, 2, 7, 10)))
    return pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(b"okbad\xff\xfeend")])


def test_invalid_utf8_in_parquet(folder: Path) -> None:
    pq.write_table(pa.table({"text": invalid_utf8_strings()}), folder / "in.parquet")
    before = snapshot(folder)
    result = tokenize(folder, "-i", "in.parquet", "-o", "p", "--format", "npy")
    assert_one_line(result, 2, "in.parquet, row 2: column 'text' holds invalid UTF-8")
    assert snapshot(folder) == before


def corrupt_parquet(path: Path) -> None:
    """A snappy Parquet file with six bytes of its first page overwritten where that breaks
    reading it (the page header or the compressed data, depending on pyarrow's layout)."""
    rows = [f"row {n}: " + "alpha beta gamma delta " * (n % 7 + 1) for n in range(300)]
    pq.write_table(pa.table({"text": rows}), path, compression="snappy", use_dictionary=False)
    page = pq.ParquetFile(path).metadata.row_group(0).column(0).data_page_offset
    intact = path.read_bytes()
    for offset in range(page + 4, page + 64, 2):
        data = bytearray(intact)
        data[offset : offset + 6] = b"\xff" * 6
        path.write_bytes(data)
        try:
            for batch in pq.ParquetFile(path).iter_batches():
                batch.column(0).to_pylist()
        except (OSError, pa.ArrowException):
            return
    raise AssertionError("no overwritten bytes broke the page")


def test_corrupt_parquet_page(folder: Path) -> None:
    corrupt_parquet(folder / "in.parquet")
    before = snapshot(folder)
    result = tokenize(folder, "-i", "in.parquet", "-o", "p", "--format", "npy")
    assert_one_line(result, 2, "in.parquet: cannot read its Parquet data (")
    assert snapshot(folder) == before


# Text lines and files are cut into parts (test_cli_long_documents.py) where a line end is
# followed by a letter or a space lies between letters; these have no such place.
@pytest.mark.parametrize(
    ("name", "content", "extra", "where"),
    [
        ("cr.txt", b"9\r" * 600, (), "cr.txt, line 1"),  # CR-only line ends: one line
        ("in.jsonl", b'{"text": "a"}\n{"text": "' + b"b" * 1000 + b'"}\n', (), "in.jsonl, line 2"),
        ("book.txt", b"1234\n" * 240, ("--whole-file",), "book.txt"),
        ("in.parquet", None, (), "in.parquet, row 2"),
    ],
    ids=["cr-only", "jsonl", "whole-file", "parquet"],
)
def test_a_document_above_the_limit_is_refused(
    folder: Path, name: str, content: bytes | None, extra: tuple[str, ...], where: str
) -> None:
    if content is None:
        pq.write_table(pa.table({"text": ["short", "x" * 1001]}), folder / name)
    else:
        (folder / name).write_bytes(content)
    before = snapshot(folder)
    args = ("-i", name, "-o", "p", "--format", "npy", "--max-document-bytes", "1000", *extra)
    result = tokenize(folder, *args)
    assert_one_line(result, 2, f"{where}: a document ")
    assert "of more than 1000 bytes; split it, or raise --max-document-bytes" in result.stderr
    assert snapshot(folder) == before


def test_a_document_of_exactly_the_limit_is_encoded(tmp_path: Path) -> None:
    (tmp_path / "in.txt").write_bytes(b"a" * 1000 + b"\n" + b"b" * 1000)
    out = io.StringIO()
    main(["tokenize", "-e", "gpt2", "-i", str(tmp_path / "in.txt"), "--max-document-bytes",
          "1000"], stdout=out)  # fmt: skip
    assert len(out.getvalue().splitlines()) == 2


def test_a_file_size_limit_is_one_line(folder: Path) -> None:
    """The shard is larger than ``ulimit -f`` allows: ``np.save`` said "N requested and M
    written"; the writer now says why, naming the shard."""
    (folder / "in.txt").write_text("hello world\n" * 60_000, encoding="utf-8")
    before = snapshot(folder)
    args = ("-i", "in.txt", "-o", "p", "--format", "npy", "--shard-tokens", "100000", "-q")
    result = tokenize(folder, *args, shell="ulimit -f 200; trap '' XFSZ")
    assert_one_line(result, 1, "cannot write p_000000.npy: file too large")
    assert snapshot(folder) == before


def test_a_full_disk_is_one_line(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full_disk(stream: io.BufferedWriter, tokens: object, file_format: str) -> None:
        stream.write(b"\x93NUMPY")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(shards, "write_shard", full_disk)
    monkeypatch.chdir(folder)
    (folder / "in.txt").write_text("hello world\n", encoding="utf-8")
    before = snapshot(folder)
    with pytest.raises(SystemExit) as error:
        main(["tokenize", "-e", "gpt2", "-i", "in.txt", "-o", "p", "--format", "npy", "-q"])
    assert error.value.code == 1
    assert capsys.readouterr().err == (
        "tensortext: error: cannot write p_000000.npy: no space left on device\n"
    )
    assert snapshot(folder) == before
    assert [path.name for path in folder.iterdir() if path.name.startswith(".")] == []


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
def test_ctrl_c_while_torch_imports(tmp_path: Path) -> None:
    """SIGINT once the first torch module is imported (``-X importtime`` prints each as it
    ends): one line and 130, no traceback. Standard input stays open, so the command cannot end
    before the signal lands, wherever that is."""
    process = subprocess.Popen(
        [*COMMAND, "tokenize", "-e", "gpt2"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"},
    )
    assert process.stderr is not None
    seen = b""
    while b" torch" not in seen:
        chunk = os.read(process.stderr.fileno(), 65536)
        assert chunk, "the command ended before importing torch"
        seen += chunk
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=TIMEOUT)
    lines = [line for line in (seen + rest).decode().splitlines() if "import time:" not in line]
    assert (process.returncode, lines) == (130, ["tensortext: interrupted"])


def test_an_error_before_encoding_leaves_no_staging_folder(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while the progress bar is made (tqdm imports): exit 130, the folder untouched."""

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(corpus.Progress, "__init__", interrupted)
    monkeypatch.chdir(folder)
    (folder / "in.txt").write_text("hello world\n", encoding="utf-8")
    before = snapshot(folder)
    with pytest.raises(SystemExit) as error:
        main(["tokenize", "-e", "gpt2", "-i", "in.txt", "-o", "p", "--format", "npy", "-q"])
    assert (error.value.code, capsys.readouterr().err) == (130, "tensortext: interrupted\n")
    assert snapshot(folder) == before
    assert [path.name for path in folder.iterdir() if path.name.startswith(".")] == []


def test_a_last_line_one_byte_above_the_limit_is_refused(folder: Path) -> None:
    """With no line end to count, ``limit + 1`` bytes are one too many."""
    (folder / "in.txt").write_bytes(b"1234\n" + b"9" * 1001)
    before = snapshot(folder)
    args = ("-i", "in.txt", "-o", "p", "--format", "npy", "--max-document-bytes", "1000")
    result = tokenize(folder, *args)
    assert_one_line(result, 2, "in.txt, line 2: a document of more than 1000 bytes")
    assert snapshot(folder) == before


def test_parquet_values_become_strings_a_batch_bytes_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each conversion holds about --batch-bytes; a value above the limit is refused from its
    size, never converted."""
    values = ["x" * 100] * 50 + ["y" * 5000, "z"]
    pq.write_table(pa.table({"text": values}), tmp_path / "in.parquet")
    converted: list[int] = []
    strings = corpus._strings

    def counting(*args: object) -> list[str | None]:
        texts = strings(*args)  # type: ignore[arg-type]
        converted.append(sum(len(text or "") for text in texts))
        return texts

    monkeypatch.setattr(corpus, "_strings", counting)
    documents = corpus.read_documents(
        [str(tmp_path / "in.parquet")], whole_file=False, field="text", stdin=None,
        max_document_bytes=1000, batch_bytes=1000,
    )  # fmt: skip
    with pytest.raises(CliError, match=r"in\.parquet, row 51: a document of more than 1000"):
        for _ in documents:
            pass
    assert max(converted) <= 1000
    assert sum(converted) == 5000  # the 50 values before it, none of the long one
