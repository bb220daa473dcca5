"""A user's first hour with the command line: ``python -m tensortext`` runs it; no option is
read from an abbreviation; every hint a bad flag gets is written in flags (``--compat nltk``),
never in Python's keywords (``compat='nltk'``); sacrebleu's test-set options are refused by name.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import ENV, TIMEOUT

from tensortext import __version__
from tensortext.bleu import BleuConfig
from tensortext.cli import build_parser, main

# What Python's syntax looks like in a message: a keyword given a value (compat='nltk',
# smooth_value=None, max_ngram_order=2) or compared (max_ngram_order >= 3).
PYTHON_SYNTAX = re.compile(r"\b[a-z]+(?:_[a-z]+)*(?:=| >= )|\b[a-z]+_[a-z_]+\b")


def python_m(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tensortext", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=ENV,
    )


def test_python_m_tensortext_is_the_command(tmp_path: Path) -> None:
    version = python_m("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"tensortext {__version__}"
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat on the mat\n", encoding="utf-8")
    score = python_m("bleu", str(ref), "-b", stdin="the cat sat on the mat\n")
    assert score.returncode == 0, score.stderr
    assert score.stdout.strip() == "100.0"
    error = python_m("bleu", str(ref), "-s", "method3", stdin="x\n")
    assert error.returncode == 2 and "Traceback" not in error.stderr
    assert error.stderr.startswith("tensortext: error: ")


def test_python_m_tensortext_imports_no_torch_itself() -> None:
    """``tensortext/__main__.py`` and the command's dispatcher import no torch (the light
    install has none); importing the module runs no command."""
    program = (
        "import sys\n"
        "sys.modules['torch'] = None  # any import of torch now fails\n"
        "import tensortext.__main__\n"
        "print('torch' in sys.modules and sys.modules['torch'] is not None)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=TIMEOUT, env=ENV
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def parsers() -> dict[str, argparse.ArgumentParser]:
    """The command's parser and each subcommand's, by name."""
    parser = build_parser()
    found = {"tensortext": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found |= dict(action.choices)
    return found


@pytest.mark.parametrize("name", list(parsers()))
def test_no_parser_reads_an_abbreviated_option(name: str) -> None:
    """Each long option cut by one letter is an unknown argument, never the option: sacrebleu's
    ``-t`` is not ``-tok``, and a flag added later changes no old command line."""
    parser = parsers()[name]
    assert parser.allow_abbrev is False
    required = [
        token
        for action in parser._actions
        if action.required and action.option_strings
        for token in (action.option_strings[0], "x")
    ]
    command = ["demo"] if name == "tensortext" else []  # the command's required subcommand
    checked = 0
    for option in parser._option_string_actions:
        cut = option[:-1]
        if not option.startswith("--") or len(cut) < 3 or cut in parser._option_string_actions:
            continue
        _, unknown = parser.parse_known_args([*required, cut, *command])
        assert unknown == [cut], f"{name}: {cut} was read as {option}"
        checked += 1
    assert checked


def run_error(argv: list[str], capsys: pytest.CaptureFixture[str], stdin: str = "x\n") -> str:
    """The one line ``tensortext ARGV`` prints on stderr, exiting 2."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv, io.StringIO(), io.StringIO(stdin))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("tensortext: error: "), err
    return err


# flags -> what the error says (every BleuConfig error a flag can cause)
BLEU_FLAG_ERRORS = {
    "nltk_method_under_sacrebleu": (
        ["-s", "method3"],
        "-s must be one of ('none', 'floor', 'add-k', 'exp') with --compat sacrebleu, got "
        "'method3' ('method3' is an NLTK method: pass --compat nltk)",
    ),
    "weights_under_sacrebleu": (
        ["--weights", "0.5", "0.5"],
        "drop --weights, or pass --compat nltk for weighted n-gram orders",
    ),
    "auto_reweigh_under_sacrebleu": (["--auto-reweigh"], "pass --compat nltk to use it"),
    "effective_order_under_nltk": (
        ["--compat", "nltk", "--effective-order"],
        "--effective-order is a sacrebleu option; pass --compat sacrebleu",
    ),
    "method6_order_2": (
        ["--compat", "nltk", "-s", "method6", "--max-ngram-order", "2"],
        "pass --max-ngram-order 3 or more",
    ),
    "weights_count": (
        ["--compat", "nltk", "--weights", "0.5", "0.5"],
        "--weights has 2 entries but --max-ngram-order is 4; pass --max-ngram-order 2",
    ),
    "weights_beyond_the_largest_order": (
        ["--compat", "nltk", "--max-ngram-order", "1000", "--weights", *["0.001"] * 1001],
        "--weights has 1001 entries, one per n-gram order; at most 1000 orders are supported",
    ),
    "method4_k_0": (
        ["--compat", "nltk", "-s", "method4", "-sv", "0"],
        "-sv must be > 0, got 0.0; pass e.g. -sv 5 (NLTK's default)",
    ),
    "smooth_value_for_exp": (["-sv", "3"], "-s exp takes no -sv; drop -sv"),
    "smooth_value_for_method2": (
        ["--compat", "nltk", "-s", "method2", "-sv", "1"],
        "takes no -sv (it always adds 1; --compat sacrebleu takes any k); drop -sv",
    ),
    "smooth_value_nan": (["-s", "floor", "-sv", "nan"], "-sv must be finite, got nan"),
    "weight_nan": (
        ["--compat", "nltk", "--weights", "0.5", "nan", "0.25", "0.25"],
        "--weights must be finite, got nan",
    ),
}


