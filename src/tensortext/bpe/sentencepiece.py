"""SentencePiece BPE models (``.model`` files: Llama-2, Mistral 7B, Gemma) as a :class:`Vocab`.

A ``.model`` file is a protobuf ``ModelProto``; the few fields the encoder needs are read here
by hand (about 60 lines, no dependency on ``protobuf`` or ``sentencepiece``).

SentencePiece BPE merges *characters*, not bytes: of the adjacent pairs whose concatenation is a
piece, the one with the highest score merges first, the leftmost on ties. That is tiktoken's rule
over characters with a piece's rank its score's place among the distinct scores
(:attr:`Vocab.piece_ranks`; pieces of one score share a rank). A character that is no piece
becomes its bytes' ``<0xXX>`` pieces (``byte_fallback``) or the unknown piece.

Text and pieces keep U+0020 where SentencePiece writes U+2581 (``▁``): the input's ``▁`` is read
as a space, as SentencePiece's escaping does, so the two encode alike, and decoding needs no
replacement. Pieces then never hold a space followed by another character (SentencePiece's
trainer splits at whitespace), which lets the encoders cut the text before each run of spaces.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tensortext.bpe.options import TextOptions
from tensortext.bpe.patterns import PatternKind
from tensortext.bpe.vocab import Vocab

__all__ = [
    "SentencePieceModel",
    "file_kind",
    "parse_model",
    "read_sentencepiece",
    "sentencepiece_vocab",
    "split_kind",
]

METASPACE = "\u2581"
# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}
BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")


@dataclass
class SentencePieceModel:
    """The fields of a ``ModelProto`` that encoding and decoding read (defaults as in
    ``sentencepiece_model.proto``)."""

    pieces: list[tuple[str, float, int]] = field(default_factory=list)  # (piece, score, type)
    model_type: int = 1
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    unk_surface: str = " \u2047 "
    bos_id: int = 1
    eos_id: int = 2
    normalizer_name: str = ""
    precompiled_charsmap: bytes = b""
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True
    denormalizer_charsmap: bytes = b""


class _Truncated(Exception):
    pass


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Truncated
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` of each field of one message: an int for varint and fixed
    fields (fixed32 as its raw bits), bytes for length-delimited ones."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire == 2:
            size, at = _varint(data, at)
            if at + size > len(data):
                raise _Truncated
            yield number, data[at : at + size]
            at += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if at + width > len(data):
                raise _Truncated
            yield number, int.from_bytes(data[at : at + width], "little")
            at += width
        else:
            raise _Truncated


def _top_fields(data: bytes, model: SentencePieceModel) -> Iterator[tuple[int, int | bytes]]:
    """:func:`_fields` of a ``ModelProto``, whose common pieces go straight to ``model``."""
    at, size, common = 0, len(data), _common_piece
    while at < size:
        if data[at] == 0x0A and at + 1 < size and data[at + 1] < 0x80:
            end = at + 2 + data[at + 1]
            piece = common(data[at + 2 : end]) if end <= size else None
            if piece is not None:
                model.pieces.append(piece)
                at = end
                continue
        key_end = _varint(data, at)[1]  # one field the general way
        size_end = _field_end(data, key_end, data[at] & 7)
        yield from _fields(data[at:size_end])
        at = size_end


def _field_end(data: bytes, at: int, wire: int) -> int:
    """Where a field whose value starts at ``at`` ends."""
    if wire == 0:
        return _varint(data, at)[1]
    if wire == 2:
        length, at = _varint(data, at)
        return at + length
    if wire in (1, 5):
        return at + (8 if wire == 1 else 4)
    raise _Truncated


def _common_piece(data: bytes) -> tuple[str, float, int] | None:
    """A piece in the form every writer uses (text under 128 bytes, score, type under 128
    if not NORMAL), read without the general loop (a model has 32,000 to 256,000); else
    ``None``."""
    size = len(data)
    if size < 7 or data[0] != 0x0A or data[1] >= 0x80:
        return None
    end = 2 + data[1]
    if end + 5 > size or data[end] != 0x15:
        return None
    score = _FLOAT.unpack_from(data, end + 1)[0]
    if end + 5 == size:
        return data[2:end].decode("utf-8"), score, NORMAL
    if end + 7 == size and data[end + 5] == 0x18 and data[end + 6] < 0x80:
        return data[2:end].decode("utf-8"), score, data[end + 6]
    return None


_FLOAT = struct.Struct("<f")


def _int32(value: int | bytes) -> int:
    assert isinstance(value, int)
    return value - (1 << 64) if value >= 1 << 63 else value


def _blob(value: int | bytes) -> bytes:
    assert isinstance(value, bytes)
    return value


def _text(value: int | bytes) -> str:
    assert isinstance(value, bytes)
    return value.decode("utf-8")


def parse_model(data: bytes, label: str) -> SentencePieceModel:
    """The fields of a serialized ``ModelProto``.

    Raises:
        ValueError: naming ``label``, for bytes that are not a SentencePiece model.
    """
    model = SentencePieceModel()
    try:
        for number, value in _top_fields(data, model):
            if number == 1 and isinstance(value, bytes):  # (a piece in another layout)
                piece, score, kind = None, 0.0, NORMAL
                for sub, item in _fields(value):
                    if sub == 1:
                        piece = _text(item)
                    elif sub == 2 and isinstance(item, int):
                        score = _FLOAT.unpack(item.to_bytes(4, "little"))[0]
                    elif sub == 3:
                        kind = _int32(item)
                if piece is None:
                    raise ValueError(f"{label}: piece {len(model.pieces)} has no text")
                model.pieces.append((piece, score, kind))
            elif number == 2 and isinstance(value, bytes):
                _read_spec(model, value, _TRAINER_FIELDS)
            elif number == 3 and isinstance(value, bytes):
                _read_spec(model, value, _NORMALIZER_FIELDS)
            elif number == 5 and isinstance(value, bytes):
                for sub, item in _fields(value):
                    if sub == 2 and isinstance(item, bytes):
                        model.denormalizer_charsmap = item
    except (_Truncated, UnicodeDecodeError, AssertionError):
        raise ValueError(
            f"{label}: not a SentencePiece model (malformed protobuf); expected a .model file"
        ) from None
    if not model.pieces:
        raise ValueError(f"{label}: not a SentencePiece model (no pieces)")
    return model


# The TrainerSpec (ModelProto field 2) and NormalizerSpec (field 3) fields read:
# field number -> (SentencePieceModel attribute, conversion of the value).
_TRAINER_FIELDS = {
    3: ("model_type", _int32),
    24: ("treat_whitespace_as_suffix", bool),
    35: ("byte_fallback", bool),
    41: ("bos_id", _int32),
    42: ("eos_id", _int32),
    44: ("unk_surface", _text),
}
_NORMALIZER_FIELDS = {
    1: ("normalizer_name", _text),
    2: ("precompiled_charsmap", _blob),
    3: ("add_dummy_prefix", bool),
    4: ("remove_extra_whitespaces", bool),
    5: ("escape_whitespaces", bool),
}


def _read_spec(model: SentencePieceModel, data: bytes, fields: dict[int, tuple[str, Any]]) -> None:
    """The ``fields`` of one spec message into ``model``."""
    for number, value in _fields(data):
        if number in fields:
            attribute, convert = fields[number]
            setattr(model, attribute, convert(value))


FileKind = Literal["sentencepiece", "tekken", "hf_json"]
_DIRECTORY_FILES = ("tokenizer.json", "tokenizer.model", "tekken.json")


def file_kind(path: Path) -> tuple[FileKind, Path]:
    """Which reader a tokenizer file needs, from its first bytes, and the file (the one a
    directory holds).

    Raises:
        ValueError: naming the file, for a missing file or one of no kind read here.
    """
    if path.is_dir():
        inside = next((path / file for file in _DIRECTORY_FILES if (path / file).is_file()), None)
        if inside is None:
            raise ValueError(f"{path}: holds none of {', '.join(_DIRECTORY_FILES)}")
        path = inside
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    with path.open("rb") as file:
        head = file.read(4096)
    if re.match(rb'\s*\{\s*"config"\s*:\s*\{', head):
        return "tekken", path
    if path.suffix == ".json" or head.lstrip()[:1] in (b"{", b"["):
        return "hf_json", path  # (its reader names what is wrong with a bad one)
    if head[:1] == b"\x0a":  # a protobuf's first field: ModelProto.pieces
        return "sentencepiece", path
    raise ValueError(
        f"{path}: not a SentencePiece .model, a Tekken file or a tokenizer.json; for a "
        "tiktoken-format file use Encoding.from_tiktoken_file(path, pat_str=...)"
    )


def read_sentencepiece(source: str | Path | bytes, *, name: str | None = None) -> Vocab:
    """The vocabulary of a SentencePiece BPE ``.model`` file (a path or its bytes).

    Raises:
        ValueError: naming the file and the setting, for what is not reproduced exactly: a model
            type other than BPE, a normalizer other than ``identity`` (``nmt_nfkc`` and other
            precompiled character maps), ``escape_whitespaces=false``, UNUSED pieces, a piece
            holding U+0020, byte fallback without all 256 byte pieces.
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        data, label = bytes(source), name or "SentencePiece model"
    else:
        path = Path(source)
        data, label = path.read_bytes(), str(path)
        name = name or path.name.split(".")[0]
    return sentencepiece_vocab(parse_model(data, label), label, name or "sentencepiece")


