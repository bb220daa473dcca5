"""LMBR inside beam search: ``beam_search``, ``translate`` and ``transformers`` parity.

* :func:`~tensortext.decode.beam_search` with an :class:`LMBRBias`, on the table-driven models
  of ``tests/decode/test_beam.py``: weight 0 is plain search (bitwise), strong posteriors for a
  hypothesis the model alone does not choose make the search return exactly it, and batch
  invariance.
* ``tensortext.decode.hf.beam_search_hf(score_bias=LMBRBias(...))`` against ``model.generate``
  with :class:`LMBRLogitsProcessor`, on the tiny random models of ``tests/decode/test_hf.py``.
* :func:`~tensortext.decode.translate` with :func:`lmbr_bias_factory` on the bundled model:
  batching does not change the result.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
import torch

# The table-driven models of tests/decode/test_beam.py and the tiny random HF models of
# tests/decode/test_hf.py (tests/ is on sys.path through its conftest).
from decode.test_beam import exhaustive, hypotheses, sparse_table, table_step
from decode.test_hf import VOCAB, assert_same_beams, hf_generate, make_inputs, tiny_model
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.lmbr import EOS, INF, NBest
from strategies import MAX_EXAMPLES, SETTINGS
from torch import Tensor
from transformers import LogitsProcessorList

from tensortext.decode import BeamOutput, beam_search, translate
from tensortext.decode.hf import beam_search_hf
from tensortext.lmbr import (
    Evidence,
    LMBRBias,
    LMBRLogitsProcessor,
    NgramPosteriors,
    lmbr_bias_factory,
    lmbr_theta,
    ngram_posteriors,
)

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))


# --------------------------------------------------------------------------------------------
# beam_search with the bias
# --------------------------------------------------------------------------------------------


def search(tables: Tensor, starts: list[int], num_beams: int, **kwargs: Any) -> BeamOutput:
    """``beam_search`` with the table model of ``test_beam`` (``tables [S, V, V]``)."""
    B = len(starts)
    return beam_search(
        table_step(tables),
        torch.arange(B).repeat_interleave(num_beams),
        batch_size=B,
        num_beams=num_beams,
        eos_id=EOS,
        start_ids=torch.tensor(starts),
        **kwargs,
    )


def model_evidence(tables: Tensor, starts: list[int], count: int, max_len: int):
    """The ``count`` best hypotheses of each sentence's table model (exhaustive search), without
    EOS, scored by their log-probabilities: evidence the model itself finds plausible."""
    per_sentence = [
        exhaustive(tables[s], start, max_len, 0.0, with_cut_off=False)[:count]
        for s, start in enumerate(starts)
    ]
    width = max(len(seq) for found in per_sentence for _, seq in found)
    ids = torch.zeros((len(starts), count, width), dtype=torch.int64)
    lens = torch.zeros((len(starts), count), dtype=torch.int64)
    scores = torch.full((len(starts), count), -INF, dtype=torch.float64)
    for s, found in enumerate(per_sentence):
        for m, (score, seq) in enumerate(found):
            ids[s, m, : len(seq) - 1] = torch.tensor(seq[:-1])
            lens[s, m] = len(seq) - 1
            scores[s, m] = score
    return ids, lens, scores


@pytest.mark.parametrize("bos", [None, 1, 13], ids=["no-boundaries", "bos-in-vocab", "bos-oov"])
@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_beam_search_with_weight_zero_is_plain_search(finished, bos):
    vocab, K = 10, 3
    tables = torch.stack([sparse_table(40 + s, vocab, successors=4) for s in range(3)])
    starts = [1, 2, 3]
    ids, lens, scores = model_evidence(tables, starts, 4, 5)
    post = ngram_posteriors(ids, lens, scores, bos_id=bos, eos_id=None if bos is None else EOS)
    options = dict(
        max_new_tokens=6, finished=finished, num_return_sequences=K, output_token_scores=True
    )

    def bias(weight: float) -> LMBRBias:
        theta = lmbr_theta(0.1, 0.5, T=1.0)
        return LMBRBias(post, theta, vocab_size=vocab, eos_id=EOS, weight=weight)

    plain = search(tables, starts, K, **options)
    zero = search(tables, starts, K, score_bias=bias(0.0), **options)
    for field in ("sequences", "lengths", "scores", "token_scores"):
        assert torch.equal(getattr(plain, field), getattr(zero, field)), field
    # The same posteriors with weight 1 do change the search: the comparison is not vacuous.
    assert not torch.equal(
        plain.scores, search(tables, starts, K, score_bias=bias(1.0), **options).scores
    )


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_strong_posteriors_flip_the_search_to_the_evidence(seed, finished):
    # One evidence hypothesis, a valid path of the model that ranks 4th or lower by the model
    # alone: all its n-grams get posterior 1, and with theta_n >> |theta_0| its gain beats
    # every other hypothesis of at most its length, so the search must return exactly it.
    vocab, K, T = 10, 3, 6
    table = sparse_table(seed, vocab, successors=3)
    plain = search(table[None], [1], K, max_new_tokens=T, finished=finished)
    top = hypotheses(plain, 0)[0]
    ranked = [seq for _, seq in exhaustive(table, 1, T, 1.0, with_cut_off=False)]
    target = next(seq for seq in ranked[K:] if seq != top and len(seq) >= 3)
    post = ngram_posteriors(
        torch.tensor([[target[:-1]]]),
        torch.tensor([[len(target) - 1]]),
        torch.zeros(1, 1),
        bos_id=vocab,
        eos_id=EOS,
    )
    bias = LMBRBias(post, lmbr_theta(0.1, 0.5, T=1.0), vocab_size=vocab, eos_id=EOS, weight=2.0)
    flipped = search(table[None], [1], K, max_new_tokens=T, finished=finished, score_bias=bias)
    assert top != target
    assert hypotheses(flipped, 0)[0] == target


@FEWER
@given(
    seed=st.integers(0, 2**31 - 1),
    num_beams=st.integers(1, 4),
    finished=st.sampled_from(["refill", "mask"]),
    bos=st.sampled_from([None, 1]),
    max_ngram_order=st.integers(1, 4),
    order=st.permutations(range(4)),
)
def test_beam_search_with_lmbr_is_batch_invariant(
    seed, num_beams, finished, bos, max_ngram_order, order
):
    vocab = 9
    tables = torch.stack([sparse_table(seed + s, vocab, successors=5) for s in range(4)])
    starts = [1, 2, 3, 4]
    rng = random.Random(seed)
    evidence = NBest(
        hyps=[
            [[rng.randrange(1, vocab) for _ in range(rng.randint(0, 6))] for _ in range(3)]
            for _ in range(4)
        ],
        scores=[[rng.uniform(-3, 0) for _ in range(3)] for _ in range(4)],
        alphabet=list(range(1, vocab)),
    )

    def run(sentences: Sequence[int]) -> BeamOutput:
        ids, lens, scores = evidence.tensors(rows=sentences)
        post = ngram_posteriors(
            ids,
            lens,
            scores,
            max_ngram_order=max_ngram_order,
            bos_id=bos,
            eos_id=None if bos is None else EOS,
        )
        theta = lmbr_theta(0.5, 0.6, T=1.0, max_ngram_order=max_ngram_order)
        bias = LMBRBias(post, theta, vocab_size=vocab, eos_id=EOS, weight=2.0)
        return search(
            tables[list(sentences)],
            [starts[s] for s in sentences],
            num_beams,
            max_new_tokens=7,
            finished=finished,
            num_return_sequences=num_beams,
            score_bias=bias,
        )

    together = run(range(4))
    shuffled = run(order)
    for s in range(4):
        alone = run([s])
        p = list(order).index(s)
        assert hypotheses(together, s) == hypotheses(alone, 0) == hypotheses(shuffled, p)
        assert torch.equal(together.scores[s], alone.scores[0])
        assert torch.equal(together.scores[s], shuffled.scores[p])


# --------------------------------------------------------------------------------------------
# transformers parity
# --------------------------------------------------------------------------------------------


@pytest.fixture
def one_thread():
    """Tiny models: intra-op threads only add overhead (as in test_hf)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("one_thread")
