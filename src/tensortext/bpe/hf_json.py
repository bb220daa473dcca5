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

from tensortext.bpe.patterns import GPT2_PATTERN, PatternKind, split_sequence_kind
from tensortext.bpe.sentencepiece import BYTE_PIECE, METASPACE, split_kind
from tensortext.bpe.vocab import (
    TextOptions,
    Vocab,
    _require_every_byte,
    check_ids,
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
    if _is_metaspace(spec):
        return _metaspace_vocab(spec, label, name)
    model = _supported_model(spec, label)
    kind, add_prefix_space = _pre_tokenizer_of(spec.get("pre_tokenizer"), label)
    normalizer = _normalizer_of(spec, label)
    vocab = _model_vocab(model, spec, label)
    added_tokens = _added_tokens(spec, vocab, label, normalized_ok=normalizer is None)
    known_ids = {*vocab.values(), *added_tokens.values()}
    affixes = _post_processor_ids(spec.get("post_processor"), label, known_ids)
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

    size = max([*vocab.values(), *added_tokens.values()]) + 1  # bounded by _model_vocab
    tokens: list[bytes | None] = [None] * size
    mergeable: dict[bytes, int] = {}
    for text, token_id in vocab.items():
        if text in added_tokens and not set(text) <= char_to_byte.keys():
            continue  # an added token also listed in the vocabulary (DeepSeek's BOS/EOS)
        token = to_bytes(text)
        tokens[token_id] = token
        mergeable[token] = token_id
    pairs = _merge_pairs(model.get("merges") or [], vocab, label)
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


def _is_metaspace(spec: dict[str, Any]) -> bool:
    """Whether ``spec`` is a SentencePiece BPE as ``transformers`` converts it (Llama-2's
    ``LlamaTokenizerFast``): ``byte_fallback``, a ``Metaspace`` pre-tokenizer, or U+2581 in the
    normalizer."""
    model, pre = spec.get("model"), spec.get("pre_tokenizer")
    return (
        (isinstance(model, dict) and bool(model.get("byte_fallback")))
        or (isinstance(pre, dict) and pre.get("type") == "Metaspace")
        or METASPACE in json.dumps(spec.get("normalizer"), ensure_ascii=False)
    )


def _metaspace_text(spec: dict[str, Any], label: str) -> dict[str, Any]:
    """The :class:`TextOptions` fields of a SentencePiece-style file's normalizer,
    pre-tokenizer and decoder: the legacy ``Sequence[Prepend("▁"), Replace(" ", "▁")]``, or
    ``Metaspace(split=false)`` (``prepend_scheme`` first, always or never)."""
    normalizer, pre = spec.get("normalizer"), spec.get("pre_tokenizer")
    steps = normalizer.get("normalizers") if isinstance(normalizer, dict) else None
    steps = [normalizer] if isinstance(normalizer, dict) and steps is None else steps or []
    replace = {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE}
    prepend = {"type": "Prepend", "prepend": METASPACE}
    fields: dict[str, Any] = {"sentencepiece": True, "byte_runs": "hf"}
    if steps and pre is None and steps in ([replace], [prepend, replace]):
        fields.update(add_prefix_space=steps[0] == prepend, prefix_always=True)
    elif not steps and isinstance(pre, dict) and pre.get("type") == "Metaspace":
        scheme = pre.get("prepend_scheme", "always" if pre.get("add_prefix_space") else "never")
        if (
            pre.get("replacement") != METASPACE
            or pre.get("split")
            or scheme
            not in (
                "first",
                "always",
                "never",
            )
        ):
            raise ValueError(
                f"{label}: pre_tokenizer {json.dumps(pre)[:120]} is not supported; tensortext "
                "reads Metaspace with replacement '▁' and split=false"
            )
        fields.update(add_prefix_space=scheme != "never", prefix_first_only=scheme == "first")
    else:
        raise ValueError(
            f"{label}: normalizer {json.dumps(normalizer)[:100]} with pre_tokenizer "
            f"{json.dumps(pre)[:100]} is not supported; tensortext reads SentencePiece-style files "
            "with Sequence[Prepend('▁'), Replace(' ', '▁')] and no pre-tokenizer, or Metaspace"
        )
    decoder = json.dumps(spec.get("decoder"))
    if '"Strip"' in decoder:
        if '"start": 1' not in decoder or '"stop": 0' not in decoder:
            raise ValueError(f"{label}: decoder {decoder[:120]} is not supported")
        fields["strip_decoded"] = "always"
    return fields


def _metaspace_vocab(spec: dict[str, Any], label: str, name: str) -> Vocab:
    """:func:`read_hf_json` of a SentencePiece-style file: HF's merges list over characters,
    ``<0xXX>`` byte fallback or the unknown token."""
    model = spec.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"{label}: model.type must be 'BPE'")
    for setting in ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "ignore_merges"):
        if model.get(setting):
            raise ValueError(f"{label}: model.{setting}={model[setting]!r} is not supported")
    options = _metaspace_text(spec, label)
    vocab = _model_vocab(model, spec, label)
    added_tokens = _added_tokens(spec, vocab, label, normalized_ok=True)
    known_ids = {*vocab.values(), *added_tokens.values()}
    options.update(_post_processor_ids(spec.get("post_processor"), label, known_ids))
    size = max([*vocab.values(), *added_tokens.values()]) + 1  # bounded by _model_vocab
    tokens: list[bytes | None] = [None] * size
    mergeable: dict[bytes, int] = {}
    fallback: list[int | None] = [None] * 256
    for text, token_id in vocab.items():
        byte = BYTE_PIECE.fullmatch(text)
        if byte is not None:
            fallback[int(byte.group(1), 16)] = token_id
            tokens[token_id] = bytes([int(byte.group(1), 16)])
        elif text not in added_tokens:
            piece = text.replace(METASPACE, " ")
            if " " in text or piece.encode() in mergeable:
                raise ValueError(f"{label}: token {text!r} holds U+0020; not supported")
            mergeable[piece.encode()] = token_id
            tokens[token_id] = piece.encode()
    for content, token_id in added_tokens.items():
        if tokens[token_id] is None:
            tokens[token_id] = content.encode("utf-8")
    unk = vocab.get(model.get("unk_token") or "", -1)
    if model.get("byte_fallback"):
        if None in fallback:
            missing = fallback.index(None)
            raise ValueError(
                f"{label}: byte_fallback=true, but there is no token <0x{missing:02X}>"
            )
        unknown: tuple[int, ...] = (*fallback, -1)  # type: ignore[arg-type]
    elif unk < 0:
        raise ValueError(f"{label}: model.unk_token names no token, and byte_fallback=false")
    else:
        unknown = (*[-1] * 256, unk)
    pieces = {token.decode(): token_id for token, token_id in mergeable.items()}
    return Vocab(
        name=name,
        kind=split_kind(pieces, suffix=False),
        tokens=tokens,
        mergeable=mergeable,
        special_tokens=added_tokens,
        merges=_merge_pairs(model.get("merges") or [], vocab, label),
        whole_piece_lookup=False,
        options=TextOptions(**options),
        unknown_ids=unknown,
        fuse_unk=bool(model.get("fuse_unk")),
    )


