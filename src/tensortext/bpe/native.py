"""The C encoder (``csrc/native.c``, built as ``tensortext.bpe._native``), the CPU backend.

For byte-level BPE vocabularies, tiktoken's (rank = ID, as every ``.tiktoken`` file) or a
Hugging Face merges list, and the split patterns of :data:`~tensortext.bpe.pretokenize.PATTERNS`
and DeepSeek-V3's sequence of splits, one C call splits ordinary segments with the same rules
as :mod:`tensortext.bpe.pretokenize.rules` and ``splits``, looks each piece up in a hash table
and merges the rest, lowest rank first (leftmost among equals), as tiktoken and ``tokenizers``
do. It releases the GIL, so ``encode_batch(num_threads=N)`` runs it on N threads of this
process (no worker processes, no copies of the vocabulary).

The extension is optional. Without a C compiler at install, or with ``TENSORTEXT_NATIVE=0`` in
the environment, the pure-Python encoder (:mod:`tensortext.bpe.host`) gives the same IDs,
more slowly; :func:`native_available` tells whether the C encoder can run, and
:mod:`tensortext.bpe.backends` chooses.
"""

from __future__ import annotations

import importlib
import itertools
import os
from array import array
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TYPE_CHECKING, Any

from tensortext.bpe.cores import balanced_chunks, usable_cores
from tensortext.bpe.patterns import pattern_kind
from tensortext.bpe.unicode import flag_bytes
from tensortext.bpe.vocab import Vocab, check_ids, check_special_ids, check_vocab_size, id_bound

if TYPE_CHECKING:
    import numpy as np

    from tensortext.bpe.text import Segments

_native: Any
try:
    _native = importlib.import_module("tensortext.bpe._native")
except ImportError:  # built without a C compiler: the Python host encoder runs
    _native = None

__all__ = [
    "MAX_SEGMENT_CHARS",
    "THREADS_MIN_CHARS",
    "encode_segments_flat",
    "native_applies",
    "native_available",
    "native_encoder",
    "threaded_encoder",
    "vocab_from_tiktoken",
]

# The split kinds csrc/native.c knows, by the number it takes.
_KIND_CODES = {
    "r50k": 0,
    "cl100k": 1,
    "cl100k_hf": 2,
    "llama3": 3,
    "qwen2": 4,
    "qwen35": 5,
    "o200k": 6,
    "deepseek_v3": 7,
    "tekken": 8,
    "sp_prefix": 9,
    "sp_suffix": 10,
    "whole": 11,
}
THREADS_MIN_CHARS = 1 << 16
"""Characters of ordinary text in one call from which ``encode_batch`` uses several threads
(below, handing chunks to the threads costs more than it saves)."""
MAX_SEGMENT_CHARS = (1 << 30) - 2
"""The longest segment (a text, or a part between allowed special tokens) the C encoder takes:
it counts bytes in 32 bits, and a character is up to 4 UTF-8 bytes (``csrc/native.c`` refuses
``2**30 - 1`` characters and more)."""
_ENV = "TENSORTEXT_NATIVE"
_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


def native_available() -> bool:
    """Whether the C encoder is built and not switched off.

    ``TENSORTEXT_NATIVE`` switches it: ``1``/``true``/``yes``/``on`` (or unset, or empty) on,
    ``0``/``false``/``no``/``off`` off, in any case. It is read here, when an encoding first
    encodes, not at import.

    Raises:
        ValueError: for any other value of ``TENSORTEXT_NATIVE``.
    """
    raw = os.environ.get(_ENV, "")
    value = raw.strip().lower()
    if value not in ("", *_ON, *_OFF):
        shown = raw if len(raw) <= 20 else raw[:20] + "..."
        raise ValueError(
            f"{_ENV}={shown!r} is not understood: set it to one of "
            f"{'/'.join(_ON)} (the C encoder, the default when unset or empty) or "
            f"{'/'.join(_OFF)} (the Python encoder), in any case"
        )
    return _native is not None and value not in _OFF


