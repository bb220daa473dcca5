"""Token-ID BLEU of hypotheses (stdin or -i) against one or more reference files, one segment
per line; sacrebleu's output (0-100, with a signature), or one score per segment."""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Sequence
from typing import Any, TextIO

import torch
from torch import Tensor

from tensortext import __version__
from tensortext.bleu import NLTK_METHODS, SACREBLEU_METHODS, BleuConfig, bleu_from_stats, bleu_stats
from tensortext.cli.common import (
    CliError,
    add_device_argument,
    device_from,
    read_lines,
    user_errors,
)
from tensortext.cli.tokenize import load_encoding, parse_id_lines
from tensortext.padded import pad_ragged, pad_ragged_refs

__all__ = ["add_arguments", "config_from", "describe", "run", "signature", "tokens_to_ids"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("refs", nargs="+", metavar="REF", help="reference file(s), one per line")
    parser.add_argument("-i", "--input", help="hypothesis file (default: standard input)")
    tokenize = parser.add_mutually_exclusive_group()
    tokenize.add_argument(
        "--ids",
        dest="tokenize",
        action="store_const",
        const="ids",
        help="lines are space-separated integer token IDs (default)",
    )
    tokenize.add_argument(
        "--tokenize",
        dest="tokenize",
        choices=["none"],
        help="'none': lines are whitespace-separated tokens, mapped to IDs",
    )
    tokenize.add_argument(
        "-e",
        "--encoding",
        metavar="ENCODING",
        help="lines are text, tokenized with a BPE encoding (a name such as cl100k_base, or a "
        "tokenizer.json path); special-token text is scored as ordinary text",
    )
    parser.set_defaults(tokenize="ids")
    parser.add_argument("--sentence-level", action="store_true", help="one score per segment")
    parser.add_argument("-f", "--format", choices=["text", "json"], default="text")
    parser.add_argument("-b", "--score-only", action="store_true", help="print only the score")
    parser.add_argument("-w", "--width", type=int, default=1, help="decimals to print (default 1)")
    _add_scoring_arguments(parser)
    add_device_argument(parser)


def _add_scoring_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of :class:`~tensortext.bleu.BleuConfig`'s options (defaults are its own)."""
    defaults = BleuConfig()
    parser.add_argument("--compat", choices=["sacrebleu", "nltk"], default=defaults.compat)
    parser.add_argument(
        "-s",
        "--smooth-method",
        default=defaults.smooth_method,
        choices=[*SACREBLEU_METHODS, *NLTK_METHODS],
        help="sacrebleu's none/floor/add-k/exp, or NLTK's method0..method7 with --compat nltk",
    )
    parser.add_argument("--smooth-value", type=float, default=defaults.smooth_value)
    parser.add_argument("--effective-order", action="store_true")
    parser.add_argument("--max-ngram-order", type=int, default=defaults.max_ngram_order)
    parser.add_argument("--weights", type=float, nargs="+", help="NLTK weights (--compat nltk)")
    parser.add_argument("--auto-reweigh", action="store_true", help="NLTK's auto_reweigh")


def config_from(args: argparse.Namespace) -> BleuConfig:
    """The scoring options of the command line as one validated :class:`BleuConfig` (float64:
    printed scores are rounded to ``--width`` decimals, which float32 cannot always hold)."""
    with user_errors(TypeError, ValueError):
        return BleuConfig(
            max_ngram_order=args.max_ngram_order,
            weights=args.weights,
            smooth_method=args.smooth_method,
            smooth_value=args.smooth_value,
            effective_order=args.effective_order,
            compat=args.compat,
            auto_reweigh=args.auto_reweigh,
            dtype=torch.float64,
        )


def tokens_to_ids(segments: Sequence[Sequence[str]], vocab: dict[str, int]) -> list[list[int]]:
    """Maps whitespace tokens to IDs, growing ``vocab`` (shared by hypotheses and references)."""
    return [[vocab.setdefault(token, len(vocab)) for token in segment] for segment in segments]


def signature(args: argparse.Namespace, num_refs: int) -> str:
    """sacrebleu-style signature: ``nrefs:1|tok:ids|smooth:exp|eff:no|compat:...|version:...``."""
    eff = "yes" if args.effective_order else "no"
    parts = [
        f"nrefs:{num_refs}",
        f"tok:{args.tokenize}",
        f"smooth:{args.smooth_method}",
        f"eff:{eff}",
        f"compat:{args.compat}",
        f"version:{__version__}",
    ]
    if args.max_ngram_order != 4:
        parts.insert(-1, f"order:{args.max_ngram_order}")
    return "|".join(parts)


def describe(score: float, stats: list[int], order: int, width: int) -> dict[str, Any]:
    """sacrebleu-style verbose fields from one statistics row (which may hold extra orders)."""
    hyp_len, ref_len = stats[0], stats[1]
    stats_orders = (len(stats) - 2) // 2
    correct = stats[2 : 2 + order]
    total = stats[2 + stats_orders : 2 + stats_orders + order]
    precisions = [100.0 * c / t if t else 0.0 for c, t in zip(correct, total, strict=True)]
    ratio = hyp_len / ref_len if ref_len else 0.0
    brevity = 1.0 if hyp_len > ref_len else (math.exp(1 - ref_len / hyp_len) if hyp_len else 0.0)
    verbose = (
        "/".join(f"{p:.{width}f}" for p in precisions)
        + f" (BP = {brevity:.3f} ratio = {ratio:.3f} hyp_len = {hyp_len} ref_len = {ref_len})"
    )
    return {
        "score": round(100.0 * score, width),
        "verbose_score": verbose,
        "precisions": [round(p, width) for p in precisions],
        "bp": round(brevity, 3),
        "ratio": round(ratio, 3),
        "hyp_len": hyp_len,
        "ref_len": ref_len,
    }


def _read_segments(
    args: argparse.Namespace, stdin: TextIO | None, device: torch.device
) -> tuple[list[list[int]], list[list[list[int]]]]:
    """Hypotheses and the reference files as ID lists: ``(hyps [B], refs_by_file [F][B])``."""
    hyp_lines = read_lines(args.input, stdin)
    ref_lines = [read_lines(path) for path in args.refs]
    for path, lines in zip(args.refs, ref_lines, strict=True):
        if len(lines) != len(hyp_lines):
            raise CliError(
                f"{path} has {len(lines)} lines but the hypotheses have {len(hyp_lines)}; "
                "each reference file needs one line per hypothesis"
            )
    if args.encoding is not None:
        args.tokenize = args.encoding
        encoding = load_encoding(args.encoding)

        def encode(lines: list[str]) -> list[list[int]]:
            rows: list[list[int]] = encoding.encode_batch_to_tensor(
                lines, device=device, disallowed_special=()
            ).tolist()
            return rows

        return encode(hyp_lines), [encode(lines) for lines in ref_lines]
    if args.tokenize == "ids":
        hyps = parse_id_lines(hyp_lines, args.input or "<stdin>")
        refs = [
            parse_id_lines(lines, path) for path, lines in zip(args.refs, ref_lines, strict=True)
        ]
        return hyps, refs
    vocab: dict[str, int] = {}
    hyps = tokens_to_ids([line.split() for line in hyp_lines], vocab)
    return hyps, [tokens_to_ids([line.split() for line in lines], vocab) for lines in ref_lines]


def _scores(
    stats: Tensor, config: BleuConfig, sentence_level: bool
) -> tuple[list[float], list[list[int]]]:
    """Scores and the statistics rows they come from: one per segment, or the corpus."""
    if sentence_level:
        rows: list[list[int]] = stats.tolist()
        return bleu_from_stats(stats, config=config).tolist(), rows
    total = stats.sum(0)
    last = stats[-1] if len(stats) else torch.zeros_like(total)
    return [float(bleu_from_stats(total, last_stats=last, config=config))], [total.tolist()]


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    config = config_from(args)  # options are checked before any input is read
    device = device_from(args)
    hyps, refs_by_file = _read_segments(args, stdin, device)
    ref_sets = [list(refs) for refs in zip(*refs_by_file, strict=True)] if hyps else []
    with user_errors(ValueError):
        stats = bleu_stats(
            pad_ragged(hyps, device=device), pad_ragged_refs(ref_sets, device=device), config=config
        )
        scores, rows = _scores(stats, config, args.sentence_level)
    sig = signature(args, len(args.refs))
    for score, row in zip(scores, rows, strict=True):
        fields = describe(score, row, args.max_ngram_order, args.width)
        if args.format == "json":
            record = {"name": "BLEU", "score": fields.pop("score"), "signature": sig, **fields}
            stdout.write(json.dumps(record) + "\n")
        elif args.score_only:
            stdout.write(f"{fields['score']:.{args.width}f}\n")
        else:
            score_text = f"{fields['score']:.{args.width}f}"
            stdout.write(f"BLEU|{sig} = {score_text} {fields['verbose_score']}\n")
