"""``read_hf_json`` / ``Encoding.from_hf_json``: sources, normalizers, ``add_prefix_space`` and
post-processors, each compared with the ``tokenizers`` library on the same ``tokenizer.json``.

A small byte-level BPE is trained here; each test edits one setting of its JSON, builds both
tokenizers from it, and compares IDs (``add_special_tokens`` both ways).
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import SETTINGS

from tensortext.bpe import Encoding
from tensortext.bpe.hf_json import read_hf_json
from tensortext.bpe.patterns import (
    DEEPSEEK_V3_SPLITS,
    O200K_PATTERN,
    QWEN2_PATTERN,
    QWEN35_PATTERN,
)
from tensortext.bpe.vocab import Vocab

BOS, EOS, MARK = "<s>", "</s>", "<|x|>"
CORPUS = [
    "Hello world, hello there! It's a test of the tokenizer.",
    "Caf\u00e9 na\u00efve \u00c5ngstr\u00f6m r\u00e9sum\u00e9 e\u0301 \ufb01ne \u2126",
    "  spaces   and\ttabs\nnewlines\n\n  indented code: x = f(1, 2) + 3",
    "\u65e5\u672c\u8a9e \u0440\u0443\u0441\u0441\u043a\u0438\u0439 "
    "\u0939\u093f\u0928\u094d\u0926\u0940",
]
TEXTS = [
    "",
    "hello",
    " hello",
    "Hello world",
    "\thello",
    "\nx",
    "\u00a0x",
    "Cafe\u0301 \u212b \ufb01 \u2126",
    f"{MARK}hello{MARK} world",
    f"{MARK}{MARK}",
    f"{MARK} x",
    f"x{MARK}",
    f"{MARK}\u0338e\u0301",
    "a  b   c \n",
]
BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}


@cache
def trained() -> str:
    """A byte-level BPE ``tokenizer.json`` (as text) with ``<s>``, ``</s>`` and ``<|x|>``."""
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer(add_prefix_space=False)
    tokenizer.train_from_iterator(
        CORPUS * 3,
        vocab_size=500,
        min_frequency=1,
        special_tokens=[BOS, EOS, MARK],
        show_progress=False,
    )
    return str(tokenizer._tokenizer.to_str())


def spec_with(**settings: Any) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(trained())
    spec.update(copy.deepcopy(settings))
    return spec


def token_id(spec: dict[str, Any], content: str) -> int:
    return next(t["id"] for t in spec["added_tokens"] if t["content"] == content)


def assert_like_tokenizers(spec: dict[str, Any], texts: list[str] = TEXTS) -> Encoding:
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(json.dumps(spec))
    ours = Encoding.from_hf_json(reference)
    for add in (False, True):
        want = [e.ids for e in reference.encode_batch(texts, add_special_tokens=add)]
        padded = ours.encode_batch_to_tensor(
            texts, allowed_special="all", disallowed_special=(), add_special_tokens=add
        )
        for row, text in enumerate(texts):
            got = padded.ids[row, : padded.lengths[row]].tolist()
            assert got == want[row], (
                f"add_special_tokens={add}, text {text!r}: {got} != {want[row]}"
            )
        flat = ours.encode_batch_to_flat(
            texts, allowed_special="all", disallowed_special=(), add_special_tokens=add
        )
        assert flat.tolist() == want  # the post-processor's tokens without padding too
        assert ours.encode_batch(texts, allowed_special="all", add_special_tokens=add) == want
        singles = [ours.encode(t, allowed_special="all", add_special_tokens=add) for t in texts]
        assert singles == want  # the list methods add the same tokens
    return ours


# ------------------------------------------------------------------ sources


def test_sources_path_directory_tokenizer_and_fast_tokenizer(tmp_path: Path) -> None:
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    path = tmp_path / "tokenizer.json"
    path.write_text(trained(), encoding="utf-8")
    tokenizer = Tokenizer.from_file(str(path))
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer)
    vocabs = [
        read_hf_json(path),
        read_hf_json(str(path)),
        read_hf_json(tmp_path),
        read_hf_json(str(tmp_path)),
        read_hf_json(tokenizer),
        read_hf_json(fast),
    ]
    assert all(isinstance(vocab, Vocab) for vocab in vocabs)
    assert all(vocab.tokens == vocabs[0].tokens for vocab in vocabs)
    assert all(vocab.pairs == vocabs[0].pairs for vocab in vocabs)
    assert all(vocab.special_tokens == vocabs[0].special_tokens for vocab in vocabs)
    text = f"Hello world{MARK} r\u00e9sum\u00e9"
    want = tokenizer.encode(text).ids
    for source in (path, tmp_path, tokenizer, fast):
        assert Encoding.from_hf_json(source).encode(text, allowed_special="all") == want


def test_bad_sources(tmp_path: Path) -> None:
    for source in (42, None, b"tokenizer.json", object()):
        with pytest.raises(TypeError, match=r"tokenizers\.Tokenizer"):
            read_hf_json(source)
    with pytest.raises(ValueError, match="no such tokenizer file"):
        read_hf_json(tmp_path / "missing.json")
    with pytest.raises(ValueError, match=re.escape(str(tmp_path))):
        read_hf_json(tmp_path)  # a directory without tokenizer.json


# ------------------------------------------------------------------ normalizers


@pytest.mark.parametrize("form", ["NFC", "NFKC", "NFD", "NFKD"])
def test_unicode_normalizers(form: str) -> None:
    ours = assert_like_tokenizers(spec_with(normalizer={"type": form}))
    assert ours._vocab.options.normalizer == form
    sequence = spec_with(normalizer={"type": "Sequence", "normalizers": [{"type": form}]})
    assert assert_like_tokenizers(sequence)._vocab.options.normalizer == form


def test_empty_normalizer_sequence_is_none() -> None:
    ours = assert_like_tokenizers(spec_with(normalizer={"type": "Sequence", "normalizers": []}))
    assert ours._vocab.options.normalizer is None


@SETTINGS
@given(
    parts=st.lists(
        st.sampled_from(["e", "\u0301", "A", "\u030a", "\u212b", "\ufb01", " ", MARK, "\u0338"]),
        max_size=12,
    )
)
def test_normalizer_random_texts(parts: list[str]) -> None:
    assert_like_tokenizers(spec_with(normalizer={"type": "NFKC"}), ["".join(parts)])


# ------------------------------------------------------------------ add_prefix_space


@pytest.mark.parametrize("use_regex", [True, False])
def test_add_prefix_space(use_regex: bool) -> None:
    """HF's ByteLevel adds " " to each segment between added tokens that lacks a leading " "."""
    pre = {**BYTE_LEVEL, "add_prefix_space": True, "use_regex": use_regex}
    ours = assert_like_tokenizers(spec_with(pre_tokenizer=pre))
    assert ours._vocab.options.add_prefix_space


