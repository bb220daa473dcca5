"""``tensortext demo``: token-ID BLEU on the bundled corpus, checked against sacrebleu, and beam
search with the bundled translation model, scored with BLEU."""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib import resources
from typing import Any, TextIO

import torch

from tensortext.bleu import corpus_bleu, sentence_bleu
from tensortext.ragged import pad_ragged, pad_ragged_refs, unpad

__all__ = ["demo", "demo_lmbr", "demo_tokenize", "demo_translation", "weaker_system_lmbr"]


def _bundled(name: str) -> list[str]:
    path = resources.files("tensortext").joinpath(f"data/demo/{name}")
    return path.read_text("utf-8").splitlines()


def _word_ids(lines: list[str], vocab: dict[str, int]) -> list[list[int]]:
    return [[vocab.setdefault(word, len(vocab)) for word in line.split()] for line in lines]


def demo(*, device: str | None = None, out: TextIO) -> None:
    """Scores the bundled 400-sentence corpus and times a batch of RL rewards."""
    target = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    hyps, refs, refs2 = _bundled("hyp.txt"), _bundled("ref.txt"), _bundled("ref2.txt")
    vocab: dict[str, int] = {}
    hyp_ids, hyp_lens = pad_ragged(_word_ids(hyps, vocab), device=target)
    ref_sets = list(zip(_word_ids(refs, vocab), _word_ids(refs2, vocab), strict=True))
    ref_ids, ref_lens = pad_ragged_refs(ref_sets, device=target)
    one_ref, one_len = ref_ids[:, 0], ref_lens[:, 0]

    out.write(f"tensortext demo on {target} ({len(hyps)} sentences, {len(vocab)} word types)\n\n")
    corpus_one = float(corpus_bleu(hyp_ids, one_ref, hyp_lens=hyp_lens, ref_lens=one_len))
    corpus_two = float(corpus_bleu(hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens))
    out.write(f"corpus BLEU, 1 reference : {100 * corpus_one:6.2f}\n")
    out.write(f"corpus BLEU, 2 references: {100 * corpus_two:6.2f}\n")
    try:
        from sacrebleu.metrics.bleu import BLEU
    except ImportError:
        out.write("(install sacrebleu to see its score beside ours)\n")
    else:
        reference = BLEU(tokenize="none", force=True).corpus_score(hyps, [refs]).score
        out.write(f"sacrebleu --tokenize none, 1 reference: {reference:6.2f}\n")

    rewards = sentence_bleu(hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens)
    out.write("\nper-sentence rewards (0-1), first five:\n")
    for i in range(5):
        out.write(f"  {float(rewards[i]):.4f}  {hyps[i]}\n")

    batch, length = 256, 1024
    generator = torch.Generator().manual_seed(0)
    policy = torch.randint(1, 32000, (batch, length), generator=generator)
    target_ids = torch.where(
        torch.rand(batch, length, generator=generator) < 0.6,
        policy,
        torch.randint(1, 32000, (batch, length), generator=generator),
    )
    policy, target_ids = policy.to(target), target_ids.to(target)
    seconds = []
    for _ in range(4):
        if target.type == "cuda":
            torch.cuda.synchronize(target)
        start = time.perf_counter()
        sentence_bleu(policy, target_ids, validate=False)
        if target.type == "cuda":
            torch.cuda.synchronize(target)
        seconds.append(time.perf_counter() - start)
    median = sorted(seconds[1:])[1]
    out.write(
        f"\nRL rewards for a {batch} x {length}-token batch on {target}: {1000 * median:.1f} ms "
        "(bench/bench_bleu.py compares with NLTK, sacrebleu, torchmetrics and rxlm)\n"
    )


