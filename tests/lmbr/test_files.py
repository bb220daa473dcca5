"""LMBR's evidence files (``tensortext.lmbr.files``): round trips, errors naming ``file:line``.

* :func:`read_nbest` / :func:`write_nbest`: Moses n-best lists; what is read gives the
  posteriors of the lists (:func:`~oracles.lmbr.brute_posteriors`).
* :func:`read_ngram_posterior_files`: SGNMT files, by list or ``%d`` pattern.
"""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles.lmbr import INF, brute_posteriors, lookup, posterior_tables
from strategies import MAX_EXAMPLES, SETTINGS

from tensortext.lmbr import (
    Evidence,
    NgramPosteriors,
    ngram_posteriors,
    read_nbest,
    read_ngram_posterior_files,
    write_nbest,
)
from tensortext.padded import PAD_ID

FEWER = settings(SETTINGS, max_examples=max(10, MAX_EXAMPLES // 3))


# --------------------------------------------------------------------------------------------
# Moses n-best lists
# --------------------------------------------------------------------------------------------


def moses_line(sentence: int, text: str, score: float | str, *extra: str) -> str:
    fields = [str(sentence), f" {text} ", " LM0= -12.5 TM0= -3 1.5 ", f" {score}", *extra]
    return "|||".join(fields) + "\n"


@FEWER
@given(
    lists=st.lists(
        st.lists(
            st.tuples(
                st.lists(st.integers(0, 2**40), max_size=6),
                st.floats(-50, 10, allow_nan=False) | st.just(-INF),
            ),
            max_size=4,
        ),
        min_size=1,
        max_size=4,
    ),
    max_hypotheses=st.none() | st.integers(1, 3),
    extra_sentences=st.none() | st.integers(0, 2),
    text=st.booleans(),
    data=st.data(),
)
def test_read_nbest_round_trip(lists, max_hypotheses, extra_sentences, text, data):
    # Lines of the sentences interleaved (ids unsorted, each sentence's lines in order), blank
    # lines in between; with text=True the tokens are words and tokenize= maps them.
    queues = [[(s, hyp, score) for hyp, score in hyps] for s, hyps in enumerate(lists)]
    lines: list[str] = []
    while any(queues):
        s = data.draw(st.sampled_from([s for s, q in enumerate(queues) if q]), label="next")
        sentence, hyp, score = queues[s].pop(0)
        words = " ".join(f"w{t}" if text else str(t) for t in hyp)
        lines.append(moses_line(sentence, words, repr(score)))
        if data.draw(st.booleans(), label="blank"):
            lines.append(data.draw(st.sampled_from(["\n", "   \n", "\t\n"]), label="blank"))
    present = [s for s, hyps in enumerate(lists) if hyps]
    count = (max(present, default=-1) + 1) + (extra_sentences or 0)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "nbest.txt"
        path.write_text("".join(lines), encoding="utf-8")
        evidence = read_nbest(
            path,
            num_sentences=None if extra_sentences is None else count,
            max_hypotheses=max_hypotheses,
            tokenize=(lambda field: [int(w[1:]) for w in field.split()]) if text else None,
        )
    assert isinstance(evidence, Evidence)
    kept = [lists[s][:max_hypotheses] if s < len(lists) else [] for s in range(count)]
    M = max([1, *(len(hyps) for hyps in kept)])
    assert evidence.ids.dtype == evidence.lengths.dtype == torch.int64
    assert evidence.scores.dtype == torch.float64
    assert evidence.scores.shape == evidence.lengths.shape == (count, M)
    assert evidence.ids.shape[:2] == (count, M)
    for s, hyps in enumerate(kept):
        for m in range(M):
            if m < len(hyps):
                hyp, score = hyps[m]
                assert evidence.scores[s, m].item() == score
                assert evidence.lengths[s, m].item() == len(hyp)
                assert evidence.ids[s, m, : len(hyp)].tolist() == hyp
            else:
                assert evidence.scores[s, m].item() == -INF
    # End to end: the posteriors of what was read are those of the lists.
    post = ngram_posteriors(*evidence, max_ngram_order=2)
    for s, hyps in enumerate(kept):
        want = brute_posteriors([h for h, _ in hyps], [x for _, x in hyps], 1.0, 2)
        got = lookup(post, list(want), [s] * len(want))
        assert all(abs(g - w) <= 1e-12 for g, w in zip(got, want.values(), strict=True))


def test_read_nbest_fields_and_options(tmp_path):
    path = tmp_path / "nbest.en"
    path.write_text(
        "\n"
        + moses_line(2, "the cat", -1.5, " 0-0 1-1 ")  # an alignment field after the score
        + "  \n"
        + moses_line(0, "a dog", "-2.25")
        + moses_line(2, "", "-inf")  # empty hypothesis, absent
        + moses_line(2, "cat the the", "0")
        + moses_line(0, "the", "-1e-3"),
        encoding="utf-8",
    )
    vocab = {"the": 5, "cat": 6, "a": 7, "dog": 8}
    evidence = read_nbest(path, tokenize=lambda field: [vocab[w] for w in field.split()])
    assert evidence.ids.shape[:2] == (3, 3)
    assert evidence.lengths[0, :2].tolist() == [2, 1] and evidence.lengths[2].tolist() == [2, 0, 3]
    assert evidence.scores[0, :2].tolist() == [-2.25, -1e-3]
    assert evidence.scores[1].tolist() == [-INF] * 3  # sentence 1 has no lines
    assert evidence.scores[2].tolist() == [-1.5, -INF, 0.0]
    assert evidence.ids[2, 0, :2].tolist() == [5, 6] and evidence.ids[2, 2].tolist() == [6, 5, 5]
    assert evidence.ids[0, 0, :2].tolist() == [7, 8]
    first = read_nbest(
        path,
        tokenize=lambda field: [vocab[w] for w in field.split()],
        max_hypotheses=1,
        num_sentences=5,
        device="cpu",
    )
    assert first.scores.shape == (5, 1) and first.scores[:, 0].tolist() == [
        -2.25,
        -INF,
        -1.5,
        -INF,
        -INF,
    ]
    assert first.ids.device.type == "cpu"


MOSES_ERRORS = {
    "too few fields": ("0 ||| 3 4 ||| LM0= -1", "expected 'id"),
    "bad id": ("x ||| 3 4 ||| f ||| -1", "id must be an integer"),
    "negative id": ("-1 ||| 3 4 ||| f ||| -1", "id must be >= 0"),
    "bad score": ("0 ||| 3 4 ||| f ||| cheap", "score a number"),
    "empty score": ("0 ||| 3 4 ||| f ||| ", "score a number"),
    "nan score": ("0 ||| 3 4 ||| f ||| nan", "finite or -inf"),
    "+inf score": ("0 ||| 3 4 ||| f ||| inf", "finite or -inf"),
    "overflowing score": ("0 ||| 3 4 ||| f ||| 1e400", "finite or -inf"),
    "non-integer token": ("0 ||| 3 four ||| f ||| -1", "integer IDs"),
    "float token": ("0 ||| 3 4.0 ||| f ||| -1", "integer IDs"),
}


@pytest.mark.parametrize("case", sorted(MOSES_ERRORS))
def test_read_nbest_names_the_bad_line(case, tmp_path):
    line, match = MOSES_ERRORS[case]
    path = tmp_path / "nbest.txt"
    path.write_text(moses_line(0, "3 4", -1.0) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:3:") + ".*" + re.escape(match)):
        read_nbest(path)


def test_read_nbest_errors_without_a_line(tmp_path):
    path = tmp_path / "nbest.txt"
    path.write_text(moses_line(0, "3", -1.0) + moses_line(4, "3", -1.0), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(path)) + ".*num_sentences=2"):
        read_nbest(path, num_sentences=2)

    def tokenize(field: str) -> list[int]:
        raise ValueError(f"unknown word in {field!r}")

    with pytest.raises(ValueError, match=re.escape(f"{path}:1: unknown word")):
        read_nbest(path, tokenize=tokenize)


@pytest.mark.parametrize(
    ("max_hypotheses", "error"), [(-1, ValueError), (0, ValueError), (1.5, TypeError)]
)
def test_read_nbest_refuses_a_bad_max_hypotheses(max_hypotheses, error, tmp_path):
    """Issue 16 item 10: ``max_hypotheses=-1`` silently dropped the last hypothesis."""
    path = tmp_path / "nbest.txt"
    path.write_text(moses_line(0, "3", -1.0) + moses_line(0, "4", -2.0), encoding="utf-8")
    with pytest.raises(error, match="max_hypotheses"):
        read_nbest(path, max_hypotheses=max_hypotheses)


# Issue 16 item 14: the evidence is dense [B, M, L], so one outlier line set the size of every
# slot (a 100k-token line in a 20k-sentence file asked for 16 GB; sentence id 1e8 for GBs).


def test_read_nbest_refuses_a_runaway_hypothesis_and_max_length_cuts_it(tmp_path):
    # 200 sentences of 3 tokens, one of 100,000: [200, 1, 100000] is 2e7 slots (160 MB) for
    # ~1e5 tokens read, more than 64 times as many (and more than 2**24).
    lines = [moses_line(s, "5 6 7", -1.0) for s in range(200)]
    lines[120] = moses_line(120, " ".join(["8"] * 100_000), -2.0)
    path = tmp_path / "nbest.txt"
    path.write_text("".join(lines), encoding="utf-8")
    message = (
        f"{path}: padding the n-best lists to [B, M, L] = [200, 1, 100000] would take "
        "20,000,000 token slots (0.1 GiB) for 100,597 tokens read (the limit: 64 times the "
        f"tokens read, or 2**24 slots); the longest hypothesis ({path}:121) has L = 100000 "
        "tokens: pass max_length="
    )
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        read_nbest(path)
    cut = read_nbest(path, max_length=4)
    assert cut.ids.shape == (200, 1, 4)
    assert cut.lengths[:, 0].tolist() == [3] * 120 + [4] + [3] * 79
    assert cut.ids[120, 0].tolist() == [8, 8, 8, 8]
    assert cut.ids[0, 0].tolist() == [5, 6, 7, PAD_ID]
    assert cut.scores[120, 0].item() == -2.0  # a cut hypothesis keeps its score


def test_read_nbest_refuses_a_sentence_id_far_beyond_the_others(tmp_path):
    path = tmp_path / "nbest.txt"
    path.write_text(
        moses_line(0, "5 6", -1.0) + moses_line(1, "7", -1.0) + moses_line(10**7, "5 6", -1.0),
        encoding="utf-8",
    )
    message = (
        f"{path}: padding the n-best lists to [B, M, L] = [10000001, 1, 2] would take "
        "20,000,002 token slots (0.1 GiB) for 5 tokens read (the limit: 64 times the tokens "
        f"read, or 2**24 slots); B = 1 + the largest sentence id = 10000001 ({path}:3): ids are "
        "0-based sentence numbers; fix that id"
    )
    with pytest.raises(ValueError, match=re.escape(message) + "$"):  # only the id is named
        read_nbest(path)
    # num_sentences= names the line of an id beyond it, and a huge one is refused unallocated.
    with pytest.raises(ValueError, match=re.escape(f"{path}:3: sentence id 10000000 >= num")):
        read_nbest(path, num_sentences=2)
    with pytest.raises(ValueError, match=re.escape("B = num_sentences=1099511627776: pass")):
        read_nbest(path, num_sentences=2**40)


def test_read_nbest_allows_modest_padding(tmp_path):
    # Sparse ids and uneven lists within 2**24 slots, or within 64 times the tokens read.
    path = tmp_path / "nbest.txt"
    path.write_text(moses_line(5000, "5 6", -1.0) + moses_line(3, "7", -1.0), encoding="utf-8")
    assert read_nbest(path).ids.shape == (5001, 1, 2)
    # 6000 lines of 50 tokens and one of 3000: [6000, 1, 3000] is 1.8e7 slots (> 2**24), for
    # 303,000 tokens read (1.9e7 is 64 times that).
    lines = [moses_line(s, " ".join(["5"] * 50), -1.0) for s in range(6000)]
    lines[7] = moses_line(7, " ".join(["6"] * 3000), -1.0)
    path.write_text("".join(lines), encoding="utf-8")
    assert read_nbest(path).ids.shape == (6000, 1, 3000)
    # With a few more tokens in that line it is refused, naming the line.
    lines[7] = moses_line(7, " ".join(["6"] * 3300), -1.0)
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"hypothesis ({path}:8) has L = 3300")):
        read_nbest(path)


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("num_sentences", -1, ValueError),
        ("num_sentences", 2.0, TypeError),
        ("max_length", 0, ValueError),
        ("max_length", -1, ValueError),
        ("max_length", "10", TypeError),
    ],
)
def test_read_nbest_checks_its_bounds_before_reading(option, value, error, tmp_path):
    with pytest.raises(error, match=option):
        read_nbest(tmp_path / "never-read", **{option: value})  # no OSError: checked first


