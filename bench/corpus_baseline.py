#!/usr/bin/env python
"""The baseline of ``bench_corpus.py``: nanoGPT's ``fineweb.py`` loop on tiktoken, alone in its
process (only tiktoken, numpy and the standard library are imported, as in nanoGPT).

    python bench/corpus_baseline.py SPEC.pickle CORPUS.jsonl PREFIX WORKERS SHARD_TOKENS

``SPEC.pickle`` holds ``tiktoken.Encoding``'s constructor arguments (the bench writes it from
the same vocabulary files tensortext reads). Each document's tokens are ``encode_ordinary``
followed by the end-of-text token; shards of ``SHARD_TOKENS`` are written with ``np.save``.
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import sys
from typing import Any

import numpy as np
import tiktoken

_ENCODER: Any = None


def _start(spec: dict[str, Any]) -> None:
    global _ENCODER
    _ENCODER = tiktoken.Encoding(**spec)


def _tokenize(line: str) -> np.ndarray:
    tokens = _ENCODER.encode_ordinary(json.loads(line)["text"])
    tokens.append(_ENCODER.eot_token)
    return np.array(tokens, dtype=np.uint32)


def main(spec_path: str, corpus: str, prefix: str, workers: int, shard_tokens: int) -> None:
    with open(spec_path, "rb") as stream:
        spec = pickle.load(stream)
    dtype = np.uint16 if tiktoken.Encoding(**spec).max_token_value < 1 << 16 else np.uint32
    shard = np.empty(shard_tokens, dtype=dtype)
    filled, index = 0, 0

    def write(tokens: np.ndarray) -> None:
        nonlocal index
        np.save(f"{prefix}_{index:06d}.npy", tokens)
        index += 1

    with (
        open(corpus, encoding="utf-8") as lines,
        multiprocessing.Pool(workers, initializer=_start, initargs=(spec,)) as pool,
    ):
        for tokens in pool.imap(_tokenize, lines, chunksize=16):
            while tokens.size:
                take = min(shard_tokens - filled, tokens.size)
                shard[filled : filled + take] = tokens[:take]
                filled += take
                tokens = tokens[take:]
                if filled == shard_tokens:
                    write(shard)
                    filled = 0
    if filled or index == 0:
        write(shard[:filled])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
