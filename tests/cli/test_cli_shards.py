"""``tensortext tokenize --format npy|bin``: a run's shard set replaces the last one as one step,
whatever stops it (an error, SIGINT, SIGTERM or SIGKILL while encoding or during the switch); the
index counts every document; a prefix that names a folder is refused.

After every interruption a glob of the prefix (``p_*``) must give exactly one run: its index and
the shards that index lists, holding that run's tokens (tiktoken's, cut every --shard-tokens).
Every command runs the real ``python -m tensortext.cli`` in a subprocess.
"""

from __future__ import annotations

import errno
import fcntl
import io
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from cli_process import COMMAND, TIMEOUT
from oracles.bpe import tiktoken_reference

from tensortext.cli import main
from tensortext.cli.shards import SWITCH_SIGNAL_ENV, ShardWriter

LINES = [f"line {n}: hello world, ünïcödé 日本語" if n % 7 else "" for n in range(60)]
OLD_SHARD_TOKENS, NEW_SHARD_TOKENS = 100, 300  # the old run has more shards than the new one
STATUS = {"SIGINT": 130, "SIGTERM": 143, "SIGHUP": -signal.SIGHUP, "SIGKILL": -signal.SIGKILL}
MESSAGE = {"SIGINT": "tensortext: interrupted\n", "SIGTERM": "tensortext: terminated\n"}


def env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1", **extra}


