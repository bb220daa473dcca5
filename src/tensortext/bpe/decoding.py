"""Token IDs back to bytes: one list of IDs (tiktoken's calls) or a whole padded batch at once."""

from __future__ import annotations

import codecs
import itertools
import operator
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensortext._checks import check_integer_tensor, check_shape
from tensortext.bpe.text import check_num_threads
from tensortext.bpe.vocab import Vocab
from tensortext.padded import Padded

if TYPE_CHECKING:
    import numpy.typing as npt
    import torch

    TokenIds = Sequence[int] | torch.Tensor | npt.NDArray[Any]
    """One row of token IDs: a list, a ``[L]`` integer tensor or a 1-D integer numpy array."""
    TokenBatch = Sequence[Sequence[int]] | Padded | torch.Tensor | npt.NDArray[Any]
    """Rows of token IDs: lists, a :class:`Padded` batch, or a ``[B, L]`` tensor or array."""

__all__ = [
    "DecodeMethods",
    "UnknownTokenError",
    "decode_padded",
    "id_list",
    "is_ndarray",
    "is_tensor",
    "token_bytes",
]


class UnknownTokenError(KeyError, ValueError):
    """An ID that is no token of the encoding: a ``KeyError`` as in tiktoken, and a
    ``ValueError`` as everywhere else in tensortext."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def is_tensor(value: object) -> bool:
    """Whether ``value`` is a torch tensor (never imports torch: without it, none exists)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def is_ndarray(value: object) -> bool:
    """Whether ``value`` is a numpy array, a memmap included (never imports numpy)."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def id_list(tokens: Sequence[int] | torch.Tensor | Any, name: str) -> list[int]:
    """``tokens`` as a list of ints: a sequence of ints, or a one-dimensional integer tensor or
    numpy array (a ``np.memmap`` slice too), as tiktoken's ``decode`` takes them."""
    array: Any = tokens  # a tensor or an array, once the checks below say which
    if is_tensor(tokens):
        check_integer_tensor(name, array, shape="[L]")
        check_shape(name, array, [None], "[L] (use decode_batch for a batch)")
        return [int(token) for token in array.tolist()]
    if is_ndarray(tokens):
        if array.dtype.kind not in "iu":
            raise TypeError(
                f"{name} must hold integer token IDs, got a numpy array of dtype {array.dtype}; "
                f"pass {name}.astype(np.int64)"
            )
        if array.ndim != 1:
            raise ValueError(
                f"{name} must be one-dimensional [L], got shape {list(array.shape)} "
                "(use decode_batch for a batch)"
            )
        return [int(token) for token in array.tolist()]
    if isinstance(tokens, str | bytes) or not isinstance(tokens, Sequence):
        raise TypeError(f"{name} must be a sequence of int token IDs, got {type(tokens).__name__}")
    return list(tokens)


def token_bytes(vocab: Vocab, tokens: Sequence[int] | torch.Tensor | Any, name: str) -> list[bytes]:
    """The bytes of each token (a special token's text for a special ID).

    Raises:
        UnknownTokenError: for an ID that is no token (a ``KeyError`` and a ``ValueError``).
        TypeError: for an element that is not an int.
    """
    ids = id_list(tokens, name)
    table = vocab.tokens
    parts: list[bytes | None] | None
    try:  # the fast path; a bad ID is located below
        if ids and (min(ids) < 0 or max(ids) >= len(table)):
            raise IndexError
        parts = [table[token] for token in ids]
    except (IndexError, TypeError):
        parts = None
    if parts is None or None in parts:
        for token in ids:
            try:
                index = operator.index(token)
            except TypeError:
                raise TypeError(f"{name} holds {token!r}, which is not an int token ID") from None
            if not 0 <= index < len(table) or table[index] is None:
                raise UnknownTokenError(
                    f"{name} holds {index}, which is not a token of {vocab.name} "
                    f"(n_vocab {len(table)})"
                )
    return parts  # type: ignore[return-value]


