"""``tensortext.decode.hf`` against ``transformers``' own beam search.

Two entry points, one reference (``model.generate``): :func:`beam_search_hf` (tensor-native,
returns ``BeamOutput``; compared hypothesis by hypothesis) and :func:`generate`, the drop-in
(compared output for output: the same ``sequences`` tensor, ``sequences_scores`` and per-step
``scores``). :class:`HFDecoder` under :func:`~tensortext.decode.translate` must decode as both.

The models are tiny random-weight ones built from configs (no downloads) of both families:
encoder-decoder (Marian, BART, T5) and decoder-only (GPT-2, Llama).  Random models are nearly
uniform and almost never emit EOS, which would leave the finished-hypothesis pool and the stopping
rules unchecked, so a forward hook on each output embedding reshapes the logits
(:func:`_peaky_logits`): the distribution becomes peaky and EOS gets a context-dependent logit,
and hypotheses end at many different steps (:func:`test_hypotheses_end_at_many_lengths` keeps
that true).

HF's ``sequences`` are the decoder start token (or the prompt) followed by the generated tokens,
filled after each hypothesis; ``BeamOutput``'s are the generated tokens only, padded after
``lengths``.  The hypotheses (HF's cut after the first EOS), their lengths, the output width and
the scores must agree; the padding itself is checked against ``beam_search_hf``'s contract
(``pad_token_id``) because HF fills with EOS when ``pad_token_id`` is 0.
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
from tensortext.decode.hf import HFDecoder, beam_search_hf, generate
from tensortext.padded import PAD_ID

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
STEP_SCORE_RTOL = 1e-4  # a step's processed logits (see assert_same_generate_output)

# generation_config settings of other decoding methods: refused (with the alternative named).
UNSUPPORTED_SETTINGS = {
    "diversity_penalty": 0.5,
    "force_words_ids": [[5]],
    "do_sample": True,
}
# Settings applied with transformers' own logits processors, each with a value that changes
# beam search (they were refused before the drop-in generate).
PROCESSOR_SETTINGS = {
    "repetition_penalty": 1.3,
    "encoder_repetition_penalty": 1.3,
    "no_repeat_ngram_size": 2,
    "encoder_no_repeat_ngram_size": 2,
    "sequence_bias": {(5,): -2.0},
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
    # Same width; after each hypothesis, PAD_ID: beam_search_hf returns a tensortext
    # BeamOutput and follows the package's padding convention (generate pads as HF does).
    assert ours.sequences.shape == expected.sequences.shape, context
    beyond = torch.arange(ours.sequences.shape[-1]) >= ours.lengths[:, :, None]
    padding = ours.sequences[beyond]
    assert bool((padding == PAD_ID).all()), f"{context}: padding {ours.sequences}"
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
    ours = beam_search_hf(model, input_ids, mask, output_token_scores=True, **settings_)
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
    ours = beam_search_hf(model, input_ids, mask, **options)
    assert_same_beams(ours, hf_generate(model, input_ids, mask, **options), f"{field}={value}")
    usual_result = beam_search_hf(model, input_ids, mask, **options, **{field: usual})
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
    before = beam_search_hf(model, input_ids, mask, **options)
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
    ours = beam_search_hf(model, input_ids, mask, **options)
    assert_same_beams(ours, hf_generate(model, input_ids, mask, **options), f"{field}={value}")
    assert not torch.equal(ours.sequences, before.sequences), "the setting changed nothing"


def test_forced_bos_token(monkeypatch):
    """BART-large / mBART force a language or BOS token as the first generated token."""
    model = tiny_model("bart")
    set_generation_config(model, monkeypatch, forced_bos_token_id=0)
    input_ids, mask = make_inputs(model, 4, seed=3, padded=True)
    options = {"num_beams": 3, "num_return_sequences": 3, "max_new_tokens": 8}
    ours = beam_search_hf(model, input_ids, mask, **options)
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
    assert_same_beams(beam_search_hf(model, input_ids, mask, **options), expected)


def test_begin_suppress_tokens_after_a_forced_bos(monkeypatch):
    model = tiny_model("bart")
    set_generation_config(
        model, monkeypatch, forced_bos_token_id=0, begin_suppress_tokens=list(range(3, VOCAB))
    )
    input_ids, mask = make_inputs(model, 3, seed=5, padded=False)
    options = {"num_beams": 2, "max_new_tokens": 5}
    assert_same_beams(
        beam_search_hf(model, input_ids, mask, **options),
        hf_generate(model, input_ids, mask, **options),
    )


@pytest.mark.parametrize("field", sorted(UNSUPPORTED_SETTINGS))
def test_unsupported_generation_config_setting_is_refused(field, monkeypatch):
    model = tiny_model("marian")
    set_generation_config(model, monkeypatch, **{field: UNSUPPORTED_SETTINGS[field]})
    input_ids, mask = make_inputs(model, 2, seed=0, padded=False)
    with pytest.raises(ValueError, match=field):
        beam_search_hf(model, input_ids, mask, num_beams=2, max_new_tokens=3)


@pytest.mark.parametrize("field", sorted(PROCESSOR_SETTINGS))
@pytest.mark.parametrize("name", ["marian", "gpt2"])
def test_processor_settings_of_the_generation_config_apply(name, field, monkeypatch):
    """Formerly refused settings now run through transformers' own processors, as in generate.
    (``sequence_bias`` and ``renormalize_logits`` may leave the result unchanged.)"""
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 4, seed=31, padded=True)
    options = {"num_beams": 3, "num_return_sequences": 2, "max_new_tokens": 10}
    set_generation_config(model, monkeypatch, **{field: PROCESSOR_SETTINGS[field]})
    ours = beam_search_hf(model, input_ids, mask, **options)
    assert_same_beams(ours, hf_generate(model, input_ids, mask, **options), field)


def test_multi_token_bad_words_apply(monkeypatch):
    model = tiny_model("gpt2")
    input_ids, mask = make_inputs(model, 3, seed=0, padded=True)
    options = {"num_beams": 3, "max_new_tokens": 8}
    before = beam_search_hf(model, input_ids, mask, **options)
    first_two = before.sequences[0, 0, :2].tolist()
    set_generation_config(model, monkeypatch, bad_words_ids=[[5], first_two])
    ours = beam_search_hf(model, input_ids, mask, **options)
    assert_same_beams(ours, hf_generate(model, input_ids, mask, **options), "bad_words_ids")
    assert not torch.equal(ours.sequences, before.sequences), "the setting changed nothing"


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
    ours = beam_search_hf(model, input_ids, mask, logits_processor=processors, **options)
    expected = hf_generate(model, input_ids, mask, logits_processor=processors, **options)
    assert_same_beams(ours, expected, type(processor).__name__)
    # The processor must matter here, or this test checks nothing.
    assert not torch.equal(
        ours.sequences, beam_search_hf(model, input_ids, mask, **options).sequences
    )


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
    ours = beam_search_hf(model, input_ids, mask, score_bias=lambda tokens: bias, **options)
    expected = hf_generate(
        model, input_ids, mask, logits_processor=LogitsProcessorList([_AddScores(bias)]), **options
    )
    assert_same_beams(ours, expected, "score_bias")
    assert not torch.equal(
        ours.sequences, beam_search_hf(model, input_ids, mask, **options).sequences
    )


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
    batch = beam_search_hf(model, input_ids, mask, **options)
    for row in range(input_ids.shape[0]):
        real = input_ids[row][mask[row].bool()][None]  # [1, S_row], no padding
        alone = beam_search_hf(model, real, None, **options)
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
    flipped = beam_search_hf(model, input_ids.flip(0), mask.flip(0), **options)
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
        beam_search_hf(model, input_ids, mask, num_beams=K, max_new_tokens=6)
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
    # The exception rule: TypeError for a wrong dtype (was ValueError), ValueError otherwise.
    error = TypeError if case == "int32 input_ids" else ValueError
    with pytest.raises(error, match=argument):
        beam_search_hf(tiny_model(name), **kwargs)


# --------------------------------------------------------------------------------------------
# generate: a drop-in for model.generate
# --------------------------------------------------------------------------------------------


def assert_same_generate_output(ours: Any, theirs: Any, context: str) -> None:
    """Identical sequences and ``beam_indices``; ``sequences_scores`` and every step's
    ``scores`` close."""
    if isinstance(theirs, Tensor):
        assert isinstance(ours, Tensor), f"{context}: got {type(ours).__name__}"
        assert torch.equal(ours, theirs), f"{context}\nours {ours.tolist()}\nHF   {theirs.tolist()}"
        return
    assert type(ours) is type(theirs), f"{context}: {type(ours).__name__}"
    assert torch.equal(ours.sequences, theirs.sequences), (
        f"{context}\nours {ours.sequences.tolist()}\nHF   {theirs.sequences.tolist()}"
    )
    for field in ("sequences_scores", "scores", "beam_indices"):
        mine, expected = getattr(ours, field, None), getattr(theirs, field, None)
        assert (mine is None) == (expected is None), f"{context}: {field} {mine} vs {expected}"
    if getattr(theirs, "beam_indices", None) is not None:
        assert_same_rows(ours.beam_indices, theirs.beam_indices, f"{context}\nbeam_indices")
    if theirs.scores is not None:
        assert len(ours.scores) == len(theirs.scores), f"{context}: steps"
        for step, (mine, expected) in enumerate(zip(ours.scores, theirs.scores, strict=True)):
            # A step's scores are processed logits (penalties applied), computed by two float32
            # paths (HF's uncached attention over the whole prefix, our cache) whose last bits
            # differ in proportion to the logits: a relative tolerance as well (a Llama with
            # repetition_penalty=1.3 once differed by 1.1e-5 at 0.31).
            torch.testing.assert_close(
                mine, expected, atol=SCORE_ATOL, rtol=STEP_SCORE_RTOL,
                msg=lambda m, step=step: f"{context}\nscores[{step}]: {m}",
            )  # fmt: skip
    if getattr(theirs, "sequences_scores", None) is not None:
        torch.testing.assert_close(
            ours.sequences_scores, theirs.sequences_scores, atol=SCORE_ATOL, rtol=SCORE_RTOL,
            msg=lambda m: f"{context}\nsequences_scores: {m}",
        )  # fmt: skip


def assert_same_rows(ours: Tensor, theirs: Tensor, context: str) -> None:
    """Equal dtype, shape and values; on failure, the first differing row."""
    assert ours.dtype == theirs.dtype, f"{context}: dtype {ours.dtype} vs {theirs.dtype}"
    assert ours.shape == theirs.shape, (
        f"{context}: shape {list(ours.shape)} vs {list(theirs.shape)}"
    )
    if not torch.equal(ours, theirs):
        row = int((ours != theirs).any(dim=-1).nonzero()[0, 0])
        pytest.fail(
            f"{context}: row {row}\n  ours {ours[row].tolist()}\n  HF   {theirs[row].tolist()}"
        )


def check_drop_in(name: str, *, batch_size: int = 4, seed: int = 37, **kwargs: Any) -> Any:
    """``generate(model, ...)`` against ``model.generate(...)`` on padded inputs (left-padded
    prompts for decoder-only models); returns HF's output."""
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, batch_size, seed, padded=True)
    theirs = model.generate(input_ids, attention_mask=mask, **kwargs)
    ours = generate(model, input_ids, mask, **kwargs)
    assert_same_generate_output(ours, theirs, f"{name} {kwargs}")
    return theirs


