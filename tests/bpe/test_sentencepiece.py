"""``Encoding.from_sentencepiece`` against the ``sentencepiece`` package on the same ``.model``.

The reference is ``SentencePieceProcessor``: ``encode_ordinary(text) == sp.encode(text)``,
``encode_ordinary(text, add_special_tokens=True) == sp.encode(text, add_bos=True)`` and
``decode(ids) == sp.decode(ids)``, on every row method (lists, numpy, the C encoder's batches,
the tensor engine with ``merge_backend="torch"``). Models come from ``sp_models.py``: the files
mistral-common ships, and small BPE models trained here with one setting changed each (byte
fallback, digit splitting, the dummy prefix, extra whitespace removal, whitespace as suffix,
user-defined and control symbols, ID order).

What sentencepiece does that byte-level BPE does not, and the tables below exercise:

* a run of characters outside the vocabulary is ONE ``<unk>`` without byte fallback, and their
  UTF-8 bytes as ``<0xNN>`` pieces with it;
* user-defined pieces are cut out of the text first (longest match, leftmost first), even in
  the middle of a word, and even by ``encode_ordinary``; control pieces are plain text there;
* the text's U+2581 (``▁``) is a space to the BPE, but ``remove_extra_whitespaces`` only
  collapses U+0020 (it strips U+2581 at the end only);
* decoding drops control pieces, writes ``<unk>`` as its ``unk_surface`` (`` ⁇ ``), drops
  the leading U+2581 of the first piece, user-defined ones too (with ``add_dummy_prefix`` or
  ``remove_extra_whitespaces``; with the latter, of every piece until some text comes out),
  keeps trailing ones (``treat_whitespace_as_suffix`` too), and writes U+FFFD for EACH byte of
  invalid UTF-8 (Python's ``errors="replace"`` writes one per maximal invalid subsequence).

With ``allowed_special``, control pieces cut the text as in HF's
``LlamaTokenizer(legacy=False)``: the dummy prefix goes before the first part only, and not
before a special token that starts the text (:func:`llama_reference`).

Lone surrogates follow tiktoken's rule (a lone one becomes U+FFFD, a high-low pair the
character it spells); the reference gets the text so cleaned.
"""

from __future__ import annotations

import pickle
import random
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sp_models import (
    CORPUS_LINES,
    MODELS,
    mistral_model_files,
    model_proto,
    processor,
    train,
    trained,
)
from strategies import MAX_EXAMPLES, SETTINGS

from tensortext.bpe import Encoding

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

