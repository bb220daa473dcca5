"""Property-based parity of tensortext's ROUGE against Google's rouge-score.

Text batches (random words with punctuation, digits, upper case, non-ASCII letters, empty and
whitespace-only lines, several references with ``None``) and token-ID batches (the BLEU tests'
encodings: explicit lengths with junk past them, or ``pad_id`` padding anywhere; IDs up to
2**40) are scored by ``rouge_score.rouge_scorer.RougeScorer`` sentence by sentence and by
tensortext in one call. Tolerances: ``oracles.rouge.ATOL`` (float32 1e-6, float64 1e-12).
"""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.rouge import (
    ATOL,
    assert_scores_close,
    corpus_means,
    id_reference_scores,
    reference_scores,
    rouge_types_lists,
    text_batches,
)
from rouge_score import tokenizers
from strategies import MAX_EXAMPLES, SETTINGS, cases, dense_cases, dtypes

from tensortext.padded import Padded, pad_ragged
from tensortext.rouge import (
    ROUGE,
    RougeConfig,
    corpus_rouge,
    pairwise_rouge,
    rouge_from_stats,
    rouge_stats,
    sentence_rouge,
    tokenize,
)

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))


@SETTINGS
@given(batch=text_batches(), types=rouge_types_lists(), stem=st.booleans(), dtype=dtypes)
def test_text_matches_rouge_score(batch, types, stem, dtype):
    hyps, refs, oracle_refs = batch
    expected = reference_scores(hyps, oracle_refs, types, use_stemmer=stem)
    config = RougeConfig(rouge_types=types, use_stemmer=stem, dtype=dtype)
    ours = sentence_rouge(hyps, refs, config=config)
    assert ours.shape == (len(hyps), len(types), 3) and ours.dtype == dtype
    label = f"sentence types={types} stem={stem} {dtype}"
    assert_scores_close(
        ours, expected, atol=ATOL[dtype], label=label, inputs=list(zip(hyps, refs, strict=True))
    )
    corpus = corpus_rouge(hyps, refs, config=config)
    assert_scores_close(corpus, corpus_means(expected, len(types)), atol=ATOL[dtype], label=label)


@SETTINGS
@given(case=cases(), types=rouge_types_lists(), dtype=dtypes)
def test_token_ids_match_rouge_score(case, types, dtype):
    expected = id_reference_scores(case.hyps, case.refs, types)
    kwargs = case.kwargs
    ours = sentence_rouge(
        kwargs["hyp_ids"],
        kwargs["ref_ids"],
        hyp_lens=kwargs["hyp_lens"],
        ref_lens=kwargs["ref_lens"],
        pad_id=kwargs["pad_id"],
        rouge_types=types,
        dtype=dtype,
    )
    label = f"ids [{case.encoding}] types={types} {dtype}"
    inputs = list(zip(case.hyps, case.refs, strict=True))
    assert_scores_close(ours, expected, atol=ATOL[dtype], label=label, inputs=inputs)


@FEWER
@given(case=dense_cases(), types=rouge_types_lists())
def test_dense_token_ids_match_rouge_score(case, types):
    """No lengths and no pad_id: every position counts (widths may be 0)."""
    expected = id_reference_scores(case.hyps, case.refs, types)
    ours = sentence_rouge(case.kwargs["hyp_ids"], case.kwargs["ref_ids"], rouge_types=types)
    assert_scores_close(ours, expected, atol=ATOL[torch.float32], label=case.encoding)


@SETTINGS
@given(text=st.text(max_size=60), stem=st.booleans())
def test_tokenizer_matches_rouge_score_on_any_unicode(text, stem):
    assert tokenize(text, use_stemmer=stem) == tokenizers.DefaultTokenizer(stem).tokenize(text)


@SETTINGS
@given(batch=text_batches(max_rows=8), types=rouge_types_lists(), data=st.data())
def test_stats_add_over_any_split(batch, types, data):
    """Rows of a batch equal the rows of its parts; corpus = rouge_from_stats of the sum."""
    hyps, refs, _ = batch
    config = RougeConfig(rouge_types=types, dtype=torch.float64)
    whole = rouge_stats(hyps, refs, config=config)
    cut = data.draw(st.integers(0, len(hyps)), label="cut")
    parts = torch.cat(
        [rouge_stats(hyps[:cut], refs[:cut], config=config),
         rouge_stats(hyps[cut:], refs[cut:], config=config)]
    )  # fmt: skip
    # Each row depends on its own sentence only: equal to the bit.
    assert torch.equal(parts, whole)
    torch.testing.assert_close(
        rouge_from_stats(parts.sum(0), config=config),
        corpus_rouge(hyps, refs, config=config),
        atol=1e-12,
        rtol=0,
    )


