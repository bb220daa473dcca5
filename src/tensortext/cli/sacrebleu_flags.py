"""sacrebleu's command-line options that ``tensortext bleu`` does not have, each refused by name
with what to use instead, and the few it accepts and ignores (they change no score).

A refused option is parsed (so that ``-t wmt14`` is not read as something else) and remembered;
:func:`check_refused` raises the one-line error before any file is read.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from tensortext.cli.common import CliError

__all__ = ["add_sacrebleu_flags", "check_refused"]

_TEST_SETS = (
    "sacrebleu's test sets are not bundled: write the references to a file with sacrebleu "
    "(sacrebleu -t wmt14 -l en-de --echo ref > ref.txt) and pass it as REF"
)
_PAIRED = "paired significance tests are not implemented: use sacrebleu --paired-bs/--paired-ar"
_CONFIDENCE = "bootstrap confidence intervals are not implemented: use sacrebleu --confidence"
_TER = "TER is not implemented: use sacrebleu -m ter"

# (option strings, nargs, what to do instead)
_REFUSED: tuple[tuple[tuple[str, ...], int | str, str], ...] = (
    (("-t", "--test-set"), "?", _TEST_SETS),
    (("-l", "--language-pair"), "?", _TEST_SETS),
    (("-ol", "--origlang"), "?", _TEST_SETS),
    (("--subset",), "?", _TEST_SETS),
    (("--download",), "?", _TEST_SETS),
    (("--echo",), "*", _TEST_SETS),
    (("--list",), 0, _TEST_SETS),
    (("--citation", "--cite"), 0, _TEST_SETS),
    (("-d", "--detail"), 0, "per-origlang details need sacrebleu's test sets: use sacrebleu -d"),
    (
        ("-nr", "--num-refs"),
        "?",
        "tab-separated references are not read: write one file per reference "
        "(cut -f1 refs.tsv > ref1.txt; cut -f2 refs.tsv > ref2.txt) and pass each as REF",
    ),
    (("-ci", "--confidence"), 0, _CONFIDENCE),
    (("-cin", "--confidence-n"), "?", _CONFIDENCE),
    (("-par", "--paired-ar"), 0, _PAIRED),
    (("-pbs", "--paired-bs"), 0, _PAIRED),
    (("-parn", "--paired-ar-n"), "?", _PAIRED),
    (("-pbsn", "--paired-bs-n"), "?", _PAIRED),
    (("-j", "--paired-jobs"), "?", _PAIRED),
    (("--ter-case-sensitive",), 0, _TER),
    (("--ter-asian-support",), 0, _TER),
    (("--ter-no-punct",), 0, _TER),
    (("--ter-normalized",), 0, _TER),
    (("-V",), 0, "the version is tensortext --version"),
)

# Accepted and ignored: they silence sacrebleu's messages or colours, which tensortext lacks.
_IGNORED = (("-q", "--quiet"), ("-nc", "--no-color"), ("--force",))


class _Refused(argparse.Action):
    """Remembers the first refused option met (``args.refused``: the option and the hint)."""

    def __init__(self, option_strings: Sequence[str], dest: str, hint: str, **kwargs: Any):
        super().__init__(option_strings, dest, **kwargs)
        self.hint = hint

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, "refused", None) is None:
            shown = "/".join(self.option_strings)
            namespace.refused = f"{shown} is sacrebleu's; {self.hint}"


def add_sacrebleu_flags(parser: argparse.ArgumentParser) -> None:
    """sacrebleu's options this command lacks (refused) or ignores; hidden from ``--help``."""
    parser.set_defaults(refused=None)
    for options, nargs, hint in _REFUSED:
        parser.add_argument(
            *options,
            action=_Refused,
            hint=hint,
            nargs=nargs,
            dest="refused",
            default=None,
            help=argparse.SUPPRESS,
        )
    for options in _IGNORED:
        parser.add_argument(*options, action="store_true", help=argparse.SUPPRESS)


def check_refused(args: argparse.Namespace) -> None:
    """Raises the refusal of the first of sacrebleu's options given that this command lacks."""
    if getattr(args, "refused", None) is not None:
        raise CliError(args.refused)
    if "ter" in args.metrics:
        raise CliError(f"-m ter: {_TER}")