TEXTS: dict[str, str] = {
    "empty": "",
    "english": "The quick brown fox jumps over the lazy dog. It's 9 o'clock!",
    "german": "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich. Straße",
    "french": "Voix ambiguë d'un cœur qui, au zéphyr, préfère les jattes de kiwis.",
    "chinese": "你好\uff0c世界\uff01中文分词是一个有趣的问题。未见过的字\uff1a龘靐齉",
    "japanese": "東京は日本の首都です。カタカナとひらがな、ｶﾀｶﾅ。",
    "korean": "안녕하세요 세계. 토큰화",
    "arabic": "مرحبا بالعالم. اللغة العربية جميلة جدا",
    "russian": "Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "hindi and greek": "नमस्ते दुनिया। Ξεσκεπάζω την ψυχοφθόρα βδελυγμία.",
    "emoji": "😀 👍🏽 ❤️ 🇫🇷 👨‍👩‍👧 🫠🫠",
    "code": "def f(x):\n\treturn x + 1  # one\n\n\tif x:\r\n        pass\n",
    "whitespace runs": "  a   b  ",
    "leading spaces": "   hello",
    "trailing spaces": "hello   ",
    "one space": " ",
    "spaces only": "     ",
    "digits": "1234567",
    "digits in text": "v1.2.3, 2024-05-06 10:30, x86_64, 3.14159e-10 ٣٤٥ ½ ²",
    "U+2581 alone": "\u2581",
    "U+2581 in words": "a\u2581b \u2581\u2581c\u2581 ",
    "U+2581 runs and spaces": " \u2581 \u2581\u2581  \u2581",
    "U+2581 leading": "\u2581hello \u2581 world",
    "control characters": "\x00\x01\x07\x1b[0m\x7f\x85 end\x00",
    "tabs and newlines": "\t\n\r\n\x0b\x0c a\tb\n",
    "newline runs": "a\n\n\nb\n",
    "other spaces": "a\u00a0b\u2003c\u3000d\u200be",
    "replacement character": "\ufffd x\ufffd",
    "unknown characters": "☃☄⚡ \U0001d518\U0001d52b\U0001d526\U0001d520\U0001d52c ꙮ",  # Fraktur
    "unknown runs between known": "a☃☃b ☃ c☃ ☃☃☃",
    "private use and noncharacters": "\ue000\U000f0000 \uffff\U0010ffff",
    "combining marks": "e\u0301 n\u0303 a\u0308\u0301",
    "long word": "a" * 300 + " " + "ab" * 200 + " " + "1" * 50,
    "long text": " ".join(CORPUS_LINES),
    "special texts": "<s> </s> <unk> <pad> [INST] hi [/INST]</s>",
    "piece spellings": "<0x41> <0xE2> \u2581\u2581 <UNK> <BOS>",
    "user symbols": "abcd abcdef the12 <tool_call><tool> [REF_DOC]x[REF] ☃ bcdabc",
    "user symbol prefixes": "<tool_ <tool_resul [REF_DO [REF ab bc 1",
}

SURROGATE_TEXTS = ["a\ud800b", "\udc00", "\ud83d\ude00 ok", "x\ud83dy", "\udfff\ud800 "]


def tiktoken_cleaned(text: str) -> str:
    """``text`` as tiktoken (and tensortext) read it: a lone surrogate becomes U+FFFD, a high
    surrogate followed by a low one the character they spell."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def first_difference(got: list[int], want: list[int], sp: Any) -> str:
    """Where two ID lists part, with the next five IDs of each and their pieces."""
    index = next(
        (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
        min(len(got), len(want)),
    )
    return (
        f"first difference at {index}: got {got[index : index + 5]} "
        f"{[sp.id_to_piece(i) for i in got[index : index + 5]]}, sentencepiece "
        f"{want[index : index + 5]} {[sp.id_to_piece(i) for i in want[index : index + 5]]}"
    )


@cache
def encoding_of(model: bytes) -> Encoding:
    return Encoding.from_sentencepiece(model)


@cache
def real_model(path: Path) -> bytes:
    return path.read_bytes()


def real_files() -> list[Path]:
    try:
        return mistral_model_files()
    except ImportError:
        return []


REAL_FILES = real_files()
needs_mistral = pytest.mark.skipif(not REAL_FILES, reason="mistral-common is not installed")
REAL_IDS = [path.name for path in REAL_FILES]


def pieces_of_type(model: bytes, *types: int) -> dict[str, int]:
    return {
        piece.piece: index
        for index, piece in enumerate(model_proto(model).pieces)
        if piece.type in types
    }


def edited(model: bytes, edit: Any) -> bytes:
    """``model`` with ``edit(proto)`` applied to its parsed ``ModelProto``."""
    proto = model_proto(model)
    edit(proto)
    return bytes(proto.SerializeToString())


def assert_like_sentencepiece(model: bytes, texts: list[str], *, batches: bool = True) -> None:
    """Every row method of ``Encoding.from_sentencepiece(model)`` gives sentencepiece's IDs on
    ``texts``, without the BOS then with it; then ``decode`` gives sentencepiece's text back."""
    sp = processor(model)
    enc = encoding_of(model)
    assert enc.n_vocab == sp.get_piece_size()
    cleaned = [tiktoken_cleaned(text) for text in texts]
    has_bos = sp.bos_id() >= 0  # sentencepiece refuses add_bos=True without one
    specials = enc.special_tokens_set
    for add in (False, True):
        rows = [sp.encode(text, add_bos=add and has_bos) for text in cleaned]
        for text, want in zip(texts, rows, strict=True):
            call = f"({text!r}, add_special_tokens={add})"
            got = enc.encode_ordinary(text, add_special_tokens=add)
            assert got == want, f"encode_ordinary{call}: {first_difference(got, want, sp)}"
            if not any(special in text for special in specials):
                assert enc.encode(text, add_special_tokens=add) == want, f"encode{call}"
                got = enc.encode_to_numpy(text, add_special_tokens=add).tolist()
                assert got == want, f"encode_to_numpy{call}"
        if batches:
            assert_batches_like(enc, sp, texts, rows, add)
    plain = [sp.encode(text) for text in cleaned]
    for text, ids in zip(texts, plain, strict=True):
        assert enc.decode(ids) == sp.decode(ids), f"decode(sp.encode({text!r}))"
    assert enc.decode_batch(plain) == [sp.decode(ids) for ids in plain]


