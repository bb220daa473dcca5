"""Issue 16, command line: a user's mistake is one line on stderr and exit status 2, never a
traceback; no file the user had is changed; Ctrl-C exits 130 and keeps the old output.

Every test runs the real command (``python -m tensortext.cli``) in a subprocess, in a folder whose
files are compared byte for byte before and after.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from cli_process import COMMAND, ENV, TIMEOUT, assert_user_error

HAS_CUDA = torch.cuda.is_available()


def cli(folder: Path, *args: str, stdin: str | bytes = b"") -> subprocess.CompletedProcess[str]:
    """``tensortext ARGS`` in ``folder`` (text stdout and stderr)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    done = subprocess.run(
        [*COMMAND, *args],
        cwd=folder,
        input=data,
        capture_output=True,
        timeout=TIMEOUT,
        env=ENV,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file()}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "f.txt").write_text("hello\n<|endoftext|>\n", encoding="utf-8")
    (tmp_path / "src.txt").write_text("2 3\n7\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("1 2 3\n4 5\n", encoding="utf-8")
    (tmp_path / "old.txt").write_text("the user's old output\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_bytes(b"")
    return tmp_path


# --------------------------------------------------------------------------------------------
# Items 1-3: the output file
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("tokenize", "-e", "cl100k_base", "-i", "f.txt", "-o", "f.txt"),
        ("tokenize", "-e", "cl100k_base", "-i", "./f.txt", "-o", "f.txt", "--ordinary"),
        ("tokenize", "-e", "cl100k_base", "-i", "f.txt", "-o", "link.txt", "--decode"),
        ("translate", "-q", "-i", "src.txt", "-o", "src.txt"),
    ],
    ids=["same-name", "other-spelling", "symlink", "translate"],
)
def test_output_equal_to_the_input_is_refused_up_front(folder: Path, args: tuple[str, ...]) -> None:
    (folder / "link.txt").symlink_to(folder / "f.txt")
    before = snapshot(folder)
    assert_user_error(cli(folder, *args), "is the -i file; write to another file")
    assert snapshot(folder) == before


