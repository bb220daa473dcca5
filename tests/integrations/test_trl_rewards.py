"""chrF and ROUGE as TRL rewards, called the way GRPOTrainer calls reward functions, against
sacrebleu's ``CHRF`` and rouge-score."""

from __future__ import annotations

import pytest
from rouge_score.rouge_scorer import RougeScorer
from sacrebleu.metrics import CHRF as SacreCHRF

from tensortext.bleu import BleuConfig
from tensortext.chrf import ChrfConfig
from tensortext.integrations.trl import chrf_reward, rouge_reward

COMPLETIONS = [
    "The cat sat on the mat.",
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "A dog barked!"}],
    "",
    "Ünïcödé wörds, and (brackets)",
]
REFERENCES = [
    "the cat sat on a mat",
    ["A dog barked.", None, "The dog barked!"],
    "nothing",
    ["Unicode words and brackets", "ünïcödé wörds (brackets)"],
]
TEXTS = [c if isinstance(c, str) else c[-1]["content"] for c in COMPLETIONS]
REF_SETS = [[r] if isinstance(r, str) else [x for x in r if x is not None] for r in REFERENCES]


@pytest.mark.parametrize("word_order", [0, 2])
def test_chrf_reward_equals_sacrebleu(word_order: int) -> None:
    reward = chrf_reward("solution", config=ChrfConfig(word_order=word_order), device=None)
    got = reward(prompts=["p"] * 4, completions=COMPLETIONS, completion_ids=[[1]] * 4,
                 solution=REFERENCES, trainer_state=None)  # fmt: skip
    sacre = SacreCHRF(word_order=word_order)
    pairs = zip(TEXTS, REF_SETS, strict=True)
    expected = [sacre.sentence_score(h, refs).score / 100 for h, refs in pairs]
    assert isinstance(got, list) and all(isinstance(s, float) for s in got)
    assert got == pytest.approx(expected, abs=1e-6)  # float32 scores
    assert reward.__name__ == "chrf"


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rougeL"])
@pytest.mark.parametrize("measure", ["precision", "recall", "fmeasure"])
def test_rouge_reward_on_text_equals_rouge_score(rouge_type: str, measure: str) -> None:
    reward = rouge_reward("solution", rouge_type=rouge_type, measure=measure, device=None)
    got = reward(completions=COMPLETIONS, completion_ids=[[1]] * 4, solution=REFERENCES)
    scorer = RougeScorer([rouge_type])
    expected = [
        getattr(scorer.score_multi(refs, hyp)[rouge_type], measure)
        for hyp, refs in zip(TEXTS, REF_SETS, strict=True)
    ]
    assert got == pytest.approx(expected, abs=1e-6)
    assert reward.__name__ == "rouge"


def test_rouge_reward_on_token_ids_drops_the_eos() -> None:
    reward = rouge_reward("solution", rouge_type="rouge1", eos_id=2, device=None)
    got = reward(completions=["x", "y"], completion_ids=[[5, 6, 7, 2], [5, 9]],
                 solution=[[5, 6, 7], [[5, 6], [9, 9, 9]]])  # fmt: skip
    scorer = RougeScorer(["rouge1"])
    assert got == pytest.approx(
        [1.0, scorer.score_multi(["5 6", "9 9 9"], "5 9")["rouge1"].fmeasure], abs=1e-6
    )


def test_errors_name_the_fix() -> None:
    with pytest.raises(TypeError, match="ChrfConfig"):
        chrf_reward(config=BleuConfig())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="measure"):
        rouge_reward(measure="f1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="rouge"):
        rouge_reward(rouge_type="rougeLsum")
    reward = chrf_reward("reference", device=None)
    with pytest.raises(ValueError, match="ref_column"):
        reward(completions=["a"], answer=["a"])
    with pytest.raises(ValueError, match="align"):
        reward(completions=["a", "b"], reference=["a"])
    with pytest.raises(TypeError, match="completions"):
        reward(completions=[[1, 2]], reference=["a"])
    with pytest.raises(TypeError, match="text"):
        reward(completions=["a"], reference=[[1, 2]])


def test_an_entry_without_references_scores_zero_on_either_path() -> None:
    rouge = rouge_reward("reference", device=None)
    texts = rouge(completions=["a b", "c"], completion_ids=[[1, 2], [3]], reference=["a b", []])
    assert texts == [1.0, 0.0]
    ids = rouge(completions=["x", "y"], completion_ids=[[1, 2], [3]], reference=[[1, 2], []])
    assert ids == [1.0, 0.0]
    chrf = chrf_reward("reference", device=None)
    assert chrf(completions=["a b", "c"], reference=["a b", [None]]) == [1.0, 0.0]
