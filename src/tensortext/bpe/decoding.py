"""Token IDs back to bytes: one list of IDs (tiktoken's calls) or a whole padded batch at once."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence

import torch

from tensortext._checks import check_integer_tensor, check_shape
from tensortext.bpe.merge import expand_spans
from tensortext.bpe.vocab import Vocab
from tensortext.padded import Padded

__all__ = ["UnknownTokenError", "decode_padded", "id_list", "token_bytes"]


class UnknownTokenError(KeyError, ValueError):
    """An ID that is no token of the encoding: a ``KeyError`` as in tiktoken, and a
    ``ValueError`` as everywhere else in tensortext."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def id_list(tokens: Sequence[int] | torch.Tensor, name: str) -> list[int]:
    """``tokens`` as a list of ints: a sequence of ints, or an integer tensor of one dimension."""
    if isinstance(tokens, torch.Tensor):
        check_integer_tensor(name, tokens, shape="[L]")
        check_shape(name, tokens, [None], "[L] (use decode_batch for a batch)")
        return [int(token) for token in tokens.tolist()]
    if isinstance(tokens, str | bytes) or not isinstance(tokens, Sequence):
        raise TypeError(f"{name} must be a sequence of int token IDs, got {type(tokens).__name__}")
    return list(tokens)


def token_bytes(vocab: Vocab, tokens: Sequence[int] | torch.Tensor, name: str) -> list[bytes]:
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
    bad = ~in_range | (token_lens == 0)  # no token is empty: length 0 is an unused ID
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
    return [blob[a:b] for a, b in itertools.pairwise(bounds)]
