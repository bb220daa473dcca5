"""Vocabulary files: tiktoken's format (plain and gzip) and Hugging Face ``tokenizer.json``.

Malformed tiktoken files must fail with ``ValueError`` naming ``path:line``; sha256 mismatches
fail; ``Encoding.from_hf_json`` must give the IDs of the ``tokenizers`` library for byte-level
BPE files (GPT-2's ``ByteLevel`` pre-tokenizer, and Llama-3's ``Split`` + ``ByteLevel`` layout
with ``ignore_merges``), and refuse every setting it does not implement, naming the file.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from bpe_strategies import ATOMS, TIKTOKEN_CHAR
from hypothesis import given
from hypothesis import strategies as st
from oracles.bpe import hf_byte_level_json, tiktoken_toy
from strategies import SETTINGS

from tensortext.bpe import Encoding, get_encoding, list_encoding_names
from tensortext.bpe.hf_json import bytes_to_unicode, read_hf_json
from tensortext.bpe.patterns import CL100K_PATTERN, LLAMA3_PATTERN
from tensortext.bpe.registry import ENCODINGS, RANKS_SHA256, vocabulary_file
from tensortext.bpe.vocab import read_tiktoken_file

# --------------------------------------------------------------------------------------------
# tiktoken files
# --------------------------------------------------------------------------------------------

TOY_MERGES = {b"ab": 256, b"abc": 257, b" a": 258, b" ab": 259, b"\xc3\xa9": 260, b"zz": 261}
TOY_RANKS = {**{bytes([b]): b for b in range(256)}, **TOY_MERGES}


def tiktoken_lines(ranks: dict[bytes, int]) -> list[str]:
    return [f"{base64.b64encode(token).decode()} {rank}" for token, rank in ranks.items()]


def write(path: Path, lines: list[str], *, compress: bool) -> bytes:
    """Write ``lines`` (newline-terminated) to ``path``; return the uncompressed bytes."""
    data = "".join(line + "\n" for line in lines).encode("ascii")
    path.write_bytes(gzip.compress(data) if compress else data)
    return data


COMPRESS = pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])


@COMPRESS
def test_read_tiktoken_file(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / "toy.tiktoken"
    lines = tiktoken_lines(TOY_RANKS)
    lines.insert(10, "")  # blank lines are skipped
    data = write(path, lines, compress=compress)
    assert read_tiktoken_file(path) == TOY_RANKS
    assert read_tiktoken_file(str(path)) == TOY_RANKS
    # The hash is over the uncompressed bytes.
    digest = hashlib.sha256(data).hexdigest()
    assert read_tiktoken_file(path, expected_hash=digest) == TOY_RANKS
    with pytest.raises(ValueError, match="sha256") as error:
        read_tiktoken_file(path, expected_hash="0" * 64)
    assert str(path) in str(error.value)
    if compress:
        with pytest.raises(ValueError, match="sha256"):
            read_tiktoken_file(path, expected_hash=hashlib.sha256(path.read_bytes()).hexdigest())


def test_read_tiktoken_file_crlf(tmp_path: Path) -> None:
    path = tmp_path / "crlf.tiktoken"
    path.write_bytes("".join(f"{line}\r\n" for line in tiktoken_lines(TOY_RANKS)).encode())
    assert read_tiktoken_file(path) == TOY_RANKS


def b64(token: bytes) -> str:
    return base64.b64encode(token).decode()


MALFORMED = {
    "bad_base64": "!!!! 300",
    "bad_base64_padding": "YWJjZA 300",
    "missing_rank": b64(b"zzz"),
    "extra_field": f"{b64(b'zzz')} 300 301",
    "non_integer_rank": f"{b64(b'zzz')} three",
    "duplicate_token": f"{b64(b'ab')} 300",
    "duplicate_rank": f"{b64(b'zzz')} 257",
    "negative_rank": f"{b64(b'zzz')} -1",
}


def first_bad_line(lines: list[str]) -> int:
    """1-based number of the first malformed line: for a duplicate, its *second* occurrence."""
    tokens: set[bytes] = set()
    ranks: set[int] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            token, rank = base64.b64decode(fields[0], validate=True), int(fields[1])
        except (ValueError, IndexError):
            return number
        if len(fields) != 2 or token in tokens or rank in ranks or rank < 0:
            return number
        tokens.add(token)
        ranks.add(rank)
    raise AssertionError("no malformed line")


@COMPRESS
@pytest.mark.parametrize("case", list(MALFORMED))
@pytest.mark.parametrize("at", [0, 100, -1], ids=["first", "middle", "last"])
def test_malformed_line_names_path_and_line(
    tmp_path: Path, compress: bool, case: str, at: int
) -> None:
    lines = tiktoken_lines(TOY_RANKS)
    lines.insert(5, "")  # a blank line still counts in the line numbers
    position = len(lines) if at == -1 else at
    lines.insert(position, MALFORMED[case])
    path = tmp_path / f"{case}.tiktoken"
    write(path, lines, compress=compress)
    line = first_bad_line(lines)
    assert line == position + 1 or case.startswith("duplicate")
    with pytest.raises(ValueError) as error:
        read_tiktoken_file(path)
    assert f"{path}:{line}:" in str(error.value), str(error.value)
    with pytest.raises(ValueError, match=f":{line}:"):
        Encoding.from_tiktoken_file(path, pat_str="cl100k", special_tokens={})


def test_corrupt_and_empty_files(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.tiktoken"
    corrupt.write_bytes(b"\x1f\x8b" + b"not really gzip" * 10)
    with pytest.raises(ValueError) as error:
        read_tiktoken_file(corrupt)
    assert str(corrupt) in str(error.value)
    truncated = tmp_path / "truncated.tiktoken.gz"
    truncated.write_bytes(gzip.compress("\n".join(tiktoken_lines(TOY_RANKS)).encode())[:200])
    with pytest.raises(ValueError) as error:
        read_tiktoken_file(truncated)
    assert str(truncated) in str(error.value)
    for content in [b"", b"\n\n  \n"]:
        empty = tmp_path / "empty.tiktoken"
        empty.write_bytes(content)
        with pytest.raises(ValueError) as error:
            read_tiktoken_file(empty)
        assert str(empty) in str(error.value)


TOY_TEXTS = ["", "abc", " abc abcabc", "ab ab\u00e9 zzz zzzz", "hello <|end|> world", "a" * 50]


@COMPRESS
def test_encoding_from_tiktoken_file(tmp_path: Path, compress: bool) -> None:
    path = tmp_path / ("toy.tiktoken.gz" if compress else "toy.tiktoken")
    data = write(path, tiktoken_lines(TOY_RANKS), compress=compress)
    special = {"<|end|>": 300}
    enc = Encoding.from_tiktoken_file(
        path,
        pat_str=CL100K_PATTERN,
        special_tokens=special,
        expected_hash=hashlib.sha256(data).hexdigest(),
    )
    assert enc.name == path.stem
    assert (
        Encoding.from_tiktoken_file(path, pat_str="cl100k", special_tokens={}, name="n").name == "n"
    )
    ref = tiktoken_toy(TOY_RANKS, special_tokens=special)
    assert enc.n_vocab == ref.n_vocab == 301
    for text in TOY_TEXTS:
        assert enc.encode(text, allowed_special="all") == ref.encode(text, allowed_special="all")
        assert enc.encode_ordinary(text) == ref.encode_ordinary(text)
    with pytest.raises(ValueError, match="sha256"):
        Encoding.from_tiktoken_file(
            path, pat_str=CL100K_PATTERN, special_tokens=special, expected_hash="f" * 64
        )


def test_encoding_constructor_validation() -> None:
    missing = {k: v for k, v in TOY_RANKS.items() if k != b"\x80"}
    with pytest.raises(ValueError, match="256"):
        Encoding("toy", pat_str="cl100k", mergeable_ranks=missing, special_tokens={})
    with pytest.raises(ValueError, match="pat_str"):
        Encoding("toy", pat_str=r"\w+|\s+", mergeable_ranks=TOY_RANKS, special_tokens={})
    with pytest.raises(ValueError, match="reuses"):
        Encoding("toy", pat_str="cl100k", mergeable_ranks=TOY_RANKS, special_tokens={"<s>": 257})
    with pytest.raises(ValueError, match="explicit_n_vocab"):
        Encoding(
            "toy",
            pat_str="cl100k",
            mergeable_ranks=TOY_RANKS,
            special_tokens={},
            explicit_n_vocab=1000,
        )
    enc = Encoding(
        "toy", pat_str="cl100k", mergeable_ranks=TOY_RANKS, special_tokens={}, explicit_n_vocab=262
    )
    assert enc.n_vocab == 262


def test_get_encoding_names_and_hashes() -> None:
    assert list_encoding_names() == [
        "gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony"
    ]  # fmt: skip
    for bad in ["gpt-9", "", "CL100K_BASE", "cl100k_base "]:
        with pytest.raises(ValueError, match="unknown encoding"):
            get_encoding(bad)
    # The published hash is checked: the right one passes (get_encoding works), a wrong one not.
    name = "cl100k_base"
    path = vocabulary_file(name)
    digest = hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()
    assert digest == RANKS_SHA256[ENCODINGS[name].ranks]
    with pytest.raises(ValueError, match="sha256"):
        Encoding.from_tiktoken_file(
            path,
            pat_str=ENCODINGS[name].pat_str,
            special_tokens=ENCODINGS[name].special_tokens,
            expected_hash="0" * 64,
        )


# --------------------------------------------------------------------------------------------
# Hugging Face tokenizer.json
# --------------------------------------------------------------------------------------------

CORPUS = [
    "Hello world! It's a test of the tokenizer, isn't it? HELLO WORLD, hello again.",
    "The quick brown fox jumps over the lazy dog 1234567890 times.",
    "def main():\n    print('hello')\n    return 0\n\n",
    "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e"
    " \u4f60\u597d\u4e16\u754c",
    "I'm sure we'll see they've done what you'd expect. DON'T SHOUT!",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \U0001f600\U0001f600 \u00e9t\u00e9",
    "  spaces   and\ttabs\n\nand newlines\r\n",
]
WORDS = sorted({w for line in CORPUS for w in line.split()} | {" zebra", "zebra", " hello"})
# Tokens added to the vocabulary with no merge reaching them: used by ignore_merges=True only.
UNREACHABLE = [b" zebra", b"zebra", b"'s"]
SPECIAL = "<|endoftext|>"


def hf_texts() -> st.SearchStrategy[str]:
    atom = st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from(WORDS).map(lambda w: " " + w),
        st.sampled_from(ATOMS),
        TIKTOKEN_CHAR,
    )
    return st.lists(atom, max_size=16).map("".join)


def add_unreachable(spec: dict[str, Any]) -> dict[str, Any]:
    to_char = bytes_to_unicode()
    vocab = spec["model"]["vocab"]
    next_id = max([*vocab.values(), *(t["id"] for t in spec["added_tokens"])]) + 1
    for token in UNREACHABLE:
        spelled = "".join(to_char[b] for b in token)
        if spelled not in vocab:
            vocab[spelled] = next_id
            next_id += 1
    return spec


def train_gpt2_style() -> dict[str, Any]:
    from tokenizers import ByteLevelBPETokenizer

    tokenizer = ByteLevelBPETokenizer(add_prefix_space=False)
    tokenizer.train_from_iterator(
        CORPUS * 3, vocab_size=600, min_frequency=1, special_tokens=[SPECIAL], show_progress=False
    )
    spec = json.loads(tokenizer._tokenizer.to_str())
    assert spec["normalizer"] is None and spec["pre_tokenizer"]["type"] == "ByteLevel"
    return add_unreachable(spec)


def train_split_style(pattern: str) -> dict[str, Any]:
    """Llama-3's layout: Split(pattern, Isolated) + ByteLevel(use_regex=False), ignore_merges."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        min_frequency=1,
        special_tokens=[SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(CORPUS * 3, trainer=trainer)
    spec = json.loads(tokenizer.to_str())
    spec["model"]["ignore_merges"] = True  # as in Llama-3's file, whatever the trainer kept
    return add_unreachable(spec)


class HFPair:
    """An HF tokenizer and our Encoding, both read from the same tokenizer.json."""

    def __init__(self, spec: dict[str, Any], directory: Path) -> None:
        from tokenizers import Tokenizer

        self.path = directory / "tokenizer.json"
        self.path.write_text(json.dumps(spec), encoding="utf-8")
        self.spec = spec
        self.hf = Tokenizer.from_file(str(self.path))
        self.enc = Encoding.from_hf_json(self.path)

    def check(self, text: str) -> None:
        expected = self.hf.encode(text, add_special_tokens=False).ids
        got = self.enc.encode(text, allowed_special="all")
        assert got == expected, (
            f"{self.path}: text {text!r}\n  ours       = {got}\n  tokenizers = {expected}\n"
            f"  ours:       {[self.enc.decode_bytes([t]) for t in got]}\n"
            f"  tokenizers: {[self.enc.decode_bytes([t]) for t in expected]}"
        )


# Split patterns -> the kind from_hf_json must pick (cl100k's `{1,3}+` under Oniguruma: cl100k_hf).
SPLITS = {"llama3": (LLAMA3_PATTERN, "llama3"), "cl100k_split": (CL100K_PATTERN, "cl100k_hf")}


@pytest.fixture(scope="module", params=["gpt2", *SPLITS])
def hf_pair(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> HFPair:
    if request.param == "gpt2":
        spec = train_gpt2_style()
    else:
        spec = train_split_style(SPLITS[request.param][0])
    return HFPair(spec, tmp_path_factory.mktemp(request.param))


def test_hf_files_are_what_we_think(hf_pair: HFPair) -> None:
    model = hf_pair.spec["model"]
    assert model["type"] == "BPE" and len(model["merges"]) > 100
    assert hf_pair.enc.special_tokens_set == {SPECIAL}
    if hf_pair.spec["pre_tokenizer"]["type"] == "Sequence":
        assert model["ignore_merges"] is True
        pattern = hf_pair.spec["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"]
        assert hf_pair.enc.pattern_kind == dict(SPLITS.values())[pattern]
    else:
        assert not model["ignore_merges"]
        assert hf_pair.enc.pattern_kind == "r50k"
    vocab = read_hf_json(hf_pair.path)
    assert vocab.n_vocab == hf_pair.hf.get_vocab_size()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Hello world! It's a test.",
        *CORPUS,
        " zebra zebra's",
        "zebra",
        f"hello{SPECIAL} world {SPECIAL}{SPECIAL}",
        "a'S 'LL 'll 're",
        "  \n\n  x  ",
        "1234567 \u00bd",
        "x1234567890123y 12 \u0663\u0664\u0665\u0666\u0667",
    ],
)
def test_hf_named_texts(hf_pair: HFPair, text: str) -> None:
    hf_pair.check(text)


