"""``python -m ctxstream``: the ``ctxstream`` command."""

from __future__ import annotations

import sys

from ctxstream.cli.main import main

sys.exit(main())
