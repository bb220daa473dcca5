"""``tensortext tokenize`` for data preparation: shards byte-identical to a nanoGPT/llm.c-style
script on tiktoken (``encode_ordinary`` per document, the end-of-text token after each, shards
filled to ``--shard-tokens`` with documents running over), for line, whole-file and JSON-lines
inputs; the index; the user errors."""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from oracles.bpe import tiktoken_reference

from tensortext.bpe.registry import RANKS_SHA256
from tensortext.cli import main

MULTILINGUAL = resources.files("tensortext") / "data/demo/multilingual.txt"


def documents() -> list[str]:
    """Real documents: the demo's multilingual lines and paragraphs of this package's source."""
    lines = MULTILINGUAL.read_text(encoding="utf-8").splitlines()
    source = (Path(__file__).parents[2] / "src/tensortext/bpe/host.py").read_text(encoding="utf-8")
    return lines[:120] + [p for p in source.split("\n\n") if p.strip()][:60] + ["", "x"]


def baseline_shards(name: str, docs: list[str], shard_tokens: int, dtype: str) -> list[np.ndarray]:
    """What nanoGPT's fineweb.py does, with the end-of-text token after each document."""
    reference = tiktoken_reference(name)
    stream = []
    for doc in docs:
        stream += [*reference.encode_ordinary(doc), reference.eot_token]
    tokens = np.array(stream, dtype=dtype)
    return [tokens[i : i + shard_tokens] for i in range(0, len(tokens), shard_tokens)]


def baseline_bytes(tokens: np.ndarray, file_format: str) -> bytes:
    if file_format == "npy":
        buffer = io.BytesIO()
        np.save(buffer, tokens)
        return buffer.getvalue()
    header = np.zeros(256, dtype=np.int32)  # llm.c's write_datafile: its GPT-2 or Llama 3 layout
    magic, version = (20240520, 1) if tokens.dtype == np.uint16 else (20240801, 7)
    header[0], header[1], header[2] = magic, version, len(tokens)
    return header.tobytes() + tokens.tobytes()


def run(*argv: str, stdin: str | None = None) -> str:
    out = io.StringIO()
    main(list(argv), stdout=out, stdin=io.StringIO(stdin) if stdin is not None else None)
    return out.getvalue()


def write_inputs(folder: Path, docs: list[str], kind: str) -> list[str]:
    """The documents as one text file of lines, one file per document, JSON lines or Parquet."""
    if kind == "lines":
        (folder / "corpus.txt").write_text("\n".join(docs) + "\n", encoding="utf-8")
        return ["-i", str(folder / "corpus.txt")]
    if kind == "whole-file":
        for number, doc in enumerate(docs):
            (folder / f"doc_{number:04d}.txt").write_text(doc, encoding="utf-8")
        return ["-i", str(folder / "doc_*.txt"), "--whole-file"]
    if kind == "parquet":
        table = pa.table({"id": list(range(len(docs))), "text": docs})
        pq.write_table(table, folder / "corpus.parquet", row_group_size=50)  # several groups
        return ["-i", str(folder / "corpus.parquet")]
    records = "".join(json.dumps({"id": n, "text": doc}) + "\n" for n, doc in enumerate(docs))
    (folder / "corpus.jsonl").write_text(records, encoding="utf-8")
    return ["-i", str(folder / "corpus.jsonl")]


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "gpt2"])
@pytest.mark.parametrize("file_format", ["npy", "bin"])
@pytest.mark.parametrize("kind", ["lines", "whole-file", "jsonl", "parquet"])
def test_shards_equal_the_baseline_scripts(
    tmp_path: Path, name: str, file_format: str, kind: str
) -> None:
    docs = documents()
    if kind == "lines":
        docs = [doc.replace("\n", " ") for doc in docs]  # one document per line
    inputs = write_inputs(tmp_path, docs, kind)
    prefix = tmp_path / "out" / "shard"
    prefix.parent.mkdir()
    argv = ["tokenize", "-e", name, *inputs, "-o", str(prefix), "--format", file_format]
    # Small batches and shards: documents run over shard ends and batch ends.
    run(*argv, "--append-eot", "--ordinary", "--shard-tokens", "1000", "--batch-bytes", "3000")
    dtype = "uint16" if name == "gpt2" else "uint32"  # the default: the narrowest that fits
    expected = baseline_shards(name, docs, 1000, dtype)
    index = json.loads((tmp_path / "out" / "shard_index.json").read_text())
    assert [shard["file"] for shard in index["shards"]] == [
        f"shard_{n:06d}.{file_format}" for n in range(len(expected))
    ]
    for shard, tokens in zip(index["shards"], expected, strict=True):
        assert (prefix.parent / shard["file"]).read_bytes() == baseline_bytes(tokens, file_format)
        assert shard["tokens"] == len(tokens)
    assert index["tokens"] == sum(map(len, expected))
    assert index["documents"] == len(docs)
    assert index["encoding"] == name and index["dtype"] == dtype
    assert index["vocab_sha256"] == RANKS_SHA256[name if name != "gpt2" else "r50k_base"]


def test_documents_per_shard_count_where_they_end(tmp_path: Path) -> None:
    """With --append-eot, each document ends with its end-of-text token: a shard's count is the
    number of those tokens in it."""
    docs = documents()
    run("tokenize", "-e", "cl100k_base", *write_inputs(tmp_path, docs, "jsonl"), "-o",
        str(tmp_path / "s"), "--format", "npy", "--append-eot", "--shard-tokens", "700",
        "-q")  # fmt: skip
    index = json.loads((tmp_path / "s_index.json").read_text())
    for shard in index["shards"]:
        tokens = np.load(tmp_path / shard["file"])
        assert shard["documents"] == int(np.count_nonzero(tokens == 100257))


