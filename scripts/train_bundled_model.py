"""Trains the bundled translator (src/tensortext/data/model/) and writes its held-out test set.

    python scripts/train_bundled_model.py            # about 2 minutes on 2 idle CPU cores
    python scripts/train_bundled_model.py --steps 200 --no-write   # a quick smoke run
    python scripts/train_bundled_model.py --evidence-model   # the LMBR demo's weaker system

The task is text normalisation read aloud: numbers, ordinals, fractions, percentages, money,
dates, times, timestamps and ranges written with digits and symbols, one word per digit or
symbol, become English words (``2 0 2 4 - 0 3 - 0 7`` -> ``march seventh twenty twenty four``).
A small grammar generates the pairs; every source has exactly one correct target, so exact match
is meaningful. The task still takes reading ahead: ``1 9 9 9`` is "one thousand nine hundred
ninety nine" alone but "nineteen ninety nine" in a year range, ``1 9 : 3 0`` becomes "seven
thirty in the evening", a European date is reordered into "the seventh of march ...", and the
first word of ``4 4 9 9 6 6`` depends on how many digits follow. Training stops after a fixed
budget (800 steps), before the model is perfect, so that beam search and BLEU have errors to
work on: about 94-96% exact match on held-out data, a little more with beam search than greedy.

Everything is deterministic for a given torch build and ``--threads``: the data come from seeded
``random.Random`` streams (training from ``TRAIN_SEED``, the dev set and the shipped test set
from their own seeds; no training source equals a dev or test source of four words or more), and
the model from ``torch.manual_seed``. Metrics are measured on the float16 weights that ship, not
on the float32 ones trained, and recorded in config.json (tests/models/test_bundled.py checks the
greedy test-set figure).
"""

from __future__ import annotations

import argparse
import calendar
import io
import json
import math
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import torch
from torch import Tensor

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from tensortext.bleu import corpus_bleu  # noqa: E402
from tensortext.models.bundled import (  # noqa: E402
    BOS,
    EOS,
    PAD,
    BundledTranslator,
    TranslatorConfig,
)
from tensortext.models.bundled.load import sha256  # noqa: E402
from tensortext.padded import PAD_ID  # noqa: E402

TRAIN_SEED, DEV_SEED, TEST_SEED, TORCH_SEED = 1, 2, 3, 0
DEV_SIZE, TEST_SIZE = 500, 300
HOLD_OUT_MIN_WORDS = 4
MODEL_DIR = ROOT / "src" / "tensortext" / "data" / "model"
DEMO_DIR = ROOT / "src" / "tensortext" / "data" / "demo"
EVIDENCE_MODEL_DIR = ROOT / "src" / "tensortext" / "data" / "evidence_model"
EVIDENCE_TORCH_SEED, EVIDENCE_STEPS = 7, 400