def assert_batches_like(
    enc: Encoding, sp: Any, texts: list[str], rows: list[list[int]], add: bool
) -> None:
    """The batch methods give ``rows``: the list ones, and the tensor ones on the C encoder
    (``merge_backend="auto"`` on a CPU) and on the tensor engine (``"torch"``; without the BOS
    only, which is added after either backend: the engine takes a second per thousand
    characters of a ``"whole"`` split)."""
    ordinary = {"disallowed_special": (), "add_special_tokens": add}
    results = {
        "encode_ordinary_batch": enc.encode_ordinary_batch(texts, add_special_tokens=add),
        "encode_batch": enc.encode_batch(texts, **ordinary),
        "encode_batch_to_numpy": enc.encode_batch_to_numpy(texts, **ordinary).tolist(),
    }
    for merge_backend in ("auto",) if add else ("auto", "torch"):
        options: dict[str, Any] = {"device": "cpu", "merge_backend": merge_backend, **ordinary}
        ids, lengths = enc.encode_batch_to_tensor(texts, **options)
        assert ids.shape[0] == len(texts)
        assert all((ids[row, lengths[row] :] == -1).all() for row in range(len(texts)))
        results[f"encode_batch_to_tensor({merge_backend!r})"] = [
            ids[row, : lengths[row]].tolist() for row in range(len(texts))
        ]
        flat = enc.encode_batch_to_flat(texts, **options)
        results[f"encode_batch_to_flat({merge_backend!r})"] = flat.tolist()
    for method, got_rows in results.items():
        for text, got, want in zip(texts, got_rows, rows, strict=True):
            difference = first_difference(got, want, sp)
            assert got == want, f"{method}, add_special_tokens={add}, on {text!r}: {difference}"


def random_id_lists(model: bytes, count: int, seed: int) -> list[list[int]]:
    """ID lists drawn half from the whole vocabulary, half from the pieces decoding treats
    apart: control, unknown, byte, user-defined and whitespace pieces."""
    proto = model_proto(model)
    size = len(proto.pieces)
    apart = [
        index
        for index, piece in enumerate(proto.pieces)
        if piece.type != NORMAL or "\u2581" in piece.piece
    ]
    rng = random.Random(seed)
    return [
        [
            rng.choice(apart) if rng.random() < 0.5 else rng.randrange(size)
            for _ in range(rng.randrange(13))
        ]
        for _ in range(count)
    ]


def assert_decodes_like_sentencepiece(model: bytes, id_lists: list[list[int]]) -> None:
    sp = processor(model)
    enc = encoding_of(model)
    for ids in id_lists:
        want = sp.decode(ids)
        got = enc.decode(ids)
        assert got == want, (
            f"decode({ids}) (pieces {[sp.id_to_piece(i) for i in ids]}): {got!r} != {want!r}"
        )


# ------------------------------------------------------------------ mistral-common's files