def decode_padded(vocab: Vocab, batch: Padded) -> list[bytes]:
    """The bytes of each row ``ids[b, :lengths[b]]`` of ``ids [B, L]``, decoded as one batch.

    Raises:
        TypeError: ``ids`` or ``lengths`` is not an integer tensor.
        ValueError: wrong shapes, a length outside ``0..L``, or an ID that is no token.
    """
    import torch

    from tensortext.bpe.merge import expand_spans

    ids, lengths = batch
    check_integer_tensor("ids", ids, shape="[B, L]")
    check_shape("ids", ids, [None, None], "[B, L] (use decode for one list of IDs)")
    check_integer_tensor("lengths", lengths, shape=f"[{ids.shape[0]}]")
    check_shape("lengths", lengths, [ids.shape[0]], f"[B] = [{ids.shape[0]}]")
    ids, lengths = ids.cpu().long(), lengths.cpu().long()
    if bool(((lengths < 0) | (lengths > ids.shape[1])).any()):
        raise ValueError(f"lengths must lie in [0, {ids.shape[1]}]")
    valid = torch.arange(ids.shape[1]) < lengths[:, None]
    flat = ids[valid]
    tables = vocab.tables(torch.device("cpu"))
    in_range = (flat >= 0) & (flat < len(vocab.tokens))
    safe = flat.where(in_range, 0)
    token_lens = tables.token_offsets[safe + 1] - tables.token_offsets[safe]
    bad = ~in_range
    if vocab.unknown_ids is None:  # no token is empty (but SentencePiece's control pieces)
        bad |= token_lens == 0  # length 0 is an unused ID
    if bool(bad.any()):
        raise UnknownTokenError(
            f"ids holds {int(flat[bad][0])}, which is not a token of {vocab.name} "
            f"(n_vocab {len(vocab.tokens)})"
        )
    token, offset = expand_spans(token_lens)
    data = tables.token_bytes[tables.token_offsets[flat][token] + offset]
    row_bytes = torch.zeros(ids.shape[0], dtype=torch.int64).index_add_(
        0, valid.nonzero()[:, 0], token_lens
    )
    blob = bytes(data.numpy())
    bounds = [0, *torch.cumsum(row_bytes, 0).tolist()]
    rows = [blob[a:b] for a, b in itertools.pairwise(bounds)]
    if vocab.options.strip_decoded:
        rows = [
            without_dummy_prefix(vocab, row[:length], data)
            for row, length, data in zip(ids.tolist(), lengths.tolist(), rows, strict=True)
        ]
    return rows


def without_dummy_prefix(vocab: Vocab, ids: Sequence[int], data: bytes) -> bytes:
    """``data``, the bytes of ``ids``, without the leading space that ``sentencepiece``'s
    ``decode`` drops: that of the first piece with text, if an ordinary or user-defined piece; with
    ``remove_extra_whitespaces`` (``"sentencepiece_all"``), every leading space of the ordinary
    pieces before the first other character. HF's ``Strip`` decoder (``"always"``): the first
    space, whatever gave it."""
    options = vocab.options
    if not options.strip_decoded or not data:
        return data
    if options.strip_decoded == "always":  # HF's Strip decoder: the text's first space
        return data[1:] if data.startswith(b" ") else data
    tokens, mergeable = vocab.tokens, vocab.mergeable
    every = options.strip_decoded == "sentencepiece_all"
    user = {token for _, token in options.user_symbols}
    cut = 0
    for token in ids:
        piece = tokens[token]
        if not piece:
            continue  # a control piece
        if mergeable.get(piece) != token and token not in user:
            break  # a byte piece or the unknown piece
        spaces = len(piece) - len(piece.lstrip(b" "))
        if not every:
            return data[min(spaces, 1) :]
        cut += spaces
        if spaces < len(piece):
            break
    return data[cut:]


def _replace_one_byte(error: UnicodeError) -> tuple[str, int]:
    """A decode error handler: U+FFFD for one byte, then go on (``sentencepiece``: each byte
    that starts no valid character, where Python's ``"replace"`` takes a truncated
    character's bytes as one)."""
    assert isinstance(error, UnicodeDecodeError)
    return "\ufffd", error.start + 1


codecs.register_error("tensortext.replace_one_byte", _replace_one_byte)


def decoded_text(vocab: Vocab, ids: Sequence[int], data: bytes, errors: str) -> str:
    """The text of ``data``, the bytes of ``ids`` of a SentencePiece vocabulary, invalid UTF-8
    replaced as its reference does with ``errors="replace"``: ``sentencepiece``, U+FFFD for each
    byte that starts no character; ``tokenizers``' ``ByteFallback``, U+FFFD for each byte of a
    run of ``<0xXX>`` tokens that is not valid UTF-8 as a whole."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        if errors != "replace":
            return data.decode("utf-8", errors=errors)  # (raises for "strict")
    if vocab.options.byte_runs != "hf":
        return data.decode("utf-8", errors="tensortext.replace_one_byte")
    tokens, mergeable, special = vocab.tokens, vocab.mergeable, set(vocab.special_tokens.values())
    parts: list[str] = []
    run = bytearray()
    for token in ids:
        piece = tokens[token] or b""
        if len(piece) == 1 and mergeable.get(piece) != token and token not in special:
            run += piece  # an <0xXX> token
            continue
        if run:
            parts.append(_run_text(run))
            run.clear()
        parts.append(piece.decode("utf-8", errors="replace"))
    parts.append(_run_text(run))
    text = "".join(parts)
    return text[1:] if vocab.options.strip_decoded and text.startswith(" ") else text


def _run_text(run: bytearray) -> str:
    """``tokenizers``' ``ByteFallback`` of a run of byte tokens."""
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(run)


