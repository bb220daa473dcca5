"""Sizes and special words of the bundled translator."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BOS", "EOS", "PAD", "TranslatorConfig"]

PAD = "<pad>"
BOS = "<s>"
EOS = "</s>"


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
