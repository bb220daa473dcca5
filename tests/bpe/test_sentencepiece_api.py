"""SentencePiece and Tekken encodings around the encoders: finding the reader from a file
(``Encoding.from_file``, ``load_encoding``, the CLI), pickling, threads, the tiktoken methods
that only byte-level BPE has, and the C encoder's shortcuts (pieces cut where no token crosses,
a token taken whole once its own merges reach it) against the tensor engine's plain merges."""

from __future__ import annotations

import io
import json
import pickle
import shutil
from pathlib import Path

import pytest
import sentencepiece as spm
from oracles.sentencepiece import hf_json_of, mistral_file

from tensortext.bpe import Encoding, load_encoding
from tensortext.bpe.native import native_available
from tensortext.cli import main

MODEL = "tokenizer.model.v1"
TEKKEN = "tekken_240911.json"
TEXTS = [
    "hello world",
    "  two  spaces, and a comma; 12345 digits!",
    "Привет, мир! 你好\uff0c世界 🤗 naïve café",
    "code:\n\tif (x == 1) { return y; }\n",
    "",
]


@pytest.fixture(scope="module")
def sentencepiece() -> Encoding:
    return Encoding.from_sentencepiece(mistral_file(MODEL))


@pytest.fixture(scope="module")
def reference() -> spm.SentencePieceProcessor:
    return spm.SentencePieceProcessor(model_file=str(mistral_file(MODEL)))


