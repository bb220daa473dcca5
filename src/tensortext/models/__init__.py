"""Models that implement :class:`~tensortext.decode.Decoder`.

* :mod:`tensortext.models.bundled`: the small translator shipped with the package.

``transformers`` models are wrapped by :class:`tensortext.decode.hf.HFDecoder`.
"""

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)
