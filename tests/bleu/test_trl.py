"""The TRL reward adapter, called the way GRPOTrainer calls reward functions."""

from __future__ import annotations

import pytest
import torch
from sacrebleu.metrics import BLEU as SacreBLEU

from tensortext.bleu import BleuConfig
from tensortext.integrations.trl import bleu_reward


def sacrebleu_sentence(hyp, refs):
    join = lambda ids: " ".join(map(str, ids))  # noqa: E731
    return SacreBLEU(tokenize="none").sentence_score(join(hyp), [join(r) for r in refs]).score / 100


def test_grpo_call_convention_with_eos_and_id_references():
    reward = bleu_reward("solution", eos_id=2)
    completions = [[5, 6, 7, 8, 2], [5, 6, 9, 2], [5, 6, 7]]
    solutions = [[5, 6, 7, 8], [[5, 6, 7, 8], [5, 6, 9, 9]], torch.tensor([5, 6, 7, 1])]
    scores = reward(
        prompts=["p"] * 3,
        completions=["c"] * 3,
        completion_ids=completions,
        solution=solutions,
        trainer_state=None,
    )
    expected = [
        sacrebleu_sentence([5, 6, 7, 8], [[5, 6, 7, 8]]),
        sacrebleu_sentence([5, 6, 9], [[5, 6, 7, 8], [5, 6, 9, 9]]),
        sacrebleu_sentence([5, 6, 7], [[5, 6, 7, 1]]),
    ]
    assert isinstance(scores, list) and all(isinstance(s, float) for s in scores)
    # float32 scores; 1e-6 is the library's float32 parity bound.
    torch.testing.assert_close(
        torch.tensor(scores, dtype=torch.float64),
        torch.tensor(expected, dtype=torch.float64),
        atol=1e-6,
        rtol=0,
    )
    assert reward.__name__ == "bleu"


class WhitespaceTokenizer:
    eos_token_id = 0

    def __init__(self):
        self.vocab = {"<eos>": 0}

    def encode(self, text, add_special_tokens=True):
        return [self.vocab.setdefault(w, len(self.vocab)) for w in text.split()]


def test_text_references_use_the_tokenizer_and_its_eos():
    tokenizer = WhitespaceTokenizer()
    reward = bleu_reward(
        "reference", tokenizer=tokenizer, config=BleuConfig(compat="nltk", smooth_method="method1")
    )
    completion = [*tokenizer.encode("the cat sat on the mat"), 0]
    scores = reward(completion_ids=[completion], reference=["the cat sat on the mat"])
    assert scores == [1.0]


def test_errors_name_the_fix():
    reward = bleu_reward("reference")
    with pytest.raises(ValueError, match="ref_column"):
        reward(completion_ids=[[1]], answer=[[1]])
    with pytest.raises(ValueError, match="tokenizer"):
        reward(completion_ids=[[1]], reference=["text"])
    with pytest.raises(ValueError, match="align"):
        reward(completion_ids=[[1], [2]], reference=[[1]])
    with pytest.raises(ValueError, match="smooth_method"):
        bleu_reward(config=BleuConfig(smooth_method="method9"))
