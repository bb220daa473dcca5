"""``tensortext tokenize --format npy|raw|bin`` and ``--prepend-eot``: every shard, read back by
the loader logic of the trainer that reads its layout (``tests/oracles/trainers.py``: nanoGPT's
``np.memmap``, build-nanogpt's ``np.load``, llm.c's C dataloader and Python readers), holds
tiktoken's tokens of the input; ``--prepend-eot`` shards equal build-nanogpt's and llm.c's
``fineweb.py`` byte for byte; the help says which trainer reads which layout and matches the code.

The commands run in this process (``tensortext.cli.main``): the subprocess behaviour of shard
sets is tested in ``test_cli_shards.py``.
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_reference
from oracles.trainers import (
    Refused,
    build_nanogpt_load_tokens,
    fineweb_shards,
    llmc_c_dataloader_init,
    llmc_c_load_shard,
    llmc_train_gpt2_py_load,
    llmc_train_llama3_py_load,
    llmc_write_datafile,
    nanogpt_train_data,
)
from strategies import SETTINGS

from tensortext.cli import long_documents, main
from tensortext.cli.shard_formats import write_shard

DOCS = ["hello world", "", "日本語 😀 👨\u200d👩\u200d👧", "a", "x" * 50, " \t tabs\r and CR",
        "<|endoftext|> as text", "It's 2024!"] * 3  # fmt: skip
"""Named cases: empty, one token, emoji and ZWJ sequences, a long run, CR inside a line, the
end-of-text token's text (encoded as ordinary text with --ordinary, as fineweb.py does)."""
MODEL_DESC = {"uint16": "gpt-2", "uint32": "llama-3"}
PYTHON_READERS = {"uint16": llmc_train_gpt2_py_load, "uint32": llmc_train_llama3_py_load}


def tokenize(folder: Path, docs: list[str], *flags: str, name: str = "gpt2") -> dict[str, Any]:
    """``tensortext tokenize -e NAME`` of ``docs`` (a line each) to the prefix ``folder/p``;
    the index."""
    source = folder / "in.txt"
    source.write_text("".join(doc + "\n" for doc in docs), encoding="utf-8", newline="")
    argv = ["tokenize", "-e", name, "-i", str(source), "-o", str(folder / "p"), "--ordinary"]
    assert main([*argv, "-q", *flags], stdout=io.StringIO()) == 0
    index: dict[str, Any] = json.loads((folder / "p_index.json").read_text(encoding="utf-8"))
    return index


def stream(name: str, docs: list[str], eot: str | None) -> list[int]:
    """tiktoken's ``encode_ordinary`` of each document, the end-of-text token ``before`` or
    ``after`` each if asked."""
    reference = tiktoken_reference(name)
    tokens: list[int] = []
    for doc in docs:
        ids = reference.encode_ordinary(doc)
        tokens += {"before": [reference.eot_token, *ids], "after": [*ids, reference.eot_token],
                   None: ids}[eot]  # fmt: skip
    return tokens


def shard_paths(folder: Path, index: dict[str, Any]) -> list[Path]:
    return [folder / shard["file"] for shard in index["shards"]]


def assert_tokens(read: list[np.ndarray], expected: list[int]) -> None:
    """The shards read, one after another, equal ``expected``; else the first difference."""
    tokens = np.concatenate(read).tolist() if read else []
    first = next((i for i, (a, b) in enumerate(zip(tokens, expected, strict=False)) if a != b),
                 None)  # fmt: skip
    assert (len(tokens), first) == (len(expected), None), (tokens[:20], expected[:20])


@pytest.mark.parametrize(
    ("name", "dtype"), [("gpt2", "uint16"), ("cl100k_base", "uint32"), ("o200k_base", "uint32")]
)
def test_raw_shards_are_what_nanogpt_memmaps(tmp_path: Path, name: str, dtype: str) -> None:
    """No header: nanoGPT's ``np.memmap(path, dtype=...)`` of each shard, and of the shards
    joined with ``cat`` (its one ``train.bin``), gives the tokens; the index names the dtype."""
    index = tokenize(tmp_path, DOCS, "--format", "raw", "--append-eot", "--shard-tokens", "37",
                     name=name)  # fmt: skip
    assert (index["format"], index["dtype"], index["byte_order"]) == ("raw", dtype, "little")
    paths = shard_paths(tmp_path, index)
    assert [path.suffix for path in paths] == [".raw"] * len(paths)
    expected = stream(name, DOCS, "after")
    assert_tokens([nanogpt_train_data(path, dtype=np.dtype(dtype)) for path in paths], expected)
    assert [path.stat().st_size for path in paths] == [
        shard["tokens"] * np.dtype(dtype).itemsize for shard in index["shards"]
    ]
    (tmp_path / "train.bin").write_bytes(b"".join(path.read_bytes() for path in paths))
    if dtype == "uint16":  # nanoGPT's train.py as it is, dtype=np.uint16
        assert_tokens([nanogpt_train_data(tmp_path / "train.bin")], expected)
    else:
        assert_tokens([nanogpt_train_data(tmp_path / "train.bin", dtype=np.uint32)], expected)


