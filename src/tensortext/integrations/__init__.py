"""Adapters for other libraries: :mod:`~tensortext.integrations.trl` (TRL reward functions) and
:mod:`~tensortext.integrations.ray` (Ray Data's ``map_batches``, the ``[ray]`` extra). The core
package imports neither."""

import tensortext._torch_required  # noqa: F401 (without torch: an ImportError naming the extra)
