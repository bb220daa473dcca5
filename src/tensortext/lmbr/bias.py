"""LMBR scores inside batched beam search (Iglesias et al., 2018, Equation 2).

Every step of the decoder adds, for each live prefix ``h`` and every candidate token ``y``::

    weight * (theta[0] * [y is not EOS] + sum_{n=1..N} theta[n] * P(last n tokens of h.y | E))

where ``P(u | E)`` is the posterior of n-gram ``u`` in an evidence space ``E``
(:mod:`tensortext.lmbr.posteriors`) and ``theta`` comes from :func:`lmbr_theta` (Tromble et
al., 2008). Summed over a hypothesis, the increments are its linear BLEU gain
``theta[0] * |y| + sum_u theta[|u|] * count_u(y) * P(u | E)``.

* :class:`LMBRBias` is the ``score_bias`` of :func:`~tensortext.decode.beam_search` for one
  batch of sentences.
* :func:`lmbr_bias_factory` builds one per batch from the evidence of a whole corpus: the
  ``score_bias`` of :func:`~tensortext.decode.translate`, used by the CLI, the demo and bench.

With ``bos_id``/``eos_id`` on the posteriors, the decoder's histories start with ``bos`` and
n-grams ending in EOS score the EOS candidate. ``theta[0]`` never applies to EOS (SGNMT's
word-count predictor).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import cast

import torch
from torch import Tensor

from tensortext._checks import (
    MAX_VOCAB_SIZE,
    brief,
    check_float,
    check_int,
    check_integer_tensor,
    check_ngram_order,
    check_same_device,
)
from tensortext.lmbr.posteriors import Evidence, NgramPosteriors, check_evidence, ngram_posteriors

__all__ = ["LMBRBias", "lmbr_bias_factory", "lmbr_theta"]


def lmbr_theta(p: float, r: float, *, T: float = 10.0, max_ngram_order: int = 4) -> Tensor:
    """Linear BLEU weights of Tromble et al. (2008) as ucam-smt sets them.

    ``theta[0] = -1/T`` and ``theta[n] = 1 / (N * T * p * r**(n-1))`` for ``n = 1..N``, where
    ``p`` is the unigram precision and ``r`` the mean ratio of successive n-gram precisions,
    measured on development data (ucam-smt's example: ``p=0.7410, r=0.6200``).

    Args:
        p: Unigram precision, > 0.
        r: Precision ratio, > 0.
        T: Temperature, > 0.
        max_ngram_order: ``N``, at most :data:`~tensortext._checks.MAX_NGRAM_ORDER`.

    Returns:
        ``[N + 1]`` float64.

    Raises:
        TypeError: a setting that is not a number (or not an int, for ``max_ngram_order``).
        ValueError: a setting that is not finite and positive, or ``max_ngram_order`` outside
            ``1..MAX_NGRAM_ORDER``.

    Example:
        >>> [round(x, 4) for x in lmbr_theta(0.741, 0.62).tolist()]
        [-0.1, 0.0337, 0.0544, 0.0878, 0.1416]
    """
    for name, value in (("p", p), ("r", r), ("T", T)):
        if not (math.isfinite(check_float(name, value, finite=False)) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {brief(value)}")
    check_ngram_order("max_ngram_order", max_ngram_order)
    orders = torch.arange(max_ngram_order, dtype=torch.float64)
    theta_n = 1.0 / (max_ngram_order * T * p * r**orders)
    return torch.cat([torch.tensor([-1.0 / T], dtype=torch.float64), theta_n])


class LMBRBias:
    """Per-step LMBR scores for the live prefixes of ``B`` sentences x ``K`` beams.

    ``bias(tokens [B*K, t]) -> [B*K, V]``, where row ``r`` belongs to sentence ``r // K`` and the
    first ``prompt_len`` tokens of each row are not part of the hypothesis (the decoder start
    token, or a prompt). Pass it as ``beam_search(score_bias=...)``.

    The paper's ``GetMatrixByRows(L, h)`` without a dense ``histories x V`` matrix: a dense
    ``[B, V]`` base row per sentence holds ``theta[0]`` and the unigram terms, and each call
    looks up every row's histories in the trie and scatters the few n-grams that extend them.
    No host sync per call; the constructor syncs once (vocabulary check and widest fan-out).

    Args:
        posteriors: :class:`NgramPosteriors` of the ``B`` sentences.
        theta: ``[N + 1]`` weights (:func:`lmbr_theta`), ``N = posteriors.max_ngram_order``.
        vocab_size: ``V`` of the decoder, at most :data:`~tensortext._checks.MAX_VOCAB_SIZE`
            (a dense ``[B, V]`` row per sentence is allocated).
        eos_id: The decoder's EOS ID, or several.
        weight: Scale of the whole bias (LMBR's weight against the model's log-probs).
        prompt_len: Leading tokens of each row that precede the hypothesis.

    Raises:
        ValueError: theta of the wrong length or not finite, ``vocab_size`` above
            ``MAX_VOCAB_SIZE``, an EOS outside the vocabulary or other than the posteriors', an
            evidence token outside the vocabulary.
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
        theta_list = _checked_theta(theta, posteriors.max_ngram_order)
        check_float("weight", weight)
        _check_vocab_size(vocab_size)
        check_int("prompt_len", prompt_len, minimum=0)
        eos_ids = _checked_eos(eos_id, vocab_size, posteriors)
        self.posteriors = posteriors
        self.vocab_size = vocab_size
        self.prompt_len = prompt_len
        self.theta = [weight * x for x in theta_list]
        # Everything data-dependent is settled here, once: token range and the widest fan-out.
        self._fan_out = _fan_outs(posteriors, vocab_size)
        B = posteriors.num_sentences
        base = torch.full(
            (B, vocab_size), self.theta[0], dtype=torch.float32, device=posteriors.device
        )
        base[:, eos_ids] = 0.0
        self._add_children(base, torch.arange(B, device=posteriors.device), 1)
        self._base = base

    def __call__(self, tokens: Tensor) -> Tensor:
        """``[B*K, V]`` LMBR scores of every next token for the prefixes ``tokens [B*K, t]``."""
        posteriors = self.posteriors
        B = posteriors.num_sentences
        check_integer_tensor("tokens", tokens, shape="[B*K, t]")
        if tokens.dim() != 2 or B == 0 or tokens.shape[0] % B:
            raise ValueError(
                f"tokens must be [B*K, t] with B = {B} sentences, got {list(tokens.shape)}"
            )
        check_same_device("tokens", tokens, posteriors.device, "the posteriors")
        tokens = tokens.long()
        generated = tokens.shape[1] - self.prompt_len
        if generated < 0:
            raise ValueError(
                f"tokens has {tokens.shape[1]} columns, fewer than prompt_len={self.prompt_len}"
            )
        rows, K = tokens.shape[0], tokens.shape[0] // B
        sentence = torch.arange(rows, device=tokens.device) // K
        scores = self._base.index_select(0, sentence)
        N = posteriors.max_ngram_order
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


def _check_vocab_size(vocab_size: object) -> int:
    """``1 <= vocab_size <= MAX_VOCAB_SIZE``, before the ``[B, V]`` base row is allocated."""
    vocab = check_int("vocab_size", vocab_size, minimum=1)
    if vocab > MAX_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size must be <= {MAX_VOCAB_SIZE} (token IDs fit int32), got {brief(vocab)}; "
            "pass the decoder's output size (its log-probs' last dimension)"
        )
    return vocab


