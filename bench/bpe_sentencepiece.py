"""``bench_bpe.py --sentencepiece``: SentencePiece BPE and Tekken against their references.

Mistral 7B's ``tokenizer.model.v1`` (Llama-2's settings): ``sentencepiece``'s batch ``encode``,
``tokenizers`` on the ``tokenizer.json`` ``transformers`` would write (merges by score), and ours
(``Encoding.from_sentencepiece``: ``encode_ordinary_batch`` lists, ``encode_batch_to_numpy``;
``ours_hf``: ``Encoding.from_hf_json`` on that file, the row ``tokenizers`` is checked against, as
``tokenizers`` matches ``<s>`` in the text where ``sentencepiece`` does not).
Tekken (``tekken_240911.json``): mistral-common's ``Tekkenizer.encode`` text by text, tiktoken
built from the same ranks and pattern (its IDs are ours less the 1,000 special tokens), quicktok
with the file imported (``quicktok.import_tokenizer``), and ours (``Encoding.from_tekken``).

Every encoder runs on ``--threads`` threads where it takes a count, on 1024 texts of 4 KB of
each ``--text`` kind; every output is checked against the reference's, row by row. Load time:
the file read and one ``encode``, in a fresh process, median of three.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import common

from tensortext.padded import FlatArrays

MODEL = "tokenizer.model.v1"
# Rows checked against another row instead of the reference: tokenizers against ours on its file.
PAIRED = {"hf_tokenizers": "ours_hf", "ours_hf": "hf_tokenizers"}
TEKKEN = "tekken_240911.json"
LOAD = """
import sys, time
sys.path.insert(0, {tests!r})
which, path = sys.argv[1], sys.argv[2]
if which.startswith("ours"):
    from tensortext.bpe import Encoding
elif which == "sentencepiece":
    import sentencepiece
elif which == "hf_tokenizers":
    import tokenizers
else:
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
start = time.perf_counter()
if which == "ours_sentencepiece":
    Encoding.from_sentencepiece(path).encode("hello world")
elif which == "ours_tekken":
    Encoding.from_tekken(path).encode("hello world")
elif which == "sentencepiece":
    sentencepiece.SentencePieceProcessor(model_file=path).encode("hello world")
elif which == "hf_tokenizers":
    tokenizers.Tokenizer.from_file(path).encode("hello world")
else:
    Tekkenizer.from_file(path).encode("hello world", bos=False, eos=False)
print(time.perf_counter() - start)
"""


def _rows(value: Any) -> list[list[int]]:
    """Token lists from a list of lists, numpy ``FlatArrays`` or quicktok's
    ``(flat, offsets)``."""
    if isinstance(value, FlatArrays):
        return value.tolist()
    if isinstance(value, tuple) and len(value) == 2:
        flat, offsets = (np.asarray(part) for part in value)
        return [flat[a:b].tolist() for a, b in itertools.pairwise(offsets)]
    return [list(map(int, row)) for row in value]


def _point(
    label: str,
    texts: list[str],
    fns: dict[str, Callable[[], Any]],
    expected: Callable[[dict[str, Any]], list[list[int]]],
    shift: dict[str, int],
    args: Any,
    dev: Any,
) -> dict[str, Any]:
    """MB/s of each encoder on ``texts``; ``identical``: its rows equal ``expected`` (after
    adding ``shift[key]`` to its IDs)."""
    nbytes = sum(len(text.encode("utf-8")) for text in texts)
    timings, errors = common.time_interleaved(
        fns, warmup=1, repeat=args.repeat, device=dev, budget_s=args.budget
    )
    values = {key: timing.value for key, timing in timings.items()}
    reference = expected(values)
    row: dict[str, Any] = {"file": label, "bytes": nbytes, "mb_per_s": {}, "identical": {}}
    for key in fns:
        if key in errors:
            row["mb_per_s"][key] = repr(errors[key])
            continue
        row["mb_per_s"][key] = nbytes / timings[key].median_s / 1e6
        rows = _rows(values[key])
        add = shift.get(key, 0)
        against = reference if key not in PAIRED else _rows(values[PAIRED[key]])
        row["identical"][key] = [[i + add for i in r] for r in rows] == against
    print(f"{label:40s} " + "  ".join(
        f"{key} {mbps:.2f}" if isinstance(mbps, float) else f"{key} {mbps}"
        for key, mbps in row["mb_per_s"].items()
    ) + f"  identical {row['identical']}", flush=True)  # fmt: skip
    return row


def _sentencepiece_fns(texts: list[str], threads: int) -> dict[str, Callable[[], Any]]:
    import sentencepiece
    import tokenizers
    from oracles.sentencepiece import hf_json_of, mistral_file

    from tensortext.bpe import Encoding

    path = mistral_file(MODEL)
    reference = sentencepiece.SentencePieceProcessor(model_file=str(path))
    with tempfile.TemporaryDirectory() as folder:
        json_path = Path(folder) / "tokenizer.json"
        json_path.write_text(json.dumps(hf_json_of(path, "legacy")), encoding="utf-8")
        hf = tokenizers.Tokenizer.from_file(str(json_path))
        ours_hf = Encoding.from_hf_json(json_path)
    ours = Encoding.from_sentencepiece(path)
    return {
        "sentencepiece": lambda: reference.encode(texts, num_threads=threads),
        "hf_tokenizers": lambda: [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)],
        "ours_host": lambda: ours.encode_ordinary_batch(texts, num_threads=threads),
        "ours_numpy": lambda: ours.encode_batch_to_numpy(
            texts, num_threads=threads, disallowed_special=()
        ),
        # tokenizers matches added tokens (<s>) in the text: checked against ours doing so
        "ours_hf": lambda: ours_hf.encode_batch(texts, num_threads=threads, allowed_special="all"),
    }


def _tekken_fns(
    texts: list[str], threads: int
) -> tuple[dict[str, Callable[[], Any]], dict[str, int], dict[str, str]]:
    """The Tekken encoders, the shift of each one's IDs to ours, and the ones unavailable."""
    import tiktoken
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer
    from oracles.sentencepiece import mistral_file

    from tensortext.bpe import Encoding
    from tensortext.bpe.patterns import TEKKEN_PATTERN

    path = mistral_file(TEKKEN)
    ours = Encoding.from_tekken(path)
    special = ours.n_vocab - len(ours._mergeable_ranks)
    ranks = {token: rank - special for token, rank in ours._mergeable_ranks.items()}
    reference = Tekkenizer.from_file(path)
    plain = tiktoken.Encoding("tekken", pat_str=TEKKEN_PATTERN, mergeable_ranks=ranks,
                              special_tokens={})  # fmt: skip
    fns: dict[str, Callable[[], Any]] = {
        "mistral_common": lambda: [reference.encode(t, bos=False, eos=False) for t in texts],
        "tiktoken": lambda: plain.encode_ordinary_batch(texts, num_threads=threads),
        "ours_host": lambda: ours.encode_ordinary_batch(texts, num_threads=threads),
        "ours_numpy": lambda: ours.encode_batch_to_numpy(
            texts, num_threads=threads, disallowed_special=()
        ),
    }
    missing: dict[str, str] = {}
    try:
        import quicktok

        folder = tempfile.mkdtemp()
        quicktok.import_tokenizer(str(path), "tekken_bench", data_dir=folder)
        quick = quicktok.get_encoding("tekken_bench", data_dir=folder)
        fns["quicktok"] = lambda: quick.encode_batch(texts, threads=threads)
    except Exception as error:  # an optional baseline: say why, go on
        missing["quicktok"] = f"{type(error).__name__}: {error}"
    shift = {"tiktoken": special}
    return fns, shift, missing


