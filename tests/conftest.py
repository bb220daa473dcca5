"""Shared pytest configuration for the tensortext test suite."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

# Allow `pytest` from a checkout without `pip install -e .` (the src layout is otherwise not
# importable).  An installed tensortext wins.
_SRC = Path(__file__).resolve().parent.parent / "src"
if importlib.util.find_spec("tensortext") is None and _SRC.is_dir():
    sys.path.insert(0, str(_SRC))

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def pytest_report_header(config: pytest.Config) -> list[str]:
    import hypothesis
    import nltk
    import sacrebleu
    from strategies import MAX_EXAMPLES

    return [
        f"torch {torch.__version__} (devices: {', '.join(DEVICES)}), nltk {nltk.__version__}, "
        f"sacrebleu {sacrebleu.__version__}, hypothesis {hypothesis.__version__}",
        f"hypothesis examples per test: {MAX_EXAMPLES} (TENSORTEXT_HYPOTHESIS_EXAMPLES)",
    ]


@pytest.fixture(params=DEVICES)
def device(request: pytest.FixtureRequest) -> str:
    """Every device this machine has (CPU, plus CUDA when available)."""
    return str(request.param)
