"""How a command says it failed: one line on stderr, and the exit status it ends with."""

from __future__ import annotations

import sys

from schemas.log_text import shown


def fail(command: str, message: str, *, status: int = 1) -> int:
    """Say what went wrong in one line on stderr (``ctxstream COMMAND: ...``); `status`.

    Example: ``fail("tail", "no such topic")`` writes ``ctxstream tail: no such topic``
    and returns 1.
    """
    sys.stderr.write(f"ctxstream {command}: {shown(message, 1_000)}\n")
    return status