def _model_vocab(model: dict[str, Any], spec: dict[str, Any], label: str) -> dict[str, int]:
    """``model.vocab``, its IDs checked: distinct ``int``s below the bound for all tokens."""
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise ValueError(
            f"{label}: model.vocab is {short_repr(vocab)}; byte-level BPE needs an object "
            "of tokens to IDs, the 256 single bytes among them"
        )
    added = spec.get("added_tokens")
    count = len(vocab) + (len(added) if isinstance(added, list) else 0)
    check_ids(vocab, f"{label}: model.vocab token", count, distinct=True)
    return vocab


def _added_tokens(
    spec: dict[str, Any], vocab: dict[str, int], label: str, *, normalized_ok: bool
) -> dict[str, int]:
    """``added_tokens`` as ``content -> id``; settings that change where they match fail.

    ``tokenizers`` ignores the ``id`` written in the file: a token in ``model.vocab`` keeps its
    vocabulary ID; a repeated content keeps its first ID; an empty content is dropped; any other
    takes ``len(vocab)``, or one more than the largest ID given so far if that is at least
    ``len(vocab)``. A file whose ``id`` differs (``tokenizers`` warns and renumbers), or whose new
    ID falls on a vocabulary token (``tokenizers`` gives two texts one ID), is refused.
    """
    entries = spec.get("added_tokens")
    entries = [] if entries is None else entries
    if not isinstance(entries, list):
        raise ValueError(f"{label}: added_tokens is not a list")
    added: dict[str, int] = {}
    top = -1  # the largest added ID so far
    vocab_ids = set(vocab.values())
    for index, entry in enumerate(entries):
        content, written = _added_entry(entry, f"{label}: added_tokens[{index}]", normalized_ok)
        if not content:
            continue  # tokenizers ignores an empty added token
        if content in added:
            token_id, why = added[content], "the ID of the same content earlier"
        elif content in vocab:
            token_id, why = vocab[content], "its ID in model.vocab"
        else:
            token_id = top + 1 if top >= len(vocab) else len(vocab)
            why = f"the next ID after model.vocab's {len(vocab)} tokens and the added tokens before"
        if written != token_id:
            raise ValueError(
                f"{label}: added token {content!r:.80} has ID {short_repr(written)}, but "
                f"tokenizers ignores it and gives {token_id} ({why}); set its id to {token_id}"
            )
        if content not in vocab and token_id in vocab_ids:
            other = next(text for text, i in vocab.items() if i == token_id)
            raise ValueError(
                f"{label}: added token {content!r:.80} has ID {token_id}, the ID of model.vocab "
                f"token {other!r:.80}; renumber model.vocab without gaps"
            )
        added.setdefault(content, token_id)
        top = max(top, token_id)
    return added


