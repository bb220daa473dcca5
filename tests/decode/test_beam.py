"""Beam search on toy models: exhaustive-search oracle, batch invariance, modes, errors."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import MAX_EXAMPLES

from tensortext.decode import beam_search, reorder_state

EOS = 0


def sparse_table(seed: int, V: int, successors: int) -> torch.Tensor:
    """``[V, V]`` log-probs: every token allows EOS and ``successors`` other tokens, rest -inf.

    Few finite successors keep the number of hypotheses small, so that a beam wider than all of
    them is exhaustive while ``num_beams <= V`` still holds.
    """
    g = torch.Generator().manual_seed(seed)
    logits = torch.full((V, V), -math.inf)
    for token in range(V):
        allowed = torch.randperm(V - 1, generator=g)[:successors] + 1
        logits[token, allowed] = torch.randn(successors, generator=g) * 2
        logits[token, EOS] = torch.randn((), generator=g) * 2
    return torch.log_softmax(logits, dim=-1)


def table_step(tables: torch.Tensor):
    """A model whose next-token log-probs depend on the sentence and the last token only.

    ``tables`` is ``[S, V, V]``; the state is ``[B*K]`` the sentence of each row.
    """

    def step(tokens: torch.Tensor, sentence: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return tables[sentence, tokens[:, -1]], sentence

    return step


def run(tables: torch.Tensor, starts: list[int], num_beams: int, device="cpu", **kwargs):
    B = len(starts)
    sentence = torch.arange(B, device=device).repeat_interleave(num_beams)
    return beam_search(
        table_step(tables.to(device)),
        sentence,
        batch_size=B,
        num_beams=num_beams,
        eos_id=EOS,
        start_ids=torch.tensor(starts, device=device),
        **kwargs,
    )


def exhaustive(
    table: torch.Tensor,
    start: int,
    max_new_tokens: int,
    length_penalty: float,
    min_new_tokens: int = 0,
    with_cut_off: bool = True,
) -> list[tuple[float, list[int]]]:
    """Every hypothesis with its normalized score, best first (float64 sums)."""
    V = table.shape[0]
    found: list[tuple[float, list[int]]] = []

    def expand(prefix: list[int], score: float, last: int) -> None:
        for token in range(V):
            log_prob = float(table[last, token])
            if log_prob == -math.inf or (token == EOS and len(prefix) < min_new_tokens):
                continue
            seq = [*prefix, token]
            total = score + log_prob
            if token == EOS or len(seq) == max_new_tokens:
                if token == EOS or with_cut_off:
                    found.append((total / len(seq) ** length_penalty, seq))
            else:
                expand(seq, total, token)

    expand([], 0.0, start)
    return sorted(found, key=lambda item: -item[0])


def hypotheses(out, b: int) -> list[list[int]]:
    return [out.sequences[b, r, : out.lengths[b, r]].tolist() for r in range(out.lengths.shape[1])]


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    length_penalty=st.sampled_from([1.0, 0.0, 0.5, 2.0, -0.5]),
    min_new_tokens=st.integers(0, 2),
    finished=st.sampled_from(["refill", "mask"]),
)
def test_wide_beam_equals_exhaustive_search(seed, length_penalty, min_new_tokens, finished):
    # V=12, 2 successors + EOS per token, 3 steps: at most 4 live prefixes x 3 = 12 candidates per
    # step, so K=12 keeps every hypothesis and beam search must return the exhaustive optimum.
    V, T, K = 12, 3, 12
    table = sparse_table(seed, V, successors=2)
    out = run(
        table[None],
        [1],
        K,
        max_new_tokens=T,
        min_new_tokens=min_new_tokens,
        length_penalty=length_penalty,
        early_stopping="never",
        finished=finished,
        num_return_sequences=3,
    )
    # Mask mode (the paper) only returns EOS hypotheses while any exists.
    with_cut_off = finished == "refill"
    expected = exhaustive(table, 1, T, length_penalty, min_new_tokens, with_cut_off=with_cut_off)
    if not expected:
        expected = exhaustive(table, 1, T, length_penalty, min_new_tokens)
    got = hypotheses(out, 0)
    # The same transitions in another order tie exactly (seed=841, length_penalty=1.0: [9, 1, 1]
    # and [1, 9, 1]) and either may rank first, so each rank is checked by its exact score.
    exact = {tuple(seq): score for score, seq in expected}
    assert len({tuple(seq) for seq in got}) == len(got), got
    assert [exact.get(tuple(seq)) for seq in got] == pytest.approx(
        [score for score, _ in expected[:3]], rel=1e-12, abs=1e-12
    ), (got, expected[:4])
    # float32 sums of 3 log-probs vs float64: a few ulps.
    torch.testing.assert_close(
        out.scores[0], torch.tensor([s for s, _ in expected[:3]]), rtol=1e-5, atol=1e-5
    )


@settings(max_examples=MAX_EXAMPLES, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    num_beams=st.integers(1, 5),
    early_stopping=st.sampled_from([False, True, "never"]),
    finished=st.sampled_from(["refill", "mask"]),
    order=st.permutations(range(4)),
)
def test_batch_invariance(seed, num_beams, early_stopping, finished, order):
    # Four sentences with their own tables: alone, together, and shuffled, the results agree.
    V = 9
    tables = torch.stack([sparse_table(seed + s, V, successors=5) for s in range(4)])
    starts = [1, 2, 3, 4]
    kwargs = dict(
        max_new_tokens=7,
        early_stopping=early_stopping,
        finished=finished,
        num_return_sequences=num_beams,
        output_token_scores=True,
    )
    together = run(tables, starts, num_beams, **kwargs)
    shuffled = run(tables[list(order)], [starts[i] for i in order], num_beams, **kwargs)
    for s in range(4):
        alone = run(tables[s : s + 1], [starts[s]], num_beams, **kwargs)
        p = list(order).index(s)
        assert hypotheses(together, s) == hypotheses(alone, 0) == hypotheses(shuffled, p)
        assert torch.equal(together.scores[s], alone.scores[0])
        assert torch.equal(together.scores[s], shuffled.scores[p])


def test_token_scores_add_up_to_the_score():
    table = sparse_table(3, 10, successors=6)
    out = run(table[None], [1], 4, max_new_tokens=8, length_penalty=0.7, num_return_sequences=4,
              output_token_scores=True)  # fmt: skip
    totals = out.token_scores.sum(-1)
    torch.testing.assert_close(out.scores, totals / out.lengths.double().pow(0.7).float())
    beyond = torch.arange(out.sequences.shape[2]) >= out.lengths[..., None]
    assert torch.all(out.token_scores[beyond] == 0)


def test_greedy_chain_table():
    # Token 1 always wins with 0.9, EOS has 0.05: every finished beam ends with ...1 1 EOS.
    table = torch.log(torch.tensor([[0.05, 0.9, 0.05]] * 3))
    out = run(table[None], [2], 2, max_new_tokens=4, length_penalty=1.0)
    # Longer hypotheses amortize the one costly EOS: the cut-off 1 1 1 1 (-0.42/4) wins.
    assert hypotheses(out, 0) == [[1, 1, 1, 1]]


def test_mask_mode_falls_back_to_eos_candidates_that_left_the_beam():
    # With K=1 the EOS candidate never survives (token 1 always wins), so Algorithm 1's finished
    # set stays empty; the paper's note 5 picks the best EOS candidate that fell out of the beam.
    table = torch.log(torch.tensor([[0.05, 0.9, 0.05]] * 3))
    out = run(table[None], [2], 1, max_new_tokens=3, finished="mask")
    assert hypotheses(out, 0) == [[1, 1, 0]]
    expected = (2 * math.log(0.9) + math.log(0.05)) / 3
    assert out.scores[0, 0].item() == pytest.approx(expected, rel=1e-6)
    # HF semantics instead keep the beam cut off at the limit, which scores better.
    refill = run(table[None], [2], 1, max_new_tokens=3, finished="refill")
    assert hypotheses(refill, 0) == [[1, 1, 1]]


def test_mask_mode_uses_cut_off_beams_when_eos_is_never_allowed():
    table = torch.log(torch.tensor([[0.05, 0.9, 0.05]] * 3))
    out = run(table[None], [2], 2, max_new_tokens=3, min_new_tokens=3, finished="mask",
              num_return_sequences=2)  # fmt: skip
    first, second = hypotheses(out, 0)
    assert first == [1, 1, 1]
    assert len(second) == 3 and EOS not in second


def test_mask_mode_masks_finished_slots():
    # Algorithm 1: an EOS candidate in the top K is finished and its slot is masked, so the beam
    # shrinks; with refill the slot is refilled by the next best candidate.
    table = torch.log(torch.tensor([[0.6, 0.3, 0.1]] * 3))
    mask = run(table[None], [1], 2, max_new_tokens=3, finished="mask", num_return_sequences=2,
               early_stopping="never")  # fmt: skip
    assert hypotheses(mask, 0)[0] == [0]
    assert all(h[-1] == EOS for h in hypotheses(mask, 0))


def test_prune_threshold():
    table = sparse_table(5, 10, successors=6)
    # A threshold of 1 keeps only each step's best candidate: greedy decoding.
    pruned = run(table[None], [1], 4, max_new_tokens=6, prune_threshold=1.0)
    greedy, last = [], 1
    for _ in range(6):
        last = int(table[last].argmax())
        greedy.append(last)
        if last == EOS:
            break
    assert hypotheses(pruned, 0) == [greedy]
    # A negligible threshold changes nothing.
    plain = run(table[None], [1], 4, max_new_tokens=6, num_return_sequences=4)
    loose = run(
        table[None], [1], 4, max_new_tokens=6, num_return_sequences=4, prune_threshold=1e-30
    )
    assert hypotheses(plain, 0) == hypotheses(loose, 0)


def test_score_bias_zero_is_plain_search_and_strong_bias_flips():
    table = sparse_table(7, 10, successors=9)
    plain = run(table[None], [1], 3, max_new_tokens=5, num_return_sequences=3)
    zero = run(table[None], [1], 3, max_new_tokens=5, num_return_sequences=3,
               score_bias=lambda tokens: torch.zeros(tokens.shape[0], 10))  # fmt: skip
    assert torch.equal(plain.sequences, zero.sequences)
    assert torch.equal(plain.scores, zero.scores)

    def favour_4(tokens: torch.Tensor) -> torch.Tensor:
        bias = torch.zeros(tokens.shape[0], 10)
        bias[:, 4] = 50.0
        return bias

    flipped = run(table[None], [1], 3, max_new_tokens=5, score_bias=favour_4)
    assert hypotheses(flipped, 0)[0][0] == 4


def test_logits_processor_sees_prefixes_and_can_mask():
    seen: list[tuple[int, int]] = []
    table = sparse_table(2, 8, successors=7)

    def no_eos_before_3(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
        seen.append(tuple(tokens.shape))
        if tokens.shape[1] < 4:  # start token + 3 generated
            log_probs = log_probs.clone()
            log_probs[:, EOS] = -math.inf
        return log_probs

    out = run(table[None], [1], 2, max_new_tokens=6, logits_processor=no_eos_before_3,
              num_return_sequences=2)  # fmt: skip
    assert seen[0] == (2, 1) and seen[1] == (2, 2)
    assert torch.all(out.lengths >= 4)
    assert torch.equal(out.sequences, run(table[None], [1], 2, max_new_tokens=6, min_new_tokens=3,
                                          num_return_sequences=2).sequences)  # fmt: skip


def test_multiple_eos_ids_and_prompt_start_ids():
    table = sparse_table(11, 10, successors=5)
    prompts = torch.tensor([[3, 1], [2, 2]])
    seen = []

    def step(tokens, state):
        seen.append(tokens[:, :2].clone())
        return table[tokens[:, -1]], state

    def search(start_ids):
        return beam_search(step, None, batch_size=2, num_beams=3, eos_id=[EOS, 5],
                           start_ids=start_ids, max_new_tokens=6,
                           num_return_sequences=3)  # fmt: skip

    out = search(prompts)
    for b in range(2):
        for hyp in hypotheses(out, b):
            assert all(t not in (EOS, 5) for t in hyp[:-1])
    # Every prefix the model sees starts with its sentence's prompt (row r: sentence r // K).
    assert seen and all(torch.equal(prefix, prompts.repeat_interleave(3, 0)) for prefix in seen)
    # The table reads the last token only: prompts [3, 1] and [2, 2] search exactly as the
    # one-token starts 1 and 2, and the output holds the generated tokens only (no prompt).
    alone = search(torch.tensor([1, 2]))
    assert torch.equal(out.sequences, alone.sequences) and torch.equal(out.scores, alone.scores)
    # ... and the prompt matters: swapping the last prompt tokens swaps the sentences' results.
    swapped = search(torch.tensor([[3, 2], [2, 1]]))
    assert torch.equal(swapped.sequences, out.sequences.flip(0))
    assert not torch.equal(swapped.sequences, out.sequences)


def test_pad_id_fills_after_the_end():
    table = sparse_table(4, 10, successors=5)
    out = run(table[None], [1], 3, max_new_tokens=6, num_return_sequences=3, pad_id=-1)
    beyond = torch.arange(out.sequences.shape[2]) >= out.lengths[..., None]
    assert torch.all(out.sequences[beyond] == -1)
    assert torch.all(out.sequences[~beyond] >= 0)


def test_one_step_and_one_beam():
    table = sparse_table(8, 6, successors=3)
    out = run(table[None], [1], 1, max_new_tokens=1)
    assert out.sequences.shape == (1, 1, 1)
    assert out.lengths.tolist() == [[1]]
    assert out.sequences[0, 0, 0].item() == int(table[1].argmax())


class Pair(NamedTuple):
    keys: torch.Tensor
    extra: torch.Tensor


class WithReorder:
    def __init__(self, rows: torch.Tensor):
        self.rows = rows

    def reorder(self, beam_idx: torch.Tensor) -> WithReorder:
        return WithReorder(self.rows[beam_idx])


def test_reorder_state_structures():
    idx = torch.tensor([2, 2, 0])
    x = torch.tensor([10, 11, 12])
    assert reorder_state(None, idx) is None
    assert reorder_state(x, idx).tolist() == [12, 12, 10]
    nested = reorder_state({"a": (x, [x])}, idx)
    assert nested["a"][0].tolist() == nested["a"][1][0].tolist() == [12, 12, 10]
    pair = reorder_state(Pair(x, x + 1), idx)
    assert isinstance(pair, Pair) and pair.extra.tolist() == [13, 13, 11]
    assert reorder_state(WithReorder(x), idx).rows.tolist() == [12, 12, 10]
    with pytest.raises(TypeError, match="reorder"):
        reorder_state(object(), idx)


BAD_SETTINGS = [
    (dict(num_beams=0), "num_beams"),
    (dict(num_beams=11), "num_beams"),
    (dict(max_new_tokens=0), "max_new_tokens"),
    (dict(min_new_tokens=9), "min_new_tokens"),
    (dict(min_new_tokens=-1), "min_new_tokens"),
    (dict(num_return_sequences=4), "num_return_sequences"),
    (dict(eos_id=-1), "eos_id"),
    (dict(eos_id=[]), "eos_id"),
    (dict(eos_id=10), "eos_id"),
    (dict(early_stopping="sometimes"), "early_stopping"),
    (dict(early_stopping=1), "early_stopping"),
    (dict(finished="drop"), "finished"),
    (dict(prune_threshold=0.0), "prune_threshold"),
    (dict(prune_threshold=2.0), "prune_threshold"),
    (dict(length_penalty=math.nan), "length_penalty"),
    (dict(batch_size=2), "start_ids"),
    (dict(start_ids=torch.tensor([1.0])), "start_ids"),
    (dict(start_ids=torch.zeros((1, 0), dtype=torch.int64)), "start_ids"),
    # Issue 16 item 21: these were raw torch or Python errors.
    (dict(length_penalty=1e6), "length_penalty"),  # OverflowError
    (dict(length_penalty=-1e6), "length_penalty"),  # scores divided by 0.0
    (dict(vocab_size=2, num_beams=1, eos_id=[0, 1]), "finished='mask'"),  # topk out of range
    (dict(vocab_size=None, num_beams=1, eos_id=list(range(10))), "finished='mask'"),
    (dict(eos_id=torch.zeros(2, 2, dtype=torch.long)), "eos_id"),
    (dict(eos_id=torch.tensor(0.0)), "eos_id"),
]


@pytest.mark.parametrize(("override", "match"), BAD_SETTINGS, ids=[m for _, m in BAD_SETTINGS])
def test_bad_settings_raise_before_any_model_call(override, match):
    calls = []
    table = sparse_table(0, 10, successors=3)

    def step(tokens, state):
        calls.append(1)
        return table[tokens[:, -1]], state

    kwargs = dict(batch_size=1, num_beams=3, eos_id=EOS, start_ids=torch.tensor([1]),
                  max_new_tokens=5, num_return_sequences=1, vocab_size=10)  # fmt: skip
    kwargs.update(override)
    if "num_beams" in override and override["num_beams"] == 11:
        kwargs["vocab_size"] = None  # checked against the first log_probs instead
    with pytest.raises((ValueError, TypeError), match=match):
        beam_search(step, None, **kwargs)
    assert len(calls) <= 1  # only the first-step vocabulary check may need a model call


def test_step_fn_returning_the_wrong_shape():
    def step(tokens, state):
        return torch.zeros(tokens.shape[0] + 1, 5), state

    with pytest.raises(ValueError, match=r"\[B\*K, V\]"):
        beam_search(step, None, batch_size=1, num_beams=2, eos_id=0, start_ids=torch.tensor([1]),
                    max_new_tokens=3)  # fmt: skip

    def integer_step(tokens, state):
        return torch.zeros(tokens.shape[0], 5, dtype=torch.int64), state

    with pytest.raises(TypeError, match="float"):  # a wrong dtype is a TypeError
        beam_search(integer_step, None, batch_size=1, num_beams=2, eos_id=0,
                    start_ids=torch.tensor([1]), max_new_tokens=3)  # fmt: skip


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_cuda_equals_cpu(finished):
    tables = torch.stack([sparse_table(s, 50, successors=20) for s in range(8)])
    kwargs = dict(max_new_tokens=12, num_return_sequences=3, finished=finished,
                  output_token_scores=True, prune_threshold=1e-4)  # fmt: skip
    cpu = run(tables, list(range(1, 9)), 4, **kwargs)
    cuda = run(tables, list(range(1, 9)), 4, device="cuda", **kwargs)
    assert torch.equal(cpu.sequences, cuda.sequences.cpu())
    assert torch.equal(cpu.lengths, cuda.lengths.cpu())
    # The same float32 additions in the same order: equal up to the last bit or two.
    torch.testing.assert_close(cpu.scores, cuda.scores.cpu(), rtol=1e-6, atol=1e-6)


def _table_model(V: int = 10):
    table = sparse_table(0, V, successors=3)

    def step(tokens, state):
        return table[tokens[:, -1]], state

    return step


BEAM_KWARGS = dict(batch_size=2, num_beams=3, eos_id=EOS, start_ids=torch.tensor([1, 2]),
                   max_new_tokens=5)  # fmt: skip


@pytest.mark.parametrize("finished", ["refill", "mask"])
@pytest.mark.parametrize("bad", [math.nan, math.inf])
@pytest.mark.parametrize("at_step", [0, 2, 4])
def test_non_finite_log_probs_name_the_step_and_row(finished, bad, at_step):
    """Issue 16 item 6: one NaN column returned every sentence with length 0 and score -inf."""
    model = _table_model()

    def step(tokens, state):
        log_probs, state = model(tokens, state)
        if tokens.shape[1] - 1 == at_step:
            log_probs = log_probs.clone()
            log_probs[:, 7] = bad
        return log_probs, state

    pattern = rf"step {at_step}, row 0 \(sentence 0, beam 0\).*validate=False"
    with pytest.raises(ValueError, match=pattern):
        beam_search(step, None, finished=finished, **BEAM_KWARGS)
    beam_search(step, None, finished=finished, validate=False, **BEAM_KWARGS)  # skipped


def test_non_finite_log_probs_of_dead_rows_and_minus_inf_are_fine():
    """Rows of dead beams are ignored (their outputs are), and -inf is a forbidden token."""
    model = _table_model()

    def step(tokens, state):
        log_probs, state = model(tokens, state)
        if tokens.shape[1] == 1:  # first step: only beam 0 of each sentence is alive
            log_probs = log_probs.clone()
            log_probs[1::3] = math.nan
        return log_probs, state

    expected = beam_search(model, None, **BEAM_KWARGS)
    out = beam_search(step, None, **BEAM_KWARGS)
    assert torch.equal(out.sequences, expected.sequences)


# Every way a tensor's value reaches Python: each is a device-to-host copy on CUDA.
HOST_SYNCS = ("__bool__", "__int__", "__float__", "__index__", "item", "tolist", "cpu", "numpy")


def test_the_nan_check_adds_no_host_sync_per_step(monkeypatch):
    """The check rides on the stop check's copy: one host sync per step, whichever way a value
    reaches Python (``bool``, ``int``, ``float``, ``.item()``, ``.tolist()``, ``.cpu()``...),
    and one more at most with the check (the last step has no stop check to share)."""
    model = _table_model()
    syncs: list[str] = []
    steps = []

    def counted_model(tokens, state):
        steps.append(1)
        return model(tokens, state)

    def count(validate):
        kwargs = {**BEAM_KWARGS, "max_new_tokens": 8}  # built outside the counting
        syncs.clear()
        steps.clear()
        with monkeypatch.context() as patch:
            for name in HOST_SYNCS:
                original = getattr(torch.Tensor, name)

                def counting(self, *args, _name=name, _original=original, **kw):
                    syncs.append(_name)
                    return _original(self, *args, **kw)

                patch.setattr(torch.Tensor, name, counting)
            probe = torch.ones(1)
            float(probe), probe.item(), probe.cpu()  # the counter sees each kind it claims to
            assert syncs == ["__float__", "item", "cpu"]
            syncs.clear()
            beam_search(counted_model, None, validate=validate, **kwargs)
        return list(syncs)

    unchecked, checked = count(False), count(True)
    assert 1 <= len(unchecked) <= len(steps), unchecked  # the stop check, once per step
    assert len(checked) <= len(unchecked) + 1, checked


def test_wrong_state_rows_processor_and_bias_outputs_are_value_errors():
    """Issue 16 item 21: these were raw torch errors (or silently broadcast)."""
    model = _table_model()
    with pytest.raises(ValueError, match=r"state\[0\].*B\*K = 6.*repeat_interleave"):
        beam_search(model, (torch.zeros(2, 4),), **BEAM_KWARGS)
    with pytest.raises(ValueError, match=r"state\['cache'\]"):
        beam_search(model, {"cache": torch.zeros(6, 4), "cache2": None, "x": []} | {
            "cache": torch.zeros(2)}, **BEAM_KWARGS)  # fmt: skip
    beam_search(model, {"cache": torch.zeros(6, 4)}, **BEAM_KWARGS)  # B*K rows are fine
    with pytest.raises(ValueError, match=r"logits_processor's output has shape \[6, 3\]"):
        beam_search(model, None, logits_processor=lambda t, lp: lp[:, :3], **BEAM_KWARGS)
    with pytest.raises(ValueError, match=r"score_bias's output has shape \[10\]"):
        beam_search(model, None, score_bias=lambda t: torch.zeros(10), **BEAM_KWARGS)
    with pytest.raises(TypeError, match="score_bias's output"):
        beam_search(model, None, score_bias=lambda t: [0.0] * 10, **BEAM_KWARGS)


@pytest.mark.parametrize(
    "eos_id",
    [
        np.int64(0),
        np.int32(0),
        torch.tensor(0),
        [np.int64(0), torch.tensor(9)],
        torch.tensor([0, 9]),
    ],
    ids=["np.int64", "np.int32", "0-d tensor", "list of both", "1-d tensor"],
)
def test_eos_id_as_numpy_int_or_tensor(eos_id):
    """Issue 16 item 21: a NumPy int or 0-d tensor gave 'not iterable' TypeErrors."""
    model = _table_model()
    plain = [0, 9] if isinstance(eos_id, list) or getattr(eos_id, "dim", lambda: 0)() == 1 else 0
    expected = beam_search(model, None, **{**BEAM_KWARGS, "eos_id": plain})
    out = beam_search(model, None, **{**BEAM_KWARGS, "eos_id": eos_id})
    assert torch.equal(out.sequences, expected.sequences)
    assert torch.equal(out.scores, expected.scores)
