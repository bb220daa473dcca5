"""Hypothesis strategies for the BPE tests: texts rich in the character classes that the split
patterns treat specially.

``rich_texts`` concatenates *atoms* -- single characters or short sequences (contractions, CRLF,
ZWJ emoji, a letter plus a combining mark) -- drawn mostly from :data:`ATOMS` and sometimes from
arbitrary codepoints.  Two flavours of arbitrary codepoints exist:

* ``ANY_CHAR``: any scalar value but surrogates and the codepoints on which the installed
  ``regex`` module's Unicode differs from tensortext's table (for the ``regex`` oracle);
* ``TIKTOKEN_CHAR``: codepoints assigned in this Python's Unicode database (14.0 on 3.11).
  The table follows tiktoken's Unicode (16); codepoints assigned in 15 and 16, and those that
  only Unicode 17 assigns (e.g. U+0558), are checked against tiktoken one by one in
  ``test_encoding.py::test_codepoints_assigned_after_tiktokens_unicode``.
"""

from __future__ import annotations

from hypothesis import strategies as st
from oracles.bpe import regex_table_disagreements

LETTERS = [
    *"abzQXyéÉßİ",
    "\u0131",  # dotless i
    "\u017f",  # long s
    "\u01c5",  # ǅ  Lt (titlecase)
    "\u01c8",  # ǈ  Lt
    "\u1f88",  # ᾈ  Lt
    "\u02b0",  # ʰ  Lm
    "\u30fc",  # ー Lm
    "\u00aa",  # ª  Lo
    "中",
    "文",
    "あ",
    "한",
    "क",
    "ह",
    "Ω",
    "ж",
    "Ж",
]
MARKS = [
    "\u0301",  # combining acute (Mn)
    "\u093f",  # Devanagari vowel sign I (Mc)
    "\u094d",  # Devanagari virama (Mn)
    "\u0902",  # Devanagari anusvara (Mn)
    "\u20dd",  # combining enclosing circle (Me)
    "\u0e31",  # Thai (Mn)
]
NUMBERS = ["0", "1", "7", "42", "12345", "٣", "½", "¹", "\u216b", "\U0001d7d9", "๓"]
SPACES = [
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\n\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x1d",
    "\x1e",
    "\x1f",
    "\x85",
    "\xa0",
    "\u1680",
    "\u2000",
    "\u2028",
    "\u2029",
    "\u202f",
    "\u3000",
    "\u200b",  # not White_Space (Cf)
    "\u180e",  # not White_Space (Cf)
]
CONTRACTIONS = [
    "'",
    *(f"'{tail}" for tail in ("s", "t", "re", "ve", "m", "ll", "d")),
    *(f"'{tail}" for tail in ("S", "T", "RE", "VE", "M", "LL", "D")),
    "'Re",
    "'lL",
    "'vE",
    "'\u017f",  # long s: case-folds to s
    "'\u212a",  # Kelvin sign: folds to k (no contraction)
    "\u2019s",
    "''",
]
PUNCT = [*'/.,!?-_()"#@$%&*+:;<=>[\\]^`{|}~', "//", "€", "…", "—", "«", "\x00", "\x7f", "\x01"]
EMOJI = [
    "😀",
    "👍🏽",
    "👨\u200d👩\u200d👧\u200d👦",
    "❤\ufe0f",
    "\u200d",
    "\ufe0f",
    "🇺🇸",
    "\U0001f9d1\u200d\U0001f4bb",
]
COMBINED = ["e\u0301", "क\u093f", "न\u094dद", "A\u0301B", "\u0301a", "ǅa", "Aǅ", "ABc", "aBC"]
ATOMS = LETTERS + MARKS + NUMBERS + SPACES + CONTRACTIONS + PUNCT + EMOJI + COMBINED

# Not the codepoints whose classes the installed ``regex`` module (maybe a newer Unicode than
# tiktoken's 16, which the table follows) sees differently: there the oracle itself is off.
_DISAGREE = regex_table_disagreements()
ANY_CHAR = st.characters(exclude_categories=("Cs",)).filter(lambda c: ord(c) not in _DISAGREE)
TIKTOKEN_CHAR = st.characters(exclude_categories=("Cs", "Cn"))


def rich_texts(
    *, max_atoms: int = 24, other: st.SearchStrategy[str] = ANY_CHAR
) -> st.SearchStrategy[str]:
    """Concatenations of atoms, mostly from :data:`ATOMS`, sometimes ``other`` characters."""
    atom = st.one_of(st.sampled_from(ATOMS), st.sampled_from(ATOMS), st.sampled_from(ATOMS), other)
    return st.lists(atom, max_size=max_atoms).map("".join)


def runs(*, chars: str = " \n\t\r\u3000\xa01٣a'!/") -> st.SearchStrategy[str]:
    """Long runs of a few characters: whitespace, digits, letters, punctuation."""
    run = st.tuples(st.sampled_from(list(chars)), st.integers(1, 40)).map(lambda cn: cn[0] * cn[1])
    return st.lists(run, max_size=6).map("".join)
