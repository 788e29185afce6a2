"""``python -m kalah_core.cli``: the ``kalah`` command (as ``python -m kalah_core``)."""

import sys

from . import main

sys.exit(main())
