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


SRC = ROOT / "src" / "tensortext"
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60


def _function_lengths(path: Path):
    """``(name, line, length)`` of every function, its docstring not counted."""
    import ast

    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        length = (node.end_lineno or node.lineno) - node.lineno + 1
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            if isinstance(body[0].value.value, str):
                length -= (body[0].end_lineno or body[0].lineno) - body[0].lineno + 1
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        reason = lines[first - 2].strip() if first >= 2 else ""
        yield node.name, node.lineno, length, reason.startswith("# long:")


def test_sizes():
    """No source file over 500 lines; no function over 60 (without its docstring) unless a
    ``# long: <reason>`` comment stands right above it."""
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_FILE_LINES:
            problems.append(f"{path.relative_to(ROOT)}: {count} lines")
        for name, line, length, excused in _function_lengths(path):
            if length > MAX_FUNCTION_LINES and not excused:
                problems.append(f"{path.relative_to(ROOT)}:{line} {name}: {length} lines")
    assert not problems, "\n".join(problems)
