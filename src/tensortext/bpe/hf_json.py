"""Hugging Face ``tokenizer.json`` (byte-level BPE) -> :class:`~tensortext.bpe.vocab.Vocab`.

Reads a file, a directory holding one, a ``tokenizers.Tokenizer`` or a ``transformers``
``PreTrainedTokenizerFast``; fills ``Vocab.options`` from the normalizer, the ByteLevel
pre-tokenizer's ``add_prefix_space`` and the post-processor. Anything this package cannot
reproduce exactly is a ``ValueError`` naming the source and the setting.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

from tensortext.bpe.hf_metaspace import is_metaspace, metaspace_vocab
from tensortext.bpe.hf_parts import merge_pairs, model_vocab, post_processor_ids, read_added_tokens
from tensortext.bpe.options import TextOptions
from tensortext.bpe.patterns import GPT2_PATTERN, PatternKind, split_sequence_kind
from tensortext.bpe.vocab import (
    Vocab,
    _require_every_byte,
    short_repr,
)

__all__ = ["bytes_to_unicode", "read_hf_json"]

_NORMALIZERS = ("NFC", "NFKC", "NFD", "NFKD")


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte-to-character map that byte-level BPE ``tokenizer.json`` files are written in."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def _load(source: str | Path | Any) -> tuple[dict[str, Any], str, str]:
    """``(spec, label for errors, name)`` of a path, directory, Tokenizer or fast tokenizer."""
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            path = path / "tokenizer.json"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ValueError(f"{path}: no such tokenizer file") from None
        except UnicodeDecodeError as error:
            raise ValueError(f"{path}: not a JSON tokenizer file ({error})") from None
        return _parse(text, str(path)), str(path), path.stem
    backend = getattr(source, "backend_tokenizer", None)  # transformers' PreTrainedTokenizerFast
    if backend is not None and callable(getattr(backend, "to_str", None)):
        origin = str(getattr(source, "name_or_path", "") or type(source).__name__)
        label = f"{type(source).__name__}({origin!r})"
        return _parse(backend.to_str(), label), label, Path(origin).name or "hf_tokenizer"
    if callable(getattr(source, "to_str", None)):  # tokenizers.Tokenizer
        label = f"{type(source).__name__} object"
        return _parse(source.to_str(), label), label, "hf_tokenizer"
    raise TypeError(
        f"source must be a tokenizer.json path, a directory holding one, a tokenizers.Tokenizer "
        f"or a transformers PreTrainedTokenizerFast, not {type(source).__name__}"
    )


def _parse(text: str, label: str) -> dict[str, Any]:
    """The JSON object of a ``tokenizer.json``; what Python's reader refuses names ``label``."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{label}: not a JSON tokenizer file ({error})") from None
    except RecursionError:  # "[[[[..." beyond the interpreter's recursion limit
        raise ValueError(
            f"{label}: not a JSON tokenizer file (arrays or objects nested deeper than "
            f"{sys.getrecursionlimit()} levels; a tokenizer.json nests a few)"
        ) from None
    except ValueError as error:  # an integer of more digits than int() converts
        limit = sys.get_int_max_str_digits()
        problem = f"a number of more than {limit} digits" if "digits" in str(error) else error
        raise ValueError(f"{label}: not a JSON tokenizer file ({problem!s:.100})") from None
    if not isinstance(spec, dict):
        raise ValueError(f"{label}: not a JSON tokenizer file (top level is not an object)")
    return spec


