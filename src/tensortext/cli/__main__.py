"""``python -m tensortext.cli``: the ``tensortext`` command."""

import sys

from tensortext.cli import main

sys.exit(main())