def _added_entry(entry: Any, where: str, normalized_ok: bool) -> tuple[str, Any]:
    """``(content, ID as written)`` of one ``added_tokens`` entry (``where`` names it), its
    settings checked."""
    if not isinstance(entry, dict):
        raise ValueError(f"{where} is {short_repr(entry)}, not an object")
    content = entry.get("content")
    if not isinstance(content, str):
        raise ValueError(f"{where} has 'content' {short_repr(content)}; expected a string")
    if type(entry.get("id")) is not int:
        got = f"'id' {short_repr(entry['id'])}" if "id" in entry else "no 'id'"
        raise ValueError(f"{where} ({content!r:.80}) has {got}; expected an integer 'id'")
    for setting in ("lstrip", "rstrip", "single_word"):
        if entry.get(setting):
            raise ValueError(f"{where} {content!r} has {setting}=true; not supported")
    if entry.get("normalized") and not normalized_ok:
        # HF matches such a token in the normalized text; we split tokens out first.
        raise ValueError(
            f"{where} {content!r} has normalized=true under a normalizer; not supported"
        )
    return content, entry["id"]


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


def _post_processor_ids(
    post: dict[str, Any] | None, label: str, known_ids: set[int]
) -> dict[str, tuple[int, ...]]:
    """``prefix_ids``/``suffix_ids`` that the post-processor puts around one sequence, each an
    ID of ``known_ids`` (the vocabulary's and the added tokens')."""
    if post is None:
        return {"prefix_ids": (), "suffix_ids": ()}
    kind = post.get("type")
    if kind == "ByteLevel":  # offsets only
        return {"prefix_ids": (), "suffix_ids": ()}
    if kind in ("RobertaProcessing", "BertProcessing"):
        return {
            "prefix_ids": (_post_id(post["cls"][1], f"{kind} cls", label, known_ids),),
            "suffix_ids": (_post_id(post["sep"][1], f"{kind} sep", label, known_ids),),
        }
    if kind == "TemplateProcessing":
        return _template_ids(post, label, known_ids)
    if kind == "Sequence":
        prefix: tuple[int, ...] = ()
        suffix: tuple[int, ...] = ()
        for step in post.get("processors") or []:  # each wraps what the previous produced
            ids = _post_processor_ids(step, label, known_ids)
            prefix, suffix = ids["prefix_ids"] + prefix, suffix + ids["suffix_ids"]
        return {"prefix_ids": prefix, "suffix_ids": suffix}
    raise ValueError(
        f"{label}: post_processor {kind!r} is not supported; tensortext reads TemplateProcessing, "
        "RobertaProcessing, BertProcessing, ByteLevel or a Sequence of them"
    )


