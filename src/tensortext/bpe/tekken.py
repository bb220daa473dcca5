"""Mistral's Tekken vocabularies (``tekken_*.json``), read as mistral-common's ``Tekkenizer``
reads them.

A Tekken file is a tiktoken vocabulary in JSON: ``vocab`` lists every ordinary token's bytes
(base64 ``token_bytes``) in rank order, and ``config`` gives the split ``pattern``, the number of
special tokens ``default_num_special_tokens`` (N) and the total size ``default_vocab_size`` (V).
The special tokens take IDs ``0..N-1``: the file's ``special_tokens`` (by their ``rank``), or for
files of version v7 and older without that list, mistral-common's twenty names (``<unk>``,
``<s>``, ``</s>``, ``[INST]``, ...); the IDs left are filled with ``<SPECIAL_{id}>``. The
ordinary token of rank ``r`` has ID ``r + N``, and only the first ``V - N`` ranks are kept.

Adding N to every rank keeps their order, so tiktoken's merge rule (the pair whose bytes are the
token of lowest ID merges first) gives mistral-common's IDs: the result is an ordinary tiktoken
:class:`~tensortext.bpe.vocab.Vocab`, which every backend encodes.
"""

from __future__ import annotations

import base64
import binascii
import json
from pathlib import Path
from typing import Any

from tensortext.bpe.patterns import PATTERNS
from tensortext.bpe.vocab import Vocab

__all__ = ["DEPRECATED_SPECIAL_TOKENS", "read_tekken"]

DEPRECATED_SPECIAL_TOKENS = (
    "<unk>",
    "<s>",
    "</s>",
    "[INST]",
    "[/INST]",
    "[AVAILABLE_TOOLS]",
    "[/AVAILABLE_TOOLS]",
    "[TOOL_RESULTS]",
    "[/TOOL_RESULTS]",
    "[TOOL_CALLS]",
    "[IMG]",
    "<pad>",
    "[IMG_BREAK]",
    "[IMG_END]",
    "[PREFIX]",
    "[MIDDLE]",
    "[SUFFIX]",
    "[SYSTEM_PROMPT]",
    "[/SYSTEM_PROMPT]",
    "[TOOL_CONTENT]",
)
"""The special tokens (IDs 0 to 19) of a file of version v7 or older with no
``special_tokens`` list (mistral-common's ``Tekkenizer.DEPRECATED_SPECIAL_TOKENS``)."""
_FILLER = "<SPECIAL_{id}>"
_LAST_VERSION_WITHOUT_LIST = 7
_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", int: "an integer"}