@needs_mistral
@pytest.mark.parametrize("path", REAL_FILES, ids=REAL_IDS)
def test_mistral_files_encode_like_sentencepiece(path: Path) -> None:
    assert_like_sentencepiece(real_model(path), [*TEXTS.values(), *SURROGATE_TEXTS])


@needs_mistral
def test_sources_names_and_pickling() -> None:
    path = REAL_FILES[-1]  # tokenizer.model.v1
    model = real_model(path)
    sp = processor(model)
    text = "Hello <s> world ▁ 123\n"
    want = sp.encode(text)
    for source in (path, str(path), model):
        assert Encoding.from_sentencepiece(source).encode_ordinary(text) == want
    assert Encoding.from_sentencepiece(model, name="mistral").name == "mistral"
    enc = encoding_of(model)
    copy = pickle.loads(pickle.dumps(enc))
    assert copy.encode_ordinary(text) == want
    ids = [*want, 2, 0, 300, 1, *sp.encode(" x")]
    assert copy.decode(ids) == sp.decode(ids)


@needs_mistral
@pytest.mark.parametrize("path", REAL_FILES, ids=REAL_IDS)
def test_mistral_files_decode_like_sentencepiece(path: Path) -> None:
    model = real_model(path)
    sp = processor(model)
    byte = {n: sp.piece_to_id(f"<0x{n:02X}>") for n in range(256)}
    word = sp.piece_to_id("\u2581Hello")
    cases = [
        [],
        [sp.bos_id(), word, sp.eos_id()],
        [sp.unk_id()],
        [sp.unk_id(), word, sp.unk_id(), sp.unk_id()],
        [byte[0xE2], byte[0x82]],  # a truncated character: two U+FFFD (one per byte)
        [byte[0xE2], byte[0x82], byte[0xAC]],  # €
        [byte[0xF0], byte[0x9F], byte[0x98], word, byte[0x80]],
        [byte[0xFF], byte[0xC0], byte[0xAF]],
        [byte[0xE2], byte[0x96], byte[0x81], word],  # U+2581 spelt in bytes stays U+2581
        [byte[0x20], word],
        [sp.piece_to_id("\u2581\u2581"), word],
        [sp.bos_id(), sp.piece_to_id("\u2581\u2581\u2581\u2581"), word],
        [sp.piece_to_id("[INST]"), word, sp.piece_to_id("[/INST]"), word],
        [*sp.encode("a\ufffd\u2581 b"), byte[0xC3]],
    ]
    assert_decodes_like_sentencepiece(model, cases)
    assert_decodes_like_sentencepiece(model, random_id_lists(model, 300, seed=len(path.name)))


@needs_mistral
@pytest.mark.parametrize("path", REAL_FILES, ids=REAL_IDS)
def test_mistral_control_pieces_are_special_tokens(path: Path) -> None:
    model = real_model(path)
    sp = processor(model)
    enc = encoding_of(model)
    controls = pieces_of_type(model, CONTROL)
    assert set(controls) <= enc.special_tokens_set
    assert not set(pieces_of_type(model, USER_DEFINED)) & enc.special_tokens_set
    for piece in [piece for piece in ("<s>", "</s>", "[INST]", "[/INST]") if piece in controls]:
        text = f"Hi {piece} there"
        with pytest.raises(ValueError, match=re.escape(piece)):
            enc.encode(text)
        assert enc.encode_ordinary(text) == sp.encode(text)  # plain text, as sentencepiece
        assert enc.encode(text, disallowed_special=()) == sp.encode(text)
        assert enc.encode(piece, allowed_special="all") == [controls[piece]]
        assert enc.encode(piece, allowed_special={piece}) == [controls[piece]]
        assert enc.encode_single_token(piece) == controls[piece]
    both = "<s></s>"
    assert enc.encode(both, allowed_special="all") == [controls["<s>"], controls["</s>"]]
    assert enc.decode(enc.encode(both, allowed_special="all")) == ""  # control pieces: ""