def _template_ids(
    post: dict[str, Any], label: str, known_ids: set[int]
) -> dict[str, tuple[int, ...]]:
    """The special tokens before and after ``$A`` in a TemplateProcessing's single template."""
    around: list[list[int]] = [[], []]
    sequences = 0
    for item in post.get("single") or []:
        if "Sequence" in item:
            if item["Sequence"].get("id") != "A" or sequences:
                raise ValueError(f"{label}: post_processor single template {item} not supported")
            sequences += 1
        elif "SpecialToken" in item:
            name = item["SpecialToken"]["id"]
            entry = (post.get("special_tokens") or {}).get(name)
            if entry is None:
                raise ValueError(f"{label}: post_processor special token {name!r} has no ids")
            field = f"special token {name!r:.40}"
            around[sequences] += [_post_id(i, field, label, known_ids) for i in entry["ids"]]
        else:
            raise ValueError(f"{label}: post_processor template item {item} not supported")
    if sequences != 1:
        raise ValueError(f"{label}: post_processor single template has no $A sequence")
    return {"prefix_ids": tuple(around[0]), "suffix_ids": tuple(around[1])}


# tokenizers reads post-processor IDs as u32.
_MAX_POST_ID = 2**32 - 1


def _post_id(value: Any, field: str, label: str, known_ids: set[int]) -> int:
    """One post-processor ID, as ``tokenizers`` reads it (a JSON integer in ``[0, 2**32)``; it
    refuses the file otherwise) and in the vocabulary (``tokenizers`` would emit any u32 as is,
    an ID no embedding table has; refused here)."""
    if type(value) is not int or not 0 <= value <= _MAX_POST_ID:
        raise ValueError(
            f"{label}: post_processor {field} has ID {short_repr(value)}; expected an integer "
            "ID of the vocabulary (tokenizers refuses this file too)"
        )
    if value not in known_ids:
        raise ValueError(
            f"{label}: post_processor {field} has ID {value}, which is no token of model.vocab "
            "or added_tokens (tokenizers would emit it as is, an ID no embedding has); set it "
            "to the token's ID"
        )
    return value


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


def _merge_pairs(
    merges: list[Any], vocab: dict[str, int], label: str
) -> dict[tuple[int, int], tuple[int, int]]:
    """``(left, right) -> (rank, merged)`` from HF's merge list (rank = position; first wins)."""
    if not isinstance(merges, list):
        raise ValueError(f"{label}: model.merges is {short_repr(merges)}, not a list")
    pairs: dict[tuple[int, int], tuple[int, int]] = {}
    for rank, merge in enumerate(merges):
        parts = merge.split(" ") if isinstance(merge, str) else list(merge)
        if (
            len(parts) != 2
            or any(part not in vocab for part in parts)
            or "".join(parts) not in vocab
        ):
            raise ValueError(f"{label}: merge {rank} {merge!r} is not two vocabulary tokens")
        key = (vocab[parts[0]], vocab[parts[1]])
        if key not in pairs:
            pairs[key] = (rank, vocab["".join(parts)])
    return pairs
