"""Host-side text preparation for the batched encoder: checks, special-token segments, code points.

These are C-speed passes over the Python strings (``join``, ``encode``, one regex scan); no
per-character Python loop.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Iterable, Mapping
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, NoReturn

from tensortext._checks import check_int

if TYPE_CHECKING:
    from tensortext.bpe.options import TextOptions
    from tensortext.bpe.vocab import Vocab

AllowedSpecial = Literal["all"] | AbstractSet[str]
DisallowedSpecial = Literal["all"] | Collection[str]
Segments = tuple[list[str], list[int], list[int]]
"""Texts prepared for an encoder (:func:`prepare_segments`): ``(segments, special, owner)``,
each segment's text (ordinary text between special tokens, normalized; ``""`` for a special
token), its special token's ID (``-1`` for ordinary text) and the index of its text, text by
text in order."""

__all__ = [
    "AllowedSpecial",
    "DisallowedSpecial",
    "Segments",
    "allowed_set",
    "as_bytes",
    "check_disallowed",
    "check_num_threads",
    "check_text",
    "check_texts",
    "prepare_segments",
    "raise_disallowed_special_token",
    "special_regex",
    "split_segments",
    "without_surrogates",
]


def check_text(text: object) -> str:
    if not isinstance(text, str):
        several = isinstance(text, list | tuple)
        hint = "; for several texts, call the batch method (encode_batch)" if several else ""
        raise TypeError(f"text must be str, got {type(text).__name__}{hint}")
    return text


def as_bytes(value: object, name: str) -> bytes:
    """``value`` (str or bytes-like) as bytes; lone surrogates pass through as in tiktoken."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="surrogatepass")
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise TypeError(f"{name} must be str or bytes, got {type(value).__name__}")


def check_texts(texts: object, name: str) -> list[str]:
    """``texts`` as a list: any iterable of ``str`` in order, as tiktoken takes (a list, a
    tuple, a pandas Series, a numpy string array, a generator).

    Not a ``str`` or bytes (their items are characters or ints), a set (no order to give the
    rows back in) or a mapping (its keys: ``batch["text"]`` was meant).
    """
    if isinstance(texts, str | bytes | bytearray | memoryview):
        raise TypeError(
            f"{name} must be a list (or any iterable) of str, got {type(texts).__name__}; "
            f"wrap one text in a list: [text]"
        )
    if isinstance(texts, AbstractSet | Mapping) or not isinstance(texts, Iterable):
        raise TypeError(
            f"{name} must be a list (or another ordered iterable) of str, got "
            f"{type(texts).__name__}; pass e.g. list(...) of its texts"
        )
    items = list(texts)
    if set(map(type, items)) <= {str}:  # one pass in C; a subclass of str is looked at below
        return items
    for index, text in enumerate(items):
        if not isinstance(text, str):
            raise TypeError(f"{name}[{index}] is {type(text).__name__}, expected str")
    return items


def check_num_threads(value: object) -> int:
    """tiktoken's ``num_threads``: an int, at least 1 (``True`` is 1 there too: a bool is an
    int, and tiktoken hands it to ``ThreadPoolExecutor``)."""
    return check_int("num_threads", int(value) if isinstance(value, bool) else value, minimum=1)


def without_surrogates(texts: list[str]) -> list[str]:
    """tiktoken's handling of surrogates: a lone one becomes U+FFFD, a high one followed by a
    low one the character they spell. Only texts that are not ASCII are scanned (whether a
    ``str`` is ASCII is known without reading it), and the list is returned as is if none
    holds a surrogate."""
    if all(map(str.isascii, texts)):  # one pass in C, no character read
        return texts
    try:  # UTF-8 has no surrogate, paired or not: one scan of the texts that are not ASCII
        "".join([text for text in texts if not text.isascii()]).encode("utf-8")
    except UnicodeEncodeError:
        return [
            text
            if text.isascii()
            else text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
            for text in texts
        ]
    return texts


@lru_cache(maxsize=64)
def special_regex(tokens: frozenset[str]) -> re.Pattern[str]:
    """A pattern finding any of ``tokens``, built once per set (o200k_harmony has a thousand).

    Longest first, so a special token that extends another wins (leftmost-longest)."""
    return re.compile("|".join(re.escape(token) for token in sorted(tokens, key=len, reverse=True)))


def split_segments(
    texts: list[str], allowed: frozenset[str], specials: dict[str, int]
) -> tuple[list[str], list[int], list[int]]:
    """Texts cut at allowed special tokens: ``(segments, special ID or -1, text index)``.

    tiktoken's scan: find the next special token of *any* kind; one that is not allowed stays
    text and the scan resumes one character after its start. So a disallowed ``<tool>_call``
    also hides the allowed ``<tool>`` it begins with (where tiktoken's hash-map order tries the
    longer token first; we always do, as Hugging Face's leftmost-longest match).
    """
    if not allowed:
        return texts, [-1] * len(texts), list(range(len(texts)))
    finder = special_regex(frozenset(specials))
    segments, special, owner = [], [], []
    for index, text in enumerate(texts):
        last = resume = 0
        while (match := finder.search(text, resume)) is not None:
            resume = match.start() + 1
            if match.group() not in allowed:
                continue
            if match.start() > last:
                segments.append(text[last : match.start()])
                special.append(-1)
                owner.append(index)
            segments.append(match.group())
            special.append(specials[match.group()])
            owner.append(index)
            last = match.end()
            resume = max(resume, last)  # past the token (one on, if it is empty)
        segments.append(text[last:])  # possibly empty: keeps every text present
        special.append(-1)
        owner.append(index)
    return segments, special, owner