def _id_rows(batch: TokenBatch) -> list[list[int]]:
    """The IDs of each row of a batch (as :meth:`DecodeMethods.decode_batch` reads it)."""
    if isinstance(batch, Padded):
        ids, lengths = batch
        return [row[:length] for row, length in zip(ids.tolist(), lengths.tolist(), strict=True)]
    if is_tensor(batch) or is_ndarray(batch):
        return [list(map(int, row)) for row in batch.tolist()]  # type: ignore[union-attr]
    return [id_list(row, "batch[i]") for row in batch]


class DecodeMethods:
    """tiktoken's decoding methods, which :class:`~tensortext.bpe.Encoding` inherits (it sets
    ``_vocab``). Token IDs come as lists, tensors or numpy arrays (``np.memmap`` slices too)."""

    _vocab: Vocab

    def decode_bytes(self, tokens: TokenIds) -> bytes:
        """The bytes of ``tokens`` joined.

        Raises:
            KeyError: (a :class:`~tensortext.bpe.UnknownTokenError`, also a ``ValueError``) for
                an ID that is no token.
        """
        return self._joined(tokens, "tokens")

    def _joined(self, tokens: TokenIds, name: str) -> bytes:
        """The bytes of ``tokens``, joined, without a SentencePiece dummy prefix."""
        data = b"".join(token_bytes(self._vocab, tokens, name))
        if self._vocab.options.strip_decoded:
            data = without_dummy_prefix(self._vocab, id_list(tokens, name), data)
        return data

    def decode(self, tokens: TokenIds, errors: str = "replace") -> str:
        """The text of ``tokens`` (invalid UTF-8 becomes U+FFFD unless ``errors`` says else;
        for SentencePiece vocabularies, as its reference replaces it:
        :func:`decoded_text`)."""
        data = self.decode_bytes(tokens)
        if self._vocab.unknown_ids is None:
            return data.decode("utf-8", errors=errors)
        return decoded_text(self._vocab, id_list(tokens, "tokens"), data, errors)

    def decode_single_token_bytes(self, token: int) -> bytes:
        """The bytes of one token (a special token's text for a special ID); ``KeyError`` if
        ``token`` is no token."""
        return token_bytes(self._vocab, [token], "token")[0]

    def decode_tokens_bytes(self, tokens: TokenIds) -> list[bytes]:
        """The bytes of each token."""
        return token_bytes(self._vocab, tokens, "tokens")

    def decode_with_offsets(self, tokens: TokenIds) -> tuple[str, list[int]]:
        """The text and, per token, the index of the first character holding its bytes.

        Raises:
            UnicodeDecodeError: if the tokens do not decode to valid UTF-8 (as tiktoken).
        """
        parts = token_bytes(self._vocab, tokens, "tokens")
        offsets: list[int] = []
        chars = 0
        for part in parts:  # a token that starts mid-character belongs to that character
            offsets.append(max(0, chars - (0x80 <= part[0] < 0xC0)))
            chars += sum(1 for byte in part if not 0x80 <= byte < 0xC0)
        return b"".join(parts).decode("utf-8", errors="strict"), offsets

    def decode_batch(
        self,
        batch: TokenBatch,
        *,
        errors: str = "replace",
        num_threads: int = 8,
    ) -> list[str]:
        """Decode each row: lists of IDs (tiktoken's), a :class:`Padded` batch (each row cut at
        its length), or an ``[B, L]`` tensor or numpy array of full rows."""
        rows = self.decode_bytes_batch(batch)
        if self._vocab.unknown_ids is None:
            return [data.decode("utf-8", errors=errors) for data in rows]
        return [
            decoded_text(self._vocab, ids, data, errors)
            for ids, data in zip(_id_rows(batch), rows, strict=True)
        ]

    def decode_bytes_batch(self, batch: TokenBatch, *, num_threads: int = 8) -> list[bytes]:
        """:meth:`decode_bytes` of each row (the batch as in :meth:`decode_batch`)."""
        check_num_threads(num_threads)
        rows: Any = batch  # a tensor or an array, once the checks below say which
        if isinstance(batch, Padded):
            return decode_padded(self._vocab, batch)
        if is_tensor(batch):
            if rows.dim() != 2:
                raise ValueError(f"batch must be [B, L], got shape {list(rows.shape)}")
            import torch  # loaded: batch is a tensor

            full = torch.full((rows.shape[0],), rows.shape[1], dtype=torch.int64)
            return decode_padded(self._vocab, Padded(rows, full))
        if is_ndarray(batch):
            if rows.ndim != 2:
                raise ValueError(
                    f"batch must be a list of token lists or a [B, L] array, got a numpy array "
                    f"of shape {list(rows.shape)}"
                )
            return [self._joined(row, "batch[i]") for row in rows]
        if isinstance(batch, str | bytes) or not isinstance(batch, Sequence):
            raise TypeError(f"batch must be a list of token lists, got {type(batch).__name__}")
        return [self._joined(row, "batch[i]") for row in batch]
