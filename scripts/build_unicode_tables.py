"""Build ``src/tensortext/data/unicode_classes.bin``: the codepoint classes the pre-tokenizers use.

The classes come from the ``regex`` module, one flag byte per codepoint. Its Unicode version must
be tiktoken's: tiktoken 0.14's Rust regex knows Unicode 16.0, which ``regex`` 2025.7.34 up to
2025.9.18 have (2025.10.22 moved to Unicode 17). So build with, e.g.::

    pip install --target /tmp/regex16 "regex==2025.9.18"
    PYTHONPATH=/tmp/regex16 python scripts/build_unicode_tables.py

``tests/bpe/test_encoding.py`` checks every codepoint assigned after Python's Unicode against
tiktoken, so a table of the wrong version fails there. The file holds runs:

    magic b"TTUC", u32 run count, the ``regex`` version as a 32-byte
    NUL-padded ASCII field, then ``run count`` pairs of little-endian u32 (first codepoint, flags).

Run with ``python scripts/build_unicode_tables.py`` after upgrading ``regex``; the file is tiny.
"""

from __future__ import annotations

import importlib.metadata
import struct
import sys
from pathlib import Path

import regex

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from tensortext.bpe.unicode import FLAG_PATTERNS, TABLE_PATH

# (codepoint, is a letter) in Unicode 16.0: U+1C89 is new in 16.0, U+A7CE only in 17.0.
UNICODE_16_PROBES = ((0x1C89, True), (0xA7CE, False))


def main() -> None:
    for codepoint, letter in UNICODE_16_PROBES:
        if bool(regex.match(r"\p{L}", chr(codepoint))) != letter:
            raise SystemExit(
                f"regex {regex.__version__} is not at Unicode 16.0 (U+{codepoint:04X}); "
                "see this script's docstring for the version to build with"
            )
    flags = bytearray(0x110000)
    for bit, pattern in enumerate(FLAG_PATTERNS):
        matcher = regex.compile(pattern)
        for codepoint in range(0x110000):
            if matcher.match(chr(codepoint)):
                flags[codepoint] |= 1 << bit
    runs = [(0, flags[0])]
    for codepoint in range(1, 0x110000):
        if flags[codepoint] != flags[codepoint - 1]:
            runs.append((codepoint, flags[codepoint]))
    label = f"regex {importlib.metadata.version('regex')} ({regex.__version__})".encode("ascii")
    header = b"TTUC" + struct.pack("<I", len(runs)) + label.ljust(32, b"\0")[:32]
    body = b"".join(struct.pack("<II", start, value) for start, value in runs)
    TABLE_PATH.write_bytes(header + body)
    print(f"{TABLE_PATH}: {len(runs)} runs, {label.decode()}")


if __name__ == "__main__":
    main()
