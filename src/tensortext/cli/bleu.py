"""Score hypotheses (standard input or -i) against one or more reference files, one segment per
line, as sacrebleu's command does: tensortext bleu ref.txt [ref2.txt ...] -i hyp.txt -m bleu chrf

Text or token IDs. Lines are text, and BLEU tokenizes them with sacrebleu's 13a, as sacrebleu
does by default (-tok intl, char or none as in sacrebleu; -tok cl100k_base or a tokenizer.json
tokenizes with a BPE encoding). Lines of space-separated token IDs take --ids (-tok ids): each
is then checked to be an integer. An ID file scored as text gets the same BLEU, since 13a leaves
a line of decimal integers as it is, unless one ID is spelled two ways ("007" and "7" are one
ID but two words); the signature says which way it was scored (tok:13a or tok:ids). chrF (-m
chrf) always scores the characters and words of the text itself, never the tokens.

Output as sacrebleu 2 prints it: one JSON record per metric (-f json, the default; a JSON list
for several metrics), or sacrebleu's text line per metric (-f text), or the scores only (-b).
With -sl, one text line per segment (one compact JSON record per line with an explicit -f json).
Scores are 0-100. The signature is sacrebleu's, plus compat (and order), with tensortext's
version. Trailing whitespace of every line is dropped, as sacrebleu does (BPE lines excepted).
"""

from __future__ import annotations

import argparse
import codecs
import os
import re
from collections.abc import Callable
from typing import Any, TextIO

import torch
from torch import Tensor

from tensortext import __version__
from tensortext._checks import MAX_NGRAM_ORDER
from tensortext.bleu import NLTK_METHODS, SACREBLEU_METHODS, BleuConfig
from tensortext.bleu.result import BLEUScore, bleu_scores
from tensortext.bleu.tokenizers import TOKENIZERS, UNSUPPORTED_TOKENIZERS, TokenVocab
from tensortext.bpe.registry import list_encoding_names
from tensortext.cli import chrf_options
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
from tensortext.cli.sacrebleu_flags import add_sacrebleu_flags, check_refused
from tensortext.cli.scoring import bleu_corpus_stats, flat_rows, format_results, json_record
from tensortext.padded import Flat

__all__ = [
    "MAX_NGRAM_ORDER",
    "MAX_WIDTH",
    "add_arguments",
    "config_from",
    "describe",
    "format_signature",
    "in_flags",
    "run",
    "signature",
]

