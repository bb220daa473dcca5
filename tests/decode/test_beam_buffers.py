"""Beam search's token buffers grow with the search, not with ``max_new_tokens`` (issue 16 item 15).

The rows used to be ``P + max_new_tokens`` wide from the start and were copied every step, so a
21-step search cost 16 s and 0.9 GB at ``max_new_tokens=262144`` and ``2**40`` could not even be
allocated.  Now they start at :data:`~tensortext.decode.search_state.INITIAL_CAPACITY` tokens and
double when full.  Memory is checked deterministically, by the row widths the finished pool sees
(every candidate row passes through :meth:`HypothesisPool.merge`), never by timing.

Bit-identity with the old fixed-width buffers: with ``max_new_tokens <= INITIAL_CAPACITY`` the
buffers are allocated once at full width, as before, so searches with ``INITIAL_CAPACITY``
patched down to 1, 2 or 5 (growing at many steps) must return exactly the same tensors.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

# The table-driven models of tests/decode/test_beam.py (tests/ is on sys.path via its conftest).
from decode.test_beam import EOS, sparse_table, table_step
from torch import Tensor

from tensortext.decode import BeamOutput, beam_search, search_state
from tensortext.decode.pool import HypothesisPool

ENDS_AT = 21  # the search: every hypothesis has ended after 21 tokens
PROMPT = [[3, 1], [2, 2], [4, 7]]  # [B, P] start_ids


def ending_step(tables: Tensor, prompt_width: int, ends_at: int) -> Any:
    """The table model of ``test_beam``, except that token ``ends_at`` must be EOS."""
    base = table_step(tables)

    def step(tokens: Tensor, sentence: Tensor) -> tuple[Tensor, Tensor]:
        log_probs, sentence = base(tokens, sentence)
        if tokens.shape[1] - prompt_width == ends_at - 1:
            log_probs = torch.full_like(log_probs, -math.inf)
            log_probs[:, EOS] = 0.0
        return log_probs, sentence

    return step


def search(
    ends_at: int = ENDS_AT, num_beams: int = 3, eos_id: Any = EOS, **kwargs: Any
) -> BeamOutput:
    B, P = len(PROMPT), len(PROMPT[0])
    tables = torch.stack([sparse_table(seed, 12, successors=4) for seed in range(B)])
    return beam_search(
        ending_step(tables, P, ends_at),
        torch.arange(B).repeat_interleave(num_beams),
        batch_size=B,
        num_beams=num_beams,
        eos_id=eos_id,
        start_ids=torch.tensor(PROMPT),
        **kwargs,
    )


def assert_same_output(out: BeamOutput, expected: BeamOutput) -> None:
    """Bitwise equality of every tensor, naming the first differing sentence."""
    for name in ("sequences", "lengths", "scores", "token_scores"):
        got, want = getattr(out, name), getattr(expected, name)
        if want is None:
            assert got is None, name
            continue
        assert got.shape == want.shape, f"{name}: shape {list(got.shape)} != {list(want.shape)}"
        same = (got == want) | (got.isnan() & want.isnan()) if got.is_floating_point() else None
        rows = (got == want if same is None else same).flatten(1).all(dim=1)
        if not bool(rows.all()):
            b = int((~rows).nonzero()[0, 0])
            pytest.fail(f"{name} differs at sentence {b}: {got[b].tolist()} != {want[b].tolist()}")


@pytest.fixture
def row_widths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The width of every token and score row the finished pools hold or are offered."""
    widths: list[int] = []
    merge = HypothesisPool.merge

    def spy(pool: HypothesisPool, scores, tokens, lengths, token_scores) -> None:
        widths.extend((pool.tokens.shape[-1], tokens.shape[-1]))
        if token_scores is not None and pool.token_scores is not None:
            widths.extend((pool.token_scores.shape[-1], token_scores.shape[-1]))
        merge(pool, scores, tokens, lengths, token_scores)

    monkeypatch.setattr(HypothesisPool, "merge", spy)
    return widths


