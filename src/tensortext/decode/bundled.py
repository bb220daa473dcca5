"""A tiny trained encoder-decoder Transformer shipped with the package, with a KV-cached step.

The model reads numbers, ordinals, fractions, percentages, sums of money, dates, times,
timestamps and ranges written with digits and symbols, one word per digit or symbol
(``2 0 2 4 - 0 3 - 0 7``), and writes them out in English words
(``march seventh twenty twenty four``). It is small (about 1M parameters, 2 MB
in float16) and was trained on CPU by ``scripts/train_bundled_model.py``; ``tensortext demo`` and
``tensortext translate`` decode with it to show beam search and BLEU on a real model.

The decoding interface is the one the batched beam search expects from any model:

* :meth:`BundledTranslator.prepare` runs the encoder once per sentence and returns a
  :class:`TranslatorState` for ``N * K`` decoder rows (row ``r`` belongs to sentence ``r // K``);
* :meth:`BundledTranslator.step` takes the whole prefix ``[N * K, t]`` and returns next-token
  log-probabilities ``[N * K, V]``, feeding only the positions the cache has not seen;
* :meth:`BundledTranslator.reorder` moves the self-attention cache rows after a beam step.

The architecture is a pre-LayerNorm Transformer (Vaswani et al. 2017, with the normalisation moved
before each sublayer as in Xiong et al. 2020) with sinusoidal positions and no dropout: training
sentences are drawn fresh for every step from a grammar far larger than the training run, so
there is little to regularise.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "BOS",
    "EOS",
    "PAD",
    "BundledTranslator",
    "TranslatorConfig",
    "TranslatorState",
    "load_bundled_translator",
]

PAD = "<pad>"
BOS = "<s>"
EOS = "</s>"

_MODEL_DIR = "data/model"
_EVIDENCE_MODEL_DIR = "data/evidence_model"


@dataclass(frozen=True)
class TranslatorConfig:
    """Sizes of a :class:`BundledTranslator` (the ``model`` section of ``config.json``).

    Attributes:
        src_vocab_size: number of source word types, specials included.
        tgt_vocab_size: number of target word types ``V``, specials included.
        d_model: width of every hidden state.
        num_heads: attention heads; must divide ``d_model``.
        num_encoder_layers: encoder blocks.
        num_decoder_layers: decoder blocks.
        ffn_dim: hidden width of the feed-forward sublayers.
        max_len: longest source, and longest decoder prefix (start token included).
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 128
    num_heads: int = 4
    num_encoder_layers: int = 2
    num_decoder_layers: int = 2
    ffn_dim: int = 512
    max_len: int = 64

    def __post_init__(self) -> None:
        if self.d_model % self.num_heads:
            raise ValueError(
                f"num_heads={self.num_heads} must divide d_model={self.d_model}; "
                "pick a num_heads that divides it"
            )


@dataclass(frozen=True)
class TranslatorState:
    """What :meth:`BundledTranslator.step` needs besides the prefix; treat it as opaque.

    ``step`` and ``reorder`` write into the self-attention buffers in place (as Hugging Face's
    ``past_key_values`` do) and hand back a state that shares them, so always continue from the
    state they return and drop the one passed in.

    Attributes:
        memory_keys: per decoder layer, cross-attention keys ``[N, H, S, Dh]``, one row per
            sentence rather than per beam: every beam of a sentence attends to the same source.
        memory_values: per decoder layer, cross-attention values ``[N, H, S, Dh]``.
        memory_mask: ``[N, 1, 1, S]`` bool, True on real source positions.
        self_keys: per decoder layer, self-attention keys ``[N * K, H, max_len, Dh]``; positions
            ``>= cache_len`` hold garbage and are never read.
        self_values: per decoder layer, self-attention values, same shape.
        num_beams: ``K``, decoder rows per sentence.
        cache_len: prefix positions already in the self-attention buffers.
    """

    memory_keys: tuple[Tensor, ...]
    memory_values: tuple[Tensor, ...]
    memory_mask: Tensor
    self_keys: tuple[Tensor, ...]
    self_values: tuple[Tensor, ...]
    num_beams: int
    cache_len: int

    @property
    def num_rows(self) -> int:
        """Decoder rows ``N * K``."""
        return int(self.self_keys[0].shape[0])


