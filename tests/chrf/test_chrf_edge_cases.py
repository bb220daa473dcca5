"""Hand-picked chrF cases, sacrebleu's own test vectors, the character tables, and the errors.

Statistics must equal sacrebleu's exactly; scores within ``oracles.chrf.ATOL``.
"""

from __future__ import annotations

import doctest
import json
import random
import string
from typing import Any

import pytest
import torch
from oracles.chrf import (
    assert_scores_close,
    assert_stats_equal,
    codepoint_refs,
    codepoints,
    metric,
    ref_corpus,
    ref_sentence,
    ref_stats,
)

import tensortext.chrf.config
import tensortext.chrf.functional
import tensortext.chrf.metric
import tensortext.chrf.pairwise
import tensortext.chrf.result
import tensortext.chrf.text
from tensortext.chrf import (
    CHRF,
    ChrfConfig,
    chrf_from_stats,
    chrf_score,
    chrf_scores,
    chrf_stats,
    corpus_chrf,
    pairwise_chrf,
    sentence_chrf,
)
from tensortext.chrf.text import PUNCTUATION, WHITESPACE, is_space
from tensortext.padded import Padded

# name -> (hypothesis, references)
EDGE_CASES: dict[str, tuple[str, list[str | None]]] = {
    "empty hypothesis": ("", ["a reference"]),
    "empty reference": ("a hypothesis", [""]),
    "both empty": ("", [""]),
    "whitespace-only lines": (" \t\u3000 ", ["\n\x1c\x85 "]),
    "whitespace-only hypothesis": ("  \u2028 ", ["a b"]),
    "one character": ("a", ["a"]),
    "one-char words": ("a b c d", ["a b c e"]),
    "parenthesised word": ("(hi)", ["(hi) there", "hi"]),
    "punctuation words": ("() (( )) .a a. .", ["() ( ( ) ) . a a . ."]),
    "punctuation alone": ("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", ["!\"#$ %&'( )*+, -./"]),
    "spaces do not count": ("a b c", ["abc"]),
    "all references missing": ("some text", [None, None]),
    "first reference missing": ("the cat", [None, "the cat"]),
    "tie picks the first": ("ab", ["ac", "ad", "ab"]),
    "astral plane": ("😀😀 \U0001d518\U0001d518 😀", ["😀 \U0001d518 😀😀"]),
    "combining marks": ("e\u0301e\u0301 cafe\u0301", ["cafe\u0301 e\u0301"]),
    "CJK": ("日本語のテキストです。", ["日本語のテキスト。"]),
    "ASCII separators are whitespace": ("a\x1cb\x1dc\x1ed\x1fe", ["a b c d e"]),
    "zero-width space is not": ("a\u200bb", ["ab"]),
    "NUL and lone surrogate": ("a\x00b \ud800", ["a\x00b \ud800"]),
    "repeats": ("aaaaaaaaaa aaaa", ["aaaaaaa aaaaaaa aa"]),
    "long word": ("x" * 300 + " y", ["x" * 299 + "y y"]),
    "sacrebleu issue 124": ("(hi) (hi (hi)", ["hi) (hi) (hi"]),
}
OPTIONS: list[dict[str, Any]] = [
    {},
    {"word_order": 2},
    {"char_order": 3, "word_order": 3, "beta": 1, "eps_smoothing": True},
    {"whitespace": True, "word_order": 1},
    {"lowercase": True, "word_order": 2, "beta": 0.5},
]


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: json.dumps(o, sort_keys=True))
@pytest.mark.parametrize("name", list(EDGE_CASES))
def test_edge_cases(name: str, opts: dict[str, Any]) -> None:
    hyp, refs = EDGE_CASES[name]
    expected = ref_stats([hyp], [refs], **opts)
    assert_stats_equal(chrf_stats([hyp], [refs], **opts), expected, label=name)
    if not opts.get("lowercase"):
        tensors = chrf_stats(codepoints([hyp]), codepoint_refs([refs]), **opts)
        assert_stats_equal(tensors, expected, label=f"{name} (codepoints)")
    scores = sentence_chrf([hyp], [refs], dtype=torch.float64, **opts)
    assert_scores_close(
        scores, ref_sentence([hyp], [refs], **opts), dtype=torch.float64, label=name
    )


