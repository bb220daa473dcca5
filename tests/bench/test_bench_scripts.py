"""The benchmark scripts (bench/): public API only, no import cycles, no issue numbers, and
every baseline on the thread count the table says."""

from __future__ import annotations

import ast
import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
SCRIPTS = sorted(BENCH.rglob("*.py"))
# tiktoken's own documented way to extend an encoding (its README): the reference library's
# attributes, read from tiktoken objects.
TIKTOKEN_EXTENSION = {"_pat_str", "_mergeable_ranks", "_special_tokens"}


def private_uses(path: Path) -> list[str]:
    """``x._name`` (not on ``self``), and imports of private names or private modules."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            on_self = isinstance(node.value, ast.Name) and node.value.id == "self"
            if not (on_self or node.attr.startswith("__") or node.attr in TIKTOKEN_EXTENSION):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tensortext"):
            parts = [*(node.module or "").split("."), *(a.name for a in node.names)]
            if any(p.startswith("_") and not p.startswith("__") for p in parts):
                found.append(f"{path.name}:{node.lineno} from {node.module} import ...")
    return found


def test_benchmarks_use_only_public_names():
    found = [use for path in SCRIPTS for use in private_uses(path)]
    assert not found, "\n".join(found)


def sibling_imports(path: Path, siblings: set[str]) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names & siblings


def test_benchmark_modules_import_no_cycle():
    modules = {path.stem: path for path in BENCH.glob("*.py")}
    graph = {name: sibling_imports(path, set(modules)) for name, path in modules.items()}

    def cycle_from(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return [*trail[trail.index(name) :], name]
        for nxt in sorted(graph[name]):
            found = cycle_from(nxt, [*trail, name])
            if found:
                return found
        return None

    for name in sorted(graph):
        cycle = cycle_from(name, [])
        assert cycle is None, " -> ".join(cycle)


def test_benchmarks_cite_no_issue_numbers():
    pattern = re.compile(r"\bissues? \d+|\bissue #?\d+|(?<![\w/])#\d+\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in SCRIPTS
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert not found, "\n".join(found)


@pytest.fixture
def bench_bpe(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCH))
    import bench_bpe

    return bench_bpe


def test_quicktok_runs_on_the_thread_count_of_the_benchmark(bench_bpe, monkeypatch):
    """quicktok's ``encode_batch`` uses every core unless told ``threads=``: the one-thread
    tables must not compare our one thread with its whole pool."""
    calls: list[int] = []

    class Tokenizer:
        def encode_batch(self, texts: list[str], threads: int = 0, with_special: bool = False):
            calls.append(threads)
            return np.zeros(0, np.uint32), np.zeros(len(texts) + 1, np.int64)

    fake = types.ModuleType("quicktok")
    fake.get_encoding = lambda name: Tokenizer()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "quicktok", fake)
    fns, missing = bench_bpe.baselines("cl100k_base", {"hf_tokenizers", "bpe_openai"}, 3)
    assert "quicktok" not in missing, missing
    fns["quicktok"](["hello world"])
    assert calls == [3]
