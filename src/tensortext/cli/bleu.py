"""Token-ID BLEU of hypotheses (stdin or -i) against one or more reference files, one segment
per line; sacrebleu's output (0-100, with a signature), or one score per segment."""

from __future__ import annotations

import argparse
import codecs
import json
import os
from collections.abc import Sequence
from typing import Any, TextIO

import torch
from torch import Tensor

from tensortext import __version__
from tensortext._checks import MAX_NGRAM_ORDER
from tensortext.bleu import NLTK_METHODS, SACREBLEU_METHODS, BleuConfig, bleu_stats
from tensortext.bleu.result import BLEUScore, bleu_scores
from tensortext.bpe.registry import list_encoding_names
from tensortext.cli.common import (
    CliError,
    add_device_argument,
    check_int_flag,
    device_from,
    load_encoding,
    parse_id_lines,
    read_lines,
    user_errors,
)
from tensortext.padded import pad_ragged, pad_ragged_refs

__all__ = [
    "MAX_NGRAM_ORDER",
    "MAX_WIDTH",
    "add_arguments",
    "config_from",
    "describe",
    "format_signature",
    "run",
    "signature",
    "tokens_to_ids",
]

MAX_WIDTH = 20
"""The most decimals ``-w`` prints (a float64 holds 17 significant digits)."""