@needs_mistral
@pytest.mark.parametrize("path", REAL_FILES, ids=REAL_IDS)
def test_mistral_allowed_special_splits_the_text(path: Path) -> None:
    model = real_model(path)
    texts = [
        "<s>", "<s></s>", "<s>Hi", "<s> Hi</s> there", "a <s>b", "x<s>  y</s>", "Hi</s>",
        " <s> ", "[INST] What? [/INST] Fine.</s>[INST]  again[/INST]",
    ]  # fmt: skip
    assert_allowed_special_like_llama(model, texts)


def llama_reference(model: bytes, text: str, specials: dict[str, int]) -> list[int]:
    """The IDs of ``text`` with ``specials`` allowed, as HF's ``LlamaTokenizer(legacy=False)``
    gives them: the special tokens cut the text, each part is sentencepiece's encoding, and the
    dummy prefix goes before the first part only (nothing when the text starts with a special
    token: no lone ``▁`` before it)."""
    first = processor(model)
    rest = processor(
        edited(model, lambda proto: setattr(proto.normalizer_spec, "add_dummy_prefix", False))
    )
    cut = "|".join(re.escape(token) for token in sorted(specials, key=len, reverse=True))
    ids: list[int] = []
    for index, part in enumerate(re.split(f"({cut})", text)):
        if index % 2:
            ids.append(specials[part])
        elif part:
            ids += (first if index == 0 else rest).encode(part)
    return ids


def assert_allowed_special_like_llama(model: bytes, texts: list[str]) -> None:
    enc = encoding_of(model)
    controls = pieces_of_type(model, CONTROL)
    for text in texts:
        want = llama_reference(model, text, controls)
        got = enc.encode(text, allowed_special="all")
        assert got == want, f"encode({text!r}, allowed_special='all'): {got} != {want}"
        assert enc.encode_batch([text], allowed_special="all") == [want]
        assert enc.encode_batch_to_flat([text], allowed_special="all").tolist() == [want]


@needs_mistral
@pytest.mark.parametrize(
    "path",
    [p for p in REAL_FILES if ".v3" in p.name or ".v7" in p.name],
    ids=[p.name for p in REAL_FILES if ".v3" in p.name or ".v7" in p.name],
)
def test_mistral_user_defined_pieces_are_matched_in_text(path: Path) -> None:
    model = real_model(path)
    sp = processor(model)
    enc = encoding_of(model)
    user = pieces_of_type(model, USER_DEFINED)
    assert "[REFERENCE_DOC_1]" in user
    texts = [
        "[REFERENCE_DOC_1]",
        "see[REFERENCE_DOC_1]here",
        " [REFERENCE_DOC_10] and [REFERENCE_DOC_1]0",  # the longest match
        "[REFERENCE_DOC_1[REFERENCE_DOC_2]]",
        "[REFERENCE_DOC_19][REFERENCE_DOC_0]  [REFERENCE_DOC_5] ",
        "word[REFERENCE_DOC_3]\u2581[REFERENCE_DOC_4]\n",
        "[REFERENCE_DOC_", "[REFERENCE_DOC_99]",
        "[INST][REFERENCE_DOC_1][/INST]",
    ]  # fmt: skip
    assert_like_sentencepiece(model, texts, batches=False)
    assert sp.encode("x[REFERENCE_DOC_1]")[-1] == user["[REFERENCE_DOC_1]"]  # the reference
    assert enc.encode("x[REFERENCE_DOC_1]")[-1] == user["[REFERENCE_DOC_1]"]  # no special


# ------------------------------------------------------------------ models trained here

TRAINED = sorted(MODELS)


@pytest.mark.parametrize("name", TRAINED)
def test_trained_models_encode_like_sentencepiece(name: str) -> None:
    assert_like_sentencepiece(trained(name), [*TEXTS.values(), *SURROGATE_TEXTS])


