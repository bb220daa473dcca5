"""The optional C extension (everything else is in pyproject.toml).

``tensortext.bpe._native`` (``csrc/``) is the host encoder's split and merges in C. It is optional: where
no C compiler is found the build goes on without it, and ``tensortext.bpe.native`` falls back to
the pure-Python encoder (the same IDs, slower).
"""

import glob
import os

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "tensortext.bpe._native",
            ["csrc/native.c"],
            depends=sorted(glob.glob("csrc/*.h")),
            extra_compile_args=[] if os.name == "nt" else ["-O3"],
            optional=True,
        )
    ]
)
