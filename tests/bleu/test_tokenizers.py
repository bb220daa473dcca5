"""sacrebleu's text tokenizers (13a, intl, char, none) against sacrebleu's own, line by line.

The fast path tokenizes each distinct whitespace-separated chunk once (see the module docstring
of tensortext.bleu.tokenizers for why that equals tokenizing lines); these tests try to break
that on adversarial text: lines that start or end with punctuation, runs of periods and commas
next to digits, dashes, HTML entities, ``<skipped>``, ``-\\n``, every Unicode category for intl.
"""

from __future__ import annotations

import doctest
import sys
import unicodedata
from importlib import resources

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_char import TokenizerChar
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International
from sacrebleu.tokenizers.tokenizer_none import NoneTokenizer
from strategies import SETTINGS

from tensortext.bleu import BleuConfig, bleu_from_stats, bleu_stats, tokenizers
from tensortext.bleu.tokenizers import (
    TOKENIZERS,
    UNSUPPORTED_TOKENIZERS,
    TokenVocab,
    tokenize_line,
    tokenize_lines,
)
from tensortext.padded import Padded

SACREBLEU = {
    "13a": Tokenizer13a(),
    "intl": TokenizerV14International(),
    "char": TokenizerChar(),
    "none": NoneTokenizer(),
}

# What the rules look at: digits, periods, commas, dashes, ASCII punctuation, whitespace of
# several kinds, the line-level parts of 13a, and Unicode punctuation, symbols and numbers.
PIECES = [
    *"0123456789.,-'\"!?;:()[]{}<>/\\|~`^_@#$%&*+= aZé",
    "&quot;", "&amp;", "&lt;", "&gt;", "&amp;quot;", "&", "<skipped>", "-\n", "\n", "\t",
    "\x0c", "\r", "\x1c", "\x00", "\u00a0", "\u2028", "\u3000", ".5", "5.", "5,000", "...", "--",
    "\u00ab", "\u00bb", "\u2014", "\u2026", "\u3001", "\u3002", "\u00bf", "\u20ac", "\u00a9",
    "\u00b2", "\u00bd", "\u0663", "\u2167", "\u4e94", "\u0301", "\U0001f600", "\U0001d7ce",
    "\uff0c", "\uff0e", "\uff10",
]  # fmt: skip
piece = st.one_of(st.sampled_from(PIECES), st.characters(codec="utf-8"))
line = st.lists(piece, max_size=24).map("".join)
lines = st.lists(line, min_size=1, max_size=8)


def sacrebleu_tokens(text: str, name: str) -> list[str]:
    return str(SACREBLEU[name](text)).split()


def assert_tokens_equal(texts: list[str], name: str) -> None:
    got = tokenize_lines(texts, name)
    for row, text in enumerate(texts):
        expected = sacrebleu_tokens(text, name)
        assert got[row] == expected, f"{name}, line {row} {text!r}: {got[row]} != {expected}"
        assert tokenize_line(text, name) == SACREBLEU[name](text), (name, text)


@pytest.mark.parametrize("name", TOKENIZERS)
@SETTINGS
@given(texts=lines)
def test_adversarial_lines_equal_sacrebleu(name: str, texts: list[str]) -> None:
    assert_tokens_equal(texts, name)


@pytest.mark.parametrize("name", TOKENIZERS)
@SETTINGS
@given(texts=lines)
def test_token_ids_equal_sacrebleu_tokens(name: str, texts: list[str]) -> None:
    """One vocabulary over two calls: IDs name the tokens sacrebleu returns, lengths count
    them, and equal tokens get equal IDs across calls."""
    vocab = TokenVocab(name)
    first = vocab.encode_batch(texts)
    second = vocab.encode_flat(texts[::-1])
    tokens = vocab.tokens
    assert first.ids.dtype == torch.long and first.ids.shape[0] == len(texts)
    for row, text in enumerate(texts):
        length = int(first.lengths[row])
        assert [tokens[i] for i in first.ids[row, :length].tolist()] == sacrebleu_tokens(text, name)
        assert (first.ids[row, length:] == -1).all()
    assert second.lengths.tolist() == first.lengths.tolist()[::-1]
    assert len(vocab) == len(set(tokens))


CHARS_BY_CATEGORY: dict[str, list[str]] = {}
for code in range(sys.maxunicode + 1):
    CHARS_BY_CATEGORY.setdefault(unicodedata.category(chr(code)), []).append(chr(code))
