"""The ``tensortext`` command: argparse subcommands; ``main`` only dispatches."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import torch

from tensortext import __version__
from tensortext.bleu import (
    NLTK_METHODS,
    SACREBLEU_METHODS,
    bleu_from_stats,
    bleu_stats,
    make_config,
)
from tensortext.ragged import pad_ragged, pad_ragged_refs, unpad

__all__ = ["main"]


class CliError(Exception):
    """A user error: printed as ``tensortext: error: ...`` with exit status 2."""


def read_text(path: str | None, stdin: TextIO | None = None) -> str:
    """A UTF-8 file (``None`` or ``-``: standard input) as text; errors name the line."""
    name = "<stdin>" if path in (None, "-") else path
    try:
        if path in (None, "-"):
            stream = stdin if stdin is not None else sys.stdin
            data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read()
        else:
            data = Path(path).read_bytes()
    except OSError as error:
        raise CliError(f"cannot read {name}: {error.strerror}") from None
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise CliError(f"{name}, line {line}: invalid UTF-8 (byte {error.start})") from None


def read_lines(path: str | None, stdin: TextIO | None = None) -> list[str]:
    """Lines of a UTF-8 file (``None`` or ``-``: standard input), without line ends."""
    return read_text(path, stdin).splitlines()


def parse_ids(lines: Sequence[str], name: str) -> list[list[int]]:
    """Space-separated integer IDs per line."""
    out = []
    for number, line in enumerate(lines, 1):
        try:
            ids = [int(token) for token in line.split()]
        except ValueError:
            bad = next(t for t in line.split() if not t.lstrip("-").isdigit())
            raise CliError(
                f"{name}, line {number}: {bad!r} is not an integer token ID; pass "
                "--tokenize none to score whitespace tokens"
            ) from None
        if any(i < 0 for i in ids):
            raise CliError(f"{name}, line {number}: token IDs must be non-negative")
        out.append(ids)
    return out


def tokens_to_ids(segments: Sequence[Sequence[str]], vocab: dict[str, int]) -> list[list[int]]:
    """Maps whitespace tokens to IDs, growing ``vocab`` (shared by hypotheses and references)."""
    return [[vocab.setdefault(token, len(vocab)) for token in segment] for segment in segments]


def signature(args: argparse.Namespace, num_refs: int) -> str:
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


def run_bleu(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    options: dict[str, Any] = dict(
        max_ngram_order=args.max_ngram_order,
        weights=args.weights,
        smooth_method=args.smooth_method,
        smooth_value=args.smooth_value,
        effective_order=args.effective_order,
        compat=args.compat,
        auto_reweigh=args.auto_reweigh,
        dtype=torch.float64,
    )
    try:
        config = make_config(**options)  # options are checked before any input is read
    except (TypeError, ValueError) as error:
        raise CliError(str(error)) from None
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
        encoding = _load_encoding(args.encoding)
        hyps = _encode_lines(encoding, hyp_lines, args.device)
        refs_by_file = [_encode_lines(encoding, lines, args.device) for lines in ref_lines]
    elif args.tokenize == "ids":
        hyps = parse_ids(hyp_lines, args.input or "<stdin>")
        refs_by_file = [
            parse_ids(lines, path) for path, lines in zip(args.refs, ref_lines, strict=True)
        ]
    else:
        vocab: dict[str, int] = {}
        hyps = tokens_to_ids([line.split() for line in hyp_lines], vocab)
        refs_by_file = [tokens_to_ids([ln.split() for ln in lines], vocab) for lines in ref_lines]
    device = torch.device(args.device)
    hyp_ids, hyp_lens = pad_ragged(hyps, device=device)
    ref_sets = [list(refs) for refs in zip(*refs_by_file, strict=True)] if hyps else []
    ref_ids, ref_lens = pad_ragged_refs(ref_sets, device=device)
    try:
        stats = bleu_stats(
            hyp_ids,
            ref_ids,
            hyp_lens=hyp_lens,
            ref_lens=ref_lens,
            max_ngram_order=config.stats_order,  # NLTK's methods 5 and 7 read 5-grams
            compat=config.compat,
        )
        if args.sentence_level:
            scores = bleu_from_stats(stats, **options).tolist()
            rows = stats.tolist()
        else:
            last = stats[-1] if len(stats) else torch.zeros_like(stats.sum(0))
            scores = [float(bleu_from_stats(stats.sum(0), last_stats=last, **options))]
            rows = [stats.sum(0).tolist()]
    except ValueError as error:
        raise CliError(str(error)) from None
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


def _load_encoding(spec: str) -> Any:
    from tensortext.bpe import load_encoding

    try:
        return load_encoding(spec)
    except (OSError, ValueError, ImportError) as error:
        raise CliError(str(error)) from None


def _encode_lines(encoding: Any, lines: list[str], device: str) -> list[list[int]]:
    return unpad(*encoding.encode_batch(lines, device=device, disallowed_special=()))


def read_text_lines(path: str | None, stdin: TextIO | None = None) -> list[str]:
    """Lines split at ``\\n`` only (text may hold other line separators), without the ``\\n``."""
    text = read_text(path, stdin)
    if not text:
        return []
    return text[:-1].split("\n") if text.endswith("\n") else text.split("\n")


def run_tokenize(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    encoding = _load_encoding(args.encoding)
    lines = read_text_lines(args.input, stdin)
    out = open(args.output, "w", encoding="utf-8") if args.output else stdout  # noqa: SIM115
    try:
        for first in range(0, len(lines), args.batch_lines):
            chunk = lines[first : first + args.batch_lines]
            if args.decode:
                rows = parse_ids(chunk, args.input or "<stdin>")
                for number, row in enumerate(rows, first + 1):
                    try:
                        out.write(encoding.decode(row) + "\n")
                    except ValueError as error:
                        raise CliError(f"line {number}: {error}") from None
                continue
            allowed: Any = "all" if args.allowed_special == ["all"] else set(args.allowed_special)
            try:
                ids, lengths = encoding.encode_batch(
                    chunk,
                    device=args.device,
                    allowed_special=allowed,
                    disallowed_special=() if args.ordinary else "all",
                    pretokenize=args.pretokenize,
                )
            except ValueError as error:
                message = str(error)
                if "disallowed" in message:  # the API's hint names keywords, not flags
                    message = message.split(". ")[0] + "; pass --allowed-special or --ordinary"
                raise CliError(message) from None
            for row in unpad(ids, lengths):
                out.write(" ".join(map(str, row)) + "\n")
    finally:
        if out is not stdout:
            out.close()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tensortext",
        description="Text pipeline on PyTorch tensors: token-ID BLEU and batched beam search.",
    )
    parser.add_argument("--version", action="version", version=f"tensortext {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    bleu = commands.add_parser(
        "bleu",
        help="score hypotheses against reference files (sacrebleu-style output, 0-100)",
        description="Token-ID BLEU of hypotheses (stdin or -i) against one or more reference "
        "files, one segment per line.",
    )
    bleu.add_argument("refs", nargs="+", metavar="REF", help="reference file(s), one per line")
    bleu.add_argument("-i", "--input", help="hypothesis file (default: standard input)")
    tokenize = bleu.add_mutually_exclusive_group()
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
        help="lines are text, tokenized with a BPE encoding (cl100k_base, o200k_base, or a "
        "tokenizer.json path); special-token text is scored as ordinary text",
    )
    bleu.set_defaults(tokenize="ids")
    bleu.add_argument("--sentence-level", action="store_true", help="one score per segment")
    bleu.add_argument("-f", "--format", choices=["text", "json"], default="text")
    bleu.add_argument("-b", "--score-only", action="store_true", help="print only the score")
    bleu.add_argument("-w", "--width", type=int, default=1, help="decimals to print (default 1)")
    bleu.add_argument("--compat", choices=["sacrebleu", "nltk"], default="sacrebleu")
    bleu.add_argument(
        "-s",
        "--smooth-method",
        default="exp",
        choices=[*SACREBLEU_METHODS, *NLTK_METHODS],
        help="sacrebleu's none/floor/add-k/exp, or NLTK's method0..method7 with --compat nltk",
    )
    bleu.add_argument("--smooth-value", type=float, default=None)
    bleu.add_argument("--effective-order", action="store_true")
    bleu.add_argument("--max-ngram-order", type=int, default=4)
    bleu.add_argument("--weights", type=float, nargs="+", help="NLTK weights (--compat nltk)")
    bleu.add_argument("--auto-reweigh", action="store_true", help="NLTK's auto_reweigh")
    bleu.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    bleu.set_defaults(handler=run_bleu)

    tok = commands.add_parser(
        "tokenize",
        help="BPE-encode text, one line of token IDs per line (--decode reverses)",
        description="Exact batched BPE (tiktoken's IDs). Lines are split at \\n only.",
    )
    tok.add_argument(
        "-e",
        "--encoding",
        required=True,
        metavar="ENCODING",
        help="cl100k_base, o200k_base, or a tokenizer.json path",
    )
    tok.add_argument("-i", "--input", help="input file (default: standard input)")
    tok.add_argument("-o", "--output", help="output file (default: standard output)")
    tok.add_argument("--decode", action="store_true", help="lines of IDs in, text out")
    tok.add_argument(
        "--allowed-special",
        nargs="+",
        default=[],
        metavar="TOKEN",
        help="special tokens to encode as such ('all' for every one)",
    )
    tok.add_argument(
        "--ordinary",
        action="store_true",
        help="encode special-token text as ordinary text instead of failing",
    )
    tok.add_argument(
        "--pretokenize",
        choices=["regex", "bytes"],
        default="regex",
        help="'bytes' is BlockBPE's byte-level split (IDs differ from tiktoken)",
    )
    tok.add_argument("--batch-lines", type=int, default=4096, help="lines per batch")
    tok.add_argument("--device", default="cpu", help="torch device, e.g. cpu or cuda")
    tok.set_defaults(handler=run_tokenize)

    translate = commands.add_parser(
        "translate",
        help="beam-search a file with the bundled model or a Hugging Face model directory",
        description="Batched beam search over sentences x beams; one translation per line.",
    )
    from tensortext.decode.command import add_translate_arguments

    add_translate_arguments(translate)
    translate.set_defaults(handler=run_translate)

    demo = commands.add_parser("demo", help="run the bundled demo")
    demo.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    demo.set_defaults(handler=run_demo)
    return parser


def run_translate(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    from tensortext.decode.command import run_translate as translate_file

    translate_file(args, stdout, stdin, read_lines, CliError)


def run_demo(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    from tensortext.demo import demo, demo_lmbr, demo_tokenize, demo_translation

    demo(device=args.device, out=stdout)
    demo_tokenize(device=args.device, out=stdout)
    demo_translation(device=args.device, out=stdout)
    demo_lmbr(device=args.device, out=stdout)


def main(
    argv: Sequence[str] | None = None, stdout: TextIO | None = None, stdin: TextIO | None = None
) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.handler(args, stdout or sys.stdout, stdin)
    except CliError as error:
        parser.exit(2, f"tensortext: error: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