DROP_IN_CASES = {
    "beam": {"num_beams": 4, "max_new_tokens": 10},
    "greedy": {"num_beams": 1, "max_new_tokens": 10},
    "R2": {"num_beams": 4, "num_return_sequences": 2, "max_new_tokens": 12},
    "max_length": {"num_beams": 3, "max_length": 14},
    "default_length": {"num_beams": 2},
    "dict_scores": {
        "num_beams": 4, "num_return_sequences": 2, "max_new_tokens": 9,
        "return_dict_in_generate": True, "output_scores": True,
    },
    "dict_no_scores": {"num_beams": 3, "max_new_tokens": 6, "return_dict_in_generate": True},
    "greedy_dict_scores": {
        "num_beams": 1, "max_new_tokens": 8, "return_dict_in_generate": True, "output_scores": True,
    },
    "no_repeat_ngram": {"num_beams": 4, "max_new_tokens": 12, "no_repeat_ngram_size": 2},
    "repetition_penalty": {"num_beams": 4, "max_new_tokens": 12, "repetition_penalty": 1.3},
    "greedy_repetition_penalty": {"num_beams": 1, "max_new_tokens": 12, "repetition_penalty": 1.3},
    "min_new_tokens": {"num_beams": 3, "max_new_tokens": 10, "min_new_tokens": 4},
    "early_stopping_lp": {
        "num_beams": 3, "max_new_tokens": 10, "early_stopping": True, "length_penalty": 0.5,
    },
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(DROP_IN_CASES))
@pytest.mark.parametrize("name", MODELS)
def test_generate_is_a_drop_in(name, case):
    check_drop_in(name, **DROP_IN_CASES[case])