def demo_translation(*, device: str | None = None, out: TextIO) -> None:
    """Translates the bundled test set with the bundled model: greedy vs beam, BLEU and speed."""
    from tensortext.decode import translate
    from tensortext.decode.bundled import load_bundled_translator

    target = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    sources, references = _bundled("translate.src"), _bundled("translate.ref")
    model = load_bundled_translator(target)
    src_ids, src_lens = model.tokenize_source(sources)
    ref_ids, ref_lens = model.tokenize_target(references)
    src_ids, src_lens = src_ids.to(target), src_lens.to(target)
    ref_ids, ref_lens = ref_ids.to(target), ref_lens.to(target)
    words = sum(len(line.split()) for line in sources)
    out.write(
        f"\nbeam search with the bundled model ({len(sources)} test sentences, batches of 64 "
        f"sentences x K beams, length-sorted, on {target}):\n"
    )
    texts: list[str] = []
    for num_beams in (1, 4):
        start = time.perf_counter()
        result = translate(model, src_ids, src_lens, num_beams=num_beams, max_sentences=64)
        if target.type == "cuda":
            torch.cuda.synchronize(target)
        seconds = time.perf_counter() - start
        hyp_ids, hyp_lens = _without_eos(result.sequences[:, 0], result.lengths[:, 0], model.eos_id)
        score, exact, texts = _quality(model, hyp_ids, hyp_lens, ref_ids, ref_lens, references)
        out.write(
            f"  K={num_beams:<2d} BLEU {100 * score:6.2f}   exact match {100 * exact:5.1f}%   "
            f"{seconds:6.2f} s ({60 * words / seconds:,.0f} source words/min)\n"
        )
    out.write("\nfirst three (source => beam-4 output | reference):\n")
    for source, text, reference in zip(sources[:3], texts[:3], references[:3], strict=True):
        out.write(f"  {source}\n    => {text}\n     | {reference}\n")


