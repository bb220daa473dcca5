"""N-gram posteriors ``P(u | E)`` of an evidence space, for all sentences of a batch at once.

``P(u | E_b) = sum_{i: u in E_bi} exp(alpha * s_bi) / sum_j exp(alpha * s_bj)`` over the N-best
hypotheses ``E_bi`` of sentence ``b`` with scores ``s_bi`` (Iglesias et al., 2018, Equation 2):
each hypothesis counts once, however often ``u`` occurs in it. :func:`ngram_posteriors` computes
them with the shared n-gram core (:mod:`tensortext.ngrams`) into an :class:`NgramPosteriors`
trie of sorted tensors (:mod:`tensortext.lmbr.trie`); :meth:`NgramPosteriors.from_ngrams` takes
posteriors computed elsewhere (e.g. SGNMT/ucam-smt files from HiFST lattices).

Sentence boundaries: with ``bos_id``/``eos_id`` every hypothesis is read as ``bos y eos`` (as
SGNMT does with ``<s>``/``</s>``), so n-grams at the boundaries get posteriors too; the lone
``bos`` gets none, since it is never generated.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NamedTuple

import torch
from torch import Tensor

from tensortext._checks import (
    brief,
    check_float,
    check_float_tensor,
    check_integer_tensor,
    check_lengths,
    check_ngram_order,
    check_same_device,
    check_shape,
)
from tensortext.lmbr.trie import Trie, build_trie
from tensortext.ngrams import first_occurrences
from tensortext.padded import PAD_ID

if TYPE_CHECKING:
    from tensortext.decode.output import BeamOutput

__all__ = ["Evidence", "NgramPosteriors", "ngram_posteriors"]


class Evidence(NamedTuple):
    """N-best evidence of ``B`` sentences as padded tensors: the input of :func:`ngram_posteriors`.

    Attributes:
        ids: ``[B, M, L]`` int64 hypotheses, padded with :data:`~tensortext.padded.PAD_ID`.
        lengths: ``[B, M]`` int64.
        scores: ``[B, M]`` float log-probabilities; ``-inf`` where a sentence has fewer than
            ``M`` hypotheses.

    Read one from a Moses n-best file with :func:`tensortext.formats.read_nbest`, or take a beam
    search's n-best with :meth:`from_beam_output`.
    """

    ids: Tensor
    lengths: Tensor
    scores: Tensor

    @classmethod
    def from_beam_output(
        cls,
        out: BeamOutput,
        *,
        eos_id: int | Sequence[int] | None = None,
        length_penalty: float = 1.0,
    ) -> Evidence:
        """The ``R`` returned hypotheses of a beam search as evidence, EOS left out.

        Args:
            out: A :class:`~tensortext.decode.BeamOutput` with ``[B, R, T]`` sequences.
            eos_id: The EOS ID(s) to drop; default ``out.eos_ids``.
            length_penalty: The search's ``length_penalty``: its scores are
                ``log-prob / length ** length_penalty``, turned back into log-probabilities
                (lengths counting the EOS), which is what the posteriors weigh.

        Returns:
            :class:`Evidence` ``(ids [B, R, T], lengths [B, R], scores [B, R] float64)``.

        Raises:
            ValueError: no ``eos_id`` and an output without ``eos_ids``.
        """
        if eos_id is None and out.eos_ids is None:
            raise ValueError("this BeamOutput has no eos_ids; pass eos_id=")
        if eos_id is not None:
            eos = [eos_id] if isinstance(eos_id, int) else list(eos_id)
            out = replace(out, eos_ids=torch.tensor(eos, device=out.sequences.device))
        ids, lengths = out.without_eos()
        scale = out.lengths.clamp(min=1).double() ** length_penalty
        return cls(ids, lengths, out.scores.double() * scale)


@dataclass(frozen=True)
class NgramPosteriors:
    """Posteriors ``P(u | E)`` of the n-grams of ``B`` sentences' evidence, as a trie of tensors.

    Built by :func:`ngram_posteriors` or :meth:`from_ngrams`; query with :meth:`lookup`. The
    tables are those of :class:`~tensortext.lmbr.trie.Trie` (one entry per distinct (sentence,
    n-gram) per order, sorted by ``parent * key_base + rank(last token)``, a sentinel last), plus
    the posterior of every entry.
    """

    num_sentences: int
    key_base: int
    token_values: Tensor  # [T] sorted distinct evidence tokens (tail repeats the largest)
    num_tokens: Tensor  # [] how many of token_values are distinct
    keys: tuple[Tensor, ...]  # per order: [E + 1] int64, sorted
    parents: tuple[Tensor, ...]  # per order: [E + 1] int64 entry of the prefix (-1 for unused)
    last_tokens: tuple[Tensor, ...]  # per order: [E + 1] int64 last token of the n-gram
    values: tuple[Tensor, ...]  # per order: [E + 1] float posterior (0 for prefixes only)
    bos_id: int | None = None
    eos_id: int | None = None

    @classmethod
    def from_trie(
        cls, trie: Trie, values: tuple[Tensor, ...], bos_id: int | None, eos_id: int | None
    ) -> NgramPosteriors:
        """The trie's tables with ``values`` (per order ``[size + 1]``, the sentinel's 0)."""
        return cls(
            num_sentences=trie.num_sentences,
            key_base=max(trie.size, 1),
            token_values=trie.token_values,
            num_tokens=trie.num_tokens,
            keys=trie.keys,
            parents=trie.parents,
            last_tokens=trie.last_tokens,
            values=values,
            bos_id=bos_id,
            eos_id=eos_id,
        )

    @property
    def size(self) -> int:
        """Entries per order, not counting the sentinel entry that ends every table."""
        return self.keys[0].numel() - 1

    @property
    def max_ngram_order(self) -> int:
        """``N``, the highest n-gram order."""
        return len(self.keys)

    @property
    def device(self) -> torch.device:
        """Where the tables are."""
        return self.token_values.device

    def to(self, device: torch.device | str) -> NgramPosteriors:
        """A copy on ``device``."""

        moved: dict[int, Tensor] = {}

        def move(tensors: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
            # Orders above the longest n-gram share one table; moving keeps them shared.
            for tensor in tensors:
                if id(tensor) not in moved:
                    moved[id(tensor)] = tensor.to(device)
            return tuple(moved[id(tensor)] for tensor in tensors)

        return replace(
            self,
            token_values=self.token_values.to(device),
            num_tokens=self.num_tokens.to(device),
            keys=move(self.keys),
            parents=move(self.parents),
            last_tokens=move(self.last_tokens),
            values=move(self.values),
        )

    def lookup(self, ngrams: Tensor, sentence: Tensor) -> Tensor:
        """Posterior of each n-gram in its sentence's evidence, 0 when absent.

        Args:
            ngrams: ``[Q, n]`` int64 token IDs, ``1 <= n <= max_ngram_order``.
            sentence: ``[Q]`` int64 in ``0..B-1``.

        Returns:
            ``[Q]`` float posteriors.

        Raises:
            TypeError: a non-integer tensor.
            ValueError: wrong shapes or devices, or a sentence index outside ``0..B-1`` (one
                host sync).
        """
        check_integer_tensor("ngrams", ngrams, shape="[Q, n]")
        check_integer_tensor("sentence", sentence, shape="[Q]")
        N = self.max_ngram_order
        if ngrams.dim() != 2 or not 1 <= ngrams.shape[1] <= N:
            raise ValueError(f"ngrams must be [Q, n] with 1 <= n <= {N}, got {list(ngrams.shape)}")
        check_shape("sentence", sentence, [ngrams.shape[0]], f"[Q] = [{ngrams.shape[0]}]")
        check_same_device("ngrams", ngrams, self.device, "the posteriors")
        check_same_device("sentence", sentence, self.device, "the posteriors")
        if sentence.numel() and bool(((sentence < 0) | (sentence >= self.num_sentences)).any()):
            raise ValueError(f"sentence indices must be in 0..{self.num_sentences - 1}")
        order = ngrams.shape[1]
        entry = self.walk(self.token_ranks(ngrams.long()), sentence.long())
        return self.values[order - 1][torch.where(entry >= 0, entry, self.size)]  # miss: sentinel

    def token_ranks(self, tokens: Tensor) -> Tensor:
        """Rank of each token among the evidence tokens; -1 for tokens not in the evidence."""
        tokens = tokens.long()
        position = torch.searchsorted(self.token_values, tokens.contiguous())
        position = position.clamp(max=self.token_values.numel() - 1)
        found = (self.token_values[position] == tokens) & (position < self.num_tokens)
        return torch.where(found, position, -1)

    def walk(self, ranks: Tensor, roots: Tensor) -> Tensor:
        """Entry of each n-gram ``[Q, n]`` (given as token ranks) at order ``n``; -1 if absent."""
        entry = roots.long()
        for position in range(ranks.shape[1]):
            entry = self.child(position + 1, entry, ranks[:, position])
        return entry

    def child(self, order: int, parent: Tensor, rank: Tensor) -> Tensor:
        """Entry at ``order`` of ``parent`` extended by the token of rank ``rank``; -1 if absent."""
        keys = self.keys[order - 1]
        key = parent * self.key_base + rank
        position = torch.searchsorted(keys, key).clamp(max=self.size)
        found = (keys[position] == key) & (parent >= 0) & (rank >= 0)
        return torch.where(found, position, -1)

    def children(self, order: int, parent: Tensor) -> tuple[Tensor, Tensor]:
        """``(start, end)``: the run of entries at ``order`` whose prefix is ``parent`` ``[R]``."""
        keys = self.keys[order - 1]
        low = parent * self.key_base
        start = torch.searchsorted(keys, low)
        end = torch.searchsorted(keys, low + self.key_base)
        return start, torch.where(parent >= 0, end, start)

    @staticmethod
    def from_ngrams(
        ngrams: Sequence[Mapping[tuple[int, ...], float]],
        *,
        bos_id: int | None = None,
        eos_id: int | None = None,
        device: torch.device | str | None = None,
    ) -> NgramPosteriors:
        """Posteriors given explicitly, e.g. read by
        :func:`~tensortext.formats.read_ngram_posterior_files`.

        Args:
            ngrams: For each of ``B`` sentences, ``{(token, ...): posterior}``. Prefixes need
                not be listed; an unlisted n-gram has posterior 0.
            bos_id, eos_id: The boundary tokens these n-grams use, if any (see the module doc).
            device: Where the tables go (CPU by default).

        Returns:
            :class:`NgramPosteriors` of order ``max(len(ngram))``.

        Raises:
            ValueError: an empty n-gram or a posterior that is not finite.
        """
        rows = [
            (s, ngram, value) for s, table in enumerate(ngrams) for ngram, value in table.items()
        ]
        for sentence, ngram, value in rows:
            if len(ngram) == 0 or not math.isfinite(value):
                raise ValueError(
                    f"sentence {sentence}: n-gram {brief(ngram)} needs at least one token and a "
                    f"finite posterior, got {brief(value)}"
                )
        width = check_ngram_order(
            "the longest n-gram's length", max((len(ngram) for _, ngram, _ in rows), default=1)
        )
        token_ids = torch.zeros((len(rows), width), dtype=torch.int64)
        lengths = torch.tensor([len(ngram) for _, ngram, _ in rows], dtype=torch.int64)
        for row, (_, ngram, _) in enumerate(rows):
            token_ids[row, : len(ngram)] = torch.tensor(ngram, dtype=torch.int64)
        groups = torch.tensor([s for s, _, _ in rows], dtype=torch.int64)
        # The lone bos is never generated (SGNMT skips n-grams ending in <s> too); when bos and
        # eos are one token, the unigram is the eos one and keeps its value.
        lone_bos = (bos_id,) if bos_id is not None and bos_id != eos_id else None
        scores = torch.tensor(
            [0.0 if ngram == lone_bos else value for _, ngram, value in rows], dtype=torch.float64
        )
        trie = build_trie(
            token_ids.to(device), lengths.to(device), groups.to(device), width, len(ngrams)
        )
        values = []
        for order, entries in enumerate(trie.entries, start=1):
            # Each listed n-gram is the one of its own length starting at position 0.
            at_start = entries.view(len(rows), width)[:, 0]
            listed = (lengths.to(at_start.device) == order) & (at_start >= 0)
            table = torch.zeros(trie.size + 1, dtype=torch.float64, device=at_start.device)
            table.index_put_((torch.where(listed, at_start, trie.size),), scores.to(table.device))
            table[trie.size] = 0.0  # the sentinel
            values.append(table)
        return NgramPosteriors.from_trie(trie, tuple(values), bos_id, eos_id)


def ngram_posteriors(
    ids: Tensor,
    lengths: Tensor,
    scores: Tensor,
    *,
    alpha: float = 1.0,
    max_ngram_order: int = 4,
    bos_id: int | None = None,
    eos_id: int | None = None,
    validate: bool = True,
) -> NgramPosteriors:
    """N-gram posteriors of ``B`` sentences' N-best evidence, all sentences at once.

    ``P(u | E_b) = sum_{i: u in E_bi} exp(alpha * s_bi) / sum_j exp(alpha * s_bj)``: each
    hypothesis counts once, however often ``u`` occurs in it. The fields of an :class:`Evidence`
    are the first three arguments: ``ngram_posteriors(*evidence)``.

    Args:
        ids: ``[B, M, L]`` integer hypotheses, ``M`` per sentence (padding ignored).
        lengths: ``[B, M]`` integer lengths, ``0 <= lengths <= L``.
        scores: ``[B, M]`` float scores ``s`` (e.g. log-probabilities); ``-inf`` marks an absent
            hypothesis (padding of shorter lists).
        alpha: Scale of the scores (``0`` weighs all hypotheses equally).
        max_ngram_order: ``N``, highest n-gram order, at most
            :data:`~tensortext._checks.MAX_NGRAM_ORDER`; orders above the longest hypothesis
            share one empty table and cost nothing.
        bos_id, eos_id: If given, each hypothesis is read as ``bos y eos``, so that n-grams at the
            sentence boundaries have posteriors too (the lone ``bos`` gets none).
        validate: Check value ranges (one host sync); shapes and dtypes are always checked.

    Returns:
        :class:`NgramPosteriors` on the evidence's device.

    Raises:
        TypeError: a wrong type or dtype.
        ValueError: a wrong shape, device or value, before any work.

    Example:
        >>> ids = torch.tensor([[[5, 6, 7], [5, 7, -1]]])  # one sentence, two hypotheses
        >>> post = ngram_posteriors(ids, torch.tensor([[3, 2]]), torch.tensor([[0.0, 0.0]]))
        >>> post.lookup(torch.tensor([[5], [6]]), torch.tensor([0, 0])).tolist()
        [1.0, 0.5]
    """
    check_evidence(ids, lengths, scores, alpha, max_ngram_order, validate)
    B, M, _ = ids.shape
    present = scores > -math.inf
    logits = torch.where(present, alpha * scores, -math.inf)
    # A sentence without hypotheses gets NaN from softmax: it has no evidence, so weight 0.
    weights = torch.softmax(logits, dim=1).nan_to_num(0.0)
    token_ids, wrapped, offset = _with_boundaries(ids.long(), lengths.long(), bos_id, eos_id)
    wrapped = torch.where(present, wrapped, 0)  # absent hypotheses add no n-grams
    width = token_ids.shape[2]
    trie = build_trie(
        token_ids.reshape(B * M, width),
        wrapped.reshape(B * M),
        torch.arange(B, device=ids.device).repeat_interleave(M),
        max_ngram_order,
        B,
    )
    values = _hypothesis_counts(trie, weights.reshape(B * M), width, skip_lone_bos=bool(offset))
    return NgramPosteriors.from_trie(trie, values, bos_id, eos_id)


def check_evidence(
    ids: Tensor,
    lengths: Tensor,
    scores: Tensor,
    alpha: float,
    max_ngram_order: int,
    validate: bool,
) -> None:
    """The checks of :func:`ngram_posteriors`; value ranges only with ``validate`` (one sync)."""
    check_integer_tensor("ids", ids, shape="[B, M, L]")
    check_shape("ids", ids, [None, None, None], "[B, M, L]")
    B, M, L = ids.shape
    check_lengths("lengths", lengths, (B, M), ids.device, "ids")
    check_float_tensor("scores", scores, shape="[B, M]")
    check_shape("scores", scores, [B, M], f"[B, M] = [{B}, {M}]")
    check_same_device("scores", scores, ids.device, "ids")
    check_float("alpha", alpha)
    check_ngram_order("max_ngram_order", max_ngram_order)
    if validate and lengths.numel():
        if bool(((lengths < 0) | (lengths > L)).any()):
            raise ValueError(f"lengths must be in 0..{L}")
        if bool((scores.isnan() | (scores == math.inf)).any()):
            raise ValueError("scores must be finite or -inf (absent), found NaN or +inf")


def _hypothesis_counts(
    trie: Trie, row_weights: Tensor, width: int, *, skip_lone_bos: bool
) -> tuple[Tensor, ...]:
    """Per order, ``[size + 1]`` sums of the weights of the rows holding each entry (once each).

    Args:
        trie: Built over ``S`` rows of ``width`` positions.
        row_weights: ``[S]`` the weight of each hypothesis row.
        width: ``L``, positions per row.
        skip_lone_bos: Position 0 holds a bos marker whose unigram is never generated.
    """
    rows = row_weights.numel()
    device = row_weights.device
    row_of_position = torch.arange(rows, device=device).repeat_interleave(width)
    position_weight = row_weights[row_of_position]
    values: list[Tensor] = []
    for order, entries in enumerate(trie.entries, start=1):
        if values and entries is trie.entries[order - 2]:  # a shared empty order (build_trie)
            values.append(values[-1])
            continue
        candidate = entries >= 0
        if order == 1 and skip_lone_bos:
            # Leaving the bos out before picking first occurrences keeps an EOS equal to the
            # bos counted.
            candidate &= torch.arange(width, device=device).repeat(rows) > 0
        # Each hypothesis counts an n-gram once: only the first (entry, row) pair adds its weight.
        keys = torch.where(candidate, entries * rows + row_of_position, -1)
        counted = candidate & first_occurrences(keys)
        table = torch.zeros(trie.size + 1, dtype=row_weights.dtype, device=device)
        table.index_add_(0, torch.where(counted, entries, trie.size), position_weight)
        table[trie.size] = 0.0  # the sentinel (it collected the uncounted positions)
        values.append(table)
    return tuple(values)


def _with_boundaries(
    ids: Tensor, lengths: Tensor, bos_id: int | None, eos_id: int | None
) -> tuple[Tensor, Tensor, int]:
    """``[B, M, L]`` hypotheses as ``bos y eos`` when the markers are given.

    Returns:
        The new ids ``[B, M, L']``, lengths ``[B, M]`` and how many columns the bos takes (0 or 1).
    """
    if bos_id is None and eos_id is None:
        return ids, lengths, 0
    offset = int(bos_id is not None)
    B, M, L = ids.shape
    wrapped = torch.full((B, M, L + 2), PAD_ID, dtype=ids.dtype, device=ids.device)
    wrapped[:, :, offset : offset + L] = ids
    if bos_id is not None:
        wrapped[:, :, 0] = bos_id
    if eos_id is not None:
        wrapped.scatter_(2, (lengths + offset).unsqueeze(2), eos_id)
    return wrapped, lengths + offset + int(eos_id is not None), offset
