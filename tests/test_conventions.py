"""The package's conventions, checked across every public function that takes tensors.

* Exception rule: a wrong type or dtype raises ``TypeError``; a wrong shape, value or device
  raises ``ValueError``; the message names the argument.
* Padding rule: every ragged batch a function returns is a ``Padded`` whose padding is ``PAD_ID``.
* Device rule: ``None`` is the CPU, ``"auto"`` CUDA when available; bad devices are ``ValueError``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import torch

import tensortext as tt
from tensortext._checks import resolve_device
from tensortext.decode import beam_search, length_batches, translate
from tensortext.lmbr import LMBRBias, NgramPosteriors, lmbr_theta, ngram_posteriors
from tensortext.mbr import mbr_rerank
from tensortext.models.bundled import load_bundled_translator
from tensortext.padded import PAD_ID, Padded

IDS = torch.tensor([[5, 6, 7, 8], [5, 6, 9, 9]])
LENS = torch.tensor([4, 3])
FLOAT_IDS = IDS.float()
IDS_3D = IDS[:, None, None, :]


def _step(tokens: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]:
    table = torch.log_softmax(torch.randn(10, 10, generator=torch.Generator().manual_seed(0)), -1)
    return table[tokens[:, -1]], state


def _beam(**overrides: Any) -> Any:
    kwargs: dict[str, Any] = dict(
        batch_size=2, num_beams=2, eos_id=0, start_ids=torch.tensor([1, 2]), max_new_tokens=3
    )
    rows = overrides.pop("state_rows", None)
    kwargs.update(overrides)
    state = None if rows is None else torch.zeros(rows, 3)
    return beam_search(_step, state, **kwargs)


def _posteriors() -> NgramPosteriors:
    ids = torch.tensor([[[5, 6, 7], [5, 7, 0]]])
    return ngram_posteriors(ids, torch.tensor([[3, 2]]), torch.tensor([[0.0, 0.0]]))


def _bias() -> LMBRBias:
    return LMBRBias(_posteriors(), lmbr_theta(0.741, 0.62), vocab_size=10, eos_id=0)


@dataclass(frozen=True)
class Case:
    """``call()`` must raise ``error`` with ``argument`` in the message."""

    name: str
    call: Callable[[], Any]
    argument: str
    error: type[Exception]


def _cases() -> list[Case]:
    encoding = tt.get_encoding("cl100k_base")
    model = load_bundled_translator()
    cases = [
        # BLEU: ids, lengths and statistics.
        Case("sentence_bleu dtype", lambda: tt.sentence_bleu(FLOAT_IDS, IDS), "hyp_ids", TypeError),
        Case("sentence_bleu shape", lambda: tt.sentence_bleu(IDS_3D, IDS), "hyp_ids", ValueError),
        Case("corpus_bleu dtype", lambda: tt.corpus_bleu(IDS, FLOAT_IDS), "ref_ids", TypeError),
        Case("corpus_bleu shape", lambda: tt.corpus_bleu(IDS, IDS_3D), "ref_ids", ValueError),
        Case(
            "bleu_stats lengths dtype",
            lambda: tt.bleu_stats(IDS, IDS, hyp_lens=LENS.float()),
            "hyp_lens",
            TypeError,
        ),
        Case(
            "bleu_stats lengths shape",
            lambda: tt.bleu_stats(IDS, IDS, hyp_lens=LENS[:1]),
            "hyp_lens",
            ValueError,
        ),
        Case(
            "bleu_stats pad_id type",
            lambda: tt.bleu_stats(IDS, IDS, pad_id=0.5),
            "pad_id",
            TypeError,
        ),
        Case(
            "bleu_from_stats dtype",
            lambda: tt.bleu_from_stats(torch.zeros(10)),
            "stats",
            TypeError,
        ),
        Case(
            "bleu_from_stats shape",
            lambda: tt.bleu_from_stats(torch.zeros(3, dtype=torch.long)),
            "stats",
            ValueError,
        ),
        Case("BLEU.update dtype", lambda: tt.BLEU().update(FLOAT_IDS, IDS), "hyp_ids", TypeError),
        Case(
            "BLEU option type", lambda: tt.BLEU(max_ngram_order=2.5), "max_ngram_order", TypeError
        ),
        Case(
            "BLEU option value", lambda: tt.BLEU(max_ngram_order=0), "max_ngram_order", ValueError
        ),
        # MBR.
        Case(
            "mbr dtype",
            lambda: mbr_rerank(IDS_3D[:, 0].float(), LENS[:, None]),
            "candidates",
            TypeError,
        ),
        Case("mbr shape", lambda: mbr_rerank(IDS, LENS), "candidates", ValueError),
        # Issue 16 item 21: raw torch errors before.
        Case(
            "mbr no candidates",
            lambda: mbr_rerank(IDS_3D[:, :0, 0], LENS[:, None][:, :0]),
            "candidates",
            ValueError,
        ),
        *(
            Case(
                f"bleu {dtype}",
                lambda dtype=dtype: tt.sentence_bleu(IDS.to(dtype), IDS),
                "hyp_ids",
                TypeError,
            )
            for dtype in (torch.uint16, torch.uint32, torch.uint64)
        ),
        Case(
            "bleu pad_id outside the dtype",
            lambda: tt.sentence_bleu(IDS.to(torch.int8), IDS.to(torch.int8), pad_id=1000),
            "pad_id",
            ValueError,
        ),
        Case(
            "beam length_penalty overflow",
            lambda: _beam(length_penalty=1e6),
            "length_penalty",
            ValueError,
        ),
        Case("beam state rows", lambda: _beam(state_rows=2), "state", ValueError),
        Case(
            "beam vocab too small for refill",
            lambda: _beam(eos_id=list(range(10)), num_beams=1),
            "eos_id",
            ValueError,
        ),
        # BPE.
        Case(
            "encode_batch type",
            lambda: encoding.encode_batch_to_tensor("one text"),
            "texts",
            TypeError,
        ),
        Case(
            "decode_batch dtype",
            lambda: encoding.decode_batch(Padded(FLOAT_IDS, LENS)),
            "ids",
            TypeError,
        ),
        Case(
            "decode_batch shape",
            lambda: encoding.decode_batch(Padded(IDS[0], LENS)),
            "ids",
            ValueError,
        ),
        Case(
            "decode_batch lengths",
            lambda: encoding.decode_batch(Padded(IDS, LENS[:1])),
            "lengths",
            ValueError,
        ),
        Case(
            "encode_batch device",
            lambda: encoding.encode_batch_to_tensor(["x"], device="nope"),
            "device",
            ValueError,
        ),
        # Beam search and corpus translation.
        Case(
            "beam start_ids dtype",
            lambda: _beam(start_ids=torch.tensor([1.0, 2.0])),
            "start_ids",
            TypeError,
        ),
        Case(
            "beam start_ids shape",
            lambda: _beam(start_ids=torch.tensor([1, 2, 3])),
            "start_ids",
            ValueError,
        ),
        Case("beam option type", lambda: _beam(num_beams=2.0), "num_beams", TypeError),
        Case("beam option value", lambda: _beam(num_beams=0), "num_beams", ValueError),
        Case("translate dtype", lambda: translate(model, FLOAT_IDS, LENS), "src_ids", TypeError),
        Case("translate shape", lambda: translate(model, IDS, LENS[:1]), "lengths", ValueError),
        Case(
            "length_batches dtype",
            lambda: length_batches(LENS.float(), max_sentences=2),
            "lengths",
            TypeError,
        ),
        Case(
            "length_batches value",
            lambda: length_batches(LENS, max_sentences=0),
            "max_sentences",
            ValueError,
        ),
        # The bundled model.
        Case("prepare dtype", lambda: model.prepare(FLOAT_IDS, LENS, 1), "src_ids", TypeError),
        Case("prepare shape", lambda: model.prepare(IDS[0], LENS, 1), "src_ids", ValueError),
        Case("tokenize_source type", lambda: model.tokenize_source("1 2"), "lines", TypeError),
        # LMBR.
        Case(
            "ngram_posteriors dtype",
            lambda: ngram_posteriors(IDS_3D[:, 0].float(), LENS[:, None], torch.zeros(2, 1)),
            "ids",
            TypeError,
        ),
        Case(
            "ngram_posteriors shape",
            lambda: ngram_posteriors(IDS, LENS, torch.zeros(2)),
            "ids",
            ValueError,
        ),
        Case("LMBRBias call dtype", lambda: _bias()(FLOAT_IDS), "tokens", TypeError),
        Case("LMBRBias call shape", lambda: _bias()(IDS[0]), "tokens", ValueError),
        Case(
            "lookup dtype",
            lambda: _posteriors().lookup(torch.tensor([[5.0]]), torch.tensor([0])),
            "ngrams",
            TypeError,
        ),
    ]
    return cases


CASES = _cases()


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_bad_input_raises_the_rule_s_exception_naming_the_argument(case: Case) -> None:
    with pytest.raises(case.error) as raised:
        case.call()
    assert case.argument in str(raised.value), f"{case.name}: {raised.value}"


def test_ragged_outputs_are_padded_with_pad_id() -> None:
    encoded = tt.get_encoding("cl100k_base").encode_batch_to_tensor(["hello world", "hi"])
    assert isinstance(encoded, Padded)
    assert encoded.ids[1, 1] == PAD_ID
    out = _beam(max_new_tokens=3)
    inside = torch.arange(out.sequences.shape[-1]) < out.lengths[..., None]
    assert bool((out.sequences[~inside] == PAD_ID).all())
    best = out.without_eos(0)
    assert isinstance(best, Padded) and best.ids.shape[0] == 2
    model = load_bundled_translator()
    source = model.tokenize_source(["1 2 3", "4"])
    assert isinstance(source, Padded) and source.ids[1, 1] == PAD_ID


def test_device_rule() -> None:
    assert resolve_device(None) == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == expected
    with pytest.raises(ValueError, match="device"):
        resolve_device("no-such-device")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            resolve_device("cuda")
