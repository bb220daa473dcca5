"""``import tensortext``: public names and subpackages on first use (PEP 562), nothing heavy at
import, the same names as when they were imported eagerly."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tensortext

EAGER_NAMES = {
    "BLEU", "MISSING_REF", "PAD_ID", "BleuConfig", "Encoding", "Flat", "Padded", "__version__",
    "bleu_from_stats", "bleu_stats", "corpus_bleu", "encoding_for_model",
    "encoding_name_for_model", "get_encoding", "list_encoding_names", "pad_ragged",
    "pad_ragged_refs", "sentence_bleu",
}  # fmt: skip


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_public_names_are_the_eager_ones():
    assert set(tensortext.__all__) == EAGER_NAMES
    assert set(dir(tensortext)) >= EAGER_NAMES
    for name in EAGER_NAMES:
        assert getattr(tensortext, name) is not None


def test_import_loads_no_torch():
    assert run("import sys, tensortext; print('torch' in sys.modules)") == "False"


def test_star_import_and_subpackages_after_a_bare_import():
    code = (
        "import tensortext\n"
        "print(tensortext.bleu.corpus_bleu.__name__, tensortext.padded.PAD_ID,"
        " tensortext.ngrams.__name__)\n"
        "print(tensortext.chrf.CHRF.__name__, tensortext.rouge.ROUGE.__name__)\n"
        "from tensortext import *\n"
        "print(get_encoding('gpt2').encode('hello world'))"
    )
    assert run(code).splitlines() == [
        "corpus_bleu -1 tensortext.ngrams", "CHRF ROUGE", "[31373, 995]"
    ]  # fmt: skip


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        tensortext.no_such_name  # noqa: B018
