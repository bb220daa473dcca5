"""Which code encodes my text? This module answers, and it is the only place that chooses.

Every encoding method of :class:`~tensortext.bpe.Encoding` does the same three steps: check its
arguments, cut the texts at allowed special tokens and apply a ``tokenizer.json``'s text
options (:func:`~tensortext.bpe.text.prepare_segments`, giving
:data:`~tensortext.bpe.text.Segments`), then hand the segments to one backend, which returns
the token IDs. The backends, one interface (:class:`Backend`), one file each:

====================  ===========================================================================
backend               code
====================  ===========================================================================
``"c"``               :mod:`~tensortext.bpe.native` over the C extension (``csrc/``): split,
                      look up and merge in one C call per batch, on threads (GIL released).
``"python"``          :mod:`~tensortext.bpe.host`: the split regex translated for ``re``, a
                      piece cache and sequential merges; large batches in worker processes
                      (:mod:`~tensortext.bpe.parallel`). The encoder of a light install (no
                      torch) without a C compiler. With torch, its many new pieces are merged
                      together by the tensor engine's passes (:func:`python_backend`).
``"torch"``           :mod:`~tensortext.bpe.engine`: the whole batch as tensors, on any device
                      (split: :mod:`~tensortext.bpe.pretokenize`; merges:
                      :mod:`~tensortext.bpe.merge`).
``"triton"``          the same engine, its short pieces merged by one Triton kernel
                      (:mod:`~tensortext.bpe.merge_triton`).
====================  ===========================================================================

:func:`choose_backend` picks one from the call (device, ``merge_backend``, ``pretokenize``) and
from what is installed, first match wins:

===========  =================  ===============================================  ============
device       ``merge_backend``  and                                              backend
===========  =================  ===============================================  ============
CPU          ``"auto"``         the C extension is built, ``TENSORTEXT_NATIVE``  ``"c"``
                                is not off, and C has the split's scanner
CPU          ``"auto"``         the pattern translates to ``re`` (3.11+)         ``"python"``
any          ``"triton"``                                                        ``"triton"``
not the CPU  ``"auto"``         triton is installed (CUDA)                       ``"triton"``
any          any                (torch is installed)                             ``"torch"``
===========  =================  ===============================================  ============

The CPU rows are for the split of the encoding's pattern; ``pretokenize="bytes"`` (BlockBPE's
split) exists only in the tensor engine. All backends give tiktoken's IDs (``tests/bpe`` checks
each against tiktoken and ``tokenizers``). On a CPU the C encoder is fastest; without it, the
Python encoder is several times faster than the tensor engine on one core (its piece cache skips
most of the work), which is why it stays.

:class:`Backends` keeps one encoding's backends once built (the C encoder's tables, the Python
encoder's piece cache and worker processes): the choice for a kind of call is made at its
first call (``TENSORTEXT_NATIVE`` is read then) and kept.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Protocol

from tensortext._torch import require_torch, torch_installed
from tensortext.bpe import native
from tensortext.bpe.host import HostEncoder, python_split_available
from tensortext.bpe.patterns import PatternKind

if TYPE_CHECKING:
    import numpy as np
    import torch

    from tensortext.bpe.parallel import Workers
    from tensortext.bpe.text import Segments
    from tensortext.bpe.vocab import Vocab

__all__ = [
    "Backend",
    "BackendName",
    "Backends",
    "CBackend",
    "PythonBackend",
    "TensorBackend",
    "build_backend",
    "choose_backend",
    "python_backend",
    "splice_rows",
]

BackendName = Literal["c", "python", "torch", "triton"]
MergeBackend = Literal["auto", "torch", "triton"]
EncodeMany = Callable[[list[str]], list[list[int]]]
"""Ordinary segments -> the tokens of each (what the C and Python encoders run per batch)."""


class Backend(Protocol):
    """Prepared segments to token IDs: what every backend does, with the same results."""

    name: BackendName

    def rows(self, segments: Segments, n_texts: int, num_threads: int) -> list[list[int]]:
        """Each text's tokens as a list (tiktoken's lists)."""
        ...

    def flat(self, segments: Segments, n_texts: int, num_threads: int) -> tuple[Any, Any]:
        """``(ids [T], lengths [B] int64)``: every text's tokens after the previous text's.
        numpy arrays from the CPU backends (ids uint32 from C, int64 otherwise), int64 torch
        tensors on the engine's device."""
        ...

    def pieces(self, segment: str) -> list[str]:
        """The pieces the split pattern cuts one ordinary segment into."""
        ...


