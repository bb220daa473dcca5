"""``tensortext bleu`` on text (13a by default, -m bleu chrf) against the ``sacrebleu`` command,
both run on the same files: every output format prints what sacrebleu prints, the signature's
version (and tensortext's extra ``compat`` field) aside.

sacrebleu runs as its real console script; ours runs in-process through ``main`` (one subprocess
test checks the real ``tensortext`` command), which keeps the file fast.
"""

from __future__ import annotations

import contextlib
import doctest
import io
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
import sacrebleu as sacrebleu_package
import torch
from cli_process import run_cli
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.utils import print_single_results

from tensortext import __version__, bleu_stats
from tensortext.bleu import BleuConfig
from tensortext.bleu.tokenizers import TokenVocab
from tensortext.cli import chrf_options, main, scoring
from tensortext.padded import Padded

SACREBLEU = Path(sys.executable).parent / "sacrebleu"
THEIR_VERSION = sacrebleu_package.__version__

# Punctuation next to digits, HTML entities, <skipped>, Unicode (CJK, Greek, Cyrillic, Arabic
# digits, combining marks, emoji, astral letters), leading and trailing whitespace, a carriage
# return, empty hypotheses and references.
HYP = [
    "The cat sat on the mat.",
    'He said: "It costs $5.50 (approx.), not 4-5 euros!"   ',
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3059\u30022023\u5e74\u3002",
    "",
    "  Leading & &quot;entities&quot; -- e-mail <skipped> cafe\u0301 na\u00efve \U0001f600 "
    "\U0001d518\U0001d52b",
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac, \u0420\u0443\u0441\u0441\u043a\u0438\u0439;"
    " \u0661\u0662\u0663.\r",
    "x",
    "U.S. GDP grew 2.5% in Q3 -- analysts (e.g. Smith) expected 2,1%...",
]
REF1 = [
    "The cat sat on a mat.",
    'He said: "It cost $5.50, approx." Not 4 - 5 euros.',
    "\u6771\u4eac\u306f\u65e5\u672c\u306e\u9996\u90fd\u3067\u3042\u308b\u30022023\u5e74\u3002",
    "Nothing here.",
    'Leading &amp; "entities" - e-mail caf\u00e9 naive \U0001f600 \U0001d518',
    "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03ac \u0420\u0443\u0441\u0441\u043a\u0438\u0439"
    " \u0661\u0662\u0663",
    "x y",
    "U.S. GDP grew 2.5 % in Q3; analysts (e.g. Smith) expected 2.1%.",
]
REF2 = [
    "A cat sat on the mat!",
    "He says it costs 5.50 dollars, not 4-5 euros.",
    "\u6771\u4eac\u306f\u9996\u90fd\u3002",
    "",
    "Leading & entities -- email cafe\u0301 na\u00efve",
    "Greek, Russian; \u0661\u0662\u0663.",
    "",
    "The U.S. economy grew 2.5% in Q3 -- (e.g. Smith) expected 2,1%...",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("text")
    for name, lines in (("hyp.txt", HYP), ("ref1.txt", REF1), ("ref2.txt", REF2)):
        (folder / name).write_bytes("".join(f"{line}\n" for line in lines).encode())
    return folder


def sacrebleu(folder: Path, *args: str) -> str:
    done = subprocess.run(
        [str(SACREBLEU), *args], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def ours(folder: Path, *args: str) -> str:
    """``tensortext bleu ARGS`` in-process, in ``folder``."""
    out = io.StringIO()
    with contextlib.chdir(folder):
        main(["bleu", *args, "--device", "cpu"], stdout=out)
    return out.getvalue()


def as_theirs(text: str) -> str:
    """Our signature written as sacrebleu's: without ``compat``, with sacrebleu's version."""
    text = text.replace("|compat:sacrebleu", "")
    return text.replace(f"version:{__version__}", f"version:{THEIR_VERSION}").replace(
        f"v:{__version__}", f"v:{THEIR_VERSION}"
    )


def assert_same_output(theirs: str, mine: str) -> None:
    """Equal after :func:`as_theirs`; JSON compared as values and key order. Text lines are
    compared without the alignment padding, which depends on the signature's length
    (test_alignment_is_sacrebleus checks the alignment itself)."""
    if theirs.lstrip().startswith(("{", "[")):
        expected, got = json.loads(theirs), json.loads(mine)
        for record in got if isinstance(got, list) else [got]:
            if isinstance(record, dict):
                record.pop("compat", None)
                for key in ("signature", "version"):
                    record[key] = as_theirs(f"{key}:{record[key]}").split(":", 1)[1]
        assert json.dumps(got) == json.dumps(expected), (mine, theirs)
    else:
        lines = [line.strip() for line in as_theirs(mine).splitlines()]
        assert lines == [line.strip() for line in theirs.splitlines()], (mine, theirs)


CHRF_FLAGS = ("-f", "text", "-cc", "4", "--chrf-beta", "3", "--chrf-whitespace",
              "--chrf-lowercase", "--chrf-eps-smoothing")  # fmt: skip
CASES = [
    pytest.param(("ref1.txt",), id="default-json"),
    pytest.param(("ref1.txt", "ref2.txt", "-f", "text"), id="two-refs-text"),
    pytest.param(("ref1.txt", "ref2.txt", "-m", "bleu", "chrf"), id="bleu-chrf-json"),
    pytest.param(("ref1.txt", "ref2.txt", "-m", "chrf", "bleu", "-f", "text"), id="bleu-chrf-text"),
    pytest.param(("ref1.txt", "ref2.txt", "-m", "bleu", "chrf", "-b"), id="bleu-chrf-scores"),
    pytest.param(("ref1.txt", "ref2.txt", "-sl", "-w", "3"), id="sentence-bleu"),
    pytest.param(("ref1.txt", "ref2.txt", "-sl", "-m", "chrf"), id="sentence-chrf"),
    pytest.param(("ref1.txt", "-tok", "intl", "-w", "3", "-f", "text"), id="intl-w3"),
    pytest.param(("ref1.txt", "ref2.txt", "-tok", "char", "-lc", "-sh", "-f", "text"), id="char"),
    pytest.param(("ref1.txt", "ref2.txt", "-tok", "none", "-b", "-w", "6"), id="none"),
    pytest.param(("ref1.txt", "ref2.txt", "-m", "chrf", "-cw", "2", "-w", "4"), id="chrf++"),
    pytest.param(("ref1.txt", "ref2.txt", "-m", "chrf", *CHRF_FLAGS), id="chrf-options"),
]


@pytest.mark.parametrize("args", CASES)
def test_output_equals_the_sacrebleu_command(
    files: Path, args: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SACREBLEU_FORMAT", raising=False)
    argv = (*args[: args.index("ref1.txt") + 1 + ("ref2.txt" in args)], "-i", "hyp.txt")
    argv += tuple(arg for arg in args if arg not in ("ref1.txt", "ref2.txt"))
    assert_same_output(sacrebleu(files, *argv), ours(files, *argv))


def test_the_real_command_reads_standard_input_and_sacrebleu_format(files: Path) -> None:
    """The console script, hypotheses on stdin, $SACREBLEU_FORMAT honoured as sacrebleu does."""
    hyp = (files / "hyp.txt").read_bytes()
    env = {"SACREBLEU_FORMAT": "text"}
    expected = subprocess.run(
        [str(SACREBLEU), "ref1.txt", "ref2.txt", "-m", "bleu", "chrf"],
        cwd=files, input=hyp, capture_output=True, timeout=120, env={**run_env(), **env},
    ).stdout.decode()  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "tensortext.cli", "bleu", "ref1.txt", "ref2.txt", "-m", "bleu",
         "chrf"],
        cwd=files, input=hyp, capture_output=True, timeout=120, env={**run_env(), **env},
    )  # fmt: skip
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert_same_output(expected, done.stdout.decode())


def run_env() -> dict[str, str]:
    import os

    return {**os.environ, "OMP_NUM_THREADS": "1"}


def test_alignment_is_sacrebleus(capsys: pytest.CaptureFixture[str]) -> None:
    """The text lines of several metrics, right-aligned at ``=`` by sacrebleu's own printer."""
    lines = ["BLEU|nrefs:1|tok:13a = 1.0 2/3", "chrF2++|nrefs:1|nc:6|nw:2 = 45.6", "X|a = 1"]
    for results in (lines, lines[:1], ["1.0", "2.0"]):
        args = type("Args", (), {"format": "text"})()
        print_single_results(list(results), args)
        expected = capsys.readouterr().out
        score_only = "=" not in results[0]
        assert scoring.format_results(results, False, score_only) + "\n" == expected


def test_chunked_statistics_equal_one_batch(files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """BLEU in length-sorted blocks of a few positions and chrF a few lines at a time give
    sacrebleu's scores, per segment (-sl) and for the corpus."""
    monkeypatch.setattr(scoring, "BLOCK_POSITIONS", {"cpu": 40, "cuda": 40})
    monkeypatch.setattr(chrf_options, "CHRF_BLOCK_LINES", 3)
    for metric in ("bleu", "chrf"):
        for level in ((), ("-sl",)):
            argv = ("ref1.txt", "ref2.txt", "-i", "hyp.txt", "-m", metric, "-f", "text", "-w", "6")
            argv += level
            assert_same_output(sacrebleu(files, *argv), ours(files, *argv))


def test_blocks_cover_every_row_once() -> None:
    widths = [1, 1, 2, 3, 3, 3, 7, 50, 50]
    spans = list(scoring.blocks(widths, 6))
    assert spans[0][0] == 0 and spans[-1][1] == len(widths)
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(spans))
    assert all((end - start) * widths[end - 1] <= 6 or end - start == 1 for start, end in spans)


def test_bleu_corpus_stats_equal_bleu_stats() -> None:
    """Rows come back in input order, whatever the blocks: equal to one padded batch."""
    lines = [HYP, REF1, REF2]
    vocab = TokenVocab("13a")
    flats = [vocab.encode_flat([line.rstrip() for line in side]) for side in lines]
    config = BleuConfig()
    got = scoring.bleu_corpus_stats(flats[0], flats[1:], config, torch.device("cpu"))
    hyp = vocab.encode_batch([line.rstrip() for line in HYP])
    refs = [vocab.encode_batch([line.rstrip() for line in side]) for side in lines[1:]]
    width = max(ref.ids.shape[1] for ref in refs)
    ref_ids = torch.stack(
        [torch.nn.functional.pad(r.ids, (0, width - r.ids.shape[1]), value=-1) for r in refs], 1
    )
    expected = bleu_stats(hyp, Padded(ref_ids, torch.stack([r.lengths for r in refs], 1)))
    assert torch.equal(got, expected)


def test_an_id_file_scores_the_same_as_text_unless_spelled_two_ways(tmp_path: Path) -> None:
    """13a leaves canonical integers alone, so an ID file scored without --ids gets the BLEU of
    --ids; "007" and "7" are one ID but two 13a words."""
    (tmp_path / "hyp.txt").write_text("1 2 3 4 5\n17 8 9 9\n10 11\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("1 2 3 4 6\n17 9 8 9\n10 11 12\n", encoding="utf-8")
    argv = ("ref.txt", "-i", "hyp.txt", "-w", "6", "-f", "text")
    as_text, as_ids = ours(tmp_path, *argv), ours(tmp_path, *argv, "--ids")
    assert "tok:13a" in as_text and "tok:ids" in as_ids
    assert as_text.split(" = ")[1] == as_ids.split(" = ")[1]
    assert as_text.split(" = ")[1] == sacrebleu(tmp_path, *argv).split(" = ")[1]
    (tmp_path / "hyp.txt").write_text("1 2 3 4 5\n017 8 9 9\n10 11\n", encoding="utf-8")
    assert ours(tmp_path, *argv, "-b") != ours(tmp_path, *argv, "--ids", "-b")


def sacrebleu_bleu(hyps: list[str], refs: list[list[str]]) -> float:
    return float(SacreBLEU().corpus_score(hyps, refs).score)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("-t", "wmt14"), "-t/--test-set is sacrebleu's; sacrebleu's test sets are not bundled"),
        (("-l", "en-de"), "-l/--language-pair is sacrebleu's"),
        (("--confidence",), "use sacrebleu --confidence"),
        (("--paired-bs",), "use sacrebleu --paired-bs/--paired-ar"),
        (("-nr", "2"), "write one file per reference"),
        (("-d",), "use sacrebleu -d"),
        (("-m", "bleu", "ter"), "-m ter: TER is not implemented: use sacrebleu -m ter"),
        (("--ter-normalized",), "TER is not implemented"),
        (("-tok", "zh"), "-tok zh: sacrebleu's Chinese segmentation is not implemented"),
        (("-tok", "flores200"), "score the IDs with --ids"),
        (("-tok", "ja-mecab"), "it needs MeCab"),
        (("-sl", "-m", "bleu", "chrf"), "-sl scores one metric at a time"),
        (("--ids", "-m", "chrf"), "-m chrf scores the characters of text"),
        (("--ids",), "hyp.txt, line 1: 'The' is not a token ID (ASCII digits 0-9); the lines"),
        (("-f", "latex"), "-f latex is sacrebleu's table of several systems"),
        (("-cc", "0", "-m", "chrf"), "-cc/--chrf-char-order"),
    ],
)
def test_what_tensortext_lacks_is_refused_by_name(
    files: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        ours(files, "ref1.txt", "-i", "hyp.txt", *args)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("tensortext: error: ") and err.count("\n") == 1, err
    assert message in err, err


def test_several_systems_or_references_after_i_are_refused(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """sacrebleu reads -i a.txt b.txt as two systems; reading b.txt as a second reference
    would silently score the wrong thing."""
    for argv in (("ref1.txt", "-i", "hyp.txt", "ref2.txt"), ("-i", "hyp.txt", "ref1.txt")):
        with pytest.raises(SystemExit):
            ours(files, *argv)
        assert "-i takes one hypothesis file, got 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        ours(files, "-i", "hyp.txt")
    assert "no reference file: pass them before -i" in capsys.readouterr().err


def test_sacrebleus_quiet_flags_are_accepted(files: Path) -> None:
    plain = ours(files, "ref1.txt", "-i", "hyp.txt", "-b")
    assert ours(files, "ref1.txt", "-i", "hyp.txt", "-b", "-q", "-nc", "--force") == plain
    assert float(plain) == round(sacrebleu_bleu(HYP, [[r.rstrip() for r in REF1]]), 1)


def test_refusals_run_in_the_real_command(files: Path) -> None:
    """One line, exit 2, no traceback, from the console command (-t is not read as -tok)."""
    done = run_cli(files, "bleu", "ref1.txt", "-i", "hyp.txt", "-t", "wmt14", "-l", "en-de")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith("tensortext: error: -t/--test-set is sacrebleu's")


def test_docstring_examples() -> None:
    result = doctest.testmod(scoring)
    assert result.attempted > 0 and result.failed == 0