@pytest.mark.parametrize("name", TRAINED)
def test_trained_models_encode_every_corpus_line(name: str) -> None:
    lines = [*CORPUS_LINES, *(line.upper() for line in CORPUS_LINES)]
    assert_like_sentencepiece(trained(name), lines, batches=False)


@pytest.mark.parametrize("name", TRAINED)
def test_trained_models_decode_like_sentencepiece(name: str) -> None:
    model = trained(name)
    assert_decodes_like_sentencepiece(model, random_id_lists(model, 300, seed=len(name)))


def test_unknown_characters_without_byte_fallback() -> None:
    """A run of characters outside the vocabulary is one ``<unk>``; spaces end it."""
    model = trained("no-byte-fallback")
    sp = processor(model)
    unk = sp.unk_id()
    assert sp.encode("☃☃☃").count(unk) == 1  # the reference merges the run
    texts = ["☃", "☃☃☃", "a☃b", "☃ ☃", "☃\u2581☃", "☃a☃", "☃\n☃", "龘靐齉 x 🫠🫠"]
    assert_like_sentencepiece(model, texts)
    assert encoding_of(model).decode(sp.encode("a☃☃b")) == sp.decode(sp.encode("a☃☃b"))


def test_byte_fallback_spells_unknown_characters_in_bytes() -> None:
    model = trained("mistral-like")
    sp = processor(model)
    assert [sp.id_to_piece(i) for i in sp.encode("☃")][-3:] == ["<0xE2>", "<0x98>", "<0x83>"]
    assert_like_sentencepiece(model, ["☃", "☃☃", "a☃b", "\U0001d518", "\U0010ffff", "\x00"])


def test_user_defined_symbols_longest_match_first() -> None:
    model = trained("user-symbols")
    sp = processor(model)
    assert sp.encode("abcd", out_type=str)[-1] == "abcd"  # longest: abcd, not abc
    texts = [
        "abcd", "abc", "abcabcd", "xabcdx", "bcd", "abcbcd", "aabcdd", "ab cd",
        "<tool_call><tool>", "<tool><tool_call", "<tool_result>x", "[REF_DOC][REF]",
        "the", "thethe", "other", " the ", "12", "123", "1212", "112", "☃", "☃☃ ☃",
        "[INST]abc[/INST]",
    ]  # fmt: skip
    assert_like_sentencepiece(model, texts)


@pytest.mark.parametrize("name", ["control-symbols", "reordered-ids", "user-symbols"])
def test_trained_control_symbols_are_special_tokens(name: str) -> None:
    model = trained(name)
    sp = processor(model)
    enc = encoding_of(model)
    controls = pieces_of_type(model, CONTROL)
    assert set(controls) <= enc.special_tokens_set
    assert not set(pieces_of_type(model, USER_DEFINED)) & enc.special_tokens_set
    for piece, index in controls.items():
        text = f"a{piece}b {piece}"
        with pytest.raises(ValueError, match=re.escape(piece)):
            enc.encode(text)
        assert enc.encode_ordinary(text) == sp.encode(text)
        assert enc.encode(piece, allowed_special="all") == [index]
    assert_decodes_like_sentencepiece(model, [[index] for index in controls.values()])
    texts = [f"{piece}", f"{piece}x", f"x {piece} y", f"{piece}{piece} {piece}"]
    assert_allowed_special_like_llama(model, [text for piece in controls for text in texts])


def test_user_defined_pieces_holding_metaspace() -> None:
    """A user-defined piece holding U+2581 matches spaces; the first piece's leading one is
    dropped on decoding, user-defined or not."""
    model = trained("user-symbols-with-metaspace")
    sp = processor(model)
    assert sp.encode(" x", out_type=str) == ["\u2581\u2581", "x"]  # the reference
    assert sp.decode(sp.encode("x")) == "x"
    texts = ["x", " x", "  x", "a b", "a  b", "ya b", "  ", "\u2581x", "\u2581\u2581", "x x  x"]
    assert_like_sentencepiece(model, texts)
    user = list(pieces_of_type(model, USER_DEFINED).values())
    assert_decodes_like_sentencepiece(
        model, [[u] for u in user] + [[v, u] for u in user for v in user]
    )


