"""``tiktoken.load`` under tensortext: read and write tiktoken's vocabulary files, offline.

The same names, arguments and return types as tiktoken's module, with one difference: tiktoken
downloads a URL (and caches it); tensortext downloads nothing. A local path is read where it is
(gzip is read too, where tiktoken reads only plain files); a URL (anything with ``://``, as
tiktoken tells them apart) raises a ``ValueError`` saying so and how to pass a local file. The
encodings of :func:`tensortext.get_encoding` need no file at all: their ranks ship with the
package.

Example:
    >>> import os, tempfile
    >>> from tensortext import load
    >>> path = os.path.join(tempfile.mkdtemp(), "tiny.tiktoken")
    >>> ranks = {bytes([b]): b for b in range(256)} | {b"ab": 256}
    >>> load.dump_tiktoken_bpe(ranks, path)
    >>> load.load_tiktoken_bpe(path) == ranks
    True
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from tensortext.bpe.hf_json import bytes_to_unicode
from tensortext.bpe.openai_files import tiktoken_file_bytes
from tensortext.bpe.vocab import read_tiktoken_file
from tensortext.formats import atomic_write

__all__ = [
    "check_hash",
    "data_gym_to_mergeable_bpe_ranks",
    "dump_tiktoken_bpe",
    "load_tiktoken_bpe",
    "read_file",
    "read_file_cached",
]


def _local_path(blobpath: str | os.PathLike[str], argument: str) -> Path:
    """``blobpath`` as a local path; a URL is refused, naming ``argument``."""
    if not isinstance(blobpath, str | os.PathLike):
        raise TypeError(f"{argument} must be a path (str), got {type(blobpath).__name__}")
    text = os.fspath(blobpath)
    if "://" in text:
        raise ValueError(
            f"{argument}={text!r} is a URL, and tensortext downloads nothing: download the file "
            f"yourself (e.g. curl -o FILE '{text}') and pass its local path"
        )
    return Path(text)


def read_file(blobpath: str) -> bytes:
    """The bytes of the local file ``blobpath`` (tiktoken's ``read_file``, without downloading).

    Raises:
        ValueError: for a URL (nothing is downloaded).
        OSError: as ``open`` (``FileNotFoundError`` for a missing file).
    """
    return _local_path(blobpath, "blobpath").read_bytes()


def check_hash(data: bytes, expected_hash: str) -> bool:
    """Whether ``data``'s sha256 (hex) is ``expected_hash``."""
    return hashlib.sha256(data).hexdigest() == expected_hash


def read_file_cached(blobpath: str, expected_hash: str | None = None) -> bytes:
    """:func:`read_file`, checked against ``expected_hash`` (sha256, hex) when one is given.

    tiktoken caches what it downloads; a local file needs no cache, so nothing is written.

    Raises:
        ValueError: for a URL, or for bytes whose sha256 is not ``expected_hash``.
    """
    data = read_file(blobpath)
    if expected_hash and not check_hash(data, expected_hash):
        raise ValueError(
            f"{blobpath}: sha256 {hashlib.sha256(data).hexdigest()} differs from "
            f"expected_hash={expected_hash!r}; the file is corrupt or another one"
        )
    return data


def load_tiktoken_bpe(tiktoken_bpe_file: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """The mergeable ranks of a tiktoken file (``base64-token rank`` lines, maybe gzipped).

    Args:
        tiktoken_bpe_file: a local path (e.g. a ``.tiktoken`` file tiktoken downloaded once).
        expected_hash: sha256 (hex) of the uncompressed file, checked when given.

    Returns:
        ``token bytes -> rank``, tiktoken's ``load_tiktoken_bpe``'s dict.

    Raises:
        ValueError: for a URL, a hash that differs, or a malformed line (naming it).
    """
    path = _local_path(tiktoken_bpe_file, "tiktoken_bpe_file")
    return read_tiktoken_file(path, expected_hash=expected_hash or None)


def dump_tiktoken_bpe(bpe_ranks: dict[bytes, int], tiktoken_bpe_file: str) -> None:
    """Write ``bpe_ranks`` as a tiktoken file, in rank order, replacing the file only once the
    whole file is written (:func:`tensortext.formats.atomic_write`).

    Raises:
        TypeError: for ranks that are not a dict of ``bytes`` to ``int``.
        ValueError: for a URL (nothing is uploaded).
    """
    path = _local_path(tiktoken_bpe_file, "tiktoken_bpe_file")
    if not isinstance(bpe_ranks, Mapping):
        raise TypeError(f"bpe_ranks must be a dict of bytes to int, got {type(bpe_ranks).__name__}")
    for token, rank in bpe_ranks.items():
        if not isinstance(token, bytes) or isinstance(rank, bool) or not isinstance(rank, int):
            raise TypeError(
                f"bpe_ranks must map bytes to int, got {type(token).__name__} -> "
                f"{type(rank).__name__} ({token!r:.40})"
            )
    data = tiktoken_file_bytes(bpe_ranks)
    with atomic_write(path, "wb") as stream:
        stream.write(data)


def data_gym_to_mergeable_bpe_ranks(
    vocab_bpe_file: str,
    encoder_json_file: str,
    vocab_bpe_hash: str | None = None,
    encoder_json_hash: str | None = None,
    clobber_one_byte_tokens: bool = False,
) -> dict[bytes, int]:
    """tiktoken ranks from GPT-2's two files: ``vocab.bpe`` (the merges) and ``encoder.json``.

    The 256 single bytes take ranks 0-255 in the order of GPT-2's byte-to-character map
    (:func:`~tensortext.bpe.hf_json.bytes_to_unicode`), and each merge the next rank;
    ``encoder.json`` must give every token that same ID (its ``<|endoftext|>`` and
    ``<|startoftext|>`` aside), which is what makes rank order the merge order.

    Args:
        vocab_bpe_file, encoder_json_file: local paths.
        vocab_bpe_hash, encoder_json_hash: sha256 (hex) of each file, checked when given.
        clobber_one_byte_tokens: take the single bytes' ranks from ``encoder.json``.

    Raises:
        ValueError: for a URL, a hash that differs, a malformed merge, a character outside GPT-2's
            map, or an ``encoder.json`` that disagrees with the merges (naming a token).
    """
    byte_of = {char: byte for byte, char in bytes_to_unicode().items()}

    def to_bytes(text: str, where: str) -> bytes:
        if not set(text) <= byte_of.keys():
            raise ValueError(f"{where}: {text!r:.60} is not written in GPT-2's byte characters")
        return bytes(byte_of[char] for char in text)

    ranks = {bytes([byte]): rank for rank, byte in enumerate(bytes_to_unicode())}
    merges = read_file_cached(vocab_bpe_file, vocab_bpe_hash).decode("utf-8").split("\n")
    rank = len(ranks)  # each merge takes a rank, even one that repeats an earlier token
    for number, line in enumerate(merges, 1):
        if not line.strip() or (number == 1 and line.startswith("#version")):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise ValueError(f"{vocab_bpe_file}:{number}: expected two tokens, got {line!r:.60}")
        where = f"{vocab_bpe_file}:{number}"
        ranks[to_bytes(parts[0], where) + to_bytes(parts[1], where)] = rank
        rank += 1
    encoder = json.loads(read_file_cached(encoder_json_file, encoder_json_hash))
    ids = {to_bytes(text, encoder_json_file): token_id for text, token_id in encoder.items()}
    for special in (b"<|endoftext|>", b"<|startoftext|>"):  # not mergeable tokens
        ids.pop(special, None)
    if clobber_one_byte_tokens:
        ranks |= {token: token_id for token, token_id in ids.items() if len(token) == 1}
    if ranks != ids:
        token = next(t for t in [*ranks, *ids] if ranks.get(t) != ids.get(t))
        raise ValueError(
            f"{encoder_json_file} gives {token!r:.60} the ID {ids.get(token)}, but its rank in "
            f"{vocab_bpe_file} is {ranks.get(token)}; the two files are not one vocabulary"
        )
    return ranks