# --------------------------------------------------------------------------------------------
# SGNMT n-gram posterior files
# --------------------------------------------------------------------------------------------


def write_posterior_file(path: Path, table: dict[tuple[int, ...], float]) -> None:
    lines = [f"  {' '.join(map(str, u))}   :  {value!r} \n\n" for u, value in table.items()]
    path.write_text("".join(lines), encoding="utf-8")


@FEWER
@given(tables=posterior_tables(), first_id=st.integers(0, 2))
def test_read_ngram_posterior_files_round_trip(tables, first_id):
    with tempfile.TemporaryDirectory() as folder:
        paths = [Path(folder) / f"post.{first_id + s}.txt" for s in range(len(tables))]
        for path, table in zip(paths, tables, strict=True):
            write_posterior_file(path, table)
        pattern = str(Path(folder) / "post.%d.txt")
        from_pattern = read_ngram_posterior_files(
            pattern, num_sentences=len(tables), first_id=first_id
        )
        from_list = read_ngram_posterior_files(paths)
        from_strings = read_ngram_posterior_files([str(p) for p in paths])
    assert from_pattern == from_list == from_strings == tables
    if any(tables):
        post = NgramPosteriors.from_ngrams(from_pattern)
        for b, table in enumerate(tables):
            assert lookup(post, list(table), [b] * len(table)) == list(table.values())


