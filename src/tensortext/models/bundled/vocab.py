"""The bundled translator's word vocabularies: text <-> IDs, one word per ID.

Sources are digits and symbols written one per word (``2 0 2 4 - 0 3 - 0 7``), targets English
words. Tokenized batches are :class:`~tensortext.padded.Padded` with
:data:`~tensortext.padded.PAD_ID` (-1) after each row's length, the package's convention; the
model replaces padding with its own padding word before embedding it.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from tensortext._checks import check_integer_tensor, check_shape
from tensortext.models.bundled.config import BOS, EOS, PAD
from tensortext.padded import PAD_ID, Padded, pad_ragged

__all__ = ["WordVocab"]


class WordVocab:
    """Source and target words in ID order, with the special IDs.

    Args:
        source_vocab: source words; must hold ``<pad>``.
        target_vocab: target words; must hold ``<pad>``, ``<s>`` and ``</s>``.
        max_len: longest source line, in words.

    Raises:
        ValueError: duplicate words or a missing special word.
    """

    def __init__(
        self, source_vocab: Sequence[str], target_vocab: Sequence[str], *, max_len: int
    ) -> None:
        for side, words, specials in (
            ("source", source_vocab, (PAD,)),
            ("target", target_vocab, (PAD, BOS, EOS)),
        ):
            if len(set(words)) != len(words):
                raise ValueError(f"the {side} vocabulary has duplicate words")
            missing = [word for word in specials if word not in words]
            if missing:
                raise ValueError(f"the {side} vocabulary lacks the special words {missing}")
        self.source_vocab = list(source_vocab)
        self.target_vocab = list(target_vocab)
        self.source_ids = {word: i for i, word in enumerate(self.source_vocab)}
        self.target_ids = {word: i for i, word in enumerate(self.target_vocab)}
        self.src_pad_id = self.source_ids[PAD]
        self.pad_id = self.target_ids[PAD]
        self.start_id = self.target_ids[BOS]
        self.eos_id = self.target_ids[EOS]
        self.max_len = max_len

    def tokenize_source(
        self, lines: Sequence[str], *, device: torch.device | str | None = None
    ) -> Padded:
        """Splits source lines on whitespace and maps the words to IDs.

        Args:
            lines: ``N`` source sentences, words separated by spaces (``"7 : 3 0 pm"``).
            device: where the tensors go (CPU by default).

        Returns:
            :class:`~tensortext.padded.Padded` ``(ids [N, S], lengths [N])`` int64, padded with
            ``PAD_ID``; ``S = max(1, longest line)``.

        Raises:
            TypeError: ``lines`` is a single string rather than a sequence of them.
            ValueError: a line is empty, longer than ``max_len`` words, or has a word the model
                does not know (the message names the word and the 1-based line number).
        """
        _check_lines(lines)
        rows: list[list[int]] = []
        for number, line in enumerate(lines, start=1):
            words = line.split()
            if not words:
                raise ValueError(
                    f"source line {number} is empty; the model translates at least one word, "
                    "so drop empty lines before calling tokenize_source"
                )
            if len(words) > self.max_len:
                raise ValueError(
                    f"source line {number} has {len(words)} words but the model reads at most "
                    f"max_len={self.max_len}; split the line"
                )
            unknown = [word for word in words if word not in self.source_ids or word == PAD]
            if unknown:
                known = " ".join(w for w in self.source_vocab if w != PAD)
                raise ValueError(
                    f"source line {number} has the word {unknown[0]!r}, which the bundled model "
                    f"does not know; write digits and symbols one per word (as in "
                    f"'2 0 2 4 - 0 3 - 0 7'), using only: {known}"
                )
            rows.append([self.source_ids[word] for word in words])
        return pad_ragged(rows, device=device)

    def tokenize_target(
        self, lines: Sequence[str], *, device: torch.device | str | None = None
    ) -> Padded:
        """Maps target-language lines (references) to target IDs, for token-ID BLEU.

        No start or end token is added. Empty lines are allowed (length 0).

        Args:
            lines: ``N`` sentences in English words (``"seven thirty in the evening"``).
            device: where the tensors go (CPU by default).

        Returns:
            :class:`~tensortext.padded.Padded` ``(ids [N, T], lengths [N])`` int64, padded with
            ``PAD_ID``; ``T = max(1, longest line)``.

        Raises:
            TypeError: ``lines`` is a single string.
            ValueError: a word is not in ``target_vocab`` (named, with its 1-based line number).
        """
        _check_lines(lines)
        specials = {PAD, BOS, EOS}
        rows: list[list[int]] = []
        for number, line in enumerate(lines, start=1):
            words = line.split()
            unknown = [word for word in words if word not in self.target_ids or word in specials]
            if unknown:
                raise ValueError(
                    f"target line {number} has the word {unknown[0]!r}, which is not in the "
                    "bundled model's target vocabulary (translator.target_vocab); such a word "
                    "can never be matched, so fix or drop the line"
                )
            rows.append([self.target_ids[word] for word in words])
        return pad_ragged(rows, device=device)

    def detokenize(self, ids: Tensor, lengths: Tensor) -> list[str]:
        """Target IDs back to text (one host copy).

        Each row is read up to ``lengths`` and up to its first ``eos_id``, whichever comes
        first; the start token and padding (``PAD_ID`` or the padding word) are skipped, so
        beam-search output can be passed with or without its leading start token.

        Args:
            ids: ``[N, T]`` integer target IDs.
            lengths: ``[N]`` integer, positions to read per row.

        Returns:
            ``N`` strings, words joined by single spaces.

        Raises:
            TypeError: wrong dtypes.
            ValueError: wrong shapes, or an ID outside ``[0, V)`` (other than ``PAD_ID``) within a
                row's length.
        """
        check_integer_tensor("ids", ids, shape="[N, T]")
        check_shape("ids", ids, [None, None], "[N, T]")
        check_integer_tensor("lengths", lengths, shape="[N]")
        if lengths.shape != ids.shape[:1]:
            raise ValueError(
                f"lengths has shape {list(lengths.shape)} but ids has {ids.shape[0]} rows; "
                "pass one length per row"
            )
        skip = {PAD_ID, self.pad_id, self.start_id}
        vocab_size = len(self.target_vocab)
        lines = []
        for row, length in zip(ids.tolist(), lengths.tolist(), strict=True):
            words = []
            for token in row[: max(0, length)]:
                if not 0 <= token < vocab_size and token != PAD_ID:
                    raise ValueError(
                        f"ids holds {token}, outside the target vocabulary [0, {vocab_size})"
                    )
                if token == self.eos_id:
                    break
                if token not in skip:
                    words.append(self.target_vocab[token])
            lines.append(" ".join(words))
        return lines


def _check_lines(lines: Sequence[str]) -> None:
    if isinstance(lines, str):
        raise TypeError("lines must be a sequence of sentences, got one str; pass [lines]")