def _load_times(tests: Path) -> dict[str, float]:
    from oracles.sentencepiece import mistral_file

    model, tekken = str(mistral_file(MODEL)), str(mistral_file(TEKKEN))
    cases = {
        "ours_sentencepiece": model,
        "sentencepiece": model,
        "ours_tekken": tekken,
        "mistral_common_tekken": tekken,
    }
    times = {}
    for which, path in cases.items():
        command = [sys.executable, "-c", LOAD.format(tests=str(tests)), which, path]
        runs = [subprocess.run(command, capture_output=True, text=True, check=True) for _ in "abc"]
        times[which] = sorted(float(done.stdout) for done in runs)[1]
    print(f"load + first encode, s: {times}", flush=True)
    return times


def run(
    streams: dict[str, bytes],
    make_batch: Callable[[bytes, int, int, int], list[str]],
    args: Any,
    dev: Any,
    threads: int,
    tests: Path,
) -> dict[str, Any]:
    """The rows of ``bpe-sp-<device>.json``."""
    rows = []
    for text, stream in streams.items():
        texts = make_batch(stream, 1024, 4096, 4096 * 7919)
        fns = _sentencepiece_fns(texts, threads)
        by_sentencepiece = lambda values: _rows(values["sentencepiece"])  # noqa: E731
        rows.append(_point(f"{MODEL} ({text})", texts, fns, by_sentencepiece, {}, args, dev))
        tekken, shift, missing = _tekken_fns(texts, threads)
        row = _point(f"{TEKKEN} ({text})", texts, tekken,
                     lambda values: _rows(values["mistral_common"]), shift, args, dev)  # fmt: skip
        row["unavailable"] = missing
        rows.append(row)
    return {"rows": rows, "load_s": _load_times(tests)}


def plot(rows: list[dict[str, Any]], title: str, path: Path) -> Path:
    """Bars of MB/s per encoder, one group per file and text."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(rows), figsize=(4 * len(rows), 4), squeeze=False)
    for axis, row in zip(axes[0], rows, strict=True):
        speeds = {k: v for k, v in row["mb_per_s"].items() if isinstance(v, float)}
        axis.bar(list(speeds), list(speeds.values()), color="tab:blue")
        axis.set_title(row["file"], fontsize=9)
        axis.set_ylabel("MB/s")
        axis.tick_params(axis="x", labelrotation=45, labelsize=8)
    fig.suptitle(title, fontsize=10)
    return common.save_figure(fig, path)