def native_applies(kind: str) -> bool:
    """Whether the C encoder can encode the ``kind`` split: it knows that split (not BlockBPE's
    one piece per segment) and :func:`native_available`.

    Raises:
        ValueError: for a ``TENSORTEXT_NATIVE`` that is not understood.
    """
    return kind in _KIND_CODES and native_available()


NO_ID = 2**32 - 1  # the C encoder's "none"


def native_encoder(vocab: Vocab) -> Any | None:
    """The C encoder of ``vocab`` (the one that holds it, if it read the file itself), or
    ``None`` where it does not apply (see :func:`native_applies`)."""
    if not native_applies(vocab.kind):
        return None
    if vocab.native is not None:
        return vocab.native
    kind = _KIND_CODES[vocab.kind]
    merges = None
    if vocab.merges is not None:  # (left, right, rank, merged) quads
        quads = [(*pair, *result) for pair, result in vocab.merges.items()]
        merges = array("I", itertools.chain.from_iterable(quads)).tobytes()
    unknown = ranks = None
    mergeable = vocab.mergeable
    if vocab.unknown_ids is not None:  # SentencePiece: characters as units
        units = [*(NO_ID if i < 0 else i for i in vocab.unknown_ids), int(vocab.fuse_unk)]
        unknown = array("I", units).tobytes()
    if vocab.piece_ranks is not None:  # SentencePiece: ranks from scores
        ranks = array("I", map(vocab.piece_ranks.__getitem__, mergeable.values())).tobytes()
    return _native.Encoder(
        list(mergeable),
        list(mergeable.values()),
        flag_bytes(),
        kind,
        merges=merges,
        whole_piece=vocab.whole_piece_lookup,
        unknown=unknown,
        ranks=ranks,
    )


def reads_tiktoken_files(pat_str: str) -> bool:
    """Whether :func:`vocab_from_tiktoken` applies to a file split by ``pat_str``: the C encoder
    is built, not switched off, and has the split's scanner. False, too, for a pattern that is
    no known split or a ``TENSORTEXT_NATIVE`` not understood (the constructor, and the first
    encode, say so)."""
    try:
        return native_applies(pattern_kind(pat_str))
    except ValueError:
        return False


def vocab_from_tiktoken(
    name: str,
    pat_str: str,
    data: bytes,
    special_tokens: dict[str, int],
    *,
    explicit_n_vocab: int | None = None,
) -> Vocab | None:
    """The vocabulary of a ``.tiktoken`` file's bytes read by the C encoder, which then holds
    it: no Python object per token (``Vocab.tokens`` and ``mergeable`` are built at their first
    use), so ``get_encoding`` and a first ``encode`` take a fraction of the time of reading
    the file into a dict (tiktoken's way).

    Returns:
        ``None`` where the C encoder does not apply (:func:`reads_tiktoken_files`) or the file is
        not in the canonical form (``BASE64 RANK`` lines, every token and rank once, every
        byte a token, IDs below :func:`~tensortext.bpe.vocab.id_bound`): the caller then reads
        it in Python, which names the first bad line.

    Raises:
        ValueError: as :meth:`Vocab.from_ranks` for the special tokens and
            ``explicit_n_vocab``.
    """
    if not reads_tiktoken_files(pat_str):
        return None
    if not isinstance(special_tokens, dict) or not all(type(k) is str for k in special_tokens):
        return None  # from_ranks' TypeError
    kind = pattern_kind(pat_str)
    encoder = _native.from_tiktoken(data, flag_bytes(), _KIND_CODES[kind])
    if encoder is None:
        return None
    count, size = encoder.counts()
    if size > id_bound(count):  # read_tiktoken_file's bound
        return None
    check_ids(special_tokens, f"{name}: special token", count + len(special_tokens))
    size = max([size, *[token_id + 1 for token_id in special_tokens.values()]])
    check_vocab_size(name, explicit_n_vocab, size, count, special_tokens)
    check_special_ids(
        name, special_tokens, lambda token_id: encoder.token_bytes(token_id) is not None
    )
    return Vocab.held_by(name, kind, encoder, special_tokens)