@pytest.mark.parametrize("name", MODELS)
def test_generate_takes_a_generation_config_with_overrides(name):
    """HF's precedence: keyword overrides > generation_config= > model.generation_config."""
    config = transformers.GenerationConfig(
        num_beams=3, max_new_tokens=7, length_penalty=0.5, num_return_sequences=3
    )
    check_drop_in(name, generation_config=config)
    check_drop_in(name, generation_config=config, num_return_sequences=2, max_new_tokens=9)


@pytest.mark.parametrize("name", MODELS)
def test_generate_multi_token_bad_words(name):
    """Bad words of two tokens, taken from the unconstrained result so that they matter."""
    options = {"num_beams": 3, "max_new_tokens": 10}
    before = check_drop_in(name, **options)
    prompt_len = 1 if tiny_model(name).config.is_encoder_decoder else None
    generated = before[:, prompt_len or before.shape[1] - 10 :]
    bad = [generated[0, :2].tolist(), generated[1, 1:3].tolist()]
    after = check_drop_in(name, bad_words_ids=bad, **options)
    assert not torch.equal(after, before), "the bad words changed nothing"


@pytest.mark.parametrize("name", ["bart", "llama"])
def test_generate_logits_processor_merges_as_generate(name):
    processors = LogitsProcessorList([NoRepeatNGramLogitsProcessor(3)])
    check_drop_in(name, num_beams=3, max_new_tokens=10, logits_processor=processors)
    # Same type as a configured processor: the caller's replaces it.
    check_drop_in(
        name, num_beams=3, max_new_tokens=10, no_repeat_ngram_size=2, logits_processor=processors
    )


