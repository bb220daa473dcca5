"""The BLEU accumulator: batches and processes add up to one corpus_bleu call."""

from __future__ import annotations

import tempfile
import warnings

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from nltk.translate.bleu_score import SmoothingFunction
from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu

from tensortext import BLEU, corpus_bleu

SETTINGS = [
    dict(compat="sacrebleu", smooth_method="exp"),
    dict(compat="sacrebleu", smooth_method="add-k", effective_order=True),
    dict(compat="nltk", smooth_method="method3"),
    dict(compat="nltk", smooth_method="method5"),  # reads the last sentence's 5-gram precision
    dict(compat="nltk", smooth_method="method7"),
]


def random_corpus(seed: int, batch: int = 24):
    generator = torch.Generator().manual_seed(seed)
    hyp = torch.randint(0, 6, (batch, 14), generator=generator)
    ref = torch.randint(0, 6, (batch, 2, 12), generator=generator)
    hyp_lens = torch.randint(0, 15, (batch,), generator=generator)
    ref_lens = torch.randint(0, 13, (batch, 2), generator=generator)
    return hyp, ref, hyp_lens, ref_lens


@pytest.mark.parametrize("options", SETTINGS, ids=lambda o: "-".join(map(str, o.values())))
def test_batches_add_up_to_corpus_bleu(options):
    hyp, ref, hyp_lens, ref_lens = random_corpus(0)
    expected = corpus_bleu(
        hyp, ref, hyp_lens=hyp_lens, ref_lens=ref_lens, dtype=torch.float64, **options
    )
    metric = BLEU(dtype=torch.float64, **options)
    for start, stop in [(0, 5), (5, 6), (6, 6), (6, 24)]:
        metric.update(
            hyp[start:stop],
            ref[start:stop],
            hyp_lens=hyp_lens[start:stop],
            ref_lens=ref_lens[start:stop],
        )
    # Same statistics, same float64 formula: equal to the last bit.
    assert float(metric.compute()) == float(expected)


def test_matches_nltk_corpus_bleu_across_updates():
    hyp, ref, hyp_lens, ref_lens = random_corpus(1)
    hyps = [hyp[b, : hyp_lens[b]].tolist() for b in range(len(hyp))]
    # Length 0 is an empty reference ([] for NLTK), not a missing one.
    refs = [[ref[b, r, : ref_lens[b, r]].tolist() for r in range(2)] for b in range(len(hyp))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = nltk_corpus_bleu(refs, hyps, smoothing_function=SmoothingFunction().method7)
    metric = BLEU(compat="nltk", smooth_method="method7", dtype=torch.float64)
    metric.update(hyp[:10], ref[:10], hyp_lens=hyp_lens[:10], ref_lens=ref_lens[:10])
    metric.update(hyp[10:], ref[10:], hyp_lens=hyp_lens[10:], ref_lens=ref_lens[10:])
    # Float64 throughout; 1e-12 covers the different order of float operations.
    torch.testing.assert_close(
        metric.compute(), torch.tensor(expected, dtype=torch.float64), atol=1e-12, rtol=0
    )


def test_reset_and_empty():
    metric = BLEU()
    assert float(metric.compute()) == 0.0
    metric.update(torch.tensor([[1, 2, 3, 4]]), torch.tensor([[1, 2, 3, 4]]))
    assert float(metric.compute()) == 1.0
    metric.reset()
    assert float(metric.compute()) == 0.0


def test_update_validates_before_accumulating():
    metric = BLEU()
    with pytest.raises(ValueError, match="rows"):
        metric.update(torch.ones(2, 3, dtype=torch.long), torch.ones(3, 3, dtype=torch.long))
    assert metric.stats is None


def _distributed_worker(rank: int, world: int, init_file: str, options: dict, out) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        hyp, ref, hyp_lens, ref_lens = random_corpus(2)
        # Uneven shards in rank order; rank 2 gets nothing at all.
        bounds = [(0, 7), (7, 24), (24, 24)][rank]
        metric = BLEU(dtype=torch.float64, **options)
        start, stop = bounds
        if stop > start:
            metric.update(
                hyp[start:stop],
                ref[start:stop],
                hyp_lens=hyp_lens[start:stop],
                ref_lens=ref_lens[start:stop],
            )
        out[rank] = float(metric.compute())
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("options", [SETTINGS[0], SETTINGS[3]], ids=["sacrebleu", "nltk-method5"])
def test_distributed_equals_single_process(options):
    hyp, ref, hyp_lens, ref_lens = random_corpus(2)
    expected = float(
        corpus_bleu(hyp, ref, hyp_lens=hyp_lens, ref_lens=ref_lens, dtype=torch.float64, **options)
    )
    world = 3
    with tempfile.TemporaryDirectory() as tmp:
        manager = mp.Manager()
        out = manager.dict()
        mp.spawn(_distributed_worker, args=(world, f"{tmp}/init", options, out), nprocs=world)
        results = [out[rank] for rank in range(world)]
    assert results == [expected] * world


def test_last_stats_is_a_private_copy():
    """Issue 16 item 7: editing the statistics ``update`` returns must not move the score."""
    # method7 reads the last sentence's 5-gram precision: make it 1 (a perfect last sentence).
    hyp = torch.tensor([[1, 2, 3, 9, 9, 9, 9], [1, 2, 3, 4, 5, 6, 7]])
    ref = torch.tensor([[1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7]])
    options = dict(compat="nltk", smooth_method="method7", dtype=torch.float64)
    expected = float(corpus_bleu(hyp, ref, **options))
    metric = BLEU(**options)
    returned = metric.update(hyp, ref)
    returned.zero_()
    assert float(metric.compute()) == expected
