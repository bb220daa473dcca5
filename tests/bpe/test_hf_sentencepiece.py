"""SentencePiece-style ``tokenizer.json`` files (Llama-2's ``LlamaTokenizerFast`` shape) against
Hugging Face ``tokenizers``: BPE with ``byte_fallback``, the legacy ``Prepend``/``Replace``
normalizers or a ``Metaspace`` pre-tokenizer, the ``Strip`` decoder.

The files are written here from mistral-common's shipped ``.model`` files, the way
``transformers``' converter does (merges ordered by the merged piece's score)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mistral_common
import pytest
import sentencepiece as spm
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from tensortext.bpe import Encoding

DATA = Path(mistral_common.__file__).parent / "data"
METASPACE = "\u2581"
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


def _json(model_file: Path, layout: str, *, bos: bool = False) -> dict[str, Any]:
    """A ``tokenizer.json`` of ``model_file`` in one of the layouts ``transformers`` writes."""
    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    size = processor.get_piece_size()
    pieces = [processor.id_to_piece(i) for i in range(size)]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    scores = {
        pieces[i]: processor.get_score(i)
        for i in range(size)
        if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i))
    }
    merges = []
    for merged, score in scores.items():
        local = [
            (merged[:cut], merged[cut:], score)
            for cut in range(1, len(merged))
            if merged[:cut] in vocab and merged[cut:] in vocab
        ]
        merges += sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]]))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    added = [
        {
            "id": i,
            "content": pieces[i],
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i in range(size)
        if processor.is_control(i) or processor.is_unknown(i)
    ]
    normalizer: Any = None
    pre_tokenizer: Any = None
    replace = {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE}
    if layout == "legacy":
        prepend = {"type": "Prepend", "prepend": METASPACE}
        normalizer = {"type": "Sequence", "normalizers": [prepend, replace]}
    else:
        pre_tokenizer = {
            "type": "Metaspace",
            "replacement": METASPACE,
            "prepend_scheme": layout,
            "split": False,
        }
    decoders = [
        {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if layout != "never":
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    post_processor = None
    if bos:
        post_processor = {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[left, right] for left, right, _ in merges],
        },
    }


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
    path.write_text(json.dumps(_json(DATA / name, request.param)), encoding="utf-8")
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
    path.write_text(json.dumps(_json(DATA / "tokenizer.model.v1", "first", bos=True)))
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
    spec = _json(DATA / "tokenizer.model.v1", "first")
    change(spec)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match=message):
        Encoding.from_hf_json(path)
