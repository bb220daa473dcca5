"""Ray Data: callable classes for ``Dataset.map_batches`` (tokenize, translate, score) and the
corpus score of a scored dataset.

Each class is built once per actor (the encoding and its tables load there) and called on
batches in Ray's ``"numpy"`` format (a dict of column name -> array); token IDs travel as a
column of int64 arrays, one per row, text as a column of strings. :class:`Score` writes the
metric's sufficient statistics (BLEU's and chrF's counts, ROUGE's sentence scores and a count)
as columns ``{output}_stat_0 ..`` that add up across blocks and machines, so
:func:`corpus_score` is one ``Dataset.sum`` and the formula, equal to the single-process
``corpus_bleu`` / ``corpus_chrf`` / ``corpus_rouge``.
This module does not import Ray; the ``[ray]`` extra installs it for the pipeline itself::

    import ray
    from tensortext.integrations.ray import Tokenize

    ds = ray.data.read_parquet("corpus/")
    ds = ds.map_batches(Tokenize, fn_constructor_kwargs={"encoding": "o200k_base"},
                        concurrency=8, batch_size=1024)
    ds.write_parquet("tokens/")
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import numpy as np
import torch

from tensortext._checks import check_choice
from tensortext.bleu import BleuConfig, bleu_from_stats, bleu_stats
from tensortext.padded import pad_ragged

__all__ = ["Score", "Tokenize", "Translate", "corpus_bleu", "corpus_score"]

Metric = Literal["bleu", "chrf", "rouge"]

Batch = dict[str, Any]


def _id_column(rows: list[list[int]]) -> np.ndarray:
    """A column of one int64 array per row (an object array: rows differ in length)."""
    column = np.empty(len(rows), dtype=object)
    for index, row in enumerate(rows):
        column[index] = np.asarray(row, dtype=np.int64)
    return column


class Tokenize:
    """Encodes the text column of each batch into a column of token IDs.

    Args:
        encoding: an encoding name or the path of a tokenizer file (``tokenizer.json``, a
            SentencePiece ``.model``, a Tekken file: ``tensortext.bpe.load_encoding``).
        column: the text column; ``output``: the IDs column (default ``input_ids``).
        append_eot: the end-of-text token after every row (data preparation).
        allowed_special, disallowed_special: as in ``Encoding.encode``.
    """

    def __init__(
        self,
        encoding: str = "cl100k_base",
        *,
        column: str = "text",
        output: str = "input_ids",
        append_eot: bool = False,
        allowed_special: Any = frozenset(),
        disallowed_special: Any = "all",
    ):
        from tensortext.bpe import load_encoding

        self.encoding = load_encoding(encoding)
        self.column, self.output = column, output
        self.eot = [self.encoding.eot_token] if append_eot else []
        self.specials = dict(allowed_special=allowed_special, disallowed_special=disallowed_special)

    def __call__(self, batch: Mapping[str, Any]) -> Batch:
        if self.column not in batch:
            raise KeyError(f"Tokenize: no column {self.column!r} (the batch has {sorted(batch)})")
        texts = [str(text) for text in batch[self.column]]
        # One process per actor: Ray runs the actors in parallel.
        rows = self.encoding.encode_batch(texts, num_threads=1, **self.specials)
        return {**batch, self.output: _id_column([row + self.eot for row in rows])}


class Translate:
    """Beam search (:func:`tensortext.decode.translate`) over a column of source-ID arrays.

    Each actor builds its decoder once, on CUDA when it has a GPU (ask Ray for one:
    ``map_batches(Translate, ..., num_gpus=1)``), else on its CPU.

    Args:
        decoder_factory: ``device -> Decoder``, e.g.
            :func:`tensortext.models.bundled.load_bundled_translator` or a function building
            :class:`~tensortext.decode.hf.HFDecoder` (called in the actor, so the model loads
            there, not in the driver).
        column: the source-ID column; ``output``: the column of best hypotheses (EOS removed).
        device: ``"auto"`` (CUDA when available), or a torch device.
        **options: :func:`~tensortext.decode.translate`'s keywords (``num_beams``,
            ``max_sentences``, ``length_penalty``, ...).
    """

    def __init__(
        self,
        decoder_factory: Callable[[torch.device], Any],
        *,
        column: str = "src_ids",
        output: str = "hyp_ids",
        device: str | torch.device = "auto",
        **options: Any,
    ):
        from tensortext._checks import resolve_device

        self.device = resolve_device(device)
        self.decoder = decoder_factory(self.device)
        self.column, self.output, self.options = column, output, options

    def __call__(self, batch: Mapping[str, Any]) -> Batch:
        from tensortext.decode.translate import translate

        if self.column not in batch:
            raise KeyError(f"Translate: no column {self.column!r} (the batch has {sorted(batch)})")
        src = pad_ragged([np.asarray(row).tolist() for row in batch[self.column]])
        src = src.to(self.device)
        best = translate(self.decoder, src.ids, src.lengths, **self.options).without_eos(rank=0)
        return {**batch, self.output: _id_column(best.tolist())}


class Score:
    """Per-row BLEU, chrF or ROUGE of a hypothesis and a reference column, and the row's
    statistics.

    Adds the statistics columns ``{output}_stat_0 ..``, which :func:`corpus_score` sums, and the
    sentence scores (0-1): for BLEU and chrF the column ``output`` (as
    :func:`tensortext.sentence_bleu` and :func:`tensortext.chrf.sentence_chrf`); for ROUGE the
    columns ``{output}_{type}_{precision|recall|fmeasure}`` (torchmetrics' names).

    Args:
        hyp_column, ref_column: BLEU: columns of token-ID arrays; chrF: columns of text; ROUGE:
            text (rouge-score's tokenizer) or token IDs. One reference per row.
        metric: ``"bleu"`` (the default), ``"chrf"`` or ``"rouge"``.
        output: the score column's name (default: the metric's), and the statistics' prefix.
        config: the metric's options (:class:`tensortext.BleuConfig`,
            :class:`tensortext.chrf.ChrfConfig`, :class:`tensortext.rouge.RougeConfig`; default
            the reference library's defaults).
    """

    def __init__(
        self,
        hyp_column: str = "hyp_ids",
        ref_column: str = "ref_ids",
        *,
        metric: Metric = "bleu",
        output: str | None = None,
        config: Any = None,
    ):
        check_choice("metric", metric, ("bleu", "chrf", "rouge"))
        self.hyp_column, self.ref_column, self.metric = hyp_column, ref_column, metric
        self.output = output or metric
        self.config = _config(metric, config)

    def __call__(self, batch: Mapping[str, Any]) -> Batch:
        for name in (self.hyp_column, self.ref_column):
            if name not in batch:
                raise KeyError(f"Score: no column {name!r} (the batch has {sorted(batch)})")
        hyps, refs = _inputs(self.metric, batch[self.hyp_column], batch[self.ref_column])
        out = dict(batch)
        if self.metric == "bleu":
            stats = bleu_stats(hyps, refs, config=self.config)  # [B, 2 + 2N]
            out[self.output] = bleu_from_stats(stats, config=self.config).numpy()
        elif self.metric == "chrf":
            from tensortext.chrf import chrf_from_stats, chrf_stats

            stats = chrf_stats(hyps, refs, config=self.config)  # [B, 3 (C + W)]
            out[self.output] = chrf_from_stats(stats, config=self.config).numpy()
        else:
            from tensortext.rouge import rouge_dict, rouge_from_stats, rouge_stats

            stats = rouge_stats(hyps, refs, config=self.config)  # [B, 1 + 3T]
            scores = rouge_from_stats(stats, config=self.config)  # [B, T, 3]
            for key, column in rouge_dict(scores, config=self.config).items():
                out[f"{self.output}_{key}"] = column.numpy()
        for index in range(stats.shape[1]):
            out[f"{self.output}_stat_{index}"] = stats[:, index].numpy()
        return out


def _config(metric: str, config: Any) -> Any:
    """``config``, checked against ``metric``, or the metric's default config."""
    if metric == "bleu":
        expected: type = BleuConfig
    elif metric == "chrf":
        from tensortext.chrf import ChrfConfig

        expected = ChrfConfig
    else:
        from tensortext.rouge import RougeConfig

        expected = RougeConfig
    if config is None:
        return expected()
    if not isinstance(config, expected):
        raise TypeError(
            f"metric={metric!r} takes a {expected.__name__} as config, got {type(config).__name__}"
        )
    return config


def _inputs(metric: str, hyp_column: Any, ref_column: Any) -> tuple[Any, Any]:
    """A batch's two columns as the metric's input: lists of text, or padded IDs."""
    hyp_rows, ref_rows = list(hyp_column), list(ref_column)
    rows = [*hyp_rows, *ref_rows]
    if metric != "bleu" and any(isinstance(row, str) for row in rows):
        odd = next((row for row in rows if not isinstance(row, str)), None)
        if odd is not None:
            raise TypeError(
                f"Score(metric={metric!r}): a text column holds {type(odd).__name__} "
                "(every row of both columns must be a string; '' for an empty one)"
            )
        return hyp_rows, ref_rows
    if metric == "chrf":
        raise TypeError("Score(metric='chrf') scores text: both columns must hold strings")
    hyp = pad_ragged([np.asarray(row, dtype=np.int64).tolist() for row in hyp_rows])
    ref = pad_ragged([np.asarray(row, dtype=np.int64).tolist() for row in ref_rows])
    return hyp, ref


def corpus_bleu(dataset: Any, *, output: str = "bleu", config: BleuConfig | None = None) -> float:
    """Corpus BLEU (0-1) of a dataset scored by :class:`Score`: ``corpus_score`` with
    ``metric="bleu"``."""
    return float(corpus_score(dataset, metric="bleu", output=output, config=config))


def corpus_score(
    dataset: Any, *, metric: Metric = "bleu", output: str | None = None, config: Any = None
) -> Any:
    """The corpus score of a dataset scored by :class:`Score`: its statistics columns summed
    with ``dataset.sum``, then the metric's formula.

    Returns:
        BLEU and chrF: a float (0-1), equal to :func:`tensortext.corpus_bleu` /
        :func:`tensortext.chrf.corpus_chrf` on the whole data. ROUGE: a dict of torchmetrics'
        keys (``"rouge1_fmeasure"``, ...) to the mean sentence score, as
        :func:`tensortext.rouge.corpus_rouge`.

    Raises:
        ValueError: no statistics columns named ``{output}_stat_K``, or NLTK's smoothing
            methods 5-7, which read the corpus's last sentence (a distributed dataset has no
            last sentence).
    """
    check_choice("metric", metric, ("bleu", "chrf", "rouge"))
    config = _config(metric, config)
    output = output or metric
    if metric == "bleu" and config.method in ("method5", "method6", "method7"):
        raise ValueError(
            f"corpus_bleu: NLTK's {config.method} reads the corpus's last sentence, which a "
            "distributed dataset does not have; use another smooth_method"
        )
    prefix = f"{output}_stat_"
    names = sorted(
        (name for name in dataset.columns() if name.startswith(prefix)),
        key=lambda name: int(name[len(prefix) :]),
    )
    if not names:
        raise ValueError(f"corpus_score: no columns {prefix}0, ...; run map_batches(Score) first")
    sums = dataset.sum(names)  # {"sum(name)": total} for several columns (Ray 2.x)
    values = [sums[f"sum({name})"] for name in names] if len(names) > 1 else [sums]
    if metric == "bleu":
        stats = torch.tensor([int(value) for value in values], dtype=torch.int64)
        return float(bleu_from_stats(stats, config=config))
    if metric == "chrf":
        from tensortext.chrf import chrf_from_stats

        stats = torch.tensor([int(value) for value in values], dtype=torch.int64)
        return float(chrf_from_stats(stats, config=config))
    from tensortext.rouge import rouge_dict, rouge_from_stats

    totals = torch.tensor([float(value) for value in values], dtype=config.dtype)
    scores = rouge_from_stats(totals, config=config)  # [T, 3]
    return {key: float(value) for key, value in rouge_dict(scores, config=config).items()}
