"""CUDA equals CPU, and the hot paths do not synchronise with the host more than they must.

These need a CUDA device. CI has none: here they are collected and skipped with the reason. They
run on a lent GPU machine through ``bench/gpu/run.sh``; bench/README.md, "The GPU run", gives
the exact command, what travels with it and where the results land.

Host syncs are caught with ``torch.cuda.set_sync_debug_mode``: ``"error"`` where there must be
none (BLEU with ``validate=False``, the LMBR bias step), ``"warn"`` where there is a known number
(beam search: one per step, to decide whether to stop; the BPE engine: a fixed number per call,
whatever the batch).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import random
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from bpe.bpe_strategies import ATOMS
from decode.test_beam import EOS, sparse_table, table_step
from decode.test_beam_buffers import PROMPT, ending_step
from decode.test_hf import _EOS_DRIVER, _PEAKINESS, assert_same_generate_output, make_inputs
from decode.test_hf import tiny_model as cpu_tiny_model
from oracles.bpe import tiktoken_reference

import tensortext as tt
from tensortext.bpe import get_encoding
from tensortext.decode import BeamOutput, beam_search, search_state, translate
from tensortext.decode.hf import beam_search_hf, generate
from tensortext.integrations.trl import bleu_reward
from tensortext.lmbr import Evidence, LMBRBias, lmbr_bias_factory, lmbr_theta, ngram_posteriors
from tensortext.mbr import mbr_rerank
from tensortext.models.bundled import load_bundled_translator
from tensortext.padded import Padded

DEVICE = "cuda"
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

OPTIONS = [
    dict(compat="sacrebleu", smooth_method="exp"),
    dict(compat="sacrebleu", smooth_method="floor", effective_order=True),
    dict(compat="nltk", smooth_method="method7"),
    dict(compat="nltk", smooth_method="method6"),
]
# The first SENTENCES of the bundled test set. float32 search on another BLAS: near-ties may
# flip, 1 in 100, as tests/models/test_bundled.py allows 3 of 300.
SENTENCES, FLIPS_ALLOWED = 100, 1
DEMO = resources.files("tensortext") / "data/demo"


@contextlib.contextmanager
def sync_debug(mode: str) -> Iterator[list[str]]:
    """CUDA's sync debug mode inside the block: ``"error"`` raises at the first host sync,
    ``"warn"`` lists them (the list is filled when the block ends)."""
    torch.cuda.synchronize()
    found: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode(mode)
        try:
            yield found
        finally:
            torch.cuda.set_sync_debug_mode("default")
    found += [str(w.message) for w in caught if "synchroniz" in str(w.message)]


def random_batch(seed: int):
    generator = torch.Generator().manual_seed(seed)
    hyp = torch.randint(0, 8, (64, 40), generator=generator)
    ref = torch.randint(0, 8, (64, 3, 36), generator=generator)
    hyp_lens = torch.randint(0, 41, (64,), generator=generator)
    ref_lens = torch.randint(0, 37, (64, 3), generator=generator)
    return hyp, ref, hyp_lens, ref_lens


def on(device: str, *tensors: torch.Tensor) -> list[torch.Tensor]:
    return [t.to(device) for t in tensors]


# --------------------------------------------------------------------------------------------
# BLEU, the metric class, MBR, the TRL reward
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
def test_cuda_equals_cpu(options):
    hyp, ref, hyp_lens, ref_lens = random_batch(0)
    cpu = tt.bleu_stats(hyp, ref, hyp_lens=hyp_lens, ref_lens=ref_lens)
    gpu = tt.bleu_stats(*on(DEVICE, hyp, ref), hyp_lens=hyp_lens.to(DEVICE),
                        ref_lens=ref_lens.to(DEVICE))  # fmt: skip
    assert torch.equal(cpu, gpu.cpu())
    kwargs = dict(hyp_lens=hyp_lens, ref_lens=ref_lens, dtype=torch.float64, validate=False)
    on_cpu = tt.sentence_bleu(hyp, ref, **kwargs, **options)
    on_gpu = tt.sentence_bleu(
        *on(DEVICE, hyp, ref),
        **{**kwargs, "hyp_lens": hyp_lens.to(DEVICE), "ref_lens": ref_lens.to(DEVICE)},
        **options,
    )
    # Same float64 formula on both devices; only libm rounding differs.
    torch.testing.assert_close(on_gpu.cpu(), on_cpu, atol=1e-12, rtol=0, equal_nan=True)


@pytest.mark.parametrize("pad", ["lengths", "pad_id"])
def test_no_host_sync_with_validate_false(pad):
    hyp, ref, hyp_lens, ref_lens = on(DEVICE, *random_batch(1))
    padding = dict(hyp_lens=hyp_lens, ref_lens=ref_lens) if pad == "lengths" else dict(pad_id=0)
    tt.sentence_bleu(hyp, ref, validate=False, **padding)  # warm up allocations
    with sync_debug("error"):
        tt.sentence_bleu(hyp, ref, validate=False, **padding)
        tt.corpus_bleu(hyp, ref, validate=False, compat="nltk", smooth_method="method5", **padding)


@pytest.mark.parametrize("options", OPTIONS[:3], ids=lambda o: "-".join(map(str, o.values())))
def test_metric_class_accumulates_on_cuda_as_corpus_bleu_on_cpu(options):
    hyp, ref, hyp_lens, ref_lens = random_batch(2)
    expected = tt.corpus_bleu(hyp, ref, hyp_lens=hyp_lens, ref_lens=ref_lens,
                              dtype=torch.float64, **options)  # fmt: skip
    metric = tt.BLEU(dtype=torch.float64, **options)
    for part in (slice(0, 5), slice(5, 40), slice(40, 64)):
        metric.update(*on(DEVICE, hyp[part], ref[part]), hyp_lens=hyp_lens[part].to(DEVICE),
                      ref_lens=ref_lens[part].to(DEVICE))  # fmt: skip
    score = metric.compute()
    assert score.device.type == "cuda"
    # The same integer statistics; the same float64 formula.
    torch.testing.assert_close(score.cpu(), expected, atol=1e-12, rtol=0)


def test_mbr_rerank_on_cuda_equals_cpu():
    generator = torch.Generator().manual_seed(4)
    ids = torch.randint(1, 9, (16, 8, 20), generator=generator)
    lens = torch.randint(0, 21, (16, 8), generator=generator)
    scores = torch.randn((16, 8), generator=generator)
    scores[3, 5:] = -torch.inf  # absent candidates
    cpu = mbr_rerank(ids, lens, scores)
    gpu = mbr_rerank(*on(DEVICE, ids, lens, scores))
    assert gpu.best.device.type == "cuda"
    # float32 BLEU and softmax on both devices, summed in another order.
    torch.testing.assert_close(gpu.expected_bleu.cpu(), cpu.expected_bleu, atol=1e-6, rtol=1e-5)
    best_value = cpu.expected_bleu.gather(1, cpu.best[:, None])
    chosen = cpu.expected_bleu.gather(1, gpu.best.cpu()[:, None])
    torch.testing.assert_close(chosen, best_value, atol=1e-6, rtol=1e-5)  # a tie may pick either


def test_trl_reward_on_cuda_equals_cpu():
    completions = [[5, 6, 7, 8, 2], [5, 6, 9, 2], [5, 6, 7], [], [9] * 30]
    solutions = [[5, 6, 7, 8], [[5, 6, 7, 8], [5, 6, 9, 9]], [5, 6, 7, 1], [3], [9] * 12]
    cpu = bleu_reward("solution", eos_id=2, device=None)(completion_ids=completions,
                                                          solution=solutions)  # fmt: skip
    gpu = bleu_reward("solution", eos_id=2, device=DEVICE)(completion_ids=completions,
                                                             solution=solutions)  # fmt: skip
    # float32 on both devices; 1e-6 is the library's float32 parity bound.
    torch.testing.assert_close(torch.tensor(gpu), torch.tensor(cpu), atol=1e-6, rtol=0)


# --------------------------------------------------------------------------------------------
# Beam search: host syncs, buffer growth, LMBR inside the search
# --------------------------------------------------------------------------------------------


def table_search(
    tables: torch.Tensor, starts: torch.Tensor, num_beams: int, calls: list[int] | None = None,
    **kwargs: Any,
) -> BeamOutput:  # fmt: skip
    """``beam_search`` with the table model of tests/decode/test_beam.py, inputs already on
    the tables' device (so that building them is no host sync of the search); ``calls``
    counts the model calls (the steps)."""
    B = starts.shape[0]
    sentence = torch.arange(B, device=tables.device).repeat_interleave(num_beams)
    model = table_step(tables)

    def step(tokens: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if calls is not None:
            calls.append(tokens.shape[1])
        return model(tokens, state)

    return beam_search(step, sentence, batch_size=B, num_beams=num_beams, eos_id=EOS,
                       start_ids=starts, **kwargs)  # fmt: skip


def test_beam_search_syncs_with_the_host_once_per_step():
    # Every token may follow every token, EOS unlikely: the searches run to max_new_tokens.
    tables = torch.randn((8, 50, 50), generator=torch.Generator().manual_seed(9))
    tables[:, :, EOS] -= 8.0
    tables = torch.log_softmax(tables, dim=-1).to(DEVICE)
    starts = torch.arange(1, 9, device=DEVICE)
    counts = []
    for max_new_tokens in (6, 14):
        kwargs = dict(max_new_tokens=max_new_tokens, validate=False)
        table_search(tables, starts, 4, **kwargs)  # warm-up
        steps: list[int] = []
        with sync_debug("warn") as syncs:
            table_search(tables, starts, 4, steps, **kwargs)
        counts.append((len(syncs), len(steps)))
    (short_syncs, short_steps), (long_syncs, long_steps) = counts
    assert long_steps > short_steps, counts
    # One sync per step (the stop check) plus a fixed number per search.
    assert long_syncs - short_syncs == long_steps - short_steps, counts


@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_beam_buffers_grow_on_cuda_with_the_same_results(monkeypatch, finished):
    ends_at, K = 21, 3
    tables = torch.stack([sparse_table(seed, 12, successors=4) for seed in range(3)])
    kwargs = dict(finished=finished, output_token_scores=True, num_return_sequences=K)

    def search(device: str, max_new_tokens: int) -> BeamOutput:
        step = ending_step(tables.to(device), len(PROMPT[0]), ends_at)
        return beam_search(step, torch.arange(3, device=device).repeat_interleave(K),
                           batch_size=3, num_beams=K, eos_id=EOS,
                           start_ids=torch.tensor(PROMPT, device=device),
                           max_new_tokens=max_new_tokens, **kwargs)  # fmt: skip

    expected = search("cpu", ends_at + 1)
    monkeypatch.setattr(search_state, "INITIAL_CAPACITY", 2)  # grows at many steps
    for max_new_tokens in (ends_at + 1, 2**40):
        out = search(DEVICE, max_new_tokens)
        assert torch.equal(out.sequences.cpu(), expected.sequences)
        assert torch.equal(out.lengths.cpu(), expected.lengths)
        # The same float32 additions in the same order on both devices.
        torch.testing.assert_close(out.scores.cpu(), expected.scores, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(out.token_scores.cpu(), expected.token_scores,
                                   rtol=1e-6, atol=1e-6)  # fmt: skip


def lmbr_posteriors(device: str, vocab: int, seed: int):
    """Posteriors of 3 sentences x 6 random evidence hypotheses, built on ``device``."""
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, vocab, (3, 6, 7), generator=generator)
    lens = torch.randint(1, 8, (3, 6), generator=generator)
    scores = -torch.rand((3, 6), generator=generator, dtype=torch.float64)
    return ngram_posteriors(*on(device, ids, lens, scores), bos_id=vocab, eos_id=EOS)


def test_lmbr_bias_step_does_not_sync():
    vocab = 40
    bias = LMBRBias(lmbr_posteriors(DEVICE, vocab, 5), lmbr_theta(0.7, 0.6), vocab_size=vocab,
                    eos_id=EOS, weight=1.5)  # fmt: skip
    generator = torch.Generator().manual_seed(6)
    tokens = torch.randint(1, vocab, (12, 9), generator=generator).to(DEVICE)
    tokens[:, 0] = vocab  # the BOS the posteriors were built with
    bias(tokens[:, :2])  # warm-up
    with sync_debug("error"):
        for t in range(1, 10):
            bias(tokens[:, :t])


@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_lmbr_inside_beam_search_on_cuda_equals_cpu(finished):
    vocab, K = 40, 4
    tables = torch.stack([sparse_table(20 + s, vocab, successors=8) for s in range(3)])
    kwargs = dict(max_new_tokens=10, finished=finished, num_return_sequences=2)
    outs = {}
    for device in ("cpu", DEVICE):
        bias = LMBRBias(lmbr_posteriors(device, vocab, 7), lmbr_theta(0.7, 0.6),
                        vocab_size=vocab, eos_id=EOS, weight=1.0)  # fmt: skip
        starts = torch.tensor([1, 2, 3], device=device)
        outs[device] = table_search(tables.to(device), starts, K, score_bias=bias, **kwargs)
    plain = table_search(tables, torch.tensor([1, 2, 3]), K, **kwargs)
    assert not torch.equal(plain.scores, outs["cpu"].scores)  # the bias does change the search
    assert torch.equal(outs[DEVICE].sequences.cpu(), outs["cpu"].sequences)
    torch.testing.assert_close(outs[DEVICE].scores.cpu(), outs["cpu"].scores,
                               rtol=1e-5, atol=1e-5)  # fmt: skip


# --------------------------------------------------------------------------------------------
# translate() with the bundled model, the CLI
# --------------------------------------------------------------------------------------------


def _translations(device: str, lmbr: bool) -> list[str]:
    model = load_bundled_translator(device)
    lines = (DEMO / "translate.src").read_text("utf-8").splitlines()[:SENTENCES]
    src = model.tokenize_source(lines)
    bias = None
    if lmbr:
        weaker = load_bundled_translator(device, evidence_model=True)
        nbest = translate(weaker, src.ids, src.lengths, num_beams=8, num_return_sequences=8)
        bias = lmbr_bias_factory(
            Evidence.from_beam_output(nbest, eos_id=model.eos_id), lmbr_theta(0.741, 0.62),
            vocab_size=model.vocab_size, eos_id=model.eos_id, weight=0.5, alpha=1.0,
            end_id=model.eos_id,
        )  # fmt: skip
    out = translate(model, src.ids, src.lengths, num_beams=4, score_bias=bias)
    assert out.sequences.device.type == torch.device(device).type
    return model.detokenize(*out.without_eos(0))


@pytest.mark.parametrize("lmbr", [False, True], ids=["plain", "lmbr"])
def test_translate_on_cuda_equals_cpu(lmbr):
    cpu, gpu = _translations("cpu", lmbr), _translations(DEVICE, lmbr)
    assert len(cpu) == len(gpu) == SENTENCES
    differ = [i for i, (a, b) in enumerate(zip(cpu, gpu, strict=True)) if a != b]
    assert len(differ) <= FLIPS_ALLOWED, [(cpu[i], gpu[i]) for i in differ[:5]]


def cli(*argv: str, stdin: str = "") -> str:
    done = subprocess.run([sys.executable, "-m", "tensortext.cli", *argv], input=stdin,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_cli_with_device_cuda(tmp_path):
    src = tmp_path / "src.txt"
    src.write_text("4 0 7 1 5\n7 : 3 0 pm\n", encoding="utf-8")
    translated = cli("translate", "-i", str(src), "-k", "4", "-q", "--device", DEVICE)
    assert translated.splitlines() == ["forty thousand seven hundred fifteen",
                                       "seven thirty in the evening"]  # fmt: skip
    text = (DEMO / "multilingual.txt").read_text("utf-8")
    on_cpu = cli("tokenize", "-e", "o200k_base", "--device", "cpu", stdin=text)
    assert cli("tokenize", "-e", "o200k_base", "--device", DEVICE, stdin=text) == on_cpu


# --------------------------------------------------------------------------------------------
# HF: beam_search_hf and generate against model.generate, on CUDA
# --------------------------------------------------------------------------------------------


def cuda_tiny_model(name: str) -> Any:
    """tests/decode/test_hf.py's tiny random model on ``DEVICE``, its logits hook rebuilt with
    the EOS index on that device (the original indexes with a CPU tensor)."""
    model = copy.deepcopy(cpu_tiny_model(name)).to(DEVICE)
    head = model.get_output_embeddings()
    head._forward_hooks.clear()
    scale, eos_offset = _PEAKINESS[name]
    eos = torch.tensor([model.generation_config.eos_token_id], device=DEVICE)

    def hook(module: torch.nn.Module, inputs: Any, logits: torch.Tensor) -> torch.Tensor:
        z = (logits - logits.mean(-1, keepdim=True)) / logits.std(-1, keepdim=True)
        eos_logit = z.max(-1).values * scale + z[..., _EOS_DRIVER] - eos_offset
        return (z * scale).index_copy(-1, eos, eos_logit.unsqueeze(-1))

    head.register_forward_hook(hook)
    return model


HF_MODELS = ["marian", "bart", "t5", "gpt2", "llama"]
HF_CASES = {
    "beam": {"num_beams": 4, "max_new_tokens": 10},
    "R2-scores": {"num_beams": 4, "num_return_sequences": 2, "max_new_tokens": 9,
                  "return_dict_in_generate": True, "output_scores": True},
    "greedy": {"num_beams": 1, "max_new_tokens": 8},
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HF_CASES))
@pytest.mark.parametrize("name", HF_MODELS)
def test_generate_on_cuda_equals_model_generate(name, case):
    model = cuda_tiny_model(name)
    input_ids, mask = on(DEVICE, *make_inputs(model, 4, 37, padded=True))
    theirs = model.generate(input_ids, attention_mask=mask, **HF_CASES[case])
    ours = generate(model, input_ids, mask, **HF_CASES[case])
    assert_same_generate_output(ours, theirs, f"{name} {case} on {DEVICE}")


@pytest.mark.parametrize("name", HF_MODELS)
def test_beam_search_hf_on_cuda_equals_cpu_and_model_generate(name):
    model, cpu_model = cuda_tiny_model(name), cpu_tiny_model(name)
    input_ids, mask = make_inputs(cpu_model, 4, 11, padded=True)
    settings = dict(num_beams=4, max_new_tokens=10, num_return_sequences=2)
    cpu = beam_search_hf(cpu_model, input_ids, mask, **settings)
    gpu = beam_search_hf(model, *on(DEVICE, input_ids, mask), **settings)
    assert torch.equal(gpu.sequences.cpu(), cpu.sequences)
    assert torch.equal(gpu.lengths.cpu(), cpu.lengths)
    # float32 models on two BLAS libraries; HF parity is checked to the same bounds.
    torch.testing.assert_close(gpu.scores.cpu(), cpu.scores, atol=1e-5, rtol=1.3e-6)
    theirs = model.generate(*on(DEVICE, input_ids), attention_mask=mask.to(DEVICE),
                            do_sample=False, **settings)  # fmt: skip
    prompt = 1 if model.config.is_encoder_decoder else input_ids.shape[1]
    hf_rows = theirs[:, prompt:].cpu().reshape(4, 2, -1)
    for b in range(4):
        for r in range(2):
            mine = gpu.sequences[b, r, : gpu.lengths[b, r]].tolist()
            assert hf_rows[b, r, : len(mine)].tolist() == mine, (name, b, r)


# --------------------------------------------------------------------------------------------
# BPE: host syncs, random-text parity with tiktoken through every backend
# --------------------------------------------------------------------------------------------

BACKENDS = ["auto", "torch"] + (["triton"] if importlib.util.find_spec("triton") else [])


def random_text(rng: random.Random, atoms: int) -> str:
    return "".join(rng.choice(ATOMS) for _ in range(atoms))


def test_bpe_host_syncs_do_not_grow_with_the_batch():
    enc = get_encoding("cl100k_base")
    text = random_text(random.Random(8), 300)
    counts = {}
    for backend in BACKENDS:
        for batch in (1, 32):
            texts = [text] * batch
            kwargs = dict(device=DEVICE, merge_backend=backend, disallowed_special=())
            enc.encode_batch_to_tensor(texts, **kwargs)  # warm-up
            with sync_debug("warn") as syncs:
                enc.encode_batch_to_tensor(texts, **kwargs)
            counts[backend, batch] = len(syncs)
    # The same merge passes for one text and for 32 copies: no host work per row.
    for backend in BACKENDS:
        assert counts[backend, 1] == counts[backend, 32], counts


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base"])
def test_random_text_equals_tiktoken_through_every_backend(name):
    rng = random.Random(sum(map(ord, name)))
    texts = [random_text(rng, rng.randint(0, 300)) for _ in range(64)]
    texts += ["", "a" * 20_000, " " * 500 + "x", "".join(chr(rng.randrange(0x4E00, 0x9FA5))
                                                        for _ in range(3000))]  # fmt: skip
    expected = tiktoken_reference(name).encode_ordinary_batch(texts, num_threads=1)
    enc = get_encoding(name)
    results = {"flat": enc.encode_batch_to_flat(texts, device=DEVICE, disallowed_special=())}
    for backend in BACKENDS:
        results[backend] = Padded(*enc.encode_batch_to_tensor(
            texts, device=DEVICE, disallowed_special=(), merge_backend=backend))  # fmt: skip
    for label, result in results.items():
        assert result.ids.device.type == "cuda", label
        rows = result.tolist()
        wrong = [i for i, (got, want) in enumerate(zip(rows, expected, strict=True)) if got != want]
        assert not wrong, f"{name} {label}: row {wrong[0]} {texts[wrong[0]][:80]!r}"


# --------------------------------------------------------------------------------------------
# The metric class across processes (last: it spawns two)
# --------------------------------------------------------------------------------------------


def _distributed_worker(rank: int, world: int, init_file: str, out: Any) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world)
    try:
        hyp, ref, hyp_lens, ref_lens = random_batch(3)
        part = slice(0, 9) if rank == 0 else slice(9, 64)  # uneven shards
        metric = tt.BLEU(dtype=torch.float64, compat="nltk", smooth_method="method5")
        metric.update(*on(DEVICE, hyp[part], ref[part]), hyp_lens=hyp_lens[part].to(DEVICE),
                      ref_lens=ref_lens[part].to(DEVICE))  # fmt: skip
        out[rank] = float(metric.compute())
    finally:
        dist.destroy_process_group()


def test_metric_class_distributed_on_cuda_equals_one_process():
    hyp, ref, hyp_lens, ref_lens = random_batch(3)
    options = dict(dtype=torch.float64, compat="nltk", smooth_method="method5")
    expected = float(tt.corpus_bleu(hyp, ref, hyp_lens=hyp_lens, ref_lens=ref_lens, **options))
    world = 2  # both ranks on the one GPU: gloo takes CUDA tensors (NCCL wants a GPU per rank)
    with tempfile.TemporaryDirectory() as tmp:
        out = mp.Manager().dict()
        mp.spawn(_distributed_worker, args=(world, f"{tmp}/init", out), nprocs=world)
        results = [out[rank] for rank in range(world)]
    assert results == [expected] * world
