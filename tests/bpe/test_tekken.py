"""``Encoding.from_tekken`` / ``read_tekken`` against mistral-common's ``Tekkenizer`` on the Tekken
files it ships, and against tiktoken built from the same ranks: the IDs of every method and
backend, decoding, the special tokens, the vocabulary cut to ``default_vocab_size``; and
malformed files, each refused naming the file and field.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
import os
from functools import cache
from pathlib import Path
from typing import Any
from unittest import mock

import mistral_common
import pytest
from bpe_strategies import TIKTOKEN_CHAR, rich_texts, runs
from hypothesis import given
from hypothesis import strategies as st
from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
from mistral_common.tokens.tokenizers.tekken import Tekkenizer
from strategies import SETTINGS

from tensortext.bpe import Encoding
from tensortext.bpe.patterns import TEKKEN_PATTERN
from tensortext.bpe.tekken import DEPRECATED_SPECIAL_TOKENS, read_tekken

DATA = Path(mistral_common.__file__).parent / "data"
FILES = ["tekken_240718.json", "tekken_240911.json"]
BY_FILE = pytest.mark.parametrize("file", FILES)
TEXTS = [
    "",
    " ",
    "Hello, world! It's a test.",
    "DON'T WE'LL they're I'M",  # no contraction suffixes in Tekken's letter runs
    "   leading and trailing   ",
    "\n\n\n  \t\t\r\n \u3000\xa0x",
    "1234567890 3.14159 ١٢٣٤ ½ \U0001d7d9",
    "def f(x):\n    return x ** 2  # comment\n\nclass A:\n\tpass\n",
    "日本語のテキスト。中文文本\uff0c还有标点\uff01한국어 텍스트 русский текст",
    "नमस्ते दुनिया ÀÀ日A ǅemo e\u0301 Ünïcödé",
    "emoji 😀👍🏽 👨\u200d👩\u200d👧\u200d👦 ❤\ufe0f",
    "<s>[INST] special text [/INST]</s> <SPECIAL_999>",
    "a" * 2000,
    "lone \ud800 surrogate",
]
HYPOTHESIS_TEXTS = rich_texts(other=TIKTOKEN_CHAR) | runs()


@cache
def tekkens(file: str) -> tuple[Encoding, Any, Any]:
    """Ours, mistral-common's ``Tekkenizer`` and tiktoken over the file's kept ranks."""
    import tiktoken

    path = DATA / file
    data = json.loads(path.read_bytes())
    config = data["config"]
    count = config["default_vocab_size"] - config["default_num_special_tokens"]
    ranks = {base64.b64decode(e["token_bytes"]): e["rank"] for e in data["vocab"][:count]}
    reference = tiktoken.Encoding(file, pat_str=config["pattern"], mergeable_ranks=ranks,
                                  special_tokens={})  # fmt: skip
    return Encoding.from_tekken(path), Tekkenizer.from_file(path), reference


def expected_rows(file: str, texts: list[str]) -> list[list[int]]:
    """``Tekkenizer.encode(text, bos=False, eos=False)``, checked against tiktoken + N."""
    _, tekkenizer, reference = tekkens(file)
    rows = [tekkenizer.encode(text, bos=False, eos=False) for text in texts]
    offset = tekkenizer.num_special_tokens
    assert rows == [[t + offset for t in row] for row in reference.encode_ordinary_batch(texts)]
    return rows


def assert_every_method(file: str, texts: list[str], *, tensor_engine: bool = True) -> None:
    """Every encode method's rows (on the C encoder, and the tensor engine if asked) equal
    mistral-common's."""
    enc = tekkens(file)[0]
    expected = expected_rows(file, texts)
    flat, lengths = enc.encode_batch_to_numpy(texts, disallowed_special=())
    bounds = [0, *lengths.cumsum().tolist()]
    rows = {
        "encode_ordinary": [enc.encode_ordinary(text) for text in texts],
        "encode": [enc.encode(text, disallowed_special=()) for text in texts],
        "encode_batch": enc.encode_batch(texts, disallowed_special=()),
        "encode_ordinary_batch": enc.encode_ordinary_batch(texts),
        "encode_batch_to_numpy": [flat[a:b].tolist() for a, b in itertools.pairwise(bounds)],
    }
    for merge_backend in ("auto", "torch") if tensor_engine else ("auto",):
        ids, lens = enc.encode_batch_to_tensor(
            texts, disallowed_special=(), merge_backend=merge_backend
        )
        rows[f"to_tensor {merge_backend}"] = [ids[b, : lens[b]].tolist() for b in range(len(texts))]
    for method, got in rows.items():
        for text, row, want in zip(texts, got, expected, strict=True):
            assert row == want, f"{file}, {method}: {text!r}: {row} != mistral-common's {want}"