def _without_eos(
    ids: torch.Tensor, lengths: torch.Tensor, eos_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids, lengths)`` of hypotheses ``[..., T]`` with their final EOS left out."""
    last = ids.gather(-1, (lengths - 1).clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return ids, lengths - ((last == eos_id) & (lengths > 0)).long()


def _quality(
    model: Any,
    hyp_ids: torch.Tensor,
    hyp_lens: torch.Tensor,
    ref_ids: torch.Tensor,
    ref_lens: torch.Tensor,
    references: list[str],
) -> tuple[float, float, list[str]]:
    """Corpus BLEU on target-vocabulary IDs, exact-match rate and the detokenized hypotheses."""
    score = float(corpus_bleu(hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens))
    texts: list[str] = model.detokenize(hyp_ids, hyp_lens)
    exact = sum(h == r for h, r in zip(texts, references, strict=True)) / len(references)
    return score, exact, texts


_NUM_EVIDENCE = 8


def weaker_system_lmbr(
    model: Any, weaker: Any, src_ids: torch.Tensor, src_lens: torch.Tensor
) -> Callable[[torch.Tensor], Any]:
    """The demo's LMBR: ``batch_indices -> LMBRBias`` from the weaker system's 8-best lists.

    The weaker system is ``data/evidence_model`` (another seed, half the training, ~87 BLEU).
    alpha=1, weight=0.5 and sentence-end n-grams were chosen on 1,000 dev sentences of
    ``scripts/train_bundled_model.py`` (95.88 -> 96.30 BLEU there), not on the test set.
    """
    from tensortext.decode import LMBRBias, lmbr_theta, ngram_posteriors, translate

    nbest = translate(
        weaker, src_ids, src_lens, num_beams=_NUM_EVIDENCE, num_return_sequences=_NUM_EVIDENCE
    )
    evidence_ids, evidence_lens = _without_eos(nbest.sequences, nbest.lengths, model.eos_id)
    # Scores of the n-best are length-normalized; the posteriors weigh log-probabilities.
    evidence_scores = nbest.scores.double() * nbest.lengths.clamp(min=1)
    theta = lmbr_theta(0.741, 0.62)

    def lmbr_bias(batch: torch.Tensor) -> LMBRBias:
        posteriors = ngram_posteriors(
            evidence_ids[batch],
            evidence_lens[batch],
            evidence_scores[batch],
            alpha=1.0,
            eos_id=model.eos_id,
        )
        return LMBRBias(posteriors, theta, vocab_size=model.vocab_size, eos_id=model.eos_id,
                        weight=0.5)  # fmt: skip

    return lmbr_bias


def demo_lmbr(*, device: str | None = None, out: TextIO) -> None:
    """Beam search with and without LMBR posteriors (:func:`weaker_system_lmbr`), and MBR
    reranking, on the bundled test set."""
    from tensortext.decode import mbr_rerank, translate
    from tensortext.decode.bundled import load_bundled_translator

    target = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    sources, references = _bundled("translate.src"), _bundled("translate.ref")
    model = load_bundled_translator(target)
    weaker = load_bundled_translator(target, evidence_model=True)
    src_ids, src_lens = (t.to(target) for t in model.tokenize_source(sources))
    ref_ids, ref_lens = (t.to(target) for t in model.tokenize_target(references))
    lmbr_bias = weaker_system_lmbr(model, weaker, src_ids, src_lens)
    out.write(
        f"\nLMBR: n-gram posteriors from the {_NUM_EVIDENCE}-best lists of a weaker system, "
        "added at every beam step (K=4):\n"
    )
    rows = [("weaker system alone", weaker, None), ("bundled model", model, None),
            ("bundled model + LMBR", model, lmbr_bias)]  # fmt: skip
    for label, system, bias in rows:
        start = time.perf_counter()
        result = translate(system, src_ids, src_lens, num_beams=4, score_bias=bias)
        if target.type == "cuda":
            torch.cuda.synchronize(target)
        seconds = time.perf_counter() - start
        hyp_ids, hyp_lens = _without_eos(result.sequences[:, 0], result.lengths[:, 0], model.eos_id)
        score, exact, _ = _quality(model, hyp_ids, hyp_lens, ref_ids, ref_lens, references)
        out.write(
            f"  {label:<22s} BLEU {100 * score:6.2f}   exact match {100 * exact:5.1f}%   "
            f"{seconds:6.2f} s\n"
        )

    # MBR: rerank the bundled model's own 8-best by expected sentence BLEU against itself.
    own = translate(model, src_ids, src_lens, num_beams=8, num_return_sequences=8)
    own_ids, own_lens = _without_eos(own.sequences, own.lengths, model.eos_id)
    start = time.perf_counter()
    best = mbr_rerank(own_ids, own_lens, own.scores * own.lengths.clamp(min=1)).best
    seconds = time.perf_counter() - start
    rows_index = torch.arange(len(sources), device=target)
    hyp_ids, hyp_lens = own_ids[rows_index, best], own_lens[rows_index, best]
    score, exact, _ = _quality(model, hyp_ids, hyp_lens, ref_ids, ref_lens, references)
    out.write(
        f"  {'MBR rerank of 8-best':<22s} BLEU {100 * score:6.2f}   exact match "
        f"{100 * exact:5.1f}%   {seconds:6.2f} s for {len(sources) * 64:,} sentence-BLEU pairs\n"
    )


def demo_tokenize(*, device: str | None = None, out: TextIO) -> None:
    """Encodes the bundled texts with cl100k_base and o200k_base, checked against tiktoken."""
    from tensortext.bpe import get_encoding

    target = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
    texts = _bundled("multilingual.txt") + _bundled("ref.txt") + _bundled("translate.src")
    nbytes = sum(len(text.encode("utf-8")) for text in texts)
    out.write(f"\nexact batched BPE on {target}: {len(texts)} lines, {nbytes:,} bytes\n")
    for name in ("cl100k_base", "o200k_base"):
        encoding = get_encoding(name)
        encoding.encode_batch(texts[:4], device=target)  # builds the device tables once
        start = time.perf_counter()
        ids, lengths = encoding.encode_batch(texts, device=target)
        if target.type == "cuda":
            torch.cuda.synchronize(target)
        seconds = time.perf_counter() - start
        rows = unpad(ids, lengths)
        byte_rows = unpad(*encoding.encode_batch(texts, device=target, pretokenize="bytes"))
        differ = sum(a != b for a, b in zip(rows, byte_rows, strict=True))
        check = _tiktoken_agreement(name, texts, rows)
        out.write(
            f"  {name}: {int(lengths.sum()):,} tokens in {1000 * seconds:.0f} ms; {check}; "
            f"decode(encode(text)) == text: {encoding.decode_batch(ids, lengths) == texts}; "
            f"BlockBPE's byte-level split changes {differ} of {len(texts)} lines\n"
        )
    sample = texts[3]
    out.write(f"  e.g. {sample[:40]!r}... -> {get_encoding('o200k_base').encode(sample)[:12]}...\n")


def _tiktoken_agreement(name: str, texts: list[str], rows: list[list[int]]) -> str:
    try:
        import tiktoken

        from tensortext.bpe.registry import tiktoken_encoding
    except ImportError:
        return "install tiktoken to compare"
    reference: Any = tiktoken_encoding(name, tiktoken)
    expected = reference.encode_ordinary_batch(texts)
    same = sum(a == b for a, b in zip(rows, expected, strict=True))
    return f"identical to tiktoken on {same}/{len(texts)} lines"