_SACREBLEU_TOKENIZERS = (
    "zh",
    "13a",
    "intl",
    "char",
    "ja-mecab",
    "ko-mecab",
    "spm",
    "flores101",
    "flores200",
    "spBLEU-1K",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("refs", nargs="+", metavar="REF", help="reference file(s), one per line")
    parser.add_argument("-i", "--input", help="hypothesis file (default: standard input)")
    parser.add_argument(
        "-tok",
        "--tokenize",
        default="ids",
        metavar="TOKENIZE",
        help="what a line is: 'ids' (space-separated integer token IDs; the default), 'none' "
        "(whitespace-separated tokens, as sacrebleu's -tok none) or text tokenized with a BPE "
        f"encoding ({', '.join(list_encoding_names())}, a tokenizer.json or its directory)",
    )
    parser.add_argument(
        "--ids", dest="tokenize", action="store_const", const="ids", help="the same as -tok ids"
    )
    parser.add_argument(
        "-e",
        "--encoding",
        default="utf-8",
        help="text encoding of the files, as in sacrebleu (default: utf-8); BPE encodings are "
        "-tok NAME",
    )
    parser.add_argument(
        "-lc",
        "--lowercase",
        action="store_true",
        help="lowercase the text before tokenizing (-tok none or BPE; default: off)",
    )
    parser.add_argument(
        "-sl",
        "--sentence-level",
        action="store_true",
        help="one score per segment; as in sacrebleu, effective order is then on (default: off)",
    )
    parser.add_argument(
        "-f",
        "--format",
        choices=["text", "json"],
        default="text",
        help="'json': sacrebleu's JSON record (one compact record per line with -sl) "
        "(default: text)",
    )
    parser.add_argument("-b", "--score-only", action="store_true", help="print only the score")
    parser.add_argument(
        "-sh", "--short", action="store_true", help="the short signature (#:1|c:mixed|...)"
    )
    parser.add_argument(
        "-w",
        "--width",
        type=int,
        default=1,
        help=f"decimals of the scores, 0 to {MAX_WIDTH} (default: 1)",
    )
    _add_scoring_arguments(parser)
    add_device_argument(parser)


def _add_scoring_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of :class:`~tensortext.bleu.BleuConfig`'s options (defaults are its own)."""
    defaults = BleuConfig()
    parser.add_argument(
        "--compat",
        choices=["sacrebleu", "nltk"],
        default=defaults.compat,
        help="whose BLEU to match exactly (default: sacrebleu)",
    )
    parser.add_argument(
        "-s",
        "--smooth-method",
        default=defaults.smooth_method,
        choices=[*SACREBLEU_METHODS, *NLTK_METHODS],
        help="sacrebleu's none/floor/add-k/exp, or NLTK's method0..method7 with --compat nltk "
        f"(default: {defaults.smooth_method})",
    )
    parser.add_argument(
        "-sv",
        "--smooth-value",
        type=float,
        default=defaults.smooth_value,
        help="floor value / k (sacrebleu: 0.1 / 1), NLTK's epsilon, k or alpha (default: the "
        "method's own)",
    )
    parser.add_argument(
        "--effective-order",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="drop orders without n-grams (sacrebleu; default: on with -sl, off otherwise)",
    )
    parser.add_argument(
        "--max-ngram-order",
        type=int,
        default=defaults.max_ngram_order,
        help=f"highest n-gram order (default: {defaults.max_ngram_order})",
    )
    parser.add_argument(
        "--weights", type=float, nargs="+", help="NLTK weights (--compat nltk; default: uniform)"
    )
    parser.add_argument(
        "--auto-reweigh", action="store_true", help="NLTK's auto_reweigh (default: off)"
    )


def config_from(args: argparse.Namespace) -> BleuConfig:
    """The scoring options of the command line as one validated :class:`BleuConfig` (float64:
    printed scores are rounded to ``--width`` decimals, which float32 cannot always hold)."""
    if args.effective_order is None:  # sacrebleu's -sl turns effective order on
        args.effective_order = args.sentence_level and args.compat == "sacrebleu"
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


def signature(args: argparse.Namespace, config: BleuConfig, num_refs: int) -> dict[str, str]:
    """sacrebleu's signature fields, in its order, with ours before the version:
    ``nrefs, case, eff, tok, smooth, compat[, order], version`` (``smooth:floor[0.10]`` and
    ``add-k[1.00]`` carry their value, as in sacrebleu)."""
    smooth = args.smooth_method
    if config.compat == "sacrebleu" and smooth in ("floor", "add-k"):
        smooth += f"[{config.smoothing:.2f}]"
    fields = {
        "nrefs": str(num_refs),
        "case": "lc" if args.lowercase else "mixed",
        "eff": "yes" if args.effective_order else "no",
        "tok": args.tokenize,
        "smooth": smooth,
        "compat": args.compat,
    }
    if args.max_ngram_order != 4:
        fields["order"] = str(args.max_ngram_order)
    fields["version"] = __version__
    return fields


def format_signature(fields: dict[str, str], short: bool = False) -> str:
    """``nrefs:1|case:mixed|...``, or sacrebleu's short form ``#:1|c:mixed|e:no|...|v:...``."""
    names = _SHORT_NAMES if short else {}
    return "|".join(f"{names.get(key, key)}:{value}" for key, value in fields.items())


_SHORT_NAMES = {"nrefs": "#", "case": "c", "eff": "e", "smooth": "s", "version": "v"}


def describe(result: BLEUScore, width: int) -> dict[str, Any]:
    """sacrebleu's JSON fields of a score: the score and precisions to ``width`` decimals, the
    brevity penalty and length ratio to 3, as sacrebleu rounds them."""
    return {
        "score": round(result.score, width),
        "verbose_score": result.verbose,
        "precisions": [round(p, width) for p in result.precisions],
        "bp": round(result.bp, 3),
        "ratio": round(result.ratio, 3),
        "hyp_len": result.sys_len,
        "ref_len": result.ref_len,
    }


def _check_flags(args: argparse.Namespace) -> None:
    """What the flags alone get wrong, before any file is read."""
    check_int_flag("-w", args.width, 0, MAX_WIDTH)
    check_int_flag("--max-ngram-order", args.max_ngram_order, 1, MAX_NGRAM_ORDER)
    try:
        codec = codecs.lookup(args.encoding)
    except LookupError:
        hint = "; BPE tokenization is -tok " + args.encoding if _is_bpe(args.encoding) else ""
        raise CliError(
            f"-e {args.encoding!r} is no text encoding; -e is the files' text encoding, as in "
            f"sacrebleu (default utf-8){hint}"
        ) from None
    # rot13, base64, zlib, hex...: codecs that are not bytes <-> str, which open() refuses.
    if not getattr(codec, "_is_text_encoding", True):
        raise CliError(
            f"-e {args.encoding!r} is a {codec.name} transform, not a text encoding; -e is the "
            "files' text encoding, as in sacrebleu: pass e.g. -e utf-8"
        )
    if args.tokenize in _SACREBLEU_TOKENIZERS:
        raise CliError(
            f"-tok {args.tokenize} is a sacrebleu text tokenizer; tensortext scores token IDs: "
            "pass -tok none for whitespace tokens, or a BPE encoding such as -tok cl100k_base"
        )
    if args.lowercase and args.tokenize == "ids":
        raise CliError("-lc lowercases text; token IDs (-tok ids) have no case")


def _is_bpe(name: str) -> bool:
    return name in list_encoding_names() or os.path.exists(name)


def _read_segments(
    args: argparse.Namespace, stdin: TextIO | None, device: torch.device
) -> tuple[list[list[int]], list[list[list[int]]]]:
    """Hypotheses and the reference files as ID lists: ``(hyps [B], refs_by_file [F][B])``."""
    hyp_lines = read_lines(args.input, stdin, args.encoding)
    ref_lines = [read_lines(path, encoding=args.encoding) for path in args.refs]
    if not hyp_lines:  # sacrebleu refuses too ("contains no sentence")
        raise CliError(f"{args.input or '<stdin>'} is empty: no segments to score")
    for path, lines in zip(args.refs, ref_lines, strict=True):
        if len(lines) != len(hyp_lines):
            raise CliError(
                f"{path} has {len(lines)} lines but the hypotheses have {len(hyp_lines)}; "
                "each reference file needs one line per hypothesis"
            )
    if args.lowercase:
        hyp_lines = [line.lower() for line in hyp_lines]
        ref_lines = [[line.lower() for line in lines] for lines in ref_lines]
    if args.tokenize == "ids":
        hint = "; pass -tok none to score whitespace tokens"
        hyps = parse_id_lines(hyp_lines, args.input or "<stdin>", hint=hint)
        refs = [
            parse_id_lines(lines, path, hint=hint)
            for path, lines in zip(args.refs, ref_lines, strict=True)
        ]
        return hyps, refs
    if args.tokenize == "none":
        vocab: dict[str, int] = {}
        hyps = tokens_to_ids([line.split() for line in hyp_lines], vocab)
        return hyps, [tokens_to_ids([line.split() for line in lines], vocab) for lines in ref_lines]
    encoding = load_encoding(args.tokenize)

    def encode(lines: list[str]) -> list[list[int]]:
        if device.type == "cpu":  # the host encoder's lists
            return encoding.encode_ordinary_batch(lines)  # type: ignore[no-any-return]
        rows: list[list[int]] = encoding.encode_batch_to_tensor(
            lines, device=device, disallowed_special=()
        ).tolist()
        return rows

    return encode(hyp_lines), [encode(lines) for lines in ref_lines]


def _results(stats: Tensor, config: BleuConfig, sentence_level: bool) -> list[BLEUScore]:
    """The library's score objects: one per segment, or one for the corpus."""
    if sentence_level:
        return bleu_scores(stats, config)
    total = stats.sum(0)
    last = stats[-1] if len(stats) else torch.zeros_like(total)
    return bleu_scores(total, config, last_stats=last)


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    _check_flags(args)
    config = config_from(args)  # options are checked before any input is read
    device = device_from(args)
    hyps, refs_by_file = _read_segments(args, stdin, device)
    ref_sets = [list(refs) for refs in zip(*refs_by_file, strict=True)]
    with user_errors(ValueError):
        stats = bleu_stats(
            pad_ragged(hyps, device=device), pad_ragged_refs(ref_sets, device=device), config=config
        )
        results = _results(stats, config, args.sentence_level)
    fields = signature(args, config, len(args.refs))
    sig = format_signature(fields, args.short)
    for result in results:
        if args.format == "json":  # sacrebleu's keys (long signature, as sacrebleu), then ours
            described = describe(result, args.width)
            record = {
                "name": "BLEU",
                "score": described.pop("score"),
                "signature": format_signature(fields),
                "verbose_score": described.pop("verbose_score"),
                **fields,
                **described,
            }
            indent = None if args.sentence_level else 1
            stdout.write(json.dumps(record, indent=indent, ensure_ascii=False) + "\n")
        else:
            stdout.write(result.format(args.width, args.score_only, sig) + "\n")