def test_the_whole_table_as_one_corpus() -> None:
    hyps = [hyp for hyp, _ in EDGE_CASES.values()]
    refs = [refs for _, refs in EDGE_CASES.values()]
    for opts in OPTIONS:
        for dtype in (torch.float32, torch.float64):
            ours = corpus_chrf(hyps, refs, dtype=dtype, **opts)
            assert_scores_close(
                ours, ref_corpus(hyps, refs, **opts), dtype=dtype, label=f"corpus {opts}"
            )


def test_final_sigma_lowercases_in_context() -> None:
    """str.lower() turns a word-final sigma into ς: lowercasing each text, not codepoints."""
    hyp, ref = "ΟΔΟΣ ΟΔΟΣΟ", "οδος οδοσο"
    assert hyp.lower() == "οδος οδοσο"
    assert chrf_stats([hyp], [ref], lowercase=True).tolist() == ref_stats(
        [hyp], [[ref]], lowercase=True
    )
    assert sentence_chrf([hyp], [ref], lowercase=True).tolist() == [1.0]


# sacrebleu's test/test_chrf.py (github.com/mjpost/sacrebleu, 2.6.0): inputs and expected
# scores as data; sacrebleu checks them to 1e-4 on 0..100.
SACREBLEU_SENTENCE = [
    (
        "Co nás nejvíc trápí, protože lékaři si vybírají, kdo bude žít a kdo zemře.",
        ["Nejvíce smutní jsme z toho, že musíme rozhodovat o tom, kdo bude žít a kdo zemře."],
        39.14078509,
    ),
    (
        "Nebo prostě nemají vybavení, které by jim pomohlo, uvedli lékaři.",
        ["A někdy nemáme ani potřebný materiál, abychom jim pomohli, popsali lékaři."],
        31.22557079,
    ),
    (
        "Lapali po dechu, jejich životy skončily dřív, než skutečně začaly.",
        ["Lapali po dechu a pak jejich život skončil - dřív, než skutečně mohl začít, připomněli."],
        57.15704367,
    ),
]
SACREBLEU_EPS = [
    (["abcdefg"], ["hijklmnop"], 0.0),
    (["a"], ["b"], 0.0),
    ([""], ["b"], 0.0),
    ([""], ["ref"], 0.0),
    ([""], ["reference"], 0.0),
    (["aa"], ["ab"], 8.3333),
    (["a", "b"], ["a", "c"], 8.3333),
    (["a"], ["a"], 16.6667),
    (["a b c"], ["a b c"], 50.0),
    (["a b c"], ["abc"], 50.0),
    (
        [
            " risk assessment must be made of those who are qualified and expertise in the "
            "sector - these are the scientists ."
        ],
        [
            "risk assessment has to be undertaken by those who are qualified and expert in that "
            "area - that is the scientists ."
        ],
        63.361730,
    ),
    (
        [" Die    Beziehung zwischen  Obama und Netanjahu ist nicht gerade  freundlich. "],
        ["Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."],
        64.1302698,
    ),
    (
        ["Niemand hat die Absicht, eine Mauer zu errichten"],
        ["Niemand hat die Absicht, eine Mauer zu errichten"],
        100.0,
    ),
]
SACREBLEU_EFFECTIVE_ORDER = [
    (["a"], ["a"], 100.0),
    ([""], ["reference"], 0.0),
    (["a b c"], ["a b c"], 100.0),
    (["a b c"], ["abc"], 100.0),
    ([""], ["c"], 0.0),
    (["a", "b"], ["a", "c"], 50.0),
    (["aa"], ["ab"], 25.0),
]
SACREBLEU_KEEP_WHITESPACE = [
    (
        ["Die Beziehung zwischen Obama und Netanjahu ist nicht gerade freundlich."],
        ["Das Verhältnis zwischen Obama und Netanyahu ist nicht gerade freundschaftlich."],
        67.3481606,
    ),
    (
        [
            "risk assessment must be made of those who are qualified and expertise in the "
            "sector - these are the scientists ."
        ],
        [
            "risk assessment has to be undertaken by those who are qualified and expert in that "
            "area - that is the scientists ."
        ],
        65.2414427,
    ),
]
SACREBLEU_VECTORS = (
    [
        ("sentence", [hyp], [[r] for r in refs], {"eps_smoothing": True}, score)
        for hyp, refs, score in SACREBLEU_SENTENCE
    ]
    + [
        ("eps", hyps, [[r] for r in refs], {"beta": 3, "eps_smoothing": True}, score)
        for hyps, refs, score in SACREBLEU_EPS
    ]
    + [
        ("effective order", hyps, [[r] for r in refs], {"beta": 3}, score)
        for hyps, refs, score in SACREBLEU_EFFECTIVE_ORDER
    ]
    + [
        ("keep whitespace", hyps, [[r] for r in refs], {"beta": 3, "whitespace": True}, score)
        for hyps, refs, score in SACREBLEU_KEEP_WHITESPACE
    ]
)


