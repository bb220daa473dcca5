"""``python -m tensortext``: the ``tensortext`` command (:func:`tensortext.cli.main`), for an
environment whose scripts folder is not on ``PATH``. Imports no torch before a subcommand needs
it."""

import sys

from tensortext.cli import main

if __name__ == "__main__":
    sys.exit(main())