def choose_backend(
    vocab: Vocab,
    *,
    device_type: str = "cpu",
    merge_backend: MergeBackend = "auto",
    kind: PatternKind | None = None,
) -> BackendName:
    """The backend that encodes a call (the rule of the module docstring's table).

    Args:
        vocab: the encoding's vocabulary (its split kind decides what C and ``re`` can do).
        device_type: where the work runs (``torch.device.type``).
        merge_backend: the tensor methods' argument (``"auto"`` for the list methods).
        kind: the split (``"bytes"`` for ``pretokenize="bytes"``; default ``vocab.kind``).

    Raises:
        ValueError: for a ``TENSORTEXT_NATIVE`` that is not understood (read here).
    """
    kind = vocab.kind if kind is None else kind
    if device_type == "cpu" and merge_backend == "auto" and kind == vocab.kind:
        if native.native_applies(kind):
            return "c"
        if python_split_available(kind) and vocab.unknown_ids is None:  # (bytes only)
            return "python"
    if merge_backend == "triton":
        return "triton"
    if device_type != "cpu" and merge_backend == "auto":
        from tensortext.bpe.merge_triton import triton_usable  # torch: a device is given

        torch = require_torch("the tensor engine")
        return "triton" if triton_usable(torch.device(device_type)) else "torch"
    return "torch"


def build_backend(
    vocab: Vocab,
    name: BackendName,
    *,
    device: str | torch.device = "cpu",
    kind: PatternKind | None = None,
) -> Backend:
    """The backend ``name`` of ``vocab`` (tests build each to compare them).

    Raises:
        ValueError: ``"c"`` or ``"python"`` where it does not apply (not built or switched
            off, a split it has no scanner or translation for).
        ImportError: ``"torch"`` or ``"triton"`` without torch.
    """
    if name == "c":
        encoder = native.native_encoder(vocab)
        if encoder is None:
            raise ValueError(f"{vocab.name}: the C encoder is not built, switched off, or "
                             f"has no scanner for the {vocab.kind} split")  # fmt: skip
        return CBackend(encoder)
    if name == "python":
        return python_backend(vocab)
    return TensorBackend(vocab, device, vocab.kind if kind is None else kind, name)


def splice_rows(segments: Segments, n_texts: int, encode_many: EncodeMany) -> list[list[int]]:
    """Each text's tokens: its ordinary segments through ``encode_many`` (one call for the
    batch), its special tokens in between."""
    texts, specials, owners = segments
    if len(texts) == n_texts and max(specials, default=-1) < 0:  # one ordinary segment a text
        return encode_many(texts)
    ordinary = [text for text, special in zip(texts, specials, strict=True) if special < 0]
    encoded = iter(encode_many(ordinary))
    rows: list[list[int]] = [[] for _ in range(n_texts)]
    for special, owner in zip(specials, owners, strict=True):
        rows[owner] += [special] if special >= 0 else next(encoded)
    return rows


def _rows_to_flat(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    ids = np.fromiter((token for row in rows for token in row), dtype=np.int64)
    return ids, np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))


class CBackend:
    """The C encoder (:mod:`~tensortext.bpe.native`): ``num_threads`` threads of this process
    from :data:`~tensortext.bpe.native.THREADS_MIN_CHARS` characters."""

    name: BackendName = "c"

    def __init__(self, encoder: Any):
        self.encoder = encoder

    def rows(self, segments: Segments, n_texts: int, num_threads: int) -> list[list[int]]:
        return splice_rows(segments, n_texts, native.threaded_encoder(self.encoder, num_threads))

    def flat(self, segments: Segments, n_texts: int, num_threads: int) -> tuple[Any, Any]:
        return native.encode_segments_flat(self.encoder, segments, n_texts, num_threads)

    def pieces(self, segment: str) -> list[str]:
        return self.encoder.split(segment)  # type: ignore[no-any-return]


class PythonBackend:
    """The Python encoder (:class:`~tensortext.bpe.host.HostEncoder`): ``num_threads``
    worker processes from :data:`~tensortext.bpe.parallel.PARALLEL_MIN_CHARS` characters."""

    name: BackendName = "python"

    def __init__(
        self, host: HostEncoder, workers: Workers, worker_count: Callable[[int, list[str]], int]
    ):
        self.host = host
        self.workers = workers
        self.worker_count = worker_count

    def rows(self, segments: Segments, n_texts: int, num_threads: int) -> list[list[int]]:
        count = self.worker_count(num_threads, segments[0])
        encode_many = self.workers.encoder(count) if count > 1 else self.host.encode_many
        return splice_rows(segments, n_texts, encode_many)

    def flat(self, segments: Segments, n_texts: int, num_threads: int) -> tuple[Any, Any]:
        return _rows_to_flat(self.rows(segments, n_texts, num_threads))

    def pieces(self, segment: str) -> list[str]:
        return self.host.split(segment)


