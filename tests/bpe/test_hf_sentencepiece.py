"""SentencePiece-style ``tokenizer.json`` files (Llama-2's ``LlamaTokenizerFast`` shape) against
Hugging Face ``tokenizers``: BPE with ``byte_fallback``, the legacy ``Prepend``/``Replace``
normalizers or a ``Metaspace`` pre-tokenizer, the ``Strip`` decoder.

The files are written from mistral-common's shipped ``.model`` files the way ``transformers``'
converter does (:func:`oracles.sentencepiece.hf_json_of`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.sentencepiece import hf_json_of, mistral_file

from tensortext.bpe import Encoding

TEXTS = [
    "",
    " ",
    "   ",
    "hello world",
    " hello",
    "hello ",
    "x  y   z  ",
    "\u2581x \u2581\u2581",
    "a\x01\x02b\x7f",
    "123456 7.89",
    "\n\n\tdef f(x):\n\treturn x ** 2  # square\n",
    "The quick brown fox. Привет, мир! مرحبا بالعالم 你好\uff0c世界 こんにちは 🤗🤗 ẞ ǅ",
    "<s>hi</s> <s> x",
    "[INST] what? [/INST]",
    "\ufffd \U0010ffff \u0300a",
]


@pytest.fixture(scope="module", params=["legacy", "first", "always", "never"])
def pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``(tokenizers.Tokenizer, Encoding)`` of one layout over Mistral 7B's v3 model (user
    symbols, control tokens) or v1 (Llama-2's settings)."""
    name = (
        "mistral_instruct_tokenizer_240323.model.v3"
        if request.param == "first"
        else ("tokenizer.model.v1")
    )
    path = tmp_path_factory.mktemp("hf") / "tokenizer.json"
    path.write_text(json.dumps(hf_json_of(mistral_file(name), request.param)), encoding="utf-8")
    return tokenizers.Tokenizer.from_file(str(path)), Encoding.from_hf_json(path)


def _check(reference: Any, encoding: Encoding, text: str) -> None:
    expected = reference.encode(text, add_special_tokens=False).ids
    assert encoding.encode(text, allowed_special="all") == expected, text
    assert encoding.decode(expected) == reference.decode(expected, skip_special_tokens=False)


@pytest.mark.parametrize("text", TEXTS)
def test_matches_tokenizers(pair: Any, text: str) -> None:
    _check(*pair, text)


@settings(max_examples=60, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("ab xyz日本ñ\n\t12🤗▁.<s>")) | st.characters(), max_size=40
    )
)
def test_matches_tokenizers_on_random_text(pair: Any, text: str) -> None:
    text = text.encode("utf-8", "replace").decode("utf-8")  # (no lone surrogates)
    _check(*pair, text)


def test_tensor_engine_and_batch_rows(pair: Any) -> None:
    reference, encoding = pair
    expected = [reference.encode(t, add_special_tokens=False).ids for t in TEXTS]
    assert encoding.encode_batch(TEXTS, allowed_special="all") == expected
    ids, lengths = encoding.encode_batch_to_tensor(
        TEXTS, allowed_special="all", merge_backend="torch"
    )
    assert [ids[i, : lengths[i]].tolist() for i in range(len(TEXTS))] == expected
    assert encoding.decode_batch([row for row in expected]) == [
        reference.decode(row, skip_special_tokens=False) for row in expected
    ]


def test_bos_from_post_processor(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(hf_json_of(mistral_file("tokenizer.model.v1"), "first", bos=True)))
    reference, encoding = tokenizers.Tokenizer.from_file(str(path)), Encoding.from_hf_json(path)
    for text in TEXTS:
        expected = reference.encode(text).ids
        assert encoding.encode(text, allowed_special="all", add_special_tokens=True) == expected


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda spec: spec["pre_tokenizer"].update(split=True), "split=false"),
        (lambda spec: spec["pre_tokenizer"].update(replacement="_"), "Metaspace"),
        (lambda spec: spec.update(normalizer={"type": "NFKC"}), "normalizer"),
        (lambda spec: spec["model"].update(dropout=0.1), "dropout"),
        (lambda spec: spec["model"]["vocab"].pop("<0x41>"), "<0x41>"),
    ],
)
def test_unsupported_settings_are_refused(change: Any, message: str, tmp_path: Path) -> None:
    spec = hf_json_of(mistral_file("tokenizer.model.v1"), "first")
    change(spec)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=message):
        Encoding.from_hf_json(path)


@settings(max_examples=80, deadline=None)
@given(ids=st.lists(st.integers(0, 31999), max_size=12), bytes_=st.lists(st.integers(3, 258)))
def test_decode_of_any_ids_matches_tokenizers(pair: Any, ids: list[int], bytes_: list[int]) -> None:
    """Random IDs, byte tokens among them (invalid UTF-8 runs: ``ByteFallback`` gives U+FFFD
    per byte of a run that is not valid as a whole)."""
    reference, encoding = pair
    ids = [i % encoding.n_vocab for i in ids] + bytes_[:6]
    assert encoding.decode(ids) == reference.decode(ids, skip_special_tokens=False)
    assert encoding.decode_batch([ids, ids[::-1]]) == [
        reference.decode(row, skip_special_tokens=False) for row in (ids, ids[::-1])
    ]


@pytest.mark.parametrize("fuse_unk", [True, False])
def test_unknown_token_without_byte_fallback(tmp_path: Path, fuse_unk: bool) -> None:
    """``byte_fallback=false``: a character that is no token is ``<unk>``, a run of them one
    ``<unk>`` with ``fuse_unk``."""
    spec = hf_json_of(mistral_file("tokenizer.model.v1"), "first")
    spec["model"].update(byte_fallback=False, fuse_unk=fuse_unk)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    reference, encoding = tokenizers.Tokenizer.from_file(str(path)), Encoding.from_hf_json(path)
    texts = ["🤗🤗 x 🤗", "龘靐齉 ok", "a\u0378\u0379b", *TEXTS]
    for text in texts:
        expected = reference.encode(text, add_special_tokens=False).ids
        assert encoding.encode(text, allowed_special="all") == expected, text
    ids, lengths = encoding.encode_batch_to_tensor(
        texts, allowed_special="all", merge_backend="torch"
    )
    assert [ids[i, : lengths[i]].tolist() for i in range(len(texts))] == [
        reference.encode(text, add_special_tokens=False).ids for text in texts
    ]
