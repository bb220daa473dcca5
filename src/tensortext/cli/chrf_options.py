"""chrF in ``tensortext bleu -m chrf``: sacrebleu's chrF flags, their config, and what it prints.

chrF scores the text of the lines (trailing whitespace dropped, as sacrebleu reads them), never
BLEU's tokens; ``-lc`` is BLEU's, ``--chrf-lowercase`` chrF's, as in sacrebleu.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterator

import torch
from torch import Tensor

from tensortext import __version__
from tensortext._checks import MAX_NGRAM_ORDER
from tensortext.chrf import ChrfConfig, chrf_score, chrf_stats
from tensortext.cli.common import CliError, check_int_flag, user_errors
from tensortext.cli.scoring import json_record

__all__ = [
    "CHRF_BLOCK_CHARS",
    "CHRF_BLOCK_LINES",
    "add_chrf_arguments",
    "config_from",
    "results",
    "signature",
]

CHRF_BLOCK_LINES = 8192
"""The most segments per call of :func:`~tensortext.chrf.chrf_stats`."""

CHRF_BLOCK_CHARS = 1 << 22
"""The most characters (hypotheses and references) per call, past its first segment: memory
follows characters, a few int64 buffers each, so a block of long lines is cut shorter."""

_SHORT_NAMES = {"nrefs": "#", "case": "c", "eff": "e", "space": "s", "version": "v"}


def add_chrf_arguments(parser: argparse.ArgumentParser) -> None:
    """sacrebleu's chrF flags, with :class:`~tensortext.chrf.ChrfConfig`'s defaults."""
    defaults = ChrfConfig()
    group = parser.add_argument_group("chrF (-m chrf)")
    group.add_argument(
        "-cc",
        "--chrf-char-order",
        type=int,
        default=defaults.char_order,
        help=f"character n-gram order (default: {defaults.char_order})",
    )
    group.add_argument(
        "-cw",
        "--chrf-word-order",
        type=int,
        default=defaults.word_order,
        help=f"word n-gram order; 2 is chrF++ (default: {defaults.word_order})",
    )
    group.add_argument(
        "--chrf-beta",
        type=int,
        default=defaults.beta,
        help=f"weight of recall against precision (default: {defaults.beta})",
    )
    group.add_argument(
        "--chrf-whitespace",
        action="store_true",
        help="keep whitespace in character n-grams (default: off)",
    )
    group.add_argument(
        "--chrf-lowercase", action="store_true", help="lowercase before chrF (default: off)"
    )
    group.add_argument(
        "--chrf-eps-smoothing",
        action="store_true",
        help="epsilon smoothing (chrF++.py, NLTK, Moses) instead of sacrebleu's effective "
        "order (default: off)",
    )


def config_from(args: argparse.Namespace) -> ChrfConfig:
    """The chrF flags as one validated :class:`~tensortext.chrf.ChrfConfig` (float64, as the
    printed scores are rounded to ``--width`` decimals); a bad value names its flag."""
    check_int_flag("-cc/--chrf-char-order", args.chrf_char_order, 1, MAX_NGRAM_ORDER)
    check_int_flag("-cw/--chrf-word-order", args.chrf_word_order, 0, MAX_NGRAM_ORDER)
    if not (math.isfinite(args.chrf_beta) and args.chrf_beta > 0):
        raise CliError(f"--chrf-beta must be a finite number above 0, got {args.chrf_beta}")
    with user_errors(TypeError, ValueError):
        return ChrfConfig(
            char_order=args.chrf_char_order,
            word_order=args.chrf_word_order,
            beta=args.chrf_beta,
            lowercase=args.chrf_lowercase,
            whitespace=args.chrf_whitespace,
            eps_smoothing=args.chrf_eps_smoothing,
            dtype=torch.float64,
        )


def signature(config: ChrfConfig, num_refs: int) -> dict[str, str]:
    """sacrebleu's chrF signature fields: ``nrefs, case, eff, nc, nw, space, version``."""
    return {
        "nrefs": str(num_refs),
        "case": "lc" if config.lowercase else "mixed",
        "eff": "no" if config.eps_smoothing else "yes",
        "nc": str(config.char_order),
        "nw": str(config.word_order),
        "space": "yes" if config.whitespace else "no",
        "version": __version__,
    }


def _stats(
    config: ChrfConfig, hyp_lines: list[str], ref_lines: list[list[str]], device: torch.device
) -> Tensor:
    """``[B, 3 * (C + W)]`` chrF statistics, in blocks of at most :data:`CHRF_BLOCK_LINES`
    segments and :data:`CHRF_BLOCK_CHARS` characters."""
    blocks = []
    for start, end in _blocks(hyp_lines, ref_lines):
        refs = list(zip(*(lines[start:end] for lines in ref_lines), strict=True))
        with user_errors(ValueError):
            block = chrf_stats(hyp_lines[start:end], refs, config=config, device=device)
        blocks.append(block.cpu())
    return torch.cat(blocks)


def _blocks(hyp_lines: list[str], ref_lines: list[list[str]]) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive blocks within both budgets (one segment at least)."""
    start = 0
    while start < len(hyp_lines):
        end, chars = start, 0
        while end < len(hyp_lines) and end - start < CHRF_BLOCK_LINES:
            chars += len(hyp_lines[end]) + sum(len(lines[end]) for lines in ref_lines)
            if chars > CHRF_BLOCK_CHARS and end > start:
                break
            end += 1
        yield start, end
        start = end


def results(
    args: argparse.Namespace,
    config: ChrfConfig,
    hyp_lines: list[str],
    ref_lines: list[list[str]],
    device: torch.device,
) -> list[str]:
    """What chrF prints: one string per segment with -sl, else one for the corpus."""
    stats = _stats(config, hyp_lines, ref_lines, device)
    fields = signature(config, len(ref_lines))
    short = {_SHORT_NAMES.get(key, key): value for key, value in fields.items()}
    sig = "|".join(f"{key}:{value}" for key, value in (short if args.short else fields).items())
    rows = list(stats) if args.sentence_level else [stats.sum(0)]
    scores = [chrf_score(row, config) for row in rows]
    if args.format == "json" and not args.score_only:
        indent = None if args.sentence_level else 1
        return [json_record(s.name, s.score, args.width, fields, indent=indent) for s in scores]
    return [s.format(args.width, args.score_only, sig) for s in scores]