def tokenize(folder: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    """``tensortext tokenize -e cl100k_base ARGS -q`` in ``folder``."""
    return subprocess.run(
        [*COMMAND, "tokenize", "-e", "cl100k_base", *args, "-q"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env(**extra),
        stdin=subprocess.DEVNULL,
    )


def shard_run(folder: Path, shard_tokens: int, *, source: str = "in.txt", **extra: str):
    return tokenize(
        folder, "-i", source, "-o", "p", "--format", "npy", "--shard-tokens", str(shard_tokens),
        **extra,
    )  # fmt: skip


def reference(docs: list[str], shard_tokens: int, eot: bool = False) -> list[tuple[list, int]]:
    """tiktoken's ``encode_ordinary`` (+ end-of-text) of each document, cut every
    ``shard_tokens``: ``(tokens, documents)`` per shard, a document counted in the shard holding
    its last token (one with no tokens in the shard holding the token before it)."""
    encoder = tiktoken_reference("cl100k_base")
    tokens: list[int] = []
    ends = []
    for doc in docs:
        tokens += encoder.encode_ordinary(doc) + ([encoder.eot_token] if eot else [])
        ends.append(len(tokens))
    starts = range(0, max(len(tokens), 1), shard_tokens)
    counts = [0] * len(starts)
    for end in ends:
        counts[max(end - 1, 0) // shard_tokens] += 1
    return [
        (tokens[start : start + shard_tokens], n) for start, n in zip(starts, counts, strict=True)
    ]


def assert_one_run(folder: Path, docs: list[str], shard_tokens: int, eot: bool = False) -> None:
    """A glob of the prefix gives one index and exactly the shards it lists, with the tokens
    and document counts of the run that cut ``docs`` every ``shard_tokens``."""
    index = json.loads((folder / "p_index.json").read_text(encoding="utf-8"))
    names = sorted(path.name for path in folder.glob("p_*"))
    assert names == sorted([shard["file"] for shard in index["shards"]] + ["p_index.json"])
    expected = reference(docs, shard_tokens, eot)
    assert index["shard_tokens"] == shard_tokens
    assert [(np.load(folder / shard["file"]).tolist(), shard["documents"])
            for shard in index["shards"]] == expected  # fmt: skip
    assert index["documents"] == len(docs)
    assert index["tokens"] == sum(len(tokens) for tokens, _ in expected)


def in_process(folder: Path, *args: str) -> None:
    """``tensortext tokenize`` of ``folder/docs.txt`` to the prefix ``folder/p``, in this process
    (the counting tests need no fresh process)."""
    inputs = ["-i", str(folder / "docs.txt"), "-o", str(folder / "p"), "--format", "npy"]
    assert main(["tokenize", "-e", "cl100k_base", *inputs, "-q", *args], io.StringIO()) == 0


def hidden(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir() if path.name.startswith("."))


def assert_status(result: subprocess.CompletedProcess[str], status: int, stderr: str) -> None:
    assert (result.returncode, result.stderr) == (status, stderr), result.stderr


def writer(folder: Path, run: str, value: int = 7, tokens: int = 7) -> ShardWriter:
    """An in-process run with prefix ``folder/p`` holding ``tokens`` tokens ``value``, 3 a shard,
    its index marked ``run``; started (staging folder made), not closed."""
    started = ShardWriter(str(folder / "p"), "npy", "uint32", 3, {"run": run})
    started.add(np.full(tokens, value, np.int64), np.array([tokens]))
    return started


def assert_set(folder: Path, run: str, value: int = 7, tokens: int = 7) -> None:
    """A glob of the prefix gives exactly the set of :func:`writer`'s run ``run``."""
    index = json.loads((folder / "p_index.json").read_text(encoding="utf-8"))
    names = sorted(path.name for path in folder.glob("p_*"))
    assert names == sorted([shard["file"] for shard in index["shards"]] + ["p_index.json"])
    assert index["run"] == run
    loaded = [np.load(folder / shard["file"]) for shard in index["shards"]]
    assert np.concatenate(loaded).tolist() == [value] * tokens


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file()}  # fmt: skip


@pytest.fixture(scope="module")
def old_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The inputs and the shards of an earlier run with the prefix ``p``, made once."""
    folder = tmp_path_factory.mktemp("old_run")
    (folder / "in.txt").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    (folder / "bad.txt").write_text("fine\nnot <|endoftext|> fine\n", encoding="utf-8")
    assert shard_run(folder, OLD_SHARD_TOKENS).returncode == 0
    assert len(list(folder.glob("p_*.npy"))) > 3
    return folder


@pytest.fixture
def folder(tmp_path: Path, old_run: Path) -> Path:
    """A copy of :func:`old_run`."""
    for path in old_run.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    return tmp_path


def test_a_run_with_fewer_shards_replaces_the_whole_set(folder: Path) -> None:
    assert_one_run(folder, LINES, OLD_SHARD_TOKENS)
    assert shard_run(folder, NEW_SHARD_TOKENS).returncode == 0
    assert_one_run(folder, LINES, NEW_SHARD_TOKENS)  # no p_000002.npy of the old run
    assert hidden(folder) == []


def rename_number(folder: Path, phase: str) -> int:
    """The switch's second rename while the old set leaves, or while the new one comes."""
    return 2 if phase == "old" else len(list(folder.glob("p_*"))) + 2


@pytest.mark.parametrize(
    ("name", "phase"), [("SIGINT", "old"), ("SIGTERM", "new"), ("SIGHUP", "old")]
)
def test_a_signal_during_the_switch_takes_effect_after_it(
    folder: Path, name: str, phase: str
) -> None:
    hook = {SWITCH_SIGNAL_ENV: f"{name}@{rename_number(folder, phase)}"}
    assert_status(shard_run(folder, NEW_SHARD_TOKENS, **hook), STATUS[name], MESSAGE.get(name, ""))
    assert_one_run(folder, LINES, NEW_SHARD_TOKENS)
    assert hidden(folder) == []


@pytest.mark.parametrize("phase", ["old", "new"])
def test_sigkill_during_the_switch_is_finished_by_the_next_run(folder: Path, phase: str) -> None:
    """The next run with the prefix rolls the switch forward before its own work, even when
    that work then fails."""
    hook = {SWITCH_SIGNAL_ENV: f"SIGKILL@{rename_number(folder, phase)}"}
    killed = shard_run(folder, NEW_SHARD_TOKENS, **hook)
    assert killed.returncode == -signal.SIGKILL
    mixed = sorted(path.name for path in folder.glob("p_*"))
    assert "p_index.json" not in mixed  # the old index left first: no index beside a mix
    failed = shard_run(folder, 50, source="bad.txt")
    assert failed.returncode == 2 and "special token '<|endoftext|>'" in failed.stderr
    assert_one_run(folder, LINES, NEW_SHARD_TOKENS)
    assert hidden(folder) == []


@pytest.mark.skipif(os.name != "posix", reason="POSIX signals")
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_signal_while_encoding_keeps_the_old_set(folder: Path, name: str) -> None:
    """The staging folder is hidden from the glob; SIGINT and SIGTERM remove it, and the next
    run sweeps what SIGKILL left (and an earlier version's ``.part`` files)."""
    (folder / "big.txt").write_text("hello world 1234 ünïcödé 日本語\n" * 1_000_000, "utf-8")
    legacy = folder / ".p_000003.npy.0123abcd.part"  # an earlier version's temporary shard
    legacy.write_bytes(b"left by SIGKILL under tensortext 0.3")
    args = ("-i", "big.txt", "-o", "p", "--format", "npy", "--shard-tokens", "5000")
    process = subprocess.Popen(
        [*COMMAND, "tokenize", "-e", "cl100k_base", *args, "--batch-bytes", "65536",
         "--workers", "1", "-q"],
        cwd=folder, stderr=subprocess.PIPE, env=env(), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + TIMEOUT
    while not list(folder.glob(".p.tensortext-*/p_000001.npy")):  # encoding is under way
        assert process.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    process.send_signal(getattr(signal, name))
    _, stderr = process.communicate(timeout=TIMEOUT)
    assert (process.returncode, stderr.decode()) == (STATUS[name], MESSAGE.get(name, ""))
    assert_one_run(folder, LINES, OLD_SHARD_TOKENS)
    if name != "SIGKILL":  # the legacy part went when the run started
        assert hidden(folder) == []
        return
    assert len(hidden(folder)) == 1  # the dead run's staging folder
    (folder / legacy.name).write_bytes(b"left by SIGKILL under tensortext 0.3")
    failed = shard_run(folder, 50, source="bad.txt")
    assert failed.returncode == 2
    assert_one_run(folder, LINES, OLD_SHARD_TOKENS)
    assert hidden(folder) == []


@pytest.mark.parametrize(
    ("docs", "shard_tokens", "eot", "per_shard"),
    [
        (["hello world", "foo bar", "x"], 3, True, [1, 1, 1]),  # ends on a shard boundary
        (["hello world", "foo bar baz", ""], 2, False, [1, 0, 2]),  # an empty last line
        (["hello world", "", ""], 2, False, [3]),  # empty lines after a full shard
        ([], 5, False, [0]),  # an empty file: one empty shard, 0 tokens, 0 documents
    ],
    ids=["boundary", "blank-last", "blanks-after-full-shard", "empty-file"],
)
def test_documents_count_in_the_shard_holding_their_last_token(
    tmp_path: Path, docs: list[str], shard_tokens: int, eot: bool, per_shard: list[int]
) -> None:
    (tmp_path / "docs.txt").write_text("".join(doc + "\n" for doc in docs), encoding="utf-8")
    extra = ["--append-eot", "--ordinary"] if eot else []
    in_process(tmp_path, "--shard-tokens", str(shard_tokens), *extra)
    assert [n for _, n in reference(docs, shard_tokens, eot)] == per_shard
    assert_one_run(tmp_path, docs, shard_tokens, eot)


def test_a_thousand_lines_one_token_per_shard(tmp_path: Path) -> None:
    """Every line counted once, empty ones included, in small batches."""
    docs = ["", "a", "", "", "hello world", "x y z"] * 167
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n", encoding="utf-8")
    in_process(tmp_path, "--shard-tokens", "1", "--batch-bytes", "7")
    assert_one_run(tmp_path, docs, 1)


@pytest.mark.parametrize("prefix", ["sub/", ".", "", "sub"])
def test_a_prefix_naming_a_folder_is_refused(folder: Path, prefix: str) -> None:
    (folder / "sub").mkdir()
    before = sorted(path.name for path in folder.rglob("*"))
    result = tokenize(folder, "-i", "in.txt", "-o", prefix, "--format", "npy")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    expected = "pass a prefix for the shards" if not prefix else "is a folder, not a prefix"
    assert expected in result.stderr
    assert sorted(path.name for path in folder.rglob("*")) == before


@pytest.mark.parametrize("phase", ["old", "new"])
def test_a_killed_switch_never_lands_on_a_newer_set(folder: Path, phase: str) -> None:
    """A run started before another one is killed during its switch finishes that switch
    before its own, under the same lock: the next run finds the newer set whole."""
    newer = writer(folder, "newer")
    hook = {SWITCH_SIGNAL_ENV: f"SIGKILL@{rename_number(folder, phase)}"}
    assert shard_run(folder, NEW_SHARD_TOKENS, **hook).returncode == -signal.SIGKILL
    newer.close()
    assert_set(folder, "newer")
    assert hidden(folder) == []
    assert shard_run(folder, 50, source="bad.txt").returncode == 2
    assert_set(folder, "newer")
    assert hidden(folder) == []


def test_a_stale_journal_is_dropped_not_applied(
    folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A killed switch's journal that shows up again after a newer set came (a copy put back)
    replaces an index no longer in place: the next run deletes it."""
    hook = {SWITCH_SIGNAL_ENV: "SIGKILL@2"}
    assert shard_run(folder, NEW_SHARD_TOKENS, **hook).returncode == -signal.SIGKILL
    [staging] = hidden(folder)
    kept = tmp_path_factory.mktemp("kept") / staging
    shutil.copytree(folder / staging, kept)
    writer(folder, "newer").close()
    shutil.copytree(kept, folder / staging)
    assert shard_run(folder, 50, source="bad.txt").returncode == 2
    assert_set(folder, "newer")
    assert hidden(folder) == []


def test_a_staging_folder_is_judged_by_its_lock_not_its_pid(folder: Path) -> None:
    """PID 1 lives in every container, yet its run ended (its lock is free): swept. A run on
    another host holds its lock under a PID unknown here (above Linux's pid_max): kept."""
    ended = folder / ".p.tensortext-1-0123abcd"
    ended.mkdir()
    (ended / "lock").touch()
    (ended / "p_000000.npy").write_bytes(b"half a shard")
    running = folder / f".p.tensortext-{(1 << 22) + 1}-89abcdef"
    running.mkdir()
    (running / "lock").touch()
    with open(running / "lock", "rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        assert_status(shard_run(folder, NEW_SHARD_TOKENS), 0, "")
    assert hidden(folder) == [running.name]
    assert_one_run(folder, LINES, NEW_SHARD_TOKENS)


@pytest.mark.parametrize("journal", ["", '{"files": ', '{"files": 3}', '["p_index.json"]'])
def test_an_unreadable_journal_counts_as_never_committed(folder: Path, journal: str) -> None:
    staging = folder / ".p.tensortext-1-0123abcd"
    staging.mkdir()
    (staging / "switch.json").write_text(journal, encoding="utf-8")
    (staging / "p_index.json").write_text('{"shards": []}\n', encoding="utf-8")
    assert_status(shard_run(folder, NEW_SHARD_TOKENS), 0, "")
    assert_one_run(folder, LINES, NEW_SHARD_TOKENS)
    assert hidden(folder) == []


def test_files_are_synced_before_the_switch_and_the_folder_before_the_old_set_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str]] = []
    fsync, replace, rmtree = os.fsync, os.replace, shutil.rmtree

    def recorded(kind: str, call, name):  # type: ignore[no-untyped-def]
        def wrapper(first, *args, **kwargs):  # type: ignore[no-untyped-def]
            events.append((kind, name(first, *args)))
            return call(first, *args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        os, "fsync", recorded("fsync", fsync, lambda fd: os.readlink(f"/proc/self/fd/{fd}"))
    )
    monkeypatch.setattr(os, "replace", recorded("replace", replace, lambda src, dst: str(dst)))
    monkeypatch.setattr(shutil, "rmtree", recorded("rmtree", rmtree, lambda path: str(path)))
    writer(tmp_path, "new").close()
    folder = os.path.realpath(tmp_path)
    into_folder = [i for i, (kind, path) in enumerate(events)
                   if kind == "replace" and os.path.dirname(path) == str(tmp_path)]  # fmt: skip
    synced = {os.path.basename(path) for kind, path in events[: into_folder[0]] if kind == "fsync"}
    assert {"p_000000.npy", "p_000001.npy", "p_000002.npy", ".p_index.json.tmp",
            ".switch.json.tmp"} <= synced  # fmt: skip
    assert any(name.startswith(".p.tensortext-") for name in synced)  # the staging folder
    removed = next(i for i, (kind, _) in enumerate(events) if kind == "rmtree")
    assert ("fsync", folder) in events[into_folder[-1] : removed]
    assert_set(tmp_path, "new")


@pytest.mark.parametrize("stray", ["p_000099.npy", "p_1234567.bin", "no-index"])
def test_a_file_no_index_lists_stops_the_run_before_any_work(folder: Path, stray: str) -> None:
    if stray == "no-index":
        (folder / "p_index.json").unlink()
        stray = "p_000000.npy"
    (folder / stray).write_bytes(b"the user's own file")
    before = snapshot(folder)
    result = shard_run(folder, NEW_SHARD_TOKENS)
    message = f"{stray} is no shard of p_index.json; move it away or choose another -o prefix"
    assert_status(result, 2, f"tensortext: error: {message}\n")
    assert snapshot(folder) == before
    assert hidden(folder) == []


def test_a_full_disk_after_the_commit_point_does_not_stop_the_switch(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started = writer(folder, "new")

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "mkdir", full_disk)
    started.close()
    assert_set(folder, "new")


def test_abort_finishes_a_committed_switch_before_a_signal_acts(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The switch fails at its first new file (the run then aborts); Ctrl-C during abort's
    roll-forward waits until the new set is whole."""
    started = writer(folder, "new")
    replace = os.replace

    def failing(source: Path, target: Path) -> None:
        if Path(target).parent == folder:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        replace(source, target)

    monkeypatch.setattr(os, "replace", failing)
    with pytest.raises(OSError, match="cannot write"):
        started.close()
    monkeypatch.undo()
    monkeypatch.setenv(SWITCH_SIGNAL_ENV, "SIGINT@1")
    with pytest.raises(KeyboardInterrupt):
        started.abort()
    assert_set(folder, "new")
    assert hidden(folder) == []


def test_an_earlier_versions_index_temporary_file_is_swept(folder: Path) -> None:
    (folder / ".p_index.json.0123abcd.tmp").write_text('{\n "encoding": "cl1', encoding="utf-8")
    (folder / ".p_index.json.89abcdef.tmp").write_bytes(b"someone else's")  # not an index
    assert_status(shard_run(folder, NEW_SHARD_TOKENS), 0, "")
    assert hidden(folder) == [".p_index.json.89abcdef.tmp"]
