"""The README's Hugging Face ``datasets`` one-liner: ``ds.map`` with ``encode_ordinary_batch``
gives tiktoken's IDs, works under ``with_format("torch")``, and fingerprints the same in every
process (so ``datasets`` reuses its cache)."""

from __future__ import annotations

import json
import subprocess
import sys

from oracles.bpe import tiktoken_reference

TEXTS = ["hello world", "", "日本語のテキスト 😀", "def f(x):\n    return x\n", "It's 2026."]
PROGRAM = f"""
import json, datasets, tensortext
enc = tensortext.get_encoding("o200k_base")
ds = datasets.Dataset.from_dict({{"text": {TEXTS!r}}})
ds = ds.map(lambda batch: {{"input_ids": enc.encode_ordinary_batch(batch["text"])}}, batched=True)
torch_rows = ds.with_format("torch")["input_ids"]
print(json.dumps({{"fingerprint": ds._fingerprint, "ids": [list(r) for r in ds["input_ids"]],
                  "torch": [row.tolist() for row in torch_rows]}}))
"""


def test_datasets_map_one_liner() -> None:
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", PROGRAM], capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    expected = tiktoken_reference("o200k_base").encode_ordinary_batch(TEXTS)
    assert runs[0]["ids"] == expected
    assert runs[0]["torch"] == expected
    assert runs[0]["fingerprint"] == runs[1]["fingerprint"]
