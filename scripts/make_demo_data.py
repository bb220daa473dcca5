"""Regenerates the bundled demo corpus in src/tensortext/data/demo/ (deterministic).

A small grammar writes reference sentences; a "system" output is made from each by dropping,
substituting and swapping words, and a second reference by paraphrasing a few words. The text is
whitespace-tokenised, so `tensortext bleu --tokenize none` and sacrebleu `--tokenize none` agree.
"""

from __future__ import annotations

import random
from pathlib import Path

SUBJECTS = [
    "the committee",
    "our team",
    "the new model",
    "a small company",
    "the minister",
    "the research group",
    "the city council",
    "every student",
    "the old engine",
    "she",
]
VERBS = [
    "approved",
    "rejected",
    "announced",
    "tested",
    "described",
    "measured",
    "published",
    "reviewed",
    "improved",
    "released",
]
OBJECTS = [
    "the annual report",
    "a faster decoder",
    "the budget for next year",
    "three new rules",
    "the translation system",
    "a short summary",
    "the final results",
    "its first product",
    "the training data",
    "a public statement",
]
TAILS = [
    "on monday .",
    "after a long debate .",
    "in the morning .",
    "without any delay .",
    "at the conference .",
    "for the second time .",
    "despite the cost .",
    "last week .",
    "with great care .",
    "before the deadline .",
]
PARAPHRASE = {
    "approved": "accepted",
    "announced": "declared",
    "tested": "evaluated",
    "described": "explained",
    "released": "launched",
    "a faster": "a quicker",
    "last week": "seven days ago",
    "on monday": "on monday morning",
}
NOISE = ["very", "also", "then", "really", "quickly", "again"]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(part) for part in (SUBJECTS, VERBS, OBJECTS, TAILS))


def system_output(ref: str, rng: random.Random) -> str:
    words = ref.split()
    out = []
    for word in words:
        roll = rng.random()
        if roll < 0.08:
            continue  # drop
        if roll < 0.16:
            out.append(rng.choice(NOISE))  # substitute
        else:
            out.append(word)
        if rng.random() < 0.04:
            out.append(rng.choice(NOISE))  # insert
    if len(out) > 3 and rng.random() < 0.3:
        i = rng.randrange(len(out) - 1)
        out[i], out[i + 1] = out[i + 1], out[i]  # swap
    return " ".join(out)


def paraphrase(ref: str) -> str:
    for old, new in PARAPHRASE.items():
        ref = ref.replace(old, new)
    return ref


def main() -> None:
    rng = random.Random(2026)
    refs = [sentence(rng) for _ in range(400)]
    hyps = [system_output(ref, rng) for ref in refs]
    out = Path(__file__).resolve().parents[1] / "src" / "tensortext" / "data" / "demo"
    out.mkdir(parents=True, exist_ok=True)
    (out / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    (out / "ref2.txt").write_text("\n".join(paraphrase(r) for r in refs) + "\n", encoding="utf-8")
    (out / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
