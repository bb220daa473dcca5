"""LMBR n-gram posteriors inside batched beam search (Iglesias et al., 2018, Equation 2).

Every step of the decoder adds, for each live prefix ``h`` and every candidate token ``y``::

    weight * (theta[0] * [y is not EOS] + sum_{n=1..N} theta[n] * P(last n tokens of h.y | E))

where ``P(u | E)`` is the posterior of n-gram ``u`` in an evidence space ``E`` (an N-best list of
another system, samples, or posteriors computed elsewhere, e.g. from HiFST lattices) and
``theta`` comes from :func:`lmbr_theta` (Tromble et al., 2008).  Summed over a hypothesis, the
increments are its linear BLEU gain ``theta[0] * |y| + sum_u theta[|u|] * count_u(y) * P(u | E)``.

* :func:`ngram_posteriors` computes ``P(u | E)`` for a batch of sentences at once with the shared
  n-gram core (:mod:`tensortext.ngrams`), into an :class:`NgramPosteriors` trie of sorted tensors.
* :class:`LMBRBias` is the ``score_bias`` of :func:`~tensortext.decode.beam.beam_search`;
  :class:`LMBRLogitsProcessor` the same for ``transformers``' ``generate``.
* :func:`read_nbest` and :func:`read_ngram_posterior_files` read Moses n-best lists and
  SGNMT/ucam-smt n-gram posterior files; :func:`mbr_rerank` reranks an N-best list by expected
  sentence BLEU.

Sentence boundaries: n-grams are over the target tokens only, unless ``bos_id``/``eos_id`` are
given, in which case every evidence hypothesis is read as ``bos y eos`` (as SGNMT does with
``<s>``/``</s>``), the decoder's histories start with ``bos``, and n-grams ending in EOS score the
EOS candidate.  ``theta[0]`` never applies to EOS (SGNMT's word-count predictor).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import torch
from torch import Tensor

from tensortext.ngrams import compact_ids, first_occurrences, iter_ngram_ids

__all__ = [
    "Evidence",
    "LMBRBias",
    "LMBRLogitsProcessor",
    "MBRResult",
    "NgramPosteriors",
    "lmbr_theta",
    "mbr_rerank",
    "ngram_posteriors",
    "read_nbest",
    "read_ngram_posterior_files",
]

_KEY_FILL = torch.iinfo(torch.int64).max  # sorts after every real key


@dataclass(frozen=True)
class NgramPosteriors:
    """Posteriors ``P(u | E)`` of the n-grams of ``B`` sentences' evidence, as a trie of tensors.

    Built by :func:`ngram_posteriors` or :meth:`from_ngrams`; query with :meth:`lookup`.  Order
    ``n`` holds one entry per distinct (sentence, n-gram), sorted by the key
    ``parent * key_base + rank(last token)`` where ``parent`` is the entry of the n-gram's first
    ``n - 1`` tokens at order ``n - 1`` (at order 1, the sentence index).  The children of a
    history are therefore one contiguous run of its order, found with ``searchsorted``.  Tables
    have a fixed size (no host sync to build them); unused entries hold the largest int64 key.
    """

    num_sentences: int
    key_base: int
    token_values: Tensor  # [T] sorted distinct evidence tokens (tail repeats the largest)
    num_tokens: Tensor  # [] how many of token_values are distinct
    # Per order, E + 1 entries: the last one is a sentinel (largest key, no parent, value 0) that
    # every failed search can land on.
    keys: tuple[Tensor, ...]  # per order: [E + 1] int64, sorted
    parents: tuple[Tensor, ...]  # per order: [E + 1] int64 entry of the prefix (-1 for unused)
    last_tokens: tuple[Tensor, ...]  # per order: [E + 1] int64 last token of the n-gram
    values: tuple[Tensor, ...]  # per order: [E + 1] float posterior (0 for prefixes only)
    bos_id: int | None = None
    eos_id: int | None = None

    @property
    def size(self) -> int:
        """Entries per order, not counting the sentinel entry that ends every table."""
        return self.keys[0].numel() - 1

    @property
    def max_order(self) -> int:
        """``N``, the highest n-gram order."""
        return len(self.keys)

    @property
    def device(self) -> torch.device:
        return self.token_values.device

    def to(self, device: torch.device | str) -> NgramPosteriors:
        """A copy on ``device``."""

        def move(tensors: tuple[Tensor, ...]) -> tuple[Tensor, ...]:
            return tuple(t.to(device) for t in tensors)

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
            ngrams: ``[Q, n]`` int64 token IDs, ``1 <= n <= max_order``.
            sentence: ``[Q]`` int64 in ``0..B-1``.

        Returns:
            ``[Q]`` float posteriors.
        """
        if ngrams.dim() != 2 or not 1 <= ngrams.shape[1] <= self.max_order:
            raise ValueError(
                f"ngrams must be [Q, n] with 1 <= n <= {self.max_order}, got {list(ngrams.shape)}"
            )
        if sentence.shape != ngrams.shape[:1]:
            raise ValueError(
                f"sentence must be [Q] = [{ngrams.shape[0]}], got {list(sentence.shape)}"
            )
        for name, tensor in (("ngrams", ngrams), ("sentence", sentence)):
            _check_integer(name, tensor, self.device)
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
        """Posteriors given explicitly, e.g. read by :func:`read_ngram_posterior_files`.

        Args:
            ngrams: For each of ``B`` sentences, ``{(token, ...): posterior}``.  Prefixes need
                not be listed; an unlisted n-gram has posterior 0.
            bos_id, eos_id: The boundary tokens these n-grams use, if any (see the module doc).
            device: Where the tables go (CPU by default).
        """
        rows = [
            (s, ngram, value) for s, table in enumerate(ngrams) for ngram, value in table.items()
        ]
        for sentence, ngram, value in rows:
            if len(ngram) == 0 or not math.isfinite(value):
                raise ValueError(
                    f"sentence {sentence}: n-gram {ngram!r} needs at least one token and a finite "
                    f"posterior, got {value!r}"
                )
        max_order = max((len(ngram) for _, ngram, _ in rows), default=1)
        width = max_order
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
        trie = _build_trie(
            token_ids.to(device), lengths.to(device), groups.to(device), max_order, len(ngrams)
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
        return trie.posteriors(tuple(values), bos_id, eos_id)


def ngram_posteriors(
    evidence_ids: Tensor,
    evidence_lens: Tensor,
    evidence_scores: Tensor,
    *,
    alpha: float = 1.0,
    max_order: int = 4,
    bos_id: int | None = None,
    eos_id: int | None = None,
    validate: bool = True,
) -> NgramPosteriors:
    """N-gram posteriors of ``B`` sentences' N-best evidence, all sentences at once.

    ``P(u | E_b) = sum_{i: u in E_bi} exp(alpha * s_bi) / sum_j exp(alpha * s_bj)``: each
    hypothesis counts once, however often ``u`` occurs in it.

    Args:
        evidence_ids: ``[B, M]`` hypotheses of ``L`` tokens: ``[B, M, L]`` int64 (padding ignored).
        evidence_lens: ``[B, M]`` int64 lengths, ``0 <= lens <= L``.
        evidence_scores: ``[B, M]`` float scores ``s`` (e.g. log-probabilities); ``-inf`` marks an
            absent hypothesis (padding of shorter lists).
        alpha: Scale of the scores (``0`` weighs all hypotheses equally).
        max_order: ``N``, highest n-gram order.
        bos_id, eos_id: If given, each hypothesis is read as ``bos y eos``, so that n-grams at the
            sentence boundaries have posteriors too (the lone ``bos`` gets none).
        validate: Check value ranges (one host sync); shapes and dtypes are always checked.

    Returns:
        :class:`NgramPosteriors` on the evidence's device.

    Example:
        >>> ids = torch.tensor([[[5, 6, 7], [5, 7, 0]]])  # one sentence, two hypotheses
        >>> post = ngram_posteriors(ids, torch.tensor([[3, 2]]), torch.tensor([[0.0, 0.0]]))
        >>> post.lookup(torch.tensor([[5], [6]]), torch.tensor([0, 0])).tolist()
        [1.0, 0.5]
    """
    if not isinstance(evidence_ids, Tensor):
        raise TypeError(f"evidence_ids must be a torch.Tensor, got {type(evidence_ids).__name__}")
    if evidence_ids.dim() != 3:
        raise ValueError(f"evidence_ids must be [B, M, L], got {list(evidence_ids.shape)}")
    device = evidence_ids.device
    _check_integer("evidence_ids", evidence_ids, device)
    B, M, L = evidence_ids.shape
    _check_integer("evidence_lens", evidence_lens, device)
    if evidence_lens.shape != (B, M):
        raise ValueError(
            f"evidence_lens must be [B, M] = [{B}, {M}], got {list(evidence_lens.shape)}"
        )
    if evidence_scores.shape != (B, M):
        raise ValueError(
            f"evidence_scores must be [B, M] = [{B}, {M}], got {list(evidence_scores.shape)}"
        )
    if not evidence_scores.is_floating_point() or evidence_scores.device != device:
        raise ValueError(
            f"evidence_scores must be a float tensor on {device}, got {evidence_scores.dtype} on "
            f"{evidence_scores.device}"
        )
    if not math.isfinite(alpha):
        raise ValueError(f"alpha must be finite, got {alpha}")
    if max_order < 1:
        raise ValueError(f"max_order must be >= 1, got {max_order}")
    if validate and evidence_lens.numel():
        if bool(((evidence_lens < 0) | (evidence_lens > L)).any()):
            raise ValueError(f"evidence_lens must be in 0..{L}")
        if bool((evidence_scores.isnan() | (evidence_scores == math.inf)).any()):
            raise ValueError("evidence_scores must be finite or -inf (absent), found NaN or +inf")

    evidence_ids, evidence_lens = evidence_ids.long(), evidence_lens.long()
    present = evidence_scores > -math.inf
    logits = torch.where(present, alpha * evidence_scores, -math.inf)
    # A sentence without hypotheses gets NaN from softmax: it has no evidence, so weight 0.
    weights = torch.softmax(logits, dim=1).nan_to_num(0.0)
    token_ids, lengths, offset = _with_boundaries(evidence_ids, evidence_lens, bos_id, eos_id)
    lengths = torch.where(present, lengths, 0)  # absent hypotheses add no n-grams
    width = token_ids.shape[2]
    rows = B * M
    trie = _build_trie(
        token_ids.reshape(rows, width),
        lengths.reshape(rows),
        torch.arange(B, device=device).repeat_interleave(M),
        max_order,
        B,
    )
    row_of_position = torch.arange(rows, device=device).repeat_interleave(width)
    position_weight = weights.reshape(rows)[row_of_position]
    values = []
    for order, entries in enumerate(trie.entries, start=1):
        candidate = entries >= 0
        if order == 1 and offset:
            # The lone bos is never generated.  Leaving it out before picking first occurrences
            # keeps an EOS equal to the bos counted.
            candidate &= torch.arange(width, device=device).repeat(rows) > 0
        # Each hypothesis counts an n-gram once: only the first (entry, row) pair adds its weight.
        keys = torch.where(candidate, entries * rows + row_of_position, -1)
        counted = candidate & first_occurrences(keys)
        table = torch.zeros(trie.size + 1, dtype=weights.dtype, device=device)
        table.index_add_(0, torch.where(counted, entries, trie.size), position_weight)
        table[trie.size] = 0.0  # the sentinel (it collected the uncounted positions)
        values.append(table)
    return trie.posteriors(tuple(values), bos_id, eos_id)


def lmbr_theta(p: float, r: float, *, T: float = 10.0, max_order: int = 4) -> Tensor:
    """Linear BLEU weights of Tromble et al. (2008) as ucam-smt sets them.

    ``theta[0] = -1/T`` and ``theta[n] = 1 / (N * T * p * r**(n-1))`` for ``n = 1..N``, where
    ``p`` is the unigram precision and ``r`` the mean ratio of successive n-gram precisions,
    measured on development data (ucam-smt's example: ``p=0.7410, r=0.6200``).

    Returns:
        ``[N + 1]`` float64.

    Example:
        >>> [round(x, 4) for x in lmbr_theta(0.741, 0.62).tolist()]
        [-0.1, 0.0337, 0.0544, 0.0878, 0.1416]
    """
    for name, value in (("p", p), ("r", r), ("T", T)):
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {value}")
    if max_order < 1:
        raise ValueError(f"max_order must be >= 1, got {max_order}")
    orders = torch.arange(max_order, dtype=torch.float64)
    theta_n = 1.0 / (max_order * T * p * r**orders)
    return torch.cat([torch.tensor([-1.0 / T], dtype=torch.float64), theta_n])


class LMBRBias:
    """Per-step LMBR scores for the live prefixes of ``B`` sentences x ``K`` beams.

    ``bias(tokens [B*K, t]) -> [B*K, V]``, where row ``r`` belongs to sentence ``r // K`` and the
    first ``prompt_len`` tokens of each row are not part of the hypothesis (the decoder start
    token, or a prompt).  Pass it as ``beam_search(score_bias=...)``.

    The paper's ``GetMatrixByRows(L, h)`` without a dense ``histories x V`` matrix: a dense
    ``[B, V]`` base row per sentence holds ``theta[0]`` and the unigram terms, and each call
    looks up every row's histories in the trie and scatters the few n-grams that extend them.
    No host sync per call.

    Args:
        posteriors: :class:`NgramPosteriors` of the ``B`` sentences.
        theta: ``[N + 1]`` weights (:func:`lmbr_theta`), ``N = posteriors.max_order``.
        vocab_size: ``V`` of the decoder.
        eos_id: The decoder's EOS ID, or several.
        weight: Scale of the whole bias (LMBR's weight against the model's log-probs).
        prompt_len: Leading tokens of each row that precede the hypothesis.
    """

    def __init__(
        self,
        posteriors: NgramPosteriors,
        theta: Tensor | Sequence[float],
        *,
        vocab_size: int,
        eos_id: int | Sequence[int],
        weight: float = 1.0,
        prompt_len: int = 1,
    ) -> None:
        theta_list = [float(x) for x in (theta.tolist() if isinstance(theta, Tensor) else theta)]
        N = posteriors.max_order
        if len(theta_list) != N + 1 or not all(math.isfinite(x) for x in theta_list):
            raise ValueError(
                f"theta must hold {N + 1} finite weights (theta_0..theta_{N}) for posteriors of "
                f"order {N}, got {theta_list}"
            )
        if not math.isfinite(weight):
            raise ValueError(f"weight must be finite, got {weight}")
        if vocab_size < 1:
            raise ValueError(f"vocab_size must be >= 1, got {vocab_size}")
        if prompt_len < 0:
            raise ValueError(f"prompt_len must be >= 0, got {prompt_len}")
        eos_ids = [eos_id] if isinstance(eos_id, int) else list(eos_id)
        if not eos_ids or not all(0 <= e < vocab_size for e in eos_ids):
            raise ValueError(f"eos_id must be in 0..{vocab_size - 1}, got {eos_id}")
        if posteriors.eos_id is not None and posteriors.eos_id not in eos_ids:
            raise ValueError(
                f"the posteriors end sentences with {posteriors.eos_id}, but the decoder's EOS is "
                f"{eos_id}; build them with eos_id={eos_ids[0]}"
            )
        self.posteriors = posteriors
        self.vocab_size = vocab_size
        self.prompt_len = prompt_len
        self.theta = [weight * x for x in theta_list]
        device = posteriors.device
        # Everything data-dependent is settled here, once: token range and the widest fan-out.
        self._fan_out = [0] * (N + 1)
        for order in range(1, N + 1):
            used = posteriors.parents[order - 1] >= 0
            tokens = posteriors.last_tokens[order - 1]
            bad = used & ((tokens < 0) | (tokens >= vocab_size))
            if posteriors.bos_id is not None:
                bad &= tokens != posteriors.bos_id
            if bool(bad.any()):
                raise ValueError(
                    f"evidence token {int(tokens[bad][0])} is outside the decoder's vocabulary "
                    f"0..{vocab_size - 1}"
                )
            parents = torch.where(used, posteriors.parents[order - 1], used.numel())
            counts = torch.bincount(parents, minlength=used.numel() + 1)[:-1]
            self._fan_out[order] = int(counts.max()) if counts.numel() else 0
        B = posteriors.num_sentences
        base = torch.full((B, vocab_size), self.theta[0], dtype=torch.float32, device=device)
        base[:, eos_ids] = 0.0
        self._add_children(base, torch.arange(B, device=device), 1)
        self._base = base

    def __call__(self, tokens: Tensor) -> Tensor:
        """``[B*K, V]`` LMBR scores of every next token for the prefixes ``tokens [B*K, t]``."""
        posteriors = self.posteriors
        B = posteriors.num_sentences
        if tokens.dim() != 2 or B == 0 or tokens.shape[0] % B:
            raise ValueError(
                f"tokens must be [B*K, t] with B = {B} sentences, got {list(tokens.shape)}"
            )
        _check_integer("tokens", tokens, posteriors.device)
        tokens = tokens.long()
        generated = tokens.shape[1] - self.prompt_len
        if generated < 0:
            raise ValueError(
                f"tokens has {tokens.shape[1]} columns, fewer than prompt_len={self.prompt_len}"
            )
        rows, K = tokens.shape[0], tokens.shape[0] // B
        sentence = torch.arange(rows, device=tokens.device) // K
        scores = self._base.index_select(0, sentence)
        N = posteriors.max_order
        history = tokens[:, tokens.shape[1] - min(generated, N - 1) :]
        if posteriors.bos_id is not None and generated < N - 1:
            bos = torch.full((rows, 1), posteriors.bos_id, dtype=torch.int64, device=tokens.device)
            history = torch.cat([bos, history], dim=1)
        ranks = posteriors.token_ranks(history)
        width = history.shape[1]
        for order in range(2, min(N, width + 1) + 1):
            parent = posteriors.walk(ranks[:, width - (order - 1) :], sentence)
            self._add_children(scores, parent, order)
        return scores

    def _add_children(self, scores: Tensor, parent: Tensor, order: int) -> None:
        """Adds ``theta[order] * P`` of every n-gram extending ``parent [R]`` into ``[R, V]``."""
        fan_out = self._fan_out[order]
        if fan_out == 0:
            return
        posteriors = self.posteriors
        start, end = posteriors.children(order, parent)
        entry = start[:, None] + torch.arange(fan_out, device=scores.device)
        inside = entry < end[:, None]
        entry = entry.clamp(max=posteriors.size)  # the sentinel entry past the end
        column = posteriors.last_tokens[order - 1][entry]
        inside &= (column >= 0) & (column < self.vocab_size)  # only a bos marker can fail this
        value = posteriors.values[order - 1][entry].to(scores.dtype) * self.theta[order]
        scores.scatter_add_(1, column.where(inside, 0), value.where(inside, 0.0))


class LMBRLogitsProcessor:
    """:class:`LMBRBias` as a ``transformers`` logits processor for ``generate(num_beams=K)``.

    HF passes log-probabilities of ``input_ids [B*K, t]`` in beam search, row ``r`` belonging to
    sentence ``r // K``.  For encoder-decoder models ``input_ids`` starts with the decoder start
    token (``prompt_len=1``); for decoder-only models set ``prompt_len`` to the prompt width.
    """

    def __init__(self, bias: LMBRBias) -> None:
        self.bias = bias

    def __call__(self, input_ids: Tensor, scores: Tensor) -> Tensor:
        return scores + self.bias(input_ids).to(scores.dtype)


class MBRResult(NamedTuple):
    """Output of :func:`mbr_rerank`."""

    best: Tensor  # [B] index of the candidate with the highest expected BLEU
    expected_bleu: Tensor  # [B, N] expected sentence BLEU of each candidate (-inf when absent)


def mbr_rerank(
    candidates: Tensor,
    lengths: Tensor,
    scores: Tensor | None = None,
    *,
    alpha: float = 1.0,
    include_self: bool = True,
    **bleu_options: object,
) -> MBRResult:
    """Minimum Bayes risk reranking of N-best lists or samples with sentence BLEU.

    Candidate ``i`` of a sentence scores ``sum_j w_j * BLEU(c_i, c_j)`` with
    ``w = softmax(alpha * scores)`` over the sentence's candidates (uniform when ``scores`` is
    ``None``).  All ``B * N * N`` pairs go through :func:`~tensortext.bleu.sentence_bleu` in one
    batched call.

    Args:
        candidates: ``[B, N, L]`` int64 token IDs (without EOS).
        lengths: ``[B, N]`` int64; ``0 <= lengths <= L``.
        scores: ``[B, N]`` float model scores, ``-inf`` marks an absent candidate; or ``None``.
        alpha: Scale of ``scores``.
        include_self: Count ``BLEU(c_i, c_i)`` in the expectation (the textbook definition);
            ``False`` averages over the other candidates only, reweighted to sum to 1.
        bleu_options: Keyword arguments of :func:`~tensortext.bleu.sentence_bleu`
            (``smooth_method``, ``compat``, ``max_ngram_order``, ...).  ``effective_order``
            defaults to ``True`` here, as in sacrebleu's ``sentence_bleu``: without it every
            candidate shorter than 4 tokens scores 0 and short outputs can never win.

    Returns:
        :class:`MBRResult` ``(best [B], expected_bleu [B, N])``.
    """
    from tensortext.bleu import sentence_bleu

    if candidates.dim() != 3:
        raise ValueError(f"candidates must be [B, N, L], got {list(candidates.shape)}")
    B, N, L = candidates.shape
    device = candidates.device
    if lengths.shape != (B, N):
        raise ValueError(f"lengths must be [B, N] = [{B}, {N}], got {list(lengths.shape)}")
    if scores is None:
        scores = torch.zeros((B, N), dtype=torch.float32, device=device)
    elif scores.shape != (B, N) or not scores.is_floating_point():
        raise ValueError(
            f"scores must be a float [B, N] = [{B}, {N}] tensor, got {scores.dtype} "
            f"{list(scores.shape)}"
        )
    if for_bad := [k for k in bleu_options if k in ("hyp_lens", "ref_lens", "pad_id")]:
        raise ValueError(f"mbr_rerank takes lengths itself; remove {for_bad}")
    bleu_options.setdefault("effective_order", True)
    present = scores > -math.inf
    logits = torch.where(present, alpha * scores, -math.inf)
    hyp = candidates[:, :, None, :].expand(B, N, N, L).reshape(B * N * N, L)
    ref = candidates[:, None, :, :].expand(B, N, N, L).reshape(B * N * N, 1, L)
    hyp_lens = lengths[:, :, None].expand(B, N, N).reshape(-1)
    ref_lens = lengths[:, None, :].expand(B, N, N).reshape(-1, 1)
    bleu = sentence_bleu(hyp, ref, hyp_lens=hyp_lens, ref_lens=ref_lens, **bleu_options)  # type: ignore[arg-type]
    bleu = bleu.view(B, N, N)
    evidence = logits[:, None, :].expand(B, N, N)
    if not include_self:
        evidence = evidence.masked_fill(torch.eye(N, dtype=torch.bool, device=device), -math.inf)
    weights = torch.softmax(evidence, dim=2).nan_to_num(0.0)
    expected = (weights * bleu.to(weights.dtype)).sum(dim=2)
    expected = expected.masked_fill(~present, -math.inf)
    return MBRResult(best=expected.argmax(dim=1), expected_bleu=expected)


class Evidence(NamedTuple):
    """N-best evidence as padded tensors (the input of :func:`ngram_posteriors`)."""

    ids: Tensor  # [B, M, L] int64
    lengths: Tensor  # [B, M] int64
    scores: Tensor  # [B, M] float64; -inf where a sentence has fewer than M hypotheses


def read_nbest(
    path: str | Path,
    *,
    num_sentences: int | None = None,
    tokenize: Callable[[str], Sequence[int]] | None = None,
    max_hypotheses: int | None = None,
    device: torch.device | str | None = None,
) -> Evidence:
    """Reads a Moses-style n-best file: ``id ||| tokens ||| features ||| score`` per line.

    Args:
        path: The file; sentence ids are 0-based and lines of a sentence keep their order.
        num_sentences: ``B``; default ``1 + the largest id``.  Sentences without lines get no
            hypotheses (all scores ``-inf``).
        tokenize: Maps the text field to token IDs; default: whitespace-separated integers.
        max_hypotheses: Keep at most this many hypotheses per sentence (the first ones).
        device: Where the tensors go.

    Raises:
        ValueError: naming the file and line of a malformed entry.
    """
    path = Path(path)
    by_sentence: dict[int, list[tuple[list[int], float]]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            fields = [field.strip() for field in line.rstrip("\n").split("|||")]
            if len(fields) < 4:
                raise ValueError(f"{where}: expected 'id ||| tokens ||| features ||| score'")
            try:
                sentence = int(fields[0])
                score = float(fields[3])
            except ValueError:
                raise ValueError(
                    f"{where}: the id must be an integer and the score a number, got "
                    f"{fields[0]!r} and {fields[3]!r}"
                ) from None
            if sentence < 0 or math.isnan(score) or score == math.inf:
                raise ValueError(f"{where}: id must be >= 0 and score finite or -inf")
            if tokenize is None:
                try:
                    ids = [int(token) for token in fields[1].split()]
                except ValueError:
                    raise ValueError(
                        f"{where}: tokens must be integer IDs (pass tokenize= for text)"
                    ) from None
            else:
                try:
                    ids = list(tokenize(fields[1]))
                except ValueError as exc:
                    raise ValueError(f"{where}: {exc}") from None
            by_sentence.setdefault(sentence, []).append((ids, score))
    count = max(by_sentence, default=-1) + 1 if num_sentences is None else num_sentences
    if by_sentence and max(by_sentence) >= count:
        raise ValueError(f"{path}: sentence id {max(by_sentence)} >= num_sentences={count}")
    lists = [by_sentence.get(s, [])[:max_hypotheses] for s in range(count)]
    M = max([len(hyps) for hyps in lists] + [1])
    L = max([len(ids) for hyps in lists for ids, _ in hyps] + [1])
    ids_tensor = torch.zeros((count, M, L), dtype=torch.int64)
    lengths = torch.zeros((count, M), dtype=torch.int64)
    scores = torch.full((count, M), -math.inf, dtype=torch.float64)
    for s, hyps in enumerate(lists):
        for m, (ids, score) in enumerate(hyps):
            ids_tensor[s, m, : len(ids)] = torch.tensor(ids, dtype=torch.int64)
            lengths[s, m] = len(ids)
            scores[s, m] = score
    return Evidence(ids_tensor.to(device), lengths.to(device), scores.to(device))


def read_ngram_posterior_files(
    paths: str | Sequence[str | Path], *, num_sentences: int | None = None, first_id: int = 1
) -> list[dict[tuple[int, ...], float]]:
    """Reads SGNMT/ucam-smt n-gram posterior files: ``w1 ... wn : posterior`` lines.

    Args:
        paths: One file per sentence, or a pattern with ``%d`` for the sentence id (SGNMT's
            convention, with ``num_sentences`` and ``first_id``).
        num_sentences: With a pattern: how many sentences.
        first_id: With a pattern: the id of the first sentence (SGNMT counts from 1).

    Returns:
        For each sentence, ``{ngram: posterior}``; build with :meth:`NgramPosteriors.from_ngrams`
        (with ``bos_id``/``eos_id`` if the files contain ``<s>``/``</s>`` IDs).
    """
    if isinstance(paths, str):
        if "%d" not in paths or num_sentences is None:
            raise ValueError("a path pattern needs '%d' and num_sentences=")
        files = [Path(paths % (first_id + s)) for s in range(num_sentences)]
    else:
        files = [Path(p) for p in paths]
    tables = []
    line_format = re.compile(r"^\s*(-?\d+(?:\s+-?\d+)*)\s*:\s*(\S+)\s*$")
    for file in files:
        table: dict[tuple[int, ...], float] = {}
        with open(file, encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                match = line_format.match(line)
                value = _float_or_none(match.group(2)) if match else None
                if match is None or value is None or not math.isfinite(value):
                    raise ValueError(
                        f"{file}:{number}: expected 'w1 ... wn : posterior' with integer IDs and "
                        f"a finite number, got {line.rstrip()!r}"
                    )
                ngram = tuple(int(w) for w in match.group(1).split())
                if ngram in table:
                    raise ValueError(f"{file}:{number}: n-gram {' '.join(map(str, ngram))} repeats")
                table[ngram] = value
        tables.append(table)
    return tables


def _float_or_none(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class _Trie:
    """Tables of :class:`NgramPosteriors` before the posteriors, plus each position's entries."""

    num_sentences: int
    size: int  # entries per order (= positions), fixed
    token_values: Tensor
    num_tokens: Tensor
    keys: tuple[Tensor, ...]
    parents: tuple[Tensor, ...]
    last_tokens: tuple[Tensor, ...]
    entries: tuple[Tensor, ...]  # per order: [S*L] entry of the n-gram starting there, or -1

    def posteriors(
        self, values: tuple[Tensor, ...], bos_id: int | None, eos_id: int | None
    ) -> NgramPosteriors:
        return NgramPosteriors(
            num_sentences=self.num_sentences,
            key_base=max(self.size, 1),
            token_values=self.token_values,
            num_tokens=self.num_tokens,
            keys=self.keys,
            parents=self.parents,
            last_tokens=self.last_tokens,
            values=values,
            bos_id=bos_id,
            eos_id=eos_id,
        )


def _build_trie(
    token_ids: Tensor, lengths: Tensor, groups: Tensor, max_order: int, num_sentences: int
) -> _Trie:
    """The n-gram trie of rows ``[S, L]`` grouped by sentence, via the shared n-gram core.

    :func:`~tensortext.ngrams.iter_ngram_ids` numbers n-grams by rank of (prefix ID, last token
    rank); renumbering only the n-grams that exist keeps that order, so the keys
    ``parent * P + rank`` of entries ``0..U-1`` come out sorted.
    """
    rows, width = token_ids.shape
    size = rows * width
    device = token_ids.device
    flat_tokens = token_ids.reshape(-1)
    token_rank = compact_ids(flat_tokens)
    positions = torch.arange(size, device=device)
    if size:
        num_tokens = token_rank.max() + 1
        token_values = torch.zeros_like(flat_tokens).scatter_(0, token_rank, flat_tokens)
        token_values = torch.where(positions < num_tokens, token_values, flat_tokens.max())
    else:
        num_tokens = torch.zeros((), dtype=torch.int64, device=device)
        token_values = torch.zeros(1, dtype=torch.int64, device=device)
    key_base = max(size, 1)
    parent = groups.long().repeat_interleave(width)  # order 0: the sentence
    keys, parents, last_tokens, entries = [], [], [], []
    for order, ids in enumerate(iter_ngram_ids(token_ids, lengths, groups, max_order), start=1):
        ids = ids.reshape(-1)
        exists = ids >= 0
        used = torch.zeros(size + 1, dtype=torch.bool, device=device)
        used[torch.where(exists, ids, size)] = True
        dense = used[:size].cumsum(0) - 1
        entry = torch.where(exists, dense[ids.clamp(min=0)], -1)
        last = (positions + order - 1).clamp(max=max(size - 1, 0))
        slot = torch.where(exists, entry, size)  # misses go to a spill slot
        key = torch.full((size + 1,), _KEY_FILL, dtype=torch.int64, device=device)
        key[slot] = parent.clamp(min=0) * key_base + token_rank[last]
        parent_of = torch.full((size + 1,), -1, dtype=torch.int64, device=device)
        parent_of[slot] = parent
        token_of = torch.zeros(size + 1, dtype=torch.int64, device=device)
        token_of[slot] = flat_tokens[last]
        # The spill slot stays as a sentinel past the end: a failed search lands on it.
        key[size] = _KEY_FILL
        parent_of[size] = -1
        keys.append(key)
        parents.append(parent_of)
        last_tokens.append(token_of)
        entries.append(entry)
        parent = entry
    return _Trie(
        num_sentences=num_sentences,
        size=size,
        token_values=token_values,
        num_tokens=num_tokens,
        keys=tuple(keys),
        parents=tuple(parents),
        last_tokens=tuple(last_tokens),
        entries=tuple(entries),
    )


def _with_boundaries(
    ids: Tensor, lengths: Tensor, bos_id: int | None, eos_id: int | None
) -> tuple[Tensor, Tensor, int]:
    """``[B, M, L]`` hypotheses as ``bos y eos`` when the markers are given; returns the new
    ids, lengths and how many columns the bos takes (0 or 1)."""
    if bos_id is None and eos_id is None:
        return ids, lengths, 0
    offset = int(bos_id is not None)
    B, M, L = ids.shape
    wrapped = torch.zeros((B, M, L + 2), dtype=ids.dtype, device=ids.device)
    wrapped[:, :, offset : offset + L] = ids
    if bos_id is not None:
        wrapped[:, :, 0] = bos_id
    if eos_id is not None:
        wrapped.scatter_(2, (lengths + offset).unsqueeze(2), eos_id)
    return wrapped, lengths + offset + int(eos_id is not None), offset


def _check_integer(name: str, tensor: object, device: torch.device) -> None:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise ValueError(f"{name} must be an integer tensor, got {tensor.dtype}")
    if tensor.device != device:
        raise ValueError(f"{name} is on {tensor.device}, expected {device}")
