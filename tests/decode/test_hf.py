"""``tensortext.decode.hf.generate`` against ``transformers``' own beam search.

The reference is ``model.generate(num_beams=K, do_sample=False, ...)`` on tiny random-weight models
built from configs (no downloads) of both families the adapter serves: encoder-decoder (Marian,
BART, T5) and decoder-only (GPT-2, Llama).  Random models are nearly uniform and almost never emit
EOS, which would leave the finished-hypothesis pool and the stopping rules unchecked, so a forward
hook on each output embedding reshapes the logits (:func:`_peaky_logits`): the distribution becomes
peaky and EOS gets a context-dependent logit, and hypotheses end at many different steps
(:func:`test_hypotheses_end_at_many_lengths` keeps that true).

HF's ``sequences`` are the decoder start token (or the prompt) followed by the generated tokens,
filled after each hypothesis; ours are the generated tokens only, padded after ``lengths``.  The
hypotheses (HF's cut after the first EOS), their lengths, the output width and the scores must
agree; the padding itself is checked against BeamOutput's contract (``pad_token_id``) because HF
fills with EOS when ``pad_token_id`` is 0.
"""

from __future__ import annotations

import copy
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch
import transformers
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import MAX_EXAMPLES, SETTINGS
from torch import Tensor
from transformers import (
    LogitsProcessor,
    LogitsProcessorList,
    NoRepeatNGramLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
)

from tensortext.decode.beam import BeamOutput
from tensortext.decode.hf import generate

VOCAB = 64
ENCODER_DECODER = ("marian", "bart", "t5")
DECODER_ONLY = ("gpt2", "llama")
MODELS = ENCODER_DECODER + DECODER_ONLY
# Both sides add the same float32 log-probs in the same order; the logits differ only in their
# last bits because our prefill runs on B rows and HF's on B*K (another matmul shape): measured
# <= 2.4e-7.  1e-5 absolute is the issue's bound, plus float32's own relative resolution: with
# length_penalty=-1 a score is a sum times the length and can reach ~1e3, where adjacent float32
# values are 6e-5 apart.  A different token changes a score by far more.
SCORE_ATOL = 1e-5
SCORE_RTOL = 1.3e-6

# Unsupported generation_config settings, each with a value that changes beam search.
UNSUPPORTED_SETTINGS = {
    "repetition_penalty": 1.3,
    "encoder_repetition_penalty": 1.3,
    "no_repeat_ngram_size": 2,
    "encoder_no_repeat_ngram_size": 2,
    "diversity_penalty": 0.5,
    "sequence_bias": {(5,): -2.0},
    "force_words_ids": [[5]],
    "exponential_decay_length_penalty": (2, 1.5),
    "renormalize_logits": True,
}


# --------------------------------------------------------------------------------------------
# Tiny models
# --------------------------------------------------------------------------------------------

# (logit scale, EOS offset) per model: how peaky, and how far below the best token EOS sits on
# average.  Tuned so that about a third of the hypotheses (K=4, R=4, max_new_tokens=15) end early.
_PEAKINESS = {
    "marian": (3.0, 0.25),
    "bart": (3.0, 1.0),
    "t5": (3.0, 0.5),
    "gpt2": (3.0, 0.0),
    "llama": (3.0, 1.0),
}
# The token whose (standardized) logit moves EOS up and down.
_EOS_DRIVER = VOCAB // 2 + 1


