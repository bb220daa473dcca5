"""Vocabulary files: tiktoken's format (plain or gzip), Hugging Face ``tokenizer.json``, sha256.

A vocabulary becomes :class:`Vocab`: every token's bytes, its rank, and the pair table that the
merges look up (``(left, right) -> (rank, merged)``).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from tensortext.bpe.merge import MergeTables, hash_powers, piece_keys
from tensortext.bpe.pretokenize import PatternKind, pattern_kind

__all__ = ["Vocab", "bytes_to_unicode", "read_hf_json", "read_tiktoken_file", "sha256_of"]


@dataclass
class Vocab:
    """A byte-level BPE vocabulary.

    ``tokens[i]`` is the bytes of token ``i`` (``None`` for an unused ID); ``pairs`` maps
    ``(left_id, right_id)`` to ``(rank, merged_id)``; ``special_tokens`` maps text to ID.
    """

    name: str
    kind: PatternKind
    tokens: list[bytes | None]
    mergeable: dict[bytes, int]
    pairs: dict[tuple[int, int], tuple[int, int]]
    special_tokens: dict[str, int]
    whole_piece_lookup: bool = True
    _tables: dict[str, MergeTables] = field(default_factory=dict, repr=False)

    @property
    def n_vocab(self) -> int:
        return len(self.tokens)

    def tables(self, device: torch.device) -> MergeTables:
        """The merge tables on ``device`` (built once, then cached per device)."""
        key = str(device)
        if key not in self._tables:
            cpu = self._tables.get("cpu") or self._build_tables()
            self._tables["cpu"] = cpu
            self._tables[key] = cpu.to(device)
        return self._tables[key]

    def _build_tables(self) -> MergeTables:
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
        byte_ids = torch.tensor([self.mergeable[bytes([b])] for b in range(256)], dtype=torch.int64)
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
        """A tiktoken vocabulary: rank = token ID; ``(a, b)`` merges if ``a + b`` is a token."""
        kind = pattern_kind(pat_str)
        _require_every_byte(mergeable_ranks, f"{name}: mergeable_ranks")
        size = max([*mergeable_ranks.values(), *special_tokens.values()]) + 1
        if explicit_n_vocab is not None and explicit_n_vocab != size:
            raise ValueError(f"{name}: explicit_n_vocab={explicit_n_vocab} but the IDs need {size}")
        tokens: list[bytes | None] = [None] * size
        for token, rank in mergeable_ranks.items():
            tokens[rank] = token
        for text, token_id in special_tokens.items():
            if tokens[token_id] is not None:
                raise ValueError(f"{name}: special token {text!r} reuses ID {token_id}")
            tokens[token_id] = text.encode("utf-8")
        pairs: dict[tuple[int, int], tuple[int, int]] = {}
        get = mergeable_ranks.get
        for token, rank in mergeable_ranks.items():
            for cut in range(1, len(token)):
                left, right = get(token[:cut]), get(token[cut:])
                if left is not None and right is not None:
                    pairs[(left, right)] = (rank, rank)
        return cls(name, kind, tokens, dict(mergeable_ranks), pairs, dict(special_tokens))


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


def read_tiktoken_file(path: str | Path, *, expected_hash: str | None = None) -> dict[bytes, int]:
    """Read ``base64-token rank`` lines (tiktoken's format; gzip is detected).

    Raises:
        ValueError: naming the file and line of a malformed line, a duplicate token or rank,
            or a sha256 that differs from ``expected_hash`` (checked on the uncompressed bytes).
    """
    path = Path(path)
    data = _read_bytes(path)
    if expected_hash is not None and sha256_of(data) != expected_hash:
        raise ValueError(
            f"{path}: sha256 {sha256_of(data)} differs from the published {expected_hash}; "
            "the file is corrupt or not the vocabulary it claims to be"
        )
    lines = [line for line in data.splitlines() if line.strip()]
    try:  # the fast path; any problem is located line by line below
        ranks = {
            base64.b64decode(token, validate=True): int(rank)
            for token, rank in (line.split() for line in lines)
        }
        valid = len(ranks) == len(lines) == len(set(ranks.values())) and b"" not in ranks
        valid = valid and min(ranks.values(), default=0) >= 0
    except (binascii.Error, ValueError):
        valid = False
    if valid and ranks:
        return ranks
    _locate_error(path, data)
    raise ValueError(f"{path}: no tokens found")


def _locate_error(path: Path, data: bytes) -> None:
    """Raise for the first malformed line of a tiktoken file (if there is one)."""
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
            raise ValueError(f"{path}:{number}: negative or duplicate rank {rank}")
        tokens.add(token)
        seen_ranks.add(rank)


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


def _pattern_of(pre_tokenizer: dict[str, object] | None, path: Path) -> str:
    """The split regex of a byte-level pre-tokenizer (GPT-2 ``ByteLevel`` or ``Split`` + it)."""
    if pre_tokenizer is None:
        raise ValueError(f"{path}: pre_tokenizer is null; tensortext needs a byte-level one")
    kind = pre_tokenizer.get("type")
    if kind == "ByteLevel":
        if pre_tokenizer.get("add_prefix_space"):
            raise ValueError(f"{path}: ByteLevel add_prefix_space=true is not supported")
        if not pre_tokenizer.get("use_regex", True):
            return "bytes"
        from tensortext.bpe.pretokenize import GPT2_PATTERN

        return GPT2_PATTERN
    if kind == "Sequence":
        steps = pre_tokenizer.get("pretokenizers")
        if (
            isinstance(steps, list)
            and len(steps) == 2
            and steps[0].get("type") == "Split"
            and steps[0].get("behavior") == "Isolated"
            and not steps[0].get("invert")
            and steps[1].get("type") == "ByteLevel"
            and not steps[1].get("use_regex", True)
            and not steps[1].get("add_prefix_space")
        ):
            pattern = steps[0].get("pattern", {})
            if isinstance(pattern, dict) and "Regex" in pattern:
                return str(pattern["Regex"])
    raise ValueError(
        f"{path}: unsupported pre_tokenizer {json.dumps(pre_tokenizer)[:120]}; tensortext reads "
        "ByteLevel, or Sequence[Split(Regex, Isolated), ByteLevel(use_regex=false)]"
    )


def read_hf_json(path: str | Path) -> Vocab:
    """A Hugging Face ``tokenizer.json`` whose model is byte-level BPE.

    Merge ranks are the order of ``model.merges``; added tokens become special tokens.
    Raises ``ValueError`` naming the file (and the setting) for anything else.
    """
    path = Path(path)
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: not a JSON tokenizer file ({error})") from None
    model = _supported_model(spec, path)
    pat_str = _pattern_of(spec.get("pre_tokenizer"), path)
    try:
        kind = pattern_kind(pat_str, engine="hf")
    except ValueError as error:
        raise ValueError(f"{path}: pre_tokenizer: {error}") from None
    char_to_byte = {char: byte for byte, char in bytes_to_unicode().items()}

    def to_bytes(text: str) -> bytes:
        try:
            return bytes(char_to_byte[char] for char in text)
        except KeyError as error:
            raise ValueError(
                f"{path}: token {text!r} is not byte-level BPE (char {error})"
            ) from None

    vocab: dict[str, int] = model.get("vocab") or {}
    size = max([*vocab.values(), *(t["id"] for t in spec.get("added_tokens") or [])]) + 1
    tokens: list[bytes | None] = [None] * size
    mergeable: dict[bytes, int] = {}
    for text, token_id in vocab.items():
        tokens[token_id] = to_bytes(text)
        mergeable[tokens[token_id]] = token_id  # type: ignore[index]
    pairs = _merge_pairs(model.get("merges") or [], vocab, path)
    special: dict[str, int] = {}
    for added in spec.get("added_tokens") or []:
        special[added["content"]] = added["id"]
        if tokens[added["id"]] is None:
            tokens[added["id"]] = added["content"].encode("utf-8")
    _require_every_byte(mergeable, f"{path}: the vocabulary")
    return Vocab(
        name=path.stem,
        kind=kind,
        tokens=tokens,
        mergeable=mergeable,
        pairs=pairs,
        special_tokens=special,
        whole_piece_lookup=bool(model.get("ignore_merges", False)),
    )


def _supported_model(spec: dict[str, Any], path: Path) -> dict[str, Any]:
    """``spec["model"]`` if it is a byte-level BPE this encoder reproduces; else a ValueError."""
    model: dict[str, Any] = spec.get("model") or {}
    if model.get("type") != "BPE":
        raise ValueError(f"{path}: model.type is {model.get('type')!r}; only 'BPE' is supported")
    for setting in ("dropout", "continuing_subword_prefix", "end_of_word_suffix"):
        if model.get(setting):
            raise ValueError(f"{path}: model.{setting}={model[setting]!r} is not supported")
    if model.get("byte_fallback"):
        raise ValueError(f"{path}: model.byte_fallback=true (SentencePiece-style) is not supported")
    if spec.get("normalizer") is not None:
        raise ValueError(f"{path}: a normalizer is set; tensortext supports normalizer=null only")
    return model


def _merge_pairs(
    merges: list[Any], vocab: dict[str, int], path: Path
) -> dict[tuple[int, int], tuple[int, int]]:
    """``(left, right) -> (rank, merged)`` from HF's merge list (rank = position; first wins)."""
    pairs: dict[tuple[int, int], tuple[int, int]] = {}
    for rank, merge in enumerate(merges):
        parts = merge.split(" ") if isinstance(merge, str) else list(merge)
        if (
            len(parts) != 2
            or any(part not in vocab for part in parts)
            or "".join(parts) not in vocab
        ):
            raise ValueError(f"{path}: merge {rank} {merge!r} is not two vocabulary tokens")
        key = (vocab[parts[0]], vocab[parts[1]])
        if key not in pairs:
            pairs[key] = (rank, vocab["".join(parts)])
    return pairs
