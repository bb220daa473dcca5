"""Random MarianMT models whose hypotheses end at about the source length (bench_beam, bench_lmbr).

Random weights give a nearly flat next-token distribution, so EOS is never chosen; a constant
``final_logits_bias[eos]`` ends either every hypothesis after one token or none.
:func:`build_marian` makes the output lengths model-driven instead (see its docstring and
bench/README.md, "The random Marians").  :func:`hf_hypotheses`
reads what ``model.generate`` returns for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

SOURCE_LENS = (10, 40)  # random source lengths, uniform, inclusive
EOS_SLOPE = 1.0  # the calibrated EOS logit grows by this many nats per generated token
MAX_NEW_TOKENS = 96  # cap for the random Marians (outputs end at ~source length + 2)


@dataclass(frozen=True)
class MarianSize:
    key: str
    label: str
    vocab: int
    d_model: int
    layers: int  # encoder layers = decoder layers
    heads: int
    ffn: int

    @property
    def eos_id(self) -> int:
        return 0  # Marian's </s>

    @property
    def pad_id(self) -> int:
        return self.vocab - 1  # Marian's <pad>, also the decoder start token (as in opus-mt)


MARIANS = {
    "base": MarianSize("base", "Marian-base (random)", 32000, 512, 6, 8, 2048),
    "tiny": MarianSize("tiny", "Marian-tiny (random)", 1024, 64, 2, 4, 256),
}
# --quick on CPU: the base model shrunk so that a batch of 16 x 12 beams takes seconds.
QUICK_BASE = MarianSize("base", "Marian-small (random, --quick)", 8000, 256, 3, 4, 1024)


def make_sources(vocab: int, n: int, seed: int, pad_id: int) -> tuple[Tensor, Tensor, list[int]]:
    """``n`` random sources: ``(input_ids [n, S], attention_mask [n, S], lengths)``, right-padded.

    Tokens are uniform over ``1 .. vocab - 2`` (neither EOS 0 nor the pad ID), lengths uniform
    over ``SOURCE_LENS``.  Batches of the sweeps are prefixes of one pool, so that batch 8 is the
    first 8 sentences of batch 64.
    """
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(SOURCE_LENS[0], SOURCE_LENS[1] + 1, (n,), generator=gen)
    width = int(lengths.max())
    ids = torch.randint(1, vocab - 1, (n, width), generator=gen)
    mask = (torch.arange(width)[None, :] < lengths[:, None]).long()
    return ids.masked_fill(mask == 0, pad_id), mask, lengths.tolist()


def build_marian(size: MarianSize, seed: int) -> tuple[Any, dict[str, Any]]:
    """A MarianMTModel with random weights whose hypotheses end at about the source length.

    Random weights give a nearly flat next-token distribution, so EOS is never preferred and a
    constant ``final_logits_bias[eos]`` ends either every hypothesis after one token or none.
    Instead the EOS row of the (tied) output projection is set so that the EOS logit *grows* with
    the number of generated tokens minus the source length: a ridge regression on the final
    decoder states of random teacher-forced prefixes finds the direction ``w`` with
    ``h_t . w + c ~ t - source_len`` (the position comes from the sinusoidal embeddings, the
    source length from the cross-attention average); EOS's logit becomes
    ``EOS_SLOPE * (h_t . w + c)`` plus the mean top logit of the other tokens, so it overtakes them
    about when the target is as long as the source.  EOS is never fed back into the model and the
    sources contain no EOS, so nothing else changes.  Everything is seeded and done on the CPU.
    """
    from transformers import MarianConfig, MarianMTModel

    torch.manual_seed(seed)
    config = MarianConfig(
        vocab_size=size.vocab,
        d_model=size.d_model,
        encoder_layers=size.layers,
        decoder_layers=size.layers,
        encoder_attention_heads=size.heads,
        decoder_attention_heads=size.heads,
        encoder_ffn_dim=size.ffn,
        decoder_ffn_dim=size.ffn,
        max_position_embeddings=512,
        pad_token_id=size.pad_id,
        eos_token_id=size.eos_id,
        decoder_start_token_id=size.pad_id,
        forced_eos_token_id=size.eos_id,
    )
    model = MarianMTModel(config).eval()
    # As in the opus-mt generation configs: never generate <pad>.  transformers 5 does not copy
    # bad_words_ids from the model config into generation_config, so it is set here.
    model.generation_config.bad_words_ids = [[size.pad_id]]

    n, steps = 48, 64
    ids, mask, lengths = make_sources(size.vocab, n, seed + 1, size.pad_id)
    gen = torch.Generator().manual_seed(seed + 2)
    prefix = torch.randint(1, size.vocab - 1, (n, steps), generator=gen)
    prefix[:, 0] = size.pad_id  # decoder start
    with torch.inference_mode():
        out = model(
            input_ids=ids,
            attention_mask=mask,
            decoder_input_ids=prefix,
            output_hidden_states=True,
            return_dict=True,
        )
    hidden = out.decoder_hidden_states[-1].double()  # [n, steps, d]
    ordinary = out.logits[..., 1 : size.vocab - 1]  # neither EOS nor pad
    top_logit = float(ordinary.max(-1).values.mean())
    target = torch.arange(steps)[None, :] - torch.tensor(lengths)[:, None]  # [n, steps]
    x = torch.cat((hidden.reshape(n * steps, -1), torch.ones(n * steps, 1, dtype=torch.double)), 1)
    y = target.reshape(-1).double()
    gram = x.T @ x + 1e-2 * torch.eye(x.shape[1], dtype=torch.double)
    w = torch.linalg.solve(gram, x.T @ y)
    residual = x @ w - y
    with torch.no_grad():
        model.get_output_embeddings().weight[size.eos_id] = (EOS_SLOPE * w[:-1]).float()
        model.final_logits_bias[0, size.eos_id] = float(EOS_SLOPE * w[-1] + top_logit)
    info = {
        "parameters": sum(p.numel() for p in model.parameters()),
        "eos_calibration": {
            "method": "EOS row of the tied output projection and final_logits_bias[eos] set "
            "from a ridge regression of (decoder position - source length) on the final decoder "
            "states of random teacher-forced prefixes; EOS logit = slope * prediction + mean top "
            "logit of the other tokens",
            "slope_nats_per_token": EOS_SLOPE,
            "fit_residual_std_tokens": float(residual.std()),
            "mean_top_logit": top_logit,
        },
    }
    return model, info


# --------------------------------------------------------------------------- HF's output


def hf_hypotheses(sequences: Tensor, eos_id: int, pad_id: int) -> list[list[int]]:
    """HF ``sequences [B, 1 + T]`` -> generated tokens up to and including the first EOS."""
    rows = []
    for row in sequences[:, 1:].tolist():  # column 0 is the decoder start token
        if eos_id in row:
            row = row[: row.index(eos_id) + 1]
        else:  # cut at the length limit; the fill is pad_id, which is never generated
            while row and row[-1] == pad_id:
                row.pop()
        rows.append(row)
    return rows
