"""The ranks behind tiktoken's gpt2, r50k_base, p50k_base and p50k_edit, offline.

tiktoken downloads these; we ship ``data/r50k_base.tiktoken.gz`` (openai-whisper's
``gpt2.tiktoken``, byte for byte tiktoken's ``r50k_base.tiktoken``; gpt2's ``vocab.bpe`` and
``encoder.json`` give the same ranks) and derive p50k_base from it: r50k_base plus Codex's 24
whitespace tokens, runs of 2 to 25 spaces at ranks 50257 to 50280. Both are checked against the
sha256 that tiktoken publishes for the file it would download (``tiktoken_ext/openai_public.py``);
p50k_base's over the file rebuilt from the derived ranks.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path

from tensortext.bpe.vocab import read_tiktoken_file, sha256_of

__all__ = [
    "P50K_EXTRA_TOKENS",
    "P50K_SHA256",
    "R50K_FILE",
    "R50K_SHA256",
    "p50k_from_r50k",
    "p50k_ranks",
    "r50k_ranks",
    "tiktoken_file_bytes",
]

R50K_SHA256 = "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930"
P50K_SHA256 = "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069"
R50K_FILE = Path(__file__).with_name("data") / "r50k_base.tiktoken.gz"
# p50k_base's tokens beyond r50k_base, in rank order from 50257 (ranks 50257..50280).
P50K_EXTRA_TOKENS: tuple[bytes, ...] = tuple(b" " * n for n in range(2, 26))


def tiktoken_file_bytes(ranks: Mapping[bytes, int]) -> bytes:
    """The tiktoken file of ``ranks``: ``base64(token) rank\\n`` per token, in rank order."""
    ordered = sorted(ranks.items(), key=lambda item: item[1])
    return b"".join(base64.b64encode(token) + b" %d\n" % rank for token, rank in ordered)


def r50k_ranks() -> dict[bytes, int]:
    """r50k_base's (= gpt2's) 50,256 mergeable ranks, from the shipped file.

    Raises:
        ValueError: naming the file, if its sha256 is not :data:`R50K_SHA256`.
    """
    return read_tiktoken_file(R50K_FILE, expected_hash=R50K_SHA256)


def p50k_from_r50k(r50k: Mapping[bytes, int]) -> dict[bytes, int]:
    """p50k_base's ranks: ``r50k`` plus :data:`P50K_EXTRA_TOKENS` at ranks 50257 onwards.

    Raises:
        ValueError: if the rebuilt p50k_base file's sha256 is not :data:`P50K_SHA256`.
    """
    # 50256 stays free: it is <|endoftext|>, a special token in both encodings.
    ranks = dict(r50k) | {token: 50257 + i for i, token in enumerate(P50K_EXTRA_TOKENS)}
    digest = sha256_of(tiktoken_file_bytes(ranks))
    if digest != P50K_SHA256:
        raise ValueError(
            f"p50k_base rebuilt from r50k_base ({R50K_FILE}) has sha256 {digest}, not the "
            f"published {P50K_SHA256}; the r50k ranks are not tiktoken's"
        )
    return ranks


def p50k_ranks() -> dict[bytes, int]:
    """p50k_base's 50,280 mergeable ranks (also p50k_edit's), derived from r50k_base.

    Raises:
        ValueError: if the shipped file or the derived ranks miss their published sha256.
    """
    return p50k_from_r50k(r50k_ranks())
