"""The parts of a Hugging Face ``tokenizer.json`` that byte-level and SentencePiece-style files
share: ``model.vocab``, ``added_tokens``, the post-processor's tokens and ``model.merges``,
each checked before anything is sized by it."""

from __future__ import annotations

from typing import Any

from tensortext.bpe.vocab import check_ids, short_repr

__all__ = ["merge_pairs", "model_vocab", "post_processor_ids", "read_added_tokens"]


def model_vocab(model: dict[str, Any], spec: dict[str, Any], label: str) -> dict[str, int]:
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


def read_added_tokens(
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
        content, written = added_entry(entry, f"{label}: added_tokens[{index}]", normalized_ok)
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


def added_entry(entry: Any, where: str, normalized_ok: bool) -> tuple[str, Any]:
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


def post_processor_ids(
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
            "prefix_ids": (post_id(post["cls"][1], f"{kind} cls", label, known_ids),),
            "suffix_ids": (post_id(post["sep"][1], f"{kind} sep", label, known_ids),),
        }
    if kind == "TemplateProcessing":
        return template_ids(post, label, known_ids)
    if kind == "Sequence":
        prefix: tuple[int, ...] = ()
        suffix: tuple[int, ...] = ()
        for step in post.get("processors") or []:  # each wraps what the previous produced
            ids = post_processor_ids(step, label, known_ids)
            prefix, suffix = ids["prefix_ids"] + prefix, suffix + ids["suffix_ids"]
        return {"prefix_ids": prefix, "suffix_ids": suffix}
    raise ValueError(
        f"{label}: post_processor {kind!r} is not supported; tensortext reads TemplateProcessing, "
        "RobertaProcessing, BertProcessing, ByteLevel or a Sequence of them"
    )


def template_ids(
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
            around[sequences] += [post_id(i, field, label, known_ids) for i in entry["ids"]]
        else:
            raise ValueError(f"{label}: post_processor template item {item} not supported")
    if sequences != 1:
        raise ValueError(f"{label}: post_processor single template has no $A sequence")
    return {"prefix_ids": tuple(around[0]), "suffix_ids": tuple(around[1])}


# tokenizers reads post-processor IDs as u32.
_MAX_POST_ID = 2**32 - 1


def post_id(value: Any, field: str, label: str, known_ids: set[int]) -> int:
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


def merge_pairs(
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
