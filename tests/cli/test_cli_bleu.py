"""`tensortext bleu` against the sacrebleu command line's numbers (NLTK's with --compat nltk)."""

from __future__ import annotations

import io
import json
from importlib import resources
from pathlib import Path

import pytest
from sacrebleu.metrics import BLEU as SacreBLEU

from tensortext.cli import main

DEMO = resources.files("tensortext").joinpath("data/demo")


def run(argv, stdin_text=None):
    out = io.StringIO()
    stdin = io.StringIO(stdin_text) if stdin_text is not None else None
    main(argv, stdout=out, stdin=stdin)
    return out.getvalue()


def test_text_tokens_match_sacrebleu():
    hyp, ref, ref2 = (str(DEMO / name) for name in ("hyp.txt", "ref.txt", "ref2.txt"))
    line = run(["bleu", ref, ref2, "-i", hyp, "--tokenize", "none", "-w", "4", "-f", "text"])
    lines = [Path(p).read_text(encoding="utf-8").splitlines() for p in (hyp, ref, ref2)]
    expected = SacreBLEU(tokenize="none").corpus_score(lines[0], lines[1:])
    assert line.startswith(
        "BLEU|nrefs:2|case:mixed|eff:no|tok:none|smooth:exp|compat:sacrebleu|version:"
    )
    assert f"= {expected.score:.4f} " in line
    assert line.rstrip().endswith(f"hyp_len = {expected.sys_len} ref_len = {expected.ref_len})")


def test_ids_from_stdin_json_and_sentence_level(tmp_path):
    ref = tmp_path / "ref.txt"
    ref.write_text("1 2 3 4 5\n7 8 9\n", encoding="utf-8")
    records = [
        json.loads(x)
        for x in run(
            ["bleu", str(ref), "--ids", "--sentence-level", "-f", "json", "-w", "6"],
            "1 2 3 4 5\n7 8\n",
        ).splitlines()
    ]
    expected = [  # sacrebleu's -sl: effective order
        SacreBLEU(tokenize="none", effective_order=True).sentence_score(h, [r]).score
        for h, r in [("1 2 3 4 5", "1 2 3 4 5"), ("7 8", "7 8 9")]
    ]
    assert [r["score"] for r in records] == [round(e, 6) for e in expected]
    assert records[0]["signature"].startswith("nrefs:1|case:mixed|eff:yes|tok:ids|smooth:exp")
    score_only = run(["bleu", str(ref), "--ids", "-b"], "1 2 3 4 5\n7 8\n")
    assert score_only.strip().replace(".", "").isdigit()


def test_nltk_mode(tmp_path):
    from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

    ref = tmp_path / "ref.txt"
    ref.write_text("1 2 3 4 5 6\n7 8 9 10\n", encoding="utf-8")
    out = run(
        ["bleu", str(ref), "--ids", "--compat", "nltk", "-s", "method5", "-b", "-w", "8"],
        "1 2 3 4 6 5\n7 8 10\n",
    )
    expected = corpus_bleu(
        [[[1, 2, 3, 4, 5, 6]], [[7, 8, 9, 10]]],
        [[1, 2, 3, 4, 6, 5], [7, 8, 10]],
        smoothing_function=SmoothingFunction().method5,
    )
    assert out.strip() == f"{100 * expected:.8f}"
    # By hand: 9/9 unigrams, 4/7 bigrams, 2/5 trigrams, 1/4 4-grams (NLTK clamps the second
    # sentence's empty 4-gram denominator to 1); BP = exp(1 - 10/9). Not the 5-gram columns.
    verbose = run(
        ["bleu", str(ref), "--ids", "--compat", "nltk", "-s", "method5", "-f", "text"],
        "1 2 3 4 6 5\n7 8 10\n",
    )
    assert verbose.rstrip().endswith(
        "100.0/57.1/40.0/25.0 (BP = 0.895 ratio = 0.900 hyp_len = 9 ref_len = 10)"
    )