@pytest.mark.parametrize(
    ("kind", "hyps", "refs", "opts", "score"),
    SACREBLEU_VECTORS,
    ids=[f"{v[0]}-{i}" for i, v in enumerate(SACREBLEU_VECTORS)],
)
def test_sacrebleus_own_vectors(
    kind: str, hyps: list[str], refs: list[list[str]], opts: dict[str, Any], score: float
) -> None:
    """All 25 of sacrebleu's chrF test vectors, through corpus_chrf (sentence_chrf for the
    sentence-level ones), at sacrebleu's tolerance of 1e-4 on 0..100."""
    scorer = sentence_chrf if kind == "sentence" else corpus_chrf
    ours = scorer(hyps, refs, dtype=torch.float64, **opts)
    assert abs(100 * float(ours.reshape(-1)[0]) - score) < 1e-4


def test_whitespace_table_is_pythons() -> None:
    every = torch.arange(0x110000)
    table = is_space(every)
    expected = torch.tensor([chr(c).isspace() for c in range(0x110000)])
    assert torch.equal(table, expected)
    assert {chr(c) for c in WHITESPACE} == {c for c in map(chr, range(0x110000)) if c.isspace()}
    assert "".join(map(chr, PUNCTUATION)) == string.punctuation


def test_a_million_character_line() -> None:
    """A 1,000,000-character hypothesis and reference (sacrebleu takes seconds for it)."""
    rng = random.Random(0)
    hyp = "".join(rng.choice("ab cd.") for _ in range(1_000_000))
    ref = "".join(rng.choice("ab cd.") for _ in range(1_000_000))
    assert chrf_stats([hyp], [ref]).tolist() == ref_stats([hyp], [[ref]])


def test_large_alphabet_and_high_orders() -> None:
    """2,000 distinct characters (11-bit codes) and char_order=12: keys in several steps."""
    rng = random.Random(1)
    pool = [chr(0x4E00 + i) for i in range(2000)]
    hyps = [
        "".join(rng.choice(pool[: rng.choice([5, 2000])]) for _ in range(60)) for _ in range(20)
    ]
    refs = [[hyp[5:] + hyp[:5]] for hyp in hyps]
    opts = {"char_order": 12, "word_order": 2}
    assert chrf_stats(hyps, refs, **opts).tolist() == ref_stats(hyps, refs, **opts)
    assert (chrf_stats(hyps, refs, char_order=1000)[:, 3 * 60 :] == 0).all()  # orders > length


def test_long_words_get_exact_ids() -> None:
    """Words longer than one packed block (prefix doubling), equal only when equal."""
    rng = random.Random(2)
    words = ["".join(rng.choice("ab") for _ in range(rng.randint(1, 70))) for _ in range(12)]
    hyps = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(10)]
    refs = [[" ".join(rng.choice(words) for _ in range(8))] for _ in range(10)]
    opts = {"word_order": 3}
    assert chrf_stats(hyps, refs, **opts).tolist() == ref_stats(hyps, refs, **opts)


