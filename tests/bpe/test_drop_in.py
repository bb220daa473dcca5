"""tensortext as a drop-in for tiktoken: every name, signature, return type, value and error of
``tiktoken.Encoding`` 0.14, on every registered encoding, against tiktoken itself (built offline
from the same files, tests/oracles/bpe.py)."""

from __future__ import annotations

import copy
import inspect
import pickle
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pytest
import tiktoken
import tiktoken.model
from bpe_strategies import TIKTOKEN_CHAR, rich_texts
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_reference
from strategies import SETTINGS

import tensortext
from tensortext.bpe import Encoding, UnknownTokenError
from tensortext.demo import bundled_lines
from tensortext.padded import Padded

NAMES = tensortext.list_encoding_names()
ALL = pytest.mark.parametrize("name", NAMES)
SMALL = pytest.mark.parametrize("name", ["r50k_base", "cl100k_base"])
# Real text: the bundled multilingual lines, and source code (this package's own).
REAL = bundled_lines("multilingual.txt") + inspect.getsource(tensortext.bpe.core).splitlines()[:120]
SPECIAL_TEXT = "hi <|endoftext|> there<|endofprompt|>x <|fim_prefix|>"


def pair(name: str) -> tuple[Encoding, Any]:
    return tensortext.get_encoding(name), tiktoken_reference(name)


def test_public_surface_and_signatures_match_tiktoken() -> None:
    ours = tensortext.get_encoding("cl100k_base")
    for attribute, theirs in vars(tiktoken.Encoding).items():
        if attribute.startswith("__") or attribute in ("_core_bpe",):
            continue
        assert hasattr(Encoding, attribute), attribute
        if not inspect.isfunction(theirs):
            continue
        want = inspect.signature(theirs).parameters
        got = inspect.signature(getattr(Encoding, attribute)).parameters
        assert list(got)[: len(want)] == list(want), attribute
        for key, param in want.items():
            assert got[key].kind == param.kind, (attribute, key)
            assert got[key].default == param.default, (attribute, key)
    for attribute in ("name", "n_vocab", "max_token_value", "eot_token", "special_tokens_set"):
        getattr(ours, attribute)
    for module_name in ("get_encoding", "encoding_for_model", "encoding_name_for_model"):
        assert inspect.signature(getattr(tensortext, module_name)).parameters.keys() == (
            inspect.signature(getattr(tiktoken, module_name)).parameters.keys()
        )


@ALL
def test_properties_match(name: str) -> None:
    ours, ref = pair(name)
    assert ours.name == ref.name == name
    assert (ours.n_vocab, ours.max_token_value) == (ref.n_vocab, ref.max_token_value)
    assert ours.eot_token == ref.eot_token
    assert ours.special_tokens_set == ref.special_tokens_set
    assert ours._special_tokens == ref._special_tokens
    assert ours._mergeable_ranks == ref._mergeable_ranks
    assert ours._pat_str == ref._pat_str
    assert ours.token_byte_values() == ref.token_byte_values()
    specials = set(ref._special_tokens.values())
    assert [ours.is_special_token(t) for t in range(ours.n_vocab)] == [
        t in specials for t in range(ref.n_vocab)
    ]


@ALL
def test_encode_and_decode_real_text(name: str) -> None:
    ours, ref = pair(name)
    texts = [*REAL, SPECIAL_TEXT, "", "\ud83d lone surrogate"]
    expected = ref.encode_batch(texts, disallowed_special=())
    assert ours.encode_batch(texts, disallowed_special=()) == expected
    assert ours.encode_ordinary_batch(texts) == ref.encode_ordinary_batch(texts) == expected
    assert [ours.encode_ordinary(t) for t in texts[:20]] == expected[:20]
    assert ours.encode(SPECIAL_TEXT, allowed_special="all") == ref.encode(
        SPECIAL_TEXT, allowed_special="all"
    )
    assert ours.decode_batch(expected) == ref.decode_batch(expected)
    assert ours.decode_bytes_batch(expected) == ref.decode_bytes_batch(expected)
    for row in expected[:20]:
        assert ours.decode_tokens_bytes(row) == ref.decode_tokens_bytes(row)
        assert ours.decode_with_offsets(row) == ref.decode_with_offsets(row)
        assert ours.decode_bytes(row) == ref.decode_bytes(row)
    numpy_ids = ours.encode_to_numpy(texts[0])
    assert numpy_ids.dtype == np.uint32
    assert numpy_ids.tolist() == ref.encode_to_numpy(texts[0]).tolist()


