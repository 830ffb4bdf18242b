"""When a projector worker counts as stalled or failed: the rules both engines apply."""

from __future__ import annotations

from typing import Final

#: The exit status of a worker that stopped on a failure of its own, so its supervisor
#: restarts it (a signal's stop exits with 0).
FAILED: Final = 1


def stall(waiting: int, batch_age_s: float, timeout_s: float) -> str | None:
    """Why the worker is not live (records wait and no batch came for too long), or None."""
    if waiting > 0 and batch_age_s > timeout_s:
        return f"{waiting} records wait and no batch was folded for {batch_age_s:.0f} s"
    return None
