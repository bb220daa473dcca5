"""SentencePiece models for the ``Encoding.from_sentencepiece`` tests: the ``.model`` files that
mistral-common ships, and small BPE models trained here, one per combination of settings.

Each small model is trained in memory (``model_writer=io.BytesIO()``) on :data:`CORPUS`, a few
KB of English, German, French, Chinese, Japanese, Korean, Arabic, Russian, Greek, Hindi, emoji
and code, with ``normalization_rule_name="identity"`` (the only normalizer tensortext reads),
and cached: :func:`trained` returns the same bytes for the same settings.
"""

from __future__ import annotations

import io
from functools import cache
from pathlib import Path
from typing import Any

CORPUS_LINES = [
    "The quick brown fox jumps over the lazy dog. It's 9 o'clock: 1234 apples, 56789 pears.",
    "Sphinx of black quartz, judge my vow! Pack my box with five dozen liquor jugs.",
    "In 2024, the tokenizer processed 1,000,000 sentences at 3.14 ms each (±0.5%).",
    "Der schnelle braune Fuchs springt über den faulen Hund. Größe, Straße, Äpfel, Öl.",
    "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
    "Voix ambiguë d'un cœur qui, au zéphyr, préfère les jattes de kiwis. Où est-il ?",
    "你好\uff0c世界\uff01今天天气很好。我们一起去公园散步吧。中文分词是一个有趣的问题。",
    "こんにちは世界。東京は日本の首都です。カタカナとひらがなと漢字を使います。",
    "안녕하세요 세계. 한국어 문장을 토큰화합니다.",
    "مرحبا بالعالم. اللغة العربية جميلة جدا، وهي تكتب من اليمين إلى اليسار.",
    "Привет, мир! Съешь же ещё этих мягких французских булок, да выпей чаю.",
    "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. नमस्ते दुनिया, यह हिन्दी है।",
    "Emoji: 😀 😃 👍🏽 ❤️ 🇫🇷 👨‍👩‍👧 — ok… “quotes” \u2018single\u2019 «guillemets».",
    "def tokenize(text: str) -> list[int]:\n\treturn [ord(c) for c in text]  # ids\n",
    "if __name__ == '__main__':\n    print(tokenize('hello world'))\n"
    "    x = {'a': 1, 'b': [2, 3]}\n",
    "    indented    with    runs   of   spaces  and\ttabs\t\tand\n\nnewlines\r\n",
    "<tool> calls <tool_call> and <tool_result> tags; [REF] and [REF_DOC] markers in text.",
    "abc abcd bcd cd abcdef the theme there then them these ab bc",
]
CORPUS = CORPUS_LINES * 8
"""The training sentences (repeated: BPE needs counts above one to merge)."""

# Trainer settings every small model shares; those of a test are added to them.
BASE_SETTINGS: dict[str, Any] = {
    "model_type": "bpe",
    "vocab_size": 900,
    "normalization_rule_name": "identity",
    "character_coverage": 1.0,
    "byte_fallback": True,
    "split_digits": True,
    "add_dummy_prefix": True,
    "remove_extra_whitespaces": False,
    "allow_whitespace_only_pieces": True,
    "hard_vocab_limit": False,
    "max_sentence_length": 100_000,
    "num_threads": 1,
    "minloglevel": 2,
    "seed_sentencepiece_size": 10_000,
}