# Surrogates cannot be UTF-8 lines; test_lone_surrogates covers them.
CATEGORIES = sorted(set(CHARS_BY_CATEGORY) - {"Cs"})
any_category_char = st.sampled_from(CATEGORIES).flatmap(
    lambda category: st.sampled_from(CHARS_BY_CATEGORY[category])
)
NEIGHBOURS = [" ", ".", ",", "5", "-", "!", "$", "\u3002", "\u0663"]


@SETTINGS
@given(texts=st.lists(
    st.lists(st.one_of(any_category_char, st.sampled_from(NEIGHBOURS)), max_size=16).map("".join),
    min_size=1, max_size=6,
))  # fmt: skip
def test_intl_with_characters_of_every_unicode_category(texts: list[str]) -> None:
    assert_tokens_equal(texts, "intl")


@pytest.mark.parametrize("category", CATEGORIES)
def test_intl_each_unicode_category_next_to_what_the_rules_read(category: str) -> None:
    """The first, middle and last character of the category at a line's start and end, and
    between digits, punctuation, symbols and spaces."""
    members = CHARS_BY_CATEGORY[category]
    texts = [
        template.format(c=char)
        for char in (members[0], members[len(members) // 2], members[-1])
        for template in ("{c}", "{c}.", ".{c}", "5{c}5", "{c}{c}!", "!{c}5", "5!{c}", " {c}. ",
                         "${c}$", "a{c},b", "\u3002{c}\u3002")
    ]  # fmt: skip
    assert_tokens_equal(texts, "intl")


def test_lone_surrogates() -> None:
    texts = ["\ud800.", "a\udfff,5 \ud83d!", "\udc00"]
    for name in TOKENIZERS:
        assert_tokens_equal(texts, name)


EDGES = [
    "", " ", "   leading and trailing   ", ".", ",", "-", ".5", "5.", "-5", "5-", "5-5", "5--5",
    "a..5", "5..a", "5...", "...5", "5.,.5", ",.,.,", "x.,.,7", "!!5", " !!5", "5!!", "5!! ",
    "$5.50", "(ok).", "&quot;quoted&quot;", "&amp;quot;", "&amp;lt;", "<skipped>", "a<skipped>b",
    "a-\nb", "a\nb", "line-\n", "-\n-\n", "U.S.A.", "e-mail", "1,000,000.00", "1.000,00",
    "it's", "don't.", "\u00ab\u00a0Bonjour\u00a0\u00bb", "\u6771\u4eac\u3002\u5317\u4eac",
    "1\u30012", "word,", "5,", "5.", "\u0663,", "caf\u00e9.", "x)", "7%", "a'", "a-", "5-",
    "\u0663.\u0664", "\u00bd.", "x\u2028.", ".\u2028", "\U0001f600.\U0001f600",
]  # fmt: skip


@pytest.mark.parametrize("name", TOKENIZERS)
def test_named_edges(name: str) -> None:
    assert_tokens_equal(EDGES, name)
    assert_tokens_equal([" ".join(EDGES), "".join(EDGES)], name)


@pytest.mark.parametrize("name", TOKENIZERS)
def test_real_sentences(name: str) -> None:
    demo = resources.files("tensortext").joinpath("data/demo")
    texts = [
        'He said: "It costs $5.50 (approx.), not 4-5 euros!"',
        "Mr. O'Neil's e-mail -- sent on 2024-05-01 -- read: 3,000 units & more...",
        "The U.S. economy grew 2.5% in Q3; analysts (e.g. Smith) expected 2,1%.",
        "Die Zahl 1.000,50 \u20ac \u2013 \u201eAnf\u00fchrungszeichen\u201c, oder?",
        *(demo / "multilingual.txt").read_text(encoding="utf-8").splitlines(),
        *(demo / "translate.ref").read_text(encoding="utf-8").splitlines()[:50],
    ]
    assert_tokens_equal(texts, name)


@SETTINGS
@given(rows=st.lists(st.lists(st.integers(0, 2**63 - 1), max_size=12), min_size=1, max_size=6))
def test_id_lines_are_their_own_13a_tokens(rows: list[list[int]]) -> None:
    """Why ID files score the same without --ids: a line of canonical decimal integers is its
    own 13a tokenization (no digit is split), so the tokens are the IDs, one for one."""
    texts = [" ".join(map(str, row)) for row in rows]
    assert tokenize_lines(texts, "13a") == [[str(i) for i in row] for row in rows]
    # Not so for a non-canonical spelling: "007" and "7" are one ID but two 13a tokens.
    assert tokenize_lines(["007 7"])[0] == ["007", "7"]


@pytest.mark.parametrize("name", ["13a", "intl", "char"])
@SETTINGS
@given(lowercase=st.booleans(), data=st.data())
def test_bleu_on_token_ids_equals_sacrebleu(
    name: str, lowercase: bool, data: st.DataObject
) -> None:
    """Corpus BLEU of the IDs equals sacrebleu's BLEU of the text (two references; lowercasing
    and trailing-whitespace stripping happen before tokenizing, as sacrebleu's BLEU does)."""
    words = st.sampled_from(["a", "b", "A", "5", "5.5", ".", ",", "-", "(", "!", "\u3002"])
    text = st.lists(st.one_of(words, st.just(" ")), max_size=14).map("".join)
    hyps = data.draw(st.lists(text, min_size=1, max_size=5))
    refs = [data.draw(st.lists(text, min_size=len(hyps), max_size=len(hyps))) for _ in range(2)]
    expected = SacreBLEU(tokenize=name, lowercase=lowercase).corpus_score(hyps, refs)

    def prepare(texts: list[str]) -> list[str]:
        return [(t.lower() if lowercase else t).rstrip() for t in texts]

    vocab = TokenVocab(name)
    hyp = vocab.encode_batch(prepare(hyps))
    ref_sets = [vocab.encode_batch(prepare(r)) for r in refs]
    width = max(r.ids.shape[1] for r in ref_sets)
    ref_ids = torch.stack(
        [torch.nn.functional.pad(r.ids, (0, width - r.ids.shape[1]), value=-1) for r in ref_sets], 1
    )
    ref = Padded(ref_ids, torch.stack([r.lengths for r in ref_sets], 1))
    config = BleuConfig(dtype=torch.float64)
    stats = bleu_stats(hyp, ref, config=config)
    assert stats.sum(0)[:2].tolist() == [expected.sys_len, expected.ref_len]
    # float64 on both sides: the same formula on the same integers.
    score = bleu_from_stats(stats.sum(0), config=config)
    torch.testing.assert_close(100 * score, torch.tensor(expected.score, dtype=torch.float64))


@pytest.mark.parametrize("name", sorted(UNSUPPORTED_TOKENIZERS))
def test_other_sacrebleu_tokenizers_are_refused_with_what_to_use(name: str) -> None:
    with pytest.raises(ValueError, match=f"tokenize='{name}' is not implemented: .*sacrebleu"):
        tokenize_lines(["a"], name)
    with pytest.raises(ValueError, match="pass one of 13a, intl, char, none"):
        TokenVocab("13A")
    with pytest.raises(TypeError, match="tokenize must be a str"):
        tokenize_line("a", None)  # type: ignore[arg-type]


def test_empty_inputs() -> None:
    assert tokenize_lines([], "13a") == []
    padded = TokenVocab().encode_batch([])
    assert padded.ids.shape == (0, 1) and padded.lengths.shape == (0,)
    flat = TokenVocab().encode_flat(["", "  "])
    assert flat.ids.tolist() == [] and flat.lengths.tolist() == [0, 0]


def test_a_long_line() -> None:
    text = "Word, 3.5 (x) -- " * 20_000 + "end."
    assert_tokens_equal([text, text[::-1]], "13a")
    assert_tokens_equal([text], "intl")


def test_encode_batch_on_device(device: str) -> None:
    padded = TokenVocab("13a").encode_batch(["a, b.", "", "b"], device=device)
    assert padded.ids.device.type == device and padded.lengths.tolist() == [4, 0, 1]
    assert padded.ids.cpu().tolist() == [[0, 1, 2, 3], [-1, -1, -1, -1], [2, -1, -1, -1]]


def test_docstring_examples() -> None:
    result = doctest.testmod(tokenizers)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("name", TOKENIZERS)
def test_a_real_nul_chunk_and_the_line_separator_do_not_mix(name: str) -> None:
    """Lines are joined with a NUL chunk when none holds one; a real NUL chunk seen in an
    earlier (line-by-line) call keeps its tokens, and the separator never becomes a token."""
    vocab = TokenVocab(name)
    calls = [["a \x00 b.", "\x00"], ["a b.", "c", ""], ["\x00 c"]]
    for texts in calls:
        flat = vocab.encode_flat(texts)
        words = [vocab.tokens[i] for i in flat.ids.tolist()]
        assert words == [t for text in texts for t in sacrebleu_tokens(text, name)], texts
        assert flat.lengths.tolist() == [len(sacrebleu_tokens(text, name)) for text in texts]
    fresh = TokenVocab(name)
    fresh.encode_flat(["a b.", "c", ""])
    assert "\x00" not in fresh.tokens