def _refuse(model: SentencePieceModel, label: str) -> None:
    """Raise for a setting the encoders do not reproduce exactly."""
    if model.model_type != 2:
        kind = MODEL_TYPES.get(model.model_type, str(model.model_type))
        raise ValueError(f"{label}: model_type={kind}; only SentencePiece BPE models are supported")
    if model.precompiled_charsmap:
        raise ValueError(
            f"{label}: normalizer {model.normalizer_name or 'custom'!r} (a precompiled character "
            "map) is not reproduced; only the 'identity' normalizer is supported"
        )
    if model.denormalizer_charsmap:
        raise ValueError(f"{label}: a denormalizer (precompiled character map) is not supported")
    if not model.escape_whitespaces:
        raise ValueError(f"{label}: escape_whitespaces=false is not supported")
    for piece, _, piece_type in model.pieces:
        if piece_type == UNUSED:
            raise ValueError(f"{label}: UNUSED piece {piece!r} is not supported")
        if piece_type in (NORMAL, USER_DEFINED) and (" " in piece or not piece):
            raise ValueError(f"{label}: piece {piece!r} is empty or holds U+0020")


@dataclass
class _Pieces:
    """A model's pieces sorted by type, as the encoders use them (U+2581 read as a space)."""

    tokens: list[bytes | None] = field(default_factory=list)  # what each ID decodes to
    normal: dict[str, int] = field(default_factory=dict)
    user: dict[str, int] = field(default_factory=dict)
    control: dict[str, int] = field(default_factory=dict)
    fallback: list[int] = field(default_factory=lambda: [-1] * 256)  # <0xXX> of each byte
    unk_id: int = -1


