"""``tensortext translate``: beam-search a file with the bundled model or a Hugging Face model.

One corpus loop for both: the model becomes a :class:`~tensortext.decode.decoder.Decoder` (the
bundled translator, or :class:`~tensortext.decode.hf.HFDecoder` over a model directory) with a
tokenizer and a detokenizer, and :func:`~tensortext.decode.translate` batches, sorts and
beam-searches the corpus. LMBR evidence (a Moses n-best list, or SGNMT n-gram posterior files)
becomes a per-batch score bias through :func:`tensortext.lmbr.lmbr_bias_factory`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import torch
from torch import Tensor

from tensortext._checks import MAX_NGRAM_ORDER
from tensortext.cli.common import (
    CliError,
    add_device_argument,
    check_int_flag,
    check_output,
    device_from,
    open_output,
    read_lines,
    user_errors,
)
from tensortext.decode.beam import BeamOutput, EarlyStopping
from tensortext.decode.decoder import Decoder
from tensortext.decode.translate import translate
from tensortext.padded import Padded, pad_ragged

__all__ = ["add_arguments", "run"]

_STOPPING: dict[str, EarlyStopping] = {"false": False, "true": True, "never": "never"}

MAX_FLAG_VALUE = 1 << 24
"""The largest count flag (beams, batch sizes, new tokens) checked before anything is allocated;
the decoder checks the tighter bounds of its model (vocabulary, positions)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``tensortext translate``."""
    parser.add_argument("-i", "--input", help="source file, one sentence per line (default: stdin)")
    parser.add_argument("-o", "--output", help="output file (default: stdout)")
    parser.add_argument(
        "-m",
        "--model",
        default="bundled",
        help="'bundled' (the small model shipped with tensortext) or a Hugging Face model "
        "directory (needs tensortext[hf])",
    )
    parser.add_argument("-k", "--num-beams", type=int, default=4)
    parser.add_argument("--batch-sentences", type=int, default=64, help="sentences per batch")
    parser.add_argument("--batch-tokens", type=int, default=None, help="padded source tokens cap")
    parser.add_argument("--no-sort", action="store_true", help="batch in input order")
    parser.add_argument(
        "--max-new-tokens", type=int, default=None, help="default: 2 * longest source + 10"
    )
    parser.add_argument("--min-new-tokens", type=int, default=0)
    parser.add_argument("--length-penalty", type=float, default=1.0)
    parser.add_argument("--early-stopping", choices=sorted(_STOPPING), default="false")
    parser.add_argument("--finished", choices=["refill", "mask"], default="refill")
    parser.add_argument("--prune-threshold", type=float, default=None, help="e.g. 0.01")
    parser.add_argument(
        "--nbest",
        type=int,
        default=0,
        metavar="R",
        help="print the R best as Moses n-best lines 'id ||| text ||| ||| score' (empty features)",
    )
    _add_lmbr_arguments(parser)
    add_device_argument(parser)
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _add_lmbr_arguments(parser: argparse.ArgumentParser) -> None:
    lmbr = parser.add_argument_group(
        "LMBR", "n-gram posteriors of an evidence space added at every step (Iglesias et al., 2018)"
    )
    lmbr.add_argument(
        "--lmbr-nbest",
        metavar="FILE",
        help="evidence: Moses n-best lines 'id ||| text ||| features ||| score' (ids from 0, "
        "text in the model's target language, e.g. the --nbest output of another system)",
    )
    lmbr.add_argument(
        "--lmbr-ngrams",
        metavar="PATTERN",
        help="posteriors: SGNMT/ucam-smt files 'w1 ... wn : posterior' of target-vocabulary IDs, "
        "one per sentence, '%%d' = sentence number from 1",
    )
    lmbr.add_argument("--lmbr-p", type=float, default=0.741, help="unigram precision p")
    lmbr.add_argument("--lmbr-r", type=float, default=0.62, help="precision ratio r")
    lmbr.add_argument("--lmbr-alpha", type=float, default=1.0, help="scale of n-best scores")
    lmbr.add_argument(
        "--lmbr-weight",
        type=float,
        default=1.0,
        help="scale of the LMBR scores (theta of Tromble et al. with T=10) against the model",
    )
    lmbr.add_argument(
        "--lmbr-order",
        type=int,
        default=4,
        help=f"highest n-gram order, 1 to {MAX_NGRAM_ORDER} (default: 4)",
    )
    lmbr.add_argument(
        "--lmbr-eos",
        action="store_true",
        help="n-grams include the sentence end, so the evidence also scores where to stop",
    )
    lmbr.add_argument(
        "--lmbr-bos",
        type=int,
        default=None,
        metavar="ID",
        help="with --lmbr-ngrams: the ID the files use for <s> (SGNMT: 1)",
    )


@dataclass(frozen=True)
class _System:
    """A model ready for the corpus loop: the decoder and its text <-> IDs maps.

    Attributes:
        decoder: The :class:`Decoder` that :func:`translate` searches with.
        tokenize_source: Lines -> right-padded source IDs (:class:`Padded`).
        tokenize_target: One target-language text -> IDs (LMBR n-best evidence).
        detokenize: ``(ids [M, T], lengths [M])`` of hypotheses (EOS included) -> ``M`` texts.
        max_new_tokens: An int, or a function of a batch's longest source.
    """

    decoder: Decoder
    tokenize_source: Callable[[Sequence[str]], Padded]
    tokenize_target: Callable[[str], Sequence[int]]
    detokenize: Callable[[Tensor, Tensor], list[str]]
    max_new_tokens: int | Callable[[int], int]


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None) -> None:
    """Translate ``args.input`` (or stdin) and write one line per sentence, or n-best lines."""
    _check_flags(args)
    check_output(args.output, [("-i", args.input), ("--lmbr-nbest", args.lmbr_nbest)])
    device = device_from(args)
    with open_output(args.output, stdout) as stream:  # before the work: a bad -o costs nothing
        lines = read_lines(args.input, stdin)
        _check_evidence_files(args, len(lines))
        progress = None if args.quiet else _Progress(len(lines), sys.stderr)
        started = time.perf_counter()
        with user_errors(), progress or contextlib.nullcontext():
            system = (
                _bundled(args, device) if args.model == "bundled" else _hugging_face(args, device)
            )
            src = system.tokenize_source(lines).to(device)
            bias = _lmbr_bias_factory(args, len(lines), system, device)
            out = translate(
                system.decoder,
                src.ids,
                src.lengths,
                num_beams=args.num_beams,
                max_sentences=args.batch_sentences,
                max_tokens=args.batch_tokens,
                sort_by_length=not args.no_sort,
                max_new_tokens=system.max_new_tokens,
                min_new_tokens=args.min_new_tokens,
                length_penalty=args.length_penalty,
                early_stopping=_STOPPING[args.early_stopping],
                finished=args.finished,
                prune_threshold=args.prune_threshold,
                num_return_sequences=max(args.nbest, 1),
                score_bias=bias,
                progress=progress,
            )
        texts = _texts(system, out)
        if progress is not None:
            progress.close(time.perf_counter() - started, sum(len(line.split()) for line in lines))
        _write(args, stream, texts, out.scores.tolist())


def _check_flags(args: argparse.Namespace) -> None:
    """Flag combinations that cannot work, before any file is read or model loaded."""
    for flag, value, low in (
        ("--num-beams", args.num_beams, 1),
        ("--nbest", args.nbest, 0),
        ("--batch-sentences", args.batch_sentences, 1),
        ("--batch-tokens", args.batch_tokens, 1),
        ("--max-new-tokens", args.max_new_tokens, 1),  # HF generate refuses 0 too
        ("--min-new-tokens", args.min_new_tokens, 0),
    ):
        check_int_flag(flag, value, low, MAX_FLAG_VALUE)
    check_int_flag("--lmbr-order", args.lmbr_order, 1, MAX_NGRAM_ORDER)
    if max(args.nbest, 1) > args.num_beams:
        raise CliError(f"--nbest {args.nbest} exceeds --num-beams {args.num_beams}; raise -k")
    if args.lmbr_nbest and args.lmbr_ngrams:
        raise CliError("give --lmbr-nbest or --lmbr-ngrams, not both")
    if args.lmbr_bos is not None and not args.lmbr_ngrams:
        raise CliError("--lmbr-bos only applies to --lmbr-ngrams files")


def _check_evidence_files(args: argparse.Namespace, num_sentences: int) -> None:
    """Every LMBR evidence file is readable, before a model is loaded."""
    if args.lmbr_nbest:
        files = [args.lmbr_nbest]
    elif args.lmbr_ngrams and "%d" in args.lmbr_ngrams:
        files = [args.lmbr_ngrams % (1 + s) for s in range(num_sentences)]
    else:
        return  # no evidence, or a pattern the reader refuses with its own message
    flag = "--lmbr-nbest" if args.lmbr_nbest else "--lmbr-ngrams"
    for file in files:
        if not os.path.isfile(file) or not os.access(file, os.R_OK):
            why = "no such file" if not os.path.exists(file) else "not a readable file"
            raise CliError(f"{flag}: cannot read {file}: {why}")


def _texts(system: _System, out: BeamOutput) -> list[list[str]]:
    """``R`` texts per sentence (one host copy of the hypotheses)."""
    N, R = out.lengths.shape
    flat = system.detokenize(out.sequences.flatten(0, 1), out.lengths.flatten())
    return [flat[n * R : (n + 1) * R] for n in range(N)]


def _write(
    args: argparse.Namespace, stream: TextIO, texts: list[list[str]], scores: list[list[float]]
) -> None:
    from tensortext.lmbr import write_nbest

    if args.nbest:
        write_nbest(stream, texts, scores)
    else:
        stream.writelines(hyps[0] + "\n" for hyps in texts)


def _bundled(args: argparse.Namespace, device: torch.device) -> _System:
    """The bundled translator; its positions end at ``max_len`` (start token included)."""
    from tensortext.models.bundled import load_bundled_translator

    model = load_bundled_translator(device)
    limit = model.max_len - 1
    if args.max_new_tokens is not None and args.max_new_tokens > limit:
        raise CliError(
            f"--max-new-tokens {args.max_new_tokens} exceeds the bundled model's {limit}"
        )
    word_ids = {word: i for i, word in enumerate(model.target_vocab)}

    def tokenize_target(text: str) -> list[int]:
        unknown = [word for word in text.split() if word not in word_ids]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not in the bundled model's target vocabulary")
        return [word_ids[word] for word in text.split()]

    def detokenize(ids: Tensor, lengths: Tensor) -> list[str]:
        texts: list[str] = model.detokenize(ids, lengths)
        return texts

    def default_max_new_tokens(longest: int) -> int:
        return min(2 * longest + 10, limit)

    return _System(
        decoder=model,
        tokenize_source=model.tokenize_source,
        tokenize_target=tokenize_target,
        detokenize=detokenize,
        max_new_tokens=(
            default_max_new_tokens if args.max_new_tokens is None else args.max_new_tokens
        ),
    )


def _hugging_face(args: argparse.Namespace, device: torch.device) -> _System:
    """A local ``transformers`` model directory (seq2seq or causal LM) and its tokenizer."""
    try:
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
        )
    except ImportError:
        raise CliError("--model DIR needs transformers: pip install 'tensortext[hf]'") from None
    from tensortext.decode.hf import HFDecoder

    if not Path(args.model).is_dir():
        raise CliError(f"--model {args.model!r} is neither 'bundled' nor a model directory")
    config = AutoConfig.from_pretrained(args.model, local_files_only=True)
    tokenizer: Any = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
    auto: Any = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
    model = auto.from_pretrained(args.model, local_files_only=True).to(device).eval()

    def default_max_new_tokens(longest: int) -> int:
        return 2 * longest + 10

    max_new_tokens = default_max_new_tokens if args.max_new_tokens is None else args.max_new_tokens

    def tokenize_source(lines: Sequence[str]) -> Padded:
        return pad_ragged(tokenizer(list(lines))["input_ids"])

    def tokenize_target(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    def detokenize(ids: Tensor, lengths: Tensor) -> list[str]:
        rows = Padded(ids, lengths).tolist()
        return [str(tokenizer.decode(row, skip_special_tokens=True)).strip() for row in rows]

    return _System(
        decoder=HFDecoder(model, max_new_tokens=max_new_tokens),
        tokenize_source=tokenize_source,
        tokenize_target=tokenize_target,
        detokenize=detokenize,
        max_new_tokens=max_new_tokens,
    )


def _lmbr_bias_factory(
    args: argparse.Namespace, num_sentences: int, system: _System, device: torch.device
) -> Callable[[Tensor, int], Any] | None:
    """Reads the evidence once; ``(batch_indices, prompt_len) -> LMBRBias``, or ``None``."""
    if not (args.lmbr_nbest or args.lmbr_ngrams):
        return None
    from tensortext.lmbr import (
        lmbr_bias_factory,
        lmbr_theta,
        read_nbest,
        read_ngram_posterior_files,
    )

    decoder = system.decoder
    if decoder.vocab_size is None:
        raise CliError("LMBR needs the model's output vocabulary size")
    eos = decoder.eos_id if isinstance(decoder.eos_id, int) else decoder.eos_id[0]
    theta = lmbr_theta(args.lmbr_p, args.lmbr_r, max_ngram_order=args.lmbr_order)
    evidence: Any
    if args.lmbr_nbest:
        evidence = read_nbest(
            args.lmbr_nbest,
            num_sentences=num_sentences,
            tokenize=system.tokenize_target,
            device=device,
        )
    else:
        evidence = read_ngram_posterior_files(args.lmbr_ngrams, num_sentences=num_sentences)
        longest = max((len(ngram) for table in evidence for ngram in table), default=0)
        if longest > args.lmbr_order:
            raise CliError(f"--lmbr-ngrams has {longest}-grams; raise --lmbr-order to {longest}")
    return lmbr_bias_factory(
        evidence,
        theta,
        vocab_size=decoder.vocab_size,
        eos_id=decoder.eos_id,
        weight=args.lmbr_weight,
        alpha=args.lmbr_alpha,
        max_ngram_order=args.lmbr_order,
        bos_id=args.lmbr_bos,
        end_id=eos if args.lmbr_eos else None,
    )


class _Progress:
    """A one-line progress bar on stderr: sentences done, rate. A context: leaving it ends the
    bar's line, so an error or "interrupted" after it starts a line of its own."""

    def __init__(self, total: int, stream: TextIO):
        self.total = max(total, 1)
        self.stream = stream
        self.started = time.perf_counter()

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stream.write("\n")
        self.stream.flush()

    def __call__(self, done: int) -> None:
        width = 30
        filled = width * done // self.total
        rate = done / max(time.perf_counter() - self.started, 1e-9)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\rtranslating [{bar}] {done}/{self.total} ({rate:.1f} sent/s)")
        self.stream.flush()

    def close(self, seconds: float, source_words: int) -> None:
        words_per_minute = 60 * source_words / max(seconds, 1e-9)
        self.stream.write(f"{seconds:.2f} s, {words_per_minute:.0f} source words/min\n")
        self.stream.flush()
