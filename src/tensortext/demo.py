"""``tensortext demo``: token-ID BLEU on the bundled corpus, checked against sacrebleu, and beam
search with the bundled translation model, scored with BLEU."""

from __future__ import annotations

import time
from importlib import resources
from typing import TextIO

import torch

from tensortext.bleu import corpus_bleu, sentence_bleu
from tensortext.ragged import pad_ragged, pad_ragged_refs

__all__ = ["demo", "demo_translation"]


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
        hyp_ids, hyp_lens = result.sequences[:, 0], result.lengths[:, 0]
        # BLEU on target-vocabulary IDs, without the EOS that ends each hypothesis.
        ends_with_eos = (
            hyp_ids.gather(1, (hyp_lens - 1).clamp(min=0)[:, None])[:, 0] == model.eos_id
        )
        hyp_lens = hyp_lens - (ends_with_eos & (hyp_lens > 0)).long()
        score = float(corpus_bleu(hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens))
        texts = model.detokenize(hyp_ids, hyp_lens)
        exact = sum(h == r for h, r in zip(texts, references, strict=True)) / len(references)
        out.write(
            f"  K={num_beams:<2d} BLEU {100 * score:6.2f}   exact match {100 * exact:5.1f}%   "
            f"{seconds:6.2f} s ({60 * words / seconds:,.0f} source words/min)\n"
        )
    out.write("\nfirst three (source => beam-4 output | reference):\n")
    for source, text, reference in zip(sources[:3], texts[:3], references[:3], strict=True):
        out.write(f"  {source}\n    => {text}\n     | {reference}\n")