def _checked_theta(theta: Tensor | Sequence[float], N: int) -> list[float]:
    """``theta`` as ``N + 1`` finite floats (one host copy)."""
    if isinstance(theta, Tensor) and theta.numel() != N + 1:  # before copying a huge tensor
        raise ValueError(
            f"theta must hold {N + 1} weights (theta_0..theta_{N}) for posteriors of order {N}, "
            f"got a tensor of shape {list(theta.shape)}; build it with "
            f"lmbr_theta(p, r, max_ngram_order={N})"
        )
    theta_list = [float(x) for x in (theta.tolist() if isinstance(theta, Tensor) else theta)]
    if len(theta_list) != N + 1:
        raise ValueError(
            f"theta must hold {N + 1} weights (theta_0..theta_{N}) for posteriors of order {N}, "
            f"got {len(theta_list)}; build it with lmbr_theta(p, r, max_ngram_order={N})"
        )
    bad = next((i for i, x in enumerate(theta_list) if not math.isfinite(x)), None)
    if bad is not None:
        raise ValueError(f"theta must be finite, got theta[{bad}] = {theta_list[bad]}")
    return theta_list


def _checked_eos(
    eos_id: int | Sequence[int], vocab_size: int, posteriors: NgramPosteriors
) -> list[int]:
    """The EOS IDs as a list, each in the vocabulary and agreeing with the posteriors'."""
    eos_ids = [eos_id] if isinstance(eos_id, int) else list(eos_id)
    if not eos_ids or not all(0 <= e < vocab_size for e in eos_ids):
        raise ValueError(f"eos_id must be in 0..{vocab_size - 1}, got {brief(eos_id)}")
    if posteriors.eos_id is not None and posteriors.eos_id not in eos_ids:
        raise ValueError(
            f"the posteriors end sentences with {posteriors.eos_id}, but the decoder's EOS is "
            f"{brief(eos_id)}; build them with eos_id={eos_ids[0]}"
        )
    return eos_ids