@SETTINGS
@given(text=hf_texts())
def test_hf_random_texts(hf_pair: HFPair, text: str) -> None:
    hf_pair.check(text)


@SETTINGS
@given(parts=st.lists(st.one_of(hf_texts(), st.just(SPECIAL)), max_size=4))
def test_hf_added_tokens(hf_pair: HFPair, parts: list[str]) -> None:
    hf_pair.check("".join(parts))


def test_hf_unreachable_token_needs_ignore_merges(hf_pair: HFPair) -> None:
    """A vocabulary token no merge reaches: HF emits it only with ignore_merges=True."""
    whole = hf_pair.enc.encode(" zebra")
    if hf_pair.spec["model"]["ignore_merges"]:
        assert len(whole) == 1
    else:
        assert len(whole) > 1
    hf_pair.check(" zebra")


def test_hf_tiny_hand_written(tmp_path: Path) -> None:
    vocab = {bytes([b]): b for b in range(256)}
    vocab.update({b"ab": 256, b"abc": 257, b" a": 258})
    merges = [(b"a", b"b"), (b"ab", b"c"), (b" ", b"a")]
    for pattern in [None, LLAMA3_PATTERN]:
        for ignore in [False, True]:
            spec = hf_byte_level_json(vocab, merges, pattern=pattern, ignore_merges=ignore)
            pair = HFPair(spec, tmp_path)
            for text in ["abc abcabc", "ab ab ca", "", " a a  a"]:
                pair.check(text)


