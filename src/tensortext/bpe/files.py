"""Encodings from vocabulary files: the constructors :class:`~tensortext.bpe.Encoding` inherits
(tiktoken's ``.tiktoken`` files, Hugging Face ``tokenizer.json``, SentencePiece ``.model``,
Tekken, and any of them told by content)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from tensortext.bpe import native
from tensortext.bpe.hf_json import read_hf_json
from tensortext.bpe.sentencepiece import file_kind, read_sentencepiece
from tensortext.bpe.tekken import read_tekken
from tensortext.bpe.vocab import Vocab, read_tiktoken_file, read_vocabulary_bytes

__all__ = ["FileReaders"]

E = TypeVar("E", bound="FileReaders")


def _builds_as_encoding(cls: type[FileReaders]) -> bool:
    """Whether ``cls`` has ``Encoding``'s constructor (a subclass may have its own, which the
    C encoder's vocabulary would skip)."""
    return cls.__init__ is FileReaders.__init__


class FileReaders:
    """The constructors of :class:`~tensortext.bpe.Encoding`: tiktoken's, and the ``from_*``
    ones of vocabulary files."""

    _vocab: Vocab
    _pat_str: str

    def __init__(
        self,
        name: str,
        *,
        pat_str: str,
        mergeable_ranks: dict[bytes, int],
        special_tokens: dict[str, int],
        explicit_n_vocab: int | None = None,
    ) -> None:
        """tiktoken's constructor: a vocabulary of ``mergeable_ranks`` (bytes -> rank = ID), split
        by ``pat_str``, with ``special_tokens``."""
        self._vocab = Vocab.from_ranks(
            name, pat_str, mergeable_ranks, special_tokens, explicit_n_vocab=explicit_n_vocab
        )
        self._pat_str = pat_str

    @classmethod
    def _from_vocab(cls: type[E], vocab: Vocab, pat_str: str | None = None) -> E:
        encoding = cls.__new__(cls)
        encoding._vocab = vocab
        encoding._pat_str = vocab.kind if pat_str is None else pat_str
        return encoding

    @classmethod
    def from_tiktoken_file(
        cls: type[E],
        path: str | Path,
        *,
        pat_str: str,
        special_tokens: dict[str, int],
        name: str | None = None,
        expected_hash: str | None = None,
        explicit_n_vocab: int | None = None,
    ) -> E:
        """An encoding from a tiktoken-format file (``base64-token rank`` lines, maybe gzipped).

        Args:
            path: e.g. openai-whisper's ``gpt2.tiktoken`` or Llama-3's ``tokenizer.model``.
            pat_str: the split regex; one of :data:`tensortext.bpe.PATTERNS` (or a kind name).
            special_tokens: text to ID.
            name: defaults to the file's stem.
            expected_hash: sha256 of the uncompressed file, checked if given.
            explicit_n_vocab: as in the constructor (tiktoken's check of the token count).

        Raises:
            ValueError: naming the file and line of a malformed line (see
                :func:`~tensortext.bpe.vocab.read_tiktoken_file`), or as the constructor.
        """
        name = name or Path(path).stem
        if _builds_as_encoding(cls) and native.reads_tiktoken_files(pat_str):  # C reads it
            data = read_vocabulary_bytes(path, expected_hash=expected_hash)
            vocab = native.vocab_from_tiktoken(
                name, pat_str, data, special_tokens, explicit_n_vocab=explicit_n_vocab
            )
            if vocab is not None:
                return cls._from_vocab(vocab, pat_str)
        ranks = read_tiktoken_file(path, expected_hash=expected_hash)  # names a bad line
        return cls(
            name,
            pat_str=pat_str,
            mergeable_ranks=ranks,
            special_tokens=special_tokens,
            explicit_n_vocab=explicit_n_vocab,
        )

    @classmethod
    def from_sentencepiece(
        cls: type[E], source: str | Path | bytes, *, name: str | None = None
    ) -> E:
        """An encoding from a SentencePiece BPE model (Llama-2, Mistral 7B, Gemma, ...).

        Args:
            source: a ``.model`` file's path, or its bytes.
            name: defaults to the file name up to its first dot.

        ``encode_ordinary`` gives ``sentencepiece``'s ``encode``; control pieces (``<s>``,
        ``[INST]``) are special tokens, user-defined pieces are always cut out, as
        ``sentencepiece`` does; ``add_special_tokens=True`` puts the BOS first (HF's
        ``LlamaTokenizer``). ``decode`` gives ``sentencepiece``'s ``decode``.

        Raises:
            ValueError: naming the file and setting, for a model not reproduced exactly (see
                :func:`~tensortext.bpe.sentencepiece.read_sentencepiece`).
        """
        return cls._from_vocab(read_sentencepiece(source, name=name))

    @classmethod
    def from_hf_json(cls: type[E], source: str | Path | Any) -> E:
        """An encoding from a Hugging Face byte-level BPE tokenizer.

        Args:
            source: a ``tokenizer.json`` path, a directory holding one, a ``tokenizers.Tokenizer``
                or a ``transformers`` ``PreTrainedTokenizerFast``.

        Added tokens become special tokens (pass ``allowed_special="all"`` to split them out as
        HF always does). The normalizer and ``add_prefix_space`` always apply; the
        post-processor's tokens (e.g. a BOS) are added by the ``encode*`` methods that take
        ``add_special_tokens`` when it is True (HF's ``tokenizer.encode`` defaults to True; here the
        default is tiktoken's, False).
        """
        return cls._from_vocab(read_hf_json(source))

    @classmethod
    def from_tekken(cls: type[E], path: str | Path, *, name: str | None = None) -> E:
        """An encoding from Mistral's Tekken file (``tekken_*.json``; NeMo, Pixtral, ...).

        ``encode_ordinary`` gives mistral-common's ``Tekkenizer.encode(text, bos=False,
        eos=False)``; the special tokens (``<s>``, ``[INST]``, ...) take IDs ``0..N-1``
        (``default_num_special_tokens``), and ``decode`` gives ``Tekkenizer.decode`` with
        ``special_token_policy=KEEP`` (a special token's name; mistral-common's default drops it).

        Args:
            path: the file.
            name: defaults to the file name without ``.json``.

        Raises:
            ValueError: naming the file and field of a malformed file (see
                :func:`~tensortext.bpe.tekken.read_tekken`).
        """
        return cls._from_vocab(read_tekken(path, name=name))

    @classmethod
    def from_file(cls: type[E], path: str | Path, *, name: str | None = None) -> E:
        """An encoding from a tokenizer file of any kind this package reads, told by its
        content: a SentencePiece ``.model`` (:meth:`from_sentencepiece`), a Tekken file
        (:meth:`from_tekken`), or a ``tokenizer.json`` (:meth:`from_hf_json`); a directory
        holding ``tokenizer.json``, ``tokenizer.model`` or ``tekken.json``.

        Raises:
            ValueError: naming the file, for one of no kind read here (a tiktoken-format file
                needs its split pattern: :meth:`from_tiktoken_file`), or as the reader.
        """
        kind, found = file_kind(Path(path))
        if kind == "sentencepiece":
            return cls.from_sentencepiece(found, name=name)
        if kind == "tekken":
            return cls.from_tekken(found, name=name)
        encoding = cls.from_hf_json(found)
        if name is not None:
            encoding._vocab.name = name
        return encoding