@pytest.mark.parametrize(
    ("name", "flags", "dtype"),
    [
        ("gpt2", [], "uint16"),
        ("gpt2", ["--dtype", "uint32"], "uint32"),
        ("cl100k_base", [], "uint32"),
        ("o200k_base", [], "uint32"),
    ],
    ids=["gpt2", "gpt2-uint32", "cl100k", "o200k"],
)
def test_bin_shards_are_llmc_data_files(
    tmp_path: Path, name: str, flags: list[str], dtype: str
) -> None:
    """Byte for byte what llm.c's ``fineweb.py`` writes (``write_datafile`` with the
    ``model_desc`` of the dtype); read by the C dataloader (the ``llama3`` branch's for both
    layouts, master's for GPT-2 only) and by ``train_gpt2.py`` or ``train_llama3.py``."""
    index = tokenize(tmp_path, DOCS, "--format", "bin", "--prepend-eot", "--shard-tokens", "64",
                     *flags, name=name)  # fmt: skip
    assert (index["dtype"], index["prepend_eot"]) == (dtype, True)
    paths = shard_paths(tmp_path, index)
    model_desc = MODEL_DESC[dtype]
    expected = fineweb_shards(DOCS, tiktoken_reference(name), 64, np.dtype(dtype))
    assert len(paths) == len(expected) > 2
    for path, tokens in zip(paths, expected, strict=True):
        assert path.read_bytes() == llmc_write_datafile(tokens, model_desc)
    assert_tokens([PYTHON_READERS[dtype](path) for path in paths], stream(name, DOCS, "before"))
    assert_tokens([llmc_c_load_shard(path, branch="llama3") for path in paths],
                  stream(name, DOCS, "before"))  # fmt: skip
    shortest = min(shard["tokens"] for shard in index["shards"])
    together = llmc_c_dataloader_init(paths, B=1, T=shortest - 1, branch="llama3")
    assert_tokens([together], stream(name, DOCS, "before"))
    if dtype == "uint16":
        assert_tokens([llmc_c_load_shard(path) for path in paths], stream(name, DOCS, "before"))
    else:
        with pytest.raises(Refused, match="bad magic 20240801"):  # master reads GPT-2 files only
            llmc_c_load_shard(paths[0])


def test_npy_shards_with_prepend_eot_are_build_nanogpts_fineweb_shards(tmp_path: Path) -> None:
    """``np.save`` of what build-nanogpt's ``fineweb.py`` builds, read by its ``load_tokens``."""
    index = tokenize(tmp_path, DOCS, "--format", "npy", "--prepend-eot", "--shard-tokens", "50",
                     "--batch-bytes", "20")  # fmt: skip
    expected = fineweb_shards(DOCS, tiktoken_reference("gpt2"), 50)
    paths = shard_paths(tmp_path, index)
    assert len(paths) == len(expected) > 2
    for path, tokens in zip(paths, expected, strict=True):
        saved = io.BytesIO()
        np.save(saved, tokens)
        assert path.read_bytes() == saved.getvalue()
        assert build_nanogpt_load_tokens(path).tolist() == tokens.tolist()
    assert index["documents"] == len(DOCS)


documents = st.lists(
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=20),
    max_size=25,
)


