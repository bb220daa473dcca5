"""Models that implement :class:`~tensortext.decode.Decoder`.

* :mod:`tensortext.models.bundled`: the small translator shipped with the package.

``transformers`` models are wrapped by :class:`tensortext.decode.hf.HFDecoder`.
"""
