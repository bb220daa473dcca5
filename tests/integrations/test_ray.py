"""``tensortext.integrations.ray`` on a real local Ray cluster (two CPUs): ``Tokenize``,
``Translate`` and ``Score`` through ``Dataset.map_batches`` in two actors give what one process
gives, row for row, and ``corpus_bleu`` over the blocks equals ``tensortext.corpus_bleu``."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources

import pytest
import ray
import ray.data
import torch
from oracles.bpe import tiktoken_reference

import tensortext
from tensortext.chrf import ChrfConfig, corpus_chrf, sentence_chrf
from tensortext.integrations.ray import Score, Tokenize, Translate, corpus_bleu, corpus_score
from tensortext.padded import pad_ragged
from tensortext.rouge import corpus_rouge, rouge_dict, sentence_rouge

LINES = resources.files("tensortext").joinpath("data/demo/multilingual.txt").read_text("utf-8")
TEXTS = [line for line in LINES.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def rows_by_id(dataset) -> dict[int, dict]:  # type: ignore[no-untyped-def]
    return {int(row["id"]): row for row in dataset.take_all()}


def test_tokenize_and_score_equal_one_process(cluster: None) -> None:
    rows = [
        {"id": n, "text": TEXTS[n % len(TEXTS)], "ref": TEXTS[(n * 7 + 1) % len(TEXTS)]}
        for n in range(2000)
    ]
    dataset = ray.data.from_items(rows, override_num_blocks=8)
    tokenized = dataset.map_batches(
        Tokenize, fn_constructor_kwargs={"encoding": "o200k_base", "output": "hyp_ids"},
        concurrency=2, batch_size=128,
    ).map_batches(
        Tokenize,
        fn_constructor_kwargs={"encoding": "o200k_base", "column": "ref", "output": "ref_ids"},
        concurrency=2, batch_size=128,
    )  # fmt: skip
    scored = tokenized.map_batches(Score, concurrency=2, batch_size=256).materialize()
    got = rows_by_id(scored)

    reference = tiktoken_reference("o200k_base")
    hyps = [reference.encode(row["text"]) for row in rows]
    refs = [reference.encode(row["ref"]) for row in rows]
    sentence = tensortext.sentence_bleu(pad_ragged(hyps), pad_ragged(refs))
    for n in range(len(rows)):
        assert got[n]["hyp_ids"].tolist() == hyps[n]
        assert got[n]["ref_ids"].tolist() == refs[n]
        assert got[n]["bleu"] == pytest.approx(float(sentence[n]), abs=1e-6)  # float32 both
    expected = float(tensortext.corpus_bleu(pad_ragged(hyps), pad_ragged(refs)))
    assert corpus_bleu(scored) == pytest.approx(expected, abs=1e-6)


def test_append_eot_and_errors(cluster: None) -> None:
    dataset = ray.data.from_items([{"id": 0, "body": "hello world"}])
    out = dataset.map_batches(
        Tokenize, fn_constructor_kwargs={"column": "body", "append_eot": True}, concurrency=1
    ).take_all()
    assert out[0]["input_ids"].tolist() == [15339, 1917, 100257]
    with pytest.raises(Exception, match="no column 'text'"):
        dataset.map_batches(Tokenize, concurrency=1).take_all()
    with pytest.raises(ValueError, match="no columns bleu_stat_0"):
        corpus_bleu(dataset)
    with pytest.raises(ValueError, match="last sentence"):
        corpus_bleu(dataset, config=tensortext.BleuConfig(compat="nltk", smooth_method="method7"))


def test_chrf_and_rouge_of_text_equal_one_process(cluster: None) -> None:
    """Score(metric="chrf" | "rouge") on text columns in two actors: the sentence scores and
    corpus_score over the blocks equal the single-process functions."""
    rows = [
        {"id": n, "hyp": TEXTS[n % len(TEXTS)], "ref": TEXTS[(n * 3 + 1) % len(TEXTS)]}
        for n in range(300)
    ]
    hyps, refs = [row["hyp"] for row in rows], [row["ref"] for row in rows]
    dataset = ray.data.from_items(rows, override_num_blocks=6)
    chrf_config = ChrfConfig(word_order=2)
    scored = dataset.map_batches(
        Score, fn_constructor_args=("hyp", "ref"),
        fn_constructor_kwargs={"metric": "chrf", "config": chrf_config},
        concurrency=2, batch_size=64,
    ).map_batches(
        Score, fn_constructor_args=("hyp", "ref"), fn_constructor_kwargs={"metric": "rouge"},
        concurrency=2, batch_size=64,
    ).materialize()  # fmt: skip
    got = rows_by_id(scored)
    chrf = sentence_chrf(hyps, refs, config=chrf_config)
    rouge = rouge_dict(sentence_rouge(hyps, refs))
    for n in range(len(rows)):
        assert got[n]["chrf"] == pytest.approx(float(chrf[n]), abs=1e-6)
        for key, column in rouge.items():
            assert got[n][f"rouge_{key}"] == pytest.approx(float(column[n]), abs=1e-6)
    expected = float(corpus_chrf(hyps, refs, config=chrf_config))
    assert corpus_score(scored, metric="chrf", config=chrf_config) == pytest.approx(
        expected, abs=1e-6
    )
    corpus = corpus_score(scored, metric="rouge")
    for key, value in rouge_dict(corpus_rouge(hyps, refs)).items():
        assert corpus[key] == pytest.approx(float(value), abs=1e-6)


def test_score_metric_errors() -> None:
    with pytest.raises(ValueError, match="metric"):
        Score(metric="ter")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ChrfConfig"):
        Score(metric="chrf", config=tensortext.BleuConfig())
    with pytest.raises(TypeError, match="text"):
        Score("a", "b", metric="chrf")({"a": [[1, 2]], "b": [[1, 2]]})
    with pytest.raises(TypeError, match="NoneType"):
        Score("a", "b", metric="rouge")({"a": ["x", None], "b": ["y", "z"]})


def test_score_in_one_process_needs_no_ray() -> None:
    """The callables are plain classes: a batch dict in, a batch dict out."""
    batch = Tokenize("cl100k_base")({"text": ["the cat sat on the mat", "a dog"]})
    scored = Score("input_ids", "input_ids")(batch)
    ids = pad_ragged([row.tolist() for row in batch["input_ids"]])
    assert scored["bleu"][0] == 1.0  # identical, with 4-grams
    assert scored["bleu"].tolist() == tensortext.sentence_bleu(ids, ids).tolist()
    assert torch.tensor(scored["bleu_stat_0"]).tolist() == [6, 2]  # hypothesis lengths


def test_translate_equals_one_process(cluster: None) -> None:
    """The bundled translator in two actors, blocks of 25 sentences: the single-process
    ``translate`` hypotheses, in the rows' order."""
    from tensortext.decode.translate import translate
    from tensortext.models.bundled.load import load_bundled_translator

    source = resources.files("tensortext").joinpath("data/demo/translate.src").read_text("utf-8")
    model = load_bundled_translator()
    src = model.tokenize_source(source.splitlines()[:100])
    rows = [{"id": n, "src_ids": row} for n, row in enumerate(src.tolist())]
    dataset = ray.data.from_items(rows, override_num_blocks=4)
    translated = dataset.map_batches(
        Translate, fn_constructor_args=(load_bundled_translator,),
        fn_constructor_kwargs={"device": "cpu", "num_beams": 4}, concurrency=2, batch_size=25,
    )  # fmt: skip
    got = rows_by_id(translated)
    expected = translate(model, src.ids, src.lengths, num_beams=4).without_eos(rank=0).tolist()
    assert [got[n]["hyp_ids"].tolist() for n in range(len(rows))] == expected