def test_the_python_api_still_names_its_keywords() -> None:
    with pytest.raises(ValueError, match=r"pass compat='nltk'\)$"):
        BleuConfig(smooth_method="method3")
    with pytest.raises(ValueError, match="pass smooth_value=None"):
        BleuConfig(smooth_value=3.0)


OTHER_FLAG_ERRORS = {  # errors the other flags of bleu give, checked for the same syntax
    "chrf_beta": (["-m", "chrf", "--chrf-beta", "0"], "--chrf-beta"),
    "chrf_order": (["-m", "chrf", "-cc", "0"], "-cc/--chrf-char-order"),
    "max_ngram_order": (["--max-ngram-order", "0"], "--max-ngram-order"),
    "width": (["-w", "30"], "-w must be between 0 and 20"),
    "sentence_level_two_metrics": (["-sl", "-m", "bleu", "chrf"], "pass -m bleu or -m chrf"),
    "latex": (["-f", "latex"], "pass -f json or text"),
    "ids_lowercase": (["--ids", "-lc"], "-lc lowercases text"),
    "ter": (["-m", "ter"], "-m ter: TER is not implemented"),
    "encoding": (["-e", "cl100k_base"], "BPE tokenization is -tok cl100k_base"),
}


ALL_FLAG_ERRORS = {**BLEU_FLAG_ERRORS, **OTHER_FLAG_ERRORS}


@pytest.mark.parametrize(
    ("flags", "message"), list(ALL_FLAG_ERRORS.values()), ids=list(ALL_FLAG_ERRORS)
)
def test_bleu_flag_errors_say_the_flags(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("x\n", encoding="utf-8")
    err = run_error(["bleu", str(ref), *flags], capsys)
    assert message in err, err
    assert not PYTHON_SYNTAX.search(err.replace(str(ref), "REF")), err


TEST_SET_LINES = {
    "t_then_l": ["-t", "wmt14", "-l", "en-de"],
    "l_then_t": ["-l", "en-de", "-t", "wmt14"],
    "long_options": ["--test-set", "wmt14", "--language-pair", "en-de"],
    "with_a_hypothesis_file": ["-t", "wmt14", "-l", "en-de", "-i", "HYP"],
    "joined_short_option": ["-twmt14", "-len-de"],
}


@pytest.mark.parametrize("flags", list(TEST_SET_LINES.values()), ids=list(TEST_SET_LINES))
def test_sacrebleus_test_set_command_is_refused_by_name(
    flags: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("a hypothesis\n", encoding="utf-8")
    argv = ["bleu", *(str(hyp) if flag == "HYP" else flag for flag in flags)]
    err = run_error(argv, capsys)
    assert "is sacrebleu's; sacrebleu's test sets are not bundled" in err, err
    assert "cannot read" not in err and "en-de:" not in err


def test_help_says_what_the_code_does(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The command's summary names chrF; -sl turns effective order on under sacrebleu only,
    as ``bleu --help`` says."""
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "chrF" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["bleu", "--help"])
    assert "on with -sl and --compat sacrebleu" in " ".join(capsys.readouterr().out.split())
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat on the mat\n", encoding="utf-8")
    for compat, eff in (("sacrebleu", "yes"), ("nltk", "no")):
        out = io.StringIO()
        argv = ["bleu", str(ref), "-sl", "-f", "json", "--compat", compat]
        main(argv, out, io.StringIO("the cat sat on the mat\n"))
        assert f"eff:{eff}" in json.loads(out.getvalue().splitlines()[0])["signature"]
