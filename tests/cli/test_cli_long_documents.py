"""Long documents are encoded in parts cut where the split cannot change (see
``tensortext.cli.long_documents``): the IDs equal tiktoken's on the whole text, for each proven
pattern, with parts of a few characters over text built from the cases the argument names
(line ends after punctuation, spaces before line ends, ``!\\n/`` in o200k, contractions, digits,
CR-only lines), so that thousands of cuts are checked."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import numpy as np
import pytest
from oracles.bpe import tiktoken_reference

from tensortext.cli import long_documents, main

PIECES = ["\n", "\r", "\r\n", " ", "  ", "\t", "a", "Z", "b", "word", "Word", "é", "日本", "!",
          "/", "'s", "'", "'LL", "9", "420", ".", " \nA", "x\n/y", "!\n/", "\u00a0", "e\u0301",
          "😀", ",\nB", "q\rR", "  \n\nC", "7\nd"]  # fmt: skip


def tricky_text(seed: int, size: int = 4000) -> str:
    generator = random.Random(seed)
    return "".join(generator.choice(PIECES) for _ in range(size))


@pytest.fixture
def tiny_parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Parts of about 16 characters read 7 bytes at a time; the list counts the parts."""
    monkeypatch.setattr(long_documents, "PART_CHARS", 16)
    monkeypatch.setattr(long_documents, "BLOCK_BYTES", 7)
    counted: list[int] = []
    parts = long_documents.parts

    def counting(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        for part in parts(*args, **kwargs):  # type: ignore[arg-type]
            counted.append(1)
            yield part

    monkeypatch.setattr(long_documents, "parts", counting)
    return counted


def run(*argv: str) -> str:
    out = io.StringIO()
    assert main(["tokenize", *argv, "-q"], stdout=out) == 0
    return out.getvalue()


@pytest.mark.parametrize("name", ["gpt2", "cl100k_base", "o200k_base"])
@pytest.mark.parametrize("seed", [1, 2])
def test_a_whole_file_in_parts_has_the_ids_of_the_whole(
    tmp_path: Path, tiny_parts: list[int], name: str, seed: int
) -> None:
    text = tricky_text(seed)
    (tmp_path / "doc.txt").write_text(text, encoding="utf-8", newline="")
    doc = str(tmp_path / "doc.txt")
    out = run("-e", name, "-i", doc, "--whole-file", "--ordinary", "--batch-bytes", "50")
    assert len(tiny_parts) > 100
    expected = tiktoken_reference(name).encode_ordinary(text)
    ids = [int(token) for token in out.split()]
    pairs = enumerate(zip(ids, expected, strict=False))
    first_difference = next((i for i, (a, b) in pairs if a != b), None)
    assert (len(ids), first_difference) == (len(expected), None)
    assert out.count("\n") == 1


@pytest.mark.parametrize("name", ["gpt2", "o200k_base"])
def test_cr_only_lines_in_parts_make_shards_of_the_whole(
    tmp_path: Path, tiny_parts: list[int], name: str
) -> None:
    """A file with CR-only line ends is a few very long lines split at ``\\n``: each one is
    encoded in parts; the end-of-text token follows each line, not each part; batches end
    inside a line."""
    lines = [tricky_text(seed, 800).replace("\n", "") for seed in (3, 4, 5)]
    (tmp_path / "doc.txt").write_text("\n".join(lines) + "\n", encoding="utf-8", newline="")
    prefix = str(tmp_path / "p")
    run("-e", name, "-i", str(tmp_path / "doc.txt"), "-o", prefix, "--format", "npy",
        "--append-eot", "--ordinary", "--shard-tokens", "500", "--batch-bytes", "50")  # fmt: skip
    assert len(tiny_parts) > 100
    reference = tiktoken_reference(name)
    expected = [
        t for line in lines for t in [*reference.encode_ordinary(line), reference.eot_token]
    ]
    index = json.loads((tmp_path / "p_index.json").read_text(encoding="utf-8"))
    tokens = np.concatenate([np.load(tmp_path / shard["file"]) for shard in index["shards"]])
    assert tokens.tolist() == expected
    assert index["documents"] == 3
    assert [shard["documents"] for shard in index["shards"]] == [
        int(np.count_nonzero(np.load(tmp_path / shard["file"]) == reference.eot_token))
        for shard in index["shards"]
    ]


def test_cut_points_are_only_the_proven_ones() -> None:
    assert long_documents.cut_point("abc\nDef") == 4  # after the line end, before the letter
    assert long_documents.cut_point("ab cd") == 2  # before the space
    for text in ["ab \nCd", "ab\n\nCd", "!\n/x", "ab  cd", "a 1", "9\n9", "日 本", "ab\n é"]:
        assert long_documents.cut_point(text) == 0, text


def test_only_encodings_with_a_proven_split_are_cut(tmp_path: Path) -> None:
    """``--pretokenize bytes`` has another split: a long line is refused, not cut."""
    (tmp_path / "doc.txt").write_text("word " * 400, encoding="utf-8")
    with pytest.raises(SystemExit):
        run("-e", "cl100k_base", "-i", str(tmp_path / "doc.txt"), "--pretokenize", "bytes",
            "--max-document-bytes", "1000")  # fmt: skip
    out = run("-e", "cl100k_base", "-i", str(tmp_path / "doc.txt"), "--max-document-bytes", "1000")
    assert out.split() == [str(t) for t in tiktoken_reference("cl100k_base").encode("word " * 400)]


def test_a_long_document_with_no_cut_is_searched_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """4 MiB with no place to cut, read 64 KiB at a time: each block's text is searched for a
    cut once (with a character of overlap), not the whole text again for each block."""
    searched: list[int] = []
    pattern = long_documents._CUT

    class Counting:
        def finditer(self, text: str, start: int = 0):  # type: ignore[no-untyped-def]
            searched.append(len(text) - start)
            return pattern.finditer(text, start)

    monkeypatch.setattr(long_documents, "_CUT", Counting())
    block, size = 1 << 16, 4 << 20
    blocks = (b"9" * block for _ in range(size // block))
    [(text, read, last)] = long_documents.parts(blocks, 8 << 20, "too long", str)
    assert (len(text), read, last) == (size, size, True)
    assert sum(searched) <= size + len(searched)
