"""BLEU, chrF and ROUGE as TRL reward functions (``GRPOTrainer(reward_funcs=[...])``).

TRL 1.x calls each reward function as ``reward_func(prompts=..., completions=...,
completion_ids=..., **dataset_columns, trainer_state=...)`` with ``completion_ids`` a ragged
``list[list[int]]`` that ends with the first EOS, ``completions`` the decoded text (a string, or
for conversational data a list of messages whose last ``content`` is the text), and every other
dataset column repeated once per generation.

:func:`bleu_reward` scores token IDs (TensorBLEU's dense reward); :func:`chrf_reward` scores the
completion text by characters, as sacrebleu's chrF; :func:`rouge_reward` scores the text as
``rouge-score`` does, or token IDs when the references are IDs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import torch

from tensortext._checks import DeviceLike, brief, check_choice, resolve_device
from tensortext.bleu import BleuConfig, sentence_bleu
from tensortext.padded import pad_ragged, pad_ragged_refs

if TYPE_CHECKING:
    from tensortext.chrf import ChrfConfig

__all__ = ["bleu_reward", "chrf_reward", "rouge_reward"]

_ROUGE_MEASURES = ("precision", "recall", "fmeasure")


class _Encoder(Protocol):
    def encode(self, text: str, /) -> list[int]: ...


def bleu_reward(
    ref_column: str = "reference",
    *,
    tokenizer: _Encoder | Callable[[str], list[int]] | None = None,
    eos_id: int | None = None,
    config: BleuConfig | None = None,
    device: DeviceLike | Literal["auto"] | None = "auto",
) -> Callable[..., list[float]]:
    """Makes a TRL reward function: per-completion token-ID BLEU against a dataset column.

    Args:
        ref_column: dataset column with the references of each prompt. Each entry is one
            reference or a list of them, as token IDs (``list[int]``, a 1-D tensor) or as text
            (``str``, encoded with ``tokenizer``).
        tokenizer: turns reference text into IDs: an object with ``encode`` (a Hugging Face
            tokenizer is called with ``add_special_tokens=False``) or a callable. Needed only
            for text references; its ``eos_token_id`` is the default ``eos_id``.
        eos_id: a completion's trailing ``eos_id`` is dropped before scoring (TRL's
            completions include the first EOS; references usually don't).
        config: the scoring options (:class:`~tensortext.bleu.BleuConfig`); default
            ``BleuConfig()``: sacrebleu's sentence BLEU with ``exp`` smoothing, float32.
        device: where to score, under the package's device rule: ``"auto"`` (the default)
            is CUDA when available, else the CPU; ``None`` is the CPU.

    Returns:
        ``reward_func(completion_ids, **kwargs) -> list[float]`` (named ``bleu``), scores in 0..1.

    Raises:
        TypeError: ``config`` is not a ``BleuConfig``. ValueError: a bad ``device``.

    Example:
        >>> reward = bleu_reward("reference", device=None)
        >>> reward(completion_ids=[[5, 6, 7, 8]], reference=[[5, 6, 7, 8]])
        [1.0]
        >>> nltk = bleu_reward(config=BleuConfig(compat="nltk", smooth_method="method1"))
    """
    if config is None:
        config = BleuConfig()
    elif not isinstance(config, BleuConfig):
        raise TypeError(f"config must be a BleuConfig or None, got {type(config).__name__}")
    if eos_id is None and tokenizer is not None:
        eos_id = getattr(tokenizer, "eos_token_id", None)
    target = resolve_device(device)
    scoring = config

    def bleu(completion_ids: Sequence[Sequence[int]] | None = None, **kwargs: Any) -> list[float]:
        references = _column(ref_column, completion_ids, kwargs)
        hyps = [_strip_eos(list(map(int, ids)), eos_id) for ids in completion_ids or ()]
        refs = [_reference_set(entry, tokenizer, ref_column) for entry in references]
        scores = sentence_bleu(
            pad_ragged(hyps, device=target),
            pad_ragged_refs(refs, device=target),
            config=scoring,
        )
        return [float(s) for s in scores.tolist()]  # the one host copy: TRL wants floats

    return bleu


def _column(
    ref_column: str, completion_ids: Sequence[object] | None, kwargs: dict[str, Any]
) -> Sequence[object]:
    """The references of a call, checked against the completions."""
    if completion_ids is None:
        raise ValueError("the reward function needs completion_ids (TRL passes them)")
    if ref_column not in kwargs:
        columns = sorted(k for k in kwargs if k not in ("prompts", "completions"))
        raise ValueError(
            f"no dataset column {ref_column!r} among {columns}; pass "
            "bleu_reward(ref_column=<the column with the references>)"
        )
    references: Sequence[object] = kwargs[ref_column]
    if len(references) != len(completion_ids):
        raise ValueError(
            f"{len(completion_ids)} completions but {len(references)} entries in "
            f"{ref_column!r}; they must align one to one"
        )
    return references


def _strip_eos(ids: list[int], eos_id: int | None) -> list[int]:
    return ids[:-1] if eos_id is not None and ids and ids[-1] == eos_id else ids


def _reference_set(entry: object, tokenizer: object, column: str) -> list[list[int]]:
    """One dataset entry as a list of references (ID lists)."""
    if isinstance(entry, torch.Tensor):
        entry = entry.tolist()
    if isinstance(entry, str):
        return [_encode(entry, tokenizer, column)]
    if not isinstance(entry, Sequence):
        raise TypeError(
            f"entries of {column!r} must be token-ID lists or text, got {type(entry).__name__}"
        )
    if all(isinstance(t, int) and not isinstance(t, bool) for t in entry):
        return [list(entry)]  # one reference as IDs (an empty list is an empty reference)
    refs = []
    for ref in entry:
        if isinstance(ref, torch.Tensor):
            ref = ref.tolist()
        if isinstance(ref, str):
            refs.append(_encode(ref, tokenizer, column))
        elif isinstance(ref, Sequence) and all(
            isinstance(t, int) and not isinstance(t, bool) for t in ref
        ):
            refs.append(list(ref))
        else:
            raise TypeError(
                f"a reference in {column!r} must be a token-ID list or text, got {ref!r:.60}"
            )
    return refs


def _encode(text: str, tokenizer: object, column: str) -> list[int]:
    if tokenizer is None:
        raise ValueError(
            f"{column!r} holds text; pass a tokenizer (bleu_reward(tokenizer=...)) to turn it "
            "into token IDs"
        )
    encode = getattr(tokenizer, "encode", None)
    if encode is not None:
        try:
            return list(encode(text, add_special_tokens=False))
        except TypeError:  # not a Hugging Face tokenizer
            return list(encode(text))
    if callable(tokenizer):
        return list(tokenizer(text))
    raise TypeError("tokenizer must have an encode method or be callable")


def chrf_reward(
    ref_column: str = "reference",
    *,
    config: ChrfConfig | None = None,
    device: DeviceLike | Literal["auto"] | None = "auto",
) -> Callable[..., list[float]]:
    """Makes a TRL reward function: per-completion chrF (or chrF++) of the completion text.

    Args:
        ref_column: dataset column with the reference text of each prompt: a string, or a list
            of strings (several references; the best one counts, as in sacrebleu).
        config: the chrF options (:class:`~tensortext.chrf.ChrfConfig`); default sacrebleu's
            chrF (``char_order=6, word_order=0, beta=2``); ``word_order=2`` is chrF++.
        device: where to score: ``"auto"`` (the default) is CUDA when available, ``None`` the CPU.

    Returns:
        ``reward_func(completions, **kwargs) -> list[float]`` (named ``chrf``), scores in 0..1:
        sacrebleu's ``CHRF(...).sentence_score(completion, refs).score / 100``.

    Raises:
        TypeError: ``config`` is not a ``ChrfConfig``. ValueError: a bad ``device``.

    Example:
        >>> reward = chrf_reward("reference", device=None)
        >>> reward(completions=["the cat sat"], reference=["the cat sat"])
        [1.0]
    """
    from tensortext.chrf import ChrfConfig, sentence_chrf

    if config is None:
        config = ChrfConfig()
    elif not isinstance(config, ChrfConfig):
        raise TypeError(f"config must be a ChrfConfig or None, got {type(config).__name__}")
    target = resolve_device(device)
    scoring = config

    def chrf(completions: Sequence[object] | None = None, **kwargs: Any) -> list[float]:
        texts = _completion_texts(completions)
        refs = [_text_references(entry, ref_column) for entry in _column(ref_column, texts, kwargs)]
        scores = sentence_chrf(texts, refs, config=scoring, device=target)
        return [float(s) for s in scores.tolist()]  # the one host copy: TRL wants floats

    return chrf


def rouge_reward(
    ref_column: str = "reference",
    *,
    rouge_type: str = "rougeL",
    measure: Literal["precision", "recall", "fmeasure"] = "fmeasure",
    use_stemmer: bool = False,
    eos_id: int | None = None,
    device: DeviceLike | Literal["auto"] | None = "auto",
) -> Callable[..., list[float]]:
    """Makes a TRL reward function: per-completion ROUGE of one type and measure.

    Text references score the completion text with ``rouge-score``'s default tokenizer
    (lowercase, ``[a-z0-9]`` words, nltk's Porter stemmer with ``use_stemmer``); token-ID
    references score ``completion_ids`` (a trailing ``eos_id`` dropped), the TensorBLEU-style
    reward. Several references: the one with the best F-measure counts, as in ``score_multi``.

    Args:
        ref_column: dataset column with each prompt's reference(s), text or token IDs.
        rouge_type: ``"rouge1"`` .. ``"rouge9"`` or ``"rougeL"``.
        measure: ``"fmeasure"`` (the default), ``"precision"`` or ``"recall"``.
        use_stemmer: rouge-score's option (text only; needs nltk).
        eos_id: dropped from the end of each completion's IDs (ID references only).
        device: where to score: ``"auto"`` (the default) is CUDA when available, ``None`` the CPU.

    Returns:
        ``reward_func(completions, completion_ids, **kwargs) -> list[float]`` (named ``rouge``),
        scores in 0..1.

    Raises:
        ValueError: an unknown ``rouge_type`` or ``measure``, or a bad ``device``.

    Example:
        >>> reward = rouge_reward("reference", device=None)
        >>> reward(completions=["The cat sat."], reference=["the cat sat"])
        [1.0]
    """
    from tensortext.rouge import RougeConfig, sentence_rouge

    config = RougeConfig(rouge_types=(rouge_type,), use_stemmer=use_stemmer)
    check_choice("measure", measure, _ROUGE_MEASURES)
    column = _ROUGE_MEASURES.index(measure)
    target = resolve_device(device)

    def rouge(
        completions: Sequence[object] | None = None,
        completion_ids: Sequence[Sequence[int]] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        rows = completions if completions is not None else completion_ids
        references = _column(ref_column, rows, kwargs)
        # Text or IDs is decided once per call, from the references that hold something (an
        # empty list is "no reference" either way).
        if any(_has_text(entry) for entry in references):
            texts = _completion_texts(completions)
            refs = [_text_references(entry, ref_column) for entry in references]
            scores = sentence_rouge(texts, refs, config=config, device=target)
        else:
            if completion_ids is None:
                raise ValueError("token-ID references need completion_ids (TRL passes them)")
            hyps = [_strip_eos(list(map(int, ids)), eos_id) for ids in completion_ids]
            id_refs = [_reference_set(entry, None, ref_column) for entry in references]
            scores = sentence_rouge(
                pad_ragged(hyps, device=target),
                pad_ragged_refs(id_refs, device=target),
                config=config,
            )
        return [float(s) for s in scores[:, 0, column].tolist()]  # the one host copy

    return rouge


def _completion_texts(completions: Sequence[object] | None) -> list[str]:
    """TRL's ``completions`` as strings: plain text, or the last message's ``content``."""
    if completions is None:
        raise ValueError("the reward function needs completions (TRL passes them)")
    texts = []
    for completion in completions:
        if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
            completion = completion[-1].get("content")
        if not isinstance(completion, str):
            raise TypeError(
                "completions must be strings or lists of chat messages with a 'content' string, "
                f"got {brief(completion)}"
            )
        texts.append(completion)
    return texts


def _has_text(entry: object) -> bool:
    """A dataset entry that holds reference text: a string, or a list with one."""
    if isinstance(entry, str):
        return True
    return isinstance(entry, (list, tuple)) and any(isinstance(ref, str) for ref in entry)


def _text_references(entry: object, column: str) -> list[str | None]:
    """One dataset entry as a list of reference strings (``None``: a missing reference)."""
    if isinstance(entry, str):
        return [entry]
    if isinstance(entry, (list, tuple)) and all(isinstance(r, str) or r is None for r in entry):
        return list(entry)  # [] or all None: no reference, which scores 0
    raise TypeError(
        f"entries of {column!r} must be text or lists of text (None for a missing reference), "
        f"got {brief(entry)}"
    )