MAX_WIDTH = 20
"""The most decimals ``-w`` prints (a float64 holds 17 significant digits)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "refs", nargs="*", metavar="REF", help="reference file(s), one segment per line"
    )
    parser.add_argument(
        "-i",
        "--input",
        nargs="+",  # one file; several (sacrebleu's systems) are refused, not read as REFs
        metavar="HYP",
        help="the hypothesis file, one (default: standard input)",
    )
    parser.add_argument(
        "-m",
        "--metrics",
        nargs="+",
        choices=["bleu", "chrf", "ter"],
        default=["bleu"],
        help="metrics to compute, printed in sacrebleu's order (default: bleu; ter is not "
        "implemented)",
    )
    parser.add_argument(
        "-tok",
        "--tokenize",
        default="13a",
        metavar="TOKENIZE",
        help=f"BLEU's tokenizer: sacrebleu's {', '.join(TOKENIZERS)}; 'ids' for lines of token "
        "IDs; or a BPE encoding "
        f"({', '.join(list_encoding_names())}, a tokenizer.json, SentencePiece .model or Tekken "
        "file, or its directory) "
        "(default: 13a, as sacrebleu)",
    )
    parser.add_argument(
        "--ids",
        dest="tokenize",
        action="store_const",
        const="ids",
        help="lines are space-separated integer token IDs (the same as -tok ids)",
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
        help="lowercase the text before BLEU tokenizes it (not with --ids; default: off)",
    )
    _add_output_arguments(parser)
    _add_scoring_arguments(parser)
    chrf_options.add_chrf_arguments(parser)
    add_device_argument(parser)
    add_sacrebleu_flags(parser)


def _add_output_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-sl",
        "--sentence-level",
        action="store_true",
        help="one score per segment; as in sacrebleu, BLEU's effective order is then on "
        "(default: off)",
    )
    parser.add_argument(
        "-f",
        "--format",
        choices=["json", "text", "latex"],
        default=None,
        help="'json': sacrebleu's JSON record per metric; 'text': sacrebleu's line "
        "(default: json, or $SACREBLEU_FORMAT; with -sl text lines, and -f json gives one "
        "compact record per line; latex is sacrebleu's multi-system table, not implemented)",
    )
    parser.add_argument(
        "-b", "--score-only", action="store_true", help="print only the scores (default: off)"
    )
    parser.add_argument(
        "-sh",
        "--short",
        action="store_true",
        help="the short signature (#:1|c:mixed|...) in text lines (default: off)",
    )
    parser.add_argument(
        "-w",
        "--width",
        type=int,
        default=1,
        help=f"decimals of the scores, 0 to {MAX_WIDTH} (default: 1)",
    )


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
        help="drop orders without n-grams (sacrebleu; default: on with -sl and --compat "
        "sacrebleu, off otherwise)",
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
    try:
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
    except (TypeError, ValueError) as error:
        raise CliError(in_flags(str(error))) from None


# BleuConfig's messages name its keywords in Python's syntax (compat='nltk'); on the command line
# they name the flags (--compat nltk). Applied in order: the specific phrasings first.
_FLAGS = {
    "smooth_method": "-s",
    "smooth_value": "-sv",
    "weights": "--weights",
    "max_ngram_order": "--max-ngram-order",
    "effective_order": "--effective-order",
    "auto_reweigh": "--auto-reweigh",
    "compat": "--compat",
}


def _flag_value(match: re.Match[str]) -> str:
    """``keyword=value`` (``=None``: drop it) as the flag; a keyword without a flag as it is."""
    flag = _FLAGS.get(match[1])
    if flag is None:
        return match[0]
    return f"drop {flag}" if match[2] == "None" else f"{flag} {match[2]}"


_IN_FLAGS: tuple[tuple[str, str | Callable[[re.Match[str]], str]], ...] = (
    (r"pass (\w+)=(None)", _flag_value),
    (r", or compat='", ", or pass compat='"),
    (r"but max_ngram_order=(\d+)", r"but --max-ngram-order is \1"),
    (r"max_ngram_order >= (\d+)", r"--max-ngram-order \1 or more"),
    (r"\b(\w+)='?([\w.-]+)'?", _flag_value),
    (r" \(tensortext\._checks\.MAX_NGRAM_ORDER\)", ""),
    (r"(?<![-\w])(\w+)\b", lambda match: _FLAGS.get(match[1], match[0])),
)


def in_flags(message: str) -> str:
    """A :class:`~tensortext.bleu.BleuConfig` error in the command line's terms: each keyword
    as its flag (``pass compat='nltk'`` -> ``pass --compat nltk``).

    Example:
        >>> in_flags("auto_reweigh is an NLTK option; pass compat='nltk' to use it")
        '--auto-reweigh is an NLTK option; pass --compat nltk to use it'
    """
    for pattern, replacement in _IN_FLAGS:
        message = re.sub(pattern, replacement, message)
    return message


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
    """The fields a segment's JSON record (``-sl -f json``) has after sacrebleu's: the
    precisions to ``width`` decimals, the brevity penalty and length ratio to 3, as sacrebleu
    rounds them, and the lengths."""
    return {
        "precisions": [round(p, width) for p in result.precisions],
        "bp": round(result.bp, 3),
        "ratio": round(result.ratio, 3),
        "hyp_len": result.sys_len,
        "ref_len": result.ref_len,
    }


def _check_flags(args: argparse.Namespace) -> None:
    """What the flags alone get wrong, before any file is read."""
    check_refused(args)
    if args.input is not None and len(args.input) > 1:
        raise CliError(
            f"-i takes one hypothesis file, got {len(args.input)} ({' '.join(args.input[:3])}"
            f"{' ...' if len(args.input) > 3 else ''}): reference files go before -i "
            "(tensortext bleu REF... -i HYP), and each system is scored by its own command"
        )
    if not args.refs:
        raise CliError("no reference file: pass them before -i (tensortext bleu REF... -i HYP)")
    if args.format == "latex":
        raise CliError("-f latex is sacrebleu's table of several systems; pass -f json or text")
    if args.sentence_level and len(set(args.metrics)) > 1:
        raise CliError("-sl scores one metric at a time, as in sacrebleu: pass -m bleu or -m chrf")
    check_int_flag("-w", args.width, 0, MAX_WIDTH)
    check_int_flag("--max-ngram-order", args.max_ngram_order, 1, MAX_NGRAM_ORDER)
    _check_encoding(args.encoding)
    if args.tokenize in UNSUPPORTED_TOKENIZERS:
        raise CliError(f"-tok {args.tokenize}: {UNSUPPORTED_TOKENIZERS[args.tokenize]}")
    if args.lowercase and args.tokenize == "ids":
        raise CliError("-lc lowercases text; token IDs (--ids) have no case")
    if "chrf" in args.metrics and args.tokenize == "ids":
        raise CliError(
            "-m chrf scores the characters of text, and --ids says the lines are token IDs: "
            "decode them first (tensortext tokenize --decode) or drop -m chrf"
        )


def _check_encoding(encoding: str) -> None:
    try:
        codec = codecs.lookup(encoding)
    except LookupError:
        hint = "; BPE tokenization is -tok " + encoding if _is_bpe(encoding) else ""
        raise CliError(
            f"-e {encoding!r} is no text encoding; -e is the files' text encoding, as in "
            f"sacrebleu (default utf-8){hint}"
        ) from None
    # rot13, base64, zlib, hex...: codecs that are not bytes <-> str, which open() refuses.
    if not getattr(codec, "_is_text_encoding", True):
        raise CliError(
            f"-e {encoding!r} is a {codec.name} transform, not a text encoding; -e is the "
            "files' text encoding, as in sacrebleu: pass e.g. -e utf-8"
        )


def _is_bpe(name: str) -> bool:
    return name in list_encoding_names() or os.path.exists(name)


def _read_inputs(
    args: argparse.Namespace, stdin: TextIO | None
) -> tuple[str, list[str], list[list[str]]]:
    """The hypotheses' name, their lines ``[B]`` and each reference file's lines ``[F][B]``, as
    read."""
    hyp_path = args.input[0] if args.input else None
    hyp_lines = read_lines(hyp_path, stdin, args.encoding)
    ref_lines = [read_lines(path, encoding=args.encoding) for path in args.refs]
    if not hyp_lines:  # sacrebleu refuses too ("contains no sentence")
        raise CliError(f"{hyp_path or '<stdin>'} is empty: no segments to score")
    for path, lines in zip(args.refs, ref_lines, strict=True):
        if len(lines) != len(hyp_lines):
            raise CliError(
                f"{path} has {len(lines)} lines but the hypotheses have {len(hyp_lines)}; "
                "each reference file needs one line per hypothesis"
            )
    return hyp_path or "<stdin>", hyp_lines, ref_lines


Encode = Callable[[list[str], str], Flat]
"""Lines of one file, and its name for errors, to BLEU's token IDs."""