@SETTINGS
@given(parts=st.lists(st.sampled_from(["a", " ", "\t", "\n", "\u00a0", "hello", MARK]), max_size=8))
def test_add_prefix_space_random_texts(parts: list[str]) -> None:
    pre = {**BYTE_LEVEL, "add_prefix_space": True, "use_regex": True}
    assert_like_tokenizers(spec_with(pre_tokenizer=pre), ["".join(parts)])


# ------------------------------------------------------------------ split pre-tokenizers


def split_sequence(*splits: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "Sequence",
        "pretokenizers": [*splits, {**BYTE_LEVEL, "use_regex": False}],
    }


def split(pattern: str, behavior: str = "Isolated", invert: bool = False) -> dict[str, Any]:
    return {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": invert}


SPLIT_LAYOUTS = {
    "qwen2": (split_sequence(split(QWEN2_PATTERN)), "qwen2"),
    "qwen35": (split_sequence(split(QWEN35_PATTERN)), "qwen35"),
    "deepseek_v3": (split_sequence(*map(split, DEEPSEEK_V3_SPLITS)), "deepseek_v3"),
    # MiniMax: o200k's regex keeping the matches and removing the (never present) gaps.
    "removed_inverted": (split_sequence(split(O200K_PATTERN, "Removed", True)), "o200k"),
}


@pytest.mark.parametrize("layout", list(SPLIT_LAYOUTS))
def test_split_layouts(layout: str) -> None:
    pre_tokenizer, kind = SPLIT_LAYOUTS[layout]
    texts = [*TEXTS, "12345 \u65e5\u672c\u8a9e\u30ab\u30bf -x 'll \u0301\u0301 \n\n !?"]
    ours = assert_like_tokenizers(spec_with(pre_tokenizer=pre_tokenizer), texts)
    assert ours.pattern_kind == kind


# ------------------------------------------------------------------ post-processors


def template(spec: dict[str, Any], single: list[str]) -> dict[str, Any]:
    items: list[dict[str, Any]] = [
        {"Sequence": {"id": "A", "type_id": 0}}
        if name == "$A"
        else {"SpecialToken": {"id": name, "type_id": 0}}
        for name in single
    ]
    names = {name for name in single if name != "$A"}
    return {
        "type": "TemplateProcessing",
        "single": items,
        "pair": [*items, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            name: {"id": name, "ids": [token_id(spec, name)], "tokens": [name]} for name in names
        },
    }


POST_PROCESSORS = {
    "bos": ([BOS, "$A"], (BOS,), ()),
    "bos_eos": ([BOS, "$A", EOS], (BOS,), (EOS,)),
    "eos": (["$A", EOS], (), (EOS,)),
    "two_before": ([BOS, MARK, "$A"], (BOS, MARK), ()),
    "none": (["$A"], (), ()),
}


@pytest.mark.parametrize("case", list(POST_PROCESSORS))
def test_template_processing(case: str) -> None:
    single, before, after = POST_PROCESSORS[case]
    spec = spec_with()
    spec["post_processor"] = template(spec, single)
    options = assert_like_tokenizers(spec)._vocab.options
    assert options.prefix_ids == tuple(token_id(spec, name) for name in before)
    assert options.suffix_ids == tuple(token_id(spec, name) for name in after)


@pytest.mark.parametrize("kind", ["RobertaProcessing", "BertProcessing"])
def test_roberta_and_bert_processing(kind: str) -> None:
    spec = spec_with()
    spec["post_processor"] = {
        "type": kind,
        "sep": [EOS, token_id(spec, EOS)],
        "cls": [BOS, token_id(spec, BOS)],
        **({"trim_offsets": True, "add_prefix_space": False} if kind[0] == "R" else {}),
    }
    options = assert_like_tokenizers(spec)._vocab.options
    assert options.prefix_ids == (token_id(spec, BOS),)
    assert options.suffix_ids == (token_id(spec, EOS),)


def test_byte_level_and_sequence_processing() -> None:
    spec = spec_with()
    byte_level = {**BYTE_LEVEL, "use_regex": True}
    spec["post_processor"] = byte_level
    assert assert_like_tokenizers(spec)._vocab.options.prefix_ids == ()
    spec["post_processor"] = {
        "type": "Sequence",
        "processors": [byte_level, template(spec, [BOS, "$A", EOS])],
    }
    options = assert_like_tokenizers(spec)._vocab.options
    assert (options.prefix_ids, options.suffix_ids) == (
        (token_id(spec, BOS),),
        (token_id(spec, EOS),),
    )


# ------------------------------------------------------------------ unsupported settings


def _added(setting: str) -> Any:
    def apply(spec: dict[str, Any]) -> None:
        spec["added_tokens"][-1][setting] = True

    return apply


def _with_normalized_added_token(spec: dict[str, Any]) -> None:
    spec["normalizer"] = {"type": "NFC"}
    spec["added_tokens"][-1]["normalized"] = True


def _set(key: str, value: Any) -> Any:
    def apply(spec: dict[str, Any]) -> None:
        spec[key] = value

    return apply


SPLIT = {"type": "Split", "pattern": {"Regex": r"\s+|\S+"}, "behavior": "Isolated"}
UNSUPPORTED = {
    "normalizer": (_set("normalizer", {"type": "Lowercase"}), "Lowercase"),
    "normalizer_sequence": (
        _set("normalizer", {"type": "Sequence", "normalizers": [{"type": "NFC"}] * 2}),
        "normalizer",
    ),
    "lstrip": (_added("lstrip"), "lstrip"),
    "rstrip": (_added("rstrip"), "rstrip"),
    "single_word": (_added("single_word"), "single_word"),
    "normalized_added_token": (_with_normalized_added_token, "normalized=true"),
    "post_processor": (_set("post_processor", {"type": "Unknown"}), "Unknown"),
    "template_pair_only": (
        _set("post_processor", {"type": "TemplateProcessing", "single": [], "special_tokens": {}}),
        "post_processor",
    ),
    "prefix_space_after_split": (
        _set(
            "pre_tokenizer",
            {
                "type": "Sequence",
                "pretokenizers": [
                    {**SPLIT, "pattern": {"Regex": r"\p{N}{1,3}"}},
                    {**BYTE_LEVEL, "add_prefix_space": True, "use_regex": False},
                ],
            },
        ),
        "add_prefix_space",
    ),
    "split_string_pattern": (
        _set(
            "pre_tokenizer",
            {
                "type": "Sequence",
                "pretokenizers": [
                    {**SPLIT, "pattern": {"String": " "}},
                    {**BYTE_LEVEL, "use_regex": False},
                ],
            },
        ),
        "pre_tokenizer",
    ),
    "removed_inverted_in_a_sequence": (
        _set(
            "pre_tokenizer",
            split_sequence(
                split(DEEPSEEK_V3_SPLITS[0], "Removed", True), *map(split, DEEPSEEK_V3_SPLITS[1:])
            ),
        ),
        "pre_tokenizer",
    ),
    "unknown_split_sequence": (
        _set(
            "pre_tokenizer",
            {
                "type": "Sequence",
                "pretokenizers": [SPLIT, SPLIT, {**BYTE_LEVEL, "use_regex": False}],
            },
        ),
        "Split",
    ),
}


@pytest.mark.parametrize("case", list(UNSUPPORTED))
def test_unsupported_settings_name_source_and_setting(tmp_path: Path, case: str) -> None:
    edit, setting = UNSUPPORTED[case]
    spec = spec_with()
    edit(spec)
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        read_hf_json(path)
    assert str(path) in str(error.value)
    assert setting in str(error.value)
