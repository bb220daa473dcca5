"""``--device`` accepts what the package computes on (``cpu``, ``cuda``, ``cuda:N``, ``auto``,
``mps`` where torch has it) and refuses anything else with one line and exit status 2.

``--device meta`` used to end every command in a traceback. Every test runs the real command
(``python -m tensortext.cli``) in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import torch
from cli_process import assert_user_error as assert_one_line
from cli_process import run_cli as run

ACCEPTED = "pass cpu, cuda, cuda:N" + (", mps" if torch.backends.mps.is_available() else "")

# Each subcommand with the smallest valid input it reads (in.txt holds "2 3").
COMMANDS = {
    "tokenize": ("tokenize", "-e", "cl100k_base", "-i", "in.txt"),
    "bleu": ("bleu", "in.txt", "-i", "in.txt"),
    "translate": ("translate", "-q", "-i", "in.txt"),
    "demo": ("demo",),
}


def assert_user_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    assert_one_line(result, message)
    assert result.stdout == ""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "in.txt").write_text("2 3\n", encoding="utf-8")
    return tmp_path


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_meta_is_refused_by_every_command(folder: Path, command: str) -> None:
    result = run(folder, *COMMANDS[command], "--device", "meta")
    assert_user_error(result, f"--device 'meta' is not a device tensortext computes on; {ACCEPTED}")
    assert sorted(os.listdir(folder)) == ["in.txt"]


@pytest.mark.parametrize(
    ("device", "message"),
    [
        ("xpu", "--device 'xpu' is not a device tensortext computes on"),
        ("cuda:x", "--device 'cuda:x' is not a torch device"),
        ("", "--device '' is not a torch device"),
        ("gpu\n" + "x" * 10_000, "--device 'gpu\\n" + "x" * 36 + "'... is not"),  # 40 chars
    ],
    ids=["xpu", "bad-index", "empty", "long"],
)
def test_other_devices_are_refused(folder: Path, device: str, message: str) -> None:
    result = run(folder, *COMMANDS["tokenize"], "--device", device)
    assert_user_error(result, message)
    assert len(result.stderr) < 200  # the user's 10,000 characters are not echoed


def test_a_cuda_device_this_machine_lacks_is_refused(folder: Path) -> None:
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    result = run(folder, *COMMANDS["tokenize"], "--device", f"cuda:{count}")
    if count == 0:
        assert_user_error(result, "--device cuda:0: CUDA is not available here; pass --device cpu")
    else:
        assert_user_error(result, f"--device cuda:{count}: this machine has {count} CUDA device")


@pytest.mark.parametrize("device", ["cpu", "cpu:0", "auto"])
def test_devices_computed_on_are_accepted(folder: Path, device: str) -> None:
    result = run(folder, *COMMANDS["tokenize"], "--device", device)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout == "17 220 18\n"  # cl100k's IDs of "2 3"
