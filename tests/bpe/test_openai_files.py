"""The shipped r50k_base file and the p50k_base derived from it, against tiktoken's own loader
and its published hashes."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from tiktoken.load import data_gym_to_mergeable_bpe_ranks, load_tiktoken_bpe

from tensortext.bpe import openai_files
from tensortext.bpe.hf_json import bytes_to_unicode
from tensortext.bpe.openai_files import (
    P50K_EXTRA_TOKENS,
    P50K_SHA256,
    R50K_FILE,
    R50K_SHA256,
    p50k_from_r50k,
    p50k_ranks,
    r50k_ranks,
    tiktoken_file_bytes,
)
from tensortext.bpe.vocab import read_tiktoken_file

# tiktoken_ext/openai_public.py's hashes of GPT-2's vocab.bpe and encoder.json (gpt2's files).
GPT2_VOCAB_BPE_SHA256 = "1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5"
GPT2_ENCODER_JSON_SHA256 = "196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783"


def test_published_hashes_match_tiktoken() -> None:
    source = Path(pytest.importorskip("tiktoken_ext.openai_public").__file__).read_text()
    assert R50K_SHA256 in source
    assert P50K_SHA256 in source


def test_r50k_matches_tiktokens_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken would otherwise cache a copy
    plain = tmp_path / "r50k_base.tiktoken"
    plain.write_bytes(gzip.decompress(R50K_FILE.read_bytes()))
    expected = load_tiktoken_bpe(str(plain), expected_hash=R50K_SHA256)
    ranks = r50k_ranks()
    assert ranks == expected
    assert len(ranks) == 50256 and sorted(ranks.values()) == list(range(50256))


def test_shipped_gzip_is_reproducible() -> None:
    data = R50K_FILE.read_bytes()
    assert gzip.compress(gzip.decompress(data), compresslevel=9, mtime=0) == data


def test_tampered_r50k_raises_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = gzip.decompress(R50K_FILE.read_bytes()).splitlines(keepends=True)
    # Swap two tokens' ranks: still a well-formed file, so only the hash can catch it.
    token_a, rank_a = lines[100].split()
    token_b, rank_b = lines[101].split()
    lines[100], lines[101] = token_a + b" " + rank_b + b"\n", token_b + b" " + rank_a + b"\n"
    tampered = tmp_path / "r50k_base.tiktoken.gz"
    tampered.write_bytes(gzip.compress(b"".join(lines), mtime=0))
    assert len(read_tiktoken_file(tampered)) == 50256
    monkeypatch.setattr(openai_files, "R50K_FILE", tampered)
    with pytest.raises(ValueError, match=r"r50k_base\.tiktoken\.gz: sha256 .* differs"):
        r50k_ranks()
    with pytest.raises(ValueError, match="r50k_base"):
        p50k_ranks()


def test_p50k_reconstruction_has_the_published_hash() -> None:
    ranks = p50k_ranks()
    assert hashlib.sha256(tiktoken_file_bytes(ranks)).hexdigest() == P50K_SHA256
    assert len(ranks) == 50280 and 50256 not in ranks.values()
    assert [ranks[token] for token in P50K_EXTRA_TOKENS] == list(range(50257, 50281))
    assert tuple(b" " * n for n in range(2, 26)) == P50K_EXTRA_TOKENS
    assert ranks.items() >= r50k_ranks().items()


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r | {b"!": r[b'"'], b'"': r[b"!"]},  # two ranks swapped
        lambda r: {t: i for t, i in r.items() if i != 300},  # a token missing
        lambda r: r | {b"\t\t": 50256},  # a token more (where <|endoftext|> goes)
    ],
)
def test_p50k_from_wrong_r50k_raises(
    change: Callable[[dict[bytes, int]], dict[bytes, int]],
) -> None:
    with pytest.raises(ValueError, match=r"p50k_base rebuilt .* not the published"):
        p50k_from_r50k(change(r50k_ranks()))


def test_tiktoken_file_bytes_round_trips() -> None:
    data = gzip.decompress(R50K_FILE.read_bytes())
    assert tiktoken_file_bytes(r50k_ranks()) == data


def _last_merge(token: bytes, ranks: dict[bytes, int]) -> tuple[bytes, bytes]:
    """The pair whose merge makes ``token``: BPE's last step when it encodes ``token``."""
    parts = [bytes([byte]) for byte in token]
    while len(parts) > 2:
        i = min(
            (i for i in range(len(parts) - 1) if parts[i] + parts[i + 1] in ranks),
            key=lambda i: ranks[parts[i] + parts[i + 1]],
        )
        parts[i : i + 2] = [parts[i] + parts[i + 1]]
    return parts[0], parts[1]


def test_gpt2_files_rebuilt_from_r50k(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt2 = r50k_base: GPT-2's two files, rebuilt from r50k's ranks, have tiktoken's published
    hashes, and tiktoken's gpt2 loader turns them back into the same ranks."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    ranks = r50k_ranks()
    by_rank = sorted(ranks, key=ranks.__getitem__)
    char = bytes_to_unicode()

    def text(token: bytes) -> str:
        return "".join(char[byte] for byte in token)

    merges = [" ".join(map(text, _last_merge(token, ranks))) for token in by_rank[256:]]
    vocab_bpe = tmp_path / "vocab.bpe"
    vocab_bpe.write_bytes(("#version: 0.2\n" + "\n".join(merges) + "\n").encode())
    encoder = {text(token): rank for rank, token in enumerate(by_rank)} | {"<|endoftext|>": 50256}
    encoder_json = tmp_path / "encoder.json"
    encoder_json.write_bytes(json.dumps(encoder).encode())
    gpt2 = data_gym_to_mergeable_bpe_ranks(
        str(vocab_bpe),
        str(encoder_json),
        vocab_bpe_hash=GPT2_VOCAB_BPE_SHA256,
        encoder_json_hash=GPT2_ENCODER_JSON_SHA256,
    )
    assert gpt2 == ranks