@cache
def _executor() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=usable_cores(), thread_name_prefix="tensortext")


# A forked child inherits the executor but none of its threads: the executor believes its
# workers exist, queues the chunks, and nothing ever runs them. The child starts its own.
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_executor.cache_clear)


def _on_threads(
    method: Callable[[list[str]], Any], texts: list[str], num_threads: int
) -> list[Any]:
    """``method`` (a C encoder's) of runs of consecutive ``texts`` with similar numbers of
    characters, one per thread: up to ``num_threads``, at most one per usable core, and one
    for a call under :data:`THREADS_MIN_CHARS` characters.

    Raises:
        ValueError: for a segment (one of ``texts``) longer than :data:`MAX_SEGMENT_CHARS`,
            before any work.
    """
    longest = max(map(len, texts), default=0)
    if longest > MAX_SEGMENT_CHARS:
        raise ValueError(
            f"a text holds a segment of {longest:,} characters; the C encoder takes at most "
            f"{MAX_SEGMENT_CHARS:,} (2**30 - 2) between special tokens: split the text into "
            "several (at newlines, say)"
        )
    threads = min(num_threads, usable_cores(), len(texts))
    if threads <= 1 or sum(map(len, texts)) < THREADS_MIN_CHARS:
        return [method(texts)]
    return list(_executor().map(method, balanced_chunks(texts, threads)))


def threaded_encoder(encoder: Any, num_threads: int) -> Callable[[list[str]], list[list[int]]]:
    """``encoder.encode_many`` on up to ``num_threads`` threads (see :func:`_on_threads`)."""

    def encode_many(texts: list[str]) -> list[list[int]]:
        rows: list[list[int]] = []
        for part in _on_threads(encoder.encode_many, texts, num_threads):
            rows += part
        return rows

    return encode_many


def encode_segments_flat(
    encoder: Any, segments: Segments, n_texts: int, num_threads: int
) -> tuple[np.ndarray, np.ndarray]:
    """The tokens of ``n_texts`` texts given as prepared segments, without Python lists.

    Returns:
        ``(tokens [T] uint32, lengths [n_texts] int64)``: each text's tokens after the last's
        (writable arrays over the C encoder's buffers: no copy when the call held no special
        token and ran on one thread).
    """
    texts, specials, owners = segments
    import numpy as np  # (here, not at import: the list methods need no numpy)

    def joined(parts: list[tuple[bytearray, bytearray]], at: int, dtype: type) -> np.ndarray:
        arrays: list[np.ndarray] = [np.frombuffer(part[at], dtype=dtype) for part in parts]
        return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)

    if len(texts) == n_texts and max(specials, default=-1) < 0:  # one ordinary segment a text
        parts = _on_threads(encoder.encode_flat, texts, num_threads)
        return joined(parts, 0, np.uint32), joined(parts, 1, np.int64)
    special = np.asarray(specials, dtype=np.int64)
    is_ordinary = special < 0
    ordinary = [text for text, token in zip(texts, specials, strict=True) if token < 0]
    parts = _on_threads(encoder.encode_flat, ordinary, num_threads)
    segment_lengths = np.ones(len(texts), dtype=np.int64)  # a special token: one
    segment_lengths[is_ordinary] = joined(parts, 1, np.int64)
    # Segments come text by text, in order: specials go to their segments' first positions,
    # the ordinary tokens fill the others in order.
    special_at = (np.cumsum(segment_lengths) - segment_lengths)[~is_ordinary]
    out = np.empty(int(segment_lengths.sum()), dtype=np.uint32)
    fill = np.ones(len(out), dtype=bool)
    fill[special_at] = False
    out[fill] = joined(parts, 0, np.uint32)
    out[special_at] = special[~is_ordinary]
    lengths = np.zeros(n_texts, dtype=np.int64)
    np.add.at(lengths, np.asarray(owners, dtype=np.int64), segment_lengths)
    return out, lengths
