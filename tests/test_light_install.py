"""The tokenizer without torch: what ``pip install tensortext`` (no ``[torch]`` extra) gives.

Each test runs a fresh interpreter in which ``import torch`` fails (``sys.modules["torch"] =
None``, as if it were not installed) and compares what it prints with tiktoken's IDs, computed
here. A torch-only name must fail with an ``ImportError`` that names the extra to install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from oracles.bpe import tiktoken_reference
from oracles.hf import hf_file, hf_tokenizer

import tensortext

NO_TORCH = "import sys\nsys.modules['torch'] = None  # as if torch were not installed\n"
HINT = 'pip install "tensortext[torch]"'
TEXTS = [
    "hello world",
    "",
    "Caf\u00e9 na\u00efve \u4f60\u597d\u4e16\u754c \U0001f600 it's 12345 tokens\n\n  x = f(1)",
    "a" * 3000,  # one long piece: the Python encoder once handed such pieces to the tensor engine
    "<|endoftext|> is special",
]


def run_python(
    code: str, *, native: bool = True, torch: bool = False
) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, after :data:`NO_TORCH` unless ``torch`` (``native=False``:
    the Python host encoder, ``TENSORTEXT_NATIVE=0``)."""
    env = {**os.environ, "TENSORTEXT_NATIVE": "1" if native else "0"}
    return subprocess.run(
        [sys.executable, "-c", ("" if torch else NO_TORCH) + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def printed_json(result: subprocess.CompletedProcess[str]) -> object:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_import_loads_neither_torch_nor_numpy() -> None:
    """``import tensortext`` is cheap, with torch installed too: the heavy modules load when a
    name that needs them is used, and ``dir()`` still lists every public name."""
    code = """
        import json, sys
        import tensortext
        names = dir(tensortext)
        print(json.dumps([sorted(m for m in ("torch", "numpy") if m in sys.modules), names]))
    """
    loaded, names = printed_json(run_python(code, torch=True))  # type: ignore[misc]
    assert loaded == []
    assert set(tensortext.__all__) <= set(names)
    assert {"bpe", "bleu", "decode", "padded"} <= set(names)


@pytest.mark.parametrize("native", [True, False], ids=["c-encoder", "python-encoder"])
@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_the_tokenizer_runs_without_torch(name: str, native: bool) -> None:
    """tiktoken's list and numpy methods, decoding numpy arrays, and the unstable tail, with
    both host encoders and no torch, equal tiktoken."""
    reference = tiktoken_reference(name)
    code = f"""
        import json, sys
        import numpy as np
        import tensortext
        enc = tensortext.get_encoding({name!r})
        texts = {TEXTS!r}
        rows = enc.encode_batch(texts, allowed_special="all")
        ids, lengths = enc.encode_batch_to_numpy(texts, allowed_special="all")
        single = enc.encode_to_numpy(texts[2])
        print(json.dumps({{
            "rows": rows,
            "flat": [ids.dtype.name, ids.tolist(), lengths.tolist()],
            "single": [single.dtype.name, single.tolist()],
            "ordinary": enc.encode_ordinary(texts[4]),
            "decoded": enc.decode(single),
            "decoded_batch": enc.decode_batch(np.array([rows[0], rows[0]], dtype=np.uint32)),
            "unstable": enc.encode_with_unstable("hello fanta")[0],
            "torch": "torch" in sys.modules and sys.modules["torch"] is not None,
        }}))
    """
    got = printed_json(run_python(code, native=native))
    expected_rows = [reference.encode(text, allowed_special="all") for text in TEXTS]
    assert got["rows"] == expected_rows  # type: ignore[index]
    assert got["flat"] == [  # type: ignore[index]
        "uint32",
        [token for row in expected_rows for token in row],
        list(map(len, expected_rows)),
    ]
    assert got["single"] == ["uint32", reference.encode(TEXTS[2])]  # type: ignore[index]
    assert got["ordinary"] == reference.encode_ordinary(TEXTS[4])  # type: ignore[index]
    assert got["decoded"] == TEXTS[2]  # type: ignore[index]
    assert got["decoded_batch"] == [TEXTS[0], TEXTS[0]]  # type: ignore[index]
    assert got["unstable"] == reference.encode_with_unstable("hello fanta")[0]  # type: ignore[index]
    assert got["torch"] is False  # type: ignore[index]


@pytest.mark.parametrize("name", ["qwen3", "deepseek_v3"])
def test_a_tokenizer_json_loads_without_torch(name: str) -> None:
    """``Encoding.from_hf_json`` and its list methods need no torch (with the C encoder, which
    splits DeepSeek-V3's sequence too)."""
    path = hf_file(name)
    code = f"""
        import json
        from tensortext import Encoding
        enc = Encoding.from_hf_json({str(path)!r})
        print(json.dumps(enc.encode_batch({TEXTS[:3]!r}, allowed_special="all")))
    """
    expected = [hf_tokenizer(name).encode(text, add_special_tokens=False).ids for text in TEXTS[:3]]
    assert printed_json(run_python(code)) == expected


@pytest.mark.parametrize(
    "expression",
    [
        "tensortext.BLEU",
        "tensortext.pad_ragged([[1, 2]])",
        "tensortext.ngrams",
        "__import__('tensortext.bleu')",
        "__import__('tensortext.decode')",
        "__import__('tensortext.mbr')",
        "__import__('tensortext.ngrams')",
        "__import__('tensortext.bpe.pretokenize')",
        "tensortext.get_encoding('cl100k_base').encode_to_tensor('x')",
        "tensortext.get_encoding('cl100k_base').encode_batch_to_tensor(['x'])",
        "tensortext.bpe.piece_starts",
    ],
)
def test_a_torch_only_name_names_the_extra(expression: str) -> None:
    code = f"""
        import tensortext
        try:
            {expression}
        except ImportError as error:
            print(type(error).__name__, error)
        else:
            print("no error")
    """
    result = run_python(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(("ImportError", "ModuleNotFoundError")), result.stdout
    assert HINT in result.stdout, result.stdout


def test_the_tokenize_command_writes_shards_without_torch(tmp_path: Path) -> None:
    """``tensortext tokenize`` to ``.npy`` shards, read back with ``np.load``; a device other
    than the CPU is refused in one line that names the extra."""
    docs = tmp_path / "docs.txt"
    docs.write_text("\n".join(["hello world", "Caf\u00e9 \u4f60\u597d", "x = f(1)"]) + "\n")
    code = """
        import sys
        from tensortext.cli import main
        sys.exit(main(sys.argv[1:]))
    """
    command = [sys.executable, "-c", NO_TORCH + textwrap.dedent(code), "tokenize"]
    args = ["-e", "cl100k_base", "-i", str(docs), "-o", str(tmp_path / "p"), "--format", "npy"]
    result = subprocess.run([*command, *args, "-q"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    index = json.loads((tmp_path / "p_index.json").read_text(encoding="utf-8"))
    tokens = np.concatenate([np.load(tmp_path / shard["file"]) for shard in index["shards"]])
    reference = tiktoken_reference("cl100k_base")
    expected = [token for line in docs.read_text().splitlines() for token in reference.encode(line)]
    assert tokens.tolist() == expected

    refused = subprocess.run(
        [*command, "-e", "cl100k_base", "--device", "cuda"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr and HINT in refused.stderr, refused.stderr


@pytest.mark.parametrize(
    ("args", "status", "expected"),
    [
        (["--help"], 0, "tokenize"),
        (["--version"], 0, "tensortext "),
        (["bleu", "ref.txt"], 2, HINT),
        (["translate"], 2, HINT),
        (["tokenise"], 2, "invalid choice: 'tokenise'"),
        (["tokenize", "-e", "gpt2", "--pretokenize", "bytes"], 2, HINT),
    ],
    ids=["help", "version", "bleu", "translate", "typo", "bytes"],
)
def test_the_command_line_without_torch(args: list[str], status: int, expected: str) -> None:
    """``python -m tensortext``: help and the tokenizer work; a command that needs torch says
    which extra to install, in one line, before any work."""
    code = NO_TORCH + "import runpy\nrunpy.run_module('tensortext', run_name='__main__')"
    command = [sys.executable, "-c", code, *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, input="")
    assert result.returncode == status, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert expected in result.stdout + result.stderr
    if status == 2:
        assert result.stderr.count("\n") == 1, result.stderr


def test_decode_on_the_command_line_without_torch(tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    reference = tiktoken_reference("gpt2")
    ids.write_text(" ".join(map(str, reference.encode("hello world"))) + "\n")
    code = "import sys\nfrom tensortext.cli import main\nsys.exit(main(sys.argv[1:]))"
    args = ["tokenize", "-e", "gpt2", "--decode", "-i", str(ids)]
    result = subprocess.run(
        [sys.executable, "-c", NO_TORCH + code, *args], capture_output=True, text=True, timeout=300
    )
    assert (result.returncode, result.stdout) == (0, "hello world\n"), result.stderr
