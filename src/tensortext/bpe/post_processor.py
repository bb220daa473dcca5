"""A Hugging Face post-processor's special tokens (a BOS, an EOS) around encoded texts, for the
list and numpy methods of :class:`~tensortext.bpe.Encoding` called with
``add_special_tokens=True``.

:mod:`~tensortext.bpe.hf_json` reads them from the ``post_processor`` of a ``tokenizer.json``
(TemplateProcessing's single template, RobertaProcessing, BertProcessing, ByteLevel, a Sequence
of them) into ``Vocab.options.prefix_ids`` / ``suffix_ids``; HF's ``tokenizer.encode(text)``
puts them around every text, as these functions do. tiktoken's encodings have no post-processor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from tensortext.bpe.vocab import Vocab

__all__ = ["add_affixes", "add_affixes_flat", "post_processor_affixes"]

Affixes = tuple[tuple[int, ...], tuple[int, ...]]


def post_processor_affixes(vocab: Vocab, add_special_tokens: bool, name: str) -> Affixes:
    """``(prefix_ids, suffix_ids)`` around each text when ``add_special_tokens``, else
    ``((), ())``.

    Args:
        vocab: the encoding's vocabulary.
        add_special_tokens: the caller's keyword.
        name: the encoding's name, for the error.

    Raises:
        TypeError: for an ``add_special_tokens`` that is no bool.
        ValueError: for ``add_special_tokens=True`` on a vocabulary read from neither a
            ``tokenizer.json`` nor a SentencePiece model: it has no post-processor.
    """
    if not isinstance(add_special_tokens, bool):
        raise TypeError(f"add_special_tokens must be a bool, got {add_special_tokens!r}")
    if not add_special_tokens:
        return (), ()
    if vocab.ranks_are_ids:  # a tiktoken vocabulary: read neither from HF nor SentencePiece
        raise ValueError(
            f"add_special_tokens=True adds the tokens of a Hugging Face post_processor (or a "
            f"SentencePiece model's BOS), and encoding {name!r} was read from neither "
            "(Encoding.from_hf_json, from_sentencepiece), so it has none: pass "
            "add_special_tokens=False and add any token yourself ([bos_id, *ids])"
        )
    return vocab.options.prefix_ids, vocab.options.suffix_ids


def add_affixes(
    rows: list[list[int]], prefix: tuple[int, ...], suffix: tuple[int, ...]
) -> list[list[int]]:
    """Each row with ``prefix`` before it and ``suffix`` after it.

    Example:
        >>> add_affixes([[5, 6], []], (1,), (2,))
        [[1, 5, 6, 2], [1, 2]]
    """
    if not prefix and not suffix:
        return rows
    return [[*prefix, *row, *suffix] for row in rows]


def add_affixes_flat(
    ids: npt.NDArray[np.uint32],
    lengths: npt.NDArray[np.int64],
    prefix: tuple[int, ...],
    suffix: tuple[int, ...],
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.int64]]:
    """:func:`add_affixes` on rows laid end to end: ``ids [T]`` of rows ``lengths [B]`` ->
    ``(ids [T + B * (len(prefix) + len(suffix))], lengths [B])``.

    Example:
        >>> import numpy as np
        >>> ids, lengths = add_affixes_flat(np.array([5, 6, 7]), np.array([2, 0, 1]), (1,), (2,))
        >>> ids.tolist(), lengths.tolist()
        ([1, 5, 6, 2, 1, 2, 1, 7, 2], [4, 2, 3])
    """
    import numpy as np

    extra = len(prefix) + len(suffix)
    if not extra:
        return ids, lengths
    row_of = np.repeat(np.arange(lengths.size), lengths)  # [T]
    out = np.empty(ids.size + lengths.size * extra, dtype=ids.dtype)
    # Every row before a token's row, and its own prefix, push the token right.
    out[np.arange(ids.size) + row_of * extra + len(prefix)] = ids
    out_lengths = lengths + extra
    starts = np.cumsum(out_lengths) - out_lengths  # [B]
    for k, token in enumerate(prefix):
        out[starts + k] = token
    for k, token in enumerate(suffix):
        out[starts + out_lengths - len(suffix) + k] = token
    return out, out_lengths