@pytest.mark.parametrize("name", MODELS)
def test_generate_refuses_sampling_naming_model_generate(name):
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 2, seed=0, padded=True)
    with pytest.raises(ValueError, match=r"do_sample.*model\.generate"):
        generate(model, input_ids, mask, do_sample=True, num_beams=2)


def test_generate_refuses_unknown_keywords():
    model = tiny_model("t5")
    input_ids, mask = make_inputs(model, 2, seed=0, padded=True)
    with pytest.raises(TypeError, match="num_beam_s"):
        generate(model, input_ids, mask, num_beam_s=2)
    with pytest.raises(ValueError, match="max_length"):
        generate(model, input_ids, mask, num_beams=2, max_length=1)


# --------------------------------------------------------------------------------------------
# HFDecoder: the Decoder protocol, explicit state
# --------------------------------------------------------------------------------------------


def _right_padded(model: Any, input_ids: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """generate's inputs in the Decoder convention: real tokens first, -1 after ``lengths``."""
    lengths = mask.sum(1)
    order = torch.sort(mask, dim=1, descending=True, stable=True).indices  # real tokens first
    src_ids = input_ids.gather(1, order)
    src_ids[torch.arange(src_ids.shape[1]) >= lengths[:, None]] = -1
    return src_ids, lengths


@pytest.mark.parametrize("name", MODELS)
def test_translate_with_hf_decoder_equals_generate(name):
    from tensortext.decode import Decoder, translate

    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 5, seed=41, padded=True)
    options = {"num_beams": 3, "num_return_sequences": 2, "max_new_tokens": 9}
    expected = beam_search_hf(model, input_ids, mask, **options)
    assert_same_beams(expected, hf_generate(model, input_ids, mask, **options), name)
    decoder = HFDecoder(model, max_new_tokens=9)
    assert isinstance(decoder, Decoder)
    src_ids, lengths = _right_padded(model, input_ids, mask)
    ours = translate(decoder, src_ids, lengths, max_sentences=2, **options)
    for b in range(input_ids.shape[0]):
        for r in range(2):
            got = ours.sequences[b, r, : ours.lengths[b, r]].tolist()
            want = expected.sequences[b, r, : expected.lengths[b, r]].tolist()
            assert got == want, f"{name} sentence {b} beam {r}"
    torch.testing.assert_close(ours.scores, expected.scores, atol=SCORE_ATOL, rtol=SCORE_RTOL)