@pytest.mark.parametrize(
    ("hyp", "ref", "message"),
    [
        ("1 2 x\n", "1 2 3\n", "line 1: 'x' is not a token ID (ASCII digits 0-9); the lines are"),
        ("1 2\n3\n", "1 2\n", "has 1 lines but the hypotheses have 2"),
        ("1 -2\n", "1 2\n", "non-negative"),
    ],
    ids=["not-an-id", "line-count", "negative"],
)
def test_errors(tmp_path, capsys, hyp, ref, message):
    ref_file = tmp_path / "ref.txt"
    ref_file.write_text(ref, encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        run(["bleu", str(ref_file), "--ids"], hyp)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_invalid_utf8_names_file_and_line(tmp_path, capsys):
    ref_file = tmp_path / "ref.txt"
    ref_file.write_bytes(b"1 2\n\xff\xfe 3\n")
    with pytest.raises(SystemExit):
        run(["bleu", str(ref_file), "--tokenize", "none"], "a b\nc d\n")
    assert "ref.txt, line 2: invalid UTF-8" in capsys.readouterr().err


def test_option_errors_are_clean(tmp_path, capsys):
    ref_file = tmp_path / "ref.txt"
    ref_file.write_text("1 2\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        run(["bleu", str(ref_file), "-s", "method4"], "1 2\n")
    assert "pass --compat nltk" in capsys.readouterr().err  # the flag, not the keyword


def test_empty_reference_lines_are_empty_references_as_in_sacrebleu(tmp_path):
    """Issue 16 item 5: with several reference files an empty line is an empty reference (it
    can be the closest reference length), not a missing one. Both real console scripts."""
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent
    (tmp_path / "hyp.txt").write_text("1 2 3 4\n5 6 7\n", encoding="utf-8")
    (tmp_path / "r1.txt").write_text("1 2 3 4 5 6 7 8 9\n5 6 7 8 9 10 11 12\n", encoding="utf-8")
    (tmp_path / "r2.txt").write_text("\n5 6 7\n", encoding="utf-8")
    files = ["r1.txt", "r2.txt", "-i", "hyp.txt"]

    def score(*command: str) -> str:
        done = subprocess.run(
            command, cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120
        )
        return done.stdout.strip()

    expected = score(str(bin_dir / "sacrebleu"), *files, "-tok", "none", "-b", "-w", "4")
    ours = score(str(bin_dir / "tensortext"), "bleu", *files, "--tokenize", "none", "-b", "-w", "4")
    assert expected == "100.0000"  # the empty reference is closest to the 4-token hypothesis
    assert ours == expected
    ids = score(str(bin_dir / "tensortext"), "bleu", *files, "--ids", "-b", "-w", "4")
    assert ids == expected


@pytest.mark.parametrize("codec", ["rot13", "base64", "zlib_codec"])
def test_a_codec_that_is_not_a_text_encoding_is_one_line(tmp_path, codec):
    """``-e rot13`` (a str -> str transform; base64 and zlib are bytes -> bytes) gave a traceback
    from open(). The real console command refuses it in one line with exit 2, before reading."""
    import subprocess
    import sys

    (tmp_path / "ref.txt").write_bytes(b"1 2 3\n")
    (tmp_path / "hyp.txt").write_bytes(b"1 2 3\n")
    done = subprocess.run(
        [sys.executable, "-m", "tensortext.cli", "bleu", "ref.txt", "-i", "hyp.txt", "-e", codec],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr[-2000:]
    assert f"-e '{codec}' is a" in done.stderr and "not a text encoding" in done.stderr
    assert (tmp_path / "ref.txt").read_bytes() == b"1 2 3\n"
    assert (tmp_path / "hyp.txt").read_bytes() == b"1 2 3\n"


def test_sentence_lines_equal_the_sacrebleu_command(tmp_path):
    """The printed lines come from the library's score objects; every segment's verbose part
    (precisions, BP, ratio, lengths) equals the sacrebleu command's, including an empty
    hypothesis against an empty reference (BP 1, as sacrebleu; this CLI printed 0 before)."""
    import subprocess
    import sys

    bin_dir = Path(sys.executable).parent
    (tmp_path / "hyp.txt").write_text("1 2 3 4\n\n5 6\n7 7 7 7 8\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("1 2 3 5 4\n\n5 6 7 8\n7 7 8\n", encoding="utf-8")
    for smooth in ("exp", "floor", "add-k", "none"):
        argv = ["ref.txt", "-i", "hyp.txt", "-sl", "-w", "4", "-s", smooth]
        theirs = subprocess.run(
            [str(bin_dir / "sacrebleu"), *argv, "-tok", "none"],
            cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120,
        ).stdout.splitlines()  # fmt: skip
        ours = subprocess.run(
            [sys.executable, "-m", "tensortext.cli", "bleu", *argv, "--ids", "--device", "cpu"],
            cwd=tmp_path, capture_output=True, text=True, check=True, timeout=120,
        ).stdout.splitlines()  # fmt: skip
        assert len(ours) == len(theirs) == 4
        for mine, reference in zip(ours, theirs, strict=True):
            assert mine.split(" = ", 1)[1] == reference.split(" = ", 1)[1], (smooth, mine)
