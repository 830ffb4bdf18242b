"""The bounded wait for a compaction the pipeline has in flight for a session.

Under pipeline ownership the projector finds the end of an invocation at the next
invocation's first event, and requests the summary ADK's runner would have
appended before it. :func:`settled` waits (up to a bound) until the projection
at a session's offset has no request in flight, so a read, or the held session
of the turn that just began, can carry that summary as ADK's own compaction
would have put it there. A wait that runs out is not an error: the caller goes on.
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from ctxstream.client import Client
from schemas.projection_snapshot import ProjectionSnapshot

#: How often the projection is asked again while a compaction is in flight.
POLL_S: Final = 0.1


async def settled(
    client: Client, key: str, min_offset: int | None, wait_s: float
) -> ProjectionSnapshot:
    """The projection of `key` once no compaction is in flight (or `wait_s` ran out).

    Returns:
        The latest snapshot (at `min_offset` or later).

    Raises:
        ctxstream.errors.SessionNotFoundError: The session has no records (or is deleted).
    """
    snapshot = await client.projection(key, min_offset=min_offset)
    deadline = time.monotonic() + wait_s
    while snapshot.in_flight_request_id is not None and time.monotonic() < deadline:
        await asyncio.sleep(POLL_S)
        snapshot = await client.projection(key, min_offset=snapshot.last_offset)
    return snapshot