def test_hf_decoder_state_is_explicit():
    """Two searches interleaved on one decoder do not interfere: the state is all there is."""
    model = tiny_model("marian")
    decoder = HFDecoder(model, max_new_tokens=5)
    ids_a, mask_a = make_inputs(model, 2, seed=1, padded=False)
    ids_b, mask_b = make_inputs(model, 3, seed=2, padded=False)
    start_a, state_a = decoder.prepare_inputs(ids_a, mask_a, 2)
    start_b, state_b = decoder.prepare_inputs(ids_b, mask_b, 2)
    tokens_a, tokens_b = start_a.repeat_interleave(2, 0), start_b.repeat_interleave(2, 0)
    first_a, state_a = decoder.step(tokens_a, state_a)
    first_b, state_b = decoder.step(tokens_b, state_b)
    again_a, _ = decoder.step(tokens_a, decoder.prepare_inputs(ids_a, mask_a, 2)[1])
    assert torch.equal(first_a, again_a)
    assert first_a.shape == (4, VOCAB) and first_b.shape == (6, VOCAB)
    assert state_a.cache is not state_b.cache


@st.composite
def generate_settings(draw: st.DrawFn) -> dict[str, Any]:
    """``model.generate`` keywords: lengths either way, greedy or beam, HF's processors."""
    name = draw(st.sampled_from(MODELS))
    num_beams = draw(st.integers(1, 5))
    max_new_tokens = draw(st.integers(2, 12))
    kwargs: dict[str, Any] = {
        "num_beams": num_beams,
        "num_return_sequences": draw(st.integers(1, num_beams)),
        "return_dict_in_generate": draw(st.booleans()),
        "output_scores": draw(st.booleans()),
        "use_cache": draw(st.booleans()),
        "length_penalty": draw(st.sampled_from([1.0, 0.0, 0.5, 2.0, -1.0])),
        "early_stopping": draw(st.sampled_from([False, True, "never"])),
        "no_repeat_ngram_size": draw(st.sampled_from([0, 2, 3])),
        "repetition_penalty": draw(st.sampled_from([1.0, 1.3, 0.8])),
        "min_new_tokens": draw(st.integers(0, 3)),
    }
    if draw(st.booleans()):
        kwargs["max_new_tokens"] = max_new_tokens
    else:  # max_length counts the decoder prompt: 1 token, or the (padded) prompt width
        kwargs["max_length"] = max_new_tokens + (1 if name in ENCODER_DECODER else 9)
    return {"name": name, "batch_size": draw(st.integers(1, 5)), "seed": draw(st.integers(0, 99)),
            **kwargs}  # fmt: skip


