"""The layers of the bundled translator: a pre-LayerNorm Transformer with cacheable attention.

Pre-LayerNorm (Vaswani et al. 2017, with the normalisation moved before each sublayer as in
Xiong et al. 2020), sinusoidal positions, no dropout. Attention is split into its projections so
that :class:`~tensortext.models.bundled.BundledTranslator` can cache self-attention keys and
values per decoder row and cross-attention keys and values once per sentence.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from tensortext.models.bundled.config import TranslatorConfig

__all__ = [
    "Attention",
    "DecoderLayer",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "cross_attend",
    "sinusoids",
]


def sinusoids(max_len: int, dim: int) -> Tensor:
    """Fixed positional encodings ``[max_len, dim]`` (Vaswani et al. 2017, section 3.5)."""
    position = torch.arange(max_len, dtype=torch.float32).unsqueeze(1)
    inv_freq = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    table = torch.zeros(max_len, dim)
    table[:, 0::2] = torch.sin(position * inv_freq)
    table[:, 1::2] = torch.cos(position * inv_freq)
    return table


class Attention(nn.Module):
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


def cross_attend(queries: Tensor, keys: Tensor, values: Tensor, mask: Tensor) -> Tensor:
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


class FeedForward(nn.Module):
    """Two linear maps with a GELU between: ``[..., D] -> [..., D]``."""

    def __init__(self, d_model: int, ffn_dim: int) -> None:
        super().__init__()
        self.up = nn.Linear(d_model, ffn_dim)
        self.down = nn.Linear(ffn_dim, d_model)

    def forward(self, x: Tensor) -> Tensor:
        out: Tensor = self.down(F.gelu(self.up(x)))
        return out


class EncoderLayer(nn.Module):
    """Self-attention and feed-forward, each after a LayerNorm, each with a residual."""

    def __init__(self, config: TranslatorConfig) -> None:
        super().__init__()
        self.attn_norm = nn.LayerNorm(config.d_model)
        self.attn = Attention(config.d_model, config.num_heads)
        self.ffn_norm = nn.LayerNorm(config.d_model)
        self.ffn = FeedForward(config.d_model, config.ffn_dim)

    def forward(self, x: Tensor, mask: Tensor) -> Tensor:
        h = self.attn_norm(x)
        keys, values = self.attn.keys_values(h)
        attended = F.scaled_dot_product_attention(self.attn.queries(h), keys, values, mask)
        x = x + self.attn.merge(attended)
        out: Tensor = x + self.ffn(self.ffn_norm(x))
        return out


class Encoder(nn.Module):
    """Source IDs to memory; one call per batch of sentences (tests hook it to count rows)."""

    def __init__(self, config: TranslatorConfig) -> None:
        super().__init__()
        self.scale = math.sqrt(config.d_model)
        self.embed = nn.Embedding(config.src_vocab_size, config.d_model)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.num_encoder_layers))
        self.norm = nn.LayerNorm(config.d_model)

    def forward(self, src_ids: Tensor, mask: Tensor, positions: Tensor) -> Tensor:
        """``src_ids [N, S]``, ``mask [N, 1, 1, S]``, ``positions [S, D]`` -> ``[N, S, D]``."""
        x = self.embed(src_ids) * self.scale + positions
        for layer in self.layers:
            x = layer(x, mask)
        # Padded positions hold finite garbage; the mask keeps every query from reading them.
        memory: Tensor = self.norm(x)
        return memory


class DecoderLayer(nn.Module):
    """Cached causal self-attention, cross-attention to the memory, feed-forward."""

    def __init__(self, config: TranslatorConfig) -> None:
        super().__init__()
        self.self_norm = nn.LayerNorm(config.d_model)
        self.self_attn = Attention(config.d_model, config.num_heads)
        self.cross_norm = nn.LayerNorm(config.d_model)
        self.cross_attn = Attention(config.d_model, config.num_heads)
        self.ffn_norm = nn.LayerNorm(config.d_model)
        self.ffn = FeedForward(config.d_model, config.ffn_dim)

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
            cross_attend(queries, memory_keys, memory_values, memory_mask)
        )
        out: Tensor = x + self.ffn(self.ffn_norm(x))
        return out