@pytest.mark.parametrize("finished", ["refill", "mask"])
@pytest.mark.parametrize("max_new_tokens", [100_000, 2**40, 2**63 - 1])
def test_a_huge_max_new_tokens_costs_only_the_steps_taken(row_widths, finished, max_new_tokens):
    kwargs = dict(finished=finished, output_token_scores=True, num_return_sequences=3)
    out = search(max_new_tokens=max_new_tokens, **kwargs)
    # Rows were P + 64 tokens wide (the search never outgrew its first buffers) instead of
    # P + max_new_tokens: 8 TB for 2**40, which used to fail to allocate.
    assert max(row_widths) == len(PROMPT[0]) + search_state.INITIAL_CAPACITY
    assert_same_output(out, search(max_new_tokens=ENDS_AT + 1, **kwargs))
    assert int(out.lengths.max()) == ENDS_AT  # the forced EOS ended the longest hypothesis
    assert out.sequences.shape[-1] == ENDS_AT


@pytest.mark.parametrize("finished", ["refill", "mask"])
def test_buffers_stay_within_twice_the_length_reached(monkeypatch, row_widths, finished):
    monkeypatch.setattr(search_state, "INITIAL_CAPACITY", 4)
    search(ends_at=37, max_new_tokens=10**6, early_stopping="never", finished=finished)
    # 37 tokens: capacity 4 -> 8 -> 16 -> 32 -> 64, never the million columns.
    assert sorted(set(row_widths)) == [len(PROMPT[0]) + c for c in (4, 8, 16, 32, 64)]


SETTINGS = [
    dict(max_new_tokens=30),
    dict(max_new_tokens=30, early_stopping=True),
    dict(max_new_tokens=45, min_new_tokens=33, ends_at=40, length_penalty=0.5),
    dict(max_new_tokens=13, min_new_tokens=13, ends_at=50),  # every beam cut off at the limit
    dict(max_new_tokens=17, early_stopping="never", eos_id=[EOS, 5], num_beams=4),
    dict(max_new_tokens=20, prune_threshold=0.05, pad_id=99),
]


@pytest.mark.parametrize("initial_capacity", [1, 2, 5])
@pytest.mark.parametrize("finished", ["refill", "mask"])
@pytest.mark.parametrize(
    "settings", SETTINGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items())
)
def test_growing_buffers_return_bit_identical_results(
    monkeypatch, initial_capacity, finished, settings
):
    kwargs = dict(finished=finished, output_token_scores=True, num_return_sequences=3, **settings)
    expected = search(**kwargs)  # max_new_tokens <= 64: one full-width buffer, as before
    monkeypatch.setattr(search_state, "INITIAL_CAPACITY", initial_capacity)
    assert_same_output(search(**kwargs), expected)


def test_growing_adds_no_host_sync(monkeypatch):
    syncs: list[int] = []
    original = {name: getattr(Tensor, name) for name in ("__bool__", "__int__", "item", "tolist")}

    def counted(name: str) -> Any:
        def call(self: Tensor, *args: Any) -> Any:
            syncs.append(1)
            return original[name](self, *args)

        return call

    def count(initial_capacity: int) -> int:
        syncs.clear()
        with monkeypatch.context() as patch:
            patch.setattr(search_state, "INITIAL_CAPACITY", initial_capacity)
            for name in original:
                patch.setattr(Tensor, name, counted(name))
            search(ends_at=40, max_new_tokens=45, min_new_tokens=33)
        return len(syncs)

    # Capacity 1 grows at steps 1, 2, 4, 8, 16 and 32; capacity 64 never.
    assert count(1) == count(64)


BAD_MAX_NEW_TOKENS = [
    (2**63, ValueError, r"max_new_tokens must be <= 2\*\*63 - 1 \(lengths are int64\), got 9223"),
    (10**30, ValueError, r"max_new_tokens must be <= 2\*\*63 - 1"),
    (0, ValueError, "max_new_tokens must be >= 1, got 0"),
    (-(2**70), ValueError, "max_new_tokens must be >= 1"),
    (1e9, TypeError, "max_new_tokens must be an int, got float"),
    (math.inf, TypeError, "max_new_tokens must be an int, got float"),
]


@pytest.mark.parametrize(("max_new_tokens", "error", "match"), BAD_MAX_NEW_TOKENS)
def test_bad_max_new_tokens_is_named_before_any_work(max_new_tokens, error, match):
    calls: list[int] = []

    def step(tokens: Tensor, state: None) -> tuple[Tensor, None]:
        calls.append(1)
        return torch.zeros(tokens.shape[0], 5), state

    with pytest.raises(error, match=match):
        beam_search(step, None, batch_size=1, num_beams=2, eos_id=EOS,
                    start_ids=torch.tensor([1]), max_new_tokens=max_new_tokens)  # fmt: skip
    assert not calls
