"""The shape of ``tensortext.bpe``: its modules import each other without a circle, and one
module (``backends``) chooses the encoder.

The import graph is read from the source with ``ast``: every ``import`` and ``from ... import``
of a ``tensortext.bpe`` module, except those under ``if TYPE_CHECKING:`` (annotations only,
never run). Imports inside functions count too: an import moved into a function to dodge a
circle would still be one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tensortext.bpe

PACKAGE = "tensortext.bpe"
ROOT = Path(tensortext.bpe.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join([PACKAGE, *(parts[:-1] if parts[-1] == "__init__" else parts)])


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def imports(node: ast.AST, module: str) -> set[str]:
    """The ``tensortext.bpe`` modules that ``node``'s imports load, ``if TYPE_CHECKING:``
    blocks left out. ``from tensortext.bpe import x`` is an edge to submodule ``x`` if there
    is one (the package ``__init__`` runs first for every submodule: not counted)."""
    found: set[str] = set()
    for child in ast.iter_child_nodes(node):
        if is_type_checking(child):
            found |= set().union(*(imports(item, module) for item in child.orelse))
            continue
        if isinstance(child, ast.Import):
            found |= {alias.name for alias in child.names}
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:  # relative: from the module's package
                is_package = MODULES[module].name == "__init__.py"
                package = module if is_package else module.rsplit(".", 1)[0]
                for _ in range(child.level - 1):
                    package = package.rsplit(".", 1)[0]
                base = f"{package}.{base}" if base else package
            for alias in child.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
        found |= imports(child, module)
    return {name for name in found if name in MODULES and name != module}


def import_graph() -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = imports(tree, name)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its modules in order, the first repeated), or ``None``."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := visit(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_the_graph_is_read() -> None:
    """The reader sees the edges it should (else an empty graph would pass)."""
    graph = import_graph()
    assert "tensortext.bpe.backends" in graph["tensortext.bpe.core"]
    assert "tensortext.bpe.native" in graph["tensortext.bpe.backends"]
    assert "tensortext.bpe.engine" in graph["tensortext.bpe.backends"]  # inside a function
    assert "tensortext.bpe.vocab" in graph["tensortext.bpe.hf_json"]
    assert "tensortext.bpe.core" not in graph["tensortext.bpe.tensor_api"]  # TYPE_CHECKING


def test_no_import_circles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle or [])


def test_a_circle_is_found() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


# Each encoder's entry points (what builds or runs it), by the module that defines them.
ENTRY_POINTS = {
    "tensortext.bpe.native": {"native_encoder", "threaded_encoder", "encode_segments_flat"},
    "tensortext.bpe.host": {"HostEncoder"},
    "tensortext.bpe.engine": {"encode_flat", "merge_byte_pieces", "piece_texts"},
}
SRC = ROOT.parent


def test_only_backends_reaches_an_encoder() -> None:
    """Outside ``backends.py`` (and the encoders' own modules), no module of the package, the
    command line or the integrations names an encoder's entry point: they call ``Encoding``'s
    methods, and ``backends`` chooses."""
    names = set().union(*ENTRY_POINTS.values())
    found = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        if module in ENTRY_POINTS or module == "tensortext.bpe.backends":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            used: set[str] = set()
            if isinstance(node, ast.ImportFrom) and node.module in ENTRY_POINTS:
                used = {alias.name for alias in node.names} & names
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in {"native", "host", "engine"}  # the modules, imported by name
            ):
                used = {node.attr} & names
            found += [f"{module}:{node.lineno} {name}" for name in sorted(used)]
    assert not found, found
