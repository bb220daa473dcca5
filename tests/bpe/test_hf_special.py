"""``add_special_tokens=`` on the list and numpy methods of an encoding from a Hugging Face
tokenizer: the IDs of ``tokenizers``' ``encode(text, add_special_tokens=...)`` and of
``transformers``' ``tokenizer.encode(text)``, with every post-processor ``tokenizer.json``
files use; on tiktoken's encodings, which have none, ``add_special_tokens=True`` is refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from typing import Any

import numpy as np
import pytest
from bpe_strategies import TIKTOKEN_CHAR, rich_texts
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import hf_byte_level_json
from oracles.hf import hf_file, hf_tokenizer
from strategies import SETTINGS

import tensortext
from tensortext.bpe import Encoding

BOS, EOS, SEP, MARK = "<s>", "</s>", "[SEP]", "<|x|>"
MERGES = [(b"h", b"e"), (b"l", b"l"), (b"he", b"ll"), (b" ", b"w"), (b"hell", b"o")]
ADDED = {BOS: 261, EOS: 262, SEP: 263, MARK: 264}  # after the 256 bytes and 5 merges
TEXTS = ["", "hello world", " hi", f"{MARK}hello{MARK}", "a\n\nb  ", "日本語 😀", f"x {BOS} y"]
PLAIN_TEXTS = [text for text in TEXTS if not any(token in text for token in ADDED)]


@cache
def base_spec() -> str:
    """A byte-level BPE ``tokenizer.json`` (256 bytes, a few merges, four added tokens) with no
    post-processor, as text."""
    vocab = {bytes([b]): b for b in range(256)}
    for left, right in MERGES:
        vocab[left + right] = len(vocab)
    return json.dumps(hf_byte_level_json(vocab, MERGES, added_tokens=ADDED))


def processors() -> dict[str, Any]:
    from tokenizers import processors as p

    template = p.TemplateProcessing(
        single=f"{BOS} {MARK} $A {EOS}",
        pair=f"{BOS} $A {SEP} $B:1 {EOS}:1",
        special_tokens=[(token, ADDED[token]) for token in (BOS, EOS, SEP, MARK)],
    )
    eos_only = p.TemplateProcessing(single=f"$A {EOS}", special_tokens=[(EOS, ADDED[EOS])])
    return {
        "template_single_and_pair": template,
        "template_eos_only": eos_only,
        "roberta": p.RobertaProcessing((EOS, ADDED[EOS]), (BOS, ADDED[BOS])),  # (sep, cls)
        "bert": p.BertProcessing((SEP, ADDED[SEP]), (BOS, ADDED[BOS])),
        "byte_level": p.ByteLevel(trim_offsets=False),
        "sequence": p.Sequence([p.ByteLevel(trim_offsets=False), template]),
        "none": None,
    }


PROCESSORS = list(processors())


def tokenizer_with(processor: str) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(base_spec())
    if processors()[processor] is not None:
        tokenizer.post_processor = processors()[processor]
    return tokenizer


def hf_rows(tokenizer: Any, texts: list[str], add: bool) -> list[list[int]]:
    return [tokenizer.encode(text, add_special_tokens=add).ids for text in texts]


def flat_rows(ids: np.ndarray, lengths: np.ndarray) -> list[list[int]]:
    assert ids.dtype == np.uint32 and lengths.dtype == np.int64
    ends = np.cumsum(lengths)
    return [ids[end - length : end].tolist() for end, length in zip(ends, lengths, strict=True)]


def assert_list_methods_like(ours: Encoding, tokenizer: Any, add: bool) -> None:
    """Every list and numpy method, ``add_special_tokens=add``, against ``tokenizers``."""
    want = hf_rows(tokenizer, TEXTS, add)
    options = {"allowed_special": "all", "add_special_tokens": add}
    for row, text in enumerate(TEXTS):
        assert ours.encode(text, **options) == want[row], f"encode({text!r})"
        assert ours.encode_to_numpy(text, **options).tolist() == want[row], text
    assert ours.encode_batch(TEXTS, **options) == want
    assert flat_rows(*ours.encode_batch_to_numpy(TEXTS, **options)) == want
    plain = hf_rows(tokenizer, PLAIN_TEXTS, add)  # HF splits out added tokens; ordinary never
    assert ours.encode_ordinary_batch(PLAIN_TEXTS, add_special_tokens=add) == plain
    assert [ours.encode_ordinary(text, add_special_tokens=add) for text in PLAIN_TEXTS] == plain
    assert ours.encode_batch_to_flat(TEXTS, **options).tolist() == want  # the tensor methods too


@pytest.mark.parametrize("add", [True, False])
@pytest.mark.parametrize("processor", PROCESSORS)
def test_list_methods_add_what_tokenizers_adds(processor: str, add: bool) -> None:
    tokenizer = tokenizer_with(processor)
    assert_list_methods_like(Encoding.from_hf_json(tokenizer), tokenizer, add)


def test_the_template_adds_tokens_on_both_sides() -> None:
    """The single template, not the pair one, and a special token of each side."""
    ours = Encoding.from_hf_json(tokenizer_with("template_single_and_pair"))
    hello = ours.encode("hello")
    assert ours.encode("hello", add_special_tokens=True) == [261, 264, *hello, 262]
    assert ours.encode("hello", add_special_tokens=False) == ours.encode("hello") == hello


@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR), min_size=1, max_size=4))
def test_random_texts_with_the_template(texts: list[str]) -> None:
    tokenizer = tokenizer_with("sequence")
    ours = Encoding.from_hf_json(tokenizer)
    want = hf_rows(tokenizer, texts, True)
    got = ours.encode_batch(texts, allowed_special="all", add_special_tokens=True)
    for text, got_row, want_row in zip(texts, got, want, strict=True):
        assert got_row == want_row, f"text {text!r}\n got {got_row}\nwant {want_row}"


@pytest.mark.parametrize("family", ["qwen3", "deepseek_v3"])
def test_real_tokenizer_files_as_tokenizers_encode(family: str) -> None:
    """The real files, read by ``Tokenizer.from_file``: what their post-processor adds."""
    ours = Encoding.from_hf_json(hf_file(family))
    for add in (True, False):
        assert_list_methods_like(ours, hf_tokenizer(family), add)


@pytest.mark.parametrize("family", ["qwen3", "deepseek_v3"])
def test_real_tokenizers_as_transformers_encode_by_default(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tokenizer.encode(text)`` (HF's default, add_special_tokens=True) of ``AutoTokenizer``
    (whose post-processor follows tokenizer_config.json's ``add_bos_token``)."""
    from transformers import AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tokenizer = AutoTokenizer.from_pretrained(str(hf_file(family).parent))
    ours = Encoding.from_hf_json(tokenizer)
    want = [tokenizer.encode(text) for text in TEXTS]
    assert ours.encode_batch(TEXTS, allowed_special="all", add_special_tokens=True) == want
    assert [ours.encode(text, allowed_special="all") for text in TEXTS] == [
        tokenizer.encode(text, add_special_tokens=False) for text in TEXTS
    ]