def _config(name: str) -> Any:
    # Weights drawn with std 0.3 instead of 0.02: with the usual small init the source barely
    # reaches the output and every sentence decodes to the same hypotheses.
    std = 0.3
    small = {"vocab_size": VOCAB, "max_position_embeddings": 64}
    seq2seq = {
        "d_model": 16,
        "encoder_layers": 2,
        "decoder_layers": 2,
        "encoder_attention_heads": 2,
        "decoder_attention_heads": 2,
        "encoder_ffn_dim": 32,
        "decoder_ffn_dim": 32,
        "init_std": std,
    }
    if name == "marian":
        # Marian's config turns on forced_eos_token_id (the last step must be EOS).
        return transformers.MarianConfig(
            **small, **seq2seq, pad_token_id=VOCAB - 1, eos_token_id=0,
            decoder_start_token_id=VOCAB - 1,
        )  # fmt: skip
    if name == "bart":
        # BART: bos 0, pad 1, eos 2 = decoder start, forced_eos_token_id 2.
        return transformers.BartConfig(**small, **seq2seq)
    if name == "t5":
        # T5: pad 0 = decoder start, eos 1; relative attention bias, no position embeddings.
        # Its default init already has unit-variance embeddings; scaling it up saturates the
        # attention until the decoder sees only the last token, and then permutations of one
        # hypothesis tie to the last bit and their order is arbitrary.
        return transformers.T5Config(
            vocab_size=VOCAB, d_model=16, d_kv=8, d_ff=32, num_layers=2, num_heads=2,
            decoder_start_token_id=0,
        )  # fmt: skip
    if name == "gpt2":
        # GPT-2 style: one ID is BOS, EOS and pad.
        return transformers.GPT2Config(
            vocab_size=VOCAB, n_embd=16, n_layer=2, n_head=2, n_positions=64,
            bos_token_id=0, eos_token_id=0, pad_token_id=0, initializer_range=std,
        )  # fmt: skip
    if name == "llama":
        # Llama style: RoPE, grouped-query attention, bos 1, eos 2, a pad ID that is neither.
        return transformers.LlamaConfig(
            **small, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=2, num_key_value_heads=1, pad_token_id=0, initializer_range=std,
        )  # fmt: skip
    raise ValueError(f"unknown model {name!r}")


_MODEL_CLASSES = {
    "marian": "MarianMTModel",
    "bart": "BartForConditionalGeneration",
    "t5": "T5ForConditionalGeneration",
    "gpt2": "GPT2LMHeadModel",
    "llama": "LlamaForCausalLM",
}


def _peaky_logits(scale: float, eos_offset: float, eos_id: int) -> Callable[..., Tensor]:
    def hook(module: torch.nn.Module, inputs: Any, logits: Tensor) -> Tensor:
        # Standardize each row so every architecture gets the same shape of distribution, then
        # put EOS at the best logit minus eos_offset, moved by another token's standardized logit:
        # EOS wins in some contexts and not in others.
        z = (logits - logits.mean(-1, keepdim=True)) / logits.std(-1, keepdim=True)
        eos_logit = z.max(-1).values * scale + z[..., _EOS_DRIVER] - eos_offset
        return (z * scale).index_copy(-1, torch.tensor([eos_id]), eos_logit.unsqueeze(-1))

    return hook


@functools.cache
def tiny_model(name: str) -> Any:
    """A random-weight model in eval mode, built once per test session (do not mutate it; see
    :func:`set_generation_config`)."""
    torch.manual_seed(sum(map(ord, name)))
    model = getattr(transformers, _MODEL_CLASSES[name])(_config(name)).eval()
    scale, eos_offset = _PEAKINESS[name]
    eos_id = model.generation_config.eos_token_id
    model.get_output_embeddings().register_forward_hook(_peaky_logits(scale, eos_offset, eos_id))
    return model


def set_generation_config(model: Any, monkeypatch: pytest.MonkeyPatch, **fields: Any) -> None:
    """Give ``model`` a copy of its generation_config with ``fields`` set, for this test only."""
    config = copy.deepcopy(model.generation_config)
    for key, value in fields.items():
        setattr(config, key, value)
    monkeypatch.setattr(model, "generation_config", config)


def make_inputs(model: Any, batch_size: int, seed: int, *, padded: bool) -> tuple[Tensor, Tensor]:
    """``[B, S]`` random tokens and mask; ``padded`` rows have 1..S real tokens, on the right
    for encoder-decoder sources and on the left for decoder-only prompts (as generate wants)."""
    rng = random.Random(seed)
    width = rng.randint(3, 9)
    # Avoid the special IDs (all < 3, or VOCAB - 1) so that prompts are ordinary text.
    input_ids = torch.tensor(
        [[rng.randrange(3, VOCAB - 1) for _ in range(width)] for _ in range(batch_size)]
    )
    mask = torch.ones_like(input_ids)
    if padded:
        left = not model.config.is_encoder_decoder
        pad_id = model.generation_config.pad_token_id
        for row in range(batch_size):
            pads = rng.randint(0, width - 1)
            if pads:
                span = slice(0, pads) if left else slice(width - pads, width)
                mask[row, span] = 0
                input_ids[row, span] = pad_id
    return input_ids, mask


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """The models are tiny: intra-op threads only add overhead, and stall badly when other
    processes share the CPU.  Both implementations run under the same setting."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------------
# Reference and comparison
# --------------------------------------------------------------------------------------------


@dataclass
class Beams:
    """HF's result in our layout."""

    sequences: Tensor  # [B, R, T] generated tokens, then HF's fill
    lengths: Tensor  # [B, R] generated tokens up to and including the first EOS
    scores: Tensor  # [B, R] sequences_scores
    token_scores: Tensor  # [B, R, T] compute_transition_scores (0 after lengths)
    pad_id: int  # what BeamOutput pads with: pad_token_id, or the first EOS if there is none