MODELS: dict[str, dict[str, Any]] = {
    # Mistral's settings (byte fallback, split digits, a dummy prefix, spaces kept).
    "mistral-like": {"control_symbols": ["[INST]", "[/INST]"]},
    "no-byte-fallback": {"byte_fallback": False, "vocab_size": 600},
    "no-byte-fallback-coverage": {
        "byte_fallback": False,
        "vocab_size": 300,
        "character_coverage": 0.98,  # rare characters are left out: <unk>
    },
    "coverage-byte-fallback": {"character_coverage": 0.98, "vocab_size": 700},
    "no-split-digits": {"split_digits": False},
    "no-dummy-prefix": {"add_dummy_prefix": False},
    "remove-extra-whitespaces": {"remove_extra_whitespaces": True},
    "remove-extra-whitespaces-no-prefix": {
        "remove_extra_whitespaces": True,
        "add_dummy_prefix": False,
    },
    "no-whitespace-pieces": {"allow_whitespace_only_pieces": False},
    "suffix": {"treat_whitespace_as_suffix": True},
    "suffix-no-prefix": {"treat_whitespace_as_suffix": True, "add_dummy_prefix": False},
    "suffix-remove-whitespaces": {
        "treat_whitespace_as_suffix": True,
        "remove_extra_whitespaces": True,
        "byte_fallback": False,
        "vocab_size": 600,
    },
    "no-split-by-whitespace": {"split_by_whitespace": False},
    "user-symbols": {
        # Prefixes of each other and overlapping: sentencepiece takes the longest match,
        # leftmost first.
        "user_defined_symbols": [
            "<tool>",
            "<tool_call>",
            "<tool_result>",
            "[REF]",
            "[REF_DOC]",
            "abc",
            "abcd",
            "bcd",
            "the",
            "12",
            "\u2603",  # ☃, not in the corpus
        ],
        "control_symbols": ["[INST]", "[/INST]"],
    },
    "user-symbols-no-byte-fallback": {
        "user_defined_symbols": ["<tool>", "<tool_call>", "abc", "bcd", "\u2603"],
        "byte_fallback": False,
        "vocab_size": 600,
    },
    "user-symbols-with-metaspace": {
        # User-defined pieces holding U+2581: they match the text's spaces, and decoding
        # drops the leading one of the first piece as for any other piece.
        "user_defined_symbols": ["\u2581x", "a\u2581b", "\u2581\u2581"],
    },
    "user-symbols-suffix": {
        "user_defined_symbols": ["<tool>", "<tool_call>", "abc", "bcd"],
        "treat_whitespace_as_suffix": True,
    },
    "control-symbols": {
        "control_symbols": ["[INST]", "[/INST]", "<|im_start|>", "<|im_end|>", "<tool>"],
    },
    "no-bos-eos": {"bos_id": -1, "eos_id": -1},
    "reordered-ids": {
        "unk_id": 3,
        "bos_id": 0,
        "eos_id": 1,
        "pad_id": 2,
        "unk_piece": "<UNK>",
        "bos_piece": "<BOS>",
        "eos_piece": "</BOS>",
    },
    "unk-surface": {"unk_surface": "<?>", "byte_fallback": False, "vocab_size": 600},
    "small-vocab": {"vocab_size": 300, "byte_fallback": False},
    "large-vocab": {"vocab_size": 1500},
    "short-pieces": {"max_sentencepiece_length": 3},
}
"""Named trainer settings, each added to :data:`BASE_SETTINGS`."""


def trained(name: str, **overrides: Any) -> bytes:
    """The serialized ``ModelProto`` of :data:`MODELS` ``[name]`` (with ``overrides``)."""
    settings = {**BASE_SETTINGS, **MODELS[name], **overrides}
    return _train(tuple(sorted((key, _frozen(value)) for key, value in settings.items())))


def train(**settings: Any) -> bytes:
    """A model trained on :data:`CORPUS` with :data:`BASE_SETTINGS` and ``settings`` (cached)."""
    return _train(tuple(sorted((key, _frozen(value)) for key, value in
                               {**BASE_SETTINGS, **settings}.items())))  # fmt: skip


def _frozen(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


@cache
def _train(settings: tuple[tuple[str, Any], ...]) -> bytes:
    import sentencepiece as spm

    kwargs = {key: list(value) if isinstance(value, tuple) else value for key, value in settings}
    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(CORPUS), model_writer=writer, **kwargs)
    return writer.getvalue()


def processor(model: bytes) -> Any:
    """A ``sentencepiece.SentencePieceProcessor`` of a serialized model."""
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_proto=model)


def mistral_model_files() -> list[Path]:
    """The SentencePiece ``.model`` files mistral-common ships (v1, v2, v3, v7), sha256-checked
    (:mod:`oracles.sentencepiece`)."""
    from oracles.sentencepiece import MODEL_FILES, mistral_file

    return [mistral_file(name) for name in MODEL_FILES]


def model_proto(model: bytes) -> Any:
    """The parsed ``ModelProto`` of a serialized model (to read its settings and pieces)."""
    from sentencepiece import sentencepiece_model_pb2

    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model)
    return proto