def _fan_outs(posteriors: NgramPosteriors, vocab_size: int) -> list[int]:
    """Per order, the most children of one history; checks every evidence token is in ``V``.

    Two host syncs per order (once per :class:`LMBRBias`).
    """
    N = posteriors.max_ngram_order
    fan_out = [0] * (N + 1)
    for order in range(1, N + 1):
        if order > 1 and posteriors.parents[order - 1] is posteriors.parents[order - 2]:
            fan_out[order] = fan_out[order - 1]  # a shared empty order: no sync
            continue
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
        fan_out[order] = int(counts.max()) if counts.numel() else 0
    return fan_out


def lmbr_bias_factory(
    evidence: Evidence | Sequence[Mapping[tuple[int, ...], float]],
    theta: Tensor | Sequence[float],
    *,
    vocab_size: int,
    eos_id: int | Sequence[int],
    weight: float = 1.0,
    alpha: float = 1.0,
    max_ngram_order: int = 4,
    bos_id: int | None = None,
    end_id: int | None = None,
) -> Callable[[Tensor, int], LMBRBias]:
    """Per-batch LMBR biases over a corpus's evidence: the ``score_bias`` of ``translate``.

    The evidence is checked once, here; each call builds the posteriors of one batch's sentences
    only (so a batch's tables stay small) and wraps them in an :class:`LMBRBias`.

    Args:
        evidence: The N-best evidence of all ``N`` sentences (:class:`Evidence`, e.g. from
            :func:`~tensortext.formats.read_nbest` or :meth:`Evidence.from_beam_output`), or one
            ``{ngram: posterior}`` table per sentence (e.g. from
            :func:`~tensortext.formats.read_ngram_posterior_files`).
        theta: ``[max_ngram_order + 1]`` weights (:func:`lmbr_theta`); with tables, cut to the
            order of each batch's longest n-gram.
        vocab_size: ``V`` of the decoder.
        eos_id: The decoder's EOS ID, or several.
        weight: Scale of the whole bias.
        alpha: Scale of the n-best scores (n-best evidence only).
        max_ngram_order: ``N``, the highest n-gram order (tables may not hold longer n-grams).
        bos_id: The sentence-start marker of the evidence's n-grams, if any.
        end_id: The sentence-end marker: with n-best evidence, each hypothesis is read as
            ``y end_id`` so n-grams ending the sentence score the EOS candidate; with tables,
            the ID the tables use for ``</s>``. ``None``: no sentence-end n-grams.

    Returns:
        ``factory(batch_indices [n], prompt_len) -> LMBRBias`` for those sentences, with the
        decoder's prompt width (1 for a start token). The bias lives on the device of
        ``batch_indices`` (``translate`` puts them on the sources' device), wherever the evidence
        is.

    Raises:
        TypeError, ValueError: bad evidence or settings, before any batch.

    Example:
        >>> tables = [{(5,): 1.0}, {(6,): 0.5, (6, 7): 0.5}]  # two sentences' posteriors
        >>> factory = lmbr_bias_factory(tables, lmbr_theta(0.741, 0.62), vocab_size=8, eos_id=0)
        >>> bias = factory(torch.tensor([1]), 1)  # sentence 1 alone, after a start token
        >>> [round(x, 4) for x in bias(torch.tensor([[1, 6]]))[0].tolist()]  # history: 6
        [0.0, -0.1, -0.1, -0.1, -0.1, -0.1, -0.0831, -0.0728]
    """
    check_ngram_order("max_ngram_order", max_ngram_order)
    theta_list = _checked_theta(theta, max_ngram_order)
    check_float("weight", weight)
    _check_vocab_size(vocab_size)

    def bias(posteriors: NgramPosteriors, prompt_len: int) -> LMBRBias:
        order = posteriors.max_ngram_order  # tables: the batch's longest n-gram
        return LMBRBias(
            posteriors,
            theta_list[: order + 1],
            vocab_size=vocab_size,
            eos_id=eos_id,
            weight=weight,
            prompt_len=prompt_len,
        )

    if isinstance(evidence, tuple) and evidence and isinstance(evidence[0], Tensor):
        nbest = Evidence(*evidence)
        check_evidence(*nbest, alpha, max_ngram_order, True)  # once: one host sync
        return _nbest_factory(nbest, bias, alpha, max_ngram_order, bos_id, end_id)
    tables = cast("list[Mapping[tuple[int, ...], float]]", list(evidence))
    longest = max((len(ngram) for table in tables for ngram in table), default=0)
    if longest > max_ngram_order:
        raise ValueError(
            f"the posterior tables hold {longest}-grams but max_ngram_order={max_ngram_order}; "
            f"pass max_ngram_order={longest}"
        )
    return _tables_factory(tables, bias, bos_id, end_id)