def hf_generate(
    model: Any,
    input_ids: Tensor,
    attention_mask: Tensor,
    *,
    num_beams: int,
    max_new_tokens: int,
    num_return_sequences: int = 1,
    **options: Any,
) -> Beams:
    """``model.generate`` beam search (``options``: min_new_tokens, length_penalty,
    early_stopping, logits_processor; left out = the generation_config's value)."""
    B, R = input_ids.shape[0], num_return_sequences
    out = model.generate(
        input_ids,
        attention_mask=attention_mask,
        num_beams=num_beams,
        do_sample=False,
        max_new_tokens=max_new_tokens,
        num_return_sequences=R,
        return_dict_in_generate=True,
        output_scores=True,
        **options,
    )
    prompt_len = 1 if model.config.is_encoder_decoder else input_ids.shape[1]
    sequences = out.sequences[:, prompt_len:].reshape(B, R, -1)
    eos_ids = torch.tensor(model.generation_config.eos_token_id).reshape(-1)
    pad_id = model.generation_config.pad_token_id
    is_eos = torch.isin(sequences, eos_ids)
    # Up to the first EOS; a hypothesis without one ran to max_new_tokens.
    first_eos = is_eos.to(torch.int64).argmax(-1) + 1
    lengths = torch.where(is_eos.any(-1), first_eos, torch.full_like(first_eos, max_new_tokens))
    token_scores = model.compute_transition_scores(
        out.sequences, out.scores, out.beam_indices, normalize_logits=False
    ).reshape(B, R, -1)
    beyond = torch.arange(sequences.shape[-1]) >= lengths[:, :, None]
    return Beams(
        sequences=sequences,
        lengths=lengths,
        scores=out.sequences_scores.reshape(B, R),
        token_scores=token_scores[:, :, : sequences.shape[-1]].masked_fill(beyond, 0.0),
        pad_id=int(eos_ids[0]) if pad_id is None else int(pad_id),
    )


def assert_same_beams(ours: BeamOutput, expected: Beams, context: str = "") -> None:
    """Exact tokens and lengths, close scores; on failure, the first differing hypothesis."""
    B, R = expected.lengths.shape
    assert ours.lengths.shape == (B, R), f"{context}: lengths shape {list(ours.lengths.shape)}"
    for b in range(B):
        for r in range(R):
            mine = ours.sequences[b, r, : ours.lengths[b, r]].tolist()
            theirs = expected.sequences[b, r, : expected.lengths[b, r]].tolist()
            score, hf_score = float(ours.scores[b, r]), float(expected.scores[b, r])
            if mine != theirs:
                pytest.fail(
                    f"{context}\nfirst differing hypothesis: sentence {b}, beam {r}\n"
                    f"  ours ({score:.6f}): {mine}\n  HF   ({hf_score:.6f}): {theirs}"
                )
    torch.testing.assert_close(
        ours.scores,
        expected.scores,
        atol=SCORE_ATOL,
        rtol=SCORE_RTOL,
        msg=lambda m: f"{context}\nscores: {m}",
    )
    # Same width; after each hypothesis, the model's pad ID.  (Not HF's fill: HF treats a
    # pad_token_id of 0 as unset and fills with EOS.)
    assert ours.sequences.shape == expected.sequences.shape, context
    beyond = torch.arange(ours.sequences.shape[-1]) >= ours.lengths[:, :, None]
    padding = ours.sequences[beyond]
    assert bool((padding == expected.pad_id).all()), f"{context}: padding {ours.sequences}"
    if ours.token_scores is not None:
        torch.testing.assert_close(
            ours.token_scores,
            expected.token_scores,
            atol=SCORE_ATOL,
            rtol=SCORE_RTOL,
            msg=lambda m: f"{context}\ntoken_scores: {m}",
        )