@settings(SETTINGS, max_examples=max(1, MAX_EXAMPLES // 3))
@given(generate_settings())
def test_generate_matches_model_generate_property(case):
    check_drop_in(**case)


@pytest.mark.parametrize("name", DECODER_ONLY)
def test_generate_infers_the_mask_of_left_padded_prompts(name):
    """Without attention_mask, generate treats pad tokens as padding (unless pad is EOS)."""
    model = tiny_model(name)
    input_ids, _ = make_inputs(model, 4, seed=43, padded=True)
    options = {"num_beams": 3, "max_new_tokens": 8, "num_return_sequences": 2}
    assert_same_generate_output(
        generate(model, input_ids, **options), model.generate(input_ids, **options), name
    )


@pytest.mark.parametrize("name", MODELS)
def test_generate_special_token_overrides(name):
    """pad_token_id (the fill after EOS), several eos_token_id, decoder_start_token_id."""
    eos = tiny_model(name).generation_config.eos_token_id
    check_drop_in(
        name, num_beams=3, num_return_sequences=3, max_new_tokens=9, pad_token_id=7,
        eos_token_id=[eos, 5], decoder_start_token_id=3,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------
# Several EOS IDs in refill mode (issue 16 item 25)
# --------------------------------------------------------------------------------------------


def _scripted_model(step_logits: list[list[float]]) -> tuple[Any, Callable[[], None]]:
    """A GPT-2 with V=4 (EOS 0 and 1) whose logits at generation step ``t`` are
    ``step_logits[t]`` for every row, whatever the input: a forward hook counts the model calls
    (one per step in both implementations, the first on the prompt). Returns the model and a
    function that rewinds the count before each run."""
    config = transformers.GPT2Config(
        vocab_size=4, n_embd=8, n_layer=1, n_head=1, n_positions=16,
        bos_token_id=3, eos_token_id=[0, 1], pad_token_id=3,
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    calls = [0]

    def hook(module: torch.nn.Module, inputs: Any, logits: Tensor) -> Tensor:
        row = torch.tensor(step_logits[min(calls[0], len(step_logits) - 1)])
        calls[0] += 1
        return row.expand_as(logits).clone()

    model.get_output_embeddings().register_forward_hook(hook)

    def rewind() -> None:
        calls[0] = 0

    return model, rewind


def test_refill_keeps_enough_candidates_for_several_eos_ids():
    """Refill keeps max(2, 1 + #EOS) * K candidates, as ``generate`` does. At step 1 the four
    (beam, EOS) candidates outrank every other one: with only 2K candidates no beam survives and
    the search stops with two short hypotheses; HF continues, and (length_penalty=2, "never")
    a longer hypothesis wins."""
    model, rewind = _scripted_model(
        [[0.0, 0.0, 2.0, 1.5], [1.0, 0.9, 0.1, 0.0], [5.0, -5.0, -5.0, -5.0]]
    )
    input_ids = torch.tensor([[3, 2]])
    settings_ = dict(num_beams=2, num_return_sequences=2, max_new_tokens=3, length_penalty=2.0,
                     early_stopping="never")  # fmt: skip
    rewind()
    expected = hf_generate(model, input_ids, torch.ones_like(input_ids), **settings_)
    rewind()
    ours = beam_search_hf(model, input_ids, torch.ones_like(input_ids), output_token_scores=True,
                          **settings_)  # fmt: skip
    assert_same_beams(ours, expected, "V=4 eos_id=[0, 1] K=2")
    assert ours.lengths[0, 0] == 3  # the case is only a test if a survivor of step 1 wins


def test_refill_with_one_beam_and_two_eos_ids():
    """K=1, V=4, eos_id=[0, 1]: at step 0 both EOS IDs outrank every other token. HF's beam
    algorithm keeps 3 candidates, so token 2 survives and [2, EOS] wins under length_penalty=2;
    keeping 2K = 2 would end with [0]. (``generate`` runs greedy search for num_beams=1, so the
    expected hypothesis is worked out here: scores are log-softmax sums over length ** 2.)"""
    step_logits = [[2.0, 1.9, 0.0, -1.0], [5.0, -5.0, -5.0, -5.0]]
    model, rewind = _scripted_model(step_logits)
    input_ids = torch.tensor([[3, 2]])
    rewind()
    ours = beam_search_hf(model, input_ids, torch.ones_like(input_ids), num_beams=1,
                          max_new_tokens=2, length_penalty=2.0, early_stopping="never")  # fmt: skip
    log_probs = [
        torch.log_softmax(torch.tensor(row, dtype=torch.float64), -1) for row in step_logits
    ]
    short = float(log_probs[0][0])  # [0], length 1
    longer = float(log_probs[0][2] + log_probs[1][0]) / 2**2  # [2, 0]
    assert longer > short
    assert ours.sequences[0, 0, : ours.lengths[0, 0]].tolist() == [2, 0]
    # float32 log-softmax and a sum of two terms: 1e-6 is a few float32 ulps at this size.
    expected = torch.tensor(longer, dtype=torch.float64)
    torch.testing.assert_close(ours.scores[0, 0].double(), expected, atol=1e-6, rtol=0)