def test_ids_format_reads_json_lines_and_appends_eot(tmp_path: Path) -> None:
    docs = ["hello world", "", "日本語 😀"]
    inputs = write_inputs(tmp_path, docs, "jsonl")
    out = run("tokenize", "-e", "cl100k_base", *inputs, "--append-eot")
    reference = tiktoken_reference("cl100k_base")
    assert out == "".join(
        " ".join(map(str, [*reference.encode(doc), reference.eot_token])) + "\n" for doc in docs
    )


def test_several_inputs_in_order_and_stdin(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("first\n", encoding="utf-8")
    (tmp_path / "b.jsonl").write_text('{"body": "second"}\n\n', encoding="utf-8")
    argv = ["tokenize", "-e", "cl100k_base", "-i", str(tmp_path / "a.txt"), "-i"]
    out = run(*argv, str(tmp_path / "b.jsonl"), "-i", "-", "--field", "body", stdin="third\n")
    reference = tiktoken_reference("cl100k_base")
    assert out.splitlines() == [
        " ".join(map(str, reference.encode(text))) for text in ["first", "second", "third"]
    ]


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (
            b'{"text": "a"}\n{"txt": "b"}\n',
            (),
            "corpus.jsonl, line 2: no field 'text' (it has: txt); pass --field",
        ),
        (b'{"text": 3}\n', (), "corpus.jsonl, line 1: field 'text' is a int, not a string"),
        (b'["text"]\n', (), "corpus.jsonl, line 1: a JSON list, not an object"),
        (b'{"text": "a"\n', (), "corpus.jsonl, line 1: not JSON"),
        (b'{"text": "\xff"}\n', (), "corpus.jsonl, line 1: invalid UTF-8"),
        (
            b'{"text": "a"}\n',
            ("--format", "npy"),
            "--format npy writes shard files: pass -o PREFIX",
        ),
        (b'{"text": "a"}\n', ("--format", "npy", "--decode", "-o", "x"), "--decode reads one file"),
        (b'{"text": "a"}\n', ("--shard-tokens", "0"), "--shard-tokens must be between 1 and"),
        (b'{"text": "a"}\n', ("--batch-bytes", str(2**31)), "--batch-bytes must be between 1"),
        (b'{"text": "a"}\n', ("-i", "nothing*.txt"), "-i nothing*.txt: no file matches"),
        (b'{"text": "a"}\n', ("-i", "missing.txt"), "cannot read missing.txt: no such file"),
    ],
)
def test_user_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    extra: tuple[str, ...],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus.jsonl").write_bytes(content)
    with pytest.raises(SystemExit) as error:
        run("tokenize", "-e", "cl100k_base", "-i", "corpus.jsonl", *extra)
    assert error.value.code == 2
    assert message in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["corpus.jsonl"]  # nothing written


def test_uint16_is_refused_when_ids_do_not_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "in.txt").write_text("x\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        run("tokenize", "-e", "o200k_base", "-i", str(tmp_path / "in.txt"), "-o",
            str(tmp_path / "s"), "--format", "bin", "--dtype", "uint16")  # fmt: skip
    assert "--dtype uint16 cannot hold o200k_base's IDs (up to 200018)" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt"]


def test_summary_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in.txt").write_text("a b\nc\n", encoding="utf-8")
    run("tokenize", "-e", "gpt2", "-i", str(tmp_path / "in.txt"), "-o", str(tmp_path / "s"),
        "--format", "npy")  # fmt: skip
    err = capsys.readouterr().err
    assert err.startswith("tokenize: 2 documents, 3 tokens from 0.0 MB in ")
    assert "tokens/s); wrote 1 shards" in err


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"body": ["a"]}, "corpus.parquet: no column 'text' (it has: body); pass --field"),
        ({"text": [1, 2]}, "corpus.parquet: column 'text' holds int64, not strings"),
        ({"text": ["a", None]}, "corpus.parquet, row 2: 'text' is null"),
        (None, "corpus.parquet: not a Parquet file"),
    ],
    ids=["no column", "not strings", "null", "not parquet"],
)
def test_parquet_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    table: dict[str, list[object]] | None,
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    if table is None:
        (tmp_path / "corpus.parquet").write_text("text\na\n", encoding="utf-8")
    else:
        pq.write_table(pa.table(table), tmp_path / "corpus.parquet")
    with pytest.raises(SystemExit) as error:
        run("tokenize", "-e", "cl100k_base", "-i", "corpus.parquet", "-o", "s", "--format", "npy")
    assert error.value.code == 2
    assert message in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["corpus.parquet"]


def test_a_failed_run_keeps_the_earlier_shards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The documents after the first shards hold a disallowed special token: the run fails,
    and the shards and index of the earlier run with that prefix are as they were."""
    docs = [doc.replace("\n", " ") for doc in documents()]
    inputs = write_inputs(tmp_path, docs, "lines")
    argv = ["tokenize", "-e", "gpt2", *inputs, "-o", str(tmp_path / "s"), "--format", "bin"]
    run(*argv, "--shard-tokens", "500", "-q")
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    (tmp_path / "corpus.txt").write_text("\n".join([*docs, "<|endoftext|>"]), encoding="utf-8")
    before["corpus.txt"] = (tmp_path / "corpus.txt").read_bytes()
    with pytest.raises(SystemExit):
        run(*argv, "--shard-tokens", "300", "--batch-bytes", "2000", "-q")
    assert "special token '<|endoftext|>'" in capsys.readouterr().err
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before