def read_hf_json(source: str | Path | Any) -> Vocab:
    """A Hugging Face tokenizer whose model is byte-level BPE.

    Args:
        source: a ``tokenizer.json`` path, a directory holding one, a ``tokenizers.Tokenizer``
            or a ``transformers`` ``PreTrainedTokenizerFast`` (duck-typed, not imported).

    Merge ranks are the order of ``model.merges``; added tokens become special tokens. Every ID
    is checked before anything is sized by it (:func:`~tensortext.bpe.vocab.id_bound`).

    Raises:
        TypeError: for any other kind of ``source``.
        ValueError: naming the source (and the setting) for anything not reproduced exactly,
            and for a file whose layout is not ``tokenizer.json``'s.
    """
    spec, label, name = _load(source)
    try:
        return _vocab_of(spec, label, name)
    except RecursionError:  # Sequences in Sequences, within what the JSON reader nests
        raise ValueError(
            f"{label}: pre_tokenizer, normalizer or post_processor Sequences nested deeper than "
            "this reader follows; a tokenizer.json nests a few"
        ) from None
    except (AttributeError, KeyError, TypeError, IndexError) as error:
        # The checks cover the fields that files get wrong; any other field of the wrong JSON
        # type (a list for an object, a missing key) ends here, still naming the file.
        problem = f"no key {error}" if isinstance(error, KeyError) else str(error)
        raise ValueError(f"{label}: not laid out as a tokenizer.json ({problem})") from error


def _vocab_of(spec: dict[str, Any], label: str, name: str) -> Vocab:
    """:func:`read_hf_json` once ``spec`` is parsed: checks first, then the tables."""
    if is_metaspace(spec):
        return metaspace_vocab(spec, label, name)
    model = _supported_model(spec, label)
    kind, add_prefix_space = _pre_tokenizer_of(spec.get("pre_tokenizer"), label)
    normalizer = _normalizer_of(spec, label)
    vocab = model_vocab(model, spec, label)
    added_tokens = read_added_tokens(spec, vocab, label, normalized_ok=normalizer is None)
    known_ids = {*vocab.values(), *added_tokens.values()}
    affixes = post_processor_ids(spec.get("post_processor"), label, known_ids)
    options = TextOptions(
        normalizer=normalizer,
        add_prefix_space=add_prefix_space,
        prefix_ids=affixes["prefix_ids"],
        suffix_ids=affixes["suffix_ids"],
    )
    char_to_byte = {char: byte for byte, char in bytes_to_unicode().items()}

    def to_bytes(text: str) -> bytes:
        try:
            return bytes(char_to_byte[char] for char in text)
        except KeyError as error:
            raise ValueError(
                f"{label}: token {text!r} is not byte-level BPE (char {error})"
            ) from None

    size = max([*vocab.values(), *added_tokens.values()]) + 1  # bounded by model_vocab
    tokens: list[bytes | None] = [None] * size
    mergeable: dict[bytes, int] = {}
    for text, token_id in vocab.items():
        if text in added_tokens and not set(text) <= char_to_byte.keys():
            continue  # an added token also listed in the vocabulary (DeepSeek's BOS/EOS)
        token = to_bytes(text)
        tokens[token_id] = token
        mergeable[token] = token_id
    pairs = merge_pairs(model.get("merges") or [], vocab, label)
    for content, token_id in added_tokens.items():
        if tokens[token_id] is None:
            tokens[token_id] = content.encode("utf-8")
    _require_every_byte(mergeable, f"{label}: the vocabulary")
    return Vocab(
        name=name,
        kind=kind,
        tokens=tokens,
        mergeable=mergeable,
        special_tokens=added_tokens,
        merges=pairs,
        whole_piece_lookup=bool(model.get("ignore_merges", False)),
        options=options,
    )


def _normalizer_of(
    spec: dict[str, Any], label: str
) -> Literal["NFC", "NFKC", "NFD", "NFKD"] | None:
    """A Unicode normal form, or ``None``; a ``Sequence`` of at most one of them is accepted."""
    normalizer = spec.get("normalizer")
    if normalizer is None:
        return None
    kind = normalizer.get("type")
    if kind == "Sequence":
        steps = normalizer.get("normalizers") or []
        if not steps:
            return None
        if len(steps) == 1 and steps[0].get("type") in _NORMALIZERS:
            return steps[0]["type"]  # type: ignore[no-any-return]
    elif kind in _NORMALIZERS:
        return kind  # type: ignore[no-any-return]
    raise ValueError(
        f"{label}: normalizer {json.dumps(normalizer)[:120]} is not supported; tensortext "
        f"reads null, one of {_NORMALIZERS}, or a Sequence of at most one of them"
    )


