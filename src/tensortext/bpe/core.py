"""``Encoding``: tiktoken's API, name for name, plus tensor variants under their own names
(``encode_to_tensor``, ``encode_batch_to_tensor``). Each method checks its arguments, prepares
the texts (:func:`~tensortext.bpe.text.prepare_segments`) and hands them to the backend that
:mod:`tensortext.bpe.backends` chooses."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from tensortext.bpe import native, unstable
from tensortext.bpe.backends import Backends, CBackend
from tensortext.bpe.decoding import DecodeMethods
from tensortext.bpe.files import FileReaders
from tensortext.bpe.patterns import PatternKind
from tensortext.bpe.post_processor import add_affixes, add_affixes_flat, post_processor_affixes
from tensortext.bpe.serial import char_parts, merge_serial, merge_tokens
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
    sentencepiece_text,
    special_regex,
    without_surrogates,
)
from tensortext.padded import FlatArrays

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["Encoding"]


class Encoding(FileReaders, DecodeMethods, TensorMethods):
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

    _pickle_as: tuple[Callable[[str], Encoding], str] | None = None
    """``(get_encoding, name)`` on the encodings the registry shares, which pickle by name."""

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
        """``<|endoftext|>``'s ID (a SentencePiece model's EOS); ``KeyError`` if none."""
        eot = self._vocab.eot_id
        return self._vocab.special_tokens["<|endoftext|>"] if eot is None else eot

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
        if self._pickle_as is not None:
            get_encoding, name = self._pickle_as
            return (get_encoding, (name,))
        return (Encoding._from_vocab, (self._vocab, self._pat_str))

    # ------------------------------------------------------------------ tiktoken: encoding
    def encode_ordinary(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        """Token IDs of ``text``, special-token text encoded as ordinary text
        (``add_special_tokens`` as in :meth:`encode`)."""
        return self.encode(text, disallowed_special=(), add_special_tokens=add_special_tokens)

    def encode(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> list[int]:
        """Token IDs of ``text``, identical to tiktoken's ``encode``.

        Args:
            text: the string (lone surrogates become U+FFFD, as in tiktoken).
            allowed_special: special tokens whose text is encoded as the special token.
            disallowed_special: special tokens whose text raises (``"all"``: all not allowed).
            add_special_tokens: put the post-processor's tokens (e.g. a BOS) of an encoding
                from :meth:`from_hf_json` around the text; the default is tiktoken's, none. HF's
                ``tokenizer.encode`` defaults to True: pass ``add_special_tokens=True`` for its
                IDs (with ``allowed_special="all"``: HF always splits out its added tokens).

        Raises:
            TypeError: for an ``add_special_tokens`` that is no bool.
            ValueError: if ``text`` holds a disallowed special token, naming the keyword to pass;
                with the C encoder, for a segment (the text, or a part between allowed
                special tokens) over :data:`~tensortext.bpe.native.MAX_SEGMENT_CHARS`
                (2**30 - 2) characters; for ``add_special_tokens=True`` on an encoding not read
                from a ``tokenizer.json`` (it has no post-processor).
        """
        if (
            add_special_tokens is False
            and type(text) is str
            and allowed_special == frozenset()
            and len(text) <= native.MAX_SEGMENT_CHARS
            and (text.isascii() or without_surrogates([text])[0] is text)
            and (
                disallowed_special == ()
                or (
                    disallowed_special == "all"
                    and (self._special_finder is None or not self._special_finder.search(text))
                )
            )
            and self._one_text is not None  # last: it builds the backend
        ):  # one ordinary str, as most calls are: straight to the C encoder
            return self._one_text([text])[0]
        prefix, suffix = post_processor_affixes(self._vocab, add_special_tokens, self.name)
        row = self._encode_lists([check_text(text)], allowed_special, disallowed_special)[0]
        return add_affixes([row], prefix, suffix)[0]

    def encode_to_numpy(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> npt.NDArray[np.uint32]:
        """:meth:`encode` as a numpy ``uint32`` array (tiktoken's; no torch needed)."""
        affixes = post_processor_affixes(self._vocab, add_special_tokens, self.name)
        arrays = self._encode_arrays([check_text(text)], allowed_special, disallowed_special)
        return add_affixes_flat(*arrays, *affixes)[0]

    def encode_batch_to_numpy(
        self,
        text: Iterable[str],
        *,
        num_threads: int = 8,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> FlatArrays:
        """:meth:`encode_batch` as flat numpy arrays, without a Python list per text: the
        layout of :class:`~tensortext.padded.Flat`, for writing shards (no torch needed).

        Returns:
            :class:`~tensortext.padded.FlatArrays` ``(ids [T] uint32, lengths [B] int64)``:
            text ``b``'s tokens follow text ``b - 1``'s,
            ``ids[sum(lengths[:b]):][:lengths[b]] == encode(text[b])``.

        Example:
            >>> import tensortext
            >>> ids, lengths = tensortext.get_encoding("cl100k_base").encode_batch_to_numpy(
            ...     ["hello world", "hi"]
            ... )
            >>> ids.tolist(), lengths.tolist()
            ([15339, 1917, 6151], [2, 1])
        """
        threads = check_num_threads(num_threads)
        affixes = post_processor_affixes(self._vocab, add_special_tokens, self.name)
        texts = check_texts(text, "text")
        arrays = self._encode_arrays(texts, allowed_special, disallowed_special, threads)
        return FlatArrays(*add_affixes_flat(*arrays, *affixes))

    def encode_ordinary_batch(
        self, text: Iterable[str], *, num_threads: int = 8, add_special_tokens: bool = False
    ) -> list[list[int]]:
        """:meth:`encode_ordinary` of every text, in one batched call (the arguments and
        errors are :meth:`encode_batch`'s)."""
        return self.encode_batch(
            text,
            num_threads=num_threads,
            disallowed_special=(),
            add_special_tokens=add_special_tokens,
        )

    def encode_batch(
        self,
        text: Iterable[str],
        *,
        num_threads: int = 8,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> list[list[int]]:
        """:meth:`encode` of every text, as tiktoken's ``encode_batch``.

        Args:
            text: the texts, in any ordered iterable, as tiktoken takes them (a list, a tuple,
                a pandas Series, a numpy string array, a generator).
            num_threads: from 64K characters, up to this many threads (the C encoder,
                :mod:`tensortext.bpe.native`; the Python one instead runs, from 1 MB, worker
                processes, :mod:`tensortext.bpe.parallel`); 1: none (``True`` counts as 1, as
                there).
            allowed_special, disallowed_special, add_special_tokens: as in :meth:`encode`.

        Raises:
            TypeError: for ``text`` that is a str, a set or a mapping, or holds a non-str.
            ValueError: as :meth:`encode` (a disallowed special token; with the C
                encoder, a segment over 2**30 - 2 characters; ``add_special_tokens=True``
                without a post-processor).
        """
        threads = check_num_threads(num_threads)
        prefix, suffix = post_processor_affixes(self._vocab, add_special_tokens, self.name)
        texts = check_texts(text, "text")  # last: it consumes a generator
        rows = self._encode_lists(texts, allowed_special, disallowed_special, threads)
        return add_affixes(rows, prefix, suffix)

    def encode_with_unstable(
        self,
        text: str,
        *,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
    ) -> tuple[list[int], list[list[int]]]:
        """Stable tokens of ``text`` and every token sequence its unstable end could become
        when more text follows (as tiktoken; the completions come sorted)."""
        self._require_byte_level("encode_with_unstable")
        allowed = allowed_set(self._vocab, allowed_special)
        check_disallowed(self._vocab, [check_text(text)], allowed, disallowed_special)
        return unstable.encode_with_unstable(
            self._vocab,
            text,
            allowed,
            last_piece=self._encode_last_piece,
            encode_texts=self.encode_ordinary_batch,
            sorted_token_bytes=self._sorted_token_bytes,
        )

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
        backend = self._backends.get()
        pieces = [
            piece
            for segment in prepare_segments(self._vocab, [check_text(text)], frozenset())[0]
            for piece in backend.pieces(segment)
        ]
        return [token for piece in pieces for token in self._encode_single_piece(piece)]

    def _encode_bytes(self, text: bytes) -> list[int]:
        """Tokens of bytes that may be invalid UTF-8 (tiktoken's private helper)."""
        self._require_byte_level("_encode_bytes")
        return unstable.encode_bytes(
            self._vocab,
            as_bytes(text, "text"),
            last_piece=self._encode_last_piece,
            encode_texts=self.encode_ordinary_batch,
        )

    # ------------------------------------------------------------------ internals
    def _require_byte_level(self, method: str) -> None:
        """Raise for a method of byte-level BPE called on a SentencePiece vocabulary."""
        if self._vocab.unknown_ids is not None:
            raise ValueError(
                f"{method} is tiktoken's, for byte-level BPE; {self.name!r} is a SentencePiece "
                "vocabulary, which merges characters (use encode)"
            )

    @cached_property
    def _backends(self) -> Backends:
        """The encoders of this encoding, built by their first call (see
        :mod:`tensortext.bpe.backends`)."""
        return Backends(self._vocab)

    @cached_property
    def _one_text(self) -> Callable[[list[str]], list[list[int]]] | None:
        """The C encoder's ``encode_many`` where it is this encoding's CPU backend and the
        vocabulary changes no text (no normalizer, no prefix space): :meth:`encode`'s path for
        one ordinary ``str`` (a microsecond or two of Python, not the batch path's ten)."""
        backend = self._backends.get()
        options = self._vocab.options
        if not isinstance(backend, CBackend) or options.normalizer or options.add_prefix_space:
            return None
        encode_many: Callable[[list[str]], list[list[int]]] = backend.encoder.encode_many
        if options.user_symbols:
            return None
        if options.sentencepiece:
            return lambda texts: encode_many([sentencepiece_text(t, options) for t in texts])
        return encode_many

    @cached_property
    def _special_finder(self) -> re.Pattern[str] | None:
        """A pattern finding any special token (``None``: the encoding has none)."""
        specials = self._vocab.special_set
        return special_regex(specials) if specials else None

    @cached_property
    def _sorted_token_bytes(self) -> list[bytes]:
        return sorted(self._vocab.mergeable)

    @cached_property
    def _special_ids(self) -> frozenset[int]:
        return frozenset(self._vocab.special_tokens.values())

    def _byte_pair_encode(self, data: bytes) -> list[int]:
        if self._vocab.unknown_ids is not None:  # SentencePiece: from characters
            parts = char_parts(data, self._vocab)[1]
            return [token for _, token in merge_tokens(parts, self._vocab.pairs)]
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
        return self._backends.get().rows(segments, len(texts), num_threads)

    def _encode_arrays(
        self,
        texts: list[str],
        allowed_special: AllowedSpecial,
        disallowed_special: DisallowedSpecial,
        num_threads: int = 1,
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
        """``(ids [T] uint32, lengths [B] int64)`` of ``texts``, from the CPU's backend."""
        import numpy as np

        allowed = allowed_set(self._vocab, allowed_special)
        check_disallowed(self._vocab, texts, allowed, disallowed_special)
        segments = prepare_segments(self._vocab, texts, allowed)
        ids, lengths = self._backends.get().flat(segments, len(texts), num_threads)
        return np.asarray(ids).astype(np.uint32, copy=False), np.asarray(lengths, dtype=np.int64)

    def _shutdown_workers(self) -> None:
        """Stop :meth:`encode_batch`'s worker processes, if any (they end with the interpreter)."""
        self._backends.shutdown_workers()

    def _encode_last_piece(self, text: str, allowed: frozenset[str]) -> tuple[list[int], int]:
        """``encode`` (no disallowed check) and how many tokens its last regex piece gave
        (0 when the text ends with a special token or is empty)."""
        segments = prepare_segments(self._vocab, [text], allowed)
        backend = self._backends.get()
        tokens = backend.rows(segments, 1, 1)[0]
        last, special = segments[0][-1], segments[1][-1]
        pieces = backend.pieces(last) if special < 0 else []
        return tokens, len(self._encode_single_piece(pieces[-1])) if pieces else 0
