"""``tensortext.decode.hf.generate``'s output beyond the hypotheses, and how it calls the model.

* ``beam_indices``: equal to ``model.generate(..., return_dict_in_generate=True).beam_indices``
  (dtype, shape, every entry: the beam row behind each token, -1 after the hypothesis), and
  usable as HF's with ``compute_transition_scores``.
* No warnings: the KV cache is a ``transformers`` ``Cache`` passed by the keyword the model's
  ``forward`` takes now (``cache``, where it has it), so no ``FutureWarning`` about
  ``past_key_values``; ``model.generate`` raises none either.
* Processors are checked once, before the encoder runs.

The tiny models and the comparison helpers are ``test_hf``'s (one reference: ``model.generate``).
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import pytest
import torch
import transformers
from decode.test_hf import (
    MODELS,
    SCORE_ATOL,
    SCORE_RTOL,
    assert_same_generate_output,
    assert_same_rows,
    make_inputs,
    tiny_model,
)

from tensortext.decode import translate
from tensortext.decode.hf import HFDecoder, beam_search_hf, generate


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """As in test_hf: tiny models, one intra-op thread for both implementations."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def generate_without_warnings(*args: Any, **kwargs: Any) -> Any:
    """``generate(*args, **kwargs)`` with every warning an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return generate(*args, **kwargs)


# (B, K, R, length_penalty, early_stopping, max_new_tokens): one and several sentences, one to
# all beams returned, lengths rewarded and penalized, every stopping rule.
BEAM_INDEX_CASES = {
    "B1 K4": (1, 4, 1, 1.0, False, 12),
    "B3 K4 R2": (3, 4, 2, 1.0, False, 12),
    "B3 K4 R4 lp0.5": (3, 4, 4, 0.5, False, 12),
    "B3 K3 R3 lp-1 never": (3, 3, 3, -1.0, "never", 10),
    "B2 K2 lp2 early": (2, 2, 1, 2.0, True, 14),
    "B4 K5 R2 short": (4, 5, 2, 1.0, False, 3),
}


@pytest.mark.parametrize("case", sorted(BEAM_INDEX_CASES))
@pytest.mark.parametrize("name", MODELS)
def test_beam_indices_equal_generates(name, case):
    B, K, R, lp, early_stopping, max_new_tokens = BEAM_INDEX_CASES[case]
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, B, seed=B * 10 + K, padded=True)
    kwargs = dict(
        num_beams=K, num_return_sequences=R, length_penalty=lp, early_stopping=early_stopping,
        max_new_tokens=max_new_tokens, return_dict_in_generate=True, output_scores=True,
    )  # fmt: skip
    theirs = model.generate(input_ids, attention_mask=mask, **kwargs)
    ours = generate_without_warnings(model, input_ids, mask, **kwargs)
    assert_same_generate_output(ours, theirs, f"{name} {case}")
    # What beam_indices are for: per-token scores of the returned hypotheses.
    torch.testing.assert_close(
        model.compute_transition_scores(ours.sequences, ours.scores, ours.beam_indices),
        model.compute_transition_scores(theirs.sequences, theirs.scores, theirs.beam_indices),
        atol=SCORE_ATOL, rtol=SCORE_RTOL,
    )  # fmt: skip


def test_beam_indices_cover_early_ends_and_every_beam():
    """The cases above are only a test if hypotheses end before the longest one (-1 after
    them) and come from beams other than the first of a sentence."""
    model = tiny_model("marian")
    input_ids, mask = make_inputs(model, 6, seed=1, padded=False)
    ours = generate_without_warnings(
        model, input_ids, mask, num_beams=4, num_return_sequences=4, max_new_tokens=15,
        return_dict_in_generate=True,
    )  # fmt: skip
    indices = ours.beam_indices  # [B*R, T]
    assert bool((indices[:, -1] == -1).any()), indices
    beam_of_row = indices[indices >= 0] % 4
    assert set(beam_of_row.tolist()) == {0, 1, 2, 3}, indices


@pytest.mark.parametrize("name", MODELS)
def test_beam_indices_without_output_scores(name):
    """``generate`` fills beam_indices whenever it returns a dict, scores or not."""
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 3, seed=5, padded=True)
    kwargs = dict(num_beams=3, num_return_sequences=2, max_new_tokens=8,
                  return_dict_in_generate=True)  # fmt: skip
    theirs = model.generate(input_ids, attention_mask=mask, **kwargs)
    ours = generate_without_warnings(model, input_ids, mask, **kwargs)
    assert ours.scores is None and ours.sequences_scores is None
    assert_same_rows(ours.beam_indices, theirs.beam_indices, name)


@pytest.mark.parametrize("num_beams", [1, 4])
@pytest.mark.parametrize("name", MODELS)
def test_no_warnings_and_the_current_cache_keyword(name, num_beams):
    """Beam and greedy search warn nothing (transformers' FutureWarning on ``past_key_values``
    was raised on every step), and every decoder call passes a ``Cache`` by the keyword the
    model's forward takes."""
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 3, seed=9, padded=True)
    calls: list[dict[str, Any]] = []

    def on_model(module: torch.nn.Module, args: Any, kwargs: dict[str, Any]) -> None:
        calls.append(kwargs)

    hook = model.register_forward_pre_hook(on_model, with_kwargs=True)
    try:
        generate_without_warnings(model, input_ids, mask, num_beams=num_beams, max_new_tokens=6)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            beam_search_hf(model, input_ids, mask, num_beams=num_beams, max_new_tokens=6)
    finally:
        hook.remove()
    takes_cache = "cache" in inspect.signature(model.forward).parameters
    keyword = "cache" if takes_cache else "past_key_values"  # transformers before the rename
    cache_utils = transformers.cache_utils
    expected = cache_utils.EncoderDecoderCache if model.config.is_encoder_decoder else None
    for kwargs in calls:
        assert "past_key_values" not in kwargs or keyword == "past_key_values", list(kwargs)
        cache = kwargs[keyword]
        assert isinstance(cache, expected or cache_utils.DynamicCache), type(cache)


@pytest.mark.parametrize("name", MODELS)
def test_translate_with_hf_decoder_warns_nothing(name):
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 3, seed=11, padded=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        translate(HFDecoder(model, max_new_tokens=5), input_ids, mask.sum(1), num_beams=3)


class _NeedsScoresOfAStep(transformers.LogitsProcessor):
    """A processor that wants a keyword beam search never passes."""

    def __call__(self, input_ids: Any, scores: Any, cur_len: int) -> Any:
        return scores


@pytest.mark.parametrize("name", ["marian", "gpt2"])
def test_processor_needing_more_arguments_is_refused_before_the_encoder(name):
    model = tiny_model(name)
    input_ids, mask = make_inputs(model, 2, seed=3, padded=False)
    calls: list[int] = []
    hook = model.register_forward_pre_hook(lambda *args: calls.append(1))
    encoder = model.get_encoder() if model.config.is_encoder_decoder else None
    encoder_hook = None if encoder is None else encoder.register_forward_pre_hook(
        lambda *args: calls.append(1)
    )  # fmt: skip
    processors = transformers.LogitsProcessorList([_NeedsScoresOfAStep()])
    try:
        with pytest.raises(ValueError, match=r"_NeedsScoresOfAStep.*cur_len"):
            generate(model, input_ids, mask, num_beams=2, max_new_tokens=4,
                     logits_processor=processors)  # fmt: skip
    finally:
        hook.remove()
        if encoder_hook is not None:
            encoder_hook.remove()
    assert calls == []
