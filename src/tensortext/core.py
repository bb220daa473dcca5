"""``tiktoken.core`` under tensortext: :class:`Encoding` and :func:`raise_disallowed_special_token`.

``import tensortext as tiktoken`` then ``tiktoken.core.Encoding(name, pat_str=...,
mergeable_ranks=..., special_tokens=...)`` builds an encoding from tiktoken's constructor
arguments (:class:`tensortext.bpe.Encoding`, the same class ``tensortext.Encoding`` names).
"""

from __future__ import annotations

from tensortext.bpe.core import Encoding
from tensortext.bpe.text import raise_disallowed_special_token

__all__ = ["Encoding", "raise_disallowed_special_token"]
