"""CUDA equals CPU, and the hot path never synchronises with the host.

These need a CUDA device; CI has none, so they run on the GPU machines (see bench/README.md).
"""

from __future__ import annotations

import pytest
import torch

import tensortext as tt

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

OPTIONS = [
    dict(compat="sacrebleu", smooth_method="exp"),
    dict(compat="sacrebleu", smooth_method="floor", effective_order=True),
    dict(compat="nltk", smooth_method="method7"),
    dict(compat="nltk", smooth_method="method6"),
]


def random_batch(seed: int):
    generator = torch.Generator().manual_seed(seed)
    hyp = torch.randint(0, 8, (64, 40), generator=generator)
    ref = torch.randint(0, 8, (64, 3, 36), generator=generator)
    hyp_lens = torch.randint(0, 41, (64,), generator=generator)
    ref_lens = torch.randint(0, 37, (64, 3), generator=generator)
    return hyp, ref, hyp_lens, ref_lens


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
def test_cuda_equals_cpu(options):
    hyp, ref, hyp_lens, ref_lens = random_batch(0)
    cpu = tt.bleu_stats(hyp, ref, hyp_lens=hyp_lens, ref_lens=ref_lens)
    gpu = tt.bleu_stats(hyp.cuda(), ref.cuda(), hyp_lens=hyp_lens.cuda(), ref_lens=ref_lens.cuda())
    assert torch.equal(cpu, gpu.cpu())
    kwargs = dict(hyp_lens=hyp_lens, ref_lens=ref_lens, dtype=torch.float64, validate=False)
    on_cpu = tt.sentence_bleu(hyp, ref, **kwargs, **options)
    on_gpu = tt.sentence_bleu(
        hyp.cuda(),
        ref.cuda(),
        **{**kwargs, "hyp_lens": hyp_lens.cuda(), "ref_lens": ref_lens.cuda()},
        **options,
    )
    # Same float64 formula on both devices; only libm rounding differs.
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, atol=1e-12, rtol=0, equal_nan=True)


@pytest.mark.parametrize("pad", ["lengths", "pad_id"])
def test_no_host_sync_with_validate_false(pad):
    hyp, ref, hyp_lens, ref_lens = (t.cuda() for t in random_batch(1))
    padding = dict(hyp_lens=hyp_lens, ref_lens=ref_lens) if pad == "lengths" else dict(pad_id=0)
    tt.sentence_bleu(hyp, ref, validate=False, **padding)  # warm up allocations
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        tt.sentence_bleu(hyp, ref, validate=False, **padding)
        tt.corpus_bleu(hyp, ref, validate=False, compat="nltk", smooth_method="method5", **padding)
    finally:
        torch.cuda.set_sync_debug_mode("default")
