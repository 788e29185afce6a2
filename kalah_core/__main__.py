"""``python -m kalah_core``: the ``kalah`` command."""

import sys

from .cli import main

sys.exit(main())
