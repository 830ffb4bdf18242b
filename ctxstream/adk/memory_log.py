"""The memory records the ADK memory service appends: marks and written memories, in order.

Memory records (:mod:`schemas.memory_mark`) are pipeline bookkeeping, appended by an
:class:`~ctxstream.appends.writer.EventWriter` of the service's own (``acks=all``,
idempotent, keyed by the session) as ``Client.mark_memory`` appends one. Several records
of one session go out in one call, in order, so a ``delete`` written right after an
``add`` acts on what the ``add`` named. The producer starts with the first append.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence

from ctxstream.appends.writer import EventWriter
from ctxstream.reads import ContextReads
from schemas.kafka.settings import KafkaSettings
from schemas.memory_mark import MemoryMark, memory_mark_event


class MemoryLog:
    """Appends memory records to a deployment's `events` topic."""

    def __init__(self, settings: KafkaSettings) -> None:
        """Records for the deployment `settings` name; nothing connects yet."""
        self._reads = ContextReads(settings)
        producer_id = f"ctxstream-adk-memory-{uuid.uuid4().hex[:12]}"
        self._writer = EventWriter(settings, self._reads, producer_id)
        self._started = False
        self._lock = asyncio.Lock()

    async def append(
        self, session_key: str, marks: Sequence[MemoryMark], *, timestamp: float | None = None
    ) -> list[int]:
        """Append one memory record per mark of `marks` to the session, in order; their offsets.

        `timestamp` stamps the records (None: now). The read model counts a session's last
        record as its last activity, so a service passes the session's own last time.

        Raises:
            InvalidEventError: A record or the key is refused (nothing of it was sent).
            BrokerUnavailableError: No broker accepted the producer's connection.
        """
        if not marks:
            return []
        async with self._lock:
            if not self._started:
                await self._writer.start()
                self._started = True
        now = time.time() if timestamp is None else timestamp
        events = [
            memory_mark_event(mark, event_id=uuid.uuid4().hex, timestamp=now) for mark in marks
        ]
        results = await self._writer.write(session_key, events, pipeline=True)
        return [int(result.offset) for result in results]

    async def close(self) -> None:
        """Send what is buffered and close the producer."""
        try:
            if self._started:
                await self._writer.stop()
        finally:
            self._started = False
            await self._reads.close()