@pytest.mark.parametrize(("name", "bos"), [("marian", VOCAB), ("llama", 1)])
def test_generate_with_lmbr_matches_transformers(name, bos):
    model = tiny_model(name)
    B, K, max_new = 4, 3, 10
    input_ids, mask = make_inputs(model, B, seed=5, padded=True)
    eos = model.generation_config.eos_token_id
    # Evidence the model tends to produce: its own lower-ranked beams (EOS dropped).
    plain = beam_search_hf(
        model, input_ids, mask, num_beams=K, max_new_tokens=max_new, num_return_sequences=K
    )
    ids, lengths = plain.sequences[:, 1:], plain.lengths[:, 1:]
    last = ids.gather(2, (lengths - 1).clamp(min=0)[..., None])[..., 0]
    lens = lengths - (last == eos).long()
    post = ngram_posteriors(ids, lens, plain.scores[:, 1:].double(), bos_id=bos, eos_id=eos)
    prompt_len = 1 if model.config.is_encoder_decoder else input_ids.shape[1]
    bias = LMBRBias(
        post, lmbr_theta(0.1, 0.5, T=1.0), vocab_size=VOCAB, eos_id=eos, prompt_len=prompt_len
    )
    options = {"num_beams": K, "max_new_tokens": max_new, "num_return_sequences": 2}
    ours = beam_search_hf(
        model, input_ids, mask, score_bias=bias, output_token_scores=True, **options
    )
    processors = LogitsProcessorList([LMBRLogitsProcessor(bias)])
    expected = hf_generate(model, input_ids, mask, logits_processor=processors, **options)
    assert_same_beams(ours, expected, f"{name} with LMBR")
    changed = [hypotheses(ours, b)[0] != hypotheses(plain, b)[0] for b in range(B)]
    assert any(changed), "the LMBR bias changed no sentence: the parity is vacuous"


