"""SentencePiece BPE as a Hugging Face ``tokenizer.json`` (Llama-2's ``LlamaTokenizerFast``):
``byte_fallback``, the legacy ``Prepend``/``Replace`` normalizers or a ``Metaspace``
pre-tokenizer, ``tokenizers``' merges list over characters and its decoders."""

from __future__ import annotations

import json
from typing import Any

from tensortext.bpe.hf_parts import merge_pairs, model_vocab, post_processor_ids, read_added_tokens
from tensortext.bpe.options import TextOptions
from tensortext.bpe.sentencepiece import BYTE_PIECE, METASPACE, split_kind
from tensortext.bpe.vocab import Vocab

__all__ = ["is_metaspace", "metaspace_vocab"]

_SCHEMES = ("first", "always", "never")  # Metaspace's prepend_scheme


def is_metaspace(spec: dict[str, Any]) -> bool:
    """Whether ``spec`` is a SentencePiece BPE as ``transformers`` converts it (Llama-2's
    ``LlamaTokenizerFast``): ``byte_fallback``, a ``Metaspace`` pre-tokenizer, or U+2581 in the
    normalizer."""
    model, pre = spec.get("model"), spec.get("pre_tokenizer")
    return (
        (isinstance(model, dict) and bool(model.get("byte_fallback")))
        or (isinstance(pre, dict) and pre.get("type") == "Metaspace")
        or METASPACE in json.dumps(spec.get("normalizer"), ensure_ascii=False)
    )


def metaspace_text(spec: dict[str, Any], label: str) -> dict[str, Any]:
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
        if pre.get("replacement") != METASPACE or pre.get("split") or scheme not in _SCHEMES:
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
    decoder = spec.get("decoder")
    steps = decoder.get("decoders", [decoder]) if isinstance(decoder, dict) else []
    strips = [step for step in steps if isinstance(step, dict) and step.get("type") == "Strip"]
    if strips:  # (the one Strip tensortext reproduces: the first space of the text)
        if strips != [{"type": "Strip", "content": " ", "start": 1, "stop": 0}]:
            raise ValueError(f"{label}: decoder {json.dumps(decoder)[:120]} is not supported")
        fields["strip_decoded"] = "always"
    return fields


def metaspace_vocab(spec: dict[str, Any], label: str, name: str) -> Vocab:
    """:func:`read_hf_json` of a SentencePiece-style file: HF's merges list over characters,
    ``<0xXX>`` byte fallback or the unknown token."""
    model = spec.get("model")
    if not isinstance(model, dict) or model.get("type") != "BPE":
        raise ValueError(f"{label}: model.type must be 'BPE'")
    for setting in ("dropout", "continuing_subword_prefix", "end_of_word_suffix", "ignore_merges"):
        if model.get(setting):
            raise ValueError(f"{label}: model.{setting}={model[setting]!r} is not supported")
    options = metaspace_text(spec, label)
    vocab = model_vocab(model, spec, label)
    added_tokens = read_added_tokens(spec, vocab, label, normalized_ok=True)
    known_ids = {*vocab.values(), *added_tokens.values()}
    options.update(post_processor_ids(spec.get("post_processor"), label, known_ids))
    size = max([*vocab.values(), *added_tokens.values()]) + 1  # bounded by model_vocab
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
    merges = merge_pairs(model.get("merges") or [], vocab, label)
    ordinary = set(mergeable.values())
    for (left, right), (_, merged) in merges.items():
        if not {left, right, merged} <= ordinary:  # (the encoders' cuts trust the vocabulary)
            raise ValueError(f"{label}: a merge joins or gives a byte or added token ({merged})")
    pieces = {token.decode(): token_id for token, token_id in mergeable.items()}
    return Vocab(
        name=name,
        kind=split_kind(pieces, suffix=False),
        tokens=tokens,
        mergeable=mergeable,
        special_tokens=added_tokens,
        merges=merges,
        whole_piece_lookup=False,
        options=TextOptions(**options),
        unknown_ids=unknown,
        fuse_unk=bool(model.get("fuse_unk")),
    )