def read_tekken(path: str | Path, *, name: str | None = None) -> Vocab:
    """The vocabulary of a Tekken file (see the module docstring).

    Args:
        path: a ``tekken_*.json`` file.
        name: the encoding's name; defaults to the file name without ``.json`` (as
            mistral-common names it).

    Returns:
        A tiktoken-rule vocabulary: IDs ``0..N-1`` special, ordinary IDs ``N..V-1``.

    Raises:
        ValueError: naming the file and field, for a file that is not JSON, a missing or
            mistyped field, a version string that is not ``v<number>``, a split pattern
            tensortext does not reproduce, sizes that leave fewer than 256 ordinary tokens,
            special tokens that repeat a name, are more than ``default_num_special_tokens`` or
            out of rank order, fewer ``vocab`` entries than the vocabulary size needs, or an
            entry out of rank order, not base64, repeated, or (among the first 256) not its own
            byte.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: not a Tekken JSON file ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object with 'vocab' and 'config'")
    config = _field(path, data, "config", dict)
    pattern = _field(path, config, "pattern", str, "config.")
    vocab_size = _field(path, config, "default_vocab_size", int, "config.")
    num_special = _field(path, config, "default_num_special_tokens", int, "config.")
    version = _version(path, _field(path, config, "version", str, "config."))
    if pattern not in PATTERNS:  # (a kind name is no regex here)
        raise ValueError(
            f"{path}: config.pattern={pattern[:60]!r}... is not a split pattern tensortext "
            "reproduces exactly (tensortext.bpe.PATTERNS, which holds Tekken's)"
        )
    if not 0 <= num_special <= vocab_size - 256:
        raise ValueError(
            f"{path}: config.default_num_special_tokens={num_special} must lie in "
            f"[0, config.default_vocab_size - 256 = {vocab_size - 256}] (the 256 byte tokens)"
        )
    special_tokens = _special_tokens(path, data.get("special_tokens"), num_special, version)
    entries = _field(path, data, "vocab", list)
    ranks = _ranks(path, entries, vocab_size - num_special, num_special)
    vocab = Vocab.from_ranks(name or path.name.replace(".json", ""), pattern, ranks, special_tokens)
    vocab.eot_id = special_tokens.get("</s>")  # (mistral-common's EOS)
    return vocab


def _field(path: Path, parent: dict[str, Any], key: str, kind: type, where: str = "") -> Any:
    """``parent[key]``, of the JSON type ``kind`` (a bool is no integer here)."""
    value = parent.get(key)
    if type(value) is not kind:
        got = _JSON_TYPES.get(type(value), type(value).__name__) if key in parent else "nothing"
        raise ValueError(f"{path}: {where}{key} must be {_JSON_TYPES[kind]}, got {got}")
    return value


def _version(path: Path, version: str) -> int:
    """The number of a ``v<number>`` version string."""
    number = version[1:]
    if not (version.startswith("v") and number.isascii() and number.isdigit()):
        raise ValueError(f"{path}: config.version={version!r} is not 'v<number>' (such as 'v3')")
    return int(number)


def _special_tokens(path: Path, listed: Any, count: int, version: int) -> dict[str, int]:
    """The ``count`` special tokens, name -> ID: the file's list (or, up to v7, the deprecated
    names) then ``<SPECIAL_{id}>`` fillers, as mistral-common makes them."""
    if listed is None:
        if version > _LAST_VERSION_WITHOUT_LIST:
            raise ValueError(
                f"{path}: special_tokens is missing, which only files of version v7 and older "
                "may omit (mistral-common then uses its deprecated list)"
            )
        names = list(DEPRECATED_SPECIAL_TOKENS)
    else:
        if not isinstance(listed, list):
            raise ValueError(
                f"{path}: special_tokens must be a list, got a {type(listed).__name__}"
            )
        names = []
        for index, entry in enumerate(listed):
            where = f"special_tokens[{index}]."
            if not isinstance(entry, dict):
                raise ValueError(f"{path}: special_tokens[{index}] must be an object")
            names.append(_field(path, entry, "token_str", str, where))
            rank = _field(path, entry, "rank", int, where)
            if rank != index:
                raise ValueError(
                    f"{path}: {where}rank is {rank}; special tokens must be listed in rank "
                    "order from 0"
                )
    if len(names) > count:
        raise ValueError(
            f"{path}: {len(names)} special tokens, more than "
            f"config.default_num_special_tokens={count}"
        )
    names += [_FILLER.format(id=index) for index in range(len(names), count)]
    special_tokens = {special: index for index, special in enumerate(names)}
    if len(special_tokens) != count:
        repeated = next(special for special in names if names.count(special) > 1)
        raise ValueError(f"{path}: special_tokens: the name {repeated!r} is used twice")
    return special_tokens


def _ranks(path: Path, entries: list[Any], count: int, offset: int) -> dict[bytes, int]:
    """The first ``count`` entries' bytes -> ``rank + offset``, checked as mistral-common does
    (its ``_reload_mergeable_ranks``)."""
    if len(entries) < count:
        raise ValueError(
            f"{path}: vocab has {len(entries)} entries; config.default_vocab_size minus "
            f"config.default_num_special_tokens needs {count}"
        )
    ranks: dict[bytes, int] = {}
    for rank, entry in enumerate(entries[:count]):
        where = f"vocab[{rank}]."
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: vocab[{rank}] must be an object")
        if _field(path, entry, "rank", int, where) != rank:
            raise ValueError(
                f"{path}: {where}rank is {entry['rank']}; entries must be in rank order from 0"
            )
        try:
            token = base64.b64decode(_field(path, entry, "token_bytes", str, where), validate=True)
        except binascii.Error:
            raise ValueError(f"{path}: {where}token_bytes is not base64") from None
        if rank < 256 and token != bytes([rank]):
            raise ValueError(f"{path}: {where}token_bytes must be the byte {rank} itself")
        if not token or token in ranks:
            raise ValueError(f"{path}: {where}token_bytes is empty or repeats an earlier token")
        ranks[token] = rank + offset
    return ranks
