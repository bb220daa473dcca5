"""``Encoding``: tiktoken's API over the batched, exact BPE encoder."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from collections.abc import Set as AbstractSet
from functools import cached_property
from pathlib import Path
from typing import Literal

import torch

from tensortext._checks import check_integer_tensor, check_shape, resolve_device
from tensortext.bpe.merge import (
    MergeTables,
    expand_spans,
    lookup_pieces,
    merge_pieces,
    merge_serial,
    merge_tokens,
)
from tensortext.bpe.merge_triton import MAX_PIECE_BYTES, merge_pieces_triton, triton_usable
from tensortext.bpe.pretokenize import PatternKind, piece_starts
from tensortext.bpe.text import (
    check_texts,
    special_regex,
    split_segments,
    to_codepoints,
    to_utf8,
    without_surrogates,
)
from tensortext.bpe.vocab import Vocab, read_hf_json, read_tiktoken_file
from tensortext.padded import PAD_ID, Padded

__all__ = ["Encoding"]

Pretokenize = Literal["regex", "bytes"]
MergeBackend = Literal["auto", "torch", "triton"]
# Parallel passes before a piece goes on with the sequential heap: a pass per distinct rank
# merged is cheap for words (a few passes) but not for a long run of random CJK (thousands).
MAX_PASSES = 64


class Encoding:
    """A byte-level BPE encoding with tiktoken's names and results, batched on tensors.

    Build one with :func:`tensortext.get_encoding`, :meth:`from_tiktoken_file`,
    :meth:`from_hf_json`, or tiktoken's constructor arguments.

    Example:
        >>> import tensortext
        >>> enc = tensortext.get_encoding("cl100k_base")
        >>> enc.encode("hello world")
        [15339, 1917]
        >>> ids, lengths = enc.encode_batch(["hello world", "hi"])
        >>> ids.tolist(), lengths.tolist()
        ([[15339, 1917], [6151, -1]], [2, 1])
        >>> enc.decode_batch(ids, lengths)
        ['hello world', 'hi']
    """

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ) -> None:
        self._vocab = Vocab.from_ranks(
            name, pat_str, mergeable_ranks, special_tokens, explicit_n_vocab=explicit_n_vocab
        )

    @classmethod
    def _from_vocab(cls, vocab: Vocab) -> Encoding:
        encoding = cls.__new__(cls)
        encoding._vocab = vocab
        return encoding

    @classmethod
    def from_tiktoken_file(
        cls,
        path: str | Path,
        *,
        pat_str: str,
        special_tokens: dict[str, int],
        name: str | None = None,
        expected_hash: str | None = None,
    ) -> Encoding:
        """An encoding from a tiktoken-format file (``base64-token rank`` lines, maybe gzipped).

        Args:
            path: e.g. openai-whisper's ``gpt2.tiktoken`` or Llama-3's ``tokenizer.model``.
            pat_str: the split regex; one of :data:`tensortext.bpe.PATTERNS` (or a kind name).
            special_tokens: text to ID.
            name: defaults to the file's stem.
            expected_hash: sha256 of the uncompressed file, checked if given.
        """
        ranks = read_tiktoken_file(path, expected_hash=expected_hash)
        return cls(
            name or Path(path).stem,
            pat_str=pat_str,
            mergeable_ranks=ranks,
            special_tokens=special_tokens,
        )

    @classmethod
    def from_hf_json(cls, path: str | Path) -> Encoding:
        """An encoding from a Hugging Face ``tokenizer.json`` with a byte-level BPE model.

        Added tokens become special tokens (pass ``allowed_special="all"`` to match HF, which
        always splits them out); HF's post-processor (e.g. a BOS) is not applied.
        """
        return cls._from_vocab(read_hf_json(path))

    # ------------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        return self._vocab.name

    @property
    def n_vocab(self) -> int:
        """One more than the largest token ID (tiktoken's ``n_vocab``)."""
        return self._vocab.n_vocab

    @property
    def max_token_value(self) -> int:
        return self._vocab.n_vocab - 1

    @property
    def special_tokens_set(self) -> set[str]:
        return set(self._vocab.special_tokens)

    @property
    def pattern_kind(self) -> PatternKind:
        return self._vocab.kind

    @property
    def eot_token(self) -> int:
        return self._vocab.special_tokens["<|endoftext|>"]

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    # ------------------------------------------------------------------ encoding
    def encode_ordinary(self, text: str, *, pretokenize: Pretokenize = "regex") -> list[int]:
        """Token IDs of ``text``, special-token text encoded as ordinary text."""
        return self.encode(text, disallowed_special=(), pretokenize=pretokenize)

    def encode(
        self,
        text: str,
        *,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
        pretokenize: Pretokenize = "regex",
    ) -> list[int]:
        """Token IDs of ``text``, identical to tiktoken's ``encode``.

        Args:
            text: the string (lone surrogates become U+FFFD, as in tiktoken).
            allowed_special: special tokens whose text is encoded as the special token.
            disallowed_special: special tokens whose text raises (``"all"``: all not allowed).
            pretokenize: ``"regex"`` (exact) or ``"bytes"`` (BlockBPE's byte-level split, for
                comparison only: its IDs differ from tiktoken's).

        Raises:
            ValueError: if ``text`` holds a disallowed special token, naming the keyword to pass.
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be str, got {type(text).__name__}")
        ids, lengths = self.encode_batch(
            [text],
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            pretokenize=pretokenize,
        )
        return ids[0, : int(lengths[0])].tolist()

    def encode_batch(
        self,
        texts: Sequence[str],
        *,
        device: torch.device | str | None = None,
        allowed_special: Literal["all"] | AbstractSet[str] = frozenset(),
        disallowed_special: Literal["all"] | Collection[str] = "all",
        pretokenize: Pretokenize = "regex",
        pad_id: int = PAD_ID,
        merge_backend: MergeBackend = "auto",
    ) -> Padded:
        """Encode a batch at once: split, look up and merge every text together on ``device``.

        Args:
            texts: ``B`` strings.
            device: where the work runs and the result lives: ``None`` (the CPU), ``"auto"``
                (CUDA when available) or a torch device.
            allowed_special, disallowed_special, pretokenize: as in :meth:`encode`.
            pad_id: fills ``ids`` past each length; -1 so that forgetting ``lengths`` fails
                loudly (ID 0 is a real token, ``!``).
            merge_backend: ``"auto"`` (the Triton kernel on CUDA when triton is installed, for
                pieces up to 64 bytes; torch otherwise), ``"torch"`` or ``"triton"``. All give
                the same IDs.

        Returns:
            :class:`~tensortext.padded.Padded` ``(ids [B, L], lengths [B])`` int64; row ``b``
            equals ``encode(texts[b])``, whatever else is in the batch.
        """
        texts = check_texts(texts, "texts")
        if pretokenize not in ("regex", "bytes"):
            raise ValueError(f"pretokenize must be 'regex' or 'bytes', got {pretokenize!r}")
        target = resolve_device(device)
        if merge_backend not in ("auto", "torch", "triton"):
            raise ValueError(
                f"merge_backend must be 'auto', 'torch' or 'triton', got {merge_backend!r}"
            )
        if merge_backend == "triton" and not triton_usable(target):
            raise ValueError(
                f"merge_backend='triton' needs the triton package and a CUDA device (or "
                f"TRITON_INTERPRET=1); got device {target}. Use merge_backend='auto'"
            )
        allowed = self._allowed(allowed_special)
        self._check_disallowed(texts, allowed, disallowed_special)
        texts = without_surrogates(texts)
        return self._encode(texts, allowed, target, pretokenize, pad_id, merge_backend)

    def _allowed(self, allowed_special: Literal["all"] | AbstractSet[str]) -> frozenset[str]:
        if allowed_special == "all":
            return frozenset(self._vocab.special_tokens)
        if isinstance(allowed_special, str) or not isinstance(
            allowed_special, AbstractSet | Collection
        ):
            raise TypeError("allowed_special must be 'all' or a set of special-token strings")
        unknown = set(allowed_special) - set(self._vocab.special_tokens)
        if unknown:
            raise ValueError(
                f"allowed_special has {sorted(unknown)!r}, which are not special tokens of "
                f"{self.name}; see enc.special_tokens_set"
            )
        return frozenset(allowed_special)

    def _check_disallowed(
        self,
        texts: list[str],
        allowed: frozenset[str],
        disallowed_special: Literal["all"] | Collection[str],
    ) -> None:
        if disallowed_special == "all":
            disallowed = frozenset(self._vocab.special_tokens) - allowed
        elif isinstance(disallowed_special, str):
            raise TypeError("disallowed_special must be 'all' or a collection of strings")
        else:
            disallowed = frozenset(disallowed_special)
        if not disallowed:
            return
        finder = special_regex(disallowed)
        if finder.search("\0".join(texts)) is None:  # one C-speed scan of the whole batch
            return
        for text in texts:
            match = finder.search(text)
            if match:
                token = match.group()
                raise ValueError(
                    f"text contains the special token {token!r}, which is disallowed. "
                    f"To encode it as the special token, pass allowed_special={{{token!r}}} "
                    "(or allowed_special='all'); to encode it as ordinary text, pass "
                    f"disallowed_special=(enc.special_tokens_set - {{{token!r}}}), or "
                    "disallowed_special=() to turn the check off for every special token."
                )

    def _encode(
        self,
        texts: list[str],
        allowed: frozenset[str],
        device: torch.device,
        pretokenize: Pretokenize,
        pad_id: int,
        merge_backend: MergeBackend,
    ) -> Padded:
        segments, special_list, owner_list = split_segments(
            texts, allowed, self._vocab.special_tokens
        )
        joined = "".join(segments)
        codepoints = to_codepoints(joined).to(device)
        data = to_utf8(joined).to(device)
        segment_lens = torch.tensor([len(seg) for seg in segments], dtype=torch.int64).to(device)
        segment_special = torch.tensor(special_list, dtype=torch.int64).to(device)
        text_of_segment = torch.tensor(owner_list, dtype=torch.int64).to(device)
        n = codepoints.numel()
        segment_of_cp = torch.repeat_interleave(
            torch.arange(segment_lens.numel(), device=device), segment_lens, output_size=n
        )
        kind: PatternKind = "bytes" if pretokenize == "bytes" else self._vocab.kind
        starts_mask = piece_starts(codepoints, segment_lens, kind)
        # A special token's segment is one piece, whatever the regex says.
        special_of_cp = segment_special[segment_of_cp]
        segment_first = torch.zeros_like(starts_mask)
        segment_first[(torch.cumsum(segment_lens, 0) - segment_lens)[segment_lens > 0]] = True
        starts_mask = torch.where(special_of_cp >= 0, segment_first, starts_mask)
        cp_bytes = (
            1
            + (codepoints >= 0x80).long()
            + (codepoints >= 0x800).long()
            + (codepoints >= 0x10000).long()
        )
        byte_start = torch.cumsum(cp_bytes, 0) - cp_bytes  # [n]
        piece_cp = starts_mask.nonzero().squeeze(1)
        piece_start = byte_start[piece_cp]
        piece_len = torch.diff(piece_start, append=piece_start.new_tensor([data.numel()]))
        out = torch.full((data.numel() + 1,), -1, dtype=torch.int64, device=device)
        special_of_piece = special_of_cp[piece_cp]
        ordinary = special_of_piece < 0
        out[piece_start[~ordinary]] = special_of_piece[~ordinary]
        # Whole-piece lookups, then merges for the rest.
        piece_start, piece_len = piece_start[ordinary], piece_len[ordinary]
        tables = self._vocab.tables(device)
        whole = lookup_pieces(data, piece_start, piece_len, tables)
        hit = whole >= 0
        out[piece_start[hit]] = whole[hit]
        rest_start, rest_len = piece_start[~hit], piece_len[~hit]
        irregular, unfinished = _merge(data, rest_start, rest_len, tables, out, merge_backend)
        if bool((irregular | unfinished).any()):  # rare: one sync, then host work
            self._merge_serially(data, rest_start, rest_len, irregular, unfinished, out)
        segment_bytes = torch.zeros(segment_lens.numel(), dtype=torch.int64, device=device)
        segment_bytes.index_add_(0, segment_of_cp, cp_bytes)
        text_bytes = torch.zeros(len(texts), dtype=torch.int64, device=device)
        text_bytes.index_add_(0, text_of_segment, segment_bytes)
        return _assemble(out[:-1], text_bytes, pad_id)

    def _merge_serially(
        self,
        data: torch.Tensor,
        starts: torch.Tensor,
        lens: torch.Tensor,
        irregular: torch.Tensor,
        unfinished: torch.Tensor,
        out: torch.Tensor,
    ) -> None:
        """The sequential merges, on the host: irregular pieces from their bytes, unfinished
        ones from the tokens the passes left in ``out``."""
        host = bytes(data.cpu().numpy()) if data.numel() else b""
        byte_ids = self._vocab.tables(torch.device("cpu")).byte_ids.tolist()
        pairs, vocab = self._vocab.pairs, self._vocab.tokens
        positions: list[int] = []
        values: list[int] = []
        for start, length in zip(starts[irregular].tolist(), lens[irregular].tolist(), strict=True):
            for token in merge_serial(host[start : start + length], byte_ids, pairs):
                positions.append(start)
                values.append(token)
                start += len(vocab[token] or b"")
        for start, length in zip(
            starts[unfinished].tolist(), lens[unfinished].tolist(), strict=True
        ):
            span = out[start : start + length]
            offsets = (span >= 0).nonzero().squeeze(1).tolist()
            tokens = span[offsets].tolist()
            span.fill_(-1)
            for index, token in merge_tokens(tokens, pairs):
                positions.append(start + offsets[index])
                values.append(token)
        if positions:
            out[torch.tensor(positions, device=out.device)] = torch.tensor(
                values, device=out.device
            )

    # ------------------------------------------------------------------ decoding
    def decode_bytes(self, tokens: Sequence[int] | torch.Tensor) -> bytes:
        """The bytes of ``tokens`` joined."""
        as_tensor = tokens if isinstance(tokens, torch.Tensor) else torch.as_tensor(list(tokens))
        if not len(as_tensor.reshape(-1)):
            return b""
        ids = self._check_ids(as_tensor.reshape(-1), "tokens")
        vocab = self._vocab.tokens
        return b"".join(vocab[token] or b"" for token in ids.tolist())

    def decode(self, tokens: Sequence[int] | torch.Tensor, errors: str = "replace") -> str:
        """The text of ``tokens`` (invalid UTF-8 becomes U+FFFD, as in tiktoken)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_batch(
        self, ids: torch.Tensor, lengths: torch.Tensor, *, errors: str = "replace"
    ) -> list[str]:
        """Decode each row ``ids[b, :lengths[b]]`` (``ids [B, L]``, ``lengths [B]``).

        Raises:
            TypeError: ``ids`` or ``lengths`` is not an integer tensor.
            ValueError: wrong shapes, a length outside ``0..L``, or an ID that is no token.
        """
        check_integer_tensor("ids", ids, shape="[B, L] (use decode for one list of IDs)")
        check_shape("ids", ids, [None, None], "[B, L] (use decode for one list of IDs)")
        check_integer_tensor("lengths", lengths, shape=f"[{ids.shape[0]}]")
        check_shape("lengths", lengths, [ids.shape[0]], f"[B] = [{ids.shape[0]}]")
        lengths = lengths.to(ids.device, torch.int64)
        if bool(((lengths < 0) | (lengths > ids.shape[1])).any()):
            raise ValueError(f"lengths must lie in [0, {ids.shape[1]}]")
        valid = torch.arange(ids.shape[1], device=ids.device) < lengths[:, None]
        flat = self._check_ids(ids[valid], "ids")
        tables = self._vocab.tables(torch.device("cpu"))
        flat = flat.cpu()
        token_lens = tables.token_offsets[flat + 1] - tables.token_offsets[flat]
        token, offset = expand_spans(token_lens)
        data = tables.token_bytes[tables.token_offsets[flat][token] + offset]
        row_bytes = torch.zeros(ids.shape[0], dtype=torch.int64).index_add_(
            0, valid.nonzero()[:, 0].cpu(), token_lens
        )
        blob = bytes(data.numpy())
        bounds = [0, *torch.cumsum(row_bytes, 0).tolist()]
        return [blob[a:b].decode("utf-8", errors=errors) for a, b in itertools.pairwise(bounds)]

    def _check_ids(self, ids: torch.Tensor, name: str) -> torch.Tensor:
        if ids.dtype.is_floating_point or ids.dtype == torch.bool:
            raise TypeError(f"{name} must be integer token IDs, got {ids.dtype}")
        ids = ids.long()
        bad = (ids < 0) | (ids >= self.n_vocab)
        if not bool(bad.any()):
            bad = ~self._known[ids.cpu()].to(ids.device)
        if bool(bad.any()):
            first = int(ids[bad][0])
            raise ValueError(
                f"{name} holds {first}, which is not a token of {self.name} "
                f"(n_vocab {self.n_vocab})"
            )
        return ids

    @cached_property
    def _known(self) -> torch.Tensor:
        return torch.tensor([token is not None for token in self._vocab.tokens])


def _merge(
    data: torch.Tensor,
    starts: torch.Tensor,
    lens: torch.Tensor,
    tables: MergeTables,
    out: torch.Tensor,
    backend: MergeBackend,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge with the chosen backend; returns the ``[P]`` bool masks of the pieces the
    sequential merges must do (irregular) or finish (unfinished after ``MAX_PASSES``)."""
    use_triton = backend == "triton" or (
        backend == "auto" and data.device.type == "cuda" and triton_usable(data.device)
    )
    unfinished = torch.zeros(starts.numel(), dtype=torch.bool, device=data.device)
    if not use_triton:
        irregular = merge_pieces(
            data, starts, lens, tables, out, max_passes=MAX_PASSES, unfinished=unfinished
        )
        return irregular, unfinished
    short = lens <= MAX_PIECE_BYTES  # at most MAX_PIECE_BYTES - 1 passes: never unfinished
    irregular = torch.zeros_like(short)
    irregular[short] = merge_pieces_triton(data, starts[short], lens[short], tables, out)
    long_unfinished = torch.zeros(int((~short).sum()), dtype=torch.bool, device=data.device)
    irregular[~short] = merge_pieces(
        data,
        starts[~short],
        lens[~short],
        tables,
        out,
        max_passes=MAX_PASSES,
        unfinished=long_unfinished,
    )
    unfinished[~short] = long_unfinished
    return irregular, unfinished


def _assemble(token_at_byte: torch.Tensor, text_bytes: torch.Tensor, pad_id: int) -> Padded:
    """Tokens written at their first byte -> padded ``ids [B, L]`` and ``lengths [B]``."""
    device = token_at_byte.device
    positions = (token_at_byte >= 0).nonzero().squeeze(1)
    ids = token_at_byte[positions]
    text_ends = torch.cumsum(text_bytes, 0)
    text_of_token = torch.searchsorted(text_ends, positions, right=True)
    lengths = torch.bincount(text_of_token, minlength=text_bytes.numel())
    width = int(lengths.max()) if lengths.numel() else 0
    padded = torch.full((text_bytes.numel(), width), pad_id, dtype=torch.int64, device=device)
    column = (
        torch.arange(ids.numel(), device=device)
        - (torch.cumsum(lengths, 0) - lengths)[text_of_token]
    )
    padded[text_of_token, column] = ids
    return Padded(padded, lengths)