def test_a_long_text() -> None:
    """100,000 characters of every table entry (the C encoder; the list methods)."""
    text = " ".join(TEXTS.values()) * 40
    for model in (trained("mistral-like"), trained("no-split-by-whitespace")):
        sp = processor(model)
        enc = encoding_of(model)
        want = sp.encode(text)
        assert enc.encode_ordinary(text) == want
        assert enc.encode_ordinary_batch([text, "x", text[:5000]]) == [
            want,
            sp.encode("x"),
            sp.encode(text[:5000]),
        ]
        assert enc.decode(want) == sp.decode(want)


def test_reordered_special_ids() -> None:
    model = trained("reordered-ids")
    sp = processor(model)
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id(), sp.pad_id()) == (3, 0, 1, 2)
    enc = encoding_of(model)
    assert enc.encode_ordinary("hi", add_special_tokens=True)[0] == 0
    assert enc.decode([0, 1, 2, 3, 3, 0]) == sp.decode([0, 1, 2, 3, 3, 0])


def test_no_bos_adds_nothing() -> None:
    model = trained("no-bos-eos")
    sp = processor(model)
    assert sp.bos_id() == -1
    assert encoding_of(model).encode_ordinary("hi", add_special_tokens=True) == sp.encode("hi")


# ------------------------------------------------------------------ random texts

_ALPHABET = sorted(set("".join(CORPUS_LINES)))
CHARS = st.one_of(
    st.sampled_from(_ALPHABET),
    st.sampled_from(_ALPHABET),
    st.sampled_from([" ", " ", "  ", "\n", "\t", "\r\n", "\u2581", "\u00a0", "\x00"]),
    st.sampled_from([*"0123456789", "12", "٣"]),
    st.sampled_from(["abcd", "the", "<tool>", "<tool_call>", "[REF]", "[INST]", "</s>", "☃"]),
    st.characters(exclude_categories=["Cs"]),
)
TEXT = st.lists(CHARS, max_size=30).map("".join)
SURROGATE_TEXT = st.lists(
    st.one_of(CHARS, st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)), max_size=12
).map("".join)
RANDOM_TEXT_MODELS = [
    "mistral-like",
    "no-byte-fallback",
    "no-byte-fallback-coverage",
    "no-dummy-prefix",
    "remove-extra-whitespaces",
    "suffix",
    "suffix-remove-whitespaces",
    "no-split-by-whitespace",
    "user-symbols",
    "user-symbols-no-byte-fallback",
]


@pytest.mark.parametrize("name", RANDOM_TEXT_MODELS)
@SETTINGS
@given(text=st.one_of(TEXT, TEXT, TEXT, SURROGATE_TEXT))
def test_random_text_like_sentencepiece(name: str, text: str) -> None:
    model = trained(name)
    sp = processor(model)
    enc = encoding_of(model)
    want = sp.encode(tiktoken_cleaned(text))
    got = enc.encode_ordinary(text)
    assert got == want, f"{name}: encode_ordinary({text!r}): {first_difference(got, want, sp)}"
    assert enc.decode(want) == sp.decode(want), f"{name}: decode(sp.encode({text!r}))"


