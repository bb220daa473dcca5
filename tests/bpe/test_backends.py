"""``tensortext.bpe.backends``: the rule that picks the encoder, row by row of its table, and
every backend's IDs for the same prepared segments (the parity of each against tiktoken is in
``test_native.py``, ``test_host.py`` and ``test_encoding.py``)."""

from __future__ import annotations

import dataclasses

import pytest
from oracles.bpe import tiktoken_reference

import tensortext.bpe.merge_triton as merge_triton
from tensortext.bpe import get_encoding, native
from tensortext.bpe.backends import Backends, build_backend, choose_backend
from tensortext.bpe.host import python_split_available
from tensortext.bpe.text import prepare_segments

C_BUILT = native._native is not None


@pytest.fixture
def vocab():
    return get_encoding("cl100k_base")._vocab


@pytest.mark.skipif(not C_BUILT, reason="built without a C compiler")
def test_a_cpu_gets_the_c_encoder(vocab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TENSORTEXT_NATIVE", raising=False)
    assert choose_backend(vocab) == "c"


def test_without_c_the_python_encoder(vocab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORTEXT_NATIVE", "0")
    assert choose_backend(vocab) == "python"


def test_without_either_the_tensor_engine(vocab, monkeypatch: pytest.MonkeyPatch) -> None:
    """A split neither C nor ``re`` has (here: a kind C does not know, with C off)."""
    monkeypatch.setenv("TENSORTEXT_NATIVE", "0")
    deepseek = dataclasses.replace(vocab, kind="deepseek_v3")
    assert not python_split_available("deepseek_v3")
    assert choose_backend(deepseek) == "torch"


@pytest.mark.parametrize(
    ("device_type", "merge_backend", "kind", "triton", "expected"),
    [
        ("cpu", "torch", None, True, "torch"),
        ("cpu", "auto", "bytes", True, "torch"),  # BlockBPE's split: the engine only
        ("cpu", "triton", None, True, "triton"),
        ("cuda", "auto", None, True, "triton"),
        ("cuda", "auto", None, False, "torch"),
        ("cuda", "torch", None, True, "torch"),
    ],
)
def test_the_tensor_rows(vocab, monkeypatch, device_type, merge_backend, kind, triton, expected):
    monkeypatch.setattr(merge_triton, "triton_usable", lambda device: triton)
    chosen = choose_backend(vocab, device_type=device_type, merge_backend=merge_backend, kind=kind)
    assert chosen == expected


def test_a_bad_switch_is_named_at_the_choice(vocab, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TENSORTEXT_NATIVE", "perhaps")
    with pytest.raises(ValueError, match="TENSORTEXT_NATIVE='perhaps'"):
        choose_backend(vocab)


def test_the_choice_is_made_once_per_kind_of_call(vocab, monkeypatch: pytest.MonkeyPatch) -> None:
    """``TENSORTEXT_NATIVE`` is read at an encoding's first call on the CPU, then kept."""
    backends = Backends(vocab)
    monkeypatch.setenv("TENSORTEXT_NATIVE", "0")
    first = backends.get()
    assert first.name == "python"
    monkeypatch.setenv("TENSORTEXT_NATIVE", "1")
    assert backends.get() is first
    assert backends.get("cpu", "torch").name == "torch"


BACKENDS = ["c", "python", "torch"] if C_BUILT else ["python", "torch"]


@pytest.mark.parametrize("name", BACKENDS)
def test_every_backend_gives_the_same_ids(name: str) -> None:
    """The one interface: rows, flat arrays and pieces of the same segments."""
    enc = get_encoding("cl100k_base")
    texts = ["hello world<|endoftext|>Grüße 😀", "", "def f(x):\n    return x  "]
    allowed = frozenset({"<|endoftext|>"})
    segments = prepare_segments(enc._vocab, texts, allowed)
    expected = tiktoken_reference("cl100k_base").encode_batch(texts, allowed_special=allowed)
    backend = build_backend(enc._vocab, name)  # type: ignore[arg-type]
    assert backend.name == name
    assert backend.rows(segments, len(texts), 1) == expected
    ids, lengths = backend.flat(segments, len(texts), 1)
    assert list(lengths) == [len(row) for row in expected]
    assert [int(token) for token in ids] == [token for row in expected for token in row]
    assert backend.pieces("it's 12345 ok") == ["it", "'s", " ", "123", "45", " ok"]


def test_a_backend_that_does_not_apply_is_refused() -> None:
    deepseek = dataclasses.replace(get_encoding("cl100k_base")._vocab, kind="deepseek_v3")
    with pytest.raises(ValueError, match="no re translation"):
        build_backend(deepseek, "python")