@BY_FILE
def test_hand_picked_texts(file: str) -> None:
    assert_every_method(file, TEXTS)


@BY_FILE
@SETTINGS
@given(texts=st.lists(HYPOTHESIS_TEXTS, max_size=4))
def test_hypothesis_texts(file: str, texts: list[str]) -> None:
    """(The tensor engine, a tenth of a second a call on a CPU, runs the hand-picked texts.)"""
    assert_every_method(file, texts, tensor_engine=False)


@BY_FILE
def test_python_encoder(file: str) -> None:
    """The Python encoder (``TENSORTEXT_NATIVE=0`` at the first call) gives the same IDs."""
    with mock.patch.dict(os.environ, {"TENSORTEXT_NATIVE": "0"}):
        enc = Encoding._from_vocab(tekkens(file)[0]._vocab)
        assert enc.encode_ordinary_batch(TEXTS) == expected_rows(file, TEXTS)


@BY_FILE
def test_decode(file: str) -> None:
    enc, tekkenizer, _ = tekkens(file)
    for text in TEXTS:
        ids = tekkenizer.encode(text, bos=False, eos=False)
        assert enc.decode(ids) == tekkenizer.decode(ids)
    # Cut UTF-8 (single byte tokens) and special tokens: mistral-common decodes the ordinary
    # runs between special tokens apart, keeping each special token's name (KEEP).
    n = tekkenizer.num_special_tokens
    ids = [1, n + 0xE6, n + 0x97, 3, n + 0xA5, 5, n + 0xF0, n + 0x9F, 999, 2]
    keep = SpecialTokenPolicy.KEEP
    assert enc.decode(ids) == tekkenizer.decode(ids, special_token_policy=keep)
    assert enc.decode_bytes(ids[1:3]) == tekkenizer.id_to_byte_piece(ids[1]) + bytes([0x97])
    for token in [0, 1, 19, 20, 999, n, n + 255, n + 256, enc.n_vocab - 1]:
        assert enc.decode_single_token_bytes(token) == tekkenizer.id_to_byte_piece(token, keep)


@BY_FILE
def test_special_tokens(file: str) -> None:
    enc, tekkenizer, _ = tekkens(file)
    n = tekkenizer.num_special_tokens
    names = list(DEPRECATED_SPECIAL_TOKENS) + [f"<SPECIAL_{i}>" for i in range(20, n)]
    assert enc._special_tokens == {name: tekkenizer.get_special_token(name) for name in names}
    assert enc._special_tokens == {name: index for index, name in enumerate(names)}
    assert all(enc.is_special_token(i) for i in range(n)) and not enc.is_special_token(n)
    assert enc.encode_single_token("[INST]") == tekkenizer.get_special_token("[INST]") == 3
    text = "<s>[INST] hi [/INST]"
    assert enc.encode(text, allowed_special="all") == [1, 3, *expected_rows(file, [" hi "])[0], 4]
    with pytest.raises(ValueError, match="disallowed_special"):
        enc.encode(text)
    assert enc.encode_ordinary(text) == tekkenizer.encode(text, bos=False, eos=False)


@BY_FILE
def test_vocabulary_cut_to_default_vocab_size(file: str) -> None:
    enc, tekkenizer, _ = tekkens(file)
    data = json.loads((DATA / file).read_bytes())
    config = data["config"]
    count = config["default_vocab_size"] - config["default_num_special_tokens"]
    assert len(data["vocab"]) > count  # the file holds more ranks than the encoding keeps
    assert enc.n_vocab == enc.max_token_value + 1 == tekkenizer.n_words == 131072
    assert len(enc._mergeable_ranks) == count
    assert enc.pattern_kind == "tekken" and config["pattern"] == TEKKEN_PATTERN
    cut = base64.b64decode(data["vocab"][count]["token_bytes"])  # the first rank left out
    assert cut not in enc._mergeable_ranks
    assert enc.encode_ordinary(cut.decode("utf-8", "replace")) == tekkenizer.encode(
        cut.decode("utf-8", "replace"), bos=False, eos=False
    )


# ------------------------------------------------------------------ small files
SMALL_MERGES = ["th", "he", "the", " the", "in", "ing", "  ", " w", "or", "ld", "日本"]


def small_file(*, special_tokens: bool = True, extra: int = 2) -> dict[str, Any]:
    """A Tekken file of 256 byte tokens and a few merges (``extra`` beyond the kept size), with
    4 special tokens (2 listed, 2 fillers) or none listed (version v3)."""
    tokens = [bytes([b]) for b in range(256)] + [m.encode() for m in SMALL_MERGES]
    vocab = [
        {"rank": rank, "token_bytes": base64.b64encode(token).decode(), "token_str": None}
        for rank, token in enumerate(tokens)
    ]
    num_special = 4 if special_tokens else 25
    data: dict[str, Any] = {
        "config": {
            "pattern": TEKKEN_PATTERN,
            "num_vocab_tokens": len(vocab),
            "default_vocab_size": len(vocab) - extra + num_special,
            "default_num_special_tokens": num_special,
            "version": "v13" if special_tokens else "v3",
        },
        "vocab": vocab,
    }
    if special_tokens:
        data["special_tokens"] = [
            {"rank": 0, "token_str": "<unk>", "is_control": True},
            {"rank": 1, "token_str": "<s>", "is_control": True},
        ]
    return data