@FEWER
@given(batch=text_batches(max_rows=8), types=rouge_types_lists(), data=st.data())
def test_metric_over_batches_equals_corpus_rouge(batch, types, data):
    hyps, refs, _ = batch
    metric = ROUGE(rouge_types=types, dtype=torch.float64)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(hyps)), max_size=3), label="cuts"))
    for start, stop in zip([0, *cuts], [*cuts, len(hyps)], strict=True):
        stats = metric.update(hyps[start:stop], refs[start:stop])
        assert stats.shape == (stop - start, 1 + 3 * len(types))
    # Summation order differs (per batch, then across batches): float64 rounding only.
    torch.testing.assert_close(
        metric.compute(), corpus_rouge(hyps, refs, rouge_types=types, dtype=torch.float64),
        atol=1e-12, rtol=0,
    )  # fmt: skip
    metric.reset()
    assert metric.stats is None
    assert metric.compute().abs().sum() == 0


@FEWER
@given(batch=text_batches(max_rows=3, max_refs=4), types=rouge_types_lists(), data=st.data())
def test_pairwise_equals_sentence_scores_on_every_pair(batch, types, data):
    """``pairwise_rouge[b, i, j]`` is ``sentence_rouge(candidate i, candidate j)``, to the bit,
    for text candidates and for token IDs."""
    hyps, _, _ = batch
    num = data.draw(st.integers(1, 4), label="N")
    candidates = [[hyps[(b + k) % len(hyps)] if hyps else "" for k in range(num)] for b in range(3)]
    config = RougeConfig(rouge_types=types)
    scores = pairwise_rouge(candidates, config=config)
    assert scores.shape == (3, num, num, len(types), 3)
    pairs_h = [candidates[b][i] for b in range(3) for i in range(num) for _ in range(num)]
    pairs_r = [candidates[b][j] for b in range(3) for _ in range(num) for j in range(num)]
    expected = sentence_rouge(pairs_h, pairs_r, config=config).view(scores.shape)
    assert torch.equal(scores, expected)
    # Token IDs: the same candidates numbered by one vocabulary.
    vocabulary: dict[str, int] = {}
    rows = [
        [vocabulary.setdefault(w, len(vocabulary)) for w in tokenize(t)]
        for r in candidates
        for t in r
    ]
    padded = pad_ragged(rows)
    ids = Padded(padded.ids.view(3, num, -1), padded.lengths.view(3, num))
    assert torch.equal(pairwise_rouge(ids, config=config), expected)


def test_pairwise_scores_are_rouge_score_on_every_pair():
    candidates = [["the cat sat on the mat", "a cat sat", ""], ["x y z", "z y x", "x x y y"]]
    types = ["rouge1", "rouge2", "rougeL"]
    scores = pairwise_rouge(candidates, rouge_types=types, dtype=torch.float64)
    for b, row in enumerate(candidates):
        for i, hyp in enumerate(row):
            expected = reference_scores([hyp] * len(row), [[ref] for ref in row], types)
            assert_scores_close(scores[b, i], expected, atol=0.0, label=f"pairwise {b} {i}")


def test_cuda_equals_cpu(device):
    hyps = ["The cat sat on the mat.", "", "a b c d e f g"] * 3
    refs = [["the cat sat", None, "on the mat the cat"], [], ["g f e d c b a", "a c e g"]] * 3
    cpu = sentence_rouge(hyps, refs, rouge_types=["rouge1", "rouge4", "rougeL"])
    ours = sentence_rouge(hyps, refs, rouge_types=["rouge1", "rouge4", "rougeL"], device=device)
    assert ours.device.type == torch.device(device).type
    assert torch.equal(ours.cpu(), cpu)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, 3, (4, 5, 130), generator=generator)
    lengths = torch.randint(0, 131, (4, 5), generator=generator)
    expected = pairwise_rouge(Padded(ids, lengths))
    got = pairwise_rouge(Padded(ids.to(device), lengths.to(device)))
    assert got.device.type == torch.device(device).type
    assert torch.equal(got.cpu(), expected)