_MakeBias = Callable[[NgramPosteriors, int], LMBRBias]


def _nbest_factory(
    evidence: Evidence,
    bias: _MakeBias,
    alpha: float,
    max_ngram_order: int,
    bos_id: int | None,
    end_id: int | None,
) -> Callable[[Tensor, int], LMBRBias]:
    """Per batch: :func:`ngram_posteriors` of the batch's rows (checked once, by the caller)."""
    ids, lengths, scores = evidence

    def from_nbest(batch: Tensor, prompt_len: int) -> LMBRBias:
        rows, device = batch.to(ids.device), batch.device
        posteriors = ngram_posteriors(
            ids[rows].to(device),
            lengths[rows].to(device),
            scores[rows].to(device),
            alpha=alpha,
            max_ngram_order=max_ngram_order,
            bos_id=bos_id,
            eos_id=end_id,
            validate=False,
        )
        return bias(posteriors, prompt_len)

    return from_nbest


def _tables_factory(
    tables: list[Mapping[tuple[int, ...], float]],
    bias: _MakeBias,
    bos_id: int | None,
    end_id: int | None,
) -> Callable[[Tensor, int], LMBRBias]:
    """Per batch: :meth:`NgramPosteriors.from_ngrams` of the batch's tables."""

    def from_tables(batch: Tensor, prompt_len: int) -> LMBRBias:
        chosen = [tables[i] for i in batch.tolist()]  # host copy of the indices, once per batch
        posteriors = NgramPosteriors.from_ngrams(
            chosen, bos_id=bos_id, eos_id=end_id, device=batch.device
        )
        return bias(posteriors, prompt_len)

    return from_tables