def test_read_ngram_posterior_files_default_first_id(tmp_path):
    write_posterior_file(tmp_path / "1.post", {(3,): 0.5, (3, 4): 0.25})
    write_posterior_file(tmp_path / "2.post", {(-1, 7): 1.0})
    tables = read_ngram_posterior_files(str(tmp_path / "%d.post"), num_sentences=2)
    assert tables == [{(3,): 0.5, (3, 4): 0.25}, {(-1, 7): 1.0}]


POSTERIOR_ERRORS = {
    "missing colon": "3 4 0.5",
    "non-integer token": "3 x : 0.5",
    "float token": "3 4.5 : 0.5",
    "bad posterior": "3 4 : high",
    "nan posterior": "3 4 : nan",
    "inf posterior": "3 4 : inf",
    "no n-gram": " : 0.5",
    "two posteriors": "3 4 : 0.5 0.7",
    "no posterior": "3 4 :",
}


@pytest.mark.parametrize("case", sorted(POSTERIOR_ERRORS))
def test_read_ngram_posterior_files_names_the_bad_line(case, tmp_path):
    path = tmp_path / "post.7"
    path.write_text(f"3 : 0.5\n{POSTERIOR_ERRORS[case]}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:2:") + ".*w1 \\.\\.\\. wn"):
        read_ngram_posterior_files([path])