@SETTINGS
@given(
    docs=documents,
    name=st.sampled_from(["gpt2", "cl100k_base"]),
    file_format=st.sampled_from(["npy", "raw", "bin"]),
    eot=st.sampled_from([None, "before", "after"]),
    shard_tokens=st.integers(1, 120),
    batch_bytes=st.integers(1, 64),
    workers=st.sampled_from(["1", "2"]),
)
def test_every_layout_is_read_back_by_its_trainer(
    docs: list[str],
    name: str,
    file_format: str,
    eot: str | None,
    shard_tokens: int,
    batch_bytes: int,
    workers: str,
) -> None:
    """Random documents, shard sizes and batches: the trainer's reader of each layout gets
    tiktoken's tokens, cut every ``--shard-tokens``; with ``--prepend-eot``, and no document
    longer than a shard (where ``fineweb.py`` itself fails), the very shards of ``fineweb.py``."""
    flags = ["--format", file_format, "--shard-tokens", str(shard_tokens), "--batch-bytes",
             str(batch_bytes), "--workers", workers]  # fmt: skip
    flags += {None: [], "before": ["--prepend-eot"], "after": ["--append-eot"]}[eot]
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        index = tokenize(folder, docs, *flags, name=name)
        dtype = index["dtype"]
        paths = shard_paths(folder, index)
        if file_format == "npy":
            read = [build_nanogpt_load_tokens(path) for path in paths]
        elif file_format == "raw" and not index["tokens"]:  # numpy cannot memmap an empty file
            assert [path.stat().st_size for path in paths] == [0]
            read = [np.zeros(0, dtype=dtype)]
        elif file_format == "raw":
            read = [nanogpt_train_data(path, dtype=np.dtype(dtype)) for path in paths]
        else:
            read = [PYTHON_READERS[dtype](path) for path in paths]
            if index["tokens"]:  # the C loader refuses an empty shard (none but an empty input)
                read_by_c = [llmc_c_load_shard(path, branch="llama3") for path in paths]
                assert_tokens(read_by_c, stream(name, docs, eot))
        expected = stream(name, docs, eot)
        assert_tokens(read, expected)
        assert [len(tokens) for tokens in read] == [
            min(shard_tokens, len(expected) - start)
            for start in range(0, max(len(expected), 1), shard_tokens)
        ]
        if eot == "before" and docs:  # (fineweb.py writes no shard for no documents)
            try:
                shards = fineweb_shards(docs, tiktoken_reference(name), shard_tokens, dtype)
            except Refused:  # a document longer than a shard
                return
            assert [tokens.tolist() for tokens in read] == [tokens.tolist() for tokens in shards]


