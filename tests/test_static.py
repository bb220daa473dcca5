"""The package stays ruff- and mypy-clean (strict) on src/, and its docstring examples run."""

from __future__ import annotations

import doctest
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

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


def modules_with_examples() -> list[str]:
    """Every module under src/ whose docstrings hold an example that runs (``>>>`` without
    ``doctest: +SKIP``, which marks examples that need a model or a GPU)."""
    names = []
    for path in sorted((ROOT / "src" / "tensortext").rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        if any(">>> " in line and "+SKIP" not in line for line in lines):
            parts = path.relative_to(ROOT / "src").with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples(name):
    """Every docstring example in the package runs and prints what it shows."""
    module = importlib.import_module(name)
    result = doctest.testmod(module, extraglobs={"torch": torch})
    assert result.attempted > 0, f"{module.__name__} has no docstring examples to run"
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
        docstring = body[0] if body and isinstance(body[0], ast.Expr) else None
        value = getattr(docstring, "value", None)
        if (
            docstring is not None
            and isinstance(value, ast.Constant)
            and isinstance(value.value, str)
        ):
            length -= (docstring.end_lineno or docstring.lineno) - docstring.lineno + 1
        # The comment block right above the def (or its decorators) may start with "# long:".
        above = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 2
        while above > 0 and lines[above - 1].strip().startswith("#"):
            above -= 1
        reason = lines[above].strip() if above >= 0 else ""
        yield node.name, node.lineno, length, reason.startswith("# long:")


def test_sizes():
    """No source file over 500 lines; no function over 60 (without its docstring) unless the
    comment right above it starts with ``# long: <reason>``."""
    problems = []
    c_sources = sorted((ROOT / "csrc").glob("*.[ch]"))
    assert c_sources, "csrc/ holds the C extension"
    for path in [*sorted(SRC.rglob("*.py")), *c_sources]:
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_FILE_LINES:
            problems.append(f"{path.relative_to(ROOT)}: {count} lines")
        if path.suffix != ".py":
            continue
        for name, line, length, excused in _function_lengths(path):
            if length > MAX_FUNCTION_LINES and not excused:
                problems.append(f"{path.relative_to(ROOT)}:{line} {name}: {length} lines")
    assert not problems, "\n".join(problems)


def test_the_c_extension_is_built_where_a_compiler_is():
    """``pip install`` builds ``tensortext.bpe._native`` wherever a C compiler is found; it
    is optional only for machines without one (the Python host encoder then runs)."""
    import tensortext.bpe.native as native

    if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")):
        pytest.skip("no C compiler on this machine: the pure-Python host encoder runs")
    assert native._native is not None, "a C compiler is here, but the extension was not built"
    switched_off = os.environ.get("TENSORTEXT_NATIVE", "").strip().lower() in native._OFF
    assert native.native_available() or switched_off


def test_readme_pipeline_example_runs():
    """The README's five lines from text to BLEU run and score what they say."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## From text to BLEU in five lines", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    *body, last = code.strip().splitlines()
    namespace: dict[str, object] = {}
    exec("\n".join(body), namespace)
    score = eval(last.split("#")[0], namespace)
    assert float(score) == 1.0