def test_from_file_tells_the_kind_by_content(tmp_path: Path, sentencepiece: Encoding) -> None:
    renamed = tmp_path / "weights.bin"  # the content decides, not the name
    shutil.copy(mistral_file(MODEL), renamed)
    assert Encoding.from_file(renamed).encode("hello") == sentencepiece.encode("hello")
    tekken = Encoding.from_file(mistral_file(TEKKEN))
    assert tekken.encode("hello") == Encoding.from_tekken(mistral_file(TEKKEN)).encode("hello")
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "tokenizer.json").write_text(
        json.dumps(hf_json_of(mistral_file(MODEL), "first"))
    )
    assert Encoding.from_file(tmp_path / "hf").encode("hello") == sentencepiece.encode("hello")
    (tmp_path / "model").mkdir()
    shutil.copy(mistral_file(MODEL), tmp_path / "model" / "tokenizer.model")
    assert load_encoding(str(tmp_path / "model")).encode("a b") == sentencepiece.encode("a b")
    assert Encoding.from_file(renamed, name="mine").name == "mine"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"aGVsbG8= 0\n", "from_tiktoken_file"),  # a tiktoken file needs its pattern
        (b"\x0a\xff\xff", "not a SentencePiece model"),  # truncated protobuf
        (b"", "not a SentencePiece .model"),
    ],
)
def test_from_file_refuses_other_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "tokenizer.model"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        Encoding.from_file(path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds none of"):
        Encoding.from_file(tmp_path / "empty")
    with pytest.raises(ValueError, match="no such file"):
        Encoding.from_file(tmp_path / "missing.model")


def test_cli_tokenizes_with_a_model_file(
    tmp_path: Path, reference: spm.SentencePieceProcessor
) -> None:
    source = tmp_path / "in.txt"
    source.write_text("hello world\n\u041f\u0440\u0438\u0432\u0435\u0442 🤗\n", encoding="utf-8")
    out = io.StringIO()
    argv = ["tokenize", "-e", str(mistral_file(MODEL)), "-i", str(source), "-q"]
    assert main(argv, stdout=out) == 0
    rows = [list(map(int, line.split())) for line in out.getvalue().splitlines()]
    assert rows == [
        reference.encode("hello world"),
        reference.encode("\u041f\u0440\u0438\u0432\u0435\u0442 🤗"),
    ]


def test_pickle_keeps_the_encoding(sentencepiece: Encoding) -> None:
    tekken = Encoding.from_tekken(mistral_file(TEKKEN))
    for encoding in (sentencepiece, tekken):
        copy = pickle.loads(pickle.dumps(encoding))
        assert copy.encode_batch(TEXTS) == encoding.encode_batch(TEXTS)
        assert copy.decode(encoding.encode(TEXTS[2])) == TEXTS[2]


def test_threads_share_what_the_c_encoder_finds_out(
    sentencepiece: Encoding, reference: spm.SentencePieceProcessor
) -> None:
    """Threads encode at once with a fresh encoder, each finding out whether tokens reach
    themselves (the C encoder's ``reaches``): every row stays sentencepiece's."""
    fresh = Encoding.from_sentencepiece(mistral_file(MODEL))
    texts = [f"{text} {i} word{i % 97} longerword{i % 13}" for i in range(400) for text in TEXTS]
    assert fresh.encode_ordinary_batch(texts, num_threads=4) == reference.encode(texts)


def test_c_encoder_equals_tensor_engine(
    sentencepiece: Encoding, reference: spm.SentencePieceProcessor
) -> None:
    """The C encoder's shortcuts against the tensor engine's plain merges of whole pieces."""
    texts = [*TEXTS, "Mr. Smith's 3.14-inch e-mail (re: x)...", "a" * 300, "日本語" * 120]
    ids, lengths = sentencepiece.encode_batch_to_tensor(texts, merge_backend="torch")
    rows = [ids[i, : lengths[i]].tolist() for i in range(len(texts))]
    assert rows == sentencepiece.encode_ordinary_batch(texts) == reference.encode(texts)
    assert native_available()  # (the dev install builds it: the rows above came from it)


def test_bos_and_eos(sentencepiece: Encoding, reference: spm.SentencePieceProcessor) -> None:
    assert sentencepiece.eot_token == reference.eos_id() == 2
    for text in TEXTS:
        expected = reference.encode(text, add_bos=True)
        assert sentencepiece.encode(text, add_special_tokens=True) == expected
        assert sentencepiece.encode_batch([text], add_special_tokens=True) == [expected]
    assert Encoding.from_tekken(mistral_file(TEKKEN)).eot_token == 2


def test_byte_level_methods_are_refused(sentencepiece: Encoding) -> None:
    with pytest.raises(ValueError, match="SentencePiece vocabulary"):
        sentencepiece.encode_with_unstable("hello wor")
    with pytest.raises(ValueError, match="SentencePiece vocabulary"):
        sentencepiece._encode_bytes(b"hello \xff")
    assert sentencepiece._encode_single_piece(" hello") == [6312, 28709]
    assert sentencepiece._encode_single_piece(" 日本") == sentencepiece.encode_ordinary("日本")


def test_ray_tokenize_reads_a_model_file(reference: spm.SentencePieceProcessor) -> None:
    """The Ray ``Tokenize`` callable (called here as Ray's ``map_batches`` would), with the
    EOS appended as the end-of-text token."""
    from tensortext.integrations.ray import Tokenize

    tokenize = Tokenize(str(mistral_file(MODEL)), append_eot=True)
    out = tokenize({"text": TEXTS})
    assert [row.tolist() for row in out["input_ids"]] == [
        [*reference.encode(text), reference.eos_id()] for text in TEXTS
    ]


def test_tensor_methods_add_the_bos(
    sentencepiece: Encoding, reference: spm.SentencePieceProcessor
) -> None:
    ids, lengths = sentencepiece.encode_batch_to_tensor(TEXTS, add_special_tokens=True)
    flat = sentencepiece.encode_batch_to_flat(TEXTS, add_special_tokens=True)
    expected = [reference.encode(text, add_bos=True) for text in TEXTS]
    assert [ids[i, : lengths[i]].tolist() for i in range(len(TEXTS))] == expected
    assert flat.ids.tolist() == [token for row in expected for token in row]


def test_without_the_c_encoder_the_tensor_engine_encodes(
    monkeypatch: pytest.MonkeyPatch, reference: spm.SentencePieceProcessor
) -> None:
    """``TENSORTEXT_NATIVE=0``: no Python encoder merges characters, so the list methods run
    the tensor engine, with the same IDs."""
    monkeypatch.setenv("TENSORTEXT_NATIVE", "0")
    encoding = Encoding.from_sentencepiece(mistral_file(MODEL))
    assert encoding.encode_batch(TEXTS) == [reference.encode(text) for text in TEXTS]
    assert type(encoding._backends.get()).__name__ == "TensorBackend"


def test_the_reader_takes_any_piece_layout() -> None:
    """Pieces outside the fast path's layout (no score, a text of 128 bytes or more, a type
    written as a long varint, fields out of order) read as protobuf reads them."""
    from sentencepiece import sentencepiece_model_pb2

    from tensortext.bpe.sentencepiece import parse_model

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(mistral_file(MODEL).read_bytes())
    proto.pieces[400].ClearField("score")
    proto.pieces[401].piece = "\u2581" + "x" * 200
    data = bytearray(proto.SerializeToString())
    # A piece with its fields reversed and its type as a 10-byte varint: type, score, text.
    text = "\u2581reversed".encode()
    body = b"\x18" + b"\x81" + b"\x80" * 8 + b"\x00" + b"\x15" + b"\x00\x00\x80\xbf"
    body += b"\x0a" + bytes([len(text)]) + text
    data += b"\x0a" + bytes([len(body)]) + body
    model = parse_model(bytes(data), "edited")
    expected = [(p.piece, p.score, p.type) for p in proto.pieces]
    assert model.pieces[:-1] == expected
    assert model.pieces[-1] == ("\u2581reversed", -1.0, 1)
