"""SentencePiece oracles: mistral-common's shipped model files (Apache-2.0), checked by sha256,
and ``tokenizer.json`` files written from a ``.model`` the way ``transformers`` converts one
(``LlamaTokenizerFast``), for ``tokenizers`` to run.

Files (installed by the ``dev`` extra; nothing is downloaded at test time), under
``mistral_common/data/``:

- ``tokenizer.model.v1``: Mistral 7B v0.1, 32,000 pieces, Llama-2's settings (``byte_fallback``,
  ``split_digits``, the identity normalizer, a dummy prefix).
- ``mistral_instruct_tokenizer_240216.model.v2``, ``..._240323.model.v3``, ``..._241114.model.v7``:
  32,768 pieces with control pieces; v3 and v7 with user-defined pieces.
- ``tekken_240718.json``, ``tekken_240911.json``: Tekken (150,000 ranks, 1,000 special tokens).
"""

from __future__ import annotations

import hashlib
from functools import cache
from pathlib import Path
from typing import Any

import mistral_common
import sentencepiece as spm

METASPACE = "\u2581"
MISTRAL_FILES = {
    "tokenizer.model.v1": "dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055",
    "mistral_instruct_tokenizer_240216.model.v2": (
        "37f00374dea48658ee8f5d0f21895b9bc55cb0103939607c8185bfd1c6ca1f89"
    ),
    "mistral_instruct_tokenizer_240323.model.v3": (
        "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33"
    ),
    "mistral_instruct_tokenizer_241114.model.v7": (
        "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a"
    ),
    "tekken_240718.json": "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516",
    "tekken_240911.json": "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316",
}
MODEL_FILES = [name for name in MISTRAL_FILES if ".model" in name]


@cache
def mistral_file(name: str) -> Path:
    """The path of one of mistral-common's files, its sha256 checked (a new release that
    changed it would change every expected ID)."""
    path = Path(mistral_common.__file__).parent / "data" / name
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == MISTRAL_FILES[name], f"{path}: sha256 {digest}, not the tested file's"
    return path


def hf_json_of(model_file: Path, layout: str, *, bos: bool = False) -> dict[str, Any]:
    """A ``tokenizer.json`` of a SentencePiece BPE ``model_file``, as ``transformers``'
    ``LlamaConverter`` writes it: the vocabulary, merges ordered by the merged piece's score,
    control and unknown pieces as special added tokens, ``byte_fallback`` and ``fuse_unk``, and
    ``layout``: ``"legacy"`` (``Prepend``/``Replace`` normalizers) or a ``Metaspace``
    ``prepend_scheme`` (``"first"``, ``"always"``, ``"never"``); with ``bos``, a post-processor
    putting ``<s>`` (ID 1) first."""
    processor = spm.SentencePieceProcessor(model_file=str(model_file))
    size = processor.get_piece_size()
    pieces = [processor.id_to_piece(i) for i in range(size)]
    vocab = {piece: i for i, piece in enumerate(pieces)}
    scores = {
        pieces[i]: processor.get_score(i)
        for i in range(size)
        if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i))
    }
    merges = []
    for merged, score in scores.items():
        local = [
            (merged[:cut], merged[cut:], score)
            for cut in range(1, len(merged))
            if merged[:cut] in vocab and merged[cut:] in vocab
        ]
        merges += sorted(local, key=lambda m: (vocab[m[0]], vocab[m[1]]))
    merges.sort(key=lambda m: (m[2], len(m[0]), len(m[1])), reverse=True)
    added = [
        {
            "id": i,
            "content": pieces[i],
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for i in range(size)
        if processor.is_control(i) or processor.is_unknown(i)
    ]
    normalizer: Any = None
    pre_tokenizer: Any = None
    replace = {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE}
    if layout == "legacy":
        prepend = {"type": "Prepend", "prepend": METASPACE}
        normalizer = {"type": "Sequence", "normalizers": [prepend, replace]}
    else:
        pre_tokenizer = {
            "type": "Metaspace",
            "replacement": METASPACE,
            "prepend_scheme": layout,
            "split": False,
        }
    decoders = [
        {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "},
        {"type": "ByteFallback"},
        {"type": "Fuse"},
    ]
    if layout != "never":
        decoders.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    post_processor = None
    if bos:
        post_processor = {
            "type": "TemplateProcessing",
            "single": [
                {"SpecialToken": {"id": "<s>", "type_id": 0}},
                {"Sequence": {"id": "A", "type_id": 0}},
            ],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        }
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": {"type": "Sequence", "decoders": decoders},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": "<unk>",
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": True,
            "byte_fallback": True,
            "ignore_merges": False,
            "vocab": vocab,
            "merges": [[left, right] for left, right, _ in merges],
        },
    }
