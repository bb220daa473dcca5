"""The real ``tensortext`` command in a subprocess, as the command-line tests run it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

TIMEOUT = 180
COMMAND = (sys.executable, "-m", "tensortext.cli")
ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
"""Unbuffered, and one thread for torch's intra-op pool (see conftest.py)."""


def run_cli(
    folder: Path, *args: str, preexec_fn: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    """``tensortext ARGS`` in ``folder``, standard input empty, text stdout and stderr."""
    return subprocess.run(
        [*COMMAND, *args],
        cwd=folder,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=ENV,
        preexec_fn=preexec_fn,
    )


def assert_user_error(result: subprocess.CompletedProcess[str], message: str) -> None:
    """Exit status 2, one line on stderr naming ``message``, no traceback."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("tensortext"), result.stderr
    assert message in result.stderr, result.stderr
