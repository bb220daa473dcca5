"""``tiktoken.core`` under tensortext: :class:`Encoding` and :func:`raise_disallowed_special_token`.

``import tensortext as tiktoken`` then ``tiktoken.core.Encoding(name, pat_str=...,
mergeable_ranks=..., special_tokens=...)`` builds an encoding from tiktoken's constructor
arguments (:class:`tensortext.bpe.Encoding`, the same class ``tensortext.Encoding`` names).
"""

from __future__ import annotations

from typing import NoReturn

from tensortext.bpe.core import Encoding

__all__ = ["Encoding", "raise_disallowed_special_token"]


def raise_disallowed_special_token(token: str) -> NoReturn:
    """Raise the ``ValueError`` that ``encode`` raises for text holding the special token
    ``token`` that was not allowed, naming the keywords that allow it or encode it as text.

    Raises:
        ValueError: always (as tiktoken's function of this name).

    Example:
        >>> raise_disallowed_special_token("<|endoftext|>")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ValueError: text contains the special token '<|endoftext|>', which is disallowed. ...
    """
    # Word for word the message of tensortext.bpe.text.check_disallowed (a test holds them equal).
    raise ValueError(
        f"text contains the special token {token!r}, which is disallowed. "
        f"To encode it as the special token, pass allowed_special={{{token!r}}} "
        "(or allowed_special='all'); to encode it as ordinary text, pass "
        f"disallowed_special=(enc.special_tokens_set - {{{token!r}}}), or "
        "disallowed_special=() to turn the check off for every special token."
    )