def test_logits_processor_adds_the_bias_in_the_scores_dtype():
    post = NgramPosteriors.from_ngrams([{(3,): 0.5, (3, 4): 0.25}, {(5,): 1.0}])
    bias = LMBRBias(post, [-0.1, 0.3, 0.7], vocab_size=6, eos_id=0)
    tokens = torch.tensor([[1, 3], [1, 4], [1, 5], [1, 3]])
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        scores = torch.randn(4, 6).to(dtype)
        out = LMBRLogitsProcessor(bias)(tokens, scores)
        assert out.dtype == dtype
        assert torch.equal(out, scores + bias(tokens).to(dtype))


# --------------------------------------------------------------------------------------------
# translate with lmbr_bias_factory
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled() -> Any:
    from tensortext.models.bundled import load_bundled_translator

    return load_bundled_translator()


@pytest.mark.usefixtures("one_thread")
def test_translate_with_the_factory_does_not_depend_on_batching(bundled):
    # The demo's setting on 24 test sentences: evidence = the weaker system's 4-best lists.
    from importlib import resources

    from tensortext.models.bundled import load_bundled_translator

    text = resources.files("tensortext").joinpath("data/demo/translate.src").read_text("utf-8")
    src = bundled.tokenize_source(text.splitlines()[:24])
    weaker = load_bundled_translator(evidence_model=True)
    nbest = translate(weaker, src.ids, src.lengths, num_beams=4, num_return_sequences=4)
    factory = lmbr_bias_factory(
        Evidence.from_beam_output(nbest),
        lmbr_theta(0.741, 0.62),
        vocab_size=bundled.vocab_size,
        eos_id=bundled.eos_id,
        weight=3.0,
        end_id=bundled.eos_id,
    )
    one_batch = translate(
        bundled, src.ids, src.lengths, num_beams=4, max_sentences=24, score_bias=factory
    )
    batches = translate(
        bundled, src.ids, src.lengths, num_beams=4, max_sentences=5, score_bias=factory
    )
    alone = translate(
        bundled,
        src.ids,
        src.lengths,
        num_beams=4,
        max_sentences=1,
        sort_by_length=False,
        score_bias=factory,
    )
    for other in (batches, alone):
        assert torch.equal(other.sequences, one_batch.sequences)
        assert torch.equal(other.lengths, one_batch.lengths)
        torch.testing.assert_close(other.scores, one_batch.scores, rtol=1e-5, atol=1e-5)
    plain = translate(bundled, src.ids, src.lengths, num_beams=4)
    assert not torch.equal(plain.scores, one_batch.scores), "the bias changed nothing"
