"""The bundled translator: a tiny trained encoder-decoder Transformer with a KV-cached step.

The model reads numbers, ordinals, fractions, percentages, sums of money, dates, times,
timestamps and ranges written with digits and symbols, one word per digit or symbol
(``2 0 2 4 - 0 3 - 0 7``), and writes them out in English words
(``march seventh twenty twenty four``). It is small (about 1M parameters, 2 MB in float16) and
was trained on CPU by ``scripts/train_bundled_model.py``; ``tensortext demo`` and
``tensortext translate`` decode with it to show beam search and BLEU on a real model.

:class:`BundledTranslator` implements :class:`~tensortext.decode.Decoder`:

* :meth:`~BundledTranslator.prepare` runs the encoder once per sentence and returns the start
  tokens ``[N, 1]`` and a :class:`TranslatorState` for ``N * K`` decoder rows (row ``r`` belongs
  to sentence ``r // K``);
* :meth:`~BundledTranslator.step` takes the whole prefix ``[N * K, t]`` and returns next-token
  log-probabilities ``[N * K, V]``, feeding only the positions the cache has not seen;
* :meth:`~BundledTranslator.reorder` moves the self-attention cache rows after a beam step.

The layers are in :mod:`~tensortext.models.bundled.layers`; there is no dropout: training
sentences are drawn fresh for every step from a grammar far larger than the training run, so
there is little to regularise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import cast

import torch
from torch import Tensor, nn

from tensortext._checks import (
    check_int,
    check_integer_tensor,
    check_lengths,
    check_same_device,
    check_shape,
)
from tensortext.models.bundled.config import TranslatorConfig
from tensortext.models.bundled.layers import DecoderLayer, Encoder, sinusoids
from tensortext.models.bundled.vocab import WordVocab
from tensortext.padded import Padded

__all__ = ["BundledTranslator", "TranslatorState"]


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


class BundledTranslator(nn.Module):
    """Encoder-decoder Transformer implementing :class:`~tensortext.decode.Decoder`.

    Build it with :func:`~tensortext.models.bundled.load_bundled_translator`; the constructor
    makes an untrained model (the training script uses it). Word IDs are the positions in
    ``source_vocab`` / ``target_vocab``.

    Attributes:
        config: the sizes.
        vocab: the :class:`~tensortext.models.bundled.vocab.WordVocab`.
        source_vocab: source words in ID order (``source_vocab[0]`` is the padding word).
        target_vocab: target words in ID order, ``V`` of them.
        vocab_size: ``V``.
        start_id: decoder start token (BOS); every prefix begins with it.
        eos_id: end of sentence.
        pad_id: the target padding word; ``step`` never proposes it (log-probability ``-inf``),
            nor the start token. Padding in inputs (``PAD_ID``, -1) is replaced by it.
        src_pad_id: the source padding word.
        max_len: longest source and longest decoder prefix (start token included), so at most
            ``max_len - 1`` tokens can be generated.

    Example:
        >>> from tensortext.models.bundled import load_bundled_translator
        >>> translator = load_bundled_translator()
        >>> src = translator.tokenize_source(["4 0 7 1 5"])
        >>> start_ids, state = translator.prepare(src.ids, src.lengths, num_beams=1)
        >>> log_probs, state = translator.step(start_ids, state)
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
        self.config = config
        self.vocab = WordVocab(source_vocab, target_vocab, max_len=config.max_len)
        self.source_vocab = self.vocab.source_vocab
        self.target_vocab = self.vocab.target_vocab
        self.vocab_size = config.tgt_vocab_size
        self.src_pad_id = self.vocab.src_pad_id
        self.pad_id = self.vocab.pad_id
        self.start_id = self.vocab.start_id
        self.eos_id = self.vocab.eos_id
        self.max_len = config.max_len
        self.num_heads = config.num_heads
        self.head_dim = config.d_model // config.num_heads

        self.encoder = Encoder(config)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, config.d_model)
        self.decoder_layers = nn.ModuleList(
            DecoderLayer(config) for _ in range(config.num_decoder_layers)
        )
        self.decoder_norm = nn.LayerNorm(config.d_model)
        self.output = nn.Linear(config.d_model, config.tgt_vocab_size)
        # Not saved: they are recomputed from the config, which keeps weights.pt smaller.
        self.register_buffer("positions", sinusoids(config.max_len, config.d_model), False)
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
    # Text <-> IDs (on the model's device)
    # --------------------------------------------------------------------------------------

    def tokenize_source(self, lines: Sequence[str]) -> Padded:
        """:meth:`WordVocab.tokenize_source` on the model's device: ``(ids [N, S], lengths)``."""
        return self.vocab.tokenize_source(lines, device=self.device)

    def tokenize_target(self, lines: Sequence[str]) -> Padded:
        """:meth:`WordVocab.tokenize_target` on the model's device: ``(ids [N, T], lengths)``."""
        return self.vocab.tokenize_target(lines, device=self.device)

    def detokenize(self, ids: Tensor, lengths: Tensor) -> list[str]:
        """:meth:`WordVocab.detokenize`: target IDs ``[N, T]`` read up to ``lengths`` or EOS."""
        return self.vocab.detokenize(ids, lengths)

    # --------------------------------------------------------------------------------------
    # Model
    # --------------------------------------------------------------------------------------

    def _encode(self, src_ids: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor]:
        """``[N, S]`` IDs -> memory ``[N, S, D]`` and its mask ``[N, 1, 1, S]``."""
        src_len = src_ids.shape[1]
        valid = torch.arange(src_len, device=src_ids.device) < lengths.unsqueeze(1)
        # Padding may hold anything (PAD_ID, even IDs outside the vocabulary); the embedding
        # must not see it.
        src_ids = src_ids.long().masked_fill(~valid, self.src_pad_id)
        mask = valid.view(-1, 1, 1, src_len)
        return self.encoder(src_ids, mask, self.positions[:src_len]), mask

    def _decode(self, tokens: Tensor, state: TranslatorState) -> Tensor:
        """Feeds ``tokens [R, Q]`` at positions ``cache_len ..``; log-probs ``[R, Q, V]``."""
        start = state.cache_len
        end = start + tokens.shape[1]
        # PAD_ID (-1) after a row's end becomes the padding word: never embed a negative ID.
        tokens = tokens.long().masked_fill(tokens < 0, self.pad_id)
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
            keys, values = cast(DecoderLayer, layer).cross_attn.keys_values(memory)
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

    def forward(self, src_ids: Tensor, lengths: Tensor, tgt_in: Tensor) -> Tensor:
        """Teacher forcing: log-probabilities after every prefix, with no cache carried over.

        This is the training path and the reference ``step`` is tested against.

        Args:
            src_ids: ``[N, S]`` int64 source IDs, anything beyond ``lengths``.
            lengths: ``[N]`` int64 source lengths, in ``[1, S]``.
            tgt_in: ``[N, T]`` int64 decoder input, ``tgt_in[:, 0] == start_id``; positions
                after a row's end may hold ``PAD_ID`` or anything in the vocabulary (causal
                attention keeps earlier positions from seeing them).

        Returns:
            ``[N, T, V]`` float32 log-probabilities; ``[:, t]`` predicts token ``t + 1``.
        """
        if tgt_in.shape[1] > self.max_len:
            raise ValueError(
                f"tgt_in has {tgt_in.shape[1]} positions, more than max_len={self.max_len}"
            )
        memory, mask = self._encode(src_ids, lengths)
        state = self._empty_state(memory, mask, num_beams=1, cache_size=tgt_in.shape[1])
        return self._decode(tgt_in, state)

    @torch.no_grad()
    def prepare(
        self, src_ids: Tensor, lengths: Tensor, num_beams: int
    ) -> tuple[Tensor, TranslatorState]:
        """Encodes ``N`` sentences once and sets up ``N * num_beams`` decoder rows.

        Args:
            src_ids: ``[N, S]`` integer source IDs; positions at or beyond ``lengths`` may hold
                anything (``PAD_ID`` from :meth:`tokenize_source`).
            lengths: ``[N]`` integer source lengths in ``[1, S]``; ``S <= max_len``.
            num_beams: ``K >= 1``, decoder rows per sentence (row ``r`` is sentence ``r // K``).

        Returns:
            ``(start_ids [N, 1], state)``: the start token of every sentence, and an empty-cache
            state for ``N * K`` rows.

        Raises:
            TypeError: wrong types or dtypes.
            ValueError: wrong shapes, a length outside ``[1, S]``, an ID outside the source
                vocabulary, a tensor on another device than the model. The value checks cost
                one host-device sync per batch.
        """
        self._check_sources(src_ids, lengths, num_beams)
        memory, mask = self._encode(src_ids, lengths)
        start_ids = torch.full(
            (src_ids.shape[0], 1), self.start_id, dtype=torch.int64, device=self.device
        )
        return start_ids, self._empty_state(memory, mask, num_beams, cache_size=self.max_len)

    def _check_sources(self, src_ids: Tensor, lengths: Tensor, num_beams: int) -> None:
        """The checks of :meth:`prepare`, with its one host sync for the values."""
        check_integer_tensor("src_ids", src_ids, shape="[N, S]")
        check_shape("src_ids", src_ids, [None, None], "[N, S]")
        sentences, src_len = src_ids.shape
        check_same_device("src_ids", src_ids, self.device, "the model")
        check_lengths("lengths", lengths, [sentences], self.device, "the model")
        check_int("num_beams", num_beams, minimum=1)
        if src_len > self.max_len:
            raise ValueError(
                f"src_ids has {src_len} positions but the model reads at most "
                f"max_len={self.max_len}; trim the padding or split the sentences"
            )
        valid = torch.arange(src_len, device=src_ids.device) < lengths.unsqueeze(1)
        bad_ids = valid & ((src_ids < 0) | (src_ids >= self.config.src_vocab_size))
        bad_lengths = (lengths < 1) | (lengths > src_len)
        if sentences and bool(bad_ids.any() | bad_lengths.any()):  # the one sync
            if bool(bad_lengths.any()):
                raise ValueError(
                    f"lengths must lie in [1, {src_len}] (empty sources cannot be "
                    f"translated), got {lengths.tolist()}"
                )
            raise ValueError(
                f"src_ids holds IDs outside the source vocabulary [0, "
                f"{self.config.src_vocab_size}) within lengths; build them with "
                "tokenize_source"
            )

    @torch.no_grad()
    def step(self, tokens: Tensor, state: TranslatorState) -> tuple[Tensor, TranslatorState]:
        """Log-probabilities of the next token after each row's prefix.

        Only positions the cache has not seen (``tokens[:, state.cache_len:]``, normally the
        last one) go through the decoder; the result equals a full recompute within float32
        rounding. No host-device sync.

        Args:
            tokens: ``[N * K, t]`` integer, the whole prefix of every row so far,
                ``tokens[:, 0] == start_id``, ``state.cache_len < t <= max_len``.
            state: from :meth:`prepare`, or the last ``step`` / ``reorder``.

        Returns:
            ``(log_probs [N * K, V] float32, state)``; ``pad_id`` and ``start_id`` get
            ``-inf``. Continue from the returned state.

        Raises:
            TypeError: ``tokens`` is not an integer tensor.
            ValueError: wrong number of rows, or a prefix no longer than the cache or longer
                than ``max_len``.
        """
        check_integer_tensor("tokens", tokens, shape="[N * K, t]")
        check_shape("tokens", tokens, [None, None], "[N * K, t]")
        check_same_device("tokens", tokens, state.memory_mask.device, "the state")
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
            beam_idx: ``[N * K]`` integer global row indices.

        Returns:
            The state to continue from.

        Raises:
            TypeError: ``beam_idx`` is not an integer tensor.
            ValueError: ``beam_idx`` does not have ``N * K`` entries.
        """
        check_integer_tensor("beam_idx", beam_idx, shape="[N * K]")
        if beam_idx.shape != (state.num_rows,):
            raise ValueError(
                f"beam_idx has {beam_idx.numel()} entries (shape {list(beam_idx.shape)}) but the "
                f"state has {state.num_rows} rows; pass one source row per decoder row"
            )
        filled = state.cache_len
        for buffer in (*state.self_keys, *state.self_values):
            # index_select copies before the write, so overlapping moves are safe.
            buffer[:, :, :filled] = buffer[:, :, :filled].index_select(0, beam_idx.long())
        return state