def write(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.mark.parametrize("special_tokens", [True, False], ids=["listed", "deprecated"])
def test_small_files_as_mistral_common(tmp_path: Path, special_tokens: bool) -> None:
    """Fillers after the listed (or deprecated) special tokens, and the cut vocabulary."""
    path = write(tmp_path / "tekken_small.json", small_file(special_tokens=special_tokens))
    enc, tekkenizer = Encoding.from_tekken(path), Tekkenizer.from_file(path)
    assert enc.name == "tekken_small"
    assert enc.n_vocab == tekkenizer.n_words
    names = [tekkenizer.id_to_piece(i) for i in range(tekkenizer.num_special_tokens)]
    assert enc._special_tokens == {name: i for i, name in enumerate(names)}
    for text in ["the thing  日本 world\n", "  the  ld or w", "", "<s> x", "日本語"]:
        ids = tekkenizer.encode(text, bos=False, eos=False)
        assert enc.encode_ordinary(text) == ids, text
        assert enc.decode(ids) == tekkenizer.decode(ids)
    assert "日本".encode() not in enc._mergeable_ranks  # the last two ranks are cut


def malformed(data: dict[str, Any], edit: str) -> Any:
    """A copy of ``data`` with one defect."""
    data = copy.deepcopy(data)
    config, vocab = data["config"], data["vocab"]
    if edit == "not_json":
        return "{not json"
    if edit == "not_object":
        return [1, 2]
    if edit == "no_config":
        del data["config"]
    elif edit == "no_pattern":
        del config["pattern"]
    elif edit == "unknown_pattern":
        config["pattern"] = r"\w+|\s+"
    elif edit == "kind_name_pattern":
        config["pattern"] = "tekken"
    elif edit == "too_small":
        config["default_vocab_size"] = 248
    elif edit == "size_not_int":
        config["default_vocab_size"] = "100"
    elif edit == "bad_version":
        config["version"] = "latest"
    elif edit == "too_many_specials":
        config["default_num_special_tokens"] = 1
    elif edit == "too_few_entries":
        config["default_vocab_size"] += 10
    elif edit == "rank_order":
        vocab[262]["rank"] = 263
    elif edit == "not_base64":
        vocab[260]["token_bytes"] = "@@@"
    elif edit == "not_its_byte":
        vocab[65]["token_bytes"] = base64.b64encode(b"B").decode()
    elif edit == "repeated_token":
        vocab[261]["token_bytes"] = vocab[260]["token_bytes"]
    elif edit == "repeated_special":
        data["special_tokens"][1]["token_str"] = "<unk>"
    elif edit == "special_rank":
        data["special_tokens"][1]["rank"] = 5
    elif edit == "no_special_list":
        del data["special_tokens"]
    elif edit == "no_vocab":
        data["vocab"] = {}
    return data


MALFORMED = {  # edit -> the field the message names
    "not_json": "not a Tekken JSON",
    "not_object": "JSON object",
    "no_config": "config must be an object, got nothing",
    "no_pattern": "config.pattern must be a string",
    "unknown_pattern": "config.pattern",
    "size_not_int": "config.default_vocab_size must be an integer, got a string",
    "kind_name_pattern": "config.pattern='tekken'",
    "too_small": r"default_vocab_size - 256 = -8\]",
    "bad_version": "config.version",
    "too_many_specials": "config.default_num_special_tokens=1",
    "too_few_entries": "vocab has 267 entries",
    "rank_order": r"vocab\[262\].rank",
    "not_base64": r"vocab\[260\].token_bytes is not base64",
    "not_its_byte": r"vocab\[65\].token_bytes",
    "repeated_token": r"vocab\[261\].token_bytes",
    "repeated_special": "'<unk>' is used twice",
    "special_rank": r"special_tokens\[1\].rank",
    "no_special_list": "special_tokens is missing",
    "no_vocab": "vocab must be a list, got an object",
}


@pytest.mark.parametrize("edit", list(MALFORMED))
def test_malformed_files(tmp_path: Path, edit: str) -> None:
    path = write(tmp_path / "tekken_bad.json", malformed(small_file(), edit))
    with pytest.raises(ValueError, match=MALFORMED[edit]) as error:
        read_tekken(path)
    assert str(path) in str(error.value)