def check_parity(
    name: str,
    *,
    batch_size: int,
    seed: int,
    padded: bool,
    num_beams: int,
    max_new_tokens: int,
    num_return_sequences: int = 1,
    **options: Any,
) -> BeamOutput:
    """Run both on the same inputs and settings and compare; return ours."""
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, batch_size, seed, padded=padded)
    settings_ = {
        "num_beams": num_beams,
        "max_new_tokens": max_new_tokens,
        "num_return_sequences": num_return_sequences,
        **options,
    }
    expected = hf_generate(model, input_ids, mask, **settings_)
    ours = generate(model, input_ids, mask, output_token_scores=True, **settings_)
    context = f"{name} B={batch_size} seed={seed} padded={padded} {settings_}"
    assert_same_beams(ours, expected, context)
    return ours


# --------------------------------------------------------------------------------------------
# Parity
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_hypotheses_end_at_many_lengths(name):
    """The parity tests below are only as good as the models: most hypotheses must end with EOS
    at varied steps before max_new_tokens, and different sources must decode differently."""
    ours = check_parity(
        name, batch_size=6, seed=1, padded=False, num_beams=4, num_return_sequences=4,
        max_new_tokens=15, length_penalty=1.0, early_stopping=False,
    )  # fmt: skip
    eos = torch.tensor(tiny_model(name).generation_config.eos_token_id).reshape(-1)
    last = ours.sequences.gather(2, (ours.lengths - 1)[:, :, None])[:, :, 0]
    ended_early = torch.isin(last, eos) & (ours.lengths < 15)
    assert ended_early.float().mean() >= 0.2, ours.lengths.tolist()
    assert len(set(ours.lengths[ended_early].tolist())) >= 3, ours.lengths.tolist()
    assert len({tuple(row) for row in ours.sequences[:, 0].tolist()}) >= 3


# (model, B, K, R, length_penalty, early_stopping, min_new_tokens, max_new_tokens, padded)
PARITY_CASES = [
    ("marian", 5, 4, 1, 1.0, False, 0, 12, False),
    ("marian", 3, 3, 2, 0.5, True, 0, 10, True),
    ("marian", 6, 5, 3, 2.0, "never", 2, 9, True),
    ("marian", 2, 2, 1, 1.0, False, 0, 1, False),
    ("bart", 4, 2, 2, -1.0, False, 0, 15, True),
    ("bart", 2, 6, 6, 1.0, True, 0, 6, False),
    ("bart", 1, 3, 1, 0.0, "never", 3, 8, False),
    ("t5", 5, 4, 4, 0.0, False, 1, 15, True),
    ("t5", 1, 2, 2, 1.0, False, 0, 1, False),
    ("t5", 3, 6, 2, 2.0, True, 0, 7, False),
    ("t5", 4, 5, 5, -1.0, "never", 1, 12, True),
    ("gpt2", 5, 4, 2, 1.0, False, 0, 12, True),
    ("gpt2", 2, 3, 3, -1.0, "never", 1, 10, True),
    ("gpt2", 6, 2, 1, 0.5, True, 0, 1, True),
    ("gpt2", 3, 6, 4, 0.0, False, 3, 14, False),
    ("llama", 4, 5, 5, 1.0, "never", 0, 14, True),
    ("llama", 3, 4, 1, 2.0, False, 3, 11, True),
    ("llama", 1, 6, 3, 0.0, True, 2, 5, False),
    ("llama", 6, 2, 2, 0.5, False, 1, 1, True),
]


@pytest.mark.parametrize(
    ("name", "B", "K", "R", "lp", "es", "min_new", "max_new", "padded"),
    PARITY_CASES,
    ids=[
        f"{c[0]}-B{c[1]}-K{c[2]}-R{c[3]}-lp{c[4]}-es{c[5]}-min{c[6]}-max{c[7]}"
        + ("-padded" if c[8] else "")
        for c in PARITY_CASES
    ],
)
def test_matches_transformers_generate(name, B, K, R, lp, es, min_new, max_new, padded):
    check_parity(
        name, batch_size=B, seed=B * 100 + K, padded=padded, num_beams=K, num_return_sequences=R,
        max_new_tokens=max_new, min_new_tokens=min_new, length_penalty=lp, early_stopping=es,
    )  # fmt: skip