@ALL
@SETTINGS
@given(texts=st.lists(rich_texts(other=TIKTOKEN_CHAR), max_size=4))
def test_encode_batch_random_text(name: str, texts: list[str]) -> None:
    ours, ref = pair(name)
    rows = ours.encode_batch(texts, allowed_special="all")
    assert rows == ref.encode_batch(texts, allowed_special="all")
    assert ours.decode_batch(rows) == ref.decode_batch(rows)


@SMALL
def test_single_tokens_round_trip_over_the_whole_vocabulary(name: str) -> None:
    ours, ref = pair(name)
    for token in range(ref.n_vocab):
        try:
            data = ref.decode_single_token_bytes(token)
        except KeyError:
            with pytest.raises(KeyError):
                ours.decode_single_token_bytes(token)
            continue
        assert ours.decode_single_token_bytes(token) == data
        assert ours.encode_single_token(data) == ref.encode_single_token(data) == token


UNSTABLE_PROMPTS = ["hello fanta", "x = 1;\n  ", "我非常渴", "he said 'l", "0000", "a<|endoftext|>"]


@pytest.mark.parametrize("name", ["r50k_base", "cl100k_base", "o200k_harmony"])
@pytest.mark.parametrize("prompt", UNSTABLE_PROMPTS)
def test_encode_with_unstable(name: str, prompt: str) -> None:
    ours, ref = pair(name)
    stable, completions = ours.encode_with_unstable(prompt, allowed_special="all")
    ref_stable, ref_completions = ref.encode_with_unstable(prompt, allowed_special="all")
    assert stable == ref_stable
    assert completions == sorted(completions)
    assert {tuple(c) for c in completions} == {tuple(c) for c in ref_completions}


@SMALL
@SETTINGS
@given(data=st.binary(max_size=24))
def test_encode_bytes_even_invalid_utf8(name: str, data: bytes) -> None:
    ours, ref = pair(name)
    assert ours._encode_bytes(data) == ref._encode_bytes(data)
    if data:  # tiktoken's _encode_single_piece panics on b""
        assert ours._encode_single_piece(data) == ref._encode_single_piece(data)
    assert ours.decode_bytes(ours._encode_bytes(data)) == data


@SETTINGS
@given(text=rich_texts(other=TIKTOKEN_CHAR))
def test_native_bpe_reference_path(text: str) -> None:
    ours, ref = pair("cl100k_base")
    assert ours._encode_only_native_bpe(text) == ref.encode_ordinary(text)


def test_errors_have_tiktokens_types() -> None:
    ours, ref = pair("cl100k_base")
    unused = 100261  # between the FIM tokens and <|endofprompt|>: no token
    for call in (ours.decode, ref.decode):
        with pytest.raises(KeyError):
            call([15339, unused])
    with pytest.raises(UnknownTokenError, match="100261"):  # a KeyError and a ValueError
        ours.decode_bytes([unused])
    assert issubclass(UnknownTokenError, KeyError) and issubclass(UnknownTokenError, ValueError)
    for enc in (ours, ref):
        with pytest.raises(KeyError):
            enc.decode_single_token_bytes(unused)
        with pytest.raises(KeyError):
            enc.encode_single_token("hello world")
        with pytest.raises(ValueError, match="disallowed"):
            enc.encode("<|endoftext|>")
        with pytest.raises(ValueError, match="disallowed"):
            enc.encode_batch(["fine", "<|endoftext|>"])
        with pytest.raises(ValueError, match="disallowed"):
            enc.encode_with_unstable("<|endoftext|>")
    with pytest.raises(ValueError):
        ours.encode_batch(["x"], num_threads=0)
    with pytest.raises(TypeError):
        ours.encode_batch("one string")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ours.decode_bytes_batch("not a batch")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ours.decode([1.5])  # type: ignore[list-item]


class TextSequence(Sequence[str]):
    """A user's own ``Sequence`` of texts (not a list)."""

    def __init__(self, texts: list[str]):
        self._texts = texts

    def __len__(self) -> int:
        return len(self._texts)

    def __getitem__(self, index: Any) -> Any:
        return self._texts[index]


BATCH = ["hello world", "", "日本語のテキスト 😀", "<|endoftext|> it's 2026", "  x\n\n"]
CONTAINERS = {
    "tuple": tuple,
    "generator": lambda texts: (text for text in texts),
    "iterator": iter,
    "numpy_str_array": np.array,
    "pandas_series": pd.Series,
    "pandas_object_series": lambda texts: pd.Series(texts, dtype=object),
    "custom_sequence": TextSequence,
}


