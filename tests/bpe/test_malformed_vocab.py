"""Malformed or hostile vocabularies fail at load with a ``ValueError`` naming the file (and the
line of a tiktoken file), before anything is sized by a bad ID (issue 16, items 14 and 20).

Token IDs must be integers below ``4 * tokens + 2**20`` (:func:`tensortext.bpe.vocab.id_bound`);
``tokenizer.json`` added tokens must carry the ID that ``tokenizers`` itself gives them.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from oracles.bpe import hf_byte_level_json

from tensortext.bpe import Encoding
from tensortext.bpe.hf_json import read_hf_json
from tensortext.bpe.vocab import id_bound, read_tiktoken_file

BYTES = {bytes([b]): b for b in range(256)}
TOY = {**BYTES, b"ab": 256}  # 257 tokens: IDs must be below 4 * 257 + 2**20 = 1049604
TOY_BOUND = "IDs must be integers in [0, 1049604)"


def test_the_bound() -> None:
    assert id_bound(257) == 1049604
    assert id_bound(200_000) == 4 * 200_000 + 2**20
    assert id_bound(10**9) == 2**31


# --------------------------------------------------------------------------------------------
# tiktoken files and tiktoken's constructor
# --------------------------------------------------------------------------------------------


def tiktoken_file(tmp_path: Path, ranks: dict[bytes, int]) -> Path:
    path = tmp_path / "toy.tiktoken"
    lines = [f"{base64.b64encode(token).decode()} {rank}\n" for token, rank in ranks.items()]
    path.write_text("".join(lines), encoding="ascii")
    return path


@pytest.mark.parametrize(
    ("rank", "shown"), [(10**9, "1000000000"), (2**70, "2**70 or more")], ids=["1e9", "2**70"]
)
def test_tiktoken_rank_past_the_bound(tmp_path: Path, rank: int, shown: str) -> None:
    """1e9 used to size an 8 GB table; 2**70 raised a raw OverflowError."""
    path = tiktoken_file(tmp_path, {**BYTES, b"ab": rank})
    with pytest.raises(ValueError) as raised:
        read_tiktoken_file(path)
    assert str(raised.value).startswith(f"{path}:257: rank {shown} is too large; {TOY_BOUND}")


def test_tiktoken_file_encoding_names_the_line(tmp_path: Path) -> None:
    path = tiktoken_file(tmp_path, {**BYTES, b"ab": 2**70})
    with pytest.raises(ValueError) as raised:
        Encoding.from_tiktoken_file(path, pat_str="cl100k", special_tokens={})
    assert str(raised.value).startswith(f"{path}:257: rank 2**70 or more is too large")


def test_tiktoken_file_with_a_gap_within_the_bound_loads(tmp_path: Path) -> None:
    path = tiktoken_file(tmp_path, {**BYTES, b"ab": 100_000})
    encoding = Encoding.from_tiktoken_file(path, pat_str="cl100k", special_tokens={"<|e|>": 3000})
    assert encoding.n_vocab == 100_001
    assert encoding.encode("abab") == [100_000, 100_000]


@pytest.mark.parametrize(
    ("token_id", "shown"),
    [
        (10**10, "10000000000"),
        (2**70, r"2\*\*70 or more"),
        (-1, "-1"),
        ("5", "'5'"),
        (True, "True"),
    ],
    ids=["1e10", "2**70", "negative", "str", "bool"],
)
def test_special_token_id_past_the_bound(token_id: Any, shown: str) -> None:
    """An ID of 1e10 used to size an 80 GB table."""
    message = (
        rf"^toy: special token '<\|x\|>' has ID {shown}; IDs must be integers in \[0, 1049604\)"
    )
    with pytest.raises(ValueError, match=message):
        Encoding("toy", pat_str="cl100k", mergeable_ranks=BYTES, special_tokens={"<|x|>": token_id})


def test_mergeable_rank_past_the_bound_or_shared() -> None:
    with pytest.raises(ValueError, match=r"^toy: mergeable_ranks token b'ab' has ID 10000000000;"):
        Encoding(
            "toy", pat_str="cl100k", mergeable_ranks={**BYTES, b"ab": 10**10}, special_tokens={}
        )
    with pytest.raises(
        ValueError, match=r"^toy: mergeable_ranks tokens b'a' and b'ab' share ID 97"
    ):
        Encoding("toy", pat_str="cl100k", mergeable_ranks={**BYTES, b"ab": 97}, special_tokens={})


def test_constructor_argument_types() -> None:
    with pytest.raises(TypeError, match=r"^mergeable_ranks keys must be bytes, not str"):
        Encoding("toy", pat_str="cl100k", mergeable_ranks={**BYTES, "ab": 256}, special_tokens={})
    with pytest.raises(TypeError, match=r"^special_tokens must be a dict, not list"):
        Encoding("toy", pat_str="cl100k", mergeable_ranks=BYTES, special_tokens=["<|x|>"])  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# tokenizer.json
# --------------------------------------------------------------------------------------------


def toy_spec(added: dict[str, int] | None = None) -> dict[str, Any]:
    """A byte-level ``tokenizer.json``: the 256 bytes, ``ab`` (256), and ``<x>`` (257)."""
    return hf_byte_level_json(
        TOY, [(b"a", b"b")], added_tokens={"<x>": 257} if added is None else added
    )


def write_json(tmp_path: Path, spec: Any) -> Path:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def added_id(token_id: Any) -> dict[str, Any]:
    spec = toy_spec()
    spec["added_tokens"][0]["id"] = token_id
    return spec


def vocab_with(**entries: Any) -> dict[str, Any]:
    spec = toy_spec()
    spec["model"]["vocab"].update(entries)
    return spec


def without_added_id() -> dict[str, Any]:
    spec = toy_spec()
    del spec["added_tokens"][0]["id"]
    return spec


def with_model(**fields: Any) -> dict[str, Any]:
    spec = toy_spec()
    spec["model"].update(fields)
    return spec


GIVES = "but tokenizers ignores it and gives"
MALFORMED = {
    # name: (spec, the message after "{path}: "); each was a traceback, a MemoryError or silence
    "vocab_id_1e10": (
        vocab_with(zz=10**10),
        "model.vocab token 'zz' has ID 10000000000; IDs must be integers in [0, 1049612)",
    ),
    "vocab_id_negative": (vocab_with(zz=-3), "model.vocab token 'zz' has ID -3; IDs must be"),
    "vocab_id_str": (vocab_with(zz="258"), "model.vocab token 'zz' has ID '258'; IDs must be"),
    "vocab_id_float": (vocab_with(zz=258.0), "model.vocab token 'zz' has ID 258.0; IDs must be"),
    "vocab_ids_shared": (vocab_with(zz=256), "model.vocab tokens 'ab' and 'zz' share ID 256"),
    "top_level_list": ([toy_spec()], "not a JSON tokenizer file (top level is not an object)"),
    "vocab_empty": (with_model(vocab={}, merges=[]), "model.vocab is {}; byte-level BPE needs"),
    "vocab_list": (with_model(vocab=[["a", 1]]), "model.vocab is [['a', 1]]; byte-level BPE"),
    "merges_str": (with_model(merges="a b"), "model.merges is 'a b', not a list"),
    "model_list": ({**toy_spec(), "model": [1]}, "model is [1], not an object"),
    "added_id_1e10": (added_id(10**10), f"added token '<x>' has ID 10000000000, {GIVES} 257"),
    "added_id_negative": (added_id(-1), f"added token '<x>' has ID -1, {GIVES} 257"),
    "added_id_str": (added_id("5"), "added_tokens[0] ('<x>') has 'id' '5'; expected an integer"),
    "added_id_missing": (without_added_id(), "added_tokens[0] ('<x>') has no 'id'; expected"),
    "added_id_of_a_byte": (added_id(97), f"added token '<x>' has ID 97, {GIVES} 257"),
    "added_id_in_a_gap": (added_id(300), f"added token '<x>' has ID 300, {GIVES} 257"),
    "added_id_of_vocab_text": (
        toy_spec({"ab": 257}),
        f"added token 'ab' has ID 257, {GIVES} 256 (its ID in model.vocab)",
    ),
    "added_ids_shared": (
        toy_spec({"<x>": 257, "<y>": 257}),
        f"added token '<y>' has ID 257, {GIVES} 258",
    ),
    "added_not_an_object": ({**toy_spec(), "added_tokens": [5]}, "added_tokens[0] is 5, not an"),
    "added_tokens_object": ({**toy_spec(), "added_tokens": {}}, "added_tokens is not a list"),
    "post_processor_key": (
        {**toy_spec(), "post_processor": {"type": "RobertaProcessing"}},
        "not laid out as a tokenizer.json (no key 'cls')",
    ),
}


@pytest.mark.parametrize(("spec", "message"), MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_tokenizer_json(tmp_path: Path, spec: Any, message: str) -> None:
    path = write_json(tmp_path, spec)
    with pytest.raises(ValueError) as raised:
        read_hf_json(path)
    assert str(raised.value).startswith(f"{path}: {message}"), str(raised.value)


def test_added_id_on_a_vocabulary_gap() -> None:
    """``tokenizers`` gives ``<x>`` the ID ``len(vocab)`` = 257, which the vocabulary gives to
    ``ab`` (its IDs have a gap at 256): two texts would share an ID."""
    spec = hf_byte_level_json({**BYTES, b"ab": 257}, [(b"a", b"b")], added_tokens={"<x>": 257})
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(json.dumps(spec))
    assert reference.token_to_id("<x>") == reference.token_to_id("ab") == 257
    with pytest.raises(
        ValueError, match=r"added token '<x>' has ID 257, the ID of model\.vocab token 'ab'"
    ):
        read_hf_json(reference)


def test_added_tokens_numbered_as_tokenizers_numbers_them() -> None:
    """Added tokens that repeat a vocabulary entry (same text, same ID), a repeated added token,
    an empty one (ignored), and new ones after the vocabulary: the IDs of ``tokenizers``."""
    from tokenizers import Tokenizer

    spec = toy_spec({"<x>": 257, "a": 97, "ab": 256, "": 258, "<y>": 258})
    spec["added_tokens"].append({**spec["added_tokens"][0]})  # <x> again, same ID
    reference = Tokenizer.from_str(json.dumps(spec))
    ours = Encoding.from_hf_json(reference)
    for text in ["<x>ab a<y>", "<y><x>", "b a ab", ""]:
        expected = reference.encode(text, add_special_tokens=False).ids
        assert ours.encode(text, allowed_special="all") == expected, text


# --------------------------------------------------------------------------------------------
# post-processor IDs, and JSON that Python's reader refuses
# --------------------------------------------------------------------------------------------


def with_post_processor(kind: str, token_id: Any) -> dict[str, Any]:
    """``toy_spec()`` whose post-processor puts ``token_id`` before the text (``cls``)."""
    spec = toy_spec()
    if kind == "TemplateProcessing":
        spec["post_processor"] = {
            "type": kind,
            "single": [
                {"SpecialToken": {"id": "<x>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<x>": {"id": "<x>", "ids": [token_id], "tokens": ["<x>"]}},
        }
    else:
        spec["post_processor"] = {"type": kind, "cls": ["<x>", token_id], "sep": ["ab", 256]}
    return spec


POST_KINDS = ["BertProcessing", "RobertaProcessing", "TemplateProcessing"]
NOT_AN_ID = "expected an integer ID of the vocabulary (tokenizers refuses this file too)"
# ID -> how it is shown; each used to be accepted (an int() of it emitted) or to fail at encode.
REFUSED_BY_BOTH = {
    -7: "-7",
    1.7: "1.7",
    2.0: "2.0",
    True: "True",
    "257": "'257'",
    2**32: "4294967296",
    10**30: "2**99 or more",
}
# u32 IDs beyond the vocabulary: tokenizers loads the file and emits them as they are.
REFUSED_HERE = [258, 99_999_999, 2**32 - 1]


def post_field(kind: str) -> str:
    return "special token '<x>'" if kind == "TemplateProcessing" else f"{kind} cls"


@pytest.mark.parametrize("kind", POST_KINDS)
@pytest.mark.parametrize("token_id", list(REFUSED_BY_BOTH), ids=list(REFUSED_BY_BOTH.values()))
def test_post_processor_ids_tokenizers_refuses(tmp_path: Path, kind: str, token_id: Any) -> None:
    from tokenizers import Tokenizer

    spec = with_post_processor(kind, token_id)
    with pytest.raises(Exception, match="did not match any variant"):
        Tokenizer.from_str(json.dumps(spec))
    path = write_json(tmp_path, spec)
    with pytest.raises(ValueError) as raised:
        Encoding.from_hf_json(path)
    shown = REFUSED_BY_BOTH[token_id]
    message = f"{path}: post_processor {post_field(kind)} has ID {shown}; {NOT_AN_ID}"
    assert str(raised.value) == message


@pytest.mark.parametrize("kind", POST_KINDS)
@pytest.mark.parametrize("token_id", REFUSED_HERE)
def test_post_processor_ids_beyond_the_vocabulary(tmp_path: Path, kind: str, token_id: int) -> None:
    """``tokenizers`` emits such an ID, which no embedding table has; refused with the fix."""
    from tokenizers import Tokenizer

    spec = with_post_processor(kind, token_id)
    assert Tokenizer.from_str(json.dumps(spec)).encode("ab").ids[0] == token_id
    path = write_json(tmp_path, spec)
    with pytest.raises(ValueError) as raised:
        Encoding.from_hf_json(path)
    assert str(raised.value).startswith(
        f"{path}: post_processor {post_field(kind)} has ID {token_id}, which is no token of "
        "model.vocab or added_tokens"
    )


@pytest.mark.parametrize("kind", POST_KINDS)
@pytest.mark.parametrize("token_id", [257, 97, 256])  # <x>, "a" and "ab"
def test_post_processor_ids_of_the_vocabulary_load(kind: str, token_id: int) -> None:
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(json.dumps(with_post_processor(kind, token_id)))
    ours = Encoding.from_hf_json(reference)
    for text in ["ab", "", "b a<x>"]:
        expected = reference.encode(text).ids
        flat = ours.encode_batch_to_flat([text], allowed_special="all", add_special_tokens=True)
        assert flat.tolist() == [expected]


def test_a_5000_digit_number_names_the_file(tmp_path: Path) -> None:
    """Python's JSON reader refuses integers of more than 4,300 digits with a bare ValueError;
    ``tokenizers`` refuses the file too ("number out of range")."""
    path = write_json(tmp_path, with_post_processor("BertProcessing", 12345))
    path.write_text(path.read_text().replace("12345", "9" * 5000), encoding="utf-8")
    with pytest.raises(ValueError) as raised:
        Encoding.from_hf_json(path)
    message = f"{path}: not a JSON tokenizer file (a number of more than 4300 digits)"
    assert str(raised.value) == message


@pytest.mark.parametrize("opening", ["[", '{"a":'], ids=["arrays", "objects"])
def test_deeply_nested_json_names_the_file(tmp_path: Path, opening: str) -> None:
    """``[`` x 100,000 raised a RecursionError, without the file's name."""
    path = tmp_path / "tokenizer.json"
    path.write_text(opening * 100_000, encoding="utf-8")
    with pytest.raises(ValueError, match=r"nested deeper than \d+ levels") as raised:
        Encoding.from_hf_json(path)
    assert str(raised.value).startswith(f"{path}: not a JSON tokenizer file (arrays or objects")
    assert raised.value.__suppress_context__  # no RecursionError traceback chained to it


# --------------------------------------------------------------------------------------------
# the CLI
# --------------------------------------------------------------------------------------------


def test_cli_prints_one_line_for_a_malformed_tokenizer_json(tmp_path: Path) -> None:
    path = write_json(tmp_path, vocab_with(zz=10**10))
    (tmp_path / "in.txt").write_text("hello\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "tensortext.cli", "tokenize", "-e", path.name, "-i", "in.txt"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "tensortext: error: tokenizer.json: model.vocab token 'zz' has ID 10000000000"
    ), done.stderr