def allowed_set(vocab: Vocab, allowed_special: AllowedSpecial) -> frozenset[str]:
    """The allowed special tokens (names that are no special token are ignored, as in
    tiktoken)."""
    if allowed_special == "all":
        return vocab.special_set
    if isinstance(allowed_special, str) or not isinstance(allowed_special, Collection):
        raise TypeError("allowed_special must be 'all' or a set of special-token strings")
    if not allowed_special:
        return frozenset()
    return frozenset(allowed_special) & vocab.special_set


def check_disallowed(
    vocab: Vocab, texts: list[str], allowed: frozenset[str], disallowed_special: DisallowedSpecial
) -> None:
    """Raise ``ValueError`` for the first disallowed special token in ``texts``, naming the
    keyword that would allow it or encode it as text."""
    if disallowed_special == "all":
        disallowed = vocab.special_set - allowed if allowed else vocab.special_set
    elif isinstance(disallowed_special, str) or not isinstance(disallowed_special, Collection):
        raise TypeError("disallowed_special must be 'all' or a collection of strings")
    else:
        disallowed = frozenset(disallowed_special)
    if not disallowed:
        return
    finder = special_regex(disallowed)
    if finder.search("\0".join(texts)) is None:  # one C-speed scan of the whole batch
        return
    for text in texts:
        match = finder.search(text)
        if match:
            raise_disallowed_special_token(match.group())


def raise_disallowed_special_token(token: str) -> NoReturn:
    """Raise the ``ValueError`` of text holding the special token ``token``, which was not
    allowed, naming the keywords that allow it or encode it as text (tiktoken's function of
    this name, re-exported by :mod:`tensortext.core`).

    Raises:
        ValueError: always.

    Example:
        >>> raise_disallowed_special_token("<|endoftext|>")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: text contains the special token '<|endoftext|>', which is disallowed. ...
    """
    raise ValueError(
        f"text contains the special token {token!r}, which is disallowed. "
        f"To encode it as the special token, pass allowed_special={{{token!r}}} "
        "(or allowed_special='all'); to encode it as ordinary text, pass "
        f"disallowed_special=(enc.special_tokens_set - {{{token!r}}}), or "
        "disallowed_special=() to turn the check off for every special token."
    )


def prepare_segments(vocab: Vocab, texts: list[str], allowed: frozenset[str]) -> Segments:
    """The texts cut at allowed special tokens (:func:`split_segments`), with the tokenizer's
    text options (normalizer, ``add_prefix_space``, SentencePiece's rules) applied to the
    ordinary segments, and SentencePiece's user-defined pieces cut out of them."""
    options = vocab.options
    segments, special, owner = split_segments(
        without_surrogates(texts), allowed, vocab.special_tokens
    )
    if options.normalizer or options.add_prefix_space or options.sentencepiece:
        segments = [
            _prepare(segment, options, first=at == 0 or owner[at - 1] != owner[at])
            if token < 0
            else segment
            for at, (segment, token) in enumerate(zip(segments, special, strict=True))
        ]
    if options.user_symbols:
        segments, special, owner = _cut_user_symbols(segments, special, owner, options)
    return segments, special, owner


def _cut_user_symbols(
    segments: list[str], special: list[int], owner: list[int], options: TextOptions
) -> Segments:
    """SentencePiece's user-defined pieces cut out of the ordinary segments (always, as
    ``sentencepiece`` does, leftmost-longest)."""
    symbols = dict(options.user_symbols)
    parts, part_special, part_owner = split_segments(segments, frozenset(symbols), symbols)
    texts: list[str] = []
    ids: list[int] = []
    owners: list[int] = []
    last = -1
    for part, token, k in zip(parts, part_special, part_owner, strict=True):
        if special[k] >= 0:  # a special token's segment: once, as it was
            if k == last:
                continue
            part, token = segments[k], special[k]
        last = k
        texts.append(part)
        ids.append(token)
        owners.append(owner[k])
    return texts, ids, owners


_SPACE_RUNS = re.compile(" {2,}")


def sentencepiece_text(text: str, options: TextOptions, *, dummy_prefix: bool = True) -> str:
    """SentencePiece's normalization of one text (``identity`` rules; see
    :attr:`TextOptions.sentencepiece`), with spaces kept as U+0020; ``dummy_prefix=False``:
    without the dummy prefix (a part after a special token).

    As ``sentencepiece``'s normalizer: ``remove_extra_whitespaces`` strips and folds the text's
    own spaces, then every trailing space, U+2581 and the dummy prefix included (a text of
    spaces and U+2581 comes out empty, or as the suffix alone)."""
    if options.remove_extra_whitespaces:
        text = text.lstrip(" ")
        if not text:
            return ""
        text = _SPACE_RUNS.sub(" ", text)
    elif not text:
        return ""
    text = text.replace("\u2581", " ")
    add = options.dummy_prefix and dummy_prefix
    if add and not options.whitespace_suffix:
        text = " " + text
    if options.remove_extra_whitespaces:
        text = text.rstrip(" ")
    if add and options.whitespace_suffix:
        text += " "
    return text


def _prepare(segment: str, options: TextOptions, *, first: bool) -> str:
    """A Hugging Face tokenizer's normalizer and ``add_prefix_space``, or SentencePiece's rules
    (its dummy prefix only before the text's first segment), on one ordinary segment (``first``:
    its text's first segment)."""
    if options.sentencepiece:
        segment = sentencepiece_text(segment, options, dummy_prefix=first)
    if options.normalizer is not None:
        segment = unicodedata.normalize(options.normalizer, segment)
    if (
        options.add_prefix_space
        and segment
        and (options.prefix_always or not segment.startswith(" "))
        and (first or not options.prefix_first_only)
    ):
        segment = " " + segment
    return segment
