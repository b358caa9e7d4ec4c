"""``python -m sidecar``: the ``credence`` command, for a checkout whose scripts are not on PATH."""

import sys

from .cli import main

sys.exit(main())