def _pre_tokenizer_of(pre_tokenizer: dict[str, Any] | None, label: str) -> tuple[PatternKind, bool]:
    """``(kind, add_prefix_space)`` of a byte-level pre-tokenizer: ``ByteLevel``, or a
    ``Sequence`` of ``Split(Regex, Isolated)`` steps and a final ``ByteLevel(use_regex=false)``."""
    if pre_tokenizer is None:
        raise ValueError(f"{label}: pre_tokenizer is null; tensortext needs a byte-level one")
    kind = pre_tokenizer.get("type")
    if kind == "ByteLevel":
        add_prefix_space = bool(pre_tokenizer.get("add_prefix_space"))
        if not pre_tokenizer.get("use_regex", True):
            return "bytes", add_prefix_space
        return _kind([GPT2_PATTERN], label), add_prefix_space
    steps = pre_tokenizer.get("pretokenizers") if kind == "Sequence" else None
    if isinstance(steps, list) and len(steps) == 1:
        return _pre_tokenizer_of(steps[0], label)
    if isinstance(steps, list) and len(steps) >= 2:
        *splits, last = steps
        patterns = [_isolated_regex(step, alone=len(splits) == 1) for step in splits]
        if (
            last.get("type") == "ByteLevel"
            and not last.get("use_regex", True)
            and None not in patterns
        ):
            if last.get("add_prefix_space"):
                # After a Split, HF adds the space to every piece, not to every segment.
                raise ValueError(
                    f"{label}: pre_tokenizer ByteLevel add_prefix_space=true after a Split is "
                    "not supported"
                )
            return _kind([p for p in patterns if p is not None], label), False
    raise ValueError(
        f"{label}: unsupported pre_tokenizer {json.dumps(pre_tokenizer)[:120]}; tensortext reads "
        "ByteLevel, or Sequence[Split(Regex, Isolated), ..., ByteLevel(use_regex=false)]"
    )


def _isolated_regex(step: dict[str, Any], *, alone: bool) -> str | None:
    """The regex of a ``Split`` that isolates its matches, or ``None``.

    ``Split(Removed, invert=true)`` (MiniMax) keeps the matches and drops the gaps between them:
    the same pieces when there are no gaps, as for every single-regex pattern we reproduce
    (their pieces tile the text), so it is accepted when it is the only Split (``alone``).
    """
    pattern = step.get("pattern")
    if step.get("type") != "Split" or not isinstance(pattern, dict) or "Regex" not in pattern:
        return None
    behavior, invert = step.get("behavior"), bool(step.get("invert"))
    if (behavior, invert) == ("Isolated", False) or (
        alone and (behavior, invert) == ("Removed", True)
    ):
        return str(pattern["Regex"])
    return None


def _kind(patterns: list[str], label: str) -> PatternKind:
    try:
        return split_sequence_kind(patterns)
    except ValueError as error:
        raise ValueError(f"{label}: pre_tokenizer: {error}") from None


def _supported_model(spec: dict[str, Any], label: str) -> dict[str, Any]:
    """``spec["model"]`` if it is a byte-level BPE this encoder reproduces; else a ValueError."""
    model = spec.get("model")
    if not isinstance(model, dict):
        raise ValueError(f"{label}: model is {short_repr(model)}, not an object")
    if model.get("type") != "BPE":
        raise ValueError(f"{label}: model.type is {model.get('type')!r}; only 'BPE' is supported")
    for setting in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(setting):
            raise ValueError(f"{label}: model.{setting}={model[setting]!r} is not supported")
    if model.get("byte_fallback"):
        raise ValueError(
            f"{label}: model.byte_fallback=true (SentencePiece-style) is not supported"
        )
    return model