def _bleu_encoder(args: argparse.Namespace, device: torch.device) -> Encode:
    """How ``-tok`` turns lines into token IDs (a BPE encoding is loaded here, before any file
    is read). Text tokenizers get lines without trailing whitespace, as sacrebleu reads them."""
    if args.tokenize == "ids":
        hint = "; the lines are text? drop --ids (BLEU then tokenizes with 13a)"
        return lambda lines, name: flat_rows(parse_id_lines(lines, name, hint=hint))
    if args.tokenize in TOKENIZERS:
        vocab = TokenVocab(args.tokenize)  # one vocabulary for hypotheses and references

        def tokenize(lines: list[str], name: str) -> Flat:  # sacrebleu's BLEU: lowercase, strip
            return vocab.encode_flat(
                [line.lower().rstrip() for line in lines] if args.lowercase else lines
            )

        return tokenize
    encoding = load_encoding(args.tokenize)

    def encode(lines: list[str], name: str) -> Flat:  # (the encoding picks its encoder)
        lines = [line.lower() for line in lines] if args.lowercase else lines
        flat = encoding.encode_batch_to_flat(lines, device=device, disallowed_special=())
        return Flat(flat.ids.cpu(), flat.lengths.cpu())

    return encode


def _bleu_results(args: argparse.Namespace, config: BleuConfig, stats: Tensor) -> list[str]:
    """What BLEU prints: one string per segment with -sl, else one for the corpus."""
    fields = signature(args, config, len(args.refs))
    sig = format_signature(fields, args.short)
    if args.sentence_level:
        scores = bleu_scores(stats, config)
        if args.format == "json" and not args.score_only:  # -b wins, as in sacrebleu
            return [
                json_record(
                    "BLEU", s.score, args.width, fields, s.verbose, describe(s, args.width), None
                )
                for s in scores
            ]
        return [s.format(args.width, args.score_only, sig) for s in scores]
    [score] = bleu_scores(stats.sum(0), config, last_stats=stats[-1])
    if args.format == "json" and not args.score_only:  # sacrebleu's record, our signature
        return [json_record("BLEU", score.score, args.width, fields, score.verbose)]
    return [score.format(args.width, args.score_only, sig)]


