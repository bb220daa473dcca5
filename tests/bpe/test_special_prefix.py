"""Special tokens where one begins another (``<tool>`` and ``<tool>_call``), against Hugging Face
``tokenizers`` and tiktoken (issue 16, item 24).

Hugging Face matches added tokens leftmost-longest (an Aho-Corasick automaton built with
``MatchKind::LeftmostLongest``, ``added_vocabulary.rs``), whatever their order in the file.

tiktoken joins its special tokens with ``|`` in the iteration order of a Rust ``FxHashMap`` and
takes the regex's leftmost-*first* match; a match that is not allowed stays text and the search
resumes one character after its start (``CoreBPE::encode``). Which of two tokens that start at
the same place wins therefore follows the hash map's layout: for ``{"<tool>": 259, "<tool>_call":
260}`` it is ``<tool>_call``, inserted the other way round it is ``<tool>``. tensortext always
tries the longest first, which equals tiktoken for the first dict (compared here) and Hugging
Face for any order. It scans as tiktoken does, too: with only ``<tool>`` allowed, the match
``<tool>_call`` stays text, and the ``<tool>`` it begins with is not split out.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from oracles.bpe import hf_byte_level_json, tiktoken_toy
from strategies import DEVICES

from tensortext.bpe import Encoding
from tensortext.bpe.patterns import CL100K_PATTERN
from tensortext.bpe.text import AllowedSpecial, DisallowedSpecial

BYTES = {bytes([b]): b for b in range(256)}
# A few merges, so that the text left around a special token merges too.
MERGES = [(b"c", b"a"), (b"ca", b"l"), (b"cal", b"l")]
RANKS = {**BYTES, b"ca": 256, b"cal": 257, b"call": 258}

TEXTS = {
    "issue": "a<tool>_call b<tool>c",
    "longer": "<tool>_call",
    "shorter": "<tool>",
    "longer cut short": "<tool>_cal",
    "shorter then longer": "<tool><tool>_call",
    "longer twice": "<tool>_call<tool>_call",
    "longer, then its tail again": "<tool>_call_call",
    "in brackets": "<<tool>_call>",
    "longest of three": "x<tool>_call_end<tool>_call_en",
    "no special": "call",
    "empty": "",
}


def toy(specials: dict[str, int]) -> Encoding:
    return Encoding("toy", pat_str=CL100K_PATTERN, mergeable_ranks=RANKS, special_tokens=specials)


def outcome(encoding: Any, text: str, **options: Any) -> list[int] | str:
    """``encoding.encode(text, **options)``, or the exception's type (tiktoken and we both
    raise ``ValueError`` for a disallowed special token)."""
    try:
        return list(encoding.encode(text, **options))
    except ValueError:
        return "ValueError"


# --------------------------------------------------------------------------------------------
# Hugging Face tokenizer.json
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "added",
    [
        ("<tool>", "<tool>_call"),
        ("<tool>_call", "<tool>"),
        ("<tool>", "<tool>_call", "<tool>_call_end"),
        # "_call" also starts inside "<tool>_call": once that one is taken, the scan goes on
        # after it, not from inside it.
        ("<tool>", "<tool>_call", "_call"),
    ],
    ids=["short-first", "long-first", "three", "inner"],
)
@pytest.mark.parametrize("device", DEVICES)
def test_added_tokens_like_tokenizers(tmp_path: Path, added: tuple[str, ...], device: str) -> None:
    from tokenizers import Tokenizer

    # IDs in file order: the ones ``tokenizers`` itself gives added tokens.
    added_ids = {content: len(RANKS) + index for index, content in enumerate(added)}
    spec = hf_byte_level_json(RANKS, MERGES, added_tokens=added_ids)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    reference = Tokenizer.from_file(str(path))
    ours = Encoding.from_hf_json(path)
    texts = list(TEXTS.values())
    ids, lengths = ours.encode_batch_to_tensor(texts, allowed_special="all", device=device)
    for row, (case, text) in enumerate(TEXTS.items()):
        expected = reference.encode(text, add_special_tokens=False).ids
        assert ours.encode(text, allowed_special="all") == expected, f"{case}: {text!r}"
        got = ids[row, : lengths[row]].tolist()
        assert got == expected, f"{case}, batch on {device}: {text!r}: {got} != {expected}"


# --------------------------------------------------------------------------------------------
# tiktoken
# --------------------------------------------------------------------------------------------

SPECIALS = {"<tool>": 259, "<tool>_call": 260}


@pytest.mark.parametrize(
    "allowed",
    ["all", frozenset({"<tool>"}), frozenset({"<tool>_call"}), frozenset()],
    ids=["all", "shorter", "longer", "none"],
)
@pytest.mark.parametrize("checked", [True, False], ids=["disallowed-all", "disallowed-none"])
def test_special_tokens_like_tiktoken(allowed: AllowedSpecial, checked: bool) -> None:
    """With only ``<tool>`` allowed, tiktoken's ``<tool>_call`` match stays text (and raises
    unless ``disallowed_special=()``): its ``<tool>`` is not split out."""
    reference = tiktoken_toy(RANKS, pat_str=CL100K_PATTERN, special_tokens=SPECIALS)
    disallowed: DisallowedSpecial = "all" if checked else ()
    for reversed_dict in (False, True):
        # Our choice does not depend on the dict's order (tiktoken's does: see the docstring).
        specials = dict(reversed(SPECIALS.items())) if reversed_dict else SPECIALS
        ours = toy(specials)
        for case, text in TEXTS.items():
            options = {"allowed_special": allowed, "disallowed_special": disallowed}
            expected = outcome(reference, text, **options)
            got = outcome(ours, text, **options)
            assert got == expected, (
                f"{case}: {text!r}, allowed_special={allowed!r}, disallowed_special="
                f"{disallowed!r}, specials in order {list(specials)}: {got} != {expected}"
            )


def test_tiktoken_takes_the_longer_token_for_this_dict() -> None:
    """The premise of the comparison above: tiktoken tries ``<tool>_call`` first for this dict
    (an ``FxHashMap`` layout; if a tiktoken release changes it, the comparison needs the dict
    inserted the other way round)."""
    reference = tiktoken_toy(RANKS, pat_str=CL100K_PATTERN, special_tokens=SPECIALS)
    assert reference.encode("<tool>_call", allowed_special="all") == [SPECIALS["<tool>_call"]]


OVERLAPPING = {"<tool>_call": 259, "call>": 260}


@pytest.mark.parametrize(
    "allowed",
    ["all", frozenset({"<tool>_call"}), frozenset({"call>"})],
    ids=["all", "first", "second"],
)
def test_overlapping_special_tokens_like_tiktoken(allowed: AllowedSpecial) -> None:
    """Two tokens that overlap but start at different places: the leftmost wins in any order;
    if it is not allowed, the scan resumes inside it and finds the other."""
    for specials in (OVERLAPPING, dict(reversed(OVERLAPPING.items()))):
        reference = tiktoken_toy(RANKS, pat_str=CL100K_PATTERN, special_tokens=specials)
        ours = toy(specials)
        for text in ["<tool>_call>", "a<tool>_call> b", "call><tool>_call", "<tool>_call>>"]:
            expected = reference.encode(text, allowed_special=allowed, disallowed_special=())
            got = ours.encode(text, allowed_special=allowed, disallowed_special=())
            assert got == expected, (
                f"{text!r}, allowed_special={allowed!r}, specials in order {list(specials)}: "
                f"{got} != {expected}"
            )