@st.composite
def beam_settings(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from(MODELS))
    num_beams = draw(st.integers(2, 6))
    max_new_tokens = draw(st.integers(1, 15))
    num_return_sequences = draw(st.integers(1, num_beams))
    if max_new_tokens == 1 and tiny_model(name).generation_config.forced_eos_token_id is not None:
        # Forced EOS at the only step leaves one hypothesis with a finite score; HF fills the
        # other slots with copies of never-live beams scored -1e9, we with empty (-inf) slots.
        num_return_sequences = 1
    return {
        "name": name,
        "batch_size": draw(st.integers(1, 6)),
        "seed": draw(st.integers(0, 2**32 - 1)),
        "padded": draw(st.booleans()),
        "num_beams": num_beams,
        "num_return_sequences": num_return_sequences,
        "max_new_tokens": max_new_tokens,
        "min_new_tokens": draw(st.integers(0, min(3, max_new_tokens))),
        "length_penalty": draw(st.sampled_from([1.0, 0.0, 0.5, 2.0, -1.0])),
        "early_stopping": draw(st.sampled_from([False, True, "never"])),
    }


@settings(SETTINGS, max_examples=max(1, MAX_EXAMPLES // 3))
@given(beam_settings())
def test_matches_transformers_generate_property(case):
    check_parity(**case)


# --------------------------------------------------------------------------------------------
# Model generation_config settings
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "usual"),
    [("length_penalty", -1.0, 1.0), ("early_stopping", True, False), ("min_new_tokens", 4, 0)],
)
def test_generation_config_defaults_apply(field, value, usual, monkeypatch):
    """An option left out comes from the generation_config, as in generate."""
    model = tiny_model("llama")
    input_ids, mask = make_inputs(model, 6, seed=7, padded=True)
    options = {"num_beams": 4, "num_return_sequences": 4, "max_new_tokens": 12}
    set_generation_config(model, monkeypatch, **{field: value})
    ours = generate(model, input_ids, mask, **options)
    assert_same_beams(ours, hf_generate(model, input_ids, mask, **options), f"{field}={value}")
    usual_result = generate(model, input_ids, mask, **options, **{field: usual})
    assert not torch.equal(ours.sequences, usual_result.sequences), "the setting changed nothing"


def _most_generated(out: BeamOutput, count: int) -> list[int]:
    """The ``count`` tokens ``out`` generated most, not counting each hypothesis's last one."""
    inside = torch.arange(out.sequences.shape[-1]) < out.lengths[:, :, None] - 1
    return torch.bincount(out.sequences[inside], minlength=VOCAB).topk(count).indices.tolist()


@pytest.mark.parametrize(
    ("name", "field"),
    [
        ("llama", "eos_token_id"),  # several EOS IDs
        ("marian", "eos_token_id"),
        ("llama", "min_length"),  # counts the prompt
        ("bart", "min_length"),  # counts the decoder start token
        ("llama", "begin_suppress_tokens"),
        ("t5", "begin_suppress_tokens"),
        ("llama", "bad_words_ids"),  # single-token bad words
        ("bart", "suppress_tokens"),
    ],
)
def test_generation_config_settings(name, field, monkeypatch):
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 4, seed=29, padded=True)
    options = {"num_beams": 3, "num_return_sequences": 2, "max_new_tokens": 10}
    before = generate(model, input_ids, mask, **options)
    # Values chosen from the unconstrained result, so that the setting changes it.
    eos = model.generation_config.eos_token_id
    common = _most_generated(before, 2)
    value = {
        "eos_token_id": [eos, *common],
        "min_length": (1 if model.config.is_encoder_decoder else input_ids.shape[1]) + 6,
        "begin_suppress_tokens": before.sequences[:, :, 0].unique().tolist(),
        "bad_words_ids": [[token] for token in common],
        "suppress_tokens": common,
    }[field]
    set_generation_config(model, monkeypatch, **{field: value})
    ours = generate(model, input_ids, mask, **options)
    assert_same_beams(ours, hf_generate(model, input_ids, mask, **options), f"{field}={value}")
    assert not torch.equal(ours.sequences, before.sequences), "the setting changed nothing"


def test_forced_bos_token(monkeypatch):
    """BART-large / mBART force a language or BOS token as the first generated token."""
    model = tiny_model("bart")
    set_generation_config(model, monkeypatch, forced_bos_token_id=0)
    input_ids, mask = make_inputs(model, 4, seed=3, padded=True)
    options = {"num_beams": 3, "num_return_sequences": 3, "max_new_tokens": 8}
    ours = generate(model, input_ids, mask, **options)
    assert_same_beams(ours, hf_generate(model, input_ids, mask, **options))
    assert bool((ours.sequences[:, :, 0] == 0).all())