def test_result_prints_what_sacrebleu_prints() -> None:
    hyps, refs = ["the cat sat on the mat", "a dog"], [["the cat sat"], ["the dog"]]
    for opts in ({}, {"word_order": 2}, {"beta": 1.5, "word_order": 1}):
        scorer = metric(**opts)
        theirs = scorer.corpus_score(hyps, [[r[0] for r in refs]])
        ours = chrf_score(chrf_stats(hyps, refs, **opts).sum(0), ChrfConfig(**opts))
        assert ours.score == theirs.score and ours.name == theirs.name
        signature = str(scorer.get_signature())
        for kwargs in (
            {},
            {"width": 4},
            {"score_only": True},
            {"signature": signature},
            {"signature": signature, "is_json": True},
        ):
            assert ours.format(**kwargs) == theirs.format(**kwargs), kwargs
        assert str(ours) == str(theirs)
    rows = chrf_stats(hyps, refs)
    for row, score in zip(rows, chrf_scores(rows, ChrfConfig()), strict=True):
        assert score == chrf_score(row, ChrfConfig())


def test_chrf_from_stats_over_leading_dims() -> None:
    stats = chrf_stats(["ab", "abc", "x"], ["ab", "abd", "y"], char_order=2)
    scores = chrf_from_stats(stats.view(3, 1, 6), char_order=2)
    assert scores.shape == (3, 1)
    assert torch.equal(
        scores[:, 0], sentence_chrf(["ab", "abc", "x"], ["ab", "abd", "y"], char_order=2)
    )


def test_empty_batches() -> None:
    assert chrf_stats([], []).shape == (0, 18)
    assert sentence_chrf([], []).shape == (0,)
    assert float(corpus_chrf([], [])) == 0.0
    empty = Padded(torch.zeros(0, 4, dtype=torch.long), torch.zeros(0, dtype=torch.long))
    assert chrf_stats(empty, empty).shape == (0, 18)
    assert pairwise_chrf(torch.zeros(0, 3, 5, dtype=torch.long)).shape == (0, 3, 3)
    # Sentences without any reference slot score as zero statistics, like all-missing ones.
    no_slots = torch.zeros(1, 0, 3, dtype=torch.long)
    assert chrf_stats(torch.tensor([[97, 98]]), no_slots).tolist() == [[0] * 18]
    assert chrf_stats(["ab"], [[]]).tolist() == [[0] * 18]
    assert chrf_stats(("ab",), (("ab", None),)).tolist() == chrf_stats(["ab"], ["ab"]).tolist()


IDS = torch.tensor([[97, 98], [99, 100]])


