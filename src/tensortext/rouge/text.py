"""Text to token IDs for ROUGE: rouge-score's default tokenizer, then one shared vocabulary.

rouge-score's ``DefaultTokenizer`` lower-cases the text (``str.lower``, so ``"İ"`` gives an
ASCII ``"i"`` plus a combining dot), turns every run of characters outside ``[a-z0-9]`` into a
space and splits on whitespace. The words are therefore exactly the maximal ``[a-z0-9]+`` runs
of the lower-cased text, which is what :func:`tokenize` finds in one regex pass. With
``use_stemmer`` each word longer than 3 characters goes through nltk's ``PorterStemmer()`` (its
default ``NLTK_EXTENSIONS`` mode, as rouge-score builds it), and a stem that is not
``^[a-z0-9]+$`` is dropped, as rouge-score's last filter does. Stems are cached per word.

:func:`encode_texts` maps the words of hypotheses and references to integer IDs through one
dictionary, so that equal words get equal IDs and the tensor path scores them as rouge-score
scores the strings.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeGuard

import torch

from tensortext._checks import brief
from tensortext.padded import MISSING_REF, Padded, pad_ragged, text_reference_sets

__all__ = ["encode_candidates", "encode_texts", "is_text", "porter_stemmer", "tokenize"]

_WORD = re.compile(r"[a-z0-9]+")
# rouge-score's final filter on (stemmed) tokens.
_VALID_TOKEN = re.compile(r"^[a-z0-9]+$")
# Distinct words whose stems are remembered (a corpus vocabulary fits).
STEM_CACHE_SIZE = 1 << 20


@functools.lru_cache(maxsize=1)
def porter_stemmer() -> Callable[[str], str | None]:
    """rouge-score's stemming step as a cached function of one word.

    Returns:
        ``stem(word)``: the word's Porter stem when it is longer than 3 characters, else the
        word; ``None`` when the result is not a valid token (rouge-score drops it).

    Raises:
        ImportError: nltk is not installed.
    """
    try:
        from nltk.stem import porter  # type: ignore[import-untyped]
    except ImportError as error:
        raise ImportError(
            "use_stemmer=True needs nltk's Porter stemmer (as rouge-score uses it): "
            "pip install nltk"
        ) from error
    stemmer = porter.PorterStemmer()

    @functools.lru_cache(maxsize=STEM_CACHE_SIZE)
    def stem(word: str) -> str | None:
        stemmed = stemmer.stem(word) if len(word) > 3 else word
        return stemmed if _VALID_TOKEN.match(stemmed) else None

    return stem


def tokenize(text: str, *, use_stemmer: bool = False) -> list[str]:
    """rouge-score's default tokenizer (``rouge_score.tokenizers.DefaultTokenizer``).

    Args:
        text: any string.
        use_stemmer: stem words longer than 3 characters with nltk's Porter stemmer.

    Returns:
        The tokens: lower-case ``[a-z0-9]+`` words (stemmed with ``use_stemmer``).

    Example:
        >>> tokenize("The friends had a MEETING, didn't they?", use_stemmer=True)
        ['the', 'friend', 'had', 'a', 'meet', 'didn', 't', 'they']
    """
    words = _WORD.findall(text.lower())
    if not use_stemmer:
        return words
    stem = porter_stemmer()
    return [token for token in map(stem, words) if token is not None]


def is_text(value: object) -> TypeGuard[Sequence[Any]]:
    """Whether ``value`` is a sequence of Python data (text), not a tensor of token IDs."""
    return isinstance(value, Sequence) and not isinstance(value, (str, Padded))


def _strings(name: str, values: Sequence[object]) -> list[str]:
    """``values`` checked to be strings."""
    strings = []
    for index, value in enumerate(values):
        if not isinstance(value, str):
            raise TypeError(
                f"{name}[{index}] must be a str, got {type(value).__name__} {brief(value)}"
            )
        strings.append(value)
    return strings


def _ids(words: list[str], vocabulary: dict[str, int]) -> list[int]:
    """Words to IDs, new words getting the next free ID."""
    return [vocabulary.setdefault(word, len(vocabulary)) for word in words]


def encode_texts(
    hyps: Sequence[object],
    refs: object,
    *,
    use_stemmer: bool,
    device: torch.device,
) -> tuple[Padded, Padded]:
    """Tokenizes and numbers hypotheses and references with one shared vocabulary.

    Args:
        hyps: ``B`` hypothesis strings.
        refs: ``B`` reference strings, or ``B`` sequences of reference strings where ``None``
            is a missing reference.
        use_stemmer: rouge-score's option.
        device: where the tensors go.

    Returns:
        ``(hyps [B, L], refs [B, R, L'])`` as :class:`~tensortext.padded.Padded`; a missing
        reference has length :data:`~tensortext.padded.MISSING_REF`.

    Raises:
        TypeError: a hypothesis or reference that is not a string. ValueError: ``B`` differs.
    """
    texts = _strings("hyps", hyps)
    reference_sets = text_reference_sets(refs, len(texts))
    vocabulary: dict[str, int] = {}
    hyp_rows = [_ids(tokenize(hyp, use_stemmer=use_stemmer), vocabulary) for hyp in texts]
    slots = max([1, *(len(entry) for entry in reference_sets)])
    ref_rows: list[list[int]] = []
    missing: list[bool] = []
    for entry in reference_sets:
        for slot in range(slots):
            ref = entry[slot] if slot < len(entry) else None
            missing.append(ref is None)
            words = [] if ref is None else tokenize(ref, use_stemmer=use_stemmer)
            ref_rows.append(_ids(words, vocabulary))
    hyp_ids, hyp_lens = pad_ragged(hyp_rows)
    ref_ids, ref_lens = pad_ragged(ref_rows)
    ref_lens = ref_lens.masked_fill(torch.tensor(missing, dtype=torch.bool), MISSING_REF)
    batch, ref_width = len(texts), ref_ids.shape[-1]
    return (
        Padded(hyp_ids, hyp_lens).to(device),
        Padded(ref_ids.view(batch, slots, ref_width), ref_lens.view(batch, slots)).to(device),
    )


def encode_candidates(
    candidates: Sequence[object], *, use_stemmer: bool, device: torch.device
) -> Padded:
    """``B`` lists of ``N`` candidate strings as one ``[B, N, L]`` :class:`Padded` of IDs (one
    vocabulary for all of them).

    Raises:
        TypeError: a row that is not a list of strings. ValueError: rows of different ``N``.
    """
    rows: list[list[str]] = []
    for index, row in enumerate(candidates):
        if isinstance(row, str) or not isinstance(row, Sequence):
            raise TypeError(
                f"candidates[{index}] must be a list of strings, got {type(row).__name__}"
            )
        rows.append(_strings(f"candidates[{index}]", row))
        if len(row) != len(rows[0]):
            raise ValueError(
                f"candidates[{index}] has {len(row)} candidates but candidates[0] has "
                f"{len(rows[0])}; every sentence needs the same N"
            )
    vocabulary: dict[str, int] = {}
    numbered = [
        _ids(tokenize(text, use_stemmer=use_stemmer), vocabulary) for row in rows for text in row
    ]
    ids, lengths = pad_ragged(numbered)
    batch, num = len(rows), len(rows[0]) if rows else 0
    return Padded(ids.view(batch, num, ids.shape[-1]), lengths.view(batch, num)).to(device)