def test_bad_words_equal_to_eos_are_ignored_as_in_generate(monkeypatch):
    model = tiny_model("llama")
    set_generation_config(
        model, monkeypatch, bad_words_ids=[[model.generation_config.eos_token_id]]
    )
    input_ids, mask = make_inputs(model, 3, seed=5, padded=False)
    options = {"num_beams": 2, "max_new_tokens": 6}
    expected = hf_generate(model, input_ids, mask, **options)
    assert bool((expected.lengths < 6).any())  # generate did end a hypothesis with EOS
    assert_same_beams(generate(model, input_ids, mask, **options), expected)


def test_begin_suppress_tokens_after_a_forced_bos(monkeypatch):
    model = tiny_model("bart")
    set_generation_config(
        model, monkeypatch, forced_bos_token_id=0, begin_suppress_tokens=list(range(3, VOCAB))
    )
    input_ids, mask = make_inputs(model, 3, seed=5, padded=False)
    options = {"num_beams": 2, "max_new_tokens": 5}
    assert_same_beams(
        generate(model, input_ids, mask, **options), hf_generate(model, input_ids, mask, **options)
    )


@pytest.mark.parametrize("field", sorted(UNSUPPORTED_SETTINGS))
def test_unsupported_generation_config_setting_is_refused(field, monkeypatch):
    model = tiny_model("marian")
    set_generation_config(model, monkeypatch, **{field: UNSUPPORTED_SETTINGS[field]})
    input_ids, mask = make_inputs(model, 2, seed=0, padded=False)
    with pytest.raises(ValueError, match=field):
        generate(model, input_ids, mask, num_beams=2, max_new_tokens=3)


def test_multi_token_bad_words_are_refused(monkeypatch):
    model = tiny_model("gpt2")
    set_generation_config(model, monkeypatch, bad_words_ids=[[5], [6, 7]])
    input_ids, mask = make_inputs(model, 2, seed=0, padded=False)
    with pytest.raises(ValueError, match="bad_words_ids"):
        generate(model, input_ids, mask, num_beams=2, max_new_tokens=3)


# --------------------------------------------------------------------------------------------
# logits_processor and score_bias
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "processor",
    [NoRepeatNGramLogitsProcessor(2), RepetitionPenaltyLogitsProcessor(1.3)],
    ids=["no_repeat_ngram", "repetition_penalty"],
)
@pytest.mark.parametrize("name", ["marian", "gpt2"])
def test_logits_processor_is_passed_through(name, processor):
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 4, seed=13, padded=True)
    options = {"num_beams": 4, "num_return_sequences": 2, "max_new_tokens": 12}
    processors = LogitsProcessorList([processor])
    ours = generate(model, input_ids, mask, logits_processor=processors, **options)
    expected = hf_generate(model, input_ids, mask, logits_processor=processors, **options)
    assert_same_beams(ours, expected, type(processor).__name__)
    # The processor must matter here, or this test checks nothing.
    assert not torch.equal(ours.sequences, generate(model, input_ids, mask, **options).sequences)


class _AddScores(LogitsProcessor):
    """HF's view of a score_bias: a processor that adds a fixed [B*K, V] tensor."""

    def __init__(self, bias: Tensor):
        self.bias = bias

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        return scores + self.bias


@pytest.mark.parametrize("name", ["t5", "llama"])
def test_score_bias_matches_an_additive_processor(name):
    model = tiny_model(name)
    B, K = 3, 4
    input_ids, mask = make_inputs(model, B, seed=17, padded=True)
    # Row r of the bias is beam slot r % K of sentence r // K in both implementations.
    bias = 2.0 * torch.randn(B * K, VOCAB, generator=torch.Generator().manual_seed(0))
    options = {"num_beams": K, "num_return_sequences": 2, "max_new_tokens": 10}
    ours = generate(model, input_ids, mask, score_bias=lambda tokens: bias, **options)
    expected = hf_generate(
        model, input_ids, mask, logits_processor=LogitsProcessorList([_AddScores(bias)]), **options
    )
    assert_same_beams(ours, expected, "score_bias")
    assert not torch.equal(ours.sequences, generate(model, input_ids, mask, **options).sequences)


