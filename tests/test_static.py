"""The package stays ruff- and mypy-clean (strict) on src/, and its docstring examples run."""

from __future__ import annotations

import doctest
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tensortext.bleu
import tensortext.bpe.core
import tensortext.decode.beam
import tensortext.decode.bundled
import tensortext.decode.lmbr
import tensortext.integrations.trl
import tensortext.metric
import tensortext.ngrams

ROOT = Path(__file__).resolve().parents[1]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_ruff():
    result = run("ruff", "check", "src", "tests", "bench", "scripts")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy():
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    "module",
    [
        tensortext.bleu,
        tensortext.bpe.core,
        tensortext.metric,
        tensortext.ngrams,
        tensortext.integrations.trl,
        tensortext.decode.beam,
        tensortext.decode.bundled,
        tensortext.decode.lmbr,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module):
    result = doctest.testmod(module, extraglobs={"torch": torch})
    assert result.failed == 0
