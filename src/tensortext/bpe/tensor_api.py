"""The tensor variants of :class:`~tensortext.bpe.Encoding`, under names of their own:
``encode_to_tensor`` (``[L]``), ``encode_batch_to_tensor`` (:class:`~tensortext.padded.Padded`
``[B, L]``) and ``encode_batch_to_flat`` (:class:`~tensortext.padded.Flat`, no padding), from
the backend :mod:`tensortext.bpe.backends` chooses: the tensor engine on a GPU or with
``merge_backend="torch"``; on a CPU with ``merge_backend="auto"``, the C encoder where it
applies (the same IDs, several times faster, on ``torch.get_num_threads()`` threads).

torch and the engine are imported by the first call, so the tokenizer alone runs without them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from tensortext._checks import check_choice, check_int, resolve_device
from tensortext._torch import require_torch
from tensortext.bpe.patterns import PatternKind
from tensortext.bpe.post_processor import post_processor_affixes
from tensortext.bpe.text import (
    AllowedSpecial,
    DisallowedSpecial,
    allowed_set,
    check_disallowed,
    check_num_threads,
    check_text,
    check_texts,
    prepare_segments,
)
from tensortext.padded import PAD_ID, Flat, Padded

if TYPE_CHECKING:
    import torch

    from tensortext.bpe.backends import Backends, MergeBackend
    from tensortext.bpe.vocab import Vocab

__all__ = ["Pretokenize", "TensorMethods"]

Pretokenize = Literal["regex", "bytes"]


class TensorMethods:
    """The tensor methods :class:`~tensortext.bpe.Encoding` inherits (it sets ``_vocab``)."""

    _vocab: Vocab

    if TYPE_CHECKING:

        @property
        def _backends(self) -> Backends: ...  # Encoding's (cached)

    def encode_to_tensor(
        self,
        text: str,
        *,
        device: torch.device | str | None = None,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        add_special_tokens: bool = False,
    ) -> torch.Tensor:
        """:meth:`encode` as ``ids [L]`` int64 on ``device``; the keywords are
        :meth:`encode_batch_to_tensor`'s."""
        ids, _ = self.encode_batch_to_tensor(
            [check_text(text)],
            device=device,
            allowed_special=allowed_special,
            disallowed_special=disallowed_special,
            add_special_tokens=add_special_tokens,
        )
        return ids[0]

    def encode_batch_to_tensor(
        self,
        texts: Iterable[str],
        *,
        device: torch.device | str | None = None,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        pretokenize: Pretokenize = "regex",
        pad_id: int = PAD_ID,
        merge_backend: MergeBackend = "auto",
        add_special_tokens: bool = False,
        num_threads: int | None = None,
    ) -> Padded:
        """Encode a batch at once: split, look up and merge every text together on ``device``.

        Args:
            texts: ``B`` strings, in any ordered iterable (a list, a pandas Series, a numpy
                string array, a generator).
            device: where the work runs and the result lives: ``None`` (the CPU), ``"auto"``
                (CUDA when available) or a torch device.
            allowed_special, disallowed_special: as in :meth:`encode`.
            pretokenize: ``"regex"`` (exact) or ``"bytes"`` (BlockBPE's byte-level split, for
                comparison only: its IDs differ from tiktoken's).
            pad_id: fills ``ids`` past each length; -1 so that forgetting ``lengths`` fails
                loudly (ID 0 is a real token, ``!``).
            merge_backend: ``"auto"`` (on CUDA, the Triton kernel when triton is installed,
                for pieces up to 64 bytes, torch otherwise; on a CPU, the C encoder where it
                applies, else the Python one where it does; see
                :mod:`tensortext.bpe.backends`), ``"torch"`` (the tensor engine on every
                device) or ``"triton"``. All give the same IDs.
            add_special_tokens: add the Hugging Face post-processor's tokens around each text
                (e.g. a BOS), as HF's ``encode(..., add_special_tokens=True)``; refused on an
                encoding that has none (tiktoken's).
            num_threads: the C encoder's threads (the Python encoder's worker processes) on
                a CPU (default: ``torch.get_num_threads()``; one per usable core at most).

        Returns:
            :class:`~tensortext.padded.Padded` ``(ids [B, L], lengths [B])`` int64; row ``b``
            equals ``encode(texts[b])``, whatever else is in the batch.

        Raises:
            TypeError: for ``texts`` that is a str, a set or a mapping, or holds a non-str.
            ValueError: for a disallowed special token (as :meth:`encode`), or, where the C
                encoder runs, a segment (a text, or a part between allowed special
                tokens) over :data:`~tensortext.bpe.native.MAX_SEGMENT_CHARS` (2**30 - 2)
                characters, or ``add_special_tokens=True`` on an encoding without a Hugging
                Face post-processor.
            ImportError: without torch, naming the extra to install.
        """
        check_int("pad_id", pad_id)
        tokens, lengths = self._encode_flat(
            texts, device, allowed_special, disallowed_special, pretokenize, merge_backend,
            add_special_tokens, num_threads,
        )  # fmt: skip
        from tensortext.bpe.engine import pad_flat

        affixes = self._affixes(add_special_tokens)
        return pad_flat(tokens, lengths, pad_id, *affixes)

    def encode_batch_to_flat(
        self,
        texts: Iterable[str],
        *,
        device: torch.device | str | None = None,
        allowed_special: AllowedSpecial = frozenset(),
        disallowed_special: DisallowedSpecial = "all",
        pretokenize: Pretokenize = "regex",
        merge_backend: MergeBackend = "auto",
        add_special_tokens: bool = False,
        num_threads: int | None = None,
    ) -> Flat:
        """:meth:`encode_batch_to_tensor` without padding: memory and the result follow the
        total number of tokens, so one long document among short ones costs only its own
        length (the keywords are the same).

        Returns:
            :class:`~tensortext.padded.Flat` ``(ids [T], lengths [B])`` int64: the rows one
            after another; row ``b`` equals ``encode(texts[b])``.
        """
        tokens, lengths = self._encode_flat(
            texts, device, allowed_special, disallowed_special, pretokenize, merge_backend,
            add_special_tokens, num_threads,
        )  # fmt: skip
        from tensortext.bpe.engine import affix_flat

        return Flat(*affix_flat(tokens, lengths, *self._affixes(add_special_tokens)))

    def _affixes(self, add_special_tokens: bool) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return post_processor_affixes(self._vocab, add_special_tokens, self._vocab.name)

    def _encode_flat(
        self,
        texts: Iterable[str],
        device: torch.device | str | None,
        allowed_special: AllowedSpecial,
        disallowed_special: DisallowedSpecial,
        pretokenize: Pretokenize,
        merge_backend: MergeBackend,
        add_special_tokens: bool,
        num_threads: int | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Checks every argument, then ``(tokens [T], lengths [B])`` on the target device from
        the chosen backend."""
        torch = require_torch("the tensor methods (encode_to_tensor, encode_batch_to_tensor, ...)")
        from tensortext.bpe.merge_triton import triton_usable

        check_choice("pretokenize", pretokenize, ("regex", "bytes"))
        check_choice("merge_backend", merge_backend, ("auto", "torch", "triton"))
        if num_threads is not None:
            num_threads = check_num_threads(num_threads)
        self._affixes(add_special_tokens)  # a bad value or an encoding without one: no work
        target = resolve_device(device)
        if merge_backend == "triton" and not triton_usable(target):
            raise ValueError(
                f"merge_backend='triton' needs the triton package and a CUDA device (or "
                f"TRITON_INTERPRET=1); got device {target}. Use merge_backend='auto'"
            )
        texts = check_texts(texts, "texts")  # last: it consumes a generator
        allowed = allowed_set(self._vocab, allowed_special)
        check_disallowed(self._vocab, texts, allowed, disallowed_special)
        kind: PatternKind = "bytes" if pretokenize == "bytes" else self._vocab.kind
        segments = prepare_segments(self._vocab, texts, allowed)
        backend = self._backends.get(target, merge_backend, kind)
        threads = torch.get_num_threads() if num_threads is None else num_threads
        tokens, lengths = backend.flat(segments, len(texts), threads)
        if not isinstance(tokens, torch.Tensor):  # numpy, uint32 from the C encoder
            tokens = torch.from_numpy(tokens.astype("int64", copy=False))
        return tokens.to(target), torch.as_tensor(lengths, device=target)
