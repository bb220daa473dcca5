"""Vocabulary files: tiktoken's format (plain or gzip), sha256; HF files in :mod:`.hf_json`.

A vocabulary becomes :class:`Vocab`: every token's bytes, its rank, and the pair table that the
merges look up (``(left, right) -> (rank, merged)``).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensortext.bpe.options import TextOptions
from tensortext.bpe.patterns import PatternKind, pattern_kind

if TYPE_CHECKING:
    import torch

    from tensortext.bpe.merge import MergeTables

__all__ = [
    "Vocab",
    "check_ids",
    "id_bound",
    "read_tiktoken_file",
    "read_vocabulary_bytes",
    "sha256_of",
]


@dataclass
class Vocab:
    """A byte-level BPE vocabulary.

    ``tokens[i]`` is the bytes of token ``i`` (``None`` for an unused ID); ``mergeable`` maps
    every ordinary token's bytes to its ID; ``special_tokens`` maps text to ID. ``merges`` maps
    ``(left_id, right_id)`` to ``(rank, merged_id)`` for a vocabulary with a merges list (HF);
    ``None`` is tiktoken's rule, rank = ID and ``(a, b)`` merges if ``a + b`` is a token.
    """

    name: str
    kind: PatternKind
    tokens: list[bytes | None]
    mergeable: dict[bytes, int]
    special_tokens: dict[str, int]
    merges: dict[tuple[int, int], tuple[int, int]] | None = None
    whole_piece_lookup: bool = True
    options: TextOptions = field(default_factory=TextOptions)
    piece_ranks: list[int] | None = None
    """SentencePiece's rule (``merges`` is ``None``): tiktoken's, over characters, with the rank
    of token ``i`` in ``piece_ranks[i]`` (its score's place; pieces of one score share it, the
    leftmost merging first) instead of ``i``."""
    unknown_ids: tuple[int, ...] | None = None
    """SentencePiece: merges start from characters (with ``merges`` or ``piece_ranks``), and a
    character that is no token becomes, for each of its bytes ``b``, ``unknown_ids[b]`` (its
    ``<0xXX>`` piece), or ``unknown_ids[256]`` once where that is not -1 (no byte fallback)."""
    eot_id: int | None = None
    """The end-of-text token where it is not ``<|endoftext|>`` (a SentencePiece model's EOS)."""
    fuse_unk: bool = False
    """A run of the unknown token in a text's tokens becomes one (``sentencepiece``; HF's
    ``fuse_unk``)."""
    _tables: dict[str, MergeTables] = field(default_factory=dict, repr=False)
    native: Any = field(default=None, init=False, repr=False, compare=False)
    """The C encoder holding the tokens of a vocabulary it read itself
    (:func:`~tensortext.bpe.native.vocab_from_tiktoken`), else ``None``. ``tokens`` and
    ``mergeable`` of such a vocabulary are built from it at their first use (a tenth of a second
    for o200k_base), which encoding with it never needs."""

    @classmethod
    def held_by(
        cls, name: str, kind: PatternKind, native: Any, special_tokens: dict[str, int]
    ) -> Vocab:
        """A tiktoken vocabulary held by the C encoder ``native`` (tiktoken's rule, its ranks
        checked), ``special_tokens`` checked by the caller."""
        vocab = cls(name, kind, [], {}, dict(special_tokens))
        vocab.native = native  # (no init field: dataclasses.replace makes a vocabulary without)
        del vocab.tokens, vocab.mergeable  # built by __getattr__ when first read
        return vocab

    def __getattr__(self, name: str) -> Any:
        """``tokens`` and ``mergeable`` of a vocabulary held by its C encoder, built from it
        (only reached for an attribute that is not set)."""
        native = self.__dict__.get("native")
        if native is None or name not in ("tokens", "mergeable"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if name == "mergeable":
            value: Any = native.ranks()
        else:
            value = native.tokens_by_id(self.n_vocab)
            _add_special_bytes(value, self.special_tokens)
        self.__dict__[name] = value  # (two threads may both build it: the same value)
        return value

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the cached tables (rebuilt on first use) or the C encoder."""
        state = {**self.__dict__, "_tables": {}, "native": None}
        state.update(tokens=self.tokens, mergeable=self.mergeable)
        state.pop("pairs", None)
        return state

    @property
    def n_vocab(self) -> int:
        if "tokens" not in self.__dict__ and self.native is not None:
            ordinary: int = self.native.counts()[1]
            return max([ordinary, *[token_id + 1 for token_id in self.special_tokens.values()]])
        return len(self.tokens)

    @cached_property
    def special_set(self) -> frozenset[str]:
        """The special tokens' texts."""
        return frozenset(self.special_tokens)

    @property
    def ranks_are_ids(self) -> bool:
        """tiktoken's rule: a token's ID is its merge rank."""
        return self.merges is None and self.piece_ranks is None

    @cached_property
    def pairs(self) -> dict[tuple[int, int], tuple[int, int]]:
        """``(left_id, right_id) -> (rank, merged_id)``: ``merges``, or tiktoken's rule applied
        to every token's cuts (built on first use: a third of a second for cl100k_base)."""
        if self.merges is not None:
            return self.merges
        if self.piece_ranks is not None:
            return _character_pairs(self.mergeable, self.piece_ranks)
        pairs: dict[tuple[int, int], tuple[int, int]] = {}
        get = self.mergeable.get
        for token, rank in self.mergeable.items():
            for cut in range(1, len(token)):
                left, right = get(token[:cut]), get(token[cut:])
                if left is not None and right is not None:
                    pairs[(left, right)] = (rank, rank)
        return pairs

    @cached_property
    def cuts(self) -> list[list[bool]] | None:
        """SentencePiece (``unknown_ids`` set): ``cuts[a][b]`` is whether no token holds a
        character of class ``a`` (:func:`~tensortext.bpe.unicode.char_classes`) followed by one of
        class ``b``, so that text may be cut between them (the C encoder finds the same); ``None``
        for byte-level BPE."""
        if self.unknown_ids is None:
            return None
        import numpy as np

        from tensortext.bpe.unicode import CHAR_CLASSES, char_classes, flag_bytes

        texts = [token.decode() for token in self.mergeable]
        codepoints = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32)
        table = np.frombuffer(flag_bytes(), dtype=np.uint8)
        classes = char_classes(codepoints, table[codepoints], np.where)
        token = np.repeat(np.arange(len(texts)), [len(text) for text in texts])
        inside = token[1:] == token[:-1]
        seen = np.zeros((CHAR_CLASSES, CHAR_CLASSES), dtype=bool)
        seen[classes[:-1][inside], classes[1:][inside]] = True
        return (~seen).tolist()

    @cached_property
    def byte_ids(self) -> list[int]:
        """The token of each single byte ``0..255`` (where every merge starts); for
        SentencePiece, of each one-byte character: its piece, else its ``unknown_ids``."""
        if self.unknown_ids is not None:
            unk = self.unknown_ids[256]
            return [
                self.mergeable.get(bytes([byte]), unk if unk >= 0 else self.unknown_ids[byte])
                for byte in range(256)
            ]
        return [self.mergeable[bytes([byte])] for byte in range(256)]

    def has_tables(self) -> bool:
        """Whether the merge tables are built (on the CPU; other devices copy them)."""
        return "cpu" in self._tables

    def tables(self, device: torch.device) -> MergeTables:
        """The merge tables on ``device`` (built once, then cached per device)."""
        key = str(device)
        if key not in self._tables:
            cpu = self._tables.get("cpu") or self._build_tables()
            self._tables["cpu"] = cpu
            self._tables[key] = cpu.to(device)
        return self._tables[key]

    def _build_tables(self) -> MergeTables:
        import torch

        from tensortext.bpe.merge import MergeTables, hash_powers, piece_keys

        base = self.n_vocab
        pair_items = sorted(
            (left * base + right, rank, merged)
            for (left, right), (rank, merged) in self.pairs.items()
        )
        pair_table = torch.tensor(pair_items or [(-1, 0, 0)], dtype=torch.int64)
        lens = [0 if token is None else len(token) for token in self.tokens]
        token_offsets = torch.zeros(len(lens) + 1, dtype=torch.int64)
        token_offsets[1:] = torch.cumsum(torch.tensor(lens, dtype=torch.int64), 0)
        flat = b"".join(token or b"" for token in self.tokens)
        token_bytes = (
            torch.frombuffer(bytearray(flat), dtype=torch.uint8)
            if flat
            else torch.zeros(1, dtype=torch.uint8)
        )
        byte_ids = torch.tensor(self.byte_ids, dtype=torch.int64)
        max_len = max(len(token) for token in self.mergeable)
        powers = hash_powers(max_len)
        ids = torch.tensor(sorted(self.mergeable.values()), dtype=torch.int64)
        keys = piece_keys(
            token_bytes, token_offsets[ids], token_offsets[ids + 1] - token_offsets[ids], powers
        )
        order = torch.argsort(keys)
        keys, ids = keys[order], ids[order]
        if bool((keys[1:] == keys[:-1]).any()):
            # Unique keys guarantee that a whole-piece lookup never misses a real token.
            raise ValueError(f"{self.name}: two tokens share a piece hash; report this vocabulary")
        return MergeTables(
            pair_keys=pair_table[:, 0].contiguous(),
            pair_ranks=pair_table[:, 1].contiguous(),
            pair_ids=pair_table[:, 2].contiguous(),
            piece_keys=keys,
            piece_ids=ids,
            token_bytes=token_bytes,
            token_offsets=token_offsets,
            byte_ids=byte_ids,
            hash_powers=powers,
            key_base=base,
            max_token_len=max_len,
            whole_piece_lookup=self.whole_piece_lookup,
            char_units=self.unknown_ids is not None,
            unk_id=-1 if self.unknown_ids is None else self.unknown_ids[256],
        )

    @classmethod
    def from_ranks(
        cls,
        name: str,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        *,
        explicit_n_vocab: int | None = None,
    ) -> Vocab:
        """A tiktoken vocabulary: rank = token ID; ``(a, b)`` merges if ``a + b`` is a token.

        Raises:
            TypeError: if ``mergeable_ranks`` or ``special_tokens`` is not a dict of ``bytes``
                or ``str`` keys.
            ValueError: naming the token, for an ID that is not an ``int`` below
                :func:`id_bound`, a rank used twice, a missing single byte, or an
                ``explicit_n_vocab`` that disagrees.
        """
        kind = pattern_kind(pat_str)
        _check_ranks(name, mergeable_ranks, special_tokens)
        size = max([*mergeable_ranks.values(), *special_tokens.values()]) + 1
        check_vocab_size(name, explicit_n_vocab, size, len(mergeable_ranks), special_tokens)
        tokens: list[bytes | None] = [None] * size
        for token, rank in mergeable_ranks.items():
            tokens[rank] = token
        ordinary_ids = set(mergeable_ranks.values())
        check_special_ids(name, special_tokens, ordinary_ids.__contains__)
        _add_special_bytes(tokens, special_tokens)
        return cls(name, kind, tokens, dict(mergeable_ranks), dict(special_tokens))


def _character_pairs(
    mergeable: dict[bytes, int], ranks: list[int]
) -> dict[tuple[int, int], tuple[int, int]]:
    """SentencePiece's rule as pairs: every cut of every token, between characters, into two
    tokens, ``-> (rank of the token, token)``."""
    pieces = {token.decode(): token_id for token, token_id in mergeable.items()}
    cuts = [(text, cut) for text in pieces if len(text) > 1 for cut in range(1, len(text))]
    lefts = list(map(pieces.get, [text[:cut] for text, cut in cuts]))
    rights = list(map(pieces.get, [text[cut:] for text, cut in cuts]))
    return {
        (left, right): (ranks[pieces[text]], pieces[text])
        for (text, _), left, right in zip(cuts, lefts, rights, strict=True)
        if left is not None and right is not None
    }


def check_vocab_size(
    name: str,
    explicit_n_vocab: int | None,
    size: int,
    n_mergeable: int,
    special_tokens: Mapping[str, int],
) -> None:
    """tiktoken's ``explicit_n_vocab``: if given, it must equal both the largest ID + 1
    (``size``) and the number of tokens."""
    count = n_mergeable + len(special_tokens)
    if explicit_n_vocab is not None and not explicit_n_vocab == size == count:
        raise ValueError(
            f"{name}: explicit_n_vocab={explicit_n_vocab}, but the IDs need {size} and there "
            f"are {count} tokens ({n_mergeable} mergeable + {len(special_tokens)} special); all "
            "three must agree"
        )


def check_special_ids(
    name: str, special_tokens: Mapping[str, int], is_ordinary: Callable[[int], bool]
) -> None:
    """No special token may take the ID of a mergeable one (``is_ordinary(id)``)."""
    for text, token_id in special_tokens.items():
        if is_ordinary(token_id):
            raise ValueError(
                f"{name}: special token {text!r} reuses ID {token_id} of a mergeable token"
            )


def _add_special_bytes(tokens: list[bytes | None], special_tokens: Mapping[str, int]) -> None:
    """Each special token's text as the bytes of its ID. Special tokens may share an ID
    (o200k_harmony's <|endofprompt|> and <|reserved_200018|>); decoding gives the first one's."""
    for text, token_id in special_tokens.items():
        if tokens[token_id] is None:
            tokens[token_id] = text.encode("utf-8")


# Real vocabularies number their tokens densely from 0, with few gaps (o200k_base: 200,000 tokens
# below 200,019; cl100k_base: 100,261 below 100,277), so an ID past this bound is a typo or a
# hostile file. Every table sized by the largest ID (``Vocab.tokens``, the token offsets) then
# stays within a small multiple of the input's own size, and IDs fit int32 (so the pair keys
# ``left * n_vocab + right`` fit int64).
ID_SLACK = 2**20


def id_bound(count: int) -> int:
    """The exclusive bound on the token IDs of ``count`` tokens: ``4 * count + 2**20``, at
    most ``2**31``."""
    return min(4 * count + ID_SLACK, 2**31)


def id_bound_text(count: int) -> str:
    """The bound as an error message states it, with the fix."""
    return (
        f"IDs must be integers in [0, {id_bound(count)}), the bound for {count} tokens "
        "(4 * tokens + 2**20, at most 2**31); number the tokens from 0 with few gaps"
    )


def check_ids(ids: Mapping[Any, Any], what: str, count: int, *, distinct: bool = False) -> None:
    """Check that every ID in ``ids`` (token -> ID) is an ``int`` in ``[0, id_bound(count))``
    and, if ``distinct``, that no two tokens share one. A few passes in C when all is well; the
    offending token is looked for only when not.

    Raises:
        ValueError: ``"{what} {token!r} has ID ..."`` naming the first bad token, or both tokens
            of a shared ID.
    """
    values = ids.values()
    bound = id_bound(count)
    if not values or (
        set(map(type, values)) == {int}
        and min(values) >= 0
        and max(values) < bound
        and (not distinct or len(set(values)) == len(values))
    ):
        return
    first: dict[int, Any] = {}
    for token, token_id in ids.items():
        if type(token_id) is not int or not 0 <= token_id < bound:
            raise ValueError(
                f"{what} {token!r:.80} has ID {short_repr(token_id)}; {id_bound_text(count)}"
            )
        if distinct and token_id in first:
            raise ValueError(
                f"{what}s {first[token_id]!r:.80} and {token!r:.80} share ID {token_id}"
            )
        first[token_id] = token


def short_repr(value: Any) -> str:
    """``repr(value)`` cut short (an int of thousands of digits has no printable repr)."""
    if type(value) is int and value.bit_length() > 64:
        bits = value.bit_length() - 1
        return f"-2**{bits} or less" if value < 0 else f"2**{bits} or more"
    return f"{value!r:.40}"


def _check_ranks(name: str, mergeable_ranks: Any, special_tokens: Any) -> None:
    """tiktoken's constructor arguments: ``bytes -> int`` and ``str -> int`` dicts whose IDs are
    below :func:`id_bound`, every rank distinct and every single byte a token."""
    for argument, value, key_type in (
        ("mergeable_ranks", mergeable_ranks, bytes),
        ("special_tokens", special_tokens, str),
    ):
        if not isinstance(value, Mapping):
            raise TypeError(f"{argument} must be a dict, not {type(value).__name__}")
        if not set(map(type, value)) <= {key_type}:
            key = next((key for key in value if not isinstance(key, key_type)), None)
            if key is not None:
                raise TypeError(
                    f"{argument} keys must be {key_type.__name__}, not {type(key).__name__} "
                    f"({short_repr(key)})"
                )
    count = len(mergeable_ranks) + len(special_tokens)
    check_ids(mergeable_ranks, f"{name}: mergeable_ranks token", count, distinct=True)
    check_ids(special_tokens, f"{name}: special token", count)
    _require_every_byte(mergeable_ranks, f"{name}: mergeable_ranks")


def _require_every_byte(mergeable: dict[bytes, int], what: str) -> None:
    """Byte-level BPE starts from single bytes: all 256 must be tokens."""
    missing = [b for b in range(256) if bytes([b]) not in mergeable]
    if missing:
        raise ValueError(
            f"{what} lacks single-byte tokens for {len(missing)} bytes "
            f"(first: {missing[0]:#04x}); byte-level BPE needs all 256"
        )


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise ValueError(f"{path}: corrupt gzip data ({error})") from None
    return data


def read_vocabulary_bytes(path: str | Path, *, expected_hash: str | None = None) -> bytes:
    """A vocabulary file's bytes, uncompressed if gzipped, checked against ``expected_hash``.

    Raises:
        ValueError: for corrupt gzip data, or a sha256 (of the uncompressed bytes) that differs
            from ``expected_hash``.
    """
    path = Path(path)
    data = _read_bytes(path)
    if expected_hash is not None and sha256_of(data) != expected_hash:
        raise ValueError(
            f"{path}: sha256 {sha256_of(data)} differs from the published {expected_hash}; "
            "the file is corrupt or not the vocabulary it claims to be"
        )
    return data


def read_tiktoken_file(path: str | Path, *, expected_hash: str | None = None) -> dict[bytes, int]:
    """Read ``base64-token rank`` lines (tiktoken's format; gzip is detected).

    Raises:
        ValueError: naming the file and line of a malformed line, a duplicate token or rank, a
            rank not below :func:`id_bound` of the file's token count, or a sha256 that differs
            from ``expected_hash`` (checked on the uncompressed bytes).
    """
    path = Path(path)
    data = read_vocabulary_bytes(path, expected_hash=expected_hash)
    lines = [line for line in data.splitlines() if line.strip()]
    try:  # the fast path; any problem is located line by line below
        ranks = {
            base64.b64decode(token, validate=True): int(rank)
            for token, rank in (line.split() for line in lines)
        }
        valid = len(ranks) == len(lines) == len(set(ranks.values())) and b"" not in ranks
        valid = valid and min(ranks.values(), default=0) >= 0
        valid = valid and max(ranks.values(), default=0) < id_bound(len(lines))
    except (binascii.Error, ValueError):
        valid = False
    if valid and ranks:
        return ranks
    _locate_error(path, data, len(lines))
    raise ValueError(f"{path}: no tokens found")


def _locate_error(path: Path, data: bytes, count: int) -> None:
    """Raise for the first malformed line of a tiktoken file of ``count`` tokens (if any)."""
    tokens: set[bytes] = set()
    seen_ranks: set[int] = set()
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 2:
            raise ValueError(f"{path}:{number}: expected 'base64-token rank', got {line[:60]!r}")
        try:
            token = base64.b64decode(fields[0], validate=True)
            rank = int(fields[1])
        except (binascii.Error, ValueError):
            raise ValueError(f"{path}:{number}: malformed token or rank in {line[:60]!r}") from None
        if not token or token in tokens:
            raise ValueError(f"{path}:{number}: empty or duplicate token {fields[0][:40]!r}")
        if rank < 0 or rank in seen_ranks:
            raise ValueError(f"{path}:{number}: negative or duplicate rank {short_repr(rank)}")
        if rank >= id_bound(count):
            raise ValueError(
                f"{path}:{number}: rank {short_repr(rank)} is too large; {id_bound_text(count)}"
            )
        tokens.add(token)
        seen_ranks.add(rank)