def python_backend(vocab: Vocab) -> PythonBackend:
    """The Python encoder of ``vocab``. With torch installed, a call's many new pieces are
    merged together in the tensor engine's passes (faster than one by one, and far faster on
    long runs of one byte); the worker processes then share the tables built before they fork.

    Raises:
        ValueError: if ``vocab``'s pattern does not translate to ``re`` (or Python < 3.11).
    """
    if not python_split_available(vocab.kind):
        raise ValueError(f"{vocab.name}: no re translation of the {vocab.kind} split")
    # (here, not at import: multiprocessing loads only where the Python encoder runs)
    from tensortext.bpe.parallel import Workers, worker_count

    with_torch = torch_installed()
    host = HostEncoder(vocab, bulk_merge=partial(_tensor_merges, vocab) if with_torch else None)
    workers = Workers(
        host.encode_many,
        before_start=partial(_cpu_tables, vocab) if with_torch else None,
        in_worker=_one_torch_thread if with_torch else None,
    )
    return PythonBackend(host, workers, worker_count)


def _tensor_merges(vocab: Vocab, pieces: list[bytes]) -> list[list[int]]:
    from tensortext.bpe.engine import merge_byte_pieces  # torch: only where it is installed

    return merge_byte_pieces(vocab, pieces)


def _cpu_tables(vocab: Vocab) -> None:
    import torch

    vocab.tables(torch.device("cpu"))


def _one_torch_thread() -> None:
    """In a worker process: the tensor merges of its new pieces on one core."""
    import torch

    torch.set_num_threads(1)


class TensorBackend:
    """The tensor engine (:mod:`~tensortext.bpe.engine`) on ``device``, its merges by torch
    passes or, for ``"triton"``, by the Triton kernel; ``num_threads`` is not used (torch's
    intra-op threads are)."""

    def __init__(
        self,
        vocab: Vocab,
        device: str | torch.device,
        kind: PatternKind,
        name: BackendName = "torch",
    ):
        torch = require_torch(
            f"{vocab.name}: encoding its {kind} split without the C encoder or a translation "
            "for re (the tensor engine has a scanner for it)"
        )
        self.vocab, self.kind, self.name = vocab, kind, name
        self.device = torch.device(device)

    def rows(self, segments: Segments, n_texts: int, num_threads: int) -> list[list[int]]:
        from tensortext.padded import Flat

        return Flat(*self.flat(segments, n_texts, num_threads)).tolist()

    def flat(self, segments: Segments, n_texts: int, num_threads: int) -> tuple[Any, Any]:
        from tensortext.bpe.engine import encode_flat

        triton = self.name == "triton"
        return encode_flat(self.vocab, segments, n_texts, self.device, self.kind, triton=triton)

    def pieces(self, segment: str) -> list[str]:
        from tensortext.bpe.engine import piece_texts

        return piece_texts(segment, self.kind)


class Backends:
    """One encoding's backends, each built at its first call and kept: the choice of
    :func:`choose_backend` for a device, ``merge_backend`` and split is made once."""

    def __init__(self, vocab: Vocab):
        self.vocab = vocab
        self._built: dict[tuple[str, str, str], Backend] = {}

    def get(
        self,
        device: str | torch.device = "cpu",
        merge_backend: MergeBackend = "auto",
        kind: PatternKind | None = None,
    ) -> Backend:
        """The backend of a call on ``device`` (the CPU for the list and numpy methods)."""
        kind = self.vocab.kind if kind is None else kind
        key = (str(device), merge_backend, kind)
        backend = self._built.get(key)
        if backend is None:  # (two threads may both build it: the same backend, one kept)
            device_type = getattr(device, "type", str(device).split(":")[0])
            name = choose_backend(
                self.vocab, device_type=device_type, merge_backend=merge_backend, kind=kind
            )
            backend = self._built.setdefault(
                key, build_backend(self.vocab, name, device=device, kind=kind)
            )
        return backend

    def shutdown_workers(self) -> None:
        """Stop the Python encoder's worker processes, if any."""
        for backend in list(self._built.values()):
            if isinstance(backend, PythonBackend):
                backend.workers.shutdown()
