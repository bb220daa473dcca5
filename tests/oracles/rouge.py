"""ROUGE oracles (tests/rouge): Google's ``rouge-score`` wrapped for the parity tests, and random
text for hypothesis.

* :func:`reference_scores`: ``RougeScorer(rouge_types, use_stemmer)`` on each sentence --
  ``score(ref, hyp)`` for one reference, ``score_multi(refs, hyp)`` for several; ``None``
  references are dropped, and a sentence without any scores 0 (the tensortext spec; rouge-score
  gives 0 against one empty reference).
* :func:`id_reference_scores`: the same on token IDs, fed to rouge-score as space-joined decimal
  strings (its tokenizer gives back exactly those tokens).
* :func:`dp_lcs` (rouge-score's own ``_lcs_table``) and :func:`numpy_lcs` (the same DP a row at
  a time, for long inputs) for the LCS tests.
* :func:`texts`, :func:`text_batches`: random text from a small word list with punctuation,
  digits, upper case, non-ASCII letters the tokenizer drops or folds (``"İ"``, the Kelvin sign),
  emoji, CJK, combining marks, and empty or whitespace-only lines.

rouge-score is imported unconditionally: a missing library is a test *failure*, never a skip.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import torch
from hypothesis import strategies as st
from rouge_score import rouge_scorer

# rouge-score's types that tensortext supports (rougeLsum is refused).
ALL_TYPES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL")
# float32: each score is one float64 division cast to float32 (unit roundoff 6e-8), corpus
# means add a few such values. float64: the arithmetic is rouge-score's, operation for
# operation, so sentence scores agree to the bit; 1e-12 leaves room for summation order in
# corpus means only.
ATOL = {torch.float32: 1e-6, torch.float64: 1e-12}

Scores = list[list[list[float]]]  # [B][T][precision, recall, fmeasure]

# Words that exercise every branch of rouge-score's tokenizer: case folding, punctuation inside
# and around words, digits, stems (meeting/meetings, generously), non-ASCII letters dropped
# (é, ß, CJK, emoji) or folded to ASCII by str.lower ("İ" -> "i" + U+0307, Kelvin sign -> "k").
WORDS = (
    "the", "The", "THE", "cat", "cats", "Cat's", "running", "runs", "run", "meeting",
    "meetings", "generously", "a", "I", "42", "4.2", "x-y", "don't", "naïve", "straße", "É",
    "İstanbul", "\u212a", "日本語", "😀", "e\u0301", "!!", "--", "ﬁne", "\U0001d518nicode",
)  # fmt: skip
SEPARATORS = (" ", " ", " ", "  ", "\n", "\t", ", ", ".", "")


@cache
def _scorer(rouge_types: tuple[str, ...], use_stemmer: bool) -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=use_stemmer)


def reference_scores(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str | None]],
    rouge_types: Sequence[str],
    *,
    use_stemmer: bool = False,
) -> Scores:
    """rouge-score's scores per sentence, ``[B][T][3]`` (``None`` references dropped)."""
    scorer = _scorer(tuple(rouge_types), use_stemmer)
    out = []
    for hyp, row in zip(hyps, refs, strict=True):
        present = [ref for ref in row if ref is not None]
        if not present:
            out.append([[0.0, 0.0, 0.0] for _ in rouge_types])
            continue
        scores = scorer.score(present[0], hyp) if len(present) == 1 else None
        if scores is None:
            scores = scorer.score_multi(present, hyp)
        out.append([[float(x) for x in scores[name]] for name in rouge_types])
    return out


def ids_to_text(ids: Sequence[int]) -> str:
    return " ".join(map(str, ids))


def id_reference_scores(
    hyps: Sequence[Sequence[int]],
    refs: Sequence[Sequence[Sequence[int]]],
    rouge_types: Sequence[str],
) -> Scores:
    """rouge-score on token IDs as space-joined decimal strings; ``refs`` holds the present
    references of each sentence (none: scores 0)."""
    return reference_scores(
        [ids_to_text(hyp) for hyp in hyps],
        [[ids_to_text(ref) for ref in row] for row in refs],
        rouge_types,
    )


def corpus_means(scores: Scores, num_types: int) -> list[list[float]]:
    """The mean over sentences of ``[B][T][3]`` scores (0 for no sentences)."""
    if not scores:
        return [[0.0, 0.0, 0.0] for _ in range(num_types)]
    return np.mean(np.array(scores, dtype=np.float64), axis=0).tolist()  # type: ignore[no-any-return]


