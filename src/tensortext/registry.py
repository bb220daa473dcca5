"""``tiktoken.registry`` under tensortext: :func:`get_encoding`, :func:`list_encoding_names`,
and the two tables of tiktoken's module with tiktoken's types.

* :data:`ENCODINGS` (``dict[str, Encoding]``): the encodings loaded so far, by name; the dict
  :func:`get_encoding` fills, as in tiktoken.
* :data:`ENCODING_CONSTRUCTORS` (``dict[str, Callable[[], dict[str, Any]]]``): for every name
  :func:`list_encoding_names` gives, a function returning the keyword arguments of
  :class:`~tensortext.core.Encoding` (``name``, ``pat_str``, ``mergeable_ranks``,
  ``special_tokens``, and ``explicit_n_vocab`` where tiktoken's constructor passes it): tiktoken's
  constructors' values, read offline from the shipped, sha256-checked files. Unlike tiktoken's,
  it is filled on import, never ``None`` (tiktoken's is ``None`` until its plugins are read);
  tensortext reads no ``tiktoken_ext`` plugins.

(:data:`tensortext.bpe.registry.ENCODINGS` is another table: what defines each encoding.)

Example:
    >>> from tensortext import registry
    >>> enc = registry.get_encoding("r50k_base")
    >>> registry.ENCODINGS["r50k_base"] is enc
    True
    >>> sorted(registry.ENCODING_CONSTRUCTORS["r50k_base"]())
    ['explicit_n_vocab', 'mergeable_ranks', 'name', 'pat_str', 'special_tokens']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensortext.bpe import registry as _bpe_registry
from tensortext.bpe.core import Encoding
from tensortext.bpe.registry import get_encoding, list_encoding_names

__all__ = ["ENCODINGS", "ENCODING_CONSTRUCTORS", "get_encoding", "list_encoding_names"]

ENCODINGS: dict[str, Encoding] = _bpe_registry.LOADED


def _constructor(name: str) -> Callable[[], dict[str, Any]]:
    """The constructor of the registered encoding ``name``: its arguments, ranks read anew on
    each call (as tiktoken's constructors do)."""

    def construct() -> dict[str, Any]:
        spec = _bpe_registry.ENCODINGS[name]
        arguments: dict[str, Any] = {
            "name": name,
            "pat_str": spec.pat_str,
            "mergeable_ranks": _bpe_registry.mergeable_ranks(spec.ranks),
            "special_tokens": dict(spec.special_tokens),
        }
        if spec.explicit_n_vocab is not None:
            arguments["explicit_n_vocab"] = spec.explicit_n_vocab
        return arguments

    construct.__name__ = construct.__qualname__ = name
    return construct


ENCODING_CONSTRUCTORS: dict[str, Callable[[], dict[str, Any]]] = {
    name: _constructor(name) for name in list_encoding_names()
}
