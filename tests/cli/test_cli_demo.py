"""`tensortext demo` as a console command: the bundled pipeline, beside sacrebleu."""

from __future__ import annotations

import re
import subprocess
import sys

from tensortext.demo import DEMO_BLEU_TOLERANCE


def test_demo_runs_as_a_console_command():
    result = subprocess.run(
        [sys.executable, "-m", "tensortext.cli", "demo", "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert "corpus BLEU, 1 reference :  56.76" in result.stdout
    assert "sacrebleu --tokenize none, 1 reference:  56.76" in result.stdout
    # Every BPE line matches tiktoken and decodes back.
    assert result.stdout.count("identical to tiktoken on 725/725 lines") == 2
    assert result.stdout.count("decode(encode(text)) == text: True") == 2
    # Beam search and LMBR on the bundled test set, with the recorded scores.
    rows = (re.match(r"\s+(.+?)\s+BLEU\s+([\d.]+)", line) for line in result.stdout.splitlines())
    bleu = {row[1]: float(row[2]) for row in rows if row}
    # The recorded scores, within the tolerance the model tests allow under another BLAS.
    assert abs(bleu["K=4"] - 93.63) <= DEMO_BLEU_TOLERANCE, bleu
    assert abs(bleu["bundled model + LMBR"] - 94.44) <= DEMO_BLEU_TOLERANCE, bleu
    assert bleu["weaker system alone"] < bleu["bundled model"] < bleu["bundled model + LMBR"]


def test_python_dash_m_without_arguments_is_a_usage_error():
    result = subprocess.run(
        [sys.executable, "-m", "tensortext.cli"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert result.stderr == (
        "tensortext: error: the following arguments are required: command (see tensortext --help)\n"
    )