def test_an_error_mid_run_keeps_the_old_output(folder: Path) -> None:
    """Line 11 of 21 holds a disallowed special token: the 10 lines before it used to replace
    the old output."""
    lines = [f"line {i}" for i in range(21)]
    lines[10] = "a <|endoftext|> b"
    (folder / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = snapshot(folder)
    args = ("tokenize", "-e", "cl100k_base", "-i", "in.txt", "-o", "old.txt", "--batch-lines", "5")
    assert_user_error(cli(folder, *args), "special token '<|endoftext|>'")
    assert snapshot(folder) == before  # no half-written output, no temporary file left


@pytest.mark.parametrize(
    ("output", "message"),
    [("missing/out.txt", "no directory missing"), (".", "it is a directory")],
)
def test_translate_checks_its_output_before_decoding(
    folder: Path, output: str, message: str
) -> None:
    before = snapshot(folder)
    assert_user_error(cli(folder, "translate", "-q", "-i", "src.txt", "-o", output), message)
    assert snapshot(folder) == before


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """``path`` made unwritable for this user: mode 0444, or for root (CI), which writes through
    any mode, the immutable attribute (``chattr +i``: not even root may change the file)."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        return
    subprocess.run(["chattr", "+i", str(path)], check=True, capture_output=True, timeout=TIMEOUT)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True, timeout=TIMEOUT)


@pytest.mark.skipif(os.name != "posix", reason="needs POSIX permissions")
def test_a_read_only_output_is_refused(folder: Path) -> None:
    with unwritable(folder / "old.txt"):
        before = snapshot(folder)
        args = ("tokenize", "-e", "cl100k_base", "-i", "src.txt", "-o", "old.txt")
        assert_user_error(cli(folder, *args), "cannot write old.txt: permission denied")
        assert snapshot(folder) == before


@pytest.mark.parametrize("value", ["-1", "0", str(2**21)])
def test_batch_lines_is_bounded(folder: Path, value: str) -> None:
    args = ("tokenize", "-e", "cl100k_base", "-i", "src.txt", "--batch-lines", value)
    assert_user_error(
        cli(folder, *args), f"--batch-lines must be between 1 and 1048576, got {value}"
    )


# --------------------------------------------------------------------------------------------
# Item 4: lines end at \n only
# --------------------------------------------------------------------------------------------


def test_translate_splits_lines_at_newline_only(folder: Path) -> None:
    result = cli(folder, "translate", "-q", stdin=b"2 3\x0c4\n7\n")
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.split("\n")) == 3 and result.stdout.endswith("seven\n")


def test_sentence_level_bleu_splits_lines_at_newline_only(folder: Path) -> None:
    (folder / "ref.txt").write_bytes("1 2\x0c3\n4\u2028 5\n".encode())
    result = cli(folder, "bleu", "ref.txt", "-sl", "-b", stdin="1 2\x0c3\n4\u2028 5\n".encode())
    assert result.returncode == 0, result.stderr
    assert result.stdout == "100.0\n100.0\n"


# --------------------------------------------------------------------------------------------
# Items 11, 12, 17, 18: flags and ID lines
# --------------------------------------------------------------------------------------------


def test_max_new_tokens_zero_is_refused_and_one_is_honoured(folder: Path) -> None:
    refused = cli(folder, "translate", "-q", "--max-new-tokens", "0", stdin="2 3\n")
    assert_user_error(refused, "--max-new-tokens must be between 1 and")
    one = cli(folder, "translate", "-q", "--max-new-tokens", "1", stdin="2 3\n")
    assert one.returncode == 0 and one.stdout == "twenty\n"


@pytest.mark.parametrize(
    ("hyp", "message"),
    [
        ("\u0661 2\n4 5\n", "<stdin>, line 1: '\u0661' is not a token ID (ASCII digits 0-9)"),
        ("1 2 3\n\uff14 5\n", "<stdin>, line 2: '\uff14' is not a token ID"),
        ("--5 2\n4 5\n", "'--5' is not a token ID"),
        ("-5 2\n4 5\n", "'-5': token IDs must be non-negative"),
        ("1 2 3\n99999999999999999999999 5\n", "line 2: token ID 99999999999999999999999 does"),
    ],
    ids=["arabic-indic", "fullwidth", "double-dash", "negative", "overflow"],
)
def test_bleu_ids_are_ascii_int64(folder: Path, hyp: str, message: str) -> None:
    assert_user_error(cli(folder, "bleu", "ref.txt", "--ids", stdin=hyp), message)


def test_empty_input_to_bleu_is_refused_as_sacrebleu_does(folder: Path) -> None:
    """sacrebleu: "Test set None contains no sentence" (exit 1); ours: one line, exit 2."""
    assert_user_error(cli(folder, "bleu", "empty.txt", "-i", "empty.txt"), "empty.txt is empty")
    assert_user_error(cli(folder, "bleu", "empty.txt"), "<stdin> is empty: no segments to score")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-w", "-1"), "-w must be between 0 and 20, got -1"),
        (("--max-ngram-order", "100000"), "--max-ngram-order must be between 1 and 1000"),
        (("--5",), "unrecognized arguments: --5"),
        (("-tok", "zh"), "-tok zh: sacrebleu's Chinese segmentation is not implemented"),
        (("-t", "wmt14"), "-t/--test-set is sacrebleu's; sacrebleu's test sets are not bundled"),
        (("-m", "ter"), "-m ter: TER is not implemented: use sacrebleu -m ter"),
        (("-lc", "--ids"), "-lc lowercases text; token IDs (--ids) have no case"),
        (("-e", "cl100k_base"), "BPE tokenization is -tok cl100k_base"),
        (("-e", "klingon"), "-e 'klingon' is no text encoding"),
    ],
)
def test_bleu_flag_errors(folder: Path, args: tuple[str, ...], message: str) -> None:
    assert_user_error(cli(folder, "bleu", "ref.txt", *args, stdin="1 2 3\n4 5\n"), message)


# --------------------------------------------------------------------------------------------
# Items 19, 20: devices, missing and binary files
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("tokenize", "-e", "cl100k_base", "-i", "src.txt"),
        ("bleu", "ref.txt", "-i", "ref.txt"),
        ("translate", "-q", "-i", "src.txt"),
    ],
    ids=["tokenize", "bleu", "translate"],
)
@pytest.mark.parametrize("device", ["bogus", "cuda"])
def test_bad_devices(folder: Path, args: tuple[str, ...], device: str) -> None:
    if device == "cuda" and HAS_CUDA:
        pytest.skip("CUDA is available here")
    message = "is not a torch device" if device == "bogus" else "CUDA is not available"
    assert_user_error(cli(folder, *args, "--device", device), message)


def test_missing_and_binary_evidence_files(folder: Path) -> None:
    (folder / "nbest.bin").write_bytes(b"0 ||| 1 ||| ||| -1\n\x89PNG\r\n\x1a\n\xa7\x00")
    translate = ("translate", "-q", "-i", "src.txt")
    assert_user_error(
        cli(folder, *translate, "--lmbr-nbest", "nope.txt"),
        "--lmbr-nbest: cannot read nope.txt: no such file",
    )
    assert_user_error(
        cli(folder, *translate, "--lmbr-ngrams", "post%d.txt"),
        "--lmbr-ngrams: cannot read post1.txt: no such file",
    )
    assert_user_error(
        cli(folder, *translate, "--lmbr-nbest", "nbest.bin"), "nbest.bin, line 2: invalid UTF-8"
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"[1]", "not a JSON tokenizer file"),
        (b"{not json", "tokenizer.json"),
        (b"\xff\xfe binary", "tokenizer.json"),
    ],
    ids=["list", "syntax", "binary"],
)
def test_malformed_tokenizer_json(folder: Path, content: bytes, message: str) -> None:
    (folder / "tokenizer.json").write_bytes(content)
    assert_user_error(cli(folder, "tokenize", "-e", "tokenizer.json", "-i", "src.txt"), message)


def test_a_closed_pipe_ends_quietly(folder: Path) -> None:
    """``tensortext tokenize | head -1``: no BrokenPipeError, the status a killed ``cat`` has."""
    (folder / "big.txt").write_text("hello world\n" * 200_000, encoding="utf-8")
    process = subprocess.Popen(
        [*COMMAND, "tokenize", "-e", "cl100k_base", "-i", "big.txt"],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline() == b"15339 1917\n"
    process.stdout.close()
    stderr = process.stderr.read()
    assert process.wait(timeout=TIMEOUT) == 141
    assert stderr == b""


# --------------------------------------------------------------------------------------------
# Item 22: sacrebleu's spellings
# --------------------------------------------------------------------------------------------


def sacrebleu(folder: Path, *args: str) -> str:
    script = Path(sys.executable).parent / "sacrebleu"
    done = subprocess.run(
        [str(script), *args], cwd=folder, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def text_files(folder: Path) -> Path:
    (folder / "hyp.txt").write_text("The cat sat\nA dog barks loudly today\n", encoding="utf-8")
    (folder / "r1.txt").write_text("the cat sat\nA dog barks loudly today\n", encoding="utf-8")
    return folder


def test_sentence_level_uses_effective_order_as_sacrebleu(text_files: Path) -> None:
    args = ("r1.txt", "-i", "hyp.txt", "-sl", "-tok", "none", "-w", "4")
    theirs = sacrebleu(text_files, *args).splitlines()
    ours = cli(text_files, "bleu", *args).stdout.splitlines()
    assert [line.split(" = ", 1)[1] for line in ours] == [
        line.split(" = ", 1)[1] for line in theirs
    ]
    assert "eff:yes" in ours[0] and theirs[1].split(" = ")[1].startswith("100.0000")
    no_eff = cli(text_files, "bleu", *args, "--no-effective-order", "-b").stdout.split()
    assert no_eff[1] == "100.0000" and float(no_eff[0]) == 0.0  # 3 tokens: no 4-gram


def test_lowercase_short_signature_and_json(text_files: Path) -> None:
    args = ("r1.txt", "-i", "hyp.txt", "-tok", "none", "-lc")
    theirs = json.loads(sacrebleu(text_files, *args, "-f", "json"))
    ours = json.loads(cli(text_files, "bleu", *args, "-f", "json").stdout)
    for key in ("name", "score", "verbose_score", "nrefs", "case", "eff", "tok", "smooth"):
        assert ours[key] == theirs[key], key
    assert theirs["case"] == "lc" and ours["signature"].startswith("nrefs:1|case:lc|eff:no|")
    short = cli(text_files, "bleu", *args, "--short", "-f", "text").stdout
    assert short.startswith("BLEU|#:1|c:lc|e:no|tok:none|s:exp|compat:sacrebleu|v:")
    their_short = sacrebleu(text_files, *args, "--short", "-f", "text")
    assert their_short.startswith("BLEU|#:1|c:lc|e:no|tok:none|s:exp|v:")
    assert short.split(" = ", 1)[1] == their_short.split(" = ", 1)[1]


@pytest.mark.parametrize(
    "flags",
    [("-s", "floor"), ("-s", "add-k", "-sv", "2"), ("-s", "none"), ("-s", "exp")],
    ids=["floor", "add-k", "none", "exp"],
)
@pytest.mark.parametrize("level", ["-sl", "corpus"])
def test_text_output_equals_sacrebleu_with_smoothing(
    text_files: Path, flags: tuple[str, ...], level: str
) -> None:
    """Signature (smooth:floor[0.10]) and smoothed precisions as sacrebleu prints them."""
    (text_files / "hyp.txt").write_text("The cat sat on\nA dog barks\nx y\n", encoding="utf-8")
    (text_files / "r1.txt").write_text("the cat sat on\nA dog barks\nx z\n", encoding="utf-8")
    args = ("r1.txt", "-i", "hyp.txt", "-tok", "none", "-w", "3", *flags)
    args += ("-sl",) if level == "-sl" else ()
    theirs = sacrebleu(text_files, *args, "-f", "text").replace("|version:2", "|v")
    ours = cli(text_files, "bleu", *args, "-f", "text").stdout.replace(
        "|compat:sacrebleu|version:0", "|v"
    )
    assert [line.split("|v", 1)[0] for line in ours.splitlines()] == [
        line.split("|v", 1)[0] for line in theirs.splitlines()
    ]
    assert [line.split(" = ", 1)[1] for line in ours.splitlines()] == [
        line.split(" = ", 1)[1] for line in theirs.splitlines()
    ]


def test_input_text_encoding_as_sacrebleu(text_files: Path) -> None:
    for name in ("hyp.txt", "r1.txt"):
        text = (text_files / name).read_text(encoding="utf-8")
        (text_files / name).write_bytes(text.replace("cat", "café").encode("latin-1"))
    args = ("r1.txt", "-i", "hyp.txt", "-tok", "none", "-b")
    assert_user_error(cli(text_files, "bleu", *args), "hyp.txt, line 1: invalid UTF-8")
    latin = cli(text_files, "bleu", *args, "-e", "latin-1").stdout
    assert latin == sacrebleu(text_files, *args, "-e", "latin-1")


def test_help_says_what_each_shared_option_does_and_its_default(folder: Path) -> None:
    help_text = " ".join(cli(folder, "bleu", "--help").stdout.split())
    for option in ("-tok", "-e", "-lc", "-sl", "-f", "-sh", "-w", "-s", "-sv"):
        assert f" {option} " in help_text or f" {option}," in help_text, option
    assert help_text.count("(default") >= 10


# --------------------------------------------------------------------------------------------
# Ctrl-C
# --------------------------------------------------------------------------------------------


def interrupt_when(process: subprocess.Popen[bytes], ready: Callable[[], bool]) -> tuple[int, str]:
    """Sends SIGINT once ``ready()`` holds; the exit status and stderr."""
    deadline = time.monotonic() + TIMEOUT
    while not ready():
        assert process.poll() is None, "the command finished before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=TIMEOUT)
    return process.returncode, stderr.decode()


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
def test_ctrl_c_in_tokenize_keeps_the_old_output(folder: Path) -> None:
    line = "Ctrl-C must leave the previous output alone, 1234 ünïcödé 日本語\n"
    (folder / "big.txt").write_text(line * 1_500_000, encoding="utf-8")  # 105 MB: seconds
    before = snapshot(folder)
    process = subprocess.Popen(
        [*COMMAND, "tokenize", "-e", "cl100k_base", "-i", "big.txt", "-o", "old.txt"],
        cwd=folder,
        stderr=subprocess.PIPE,
        env=ENV,
    )

    def encoding() -> bool:  # the temporary output has the first batches: encoding is under way
        return any(
            name.startswith(".old.txt.") and (folder / name).stat().st_size > 0
            for name in os.listdir(folder)
        )

    status, stderr = interrupt_when(process, encoding)
    assert (status, stderr) == (130, "tensortext: interrupted\n")
    assert snapshot(folder) == before


@pytest.mark.skipif(os.name != "posix", reason="SIGINT")
def test_ctrl_c_in_translate_keeps_the_old_output(folder: Path) -> None:
    (folder / "big.txt").write_text("2 3 4\n1 7 1 2\n9 9 9 1\n" * 3000, encoding="utf-8")
    before = snapshot(folder)
    process = subprocess.Popen(
        [*COMMAND, "translate", "-i", "big.txt", "-o", "old.txt", "--batch-sentences", "16"],
        cwd=folder,
        stderr=subprocess.PIPE,
        env=ENV,
    )
    assert process.stderr is not None
    seen = b""

    def translating() -> bool:  # the progress bar has moved past its first batch
        nonlocal seen
        seen += os.read(process.stderr.fileno(), 4096)  # type: ignore[union-attr]
        return b"translating [" in seen and b" 16/9000" not in seen.rsplit(b"\r", 1)[-1]

    status, rest = interrupt_when(process, translating)
    stderr = (seen.decode() + rest).replace("\r", "\n")
    assert status == 130 and "Traceback" not in stderr
    assert stderr.rstrip("\n").split("\n")[-1] == "tensortext: interrupted"
    assert snapshot(folder) == before


# --------------------------------------------------------------------------------------------
# IDs too long for int(), and an environment switch the package does not understand
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("digits", [20, 5000])
def test_an_id_of_many_digits_is_one_line(folder: Path, digits: int) -> None:
    """Over 4,300 digits, ``int()`` itself raises (Python's limit): the ID is refused before."""
    (folder / "hyp.txt").write_text(f"1 {'9' * digits}\n4 5\n", encoding="utf-8")
    before = snapshot(folder)
    result = cli(folder, "bleu", "ref.txt", "-i", "hyp.txt", "--ids", "--device", "cpu")
    assert_user_error(result, "hyp.txt, line 1: token ID 9999")
    assert "does not fit in int64" in result.stderr and len(result.stderr) < 200
    assert snapshot(folder) == before


def test_a_native_switch_not_understood_is_one_line(folder: Path) -> None:
    result = subprocess.run(
        [*COMMAND, "tokenize", "-e", "cl100k_base", "-i", "f.txt"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**ENV, "TENSORTEXT_NATIVE": "bogus"},
    )
    assert_user_error(result, "TENSORTEXT_NATIVE='bogus' is not understood")
    assert result.stdout == ""