# --------------------------------------------------------------------------------------------
# Batching and the work done
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_sentence_decodes_the_same_alone_and_in_a_batch(name):
    """Batch composition and order change nothing (no cross-sentence leak in masks, caches or
    beam bookkeeping)."""
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 5, seed=19, padded=True)
    options = {"num_beams": 3, "num_return_sequences": 3, "max_new_tokens": 10}
    batch = generate(model, input_ids, mask, **options)
    for row in range(input_ids.shape[0]):
        real = input_ids[row][mask[row].bool()][None]  # [1, S_row], no padding
        alone = generate(model, real, None, **options)
        T = int(alone.lengths.max())
        assert torch.equal(alone.lengths, batch.lengths[row : row + 1]), f"sentence {row}"
        assert torch.equal(alone.sequences, batch.sequences[row : row + 1, :, :T]), (
            f"sentence {row}: alone {alone.sequences.tolist()}, in the batch "
            f"{batch.sequences[row].tolist()}"
        )
        # Padding changes the matmul shapes, hence the last bits of the logits.
        torch.testing.assert_close(
            alone.scores, batch.scores[row : row + 1], atol=SCORE_ATOL, rtol=SCORE_RTOL
        )
    # Batch order: the reversed batch gives the reversed results.
    flipped = generate(model, input_ids.flip(0), mask.flip(0), **options)
    assert torch.equal(flipped.sequences, batch.sequences.flip(0))
    torch.testing.assert_close(
        flipped.scores, batch.scores.flip(0), atol=SCORE_ATOL, rtol=SCORE_RTOL
    )


@pytest.mark.parametrize("name", MODELS)
def test_encoder_and_prefill_run_once_per_sentence(name):
    """The encoder (or the prompt's prefill) and the first decoder step run on B rows, every
    later step on B*K rows with one new token."""
    model = tiny_model(name)
    B, K = 3, 4
    input_ids, mask = make_inputs(model, B, seed=23, padded=True)
    encoder_rows: list[int] = []
    decoder_inputs: list[list[int]] = []

    def on_encoder(module, args, kwargs, output):
        encoder_rows.append(output.last_hidden_state.shape[0])

    def on_model(module, args, kwargs):
        tokens = kwargs.get("decoder_input_ids", kwargs.get("input_ids"))
        decoder_inputs.append(list(tokens.shape))

    hooks = [model.register_forward_pre_hook(on_model, with_kwargs=True)]
    if model.config.is_encoder_decoder:
        hooks.append(model.get_encoder().register_forward_hook(on_encoder, with_kwargs=True))
    try:
        generate(model, input_ids, mask, num_beams=K, max_new_tokens=6)
    finally:
        for hook in hooks:
            hook.remove()
    assert encoder_rows == ([B] if model.config.is_encoder_decoder else [])
    first_len = 1 if model.config.is_encoder_decoder else input_ids.shape[1]
    assert decoder_inputs[0] == [B, first_len]
    assert all(shape == [B * K, 1] for shape in decoder_inputs[1:]), decoder_inputs
    assert len(decoder_inputs) <= 6


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------

_IDS = torch.tensor([[5, 6, 7], [8, 9, 10]])
BAD_INPUTS = {
    "int32 input_ids": ({"input_ids": _IDS.int()}, "input_ids"),
    "1-D input_ids": ({"input_ids": _IDS[0]}, "input_ids"),
    "empty input_ids": ({"input_ids": _IDS[:, :0]}, "input_ids"),
    "mask shape": ({"attention_mask": torch.ones(2, 4, dtype=torch.int64)}, "attention_mask"),
    "R > K": ({"num_return_sequences": 3}, "num_return_sequences"),
    "max_new_tokens=0": ({"max_new_tokens": 0}, "max_new_tokens"),
    "min > max": ({"min_new_tokens": 4}, "min_new_tokens"),
    "early_stopping": ({"early_stopping": "always"}, "early_stopping"),
    "length_penalty": ({"length_penalty": float("nan")}, "length_penalty"),
}


@pytest.mark.parametrize("name", ["marian", "gpt2"])
@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_names_the_argument(name, case):
    changes, argument = BAD_INPUTS[case]
    kwargs = {
        "input_ids": _IDS,
        "attention_mask": None,
        "num_beams": 2,
        "max_new_tokens": 3,
        **changes,
    }
    with pytest.raises(ValueError, match=argument):
        generate(tiny_model(name), **kwargs)
