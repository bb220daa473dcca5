"""Which encoding an OpenAI model uses: tiktoken's ``encoding_for_model`` and
``encoding_name_for_model``, over the same model names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tensortext.bpe.registry import get_encoding

if TYPE_CHECKING:
    from tensortext.bpe.core import Encoding

__all__ = [
    "MODEL_PREFIX_TO_ENCODING",
    "MODEL_TO_ENCODING",
    "encoding_for_model",
    "encoding_name_for_model",
]

_O200K, _CL100K, _P50K, _R50K = "o200k_base", "cl100k_base", "p50k_base", "r50k_base"

# Names that map exactly, then prefixes (dated or fine-tuned versions), as tiktoken 0.14 lists them.
MODEL_TO_ENCODING: dict[str, str] = {
    **dict.fromkeys(["o1", "o3", "o4-mini", "gpt-5", "gpt-4.1", "gpt-4o"], _O200K),
    **dict.fromkeys(["gpt-4", "gpt-3.5-turbo", "gpt-3.5", "gpt-35-turbo"], _CL100K),
    **dict.fromkeys(["davinci-002", "babbage-002"], _CL100K),
    **dict.fromkeys(
        ["text-embedding-ada-002", "text-embedding-3-small", "text-embedding-3-large"], _CL100K
    ),
    **dict.fromkeys(["text-davinci-003", "text-davinci-002"], _P50K),
    **dict.fromkeys(
        ["text-davinci-001", "text-curie-001", "text-babbage-001", "text-ada-001"], _R50K
    ),
    **dict.fromkeys(["davinci", "curie", "babbage", "ada"], _R50K),
    **dict.fromkeys(
        ["code-davinci-002", "code-davinci-001", "code-cushman-002", "code-cushman-001"], _P50K
    ),
    **dict.fromkeys(["davinci-codex", "cushman-codex"], _P50K),
    **dict.fromkeys(["text-davinci-edit-001", "code-davinci-edit-001"], "p50k_edit"),
    **dict.fromkeys(
        [
            f"text-{use}-{size}-{kind}001"
            for use, kinds in (("similarity", [""]), ("search", ["doc-"]))
            for size in ("davinci", "curie", "babbage", "ada")
            for kind in kinds
        ],
        _R50K,
    ),
    **dict.fromkeys(["code-search-babbage-code-001", "code-search-ada-code-001"], _R50K),
    **dict.fromkeys(["gpt2", "gpt-2"], "gpt2"),
}

MODEL_PREFIX_TO_ENCODING: dict[str, str] = {
    **dict.fromkeys(["o1-", "o3-", "o4-mini-", "gpt-5", "gpt-4.5-", "gpt-4.1-"], _O200K),
    **dict.fromkeys(["chatgpt-4o-", "gpt-4o-"], _O200K),
    **dict.fromkeys(["gpt-4-", "gpt-3.5-turbo-", "gpt-35-turbo-"], _CL100K),
    "gpt-oss-": "o200k_harmony",
    "ft:gpt-4o": _O200K,
    **dict.fromkeys(["ft:gpt-4", "ft:gpt-3.5-turbo", "ft:davinci-002", "ft:babbage-002"], _CL100K),
}


def encoding_name_for_model(model_name: str) -> str:
    """The name of the encoding that ``model_name`` uses (an exact name, else a known prefix).

    Raises:
        KeyError: for a model name that matches neither (as tiktoken).
    """
    if model_name in MODEL_TO_ENCODING:
        return MODEL_TO_ENCODING[model_name]
    for prefix, name in MODEL_PREFIX_TO_ENCODING.items():
        if model_name.startswith(prefix):
            return name
    raise KeyError(
        f"Could not automatically map {model_name} to a tokeniser. Please use "
        "`tensortext.get_encoding` to explicitly get the tokeniser you expect."
    )


def encoding_for_model(model_name: str) -> Encoding:
    """The encoding that ``model_name`` uses (:func:`encoding_name_for_model`, loaded)."""
    return get_encoding(encoding_name_for_model(model_name))