def _sinusoids(max_len: int, dim: int) -> Tensor:
    """Fixed positional encodings ``[max_len, dim]`` (Vaswani et al. 2017, section 3.5)."""
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(max_len, dim)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)
    return table


class _Attention(nn.Module):
    """Multi-head attention split into projections so callers can cache keys and values."""

    def __init__(self, d_model: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.query = nn.Linear(d_model, d_model)
        self.key_value = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def split_heads(self, x: Tensor) -> Tensor:
        """``[B, L, D]`` -> ``[B, H, L, D / H]``."""
        rows, length, _ = x.shape
        return x.view(rows, length, self.num_heads, -1).transpose(1, 2)

    def queries(self, x: Tensor) -> Tensor:
        """``[B, L, D]`` -> queries ``[B, H, L, Dh]``."""
        return self.split_heads(self.query(x))

    def keys_values(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """``[B, L, D]`` -> keys and values, each ``[B, H, L, Dh]``."""
        keys, values = self.key_value(x).chunk(2, dim=-1)
        return self.split_heads(keys), self.split_heads(values)

    def merge(self, heads: Tensor) -> Tensor:
        """Attention output ``[B, H, L, Dh]`` -> ``[B, L, D]`` through the output projection."""
        rows, _, length, _ = heads.shape
        merged: Tensor = self.out(heads.transpose(1, 2).reshape(rows, length, -1))
        return merged


def _cross_attend(queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tensor:
    """Attends ``N * K`` decoder rows to ``N`` per-sentence memories without copying them K times.

    Args:
        queries: ``[N * K, H, Q, Dh]``, the ``K`` rows of a sentence adjacent.
        keys: ``[N, H, S, Dh]``.
        values: ``[N, H, S, Dh]``.
        mask: ``[N, 1, 1, S]`` bool, True on real source positions.

    Returns:
        ``[N * K, H, Q, Dh]``.
    """
    sentences, heads, _, head_dim = keys.shape
    rows, _, query_len, _ = queries.shape
    beams = rows // sentences
    # The K beams' queries become K * Q queries of one sentence: [N, H, K * Q, Dh].
    grouped = (
        queries.view(sentences, beams, heads, query_len, head_dim)
        .transpose(1, 2)
        .reshape(sentences, heads, beams * query_len, head_dim)
    )
    attended = F.scaled_dot_product_attention(grouped, keys, values, attn_mask=mask)
    return (
        attended.view(sentences, heads, beams, query_len, head_dim)
        .transpose(1, 2)
        .reshape(rows, heads, query_len, head_dim)
    )


class _FeedForward(nn.Module):
    def __init__(self, d_model: int, ffn_dim: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, ffn_dim)
        self.down = nn.Linear(ffn_dim, d_model)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.down(F.gelu(self.up(x)))
        return out


class _EncoderLayer(nn.Module):
    def __init__(self, config: TranslatorConfig) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(config.d_model)
        self.attn = _Attention(config.d_model, config.num_heads)
        self.ffn_norm = nn.LayerNorm(config.d_model)
        self.ffn = _FeedForward(config.d_model, config.ffn_dim)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        h = self.attn_norm(x)
        keys, values = self.attn.keys_values(h)
        attended = F.scaled_dot_product_attention(self.attn.queries(h), keys, values, mask)
        x = x + self.attn.merge(attended)
        out: Tensor = x + self.ffn(self.ffn_norm(x))
        return out


class _Encoder(nn.Module):
    """Source IDs to memory; one call per batch of sentences (tests hook it to count rows)."""

    def __init__(self, config: TranslatorConfig) -> None:
        super().__init__()
        self.scale = math.sqrt(config.d_model)
        self.embed = nn.Embedding(config.src_vocab_size, config.d_model)
        self.layers = nn.ModuleList(_EncoderLayer(config) for _ in range(config.num_encoder_layers))
        self.norm = nn.LayerNorm(config.d_model)

    def forward(self, src_ids: Tensor, mask: Tensor, positions: Tensor) -> Tensor:
        """``src_ids [N, S]``, ``mask [N, 1, 1, S]``, ``positions [S, D]`` -> ``[N, S, D]``."""
        x = self.embed(src_ids) * self.scale + positions
        for layer in self.layers:
            x = layer(x, mask)
        # Padded positions hold finite garbage; the mask keeps every query from reading them.
        memory: Tensor = self.norm(x)
        return memory


class _DecoderLayer(nn.Module):
    def __init__(self, config: TranslatorConfig) -> None:
        super().__init__()
        self.self_norm = nn.LayerNorm(config.d_model)
        self.self_attn = _Attention(config.d_model, config.num_heads)
        self.cross_norm = nn.LayerNorm(config.d_model)
        self.cross_attn = _Attention(config.d_model, config.num_heads)
        self.ffn_norm = nn.LayerNorm(config.d_model)
        self.ffn = _FeedForward(config.d_model, config.ffn_dim)

    def forward(
        self,
        x: Tensor,
        self_keys: Tensor,
        self_values: Tensor,
        start: int,
        memory_keys: Tensor,
        memory_values: Tensor,
        memory_mask: Tensor,
    ) -> Tensor:
        """Runs positions ``start .. start + Q - 1`` of every row.

        Args:
            x: ``[R, Q, D]`` hidden states of the new positions.
            self_keys: ``[R, H, >= start + Q, Dh]`` buffer; positions ``< start`` are filled,
                the new keys are written at ``start .. start + Q - 1``.
            self_values: same, for values.
            start: positions already in the buffers.
            memory_keys: ``[N, H, S, Dh]`` with ``R = N * K``.
            memory_values: ``[N, H, S, Dh]``.
            memory_mask: ``[N, 1, 1, S]`` bool.

        Returns:
            ``[R, Q, D]``.
        """
        end = start + x.shape[1]
        h = self.self_norm(x)
        new_keys, new_values = self.self_attn.keys_values(h)
        self_keys[:, :, start:end] = new_keys
        self_values[:, :, start:end] = new_values
        queries = self.self_attn.queries(h)
        if x.shape[1] == 1:
            causal = None  # the single new position may see the whole prefix
        else:
            # [Q, end]: new position start + i sees cached and new positions up to itself.
            key_pos = torch.arange(end, device=x.device)
            query_pos = torch.arange(start, end, device=x.device)
            causal = key_pos.unsqueeze(0) <= query_pos.unsqueeze(1)
        attended = F.scaled_dot_product_attention(
            queries, self_keys[:, :, :end], self_values[:, :, :end], attn_mask=causal
        )
        x = x + self.self_attn.merge(attended)
        queries = self.cross_attn.queries(self.cross_norm(x))
        x = x + self.cross_attn.merge(
            _cross_attend(queries, memory_keys, memory_values, memory_mask)
        )
        out: Tensor = x + self.ffn(self.ffn_norm(x))
        return out


def _check_int64(name: str, value: object, ndim: int, shape: str) -> Tensor:
    if not isinstance(value, Tensor):
        raise TypeError(
            f"{name} must be a torch.Tensor of shape {shape}, got {type(value).__name__}; "
            "wrap it with torch.tensor(..., dtype=torch.long)"
        )
    if value.dtype != torch.int64:
        raise TypeError(
            f"{name} must have dtype torch.int64, got {value.dtype}; pass {name}.long()"
        )
    if value.dim() != ndim:
        raise ValueError(f"{name} must have shape {shape}, got {tuple(value.shape)}")
    return value


class BundledTranslator(nn.Module):
    """Encoder-decoder Transformer with the decoding interface of :mod:`tensortext.decode`.

    Build it with :func:`load_bundled_translator`; the constructor makes an untrained model (the
    training script uses it). Word IDs are the positions in ``source_vocab`` / ``target_vocab``.

    Attributes:
        config: the sizes.
        source_vocab: source words in ID order (``source_vocab[0]`` is the padding word).
        target_vocab: target words in ID order, ``V`` of them.
        vocab_size: ``V``.
        start_id: decoder start token (BOS); every prefix begins with it.
        eos_id: end of sentence.
        pad_id: target padding; ``step`` never proposes it (log-probability ``-inf``), nor the
            start token.
        src_pad_id: source padding.
        max_len: longest source and longest decoder prefix (start token included), so at most
            ``max_len - 1`` tokens can be generated.

    Example:
        >>> translator = load_bundled_translator()
        >>> src_ids, src_lens = translator.tokenize_source(["4 0 7 1 5"])
        >>> state = translator.prepare(src_ids, src_lens, num_beams=1)
        >>> prefix = torch.tensor([[translator.start_id]])
        >>> log_probs, state = translator.step(prefix, state)
        >>> translator.target_vocab[int(log_probs.argmax())]
        'forty'
    """

    positions: Tensor
    never_produced: Tensor

    def __init__(
        self, config: TranslatorConfig, source_vocab: Sequence[str], target_vocab: Sequence[str]
    ) -> None:
        super().__init__()
        if len(source_vocab) != config.src_vocab_size or len(target_vocab) != config.tgt_vocab_size:
            raise ValueError(
                f"config says {config.src_vocab_size} source and {config.tgt_vocab_size} target "
                f"words but the vocabularies have {len(source_vocab)} and {len(target_vocab)}; "
                "rebuild config.json and vocab.json together with scripts/train_bundled_model.py"
            )
        for side, words, specials in (
            ("source", source_vocab, (PAD,)),
            ("target", target_vocab, (PAD, BOS, EOS)),
        ):
            if len(set(words)) != len(words):
                raise ValueError(f"the {side} vocabulary has duplicate words")
            missing = [word for word in specials if word not in words]
            if missing:
                raise ValueError(f"the {side} vocabulary lacks the special words {missing}")
        self.config = config
        self.source_vocab = list(source_vocab)
        self.target_vocab = list(target_vocab)
        self._source_ids = {word: i for i, word in enumerate(self.source_vocab)}
        self._target_ids = {word: i for i, word in enumerate(self.target_vocab)}
        self.vocab_size = config.tgt_vocab_size
        self.src_pad_id = self._source_ids[PAD]
        self.pad_id = self._target_ids[PAD]
        self.start_id = self._target_ids[BOS]
        self.eos_id = self._target_ids[EOS]
        self.max_len = config.max_len
        self.num_heads = config.num_heads
        self.head_dim = config.d_model // config.num_heads

        self.encoder = _Encoder(config)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, config.d_model)
        self.decoder_layers = nn.ModuleList(
            _DecoderLayer(config) for _ in range(config.num_decoder_layers)
        )
        self.decoder_norm = nn.LayerNorm(config.d_model)
        self.output = nn.Linear(config.d_model, config.tgt_vocab_size)
        # Not saved: they are recomputed from the config, which keeps weights.pt smaller.
        self.register_buffer("positions", _sinusoids(config.max_len, config.d_model), False)
        never = torch.zeros(config.tgt_vocab_size, dtype=torch.bool)
        never[[self.pad_id, self.start_id]] = True
        self.register_buffer("never_produced", never, False)
        self.apply(self._init_weights)

    def _init_weights(self, module: nn.Module) -> None:
        # Embeddings at std d^-0.5, scaled up by sqrt(d) in use: unit variance, the same scale
        # as the sinusoids they are added to (fairseq's recipe).
        if isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, std=self.config.d_model**-0.5)
        elif isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, std=0.02)
            nn.init.zeros_(module.bias)

    @property
    def device(self) -> torch.device:
        """Where the parameters are; inputs must be there too."""
        return self.output.weight.device

    # --------------------------------------------------------------------------------------
    # Text <-> IDs
    # --------------------------------------------------------------------------------------

    def tokenize_source(self, lines: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Splits source lines on whitespace and maps the words to IDs.

        Args:
            lines: ``N`` source sentences, words separated by spaces (``"7 : 3 0 pm"``).

        Returns:
            ``(src_ids [N, S], src_lens [N])`` int64 on the model's device; padding holds
            ``src_pad_id``. ``S = max(1, longest line)``.

        Raises:
            TypeError: ``lines`` is a single string rather than a sequence of them.
            ValueError: a line is empty, longer than ``max_len`` words, or has a word the model
                does not know (the message names the word and the 1-based line number).
        """
        if isinstance(lines, str):
            raise TypeError("lines must be a sequence of sentences, got one str; pass [lines]")
        rows: list[list[int]] = []
        for number, line in enumerate(lines, start=1):
            words = line.split()
            if not words:
                raise ValueError(
                    f"source line {number} is empty; the model translates at least one word, "
                    "so drop empty lines before calling tokenize_source"
                )
            if len(words) > self.max_len:
                raise ValueError(
                    f"source line {number} has {len(words)} words but the model reads at most "
                    f"max_len={self.max_len}; split the line"
                )
            unknown = [word for word in words if word not in self._source_ids or word == PAD]
            if unknown:
                known = " ".join(w for w in self.source_vocab if w != PAD)
                raise ValueError(
                    f"source line {number} has the word {unknown[0]!r}, which the bundled model "
                    f"does not know; write digits and symbols one per word (as in "
                    f"'2 0 2 4 - 0 3 - 0 7'), using only: {known}"
                )
            rows.append([self._source_ids[word] for word in words])
        return self._pad(rows, self.src_pad_id)

    def tokenize_target(self, lines: Sequence[str]) -> tuple[Tensor, Tensor]:
        """Maps target-language lines (references) to target IDs, for token-ID BLEU.

        No start or end token is added. Empty lines are allowed (length 0).

        Args:
            lines: ``N`` sentences in English words (``"seven thirty in the evening"``).

        Returns:
            ``(ids [N, T], lens [N])`` int64 on the model's device, padded with ``pad_id``;
            ``T = max(1, longest line)``.

        Raises:
            TypeError: ``lines`` is a single string.
            ValueError: a word is not in ``target_vocab`` (named, with its 1-based line number).
        """
        if isinstance(lines, str):
            raise TypeError("lines must be a sequence of sentences, got one str; pass [lines]")
        specials = {PAD, BOS, EOS}
        rows: list[list[int]] = []
        for number, line in enumerate(lines, start=1):
            words = line.split()
            unknown = [word for word in words if word not in self._target_ids or word in specials]
            if unknown:
                raise ValueError(
                    f"target line {number} has the word {unknown[0]!r}, which is not in the "
                    "bundled model's target vocabulary (translator.target_vocab); such a word "
                    "can never be matched, so fix or drop the line"
                )
            rows.append([self._target_ids[word] for word in words])
        return self._pad(rows, self.pad_id)

    def _pad(self, rows: list[list[int]], pad_id: int) -> tuple[Tensor, Tensor]:
        lengths = torch.tensor([len(row) for row in rows], dtype=torch.long)
        width = max([len(row) for row in rows] + [1])
        ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        return ids.to(self.device), lengths.to(self.device)

    def detokenize(self, ids: Tensor, lengths: Tensor) -> list[str]:
        """Target IDs back to text.

        Each row is read up to ``lengths`` and up to its first ``eos_id``, whichever comes
        first; the start token and padding are skipped, so beam-search output can be passed with
        or without its leading start token.

        Args:
            ids: ``[N, T]`` int64 target IDs.
            lengths: ``[N]`` int64, positions to read per row.

        Returns:
            ``N`` strings, words joined by single spaces.

        Raises:
            TypeError: wrong dtypes.
            ValueError: wrong shapes, or an ID outside ``[0, V)``.
        """
        _check_int64("ids", ids, 2, "[N, T]")
        _check_int64("lengths", lengths, 1, "[N]")
        if lengths.shape[0] != ids.shape[0]:
            raise ValueError(
                f"lengths has {lengths.shape[0]} rows but ids has {ids.shape[0]}; "
                "pass one length per row"
            )
        skip = {self.pad_id, self.start_id}
        lines = []
        for row, length in zip(ids.tolist(), lengths.tolist(), strict=True):
            words = []
            for token in row[: max(0, length)]:
                if not 0 <= token < self.vocab_size:
                    raise ValueError(
                        f"ids holds {token}, outside the target vocabulary [0, {self.vocab_size})"
                    )
                if token == self.eos_id:
                    break
                if token not in skip:
                    words.append(self.target_vocab[token])
            lines.append(" ".join(words))
        return lines

    # --------------------------------------------------------------------------------------
    # Model
    # --------------------------------------------------------------------------------------

    def _encode(self, src_ids: Tensor, src_lengths: Tensor) -> tuple[Tensor, Tensor]:
        """``[N, S]`` IDs -> memory ``[N, S, D]`` and its mask ``[N, 1, 1, S]``."""
        src_len = src_ids.shape[1]
        valid = torch.arange(src_len, device=src_ids.device) < src_lengths.unsqueeze(1)
        # Padding may hold anything (even IDs outside the vocabulary); the embedding must not
        # see it.
        src_ids = src_ids.masked_fill(~valid, self.src_pad_id)
        mask = valid.view(-1, 1, 1, src_len)
        return self.encoder(src_ids, mask, self.positions[:src_len]), mask

    def _decode(self, tokens: Tensor, state: TranslatorState) -> Tensor:
        """Feeds ``tokens [R, Q]`` at positions ``cache_len ..``; log-probs ``[R, Q, V]``."""
        start = state.cache_len
        end = start + tokens.shape[1]
        x = self.tgt_embed(tokens) * self.encoder.scale + self.positions[start:end]
        for i, layer in enumerate(self.decoder_layers):
            x = layer(
                x,
                state.self_keys[i],
                state.self_values[i],
                start,
                state.memory_keys[i],
                state.memory_values[i],
                state.memory_mask,
            )
        logits = self.output(self.decoder_norm(x)).float()
        logits = logits.masked_fill(self.never_produced, float("-inf"))
        return torch.log_softmax(logits, dim=-1)

    def _empty_state(
        self, memory: Tensor, mask: Tensor, num_beams: int, cache_size: int
    ) -> TranslatorState:
        memory_keys, memory_values = [], []
        for layer in self.decoder_layers:
            keys, values = cast(_DecoderLayer, layer).cross_attn.keys_values(memory)
            memory_keys.append(keys)
            memory_values.append(values)
        rows = memory.shape[0] * num_beams
        shape = (rows, self.num_heads, cache_size, self.head_dim)
        # Allocated once at full length so each step writes one position instead of growing
        # (and copying) the cache; unwritten positions are never read.
        layers = range(len(self.decoder_layers))
        return TranslatorState(
            memory_keys=tuple(memory_keys),
            memory_values=tuple(memory_values),
            memory_mask=mask,
            self_keys=tuple(memory.new_empty(shape) for _ in layers),
            self_values=tuple(memory.new_empty(shape) for _ in layers),
            num_beams=num_beams,
            cache_len=0,
        )

    def forward(self, src_ids: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: log-probabilities after every prefix, with no cache carried over.

        This is the training path and the reference ``step`` is tested against.

        Args:
            src_ids: ``[N, S]`` int64 source IDs, anything beyond ``src_lengths``.
            src_lengths: ``[N]`` int64, in ``[1, S]``.
            tgt_in: ``[N, T]`` int64 decoder input, ``tgt_in[:, 0] == start_id``; positions
                after a row's end may hold anything in the vocabulary (causal attention keeps
                earlier positions from seeing them).

        Returns:
            ``[N, T, V]`` float32 log-probabilities; ``[:, t]`` predicts token ``t + 1``.
        """
        if tgt_in.shape[1] > self.max_len:
            raise ValueError(
                f"tgt_in has {tgt_in.shape[1]} positions, more than max_len={self.max_len}"
            )
        memory, mask = self._encode(src_ids, src_lengths)
        state = self._empty_state(memory, mask, num_beams=1, cache_size=tgt_in.shape[1])
        return self._decode(tgt_in, state)

    @torch.no_grad()
    def prepare(self, src_ids: Tensor, src_lengths: Tensor, num_beams: int) -> TranslatorState:
        """Encodes ``N`` sentences once and sets up ``N * num_beams`` decoder rows.

        Args:
            src_ids: ``[N, S]`` int64 source IDs; positions at or beyond ``src_lengths`` may
                hold anything.
            src_lengths: ``[N]`` int64 in ``[1, S]``; ``S <= max_len``.
            num_beams: ``K >= 1``, decoder rows per sentence (row ``r`` is sentence ``r // K``).

        Returns:
            An empty-cache state for ``N * K`` rows.

        Raises:
            TypeError: wrong types or dtypes.
            ValueError: wrong shapes, a length outside ``[1, S]``, an ID outside the source
                vocabulary, a tensor on another device than the model. The value checks cost
                one host-device sync per batch.
        """
        _check_int64("src_ids", src_ids, 2, "[N, S]")
        _check_int64("src_lengths", src_lengths, 1, "[N]")
        if isinstance(num_beams, bool) or not isinstance(num_beams, int) or num_beams < 1:
            raise ValueError(f"num_beams must be an int >= 1, got {num_beams!r}")
        sentences, src_len = src_ids.shape
        if src_lengths.shape[0] != sentences:
            raise ValueError(
                f"src_lengths has {src_lengths.shape[0]} entries for {sentences} rows of "
                "src_ids; pass one length per sentence"
            )
        if src_len > self.max_len:
            raise ValueError(
                f"src_ids has {src_len} positions but the model reads at most "
                f"max_len={self.max_len}; trim the padding or split the sentences"
            )
        for name, tensor in (("src_ids", src_ids), ("src_lengths", src_lengths)):
            if tensor.device != self.device:
                raise ValueError(
                    f"{name} is on {tensor.device} but the model is on {self.device}; "
                    f"pass {name}.to(translator.device)"
                )
        valid = torch.arange(src_len, device=src_ids.device) < src_lengths.unsqueeze(1)
        bad_ids = valid & ((src_ids < 0) | (src_ids >= self.config.src_vocab_size))
        bad_lengths = (src_lengths < 1) | (src_lengths > src_len)
        if sentences and bool(bad_ids.any() | bad_lengths.any()):  # the one sync
            if bool(bad_lengths.any()):
                raise ValueError(
                    f"src_lengths must lie in [1, {src_len}] (empty sources cannot be "
                    f"translated), got {src_lengths.tolist()}"
                )
            raise ValueError(
                f"src_ids holds IDs outside the source vocabulary [0, "
                f"{self.config.src_vocab_size}) within src_lengths; build them with "
                "tokenize_source"
            )
        memory, mask = self._encode(src_ids, src_lengths)
        return self._empty_state(memory, mask, num_beams, cache_size=self.max_len)

    @torch.no_grad()
    def step(self, tokens: Tensor, state: TranslatorState) -> tuple[Tensor, TranslatorState]:
        """Log-probabilities of the next token after each row's prefix.

        Only positions the cache has not seen (``tokens[:, state.cache_len:]``, normally the
        last one) go through the decoder; the result equals a full recompute within float32
        rounding. No host-device sync.

        Args:
            tokens: ``[N * K, t]`` int64, the whole prefix of every row so far,
                ``tokens[:, 0] == start_id``, ``state.cache_len < t <= max_len``.
            state: from :meth:`prepare`, or the last ``step`` / ``reorder``.

        Returns:
            ``(log_probs [N * K, V] float32, state)``; ``pad_id`` and ``start_id`` get
            ``-inf``. Continue from the returned state.

        Raises:
            TypeError: ``tokens`` is not an int64 tensor.
            ValueError: wrong number of rows, or a prefix no longer than the cache or longer
                than ``max_len``.
        """
        _check_int64("tokens", tokens, 2, "[N * K, t]")
        if tokens.device != state.memory_mask.device:
            raise ValueError(
                f"tokens is on {tokens.device} but the state is on {state.memory_mask.device}; "
                "pass tokens.to(translator.device)"
            )
        rows, length = tokens.shape
        if rows != state.num_rows:
            raise ValueError(
                f"tokens has {rows} rows but the state was prepared for {state.num_rows} "
                f"(N * num_beams); pass one prefix per decoder row"
            )
        if not state.cache_len < length <= self.max_len:
            raise ValueError(
                f"tokens has {length} positions but must have more than the {state.cache_len} "
                f"already cached and at most max_len={self.max_len}; pass the whole prefix, "
                "one token longer than last time, and stop generating at max_len"
            )
        log_probs = self._decode(tokens[:, state.cache_len :], state)[:, -1]
        return log_probs, replace(state, cache_len=length)

    @torch.no_grad()
    def reorder(self, state: TranslatorState, beam_idx: Tensor) -> TranslatorState:
        """Moves self-attention cache rows after a beam step: row ``r`` takes ``beam_idx[r]``.

        Cross-attention keys and values are per sentence and stay put, so ``beam_idx`` must keep
        every row within its sentence (not checked: that would need a sync). Only the
        ``cache_len`` filled positions are copied. No host-device sync.

        Args:
            state: the current state (its buffers are updated in place).
            beam_idx: ``[N * K]`` int64 global row indices.

        Returns:
            The state to continue from.

        Raises:
            TypeError: ``beam_idx`` is not an int64 tensor.
            ValueError: ``beam_idx`` does not have ``N * K`` entries.
        """
        _check_int64("beam_idx", beam_idx, 1, "[N * K]")
        if beam_idx.shape[0] != state.num_rows:
            raise ValueError(
                f"beam_idx has {beam_idx.shape[0]} entries but the state has {state.num_rows} "
                "rows; pass one source row per decoder row"
            )
        filled = state.cache_len
        for buffer in (*state.self_keys, *state.self_values):
            # index_select copies before the write, so overlapping moves are safe.
            buffer[:, :, :filled] = buffer[:, :, :filled].index_select(0, beam_idx)
        return state


def _read(directory: str, name: str) -> bytes:
    return resources.files("tensortext").joinpath(f"{directory}/{name}").read_bytes()


def load_bundled_translator(
    device: torch.device | str | None = None, *, evidence_model: bool = False
) -> BundledTranslator:
    """Loads the trained model from the package data (``tensortext/data/model``).

    The weights are stored in float16 to keep the package small and come back as float32. Their
    sha256 is checked against ``config.json``.

    Args:
        device: where to put the model (CPU by default).
        evidence_model: Load the weaker second system instead (``data/evidence_model``: another
            seed, half the training), whose n-best lists serve as LMBR evidence in the demo.

    Returns:
        The translator in eval mode.

    Raises:
        ValueError: the weights do not match the checksum in ``config.json``.
    """
    directory = _EVIDENCE_MODEL_DIR if evidence_model else _MODEL_DIR
    config_json: dict[str, Any] = json.loads(_read(directory, "config.json"))
    vocab_json: dict[str, list[str]] = json.loads(_read(directory, "vocab.json"))
    weights = _read(directory, "weights.pt")
    digest = hashlib.sha256(weights).hexdigest()
    if digest != config_json["weights_sha256"]:
        raise ValueError(
            f"{directory}/weights.pt has sha256 {digest} but config.json expects "
            f"{config_json['weights_sha256']}; reinstall tensortext or rerun "
            "scripts/train_bundled_model.py"
        )
    config = TranslatorConfig(**config_json["model"])
    model = BundledTranslator(config, vocab_json["source"], vocab_json["target"])
    state_dict = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    model.load_state_dict({name: tensor.float() for name, tensor in state_dict.items()})
    return model.to(device or "cpu").eval()
