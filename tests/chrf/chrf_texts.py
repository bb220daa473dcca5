"""Hypothesis strategies for the chrF tests: short texts over tiny alphabets, so that character
and word n-grams of every order repeat, mixed with every kind of whitespace Python's
``str.split()`` knows, ASCII punctuation (chrF++ splits it off words), letters that lowercase
context-sensitively (final sigma) or into two characters, combining marks and astral-plane
characters (one codepoint each, two UTF-16 units)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

LETTERS = ("a", "b", "c", "A", "Σ", "İ", "中", "e\u0301", "😀", "\U0001d518")
SPACES = (" ", " ", "  ", "\t", "\n", "\r\n", "\u3000", "\xa0", "\x1c", "\x1f", "\x85", "\u2028")
PUNCTUATION = ("(", ")", ".", ",", "-", "'", '"', "!", "?", "~")
OTHER = ("\u200b", "\u180e", "\x00", "\ud800")  # not whitespace for str.split()


@st.composite
def alphabets(draw: st.DrawFn) -> list[str]:
    """A few pieces texts are made of: letters, and often whitespace and punctuation."""
    pieces = draw(st.lists(st.sampled_from(LETTERS), min_size=1, max_size=3, unique=True))
    if draw(st.integers(0, 3)):
        pieces += draw(st.lists(st.sampled_from(SPACES), min_size=1, max_size=3))
    if draw(st.booleans()):
        pieces += draw(st.lists(st.sampled_from(PUNCTUATION), min_size=1, max_size=2))
    if not draw(st.integers(0, 5)):
        pieces.append(draw(st.sampled_from(OTHER)))
    return pieces


@st.composite
def texts(draw: st.DrawFn, alphabet: list[str], max_pieces: int = 24) -> str:
    """A text of up to ``max_pieces`` pieces of ``alphabet``."""
    limit = draw(st.sampled_from([4, 10, max_pieces]))
    return "".join(draw(st.lists(st.sampled_from(alphabet), max_size=limit)))


@st.composite
def noisy_copy(draw: st.DrawFn, base: str, alphabet: list[str]) -> str:
    """``base`` with a few pieces changed, inserted or deleted (long matches are common)."""
    out = list(base)
    for _ in range(draw(st.integers(0, 3))):
        position = draw(st.integers(0, len(out)))
        piece = draw(st.sampled_from(alphabet))
        operation = draw(st.sampled_from(["change", "insert", "delete"]))
        if operation == "insert" or not out:
            out.insert(position, piece)
        elif position < len(out):
            out[position : position + 1] = [] if operation == "delete" else [piece]
    return "".join(out)


@st.composite
def batches(
    draw: st.DrawFn, max_batch: int = 4, max_refs: int = 3, missing: bool = True
) -> tuple[list[str], list[list[str | None]]]:
    """``(hyps, refs)``: ``refs[b]`` holds 1..max_refs references, some ``None`` (rarely all)."""
    alphabet = draw(alphabets())
    size = draw(st.integers(0, max_batch))
    hyps = [draw(texts(alphabet)) for _ in range(size)]
    refs: list[list[str | None]] = []
    for hyp in hyps:
        row: list[str | None] = []
        for _ in range(draw(st.integers(1, max_refs))):
            if missing and not draw(st.integers(0, 4)):
                row.append(None)
            elif draw(st.booleans()):
                row.append(draw(noisy_copy(hyp, alphabet)))
            else:
                row.append(draw(texts(alphabet)))
        refs.append(row)
    return hyps, refs


@st.composite
def options(draw: st.DrawFn, lowercase: bool = True) -> dict[str, Any]:
    """chrF options: sacrebleu's defaults half of the time, else anything in range."""
    if draw(st.booleans()):
        return {"word_order": draw(st.sampled_from([0, 2]))}
    chosen: dict[str, Any] = {
        "char_order": draw(st.integers(1, 8)),
        "word_order": draw(st.integers(0, 3)),
        "beta": draw(st.sampled_from([1, 2, 3, 0.5, 1.5])),
        "whitespace": draw(st.booleans()),
        "eps_smoothing": draw(st.booleans()),
    }
    if lowercase:
        chosen["lowercase"] = draw(st.booleans())
    return chosen
