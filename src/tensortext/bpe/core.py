"""``Encoding``: tiktoken's API, name for name, over the batched exact BPE encoder, plus tensor
variants under their own names (``encode_to_tensor``, ``encode_batch_to_tensor``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from tensortext.bpe import parallel, unstable
from tensortext.bpe.decoding import decode_padded, token_bytes
from tensortext.bpe.engine import Segments, encode_flat, piece_texts
from tensortext.bpe.hf_json import read_hf_json
from tensortext.bpe.host import HostEncoder
from tensortext.bpe.merge import merge_serial
from tensortext.bpe.native import threaded_encoder
from tensortext.bpe.pretokenize import PatternKind
from tensortext.bpe.tensor_api import TensorMethods
from tensortext.bpe.text import (
    AllowedSpecial,
    DisallowedSpecial,
    allowed_set,
    as_bytes,
    check_disallowed,
    check_num_threads,
    check_text,
    check_texts,
    prepare_segments,
)
from tensortext.bpe.vocab import Vocab, read_tiktoken_file
from tensortext.padded import Flat, Padded

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Encoding"]


class Encoding(TensorMethods):
    """A byte-level BPE encoding: tiktoken's ``Encoding``, same methods and results, batched
    on tensors underneath.

    Build one with :func:`tensortext.get_encoding`, :meth:`from_tiktoken_file`,
    :meth:`from_hf_json`, or tiktoken's constructor arguments.

    Example:
        >>> import tensortext
        >>> enc = tensortext.get_encoding("cl100k_base")
        >>> enc.encode("hello world")
        [15339, 1917]
        >>> enc.encode_batch(["hello world", "hi"])
        [[15339, 1917], [6151]]
        >>> ids, lengths = enc.encode_batch_to_tensor(["hello world", "hi"])
        >>> ids.tolist(), lengths.tolist()
        ([[15339, 1917], [6151, -1]], [2, 1])
        >>> enc.decode_batch(tensortext.Padded(ids, lengths))
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
        self._pat_str = pat_str

    @classmethod
    def _from_vocab(cls, vocab: Vocab, pat_str: str | None = None) -> Encoding:
        encoding = cls.__new__(cls)
        encoding._vocab = vocab
        encoding._pat_str = vocab.kind if pat_str is None else pat_str
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
    def from_hf_json(cls, source: str | Path | Any) -> Encoding:
        """An encoding from a Hugging Face byte-level BPE tokenizer.

        Args:
            source: a ``tokenizer.json`` path, a directory holding one, a ``tokenizers.Tokenizer``
                or a ``transformers`` ``PreTrainedTokenizerFast``.

        Added tokens become special tokens (pass ``allowed_special="all"`` to split them out as
        HF always does). The normalizer and ``add_prefix_space`` always apply; the
        post-processor's tokens (e.g. a BOS) are added by the tensor methods when called with
        ``add_special_tokens=True`` (HF's default; tiktoken's names never add them).
        """
        return cls._from_vocab(read_hf_json(source))

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
    def eot_token(self) -> int:
        return self._vocab.special_tokens["<|endoftext|>"]

    @cached_property
    def special_tokens_set(self) -> set[str]:
        return set(self._vocab.special_tokens)

    @property
    def pattern_kind(self) -> PatternKind:
        """The split rules this encoding's pattern maps to (``"cl100k"``, ``"o200k"``, ...)."""
        return self._vocab.kind

    @property
    def _mergeable_ranks(self) -> dict[bytes, int]:
        return self._vocab.mergeable

    @property
    def _special_tokens(self) -> dict[str, int]:
        return self._vocab.special_tokens

    def __repr__(self) -> str:
        return f"<Encoding {self.name!r}>"

    def __reduce__(self) -> tuple[Any, ...]:
        """Registered encodings pickle by name (a few bytes); others pickle their vocabulary."""
        from tensortext.bpe import registry

        if registry.is_registered(self):
            return (registry.get_encoding, (self.name,))
        return (Encoding._from_vocab, (self._vocab, self._pat_str))

    # ------------------------------------------------------------------ tiktoken: encoding
    def encode_ordinary(self, text: str) -> list[int]:
        """Token IDs of ``text``, special-token text encoded as ordinary text."""
        return self.encode(text, disallowed_special=())

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[int]:
        """Token IDs of ``text``, identical to tiktoken's ``encode``.

        Args:
            text: the string (lone surrogates become U+FFFD, as in tiktoken).
            allowed_special: special tokens whose text is encoded as the special token.
            disallowed_special: special tokens whose text raises (``"all"``: all not allowed).

        Raises:
            ValueError: if ``text`` holds a disallowed special token, naming the keyword to pass;
                with the C host encoder, for a segment (the text, or a part between allowed
                special tokens) over :data:`~tensortext.bpe.native.MAX_SEGMENT_CHARS`
                (2**30 - 2) characters.
        """
        return self._encode_lists([check_text(text)], allowed_special, disallowed_special)[0]

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> npt.NDArray[np.uint32]:
        """:meth:`encode` as a numpy ``uint32`` array."""
        import numpy as np

        tokens = self.encode_to_tensor(
            text, allowed_special=allowed_special, disallowed_special=disallowed_special
        )
        return tokens.numpy().astype(np.uint32)

    def encode_ordinary_batch(
        self, text: Iterable[str], *, num_threads: int = 8
    ) -> list[list[int]]:
        """:meth:`encode_ordinary` of every text, in one batched call (the arguments and
        errors are :meth:`encode_batch`'s)."""
        return self.encode_batch(text, num_threads=num_threads, disallowed_special=())

    def encode_batch(
        self,
        text: Iterable[str],
        *,
        num_threads: int = 8,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> list[list[int]]:
        """:meth:`encode` of every text, as tiktoken's ``encode_batch``.

        Args:
            text: the texts, in any ordered iterable, as tiktoken takes them (a list, a tuple,
                a pandas Series, a numpy string array, a generator).
            num_threads: from 64K characters, up to this many threads (the C host encoder,
                :mod:`tensortext.bpe.native`; without it, from 1 MB, worker processes,
                :mod:`tensortext.bpe.parallel`); 1: none (``True`` counts as 1, as there).
            allowed_special, disallowed_special: as in :meth:`encode`.

        Raises:
            TypeError: for ``text`` that is a str, a set or a mapping, or holds a non-str.
            ValueError: as :meth:`encode` (a disallowed special token; with the C host
                encoder, a segment over 2**30 - 2 characters).
        """
        threads = check_num_threads(num_threads)
        texts = check_texts(text, "text")
        return self._encode_lists(texts, allowed_special, disallowed_special, threads)

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """Stable tokens of ``text`` and every token sequence its unstable end could become
        when more text follows (as tiktoken; the completions come sorted)."""
        allowed = allowed_set(self._vocab, allowed_special)
        check_disallowed(self._vocab, [check_text(text)], allowed, disallowed_special)
        return unstable.encode_with_unstable(self, text, allowed)

    def encode_single_token(self, text_or_bytes: str | bytes) -> int:
        """The ID of the one token (ordinary or special) whose text or bytes this is.

        Raises:
            KeyError: if no single token has these bytes.
        """
        data = as_bytes(text_or_bytes, "text_or_bytes")
        token = self._vocab.mergeable.get(data)
        if token is None:
            special = data.decode("utf-8", errors="replace")
            token = self._vocab.special_tokens.get(special)
            if token is None or special.encode("utf-8") != data:
                raise KeyError(data)
        return token

    # ------------------------------------------------------------------ tiktoken: decoding
    def decode_bytes(self, tokens: Sequence[int] | torch.Tensor) -> bytes:
        """The bytes of ``tokens`` joined.

        Raises:
            KeyError: (a :class:`~tensortext.bpe.UnknownTokenError`, also a ``ValueError``) for
                an ID that is no token.
        """
        return b"".join(token_bytes(self._vocab, tokens, "tokens"))

    def decode(self, tokens: Sequence[int] | torch.Tensor, errors: str = "replace") -> str:
        """The text of ``tokens`` (invalid UTF-8 becomes U+FFFD unless ``errors`` says else)."""
        return self.decode_bytes(tokens).decode("utf-8", errors=errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (a special token's text for a special ID); ``KeyError`` if
        ``token`` is no token."""
        return token_bytes(self._vocab, [token], "token")[0]

    def decode_tokens_bytes(self, tokens: Sequence[int] | torch.Tensor) -> list[bytes]:
        """The bytes of each token."""
        return token_bytes(self._vocab, tokens, "tokens")

    def decode_with_offsets(self, tokens: Sequence[int] | torch.Tensor) -> tuple[str, list[int]]:
        """The text and, per token, the index of the first character holding its bytes.

        Raises:
            UnicodeDecodeError: if the tokens do not decode to valid UTF-8 (as tiktoken).
        """
        parts = token_bytes(self._vocab, tokens, "tokens")
        offsets: list[int] = []
        chars = 0
        for part in parts:  # a token that starts mid-character belongs to that character
            offsets.append(max(0, chars - (0x80 <= part[0] < 0xC0)))
            chars += sum(1 for byte in part if not 0x80 <= byte < 0xC0)
        return b"".join(parts).decode("utf-8", errors="strict"), offsets

    def decode_batch(
        self,
        batch: Sequence[Sequence[int]] | Padded | torch.Tensor,
        *,
        errors: str = "replace",
        num_threads: int = 8,
    ) -> list[str]:
        """Decode each row: lists of IDs (tiktoken's), a :class:`Padded` batch (each row cut at
        its length) or an ``[B, L]`` tensor of full rows."""
        return [data.decode("utf-8", errors=errors) for data in self.decode_bytes_batch(batch)]

    def decode_bytes_batch(
        self, batch: Sequence[Sequence[int]] | Padded | torch.Tensor, *, num_threads: int = 8
    ) -> list[bytes]:
        """:meth:`decode_bytes` of each row (the batch as in :meth:`decode_batch`)."""
        check_num_threads(num_threads)
        if isinstance(batch, Padded):
            return decode_padded(self._vocab, batch)
        if isinstance(batch, torch.Tensor):
            if batch.dim() != 2:
                raise ValueError(f"batch must be [B, L], got shape {list(batch.shape)}")
            full = torch.full((batch.shape[0],), batch.shape[1], dtype=torch.int64)
            return decode_padded(self._vocab, Padded(batch, full))
        if isinstance(batch, str | bytes) or not isinstance(batch, Sequence):
            raise TypeError(f"batch must be a list of token lists, got {type(batch).__name__}")
        return [b"".join(token_bytes(self._vocab, row, "batch[i]")) for row in batch]

    # ------------------------------------------------------------------ tiktoken: the rest
    def token_byte_values(self) -> list[bytes]:
        """Every ordinary token's bytes, sorted."""
        return list(self._sorted_token_bytes)

    def is_special_token(self, token: int) -> bool:
        if not isinstance(token, int):
            raise TypeError(f"token must be an int, got {type(token).__name__}")
        return token in self._special_ids

    def _encode_single_piece(self, text_or_bytes: str | bytes) -> list[int]:
        """BPE of the bytes as one piece (no regex split, no special tokens)."""
        data = as_bytes(text_or_bytes, "text_or_bytes")
        whole = self._vocab.mergeable.get(data)
        return [whole] if whole is not None else self._byte_pair_encode(data)

    def _encode_only_native_bpe(self, text: str) -> list[int]:
        """:meth:`encode_ordinary`, one piece at a time on the host (a slow reference)."""
        pieces = [
            piece
            for segment in prepare_segments(self._vocab, [check_text(text)], frozenset())[0]
            for piece in piece_texts(segment, self._vocab.kind)
        ]
        return [token for piece in pieces for token in self._encode_single_piece(piece)]

    def _encode_bytes(self, text: bytes) -> list[int]:
        """Tokens of bytes that may be invalid UTF-8 (tiktoken's private helper)."""
        return unstable.encode_bytes(self, as_bytes(text, "text"))

    # ------------------------------------------------------------------ internals
    @cached_property
    def _host(self) -> HostEncoder:
        return HostEncoder(self._vocab)

    @cached_property
    def _sorted_token_bytes(self) -> list[bytes]:
        return sorted(self._vocab.mergeable)

    @cached_property
    def _special_ids(self) -> frozenset[int]:
        return frozenset(self._vocab.special_tokens.values())

    @cached_property
    def _ordinary_ids(self) -> frozenset[int]:
        return frozenset(self._vocab.mergeable.values())

    def _is_ordinary(self, token: int) -> bool:
        return token in self._ordinary_ids

    def _byte_pair_encode(self, data: bytes) -> list[int]:
        return merge_serial(data, self._vocab.byte_ids, self._vocab.pairs)

    def _encode_lists(
        self,
        texts: list[str],
        allowed_special: AllowedSpecial,
        disallowed_special: DisallowedSpecial,
        num_threads: int = 1,
    ) -> list[list[int]]:
        allowed = allowed_set(self._vocab, allowed_special)
        check_disallowed(self._vocab, texts, allowed, disallowed_special)
        segments = prepare_segments(self._vocab, texts, allowed)
        return self._rows(segments, len(texts), num_threads)

    def _rows(self, segments: Segments, n_texts: int, num_threads: int = 1) -> list[list[int]]:
        """The tokens of each of ``n_texts`` texts given as segments, encoded on the CPU (by
        the host encoder where it applies: the same IDs, without tensor passes). With
        ``num_threads`` > 1, a large call runs on threads (the C encoder) or worker processes
        (the Python one)."""
        host = self._host
        if host.native is not None:
            return host.rows(segments, n_texts, threaded_encoder(host.native, num_threads))
        if host.usable:
            workers = parallel.worker_count(num_threads, segments[0])
            pool = parallel.pool_encoder(self, workers) if workers > 1 else None
            return host.rows(segments, n_texts, pool)
        tokens, lengths = encode_flat(
            self._vocab, segments, n_texts, torch.device("cpu"), self._vocab.kind
        )
        return Flat(tokens, lengths).tolist()

    def _shutdown_workers(self) -> None:
        """Stop :meth:`encode_batch`'s worker processes, if any (they end with the interpreter)."""
        parallel.shutdown_workers(self)

    def _encode_last_piece(self, text: str, allowed: frozenset[str]) -> tuple[list[int], int]:
        """``encode`` (no disallowed check) and how many tokens its last regex piece gave
        (0 when the text ends with a special token or is empty)."""
        segments = prepare_segments(self._vocab, [text], allowed)
        tokens = self._rows(segments, 1)[0]
        last, special = segments[0][-1], segments[1][-1]
        pieces = piece_texts(last, self._vocab.kind) if special < 0 else []
        return tokens, len(self._encode_single_piece(pieces[-1])) if pieces else 0
