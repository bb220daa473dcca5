"""Imported first by each tensor subpackage (``bleu``, ``decode``, ...): without torch, the
import fails with an ``ImportError`` that names the extra to install, not a bare
``No module named 'torch'``."""

from tensortext._torch import require_torch

require_torch("this part of tensortext (metrics, beam search, LMBR, tensors)")