# ------------------------------------------------------------------------------------------
# The grammar
# ------------------------------------------------------------------------------------------

ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
TEENS = [
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
TENS = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
SCALES = [(1_000_000, "million"), (1_000, "thousand")]
ORDINAL_OF = {
    "one": "first",
    "two": "second",
    "three": "third",
    "five": "fifth",
    "eight": "eighth",
    "nine": "ninth",
    "twelve": "twelfth",
}
MONTHS = [calendar.month_name[m].lower() for m in range(1, 13)]


def cardinal(n: int) -> list[str]:
    """``40715`` -> ``forty thousand seven hundred fifteen`` (US style, no "and")."""
    if n < 10:
        return [ONES[n]]
    if n < 20:
        return [TEENS[n - 10]]
    if n < 100:
        return [TENS[n // 10]] + ([ONES[n % 10]] if n % 10 else [])
    if n < 1000:
        return [ONES[n // 100], "hundred"] + (cardinal(n % 100) if n % 100 else [])
    for scale, word in SCALES:
        if n >= scale:
            rest = cardinal(n % scale) if n % scale else []
            return [*cardinal(n // scale), word, *rest]
    raise ValueError(n)


def ordinal_word(word: str) -> str:
    if word in ORDINAL_OF:
        return ORDINAL_OF[word]
    if word.endswith("y"):
        return word[:-1] + "ieth"
    return word + "th"


def ordinal(n: int) -> list[str]:
    """``21`` -> ``twenty first``: the cardinal with its last word made ordinal."""
    words = cardinal(n)
    return [*words[:-1], ordinal_word(words[-1])]


def digits(n: int, width: int = 0) -> list[str]:
    return list(str(n).zfill(width))


def grouped(n: int) -> list[str]:
    """``1234567`` -> ``1 , 2 3 4 , 5 6 7``."""
    return list(f"{n:,}")


def year(y: int) -> list[str]:
    """Years as they are read: 1905 "nineteen oh five", 2008 "two thousand eight"."""
    century, rest = divmod(y, 100)
    if y % 1000 < 10 and century % 10 == 0:
        return cardinal(y)  # 2000..2009: "two thousand (eight)"
    if rest == 0:
        return [*cardinal(century), "hundred"]
    if rest < 10:
        return [*cardinal(century), "oh", ONES[rest]]
    return [*cardinal(century), *cardinal(rest)]


def random_number(rng: random.Random, max_digits: int) -> int:
    """Uniform number of digits, then uniform value: short and long numbers equally often."""
    width = rng.randint(1, max_digits)
    return rng.randint(0 if width == 1 else 10 ** (width - 1), 10**width - 1)


def gen_cardinal(rng: random.Random) -> tuple[list[str], list[str]]:
    n = random_number(rng, 9)
    src = grouped(n) if n >= 1000 and rng.random() < 0.4 else digits(n)
    if rng.random() < 0.1 and n:
        return ["-", *src], ["minus", *cardinal(n)]
    return src, cardinal(n)


def gen_decimal(rng: random.Random) -> tuple[list[str], list[str]]:
    whole = random_number(rng, 3)
    fraction = [str(rng.randint(0, 9)) for _ in range(rng.randint(1, 3))]
    src = [*digits(whole), ".", *fraction]
    tgt = [*cardinal(whole), "point", *(ONES[int(d)] for d in fraction)]
    if rng.random() < 0.2:
        return ["-", *src], ["minus", *tgt]
    return src, tgt


def ordinal_suffix(n: int) -> str:
    if n % 100 in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def gen_ordinal(rng: random.Random) -> tuple[list[str], list[str]]:
    n = max(1, random_number(rng, 4))
    return [*digits(n), ordinal_suffix(n)], ordinal(n)


def random_date(rng: random.Random) -> tuple[int, int, int]:
    y, m = rng.randint(1800, 2099), rng.randint(1, 12)
    return y, m, rng.randint(1, calendar.monthrange(y, m)[1])


def gen_date(rng: random.Random) -> tuple[list[str], list[str]]:
    y, m, d = random_date(rng)
    form = rng.randrange(3)
    if form == 0:  # ISO
        return [*digits(y), "-", *digits(m, 2), "-", *digits(d, 2)], [
            MONTHS[m - 1],
            *ordinal(d),
            *year(y),
        ]
    if form == 1:  # US
        return [*digits(m, 2), "/", *digits(d, 2), "/", *digits(y)], [
            MONTHS[m - 1],
            *ordinal(d),
            *year(y),
        ]
    # European: day first, read "the seventh of march"
    return [*digits(d, 2), ".", *digits(m, 2), ".", *digits(y)], [
        "the",
        *ordinal(d),
        "of",
        MONTHS[m - 1],
        *year(y),
    ]


def time_words(hour: int, minute: int) -> list[str]:
    """24-hour clock to speech: 19:30 "seven thirty in the evening", 12:00 "noon"."""
    if minute == 0 and hour in (0, 12):
        return ["midnight" if hour == 0 else "noon"]
    spoken = [*cardinal(hour % 12 or 12)]
    if minute == 0:
        spoken.append("o'clock")
    elif minute < 10:
        spoken += ["oh", ONES[minute]]
    else:
        spoken += cardinal(minute)
    if hour < 5 or hour >= 22:
        return [*spoken, "at", "night"]
    if hour < 12:
        return [*spoken, "in", "the", "morning"]
    if hour < 18:
        return [*spoken, "in", "the", "afternoon"]
    return [*spoken, "in", "the", "evening"]


def time_source(rng: random.Random, hour: int, minute: int) -> list[str]:
    if rng.random() < 0.5:  # 12-hour clock, no leading zero on the hour
        return [*digits(hour % 12 or 12), ":", *digits(minute, 2), "am" if hour < 12 else "pm"]
    return [*digits(hour, 2), ":", *digits(minute, 2)]


def random_time(rng: random.Random) -> tuple[int, int]:
    # Whole and half hours are common on real clocks; they also make noon and midnight appear.
    minute = rng.choice([0, 0, 30, 15, 45]) if rng.random() < 0.3 else rng.randint(0, 59)
    return rng.randint(0, 23), minute


def gen_time(rng: random.Random) -> tuple[list[str], list[str]]:
    hour, minute = random_time(rng)
    return time_source(rng, hour, minute), time_words(hour, minute)


def gen_money(rng: random.Random) -> tuple[list[str], list[str]]:
    symbol, unit, units = rng.choice([("$", "dollar", "dollars"), ("€", "euro", "euros")])
    whole = random_number(rng, 5) if rng.random() < 0.9 else 0
    cents = rng.randint(0, 99) if rng.random() < 0.6 else None
    src = [symbol, *(grouped(whole) if whole >= 1000 and rng.random() < 0.4 else digits(whole))]
    if cents is not None:
        src += [".", *digits(cents, 2)]
    cents_words = [*cardinal(cents), "cent" if cents == 1 else "cents"] if cents else []
    if whole == 0 and cents_words:
        return src, cents_words
    tgt = [*cardinal(whole), unit if whole == 1 else units]
    return src, [*tgt, "and", *cents_words] if cents_words else tgt


def gen_percent(rng: random.Random) -> tuple[list[str], list[str]]:
    whole = random_number(rng, 3)
    if rng.random() < 0.3:
        decimal = rng.randint(0, 9)
        return [*digits(whole), ".", str(decimal), "%"], [
            *cardinal(whole),
            "point",
            ONES[decimal],
            "percent",
        ]
    return [*digits(whole), "%"], [*cardinal(whole), "percent"]


def gen_fraction(rng: random.Random) -> tuple[list[str], list[str]]:
    denominator = rng.randint(2, 16)
    numerator = rng.randint(1, denominator - 1)
    if denominator == 2:
        name = ["half"]
    elif denominator == 4:
        name = ["quarter" if numerator == 1 else "quarters"]
    else:
        last = ordinal(denominator)
        name = last if numerator == 1 else [*last[:-1], last[-1] + "s"]
    return [*digits(numerator), "/", *digits(denominator)], [*cardinal(numerator), *name]


def gen_range(rng: random.Random) -> tuple[list[str], list[str]]:
    if rng.random() < 0.5:  # years: read as years, not as cardinals
        first = rng.randint(1800, 2098)
        last = rng.randint(first + 1, min(2099, first + 40))
        return [*digits(first), "-", *digits(last)], [*year(first), "to", *year(last)]
    # Opening hours, both ends read in full.
    (h1, m1), (h2, m2) = sorted([random_time(rng), random_time(rng)])
    src = [*time_source(rng, h1, m1), "-", *time_source(rng, h2, m2)]
    return src, [*time_words(h1, m1), "to", *time_words(h2, m2)]


def gen_datetime(rng: random.Random) -> tuple[list[str], list[str]]:
    """A timestamp, ``2 0 2 4 - 0 3 - 0 7 1 9 : 3 0`` -> "march seventh ... at seven thirty ..."."""
    (y, m, d), (hour, minute) = random_date(rng), random_time(rng)
    src = [*digits(y), "-", *digits(m, 2), "-", *digits(d, 2), *digits(hour, 2), ":"]
    src += digits(minute, 2)
    return src, [MONTHS[m - 1], *ordinal(d), *year(y), "at", *time_words(hour, minute)]


GENERATORS: list[tuple[float, Callable[[random.Random], tuple[list[str], list[str]]]]] = [
    (0.20, gen_cardinal),
    (0.07, gen_decimal),
    (0.07, gen_ordinal),
    (0.16, gen_date),
    (0.12, gen_time),
    (0.12, gen_money),
    (0.05, gen_percent),
    (0.05, gen_fraction),
    (0.08, gen_range),
    (0.08, gen_datetime),
]


def sample(rng: random.Random) -> tuple[str, str]:
    generate = rng.choices([g for _, g in GENERATORS], weights=[w for w, _ in GENERATORS])[0]
    src, tgt = generate(rng)
    return " ".join(src), " ".join(tgt)


def vocabularies() -> tuple[list[str], list[str]]:
    """Every word the grammar can produce, specials first.

    Found by enumerating the grammar rather than by sampling it, so rare words cannot be missed.
    Source ``<pad>`` gets ID 0; target ``<pad>``, ``<s>``, ``</s>`` get 0, 1, 2.
    """
    src_words = set("0123456789") | {"-", ".", "/", ":", ",", "%", "$", "€", "am", "pm"}
    src_words |= {"st", "nd", "rd", "th"}
    tgt_words: set[str] = set()
    for n in [*range(2000), *range(1000, 10**9, 997_001)]:
        tgt_words.update(cardinal(n))
        tgt_words.update(ordinal(max(n, 1)))
    for y in range(1800, 2100):
        tgt_words.update(year(y))
    for hour in range(24):
        for minute in range(60):
            tgt_words.update(time_words(hour, minute))
    for d in range(3, 17):
        tgt_words.add(ordinal(d)[-1] + "s")
    tgt_words |= {*MONTHS, "minus", "point", "the", "of", "to", "and", "percent"}
    tgt_words |= {"half", "quarter", "quarters", "dollar", "dollars", "euro", "euros"}
    tgt_words |= {"cent", "cents"}
    return [PAD, *sorted(src_words)], [PAD, BOS, EOS, *sorted(tgt_words)]


def dataset(seed: int, size: int, exclude: set[str]) -> list[tuple[str, str]]:
    """``size`` pairs with distinct sources, none in ``exclude``."""
    rng = random.Random(seed)
    pairs: list[tuple[str, str]] = []
    seen = set(exclude)
    while len(pairs) < size:
        src, tgt = sample(rng)
        if src not in seen:
            seen.add(src)
            pairs.append((src, tgt))
    return pairs


# ------------------------------------------------------------------------------------------
# Batches, decoding, evaluation
# ------------------------------------------------------------------------------------------


def make_batch(
    model: BundledTranslator, pairs: list[tuple[str, str]]
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Returns ``src_ids [B, S]``, ``src_lens [B]``, decoder input and output ``[B, T + 1]``."""
    src_ids, src_lens = model.tokenize_source([src for src, _ in pairs])
    tgt_ids, tgt_lens = model.tokenize_target([tgt for _, tgt in pairs])
    tgt_ids = tgt_ids.masked_fill(tgt_ids == PAD_ID, model.pad_id)  # the loss ignores pad_id
    rows = torch.arange(len(pairs))
    tgt_in = torch.cat([torch.full((len(pairs), 1), model.start_id), tgt_ids], dim=1)
    tgt_out = torch.cat([tgt_ids, torch.full((len(pairs), 1), model.pad_id)], dim=1)
    tgt_out[rows, tgt_lens] = model.eos_id
    return src_ids, src_lens, tgt_in, tgt_out


def greedy(model: BundledTranslator, src_ids: Tensor, src_lens: Tensor, max_new: int) -> Tensor:
    """Greedy decoding through the cached ``step``; ``[N, T]`` tokens after the start token."""
    tokens, state = model.prepare(src_ids, src_lens, num_beams=1)
    done = torch.zeros(src_ids.shape[0], dtype=torch.bool)
    for _ in range(max_new):
        log_probs, state = model.step(tokens, state)
        # Finished rows keep stepping (fixed shapes) but only append padding.
        next_ids = log_probs.argmax(-1).masked_fill(done, model.pad_id)
        tokens = torch.cat([tokens, next_ids.unsqueeze(1)], dim=1)
        done |= next_ids == model.eos_id
        if bool(done.all()):
            break
    return tokens[:, 1:]


def beam(
    model: BundledTranslator, src_ids: Tensor, src_lens: Tensor, num_beams: int, max_new: int
) -> Tensor:
    """A minimal beam search (sum of log-probabilities, no length penalty) for evaluation.

    Finished beams stay in the beam with a frozen score and extend only with padding, so the
    best finished hypothesis can't be displaced by a worse unfinished one: unfinished scores
    only go down. Returns the best ``[N, T]`` tokens after the start token.
    """
    sentences, beams, vocab = src_ids.shape[0], num_beams, model.vocab_size
    start_ids, state = model.prepare(src_ids, src_lens, num_beams=beams)
    tokens = start_ids.repeat_interleave(beams, dim=0)
    scores = torch.zeros(sentences, beams)
    scores[:, 1:] = float("-inf")  # all beams start identical; keep one alive
    done = torch.zeros(sentences, beams, dtype=torch.bool)
    frozen = torch.full((vocab,), float("-inf"))
    frozen[model.pad_id] = 0.0
    offsets = (torch.arange(sentences) * beams).unsqueeze(1)
    for _ in range(max_new):
        log_probs, state = model.step(tokens, state)
        log_probs = torch.where(done.unsqueeze(-1), frozen, log_probs.view(sentences, beams, -1))
        candidates = (scores.unsqueeze(-1) + log_probs).view(sentences, -1)  # [N, K * V]
        scores, flat = candidates.topk(beams, dim=1)
        source_beam, next_ids = flat // vocab, flat % vocab
        rows = (source_beam + offsets).view(-1)
        state = model.reorder(state, rows)
        tokens = torch.cat([tokens[rows], next_ids.view(-1, 1)], dim=1)
        done = done.gather(1, source_beam) | (next_ids == model.eos_id)
        if bool(done.all()):
            break
    best = scores.argmax(1) + offsets.squeeze(1)
    return tokens[best, 1:]


def evaluate(
    model: BundledTranslator,
    pairs: list[tuple[str, str]],
    *,
    num_beams: int,
    max_new: int = 40,
    batch_size: int = 250,
) -> tuple[float, float, list[str]]:
    """Exact match (0-1), corpus BLEU (0-100, sacrebleu defaults on words) and the outputs."""
    model.eval()
    hyps: list[str] = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        src_ids, src_lens = model.tokenize_source([src for src, _ in chunk])
        if num_beams == 1:
            out = greedy(model, src_ids, src_lens, max_new)
        else:
            out = beam(model, src_ids, src_lens, num_beams, max_new)
        hyps += model.detokenize(out, torch.full((len(chunk),), out.shape[1]))
    refs = [tgt for _, tgt in pairs]
    exact = sum(h == r for h, r in zip(hyps, refs, strict=True)) / len(pairs)
    hyp_ids, hyp_lens = model.tokenize_target(hyps)
    ref_ids, ref_lens = model.tokenize_target(refs)
    bleu = float(corpus_bleu(hyp_ids, ref_ids, hyp_lens=hyp_lens, ref_lens=ref_lens))
    return exact, 100 * bleu, hyps


# ------------------------------------------------------------------------------------------
# Training
# ------------------------------------------------------------------------------------------


def learning_rate(step: int, steps: int, peak: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def half_precision_copy(model: BundledTranslator) -> tuple[dict[str, Tensor], BundledTranslator]:
    """The float16 state dict that ships, and a float32 model loaded from it."""
    weights = {name: t.detach().half() for name, t in model.state_dict().items()}
    shipped = BundledTranslator(model.config, model.source_vocab, model.target_vocab)
    shipped.load_state_dict({name: t.float() for name, t in weights.items()})
    return weights, shipped.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    parser.add_argument("--no-write", action="store_true", help="train and evaluate only")
    parser.add_argument(
        "--evidence-model",
        action="store_true",
        help="train the weaker second system whose n-best lists are the LMBR evidence of the "
        "demo (another torch seed, 400 steps, one thread) into data/evidence_model",
    )
    args = parser.parse_args()
    model_dir, torch_seed = MODEL_DIR, TORCH_SEED
    if args.evidence_model:
        model_dir, torch_seed = EVIDENCE_MODEL_DIR, EVIDENCE_TORCH_SEED
        args.steps, args.threads = EVIDENCE_STEPS, 1

    torch.set_num_threads(args.threads)
    # Tiny gradients and Adam moments turn into subnormal floats, which are many times slower on
    # x86 CPUs; flushing them to zero does not change what the model learns.
    torch.set_flush_denormal(True)
    torch.manual_seed(torch_seed)
    torch.use_deterministic_algorithms(True)
    source_vocab, target_vocab = vocabularies()
    test = dataset(TEST_SEED, TEST_SIZE, exclude=set())
    dev = dataset(DEV_SEED, DEV_SIZE, exclude={src for src, _ in test})
    # Training never sees a dev or test source of HOLD_OUT_MIN_WORDS words or more. Shorter
    # ones ("3", "2 nd", "1 / 4") come from spaces too small to hold out without taking whole
    # words out of the language ("1 / 4" is the only source of "quarter").
    held_out = {src for src, _ in test + dev if len(src.split()) >= HOLD_OUT_MIN_WORDS}

    config = TranslatorConfig(src_vocab_size=len(source_vocab), tgt_vocab_size=len(target_vocab))
    model = BundledTranslator(config, source_vocab, target_vocab)
    params = sum(p.numel() for p in model.parameters())
    print(
        f"vocabularies: {len(source_vocab)} source, {len(target_vocab)} target words; "
        f"{params:,} parameters; {args.steps} steps of {args.batch_size} sentences"
    )
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=args.lr, betas=(0.9, 0.98), weight_decay=0.01
    )
    rng = random.Random(TRAIN_SEED)
    started = time.perf_counter()
    running = 0.0
    for step in range(args.steps):
        pairs: list[tuple[str, str]] = []
        while len(pairs) < args.batch_size:
            pair = sample(rng)
            if pair[0] not in held_out:
                pairs.append(pair)
        src_ids, src_lens, tgt_in, tgt_out = make_batch(model, pairs)
        model.train()
        log_probs = model(src_ids, src_lens, tgt_in)  # [B, T, V]
        loss = torch.nn.functional.nll_loss(
            log_probs.flatten(0, 1), tgt_out.flatten(), ignore_index=model.pad_id
        )
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(step, args.steps, args.lr, args.warmup)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        running = 0.98 * running + 0.02 * loss.item() if step else loss.item()
        if (step + 1) % 100 == 0 or step + 1 == args.steps:
            elapsed = time.perf_counter() - started
            print(f"step {step + 1:5d}  loss {running:.4f}  {elapsed:6.0f} s", flush=True)
        if (step + 1) % 800 == 0 and step + 1 < args.steps:
            exact, bleu, _ = evaluate(model, dev[:200], num_beams=1)
            print(f"  dev[:200] greedy exact match {100 * exact:.1f}%  BLEU {bleu:.2f}")
    train_seconds = time.perf_counter() - started

    weights, shipped = half_precision_copy(model)
    metrics = {}
    for name, pairs in (("dev", dev), ("test", test)):
        for num_beams in (1, 4):
            exact, bleu, hyps = evaluate(shipped, pairs, num_beams=num_beams)
            label = "greedy" if num_beams == 1 else f"beam{num_beams}"
            metrics[f"{name}_exact_match_{label}"] = round(exact, 4)
            metrics[f"{name}_bleu_{label}"] = round(bleu, 2)
            print(f"{name} {label:6s}: exact match {100 * exact:5.1f}%  BLEU {bleu:6.2f}")
            if name == "test" and num_beams == 4:
                wrong = [(s, h, r) for (s, r), h in zip(pairs, hyps, strict=True) if h != r]
                for src, hyp, ref in wrong[:8]:
                    print(f"  {src}\n    got  {hyp}\n    want {ref}")
    print(f"training took {train_seconds:.0f} s")
    if args.no_write:
        return

    model_dir.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(weights, buffer)
    (model_dir / "weights.pt").write_bytes(buffer.getvalue())
    vocab = {"source": source_vocab, "target": target_vocab}
    (model_dir / "vocab.json").write_text(json.dumps(vocab, indent=1) + "\n", encoding="utf-8")
    description = {
        "model": asdict(config),
        "weights_sha256": sha256(buffer.getvalue()),
        "weights_dtype": "float16",
        "parameters": params,
        "training": {
            "script": "scripts/train_bundled_model.py",
            "steps": args.steps,
            "batch_size": args.batch_size,
            "lr": args.lr,
            "warmup": args.warmup,
            "seeds": {"train": TRAIN_SEED, "dev": DEV_SEED, "test": TEST_SEED, "torch": torch_seed},
        },
        "metrics": metrics,
    }
    (model_dir / "config.json").write_text(json.dumps(description, indent=1) + "\n", "utf-8")
    size = sum(f.stat().st_size for f in model_dir.iterdir())
    print(f"wrote {model_dir} ({size / 1e6:.2f} MB)")
    if not args.evidence_model:
        (DEMO_DIR / "translate.src").write_text("".join(f"{s}\n" for s, _ in test), "utf-8")
        (DEMO_DIR / "translate.ref").write_text("".join(f"{t}\n" for _, t in test), "utf-8")
        print(f"wrote {DEMO_DIR}/translate.{{src,ref}}")


if __name__ == "__main__":
    main()
