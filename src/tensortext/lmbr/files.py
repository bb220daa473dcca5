"""Evidence files of LMBR: Moses n-best lists and SGNMT/ucam-smt n-gram posterior files.

Readers raise ``ValueError`` naming the file and line of a malformed entry (``OSError`` when a
file cannot be read); the CLI turns both into one-line errors. Text is read by
:func:`tensortext.formats.read_lines` (lines end at ``\\n`` only), as every reader of the package.

* :func:`read_nbest` / :func:`write_nbest`: Moses n-best lists
  (``id ||| tokens ||| features ||| score``), read as :class:`~tensortext.lmbr.Evidence`.
* :func:`read_ngram_posterior_files`: SGNMT/ucam-smt ``w1 ... wn : posterior`` files.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TextIO

import torch

from tensortext._checks import check_int
from tensortext.formats import read_lines
from tensortext.lmbr.posteriors import Evidence
from tensortext.padded import PAD_ID

__all__ = ["read_nbest", "read_ngram_posterior_files", "write_nbest"]


def write_nbest(
    stream: TextIO, texts: Sequence[Sequence[str]], scores: Sequence[Sequence[float]]
) -> None:
    """Writes Moses n-best lines ``id ||| text |||  ||| score`` (empty features, 6 decimals).

    Args:
        stream: Where to write.
        texts: For each sentence ``i`` (0-based), its hypotheses, best first.
        scores: The score of each hypothesis, same shape as ``texts``.

    Example:
        >>> import io
        >>> out = io.StringIO()
        >>> write_nbest(out, [["a b", "a"]], [[-0.5, -1.25]])
        >>> print(out.getvalue(), end="")
        0 ||| a b |||  ||| -0.500000
        0 ||| a |||  ||| -1.250000
    """
    if len(texts) != len(scores):
        raise ValueError(f"texts has {len(texts)} sentences but scores {len(scores)}")
    for i, (hyps, hyp_scores) in enumerate(zip(texts, scores, strict=True)):
        if len(hyps) != len(hyp_scores):
            raise ValueError(
                f"sentence {i} has {len(hyps)} hypotheses but {len(hyp_scores)} scores"
            )
        for text, score in zip(hyps, hyp_scores, strict=True):
            stream.write(f"{i} ||| {text} |||  ||| {score:.6f}\n")


# A hypothesis as read: (token IDs, score, "file:line").
_Hypothesis = tuple[list[int], float, str]

# read_nbest pads to at most this many times the tokens it read (empty hypotheses count as one),
# and always allows _ALWAYS_PADDED token slots (128 MiB of int64).
_MAX_PADDING = 64
_ALWAYS_PADDED = 2**24


def read_nbest(
    path: str | os.PathLike[str],
    *,
    num_sentences: int | None = None,
    tokenize: Callable[[str], Sequence[int]] | None = None,
    max_hypotheses: int | None = None,
    max_length: int | None = None,
    device: torch.device | str | None = None,
) -> Evidence:
    """Reads a Moses-style n-best file: ``id ||| tokens ||| features ||| score`` per line.

    Fields after the score (alignments) are ignored, and so are blank lines.

    The evidence is dense, ``[B, M, L]`` (what :func:`~tensortext.lmbr.ngram_posteriors`
    takes), so one outlier would pad every slot to its size: a runaway 100,000-token hypothesis
    in a 20,000-sentence file asks for gigabytes, and so does a sentence id of ``10**8``. Such a
    file is refused before anything is allocated: the padded ids may hold at most 64 times the
    tokens read (an empty hypothesis counts as one), or ``2**24`` slots (128 MiB) whatever was
    read. The error names the longest hypothesis's line and the largest sentence id's line.

    Args:
        path: The file; sentence ids are 0-based and lines of a sentence keep their order.
        num_sentences: ``B``; default ``1 + the largest id``. Sentences without lines get no
            hypotheses (all scores ``-inf``).
        tokenize: Maps the text field to token IDs; default: whitespace-separated integers.
        max_hypotheses: Keep at most this many hypotheses per sentence (the first ones);
            ``>= 1`` or ``None`` (all).
        max_length: Cut every hypothesis to its first ``max_length`` tokens; ``>= 1`` or
            ``None`` (keep whole hypotheses).
        device: Where the tensors go (CPU by default).

    Returns:
        :class:`~tensortext.lmbr.Evidence` ``(ids [B, M, L] int64 padded with PAD_ID,
        lengths [B, M] int64, scores [B, M] float64)``, ``-inf`` scores marking absent slots.

    Raises:
        TypeError: ``num_sentences``, ``max_hypotheses`` or ``max_length`` not an int.
        ValueError: ``num_sentences < 0``, ``max_hypotheses < 1`` or ``max_length < 1`` (before
            reading); a malformed entry or a sentence id ``>= num_sentences`` (naming the file
            and line); or padding beyond the bound above.
    """
    # Checked before reading: a negative slice end would silently drop the last ones.
    for name, value, minimum in (
        ("num_sentences", num_sentences, 0),
        ("max_hypotheses", max_hypotheses, 1),
        ("max_length", max_length, 1),
    ):
        if value is not None:
            check_int(name, value, minimum=minimum)
    by_sentence: dict[int, list[_Hypothesis]] = {}
    for where, line in _numbered_lines(path):
        sentence, ids, score = _parse_nbest_line(where, line, tokenize)
        hyps = by_sentence.setdefault(sentence, [])
        if max_hypotheses is None or len(hyps) < max_hypotheses:
            hyps.append((ids[:max_length], score, where))
    largest = max(by_sentence, default=-1)
    count = largest + 1 if num_sentences is None else num_sentences
    if largest >= count:
        where = by_sentence[largest][0][2]
        raise ValueError(f"{where}: sentence id {largest} >= num_sentences={count}")
    _check_padding(path, by_sentence, count, given=num_sentences is not None)
    return _pad_evidence([by_sentence.get(s, []) for s in range(count)], device)


def _check_padding(
    path: str | os.PathLike[str],
    by_sentence: dict[int, list[_Hypothesis]],
    count: int,
    *,
    given: bool,
) -> None:
    """Refuse evidence whose padded ids ``[B, M, L]`` dwarf what was read (see read_nbest).

    The error names the dimensions that stand out (at least twice their mean, or the one that
    stands out most), with the line responsible and the option that bounds it.
    """
    hyps = [hyp for sentence in by_sentence.values() for hyp in sentence]
    M = max([len(sentence) for sentence in by_sentence.values()] + [1])
    L = max([len(ids) for ids, _, _ in hyps] + [1])
    read = sum(max(len(ids), 1) for ids, _, _ in hyps)
    slots = count * M * L
    if slots <= max(_ALWAYS_PADDED, _MAX_PADDING * read):
        return
    # (how far the dimension exceeds its mean, what to say about it)
    causes: list[tuple[float, str]] = []
    if given:
        why = f"B = num_sentences={count}: pass the number of sentences the file has"
    else:
        why = (
            f"B = 1 + the largest sentence id = {count} ({by_sentence[count - 1][0][2]}): ids "
            "are 0-based sentence numbers; fix that id"
        )
    causes.append((count / max(len(by_sentence), 1), why))
    if hyps:
        longest = max(hyps, key=lambda hyp: len(hyp[0]))[2]
        why = f"the longest hypothesis ({longest}) has L = {L} tokens: pass max_length="
        causes.append((L * len(hyps) / read, why))
        fullest = max(by_sentence, key=lambda s: len(by_sentence[s]))
        why = f"sentence {fullest} has M = {M} hypotheses: pass max_hypotheses="
        causes.append((M * len(by_sentence) / len(hyps), why))
    causes.sort(key=lambda cause: -cause[0])
    named = [why for ratio, why in causes[1:] if ratio >= 2]
    raise ValueError(
        f"{path}: padding the n-best lists to [B, M, L] = [{count}, {M}, {L}] would take "
        f"{slots:,} token slots ({slots * 8 / 2**30:.1f} GiB) for {read:,} tokens read (the "
        f"limit: {_MAX_PADDING} times the tokens read, or 2**24 slots); "
        + "; ".join([causes[0][1], *named])
    )


def _numbered_lines(path: str | os.PathLike[str]) -> Iterator[tuple[str, str]]:
    """``(where, line)`` of each non-blank line, ``where`` being ``file:line``."""
    for number, line in enumerate(read_lines(path), start=1):
        if line.strip():
            yield f"{path}:{number}", line


def _parse_nbest_line(
    where: str, line: str, tokenize: Callable[[str], Sequence[int]] | None
) -> tuple[int, list[int], float]:
    """``(sentence id, token IDs, score)`` of one n-best line."""
    fields = [field.strip() for field in line.rstrip("\n").split("|||")]
    if len(fields) < 4:
        raise ValueError(f"{where}: expected 'id ||| tokens ||| features ||| score'")
    try:
        sentence = int(fields[0])
        score = float(fields[3])
    except ValueError:
        raise ValueError(
            f"{where}: the id must be an integer and the score a number, got "
            f"{fields[0]!r} and {fields[3]!r}"
        ) from None
    if sentence < 0 or math.isnan(score) or score == math.inf:
        raise ValueError(f"{where}: id must be >= 0 and score finite or -inf")
    try:
        if tokenize is None:
            ids = [int(token) for token in fields[1].split()]
        else:
            ids = list(tokenize(fields[1]))
    except ValueError as error:
        if tokenize is None:
            detail = "tokens must be integer IDs (pass tokenize= for text)"
            raise ValueError(f"{where}: {detail}") from None
        raise ValueError(f"{where}: {error}") from None
    return sentence, ids, score


def _pad_evidence(lists: list[list[_Hypothesis]], device: torch.device | str | None) -> Evidence:
    """``B`` lists of ``(ids, score, where)`` as padded :class:`~tensortext.lmbr.Evidence`."""
    count = len(lists)
    M = max([len(hyps) for hyps in lists] + [1])
    L = max([len(ids) for hyps in lists for ids, _, _ in hyps] + [1])
    ids_tensor = torch.full((count, M, L), PAD_ID, dtype=torch.int64)
    lengths = torch.zeros((count, M), dtype=torch.int64)
    scores = torch.full((count, M), -math.inf, dtype=torch.float64)
    for s, hyps in enumerate(lists):
        for m, (ids, score, _) in enumerate(hyps):
            ids_tensor[s, m, : len(ids)] = torch.tensor(ids, dtype=torch.int64)
            lengths[s, m] = len(ids)
            scores[s, m] = score
    return Evidence(ids_tensor.to(device), lengths.to(device), scores.to(device))


def read_ngram_posterior_files(
    paths: str | Sequence[str | os.PathLike[str]],
    *,
    num_sentences: int | None = None,
    first_id: int = 1,
) -> list[dict[tuple[int, ...], float]]:
    """Reads SGNMT/ucam-smt n-gram posterior files: ``w1 ... wn : posterior`` lines.

    Args:
        paths: One file per sentence, or a pattern with ``%d`` for the sentence id (SGNMT's
            convention, with ``num_sentences`` and ``first_id``).
        num_sentences: With a pattern: how many sentences.
        first_id: With a pattern: the id of the first sentence (SGNMT counts from 1).

    Returns:
        For each sentence, ``{ngram: posterior}``; build with
        :meth:`~tensortext.lmbr.NgramPosteriors.from_ngrams` or
        :func:`~tensortext.lmbr.lmbr_bias_factory` (with ``bos_id``/``end_id`` if the files
        contain ``<s>``/``</s>`` IDs).

    Raises:
        ValueError: a pattern without ``%d`` or ``num_sentences``, or a malformed or repeated
            line (naming the file and line).
    """
    if isinstance(paths, str):
        if "%d" not in paths or num_sentences is None:
            raise ValueError("a path pattern needs '%d' and num_sentences=")
        files = [Path(paths % (first_id + s)) for s in range(num_sentences)]
    else:
        files = [Path(p) for p in paths]
    return [_read_posterior_file(file) for file in files]


_POSTERIOR_LINE = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*)\s*:\s*(\S+)\s*$")


def _read_posterior_file(file: Path) -> dict[tuple[int, ...], float]:
    """``{ngram: posterior}`` of one SGNMT file."""
    table: dict[tuple[int, ...], float] = {}
    for where, line in _numbered_lines(file):
        match = _POSTERIOR_LINE.match(line)
        value = _float_or_none(match.group(2)) if match else None
        if match is None or value is None or not math.isfinite(value):
            raise ValueError(
                f"{where}: expected 'w1 ... wn : posterior' with integer IDs and a finite "
                f"number, got {line.rstrip()!r}"
            )
        ngram = tuple(int(w) for w in match.group(1).split())
        if ngram in table:
            raise ValueError(f"{where}: n-gram {' '.join(map(str, ngram))} repeats")
        table[ngram] = value
    return table


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None
