"""``tensortext translate``: beam-search a file with the bundled model or a Hugging Face model."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import torch

from tensortext.decode.beam import BeamOutput, EarlyStopping
from tensortext.decode.lmbr import (
    LMBRBias,
    NgramPosteriors,
    lmbr_theta,
    ngram_posteriors,
    read_nbest,
    read_ngram_posterior_files,
)
from tensortext.decode.translate import length_batches, translate

__all__ = ["add_translate_arguments", "run_translate"]


def add_translate_arguments(parser: argparse.ArgumentParser) -> None:
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
    parser.add_argument("--early-stopping", choices=["false", "true", "never"], default="false")
    parser.add_argument("--finished", choices=["refill", "mask"], default="refill")
    parser.add_argument("--prune-threshold", type=float, default=None, help="e.g. 0.01")
    parser.add_argument(
        "--nbest",
        type=int,
        default=0,
        metavar="R",
        help="print the R best as Moses n-best lines 'id ||| text ||| ||| score' (empty features)",
    )
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
    lmbr.add_argument("--lmbr-order", type=int, default=4, help="highest n-gram order")
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
    parser.add_argument("--device", default=None, help="torch device (default: cuda if available)")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def run_translate(
    args: argparse.Namespace,
    stdout: TextIO,
    stdin: TextIO | None,
    read_lines: Callable[[str | None, TextIO | None], list[str]],
    error: type[Exception],
) -> None:
    """Translate ``args.input`` (or stdin) and write one line per sentence, or n-best lines."""
    lines = read_lines(args.input, stdin)
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    stopping_modes: dict[str, EarlyStopping] = {"false": False, "true": True, "never": "never"}
    early_stopping = stopping_modes[args.early_stopping]
    for flag, value, low in (("--num-beams", args.num_beams, 1), ("--nbest", args.nbest, 0),
                             ("--batch-sentences", args.batch_sentences, 1)):  # fmt: skip
        if value < low:
            raise error(f"{flag} must be >= {low}, got {value}")
    returns = max(args.nbest, 1)
    if returns > args.num_beams:
        raise error(f"--nbest {args.nbest} exceeds --num-beams {args.num_beams}; raise -k")
    if args.lmbr_nbest and args.lmbr_ngrams:
        raise error("give --lmbr-nbest or --lmbr-ngrams, not both")
    if args.lmbr_bos is not None and not args.lmbr_ngrams:
        raise error("--lmbr-bos only applies to --lmbr-ngrams files")
    options: dict[str, Any] = dict(
        num_beams=args.num_beams,
        min_new_tokens=args.min_new_tokens,
        length_penalty=args.length_penalty,
        early_stopping=early_stopping,
        finished=args.finished,
        prune_threshold=args.prune_threshold,
        num_return_sequences=returns,
    )
    progress = None if args.quiet else _Progress(len(lines), sys.stderr)
    started = time.perf_counter()
    try:
        if args.model == "bundled":
            texts, scores = _translate_bundled(lines, args, options, device, progress)
        else:
            texts, scores = _translate_hf(lines, args, options, device, progress)
    except ValueError as exc:
        raise error(str(exc)) from exc
    elapsed = time.perf_counter() - started
    if progress is not None:
        progress.close(elapsed, sum(len(line.split()) for line in lines))

    out = open(args.output, "w", encoding="utf-8") if args.output else stdout  # noqa: SIM115
    try:
        for i, (hyps, hyp_scores) in enumerate(zip(texts, scores, strict=True)):
            if args.nbest:
                for text, score in zip(hyps, hyp_scores, strict=True):
                    out.write(f"{i} ||| {text} |||  ||| {score:.6f}\n")
            else:
                out.write(hyps[0] + "\n")
    finally:
        if out is not stdout:
            out.close()


def _translate_bundled(
    lines: Sequence[str],
    args: argparse.Namespace,
    options: dict[str, Any],
    device: torch.device,
    progress: _Progress | None,
) -> tuple[list[list[str]], list[list[float]]]:
    from tensortext.decode.bundled import load_bundled_translator

    model = load_bundled_translator(device)
    word_ids = {word: i for i, word in enumerate(model.target_vocab)}

    def tokenize(text: str) -> list[int]:
        unknown = [word for word in text.split() if word not in word_ids]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not in the bundled model's target vocabulary")
        return [word_ids[word] for word in text.split()]

    lmbr = _lmbr_bias_factory(args, len(lines), tokenize, model.vocab_size, model.eos_id, device)
    limit = model.max_len - 1
    if args.max_new_tokens is not None and args.max_new_tokens > limit:
        raise ValueError(
            f"--max-new-tokens {args.max_new_tokens} exceeds the bundled model's {limit}"
        )
    src_ids, src_lens = model.tokenize_source(lines)
    out = translate(
        model,
        src_ids.to(device),
        src_lens.to(device),
        max_sentences=args.batch_sentences,
        max_tokens=args.batch_tokens,
        sort_by_length=not args.no_sort,
        # The model's positions end at max_len (start token included).
        max_new_tokens=args.max_new_tokens or (lambda longest: min(2 * longest + 10, limit)),
        score_bias=None if lmbr is None else lambda batch: lmbr(batch, 1),
        progress=progress,
        **options,
    )
    R = out.sequences.shape[1]
    flat = model.detokenize(out.sequences.flatten(0, 1), out.lengths.flatten())
    texts = [flat[i * R : (i + 1) * R] for i in range(len(lines))]
    return texts, out.scores.tolist()


def _translate_hf(
    lines: Sequence[str],
    args: argparse.Namespace,
    options: dict[str, Any],
    device: torch.device,
    progress: _Progress | None,
) -> tuple[list[list[str]], list[list[float]]]:
    try:
        from transformers import (
            AutoConfig,
            AutoModelForCausalLM,
            AutoModelForSeq2SeqLM,
            AutoTokenizer,
        )
    except ImportError as exc:
        raise ValueError("--model DIR needs transformers: pip install 'tensortext[hf]'") from exc
    from tensortext.decode.hf import _output_vocab_size, generate

    if not Path(args.model).is_dir():
        raise ValueError(f"--model {args.model!r} is neither 'bundled' nor a model directory")
    config = AutoConfig.from_pretrained(args.model, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
    auto = AutoModelForSeq2SeqLM if config.is_encoder_decoder else AutoModelForCausalLM
    model: Any = auto.from_pretrained(args.model, local_files_only=True)
    model = model.to(device).eval()
    if not config.is_encoder_decoder:
        tokenizer.padding_side = "left"
    # Tokenize once: the lengths plan the batches, and each batch is padded from these IDs.
    token_ids = tokenizer(list(lines))["input_ids"]
    eos = model.generation_config.eos_token_id
    vocab_size = _output_vocab_size(model)
    if (args.lmbr_nbest or args.lmbr_ngrams) and (eos is None or vocab_size is None):
        raise ValueError("LMBR needs the model's eos_token_id and output vocabulary size")

    def tokenize(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    lmbr = _lmbr_bias_factory(args, len(lines), tokenize, vocab_size or 0, eos, device)

    lengths = torch.tensor([len(ids) for ids in token_ids])
    texts: list[list[str]] = [[] for _ in lines]
    scores: list[list[float]] = [[] for _ in lines]
    done = 0
    for batch in length_batches(
        lengths,
        max_sentences=args.batch_sentences,
        max_tokens=args.batch_tokens,
        sort_by_length=not args.no_sort,
    ):
        indices = batch.tolist()
        encoded = tokenizer.pad({"input_ids": [token_ids[i] for i in indices]}, return_tensors="pt")
        longest = encoded["input_ids"].shape[1]
        # Decoder-only rows start with the (left-padded) prompt; encoder-decoder ones with the
        # decoder start token.
        prompt_len = 1 if config.is_encoder_decoder else longest
        out: BeamOutput = generate(
            model,
            encoded["input_ids"].to(device),
            encoded["attention_mask"].to(device),
            max_new_tokens=args.max_new_tokens or 2 * longest + 10,
            score_bias=None if lmbr is None else lmbr(batch.to(device), prompt_len),
            **options,
        )
        for row, i in enumerate(indices):
            for r in range(out.sequences.shape[1]):
                ids = out.sequences[row, r, : out.lengths[row, r]]
                text = tokenizer.decode(ids, skip_special_tokens=True)
                texts[i].append(str(text).strip())
            scores[i] = out.scores[row].tolist()
        done += len(indices)
        if progress is not None:
            progress(done)
    return texts, scores


def _lmbr_bias_factory(
    args: argparse.Namespace,
    num_sentences: int,
    tokenize: Callable[[str], Sequence[int]],
    vocab_size: int,
    eos_id: int | Sequence[int],
    device: torch.device,
) -> Callable[[torch.Tensor, int], LMBRBias] | None:
    """Reads the evidence once; returns ``(batch_indices, prompt_len) -> LMBRBias`` over the
    evidence of those sentences, or ``None`` without LMBR options."""
    if not (args.lmbr_nbest or args.lmbr_ngrams):
        return None
    theta = lmbr_theta(args.lmbr_p, args.lmbr_r, max_order=args.lmbr_order)
    eos = eos_id if isinstance(eos_id, int) else eos_id[0]
    end = eos if args.lmbr_eos else None
    options = dict(vocab_size=vocab_size, eos_id=eos_id, weight=args.lmbr_weight)
    if args.lmbr_nbest:
        evidence = read_nbest(
            args.lmbr_nbest, num_sentences=num_sentences, tokenize=tokenize, device=device
        )

        def from_nbest(batch: torch.Tensor, prompt_len: int) -> LMBRBias:
            posteriors = ngram_posteriors(
                evidence.ids[batch],
                evidence.lengths[batch],
                evidence.scores[batch],
                alpha=args.lmbr_alpha,
                max_order=args.lmbr_order,
                eos_id=end,
            )
            return LMBRBias(posteriors, theta, prompt_len=prompt_len, **options)

        return from_nbest
    tables = read_ngram_posterior_files(args.lmbr_ngrams, num_sentences=num_sentences)
    longest = max((len(ngram) for table in tables for ngram in table), default=0)
    if longest > args.lmbr_order:
        raise ValueError(f"--lmbr-ngrams has {longest}-grams; raise --lmbr-order to {longest}")

    def from_files(batch: torch.Tensor, prompt_len: int) -> LMBRBias:
        chosen = [tables[i] for i in batch.tolist()]
        posteriors = NgramPosteriors.from_ngrams(
            chosen, bos_id=args.lmbr_bos, eos_id=end, device=device
        )
        order = posteriors.max_order
        return LMBRBias(posteriors, theta[: order + 1], prompt_len=prompt_len, **options)

    return from_files


class _Progress:
    """A one-line progress bar on stderr: sentences done, rate."""

    def __init__(self, total: int, stream: TextIO):
        self.total = max(total, 1)
        self.stream = stream
        self.started = time.perf_counter()

    def __call__(self, done: int) -> None:
        width = 30
        filled = width * done // self.total
        rate = done / max(time.perf_counter() - self.started, 1e-9)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\rtranslating [{bar}] {done}/{self.total} ({rate:.1f} sent/s)")
        self.stream.flush()

    def close(self, seconds: float, source_words: int) -> None:
        words_per_minute = 60 * source_words / max(seconds, 1e-9)
        self.stream.write(f"\n{seconds:.2f} s, {words_per_minute:.0f} source words/min\n")
        self.stream.flush()
