"""Parity beyond cl100k/o200k: Llama-3 (tiktoken file from llama-models) and HF tokenizer.json.

Llama-3 is the vocabulary whose ranks go down after some merges, so it exercises the serial
fallback on real data; the HF file is transformers' conversion of cl100k_base, compared with
the ``tokenizers`` library itself.
"""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import random
from functools import lru_cache
from pathlib import Path

import pytest
import tiktoken
from hypothesis import given
from hypothesis import strategies as st
from strategies import SETTINGS
from tiktoken.load import load_tiktoken_bpe

import tensortext.bpe.core as core
from tensortext.bpe import Encoding
from tensortext.bpe.pretokenize import CL100K_PATTERN, LLAMA3_PATTERN
from tensortext.bpe.registry import vocabulary_file
from tensortext.bpe.vocab import bytes_to_unicode

LLAMA3_SPECIALS = {"<|begin_of_text|>": 128000, "<|end_of_text|>": 128001}
MIXED = st.lists(
    st.sampled_from(
        [*"aZé 'sLLve\t\n\r0123456789!?/.,日本語नमस्ते\u0301\u00a0", "👨\u200d👩\u200d👧", "HTTPS"]
    ),
    max_size=40,
).map("".join)


def llama3_file() -> Path:
    spec = importlib.util.find_spec("llama_models")
    assert spec is not None and spec.origin is not None, "the dev extra installs llama-models"
    return Path(spec.origin).parent / "llama3" / "tokenizer.model"


@lru_cache(maxsize=1)
def llama3() -> tuple[Encoding, tiktoken.Encoding]:
    path = llama3_file()
    ours = Encoding.from_tiktoken_file(
        path, pat_str=LLAMA3_PATTERN, special_tokens=LLAMA3_SPECIALS, name="llama3"
    )
    ranks = load_tiktoken_bpe(str(path))
    return ours, tiktoken.Encoding(
        "llama3", pat_str=LLAMA3_PATTERN, mergeable_ranks=ranks, special_tokens=LLAMA3_SPECIALS
    )


def assert_rows_equal(ours: Encoding, texts: list[str], expected: list[list[int]]) -> None:
    ids, lengths = ours.encode_batch(texts, disallowed_special=())
    for row, (text, want) in enumerate(zip(texts, expected, strict=True)):
        got = ids[row, : lengths[row]].tolist()
        assert got == want, f"first differing text: {text!r}\n got {got}\nwant {want}"


def random_token_texts(reference: tiktoken.Encoding, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    top = reference.n_vocab - len(reference.special_tokens_set) - 1
    return [reference.decode(rng.sample(range(top), rng.randint(1, 12))) for _ in range(count)]


def test_llama3_random_token_concatenations_match_tiktoken() -> None:
    ours, reference = llama3()
    texts = random_token_texts(reference, 400, seed=0)
    assert_rows_equal(ours, texts, reference.encode_ordinary_batch(texts, num_threads=1))


def test_llama3_serial_fallback_is_exercised_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Llama-3 has pieces whose parallel passes would differ; they go serial and still match."""
    ours, reference = llama3()
    calls: list[bytes] = []
    original = core.merge_serial

    def counting(piece: bytes, *args: object) -> list[int]:
        calls.append(piece)
        return original(piece, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(core, "merge_serial", counting)
    texts = random_token_texts(reference, 3000, seed=1)
    assert_rows_equal(ours, texts, reference.encode_ordinary_batch(texts, num_threads=1))
    assert calls, "no irregular piece in 3,000 texts: the fallback went untested"


@SETTINGS
@given(st.lists(MIXED, min_size=1, max_size=6))
def test_llama3_random_text_matches_tiktoken(texts: list[str]) -> None:
    ours, reference = llama3()
    assert_rows_equal(ours, texts, [reference.encode_ordinary(text) for text in texts])


@lru_cache(maxsize=1)
def hf_cl100k(tmp_dir: str) -> tuple[Encoding, object]:
    from transformers.convert_slow_tokenizer import TikTokenConverter

    plain = Path(tmp_dir) / "cl100k_base.tiktoken"
    plain.write_bytes(gzip.decompress(vocabulary_file("cl100k_base").read_bytes()))
    tokenizer = TikTokenConverter(vocab_file=str(plain), pattern=CL100K_PATTERN).converted()
    path = Path(tmp_dir) / "tokenizer.json"
    tokenizer.save(str(path))
    return Encoding.from_hf_json(path), tokenizer


@pytest.fixture(scope="module")
def hf_pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Encoding, object]:
    return hf_cl100k(str(tmp_path_factory.mktemp("hf")))


def test_hf_tokenizer_json_matches_tokenizers(hf_pair: tuple[Encoding, object]) -> None:
    ours, tokenizer = hf_pair
    texts = [
        "hello world",
        "It's 2024!  Don't   stop\n\n  now ",
        "日本語のテキスト、हिन्दी और 👨\u200d👩\u200d👧",
        "   trailing spaces   ",
        "x" * 500,
        "",
    ]
    texts += random_token_texts(tiktoken_cl100k(), 200, seed=2)
    expected = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]  # type: ignore[attr-defined]
    assert_rows_equal(ours, texts, expected)


@SETTINGS
@given(st.lists(MIXED, min_size=1, max_size=6))
def test_hf_tokenizer_json_random_text(hf_pair: tuple[Encoding, object], texts: list[str]) -> None:
    ours, tokenizer = hf_pair
    expected = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]  # type: ignore[attr-defined]
    assert_rows_equal(ours, texts, expected)


@lru_cache(maxsize=1)
def tiktoken_cl100k() -> tiktoken.Encoding:
    from oracles.bpe import tiktoken_reference

    return tiktoken_reference("cl100k_base")


@SETTINGS
@given(st.lists(MIXED, min_size=1, max_size=4))
def test_hf_pre_tokenizer_split_is_reproduced(
    hf_pair: tuple[Encoding, object], texts: list[str]
) -> None:
    """Our cl100k_hf split equals tokenizers' own pre-tokenizer (Oniguruma semantics)."""
    import torch

    from tensortext.bpe import piece_starts

    _, tokenizer = hf_pair
    byte_level = bytes_to_unicode()
    for text in texts:
        expected = [piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(text)]  # type: ignore[attr-defined]
        codepoints = torch.tensor([ord(c) for c in text], dtype=torch.int32)
        starts = piece_starts(codepoints, torch.tensor([len(text)]), "cl100k_hf").nonzero()
        bounds = [*starts.flatten().tolist(), len(text)]
        ours = [
            "".join(byte_level[b] for b in text[a:b].encode("utf-8"))
            for a, b in itertools.pairwise(bounds)
        ]
        assert ours == expected, f"text {text!r}"