def _sort_pieces(model: SentencePieceModel, label: str) -> _Pieces:
    found = _Pieces()
    for token_id, (piece, _, kind) in enumerate(model.pieces):
        text = piece.replace(METASPACE, " ")
        data = text.encode()
        if kind == NORMAL:
            if text in found.normal:
                raise ValueError(f"{label}: piece {piece!r} repeats")
            found.normal[text] = token_id
        elif kind == USER_DEFINED:
            found.user[text] = token_id
        elif kind == BYTE:
            match = BYTE_PIECE.fullmatch(piece)
            if match is None:
                raise ValueError(f"{label}: byte piece {piece!r} is not <0xXX>")
            data = bytes([int(match.group(1), 16)])
            found.fallback[data[0]] = token_id
        elif kind == CONTROL:
            found.control.setdefault(piece, token_id)
            data = b""  # (sentencepiece's decode drops them)
        elif kind == UNKNOWN and found.unk_id < 0:
            found.unk_id, data = token_id, model.unk_surface.encode()
        else:
            raise ValueError(f"{label}: piece {piece!r} has type {kind}: a second unknown piece?")
        found.tokens.append(data)
    if found.unk_id < 0:
        raise ValueError(f"{label}: no unknown piece")
    if model.byte_fallback and -1 in found.fallback:
        missing = found.fallback.index(-1)
        raise ValueError(f"{label}: byte_fallback=true, but there is no piece <0x{missing:02X}>")
    strangers = set("".join(found.normal)) - found.normal.keys()
    if strangers:  # SentencePiece would merge them; they would need IDs of their own
        char = min(strangers)
        piece = next(text for text in found.normal if char in text)
        raise ValueError(
            f"{label}: piece {piece!r} holds {char!r}, which is no piece of its own; not supported"
        )
    return found