# ------------------------------------------------------------------ unsupported settings


def _wordpiece(spec: dict[str, Any]) -> None:
    from tokenizers import Tokenizer, models

    wordpiece = json.loads(
        Tokenizer(models.WordPiece(vocab={"[UNK]": 0, "a": 1}, unk_token="[UNK]")).to_str()
    )
    spec["model"] = wordpiece["model"]


def _set(path: str, value: Any) -> Any:
    def apply(spec: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        node = spec
        for parent in parents:
            node = node[parent]
        node[key] = value

    return apply


def _first_merge_unknown(spec: dict[str, Any]) -> None:
    spec["model"]["merges"][0] = ["\u4e2d", "\u6587"]


def _drop_byte(spec: dict[str, Any]) -> None:
    del spec["model"]["vocab"][bytes_to_unicode()[0x80]]


UNSUPPORTED = {
    "normalizer": _set("normalizer", {"type": "Lowercase"}),
    "wordpiece": _wordpiece,
    "unigram_type": _set("model.type", "Unigram"),
    "post_processor": _set("post_processor", {"type": "Unknown"}),
    "no_pre_tokenizer": _set("pre_tokenizer", None),
    "whitespace_pre_tokenizer": _set("pre_tokenizer", {"type": "Whitespace"}),
    "byte_fallback": _set("model.byte_fallback", True),
    "dropout": _set("model.dropout", 0.1),
    "continuing_subword_prefix": _set("model.continuing_subword_prefix", "##"),
    "end_of_word_suffix": _set("model.end_of_word_suffix", "</w>"),
    "unknown_split_regex": _set(
        "pre_tokenizer",
        {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": r"\w+|\s+"}, "behavior": "Isolated"},
                {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False},
            ],
        },
    ),
    "merge_of_unknown_tokens": _first_merge_unknown,
    "missing_byte": _drop_byte,
}


@pytest.fixture(scope="module")
def gpt2_spec() -> dict[str, Any]:
    return train_gpt2_style()


@pytest.mark.parametrize("case", list(UNSUPPORTED))
def test_hf_unsupported_settings_name_the_file(
    gpt2_spec: dict[str, Any], tmp_path: Path, case: str
) -> None:
    spec = copy.deepcopy(gpt2_spec)
    UNSUPPORTED[case](spec)
    path = tmp_path / f"{case}.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        Encoding.from_hf_json(path)
    assert str(path) in str(error.value), str(error.value)


def test_hf_not_json(tmp_path: Path) -> None:
    for content in [b"{not json", b"\xff\xfe\x00binary"]:
        path = tmp_path / "broken.json"
        path.write_bytes(content)
        with pytest.raises(ValueError) as error:
            Encoding.from_hf_json(path)
        assert str(path) in str(error.value)