def dp_lcs(a: Sequence[int], b: Sequence[int]) -> int:
    """rouge-score's own LCS length (its ``_lcs_table`` dynamic programme)."""
    return int(rouge_scorer._lcs_table(list(a), list(b))[-1][-1])


def numpy_lcs(a: Sequence[int], b: Sequence[int]) -> int:
    """The same DP a row at a time: ``row[j] = max(row[j-1], prev[j], prev[j-1] + match)`` is a
    running maximum of ``max(prev[j], prev[j-1] + match)``, so each row is two numpy calls."""
    ref = np.asarray(b, dtype=np.int64)
    prev = np.zeros(len(b) + 1, dtype=np.int64)
    for token in a:
        diagonal = prev[:-1] + (ref == token)
        best = np.maximum(prev[1:], diagonal)
        prev = np.concatenate([[0], np.maximum.accumulate(best)])
    return int(prev[-1])


@st.composite
def texts(draw: st.DrawFn, max_words: int = 14) -> str:
    """A string of random words and separators; sometimes empty or whitespace only."""
    kind = draw(st.sampled_from(["words", "words", "words", "empty", "blank"]))
    if kind == "empty":
        return ""
    if kind == "blank":
        return draw(st.sampled_from([" ", "\n", " \t\n ", "!?", "日本"]))
    words = draw(st.lists(st.sampled_from(WORDS), max_size=max_words))
    separators = draw(
        st.lists(st.sampled_from(SEPARATORS), min_size=len(words), max_size=len(words))
    )
    return "".join(word + sep for word, sep in zip(words, separators, strict=True))


@st.composite
def text_batches(
    draw: st.DrawFn, *, max_rows: int = 5, max_refs: int = 3
) -> tuple[list[str], list[Any], list[list[str | None]]]:
    """``(hyps, refs as passed to tensortext, refs as lists for the oracle)``: references are
    one string per sentence, or lists of strings with ``None`` for missing ones."""
    rows = draw(st.integers(0, max_rows))
    hyps = [draw(texts()) for _ in range(rows)]
    if draw(st.booleans()):
        single = [draw(texts()) for _ in range(rows)]
        return hyps, single, [[ref] for ref in single]
    sets: list[list[str | None]] = []
    for hyp in hyps:
        count = draw(st.integers(0, max_refs))
        row: list[str | None] = []
        for _ in range(count):
            choice = draw(st.sampled_from(["text", "text", "near", "none"]))
            if choice == "none":
                row.append(None)
            elif choice == "near":  # shares words with the hypothesis: long matches
                words = hyp.split()
                start = draw(st.integers(0, len(words)))
                row.append(" ".join(words[start:] + words[:start]))
            else:
                row.append(draw(texts()))
        sets.append(row)
    return hyps, sets, sets


def rouge_types_lists(max_size: int = 4) -> st.SearchStrategy[list[str]]:
    """Distinct ROUGE types in any order."""
    return st.lists(st.sampled_from(ALL_TYPES), min_size=1, max_size=max_size, unique=True)


def assert_scores_close(
    actual: torch.Tensor,
    expected: Sequence[Any],
    *,
    atol: float,
    label: str = "",
    inputs: Sequence[Any] | None = None,
) -> None:
    """``[..., T, 3]`` scores against the oracle's nested lists, printing the first differing
    sentence (its inputs too) on failure."""
    exp = torch.tensor(expected, dtype=torch.float64).reshape(actual.shape)
    act = actual.detach().to("cpu", torch.float64)
    bad = (act - exp).abs() > atol
    if bool(bad.any()):
        first = tuple(int(i) for i in bad.nonzero()[0])
        row = first[0] if act.dim() == 3 else None
        shown = "" if row is None or inputs is None else f"\n  inputs: {inputs[row]!r}"
        raise AssertionError(
            f"{label}: scores differ at {list(first)} (row, type, measure): ours="
            f"{act[first].item()!r} rouge-score={exp[first].item()!r} atol={atol}\n  ours row="
            f"{act[first[:-2]].tolist() if row is not None else act.tolist()}\n  expected row="
            f"{exp[first[:-2]].tolist() if row is not None else exp.tolist()}{shown}"
        )
