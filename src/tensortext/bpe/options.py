"""What a tokenizer does around the BPE: a Hugging Face tokenizer's normalizer, prefix space and
post-processor tokens, and SentencePiece's text rules (plain data, no torch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["TextOptions"]


@dataclass(frozen=True)
class TextOptions:
    """What a Hugging Face tokenizer does around the BPE (all off for tiktoken's encodings).

    ``normalizer`` is applied to every text first; ``add_prefix_space`` puts a space before each
    ordinary segment (the text between special tokens) that does not start with one; ``prefix_ids``
    and ``suffix_ids`` are the post-processor's tokens around one sequence, added only when the
    caller asks for them (``add_special_tokens=True``, as in HF).
    """

    normalizer: Literal["NFC", "NFKC", "NFD", "NFKD"] | None = None
    add_prefix_space: bool = False
    prefix_ids: tuple[int, ...] = ()
    suffix_ids: tuple[int, ...] = ()
    sentencepiece: bool = False
    """SentencePiece's text rules (:mod:`.sentencepiece`), on each whole text before it is cut at
    special tokens: U+2581 read as a space; with ``remove_extra_whitespaces``, spaces stripped at
    both ends and runs of them cut to one; with ``dummy_prefix``, a space before a text that is
    not empty (after it, with ``whitespace_suffix``), which decoding drops again. Its
    ``user_symbols`` (text, ID) are cut out of every text, as special tokens always allowed."""
    dummy_prefix: bool = False
    whitespace_suffix: bool = False
    remove_extra_whitespaces: bool = False
    user_symbols: tuple[tuple[str, int], ...] = ()
    prefix_always: bool = False
    """With ``add_prefix_space``: a space before every ordinary segment that is not empty, even
    one starting with a space (HF's ``Prepend`` normalizer)."""
    prefix_first_only: bool = False
    """With ``add_prefix_space``: only before a text's first segment if it is ordinary (HF's
    ``Metaspace`` with ``prepend_scheme="first"``)."""
    byte_runs: Literal["sentencepiece", "hf"] = "sentencepiece"
    """How decoding a SentencePiece vocabulary replaces invalid UTF-8 of its ``<0xXX>`` tokens:
    ``sentencepiece``'s way or ``tokenizers``' ``ByteFallback`` (see
    :func:`~tensortext.bpe.decoding.decoded_text`)."""
    strip_decoded: Literal["", "sentencepiece", "sentencepiece_all", "always"] = ""
    """Decoding drops leading space as ``sentencepiece`` does after a dummy prefix (one) or
    ``remove_extra_whitespaces`` (all), or as HF's ``Strip`` decoder (one, always); see
    :func:`~tensortext.bpe.decoding.without_dummy_prefix`."""

    @property
    def active(self) -> bool:
        """Whether any option changes the text or the IDs."""
        return bool(
            self.normalizer
            or self.add_prefix_space
            or self.prefix_ids
            or self.suffix_ids
            or self.sentencepiece
        )
