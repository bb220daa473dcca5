"""`tensortext tokenize` and `tensortext bleu -e`: the command line over the BPE encoder."""

from __future__ import annotations

import io

import pytest
from sacrebleu.metrics import BLEU as SacreBLEU

from tensortext.bpe import get_encoding
from tensortext.cli import main

LINES = ["hello world", "It's 2024!  \tok", "日本語 हिन्दी 👨\u200d👩\u200d👧", "", "a\u2028b\x0bc"]


def run(argv: list[str], stdin_text: str | None = None) -> str:
    out = io.StringIO()
    main(argv, stdout=out, stdin=io.StringIO(stdin_text) if stdin_text is not None else None)
    return out.getvalue()


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_tokenize_writes_encode_of_each_line_and_decode_reverses(name: str) -> None:
    encoding = get_encoding(name)
    ids_text = run(["tokenize", "-e", name], "\n".join(LINES) + "\n")
    rows = [[int(token) for token in line.split()] for line in ids_text.split("\n")[:-1]]
    # Lines split at \n only: U+2028 and \x0b stay inside their line.
    assert rows == [encoding.encode(line) for line in LINES]
    assert run(["tokenize", "-e", name, "--decode"], ids_text) == "\n".join(LINES) + "\n"


def test_tokenize_files_and_batches(tmp_path) -> None:
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(LINES * 3), encoding="utf-8")
    run(
        [
            "tokenize",
            "-e",
            "cl100k_base",
            "-i",
            str(source),
            "-o",
            str(target),
            "--batch-lines",
            "2",
        ]
    )
    encoding = get_encoding("cl100k_base")
    expected = "".join(" ".join(map(str, encoding.encode(line))) + "\n" for line in LINES * 3)
    assert target.read_text(encoding="utf-8") == expected


def test_tokenize_special_tokens(capsys) -> None:
    with pytest.raises(SystemExit) as error:
        run(["tokenize", "-e", "cl100k_base"], "x <|endoftext|>\n")
    assert error.value.code == 2
    assert "--allowed-special" in capsys.readouterr().err
    encoding = get_encoding("cl100k_base")
    special = run(
        ["tokenize", "-e", "cl100k_base", "--allowed-special", "all"], "x <|endoftext|>\n"
    )
    assert special.split() == [
        str(t) for t in encoding.encode("x <|endoftext|>", allowed_special="all")
    ]
    ordinary = run(["tokenize", "-e", "cl100k_base", "--ordinary"], "x <|endoftext|>\n")
    assert ordinary.split() == [str(t) for t in encoding.encode_ordinary("x <|endoftext|>")]


def test_tokenize_errors(capsys) -> None:
    with pytest.raises(SystemExit):
        run(["tokenize", "-e", "p99k_base"], "x\n")
    assert "unknown encoding 'p99k_base'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["tokenize", "-e", "cl100k_base", "--allowed-special", "<|im_start|>"], "x\n")
    assert "'<|im_start|>' is no special token of cl100k_base" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["tokenize", "-e", "cl100k_base", "--decode"], "1 2 x\n")
    assert "<stdin>, line 1: 'x' is not a token ID (ASCII digits 0-9)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run(["tokenize", "-e", "cl100k_base", "--decode"], "100256\n")  # a gap in cl100k's IDs
    assert "line 1" in capsys.readouterr().err


def test_bleu_with_an_encoding_scores_its_token_ids(tmp_path) -> None:
    hyps = ["the cat sat on the mat", "日本語のテキストです"]
    refs = ["the cat sat on a mat", "日本語のテキスト"]
    ref_file = tmp_path / "ref.txt"
    ref_file.write_text("\n".join(refs) + "\n", encoding="utf-8")
    line = run(
        ["bleu", str(ref_file), "-tok", "cl100k_base", "-w", "4", "-f", "text"],
        "\n".join(hyps) + "\n",
    )
    encoding = get_encoding("cl100k_base")

    def spaced(text: str) -> str:
        return " ".join(map(str, encoding.encode(text)))

    expected = SacreBLEU(tokenize="none").corpus_score(
        [spaced(h) for h in hyps], [[spaced(r) for r in refs]]
    )
    assert "tok:cl100k_base" in line
    assert f"= {expected.score:.4f} " in line


def test_tokenize_tensor_path_rows() -> None:
    """``--pretokenize bytes`` runs the tensor engine (no padding in the CLI): each line's IDs
    are the library's, a long line beside short ones included."""
    lines = [*LINES, "word " * 3000]
    out = run(["tokenize", "-e", "cl100k_base", "--pretokenize", "bytes"], "\n".join(lines) + "\n")
    rows = [[int(token) for token in line.split()] for line in out.split("\n")[:-1]]
    encoding = get_encoding("cl100k_base")
    assert rows == encoding.encode_batch_to_tensor(lines, pretokenize="bytes").tolist()