def test_prepend_eot_goes_before_the_first_part_of_a_long_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long line is encoded in parts of about 16 characters, in batches of a few parts: the
    end-of-text token comes once, before its first part, wherever the batches end."""
    monkeypatch.setattr(long_documents, "PART_CHARS", 16)
    monkeypatch.setattr(long_documents, "BLOCK_BYTES", 7)
    lines = ["short one", "a long line. " * 40 + "end", "", "another long line, " * 30]
    index = tokenize(tmp_path, lines, "--format", "raw", "--prepend-eot", "--batch-bytes", "40")
    read = [nanogpt_train_data(path) for path in shard_paths(tmp_path, index)]
    assert_tokens(read, stream("gpt2", lines, "before"))
    assert index["documents"] == len(lines)
    source = str(tmp_path / "in.txt")
    ids = io.StringIO()
    main(["tokenize", "-e", "gpt2", "-i", source, "--prepend-eot", "--batch-bytes", "40"], ids)
    reference = tiktoken_reference("gpt2")
    assert ids.getvalue() == "".join(
        " ".join(map(str, [reference.eot_token, *reference.encode(line)])) + "\n" for line in lines
    )


@pytest.mark.parametrize(
    "flags",
    [
        ["--format", "npy", "--append-eot", "--prepend-eot", "-o", "p"],
        ["--prepend-eot", "--append-eot"],
    ],
)
def test_append_and_prepend_eot_are_refused_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str]
) -> None:
    (tmp_path / "in.txt").write_text("hello\n", encoding="utf-8")
    with pytest.raises(SystemExit) as error:
        main(["tokenize", "-e", "gpt2", "-i", str(tmp_path / "in.txt"), *flags], io.StringIO())
    assert error.value.code == 2
    assert capsys.readouterr().err == (
        "tensortext: error: --append-eot and --prepend-eot: pass one of them (--prepend-eot "
        "puts the end-of-text token before each document, --append-eot after it)\n"
    )
    assert sorted(path.name for path in tmp_path.iterdir()) == ["in.txt"]


def test_decode_refuses_prepend_eot(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tokenize", "-e", "gpt2", "--decode", "--prepend-eot"], io.StringIO(),
             io.StringIO("1 2\n"))  # fmt: skip
    assert capsys.readouterr().err == (
        "tensortext: error: --decode reads one file of ID lines: no --format, --whole-file, "
        "--append-eot, --prepend-eot or several inputs\n"
    )


@pytest.mark.parametrize(
    ("file_format", "read", "summary"),
    [
        ("raw", lambda path: nanogpt_train_data(path, dtype=np.uint32),
         "raw: headerless little-endian uint32"),
        ("npy", build_nanogpt_load_tokens, "npy: uint32"),
        ("bin", llmc_train_llama3_py_load,
         "bin: llm.c llama-3 layout, magic 20240801 version 7, uint32"),
    ],
)  # fmt: skip
def test_the_summary_line_and_the_index_name_the_layout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], file_format: str, read: Any, summary: str
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("hello world\n", encoding="utf-8")
    main(["tokenize", "-e", "cl100k_base", "-i", str(source), "-o", str(tmp_path / "p"),
          "--format", file_format], io.StringIO())  # fmt: skip
    assert f"; wrote 1 shards ({summary}), {tmp_path / 'p'}_index.json\n" in capsys.readouterr().err
    index = json.loads((tmp_path / "p_index.json").read_text(encoding="utf-8"))
    assert (index["dtype"], index["byte_order"]) == ("uint32", "little")
    tokens = read(tmp_path / f"p_000000.{file_format}")
    assert tokens.tolist() == stream("cl100k_base", ["hello world"], None)


@pytest.mark.parametrize("file_format", ["npy", "raw", "bin"])
def test_an_input_with_no_tokens_gives_one_empty_shard(tmp_path: Path, file_format: str) -> None:
    """Each reader gets no tokens (a raw shard is an empty file); llm.c's C dataloader refuses
    such a file (it asserts a count above 0), as the module docstring of ``shard_formats``
    says."""
    index = tokenize(tmp_path, [], "--format", file_format)
    [path] = shard_paths(tmp_path, index)
    assert (index["tokens"], index["documents"]) == (0, 0)
    if file_format == "raw":
        assert path.stat().st_size == 0  # (numpy cannot memmap an empty file)
    elif file_format == "npy":
        assert build_nanogpt_load_tokens(path).size == 0
    else:
        assert llmc_train_gpt2_py_load(path).size == 0
        with pytest.raises(Refused, match="ntok > 0"):
            llmc_c_load_shard(path)


@pytest.mark.parametrize("file_format", ["npy", "raw", "bin"])
@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_shards_are_little_endian_whatever_the_arrays_byte_order(
    file_format: str, dtype: str
) -> None:
    tokens = np.array([0, 1, 258, 50256, 65535], dtype=dtype)
    written = []
    for order in "<>":
        buffer = io.BytesIO()
        write_shard(buffer, tokens.astype(np.dtype(dtype).newbyteorder(order)), file_format)
        written.append(buffer.getvalue())
    assert written[0] == written[1]
    assert written[0].endswith(tokens.astype(np.dtype(dtype).newbyteorder("<")).tobytes())


def test_a_raw_set_is_replaced_whole_and_a_stray_raw_file_stops_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tokenize(tmp_path, DOCS, "--format", "raw", "--shard-tokens", "20")
    assert len(list(tmp_path.glob("p_*.raw"))) > 3
    index = tokenize(tmp_path, DOCS, "--format", "npy", "--shard-tokens", "1000")
    assert sorted(path.name for path in tmp_path.glob("p_*")) == ["p_000000.npy", "p_index.json"]
    assert index["format"] == "npy"
    (tmp_path / "p_000007.raw").write_bytes(b"\x01\x00")
    with pytest.raises(SystemExit):
        tokenize(tmp_path, DOCS, "--format", "raw")
    assert capsys.readouterr().err == (
        f"tensortext: error: {tmp_path / 'p_000007.raw'} is no shard of "
        f"{tmp_path / 'p_index.json'}; move it away or choose another -o prefix\n"
    )


def test_help_says_which_trainer_reads_each_layout_and_matches_the_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The layouts and their readers, and the figures ``--workers`` names, are the code's."""
    from tensortext.bpe import native, parallel

    with pytest.raises(SystemExit):
        main(["tokenize", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for said in ["--format npy np.save arrays: build-nanogpt's fineweb.py shards, read by its "
                 "train_gpt2.py (np.load)",
                 'nanoGPT\'s train.bin, read by its train.py as np.memmap(path, dtype=np.uint16, '
                 'mode="r")', "cat PREFIX_*.raw > train.bin",
                 "uint16: magic 20240520 version 1 (GPT-2), read by train_gpt2.c/.cu and "
                 "train_gpt2.py; uint32: magic 20240801 version 7 (Llama 3), read by "
                 "train_llama3.py", "--prepend-eot puts the end-of-text token before each "
                 "document"]:  # fmt: skip
        assert said in text
    workers = text[text.index("--workers WORKERS encoder threads on a CPU") :]
    assert f"a batch of {native.THREADS_MIN_CHARS} characters or more" in workers
    assert f"worker processes instead, from {parallel.PARALLEL_MIN_CHARS} characters" in workers
    assert "64K characters or more is split among --workers threads" in text
    assert native.THREADS_MIN_CHARS == 1 << 16 and parallel.PARALLEL_MIN_CHARS == 1 << 20
