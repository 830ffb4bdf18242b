"""``python -m streams``: the ``ctxstream`` command."""

from __future__ import annotations

import sys

from streams.cli import main

sys.exit(main())