@pytest.mark.parametrize("make", list(CONTAINERS.values()), ids=list(CONTAINERS))
def test_batches_of_any_ordered_iterable_as_tiktoken(make: Any) -> None:
    """tiktoken maps over any iterable of str (numpy's ``np.str_`` is a str): so do we, and
    the tensor methods too."""
    ours, ref = pair("cl100k_base")
    for method, options in [("encode_batch", {"allowed_special": "all"}),
                            ("encode_ordinary_batch", {})]:  # fmt: skip
        want = getattr(ref, method)(make(BATCH), **options)
        assert want == getattr(ref, method)(BATCH, **options)
        assert getattr(ours, method)(make(BATCH), **options) == want
    want = ref.encode_batch(BATCH, allowed_special="all")
    assert ours.encode_batch_to_tensor(make(BATCH), allowed_special="all").tolist() == want
    assert ours.encode_batch_to_flat(make(BATCH), allowed_special="all").tolist() == want


def test_num_threads_true_is_one_thread_as_in_tiktoken() -> None:
    ours, ref = pair("cl100k_base")
    want = ref.encode_batch(BATCH, num_threads=True, allowed_special="all")
    assert ours.encode_batch(BATCH, num_threads=True, allowed_special="all") == want
    assert ours.encode_ordinary_batch(BATCH, num_threads=True) == ref.encode_ordinary_batch(
        BATCH, num_threads=True
    )
    assert ours.decode_batch(want, num_threads=True) == ref.decode_batch(want, num_threads=True)
    assert ours.encode_batch_to_tensor(BATCH, num_threads=True, allowed_special="all").tolist() == (
        want
    )
    for enc in (ours, ref):  # False is 0 threads: a ValueError in both
        with pytest.raises(ValueError):
            enc.encode_batch(BATCH, num_threads=False)
    with pytest.raises(ValueError, match="num_threads must be >= 1, got 0"):
        ours.encode_batch(BATCH, num_threads=False)
    with pytest.raises(TypeError, match="num_threads must be an int, got str"):
        ours.encode_batch(BATCH, num_threads="2")  # type: ignore[arg-type]


NOT_TEXTS = {  # a batch (made anew for each call) -> the message, with "text" the argument
    "str": (lambda: "one string", r"text must be a list \(or any iterable\) of str, got str; wrap"),
    "bytes": (lambda: b"x", r"text must be a list \(or any iterable\) of str, got bytes"),
    "set": (lambda: {"a", "b"}, r"text must be a list \(or another ordered iterable\) .* got set"),
    "dict": (lambda: {"text": ["a"]}, r"text must be a list .* got dict; pass e\.g\. list"),
    "none": (lambda: None, r"text must be a list .* of str, got NoneType"),
    "int": (lambda: 3, r"text must be a list .* of str, got int"),
    "int_item": (lambda: ["ok", 3], r"text\[1\] is int, expected str"),
    "bytes_item": (lambda: ["ok", b"x"], r"text\[1\] is bytes, expected str"),
    "int_array": (lambda: np.array([1, 2]), r"text\[0\] is int64, expected str"),
    "missing_in_series": (lambda: pd.Series(["ok", None]), r"text\[1\] is (float|NoneType), exp"),
    "float_from_generator": (lambda: (x for x in ["ok", 1.5]), r"text\[1\] is float, expected"),
}


@pytest.mark.parametrize(("make", "message"), list(NOT_TEXTS.values()), ids=list(NOT_TEXTS))
def test_what_is_no_batch_of_texts_is_refused(make: Any, message: str) -> None:
    ours = tensortext.get_encoding("cl100k_base")
    with pytest.raises(TypeError, match=message):
        ours.encode_batch(make())
    with pytest.raises(TypeError, match=message):
        ours.encode_ordinary_batch(make())
    with pytest.raises(TypeError, match=message.replace("text", "texts", 1)):
        ours.encode_batch_to_tensor(make())


def test_unknown_allowed_special_names_are_ignored_as_in_tiktoken() -> None:
    ours, ref = pair("cl100k_base")
    text = "<|im_start|> hi <|endoftext|>"
    allowed = {"<|im_start|>", "<|endoftext|>"}
    assert ours.encode(text, allowed_special=allowed) == ref.encode(text, allowed_special=allowed)


def test_special_tokens_sharing_an_id() -> None:
    ours, ref = pair("o200k_harmony")
    for text in ("<|endofprompt|>", "<|reserved_200018|>"):
        assert ours.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert ours.encode_single_token(text) == 200018
    assert ours.decode([200018]) == "<|endofprompt|>"  # the first name, every run
    assert ours.decode_single_token_bytes(200018) in (b"<|endofprompt|>", b"<|reserved_200018|>")