def test_read_ngram_posterior_files_other_errors(tmp_path):
    path = tmp_path / "post.1"
    path.write_text("3 4 : 0.5\n\n3 5 : 0.1\n 3   4 : 0.2\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(f"{path}:4:") + " n-gram 3 4 repeats"):
        read_ngram_posterior_files([tmp_path / "post.1"])
    with pytest.raises(ValueError, match="needs '%d' and num_sentences="):
        read_ngram_posterior_files(str(tmp_path / "post.1"), num_sentences=1)
    with pytest.raises(ValueError, match="needs '%d' and num_sentences="):
        read_ngram_posterior_files(str(tmp_path / "post.%d"))


def test_write_nbest_reads_back(tmp_path):
    texts = [["3 4 5", "3 4"], [], ["7"]]
    scores = [[-0.25, -1.5], [], [-2.0]]
    path = tmp_path / "nbest.txt"
    with open(path, "w", encoding="utf-8") as stream:
        write_nbest(stream, texts, scores)
    assert path.read_text(encoding="utf-8").splitlines()[0] == "0 ||| 3 4 5 |||  ||| -0.250000"
    evidence = read_nbest(path, num_sentences=3)
    assert evidence.lengths.tolist() == [[3, 2], [0, 0], [1, 0]]
    assert evidence.scores.tolist() == [[-0.25, -1.5], [-INF, -INF], [-2.0, -INF]]
    assert evidence.ids[2].tolist() == [[7, PAD_ID, PAD_ID], [PAD_ID] * 3]  # the convention
    with pytest.raises(ValueError, match="sentence 0 has 2 hypotheses but 1 scores"):
        write_nbest(io.StringIO(), [["a", "b"]], [[0.0]])
    with pytest.raises(ValueError, match="texts has 1 sentences but scores 2"):
        write_nbest(io.StringIO(), [["a"]], [[0.0], [1.0]])


@pytest.mark.parametrize("reader", ["nbest", "posteriors"])
def test_binary_evidence_files_name_the_file(tmp_path, reader):
    path = tmp_path / "evidence1"
    path.write_bytes(b"0 ||| 1 2 ||| ||| -1.0\n\x89PNG\xa7\x00\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 2: invalid UTF-8")):
        if reader == "nbest":
            read_nbest(path)
        else:
            read_ngram_posterior_files(str(tmp_path / "evidence%d"), num_sentences=1)
    with pytest.raises(OSError, match=re.escape(f"cannot read {tmp_path / 'missing'}")):
        read_nbest(tmp_path / "missing")