def test_real_vocabulary_with_its_bos_template() -> None:
    """DeepSeek-V3's file with the post-processor ``transformers`` builds for
    ``add_bos_token=true`` (its Hub config's setting; the packaged copy turns it off):
    ``Sequence[ByteLevel, TemplateProcessing(single="<BOS> $A")]``."""
    from tokenizers import Tokenizer
    from tokenizers import processors as p

    tokenizer = Tokenizer.from_file(str(hf_file("deepseek_v3")))
    bos = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
    bos_id = tokenizer.token_to_id(bos)
    template = p.TemplateProcessing(single=f"{bos} $A", special_tokens=[(bos, bos_id)])
    tokenizer.post_processor = p.Sequence([tokenizer.post_processor, template])
    ours = Encoding.from_hf_json(tokenizer)
    assert ours.encode("hello", add_special_tokens=True) == [bos_id, *ours.encode("hello")]
    for add in (True, False):
        assert_list_methods_like(ours, tokenizer, add)


LIST_METHODS: dict[str, Callable[..., Any]] = {
    "encode": lambda enc, **kw: enc.encode("hi", **kw),
    "encode_ordinary": lambda enc, **kw: enc.encode_ordinary("hi", **kw),
    "encode_to_numpy": lambda enc, **kw: enc.encode_to_numpy("hi", **kw),
    "encode_batch": lambda enc, **kw: enc.encode_batch(["hi"], **kw),
    "encode_ordinary_batch": lambda enc, **kw: enc.encode_ordinary_batch(["hi"], **kw),
    "encode_batch_to_numpy": lambda enc, **kw: enc.encode_batch_to_numpy(["hi"], **kw),
    "encode_to_tensor": lambda enc, **kw: enc.encode_to_tensor("hi", **kw),
    "encode_batch_to_tensor": lambda enc, **kw: enc.encode_batch_to_tensor(["hi"], **kw).ids,
    "encode_batch_to_flat": lambda enc, **kw: enc.encode_batch_to_flat(["hi"], **kw).ids,
}


@pytest.mark.parametrize("call", list(LIST_METHODS.values()), ids=list(LIST_METHODS))
def test_tiktoken_encodings_refuse_add_special_tokens(call: Callable[..., Any]) -> None:
    encoding = tensortext.get_encoding("cl100k_base")
    with pytest.raises(ValueError, match=r"'cl100k_base' was read from neither"):
        call(encoding, add_special_tokens=True)
    with pytest.raises(TypeError, match="add_special_tokens must be a bool, got 1"):
        call(encoding, add_special_tokens=1)
    got = call(encoding, add_special_tokens=False)
    assert np.asarray(got[0] if isinstance(got, tuple) else got).ravel().tolist() == [6151]


def test_a_refused_call_leaves_a_generator_unread() -> None:
    encoding = tensortext.get_encoding("gpt2")
    texts = (text for text in ["a b", "c"])
    with pytest.raises(ValueError, match="add_special_tokens"):
        encoding.encode_batch(texts, add_special_tokens=True)
    assert encoding.encode_batch(texts) == [[64, 275], [66]]