def test_model_names_map_as_in_tiktoken() -> None:
    models = [*tiktoken.model.MODEL_TO_ENCODING, "gpt-4o-2024-05-13", "gpt-oss-120b"]
    models += ["ft:gpt-3.5-turbo:org", "gpt-35-turbo-16k", "o3-mini-high", "gpt-5-nano"]
    for model in models:
        name = tensortext.encoding_name_for_model(model)
        assert name == tiktoken.encoding_name_for_model(model), model
    assert tensortext.encoding_for_model("gpt-oss-20b") is tensortext.get_encoding("o200k_harmony")
    for bad in ("llama-3", "", "GPT-4"):
        with pytest.raises(KeyError):
            tensortext.encoding_name_for_model(bad)
        with pytest.raises(KeyError):
            tiktoken.encoding_name_for_model(bad)


@ALL
def test_registered_encodings_pickle_by_name(name: str) -> None:
    enc = tensortext.get_encoding(name)
    data = pickle.dumps(enc)
    assert len(data) < 1024
    assert pickle.loads(data) is enc
    assert copy.deepcopy(enc) is enc


def test_custom_encodings_pickle_their_data() -> None:
    base = tensortext.get_encoding("r50k_base")
    custom = Encoding(
        "custom",
        pat_str=base._pat_str,
        mergeable_ranks=base._mergeable_ranks,
        special_tokens={"<|pickle|>": 100_000},
    )
    custom.encode_batch_to_tensor(["warm the tables"], merge_backend="torch")  # not pickled
    clone = pickle.loads(pickle.dumps(custom))
    assert clone is not custom and clone.name == "custom"
    assert clone._vocab._tables == {}
    for text in ("hello world", "<|pickle|> x"):
        assert clone.encode(text, allowed_special="all") == custom.encode(
            text, allowed_special="all"
        )
    assert custom.encode("<|pickle|>", allowed_special="all") == [100_000]


def test_datasets_fingerprint_is_stable_and_cheap() -> None:
    """``datasets.map`` hashes the function and its closure with dill: a registered encoding
    serializes as its name (the whole vocabulary was 14.5 MB), and the fingerprint is the same
    in another process, so the cache is reused."""
    program = (
        "import dill, tensortext\n"
        "from datasets.fingerprint import Hasher\n"
        "enc = tensortext.get_encoding('o200k_base')\n"
        "def tokenize(batch):\n"
        "    return {'input_ids': enc.encode_batch(batch['text'])}\n"
        "print(Hasher.hash(tokenize), Hasher.hash(enc), len(dill.dumps(tokenize, recurse=True)))\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert int(runs[0][2]) < 4096


@ALL
def test_tensor_variants(name: str) -> None:
    ours, ref = pair(name)
    texts = REAL[:16]
    batch = ours.encode_batch_to_tensor(texts)
    assert isinstance(batch, Padded)
    assert batch.tolist() == ref.encode_ordinary_batch(texts)
    assert ours.decode_batch(batch) == texts
    assert ours.encode_to_tensor(texts[3]).tolist() == ref.encode(texts[3])
    full = ours.encode_batch_to_tensor(["hello world"] * 2).ids
    assert ours.decode_batch(full) == ["hello world"] * 2


def test_explicit_n_vocab_counts_tokens_as_tiktoken_does() -> None:
    """Accepted and refused where the real ``tiktoken.Encoding`` accepts and refuses it (it
    asserts; we raise ValueError), with the same ``n_vocab``."""
    ranks = tensortext.get_encoding("r50k_base")._mergeable_ranks
    pattern = tensortext.get_encoding("r50k_base")._pat_str
    outcomes = []
    for n_vocab in (50257, 50258, 50256):
        kwargs: dict[str, Any] = {
            "pat_str": pattern,
            "mergeable_ranks": ranks,
            "special_tokens": {"<|e|>": 50256},
            "explicit_n_vocab": n_vocab,
        }
        try:
            theirs = tiktoken.Encoding("ref", **kwargs)
        except AssertionError:
            outcomes.append("refused")
            with pytest.raises(ValueError, match="explicit_n_vocab"):
                Encoding("bad", **kwargs)
        else:
            outcomes.append("accepted")
            assert Encoding("ok", **kwargs).n_vocab == theirs.n_vocab == n_vocab
    assert outcomes == ["accepted", "refused", "refused"]


@pytest.mark.parametrize(
    "bad", [{"merge_backend": "nope"}, {"pretokenize": "nope"}, {"add_special_tokens": 1}]
)
def test_a_bad_keyword_leaves_a_generator_unread(bad: dict[str, Any]) -> None:
    """The tensor methods check their other arguments first: the user's generator is not
    emptied by a call that then refuses a keyword."""
    encoding = tensortext.get_encoding("gpt2")
    texts = (text for text in ["a b", "c"])
    with pytest.raises((ValueError, TypeError)):
        encoding.encode_batch_to_flat(texts, **bad)
    assert encoding.encode_batch_to_flat(texts).tolist() == [[64, 275], [66]]
