"""``python -m labtools`` is the ``labtools`` command."""

import sys

from labtools.cli import main

sys.exit(main())
