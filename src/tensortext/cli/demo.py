"""``tensortext demo``: tokenize, translate and score the bundled data, beside the references."""

from __future__ import annotations

import argparse
from typing import TextIO

from tensortext.cli.common import add_device_argument, device_from

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_device_argument(parser)


def run(args: argparse.Namespace, stdout: TextIO, stdin: TextIO | None = None) -> None:
    from tensortext.demo import demo_bleu, demo_lmbr, demo_tokenize, demo_translation

    device = device_from(args)
    demo_bleu(device=device, out=stdout)
    demo_tokenize(device=device, out=stdout)
    demo_translation(device=device, out=stdout)
    demo_lmbr(device=device, out=stdout)