@pytest.mark.parametrize("name", ["mistral-like", "no-byte-fallback", "user-symbols", "suffix"])
@settings(SETTINGS, max_examples=max(1, MAX_EXAMPLES // 4))  # the tensor engine: 1 batch/call
@given(texts=st.lists(TEXT, min_size=1, max_size=5))
def test_random_batches_like_sentencepiece(name: str, texts: list[str]) -> None:
    model = trained(name)
    sp = processor(model)
    enc = encoding_of(model)
    want = [sp.encode(text) for text in texts]
    assert enc.encode_ordinary_batch(texts) == want
    ids, lengths = enc.encode_batch_to_tensor(
        texts, device="cpu", disallowed_special=(), merge_backend="torch"
    )
    assert [ids[row, : lengths[row]].tolist() for row in range(len(texts))] == want
    assert enc.encode_batch_to_flat(texts, disallowed_special=()).tolist() == want


@pytest.mark.parametrize("name", ["mistral-like", "no-byte-fallback", "suffix", "user-symbols"])
@SETTINGS
@given(data=st.data())
def test_random_ids_decode_like_sentencepiece(name: str, data: st.DataObject) -> None:
    model = trained(name)
    proto = model_proto(model)
    apart = [i for i, piece in enumerate(proto.pieces) if piece.type != NORMAL]
    ids = data.draw(
        st.lists(
            st.one_of(st.sampled_from(apart), st.integers(0, len(proto.pieces) - 1)),
            max_size=16,
        )
    )
    assert encoding_of(model).decode(ids) == processor(model).decode(ids), ids


# ------------------------------------------------------------------ refusals


def test_refuses_unigram(tmp_path: Path) -> None:
    model = train(model_type="unigram", vocab_size=600)
    path = tmp_path / "unigram.model"
    path.write_bytes(model)
    with pytest.raises(ValueError, match=r"(?i)model_type") as error:
        Encoding.from_sentencepiece(path)
    assert str(path) in str(error.value) or path.name in str(error.value)
    with pytest.raises(ValueError, match=r"(?i)unigram"):
        Encoding.from_sentencepiece(model)
    for model_type in ("char", "word"):
        with pytest.raises(ValueError, match=r"(?i)model_type"):
            Encoding.from_sentencepiece(train(model_type=model_type, vocab_size=300))


def test_refuses_nmt_nfkc(tmp_path: Path) -> None:
    model = train(normalization_rule_name="nmt_nfkc")
    path = tmp_path / "nfkc.model"
    path.write_bytes(model)
    with pytest.raises(ValueError, match=r"nmt_nfkc") as error:
        Encoding.from_sentencepiece(path)
    assert path.name in str(error.value)
    with pytest.raises(ValueError, match=r"nmt_nfkc"):
        Encoding.from_sentencepiece(model)


def test_refuses_unused_pieces_unescaped_whitespace_and_spaces_in_pieces() -> None:
    model = trained("mistral-like")

    def mark_unused(proto: Any) -> None:
        proto.pieces[400].type = UNUSED

    def keep_whitespace(proto: Any) -> None:
        proto.normalizer_spec.escape_whitespaces = False

    with pytest.raises(ValueError, match=r"(?i)unused"):
        Encoding.from_sentencepiece(edited(model, mark_unused))
    with pytest.raises(ValueError, match=r"escape_whitespaces"):
        Encoding.from_sentencepiece(edited(model, keep_whitespace))
    # sentencepiece keeps a user-defined piece's U+0020, and never matches it (the text's
    # spaces are U+2581 by then)
    with pytest.raises(ValueError, match=re.escape("'a b'")):
        Encoding.from_sentencepiece(train(user_defined_symbols=["a b"]))


def test_refuses_corrupt_and_foreign_files(tmp_path: Path) -> None:
    model = trained("mistral-like")
    foreign = [
        b"",  # sentencepiece reads it as a model without pieces
        b"not a sentencepiece model",
        b"\xff" * 64,
        model[: len(model) // 2 + 1],  # truncated inside a piece
        b'{"model": {"type": "BPE"}}',  # a tokenizer.json
    ]
    for data in foreign:
        with pytest.raises(ValueError):
            Encoding.from_sentencepiece(data)
    path = tmp_path / "truncated.model"
    path.write_bytes(model[:100])
    with pytest.raises(ValueError, match=re.escape(path.name)):
        Encoding.from_sentencepiece(path)
    with pytest.raises((ValueError, OSError)):
        Encoding.from_sentencepiece(tmp_path / "missing.model")