def sentencepiece_vocab(model: SentencePieceModel, label: str, name: str) -> Vocab:
    """:func:`read_sentencepiece` once the file is parsed."""
    _refuse(model, label)
    found = _sort_pieces(model, label)
    scores = {score for _, score, kind in model.pieces if kind == NORMAL}
    place = {score: rank for rank, score in enumerate(sorted(scores, reverse=True))}
    ranks = [place.get(score, -1) if kind == NORMAL else -1 for _, score, kind in model.pieces]
    bos, eos = (
        token_id if 0 <= token_id < len(model.pieces) and model.pieces[token_id][2] == CONTROL
        else None
        for token_id in (model.bos_id, model.eos_id)
    )  # fmt: skip
    options = TextOptions(
        prefix_ids=() if bos is None else (bos,),
        sentencepiece=True,
        dummy_prefix=model.add_dummy_prefix,
        whitespace_suffix=model.treat_whitespace_as_suffix,
        remove_extra_whitespaces=model.remove_extra_whitespaces,
        user_symbols=tuple(found.user.items()),
        # (sentencepiece drops leading space from the first pieces, never trailing space)
        strip_decoded=(
            "sentencepiece_all"
            if model.remove_extra_whitespaces
            else "sentencepiece"
            if model.add_dummy_prefix
            else ""
        ),
    )
    unknown = (*found.fallback, -1) if model.byte_fallback else (*[-1] * 256, found.unk_id)
    return Vocab(
        name=name,
        kind=split_kind(found.normal, model.treat_whitespace_as_suffix),
        tokens=found.tokens,
        mergeable={text.encode(): token_id for text, token_id in found.normal.items()},
        special_tokens=found.control,
        piece_ranks=ranks,
        whole_piece_lookup=False,
        options=options,
        unknown_ids=unknown,
        fuse_unk=True,
        eot_id=eos,
    )


def split_kind(pieces: dict[str, int], suffix: bool) -> PatternKind:
    """Where the text may be cut with no piece across the cut: before each run of spaces if no
    piece holds a space after another character (``sp_prefix``), after each run if no piece
    holds one before another character (``sp_suffix``), else nowhere (``whole``)."""
    prefix_ok = not any(" " in piece.lstrip(" ") for piece in pieces)
    suffix_ok = not any(" " in piece.rstrip(" ") for piece in pieces)
    if suffix and suffix_ok:
        return "sp_suffix"
    if prefix_ok:
        return "sp_prefix"
    return "sp_suffix" if suffix_ok else "whole"