def _error_cases() -> list[tuple[str, Any, type[Exception], str]]:
    """``(name, call, error, text the message must hold)``."""
    return [
        ("float codepoints", lambda: chrf_stats(IDS.float(), IDS), TypeError, "hyps"),
        ("float references", lambda: chrf_stats(IDS, IDS.float()), TypeError, "refs"),
        ("3-D hypotheses", lambda: chrf_stats(IDS[None], IDS), ValueError, "hyps"),
        ("4-D references", lambda: chrf_stats(IDS, IDS[None, None]), ValueError, "refs"),
        ("batch mismatch", lambda: chrf_stats(IDS, IDS[:1]), ValueError, "rows"),
        ("text batch mismatch", lambda: chrf_stats(["a", "b"], ["a"]), ValueError, "refs"),
        ("one string", lambda: chrf_stats("abc", ["abc"]), TypeError, "hyps"),
        ("text with tensors", lambda: chrf_stats(["ab", "cd"], IDS), TypeError, "both"),
        ("non-string text", lambda: chrf_stats(["a", 5], ["a", "b"]), TypeError, "strings"),
        ("non-string reference", lambda: chrf_stats(["a"], [[5]]), TypeError, "refs"),
        (
            "lengths with text",
            lambda: chrf_stats(["a"], ["a"], hyp_lens=IDS[0]),
            ValueError,
            "hyp_lens",
        ),
        (
            "lowercase with tensors",
            lambda: chrf_stats(IDS, IDS, lowercase=True),
            ValueError,
            "lowercase",
        ),
        ("negative codepoint", lambda: chrf_stats(-IDS, IDS), ValueError, "codepoint"),
        ("beyond Unicode", lambda: chrf_stats(IDS, IDS + 0x110000), ValueError, "codepoint"),
        (
            "length too long",
            lambda: chrf_stats(IDS, IDS, hyp_lens=torch.tensor([3, 1])),
            ValueError,
            "hyp_lens",
        ),
        (
            "float lengths",
            lambda: chrf_stats(IDS, IDS, hyp_lens=torch.tensor([1.0, 2.0])),
            TypeError,
            "hyp_lens",
        ),
        (
            "Padded and lengths",
            lambda: chrf_stats(
                Padded(IDS, torch.tensor([2, 2])), IDS, hyp_lens=torch.tensor([2, 2])
            ),
            ValueError,
            "hyp_lens",
        ),
        ("device of tensors", lambda: chrf_stats(IDS, IDS, device="meta"), ValueError, "device"),
        ("bad device", lambda: chrf_stats(["a"], ["a"], device="nope"), ValueError, "device"),
        ("char_order 0", lambda: chrf_stats(["a"], ["a"], char_order=0), ValueError, "char_order"),
        ("char_order float", lambda: ChrfConfig(char_order=6.0), TypeError, "char_order"),  # type: ignore[arg-type]
        ("word_order negative", lambda: ChrfConfig(word_order=-1), ValueError, "word_order"),
        ("order too high", lambda: ChrfConfig(word_order=10**6), ValueError, "word_order"),
        ("beta zero", lambda: ChrfConfig(beta=0), ValueError, "beta"),
        ("beta nan", lambda: ChrfConfig(beta=float("nan")), ValueError, "beta"),
        ("beta huge", lambda: ChrfConfig(beta=10**400), ValueError, "beta"),
        ("beta bool", lambda: ChrfConfig(beta=True), TypeError, "beta"),
        ("beta string", lambda: ChrfConfig(beta="2"), TypeError, "beta"),  # type: ignore[arg-type]
        ("lowercase string", lambda: ChrfConfig(lowercase="yes"), TypeError, "lowercase"),  # type: ignore[arg-type]
        ("half precision", lambda: ChrfConfig(dtype=torch.float16), TypeError, "dtype"),
        (
            "config and keywords",
            lambda: sentence_chrf(["a"], ["a"], config=ChrfConfig(), beta=3),
            ValueError,
            "config",
        ),
        ("config of another kind", lambda: CHRF(config=object()), TypeError, "config"),  # type: ignore[arg-type]
        ("unknown option", lambda: corpus_chrf(["a"], ["a"], bta=3), TypeError, "bta"),  # type: ignore[call-arg]
        (
            "stats width",
            lambda: chrf_from_stats(torch.zeros(17, dtype=torch.long)),
            ValueError,
            "stats",
        ),
        ("float stats", lambda: chrf_from_stats(torch.zeros(18)), TypeError, "stats"),
        (
            "score of a batch",
            lambda: chrf_score(torch.zeros(2, 18, dtype=torch.long), ChrfConfig()),
            ValueError,
            "stats",
        ),
        ("pairwise N differs", lambda: pairwise_chrf([["a", "b"], ["a"]]), ValueError, "N"),
        ("pairwise N = 0", lambda: pairwise_chrf([[], []]), ValueError, "N = 0"),
        ("pairwise 2-D", lambda: pairwise_chrf(IDS), ValueError, "candidates"),
        (
            "pairwise lowercase tensors",
            lambda: pairwise_chrf(IDS[None], lowercase=True),
            ValueError,
            "lowercase",
        ),
        ("pairwise negative", lambda: pairwise_chrf(-IDS[None]), ValueError, "codepoint"),
    ]


@pytest.mark.parametrize(
    ("name", "call", "error", "text"), _error_cases(), ids=[case[0] for case in _error_cases()]
)
def test_errors(name: str, call: Any, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=None) as raised:
        call()
    assert text in str(raised.value), f"{name}: {raised.value}"


def test_validate_false_skips_the_value_checks() -> None:
    """Out-of-range codepoints without validation: no error, some (meaningless) counts."""
    assert chrf_stats(-IDS, IDS, validate=False).shape == (2, 18)


@pytest.mark.parametrize(
    "module",
    [
        tensortext.chrf.config,
        tensortext.chrf.text,
        tensortext.chrf.functional,
        tensortext.chrf.pairwise,
        tensortext.chrf.metric,
        tensortext.chrf.result,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module: Any) -> None:
    result = doctest.testmod(module, extraglobs={"torch": torch})
    assert result.attempted > 0 and result.failed == 0