def _output_format(args: argparse.Namespace) -> str:
    """``-f``, else $SACREBLEU_FORMAT (as sacrebleu reads it), else sacrebleu's json; text for
    -sl unless ``-f json`` is given (sacrebleu prints text lines there whatever -f says)."""
    if args.format is not None:
        return str(args.format)
    if args.sentence_level:
        return "text"
    from_environment = os.environ.get("SACREBLEU_FORMAT", "").lower()
    return from_environment if from_environment in ("json", "text") else "json"


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    _check_flags(args)
    args.format = _output_format(args)
    metrics = sorted(set(args.metrics))  # sacrebleu prints BLEU before chrF, whatever -m says
    # Options are checked, and a BPE encoding loaded, before any input is read.
    bleu_config = config_from(args) if "bleu" in metrics else None
    chrf_config = chrf_options.config_from(args) if "chrf" in metrics else None
    device = device_from(args)
    encode = _bleu_encoder(args, device) if bleu_config is not None else None
    hyp_name, hyp_lines, ref_lines = _read_inputs(args, stdin)
    results: list[str] = []
    if encode is not None and bleu_config is not None:
        strip = args.tokenize in TOKENIZERS  # sacrebleu drops trailing whitespace as it reads
        hyps = encode(_stripped(hyp_lines) if strip else hyp_lines, hyp_name)
        refs = [
            encode(_stripped(lines) if strip else lines, path)
            for path, lines in zip(args.refs, ref_lines, strict=True)
        ]
        with user_errors(ValueError):
            stats = bleu_corpus_stats(hyps, refs, bleu_config, device)
        results += _bleu_results(args, bleu_config, stats)
    if chrf_config is not None:
        hyp_text, ref_text = _stripped(hyp_lines), [_stripped(lines) for lines in ref_lines]
        results += chrf_options.results(args, chrf_config, hyp_text, ref_text, device)
    if args.sentence_level:
        stdout.write("".join(line + "\n" for line in results))
    else:
        stdout.write(format_results(results, args.format == "json", args.score_only) + "\n")


def _stripped(lines: list[str]) -> list[str]:
    return [line.rstrip() for line in lines]
