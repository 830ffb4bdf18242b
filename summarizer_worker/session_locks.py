"""One request at a time per session. No I/O.

Two requests of one session (a duplicate, a retry, the next window) must not
be handled side by side: each checks the log for a summary that answers it,
and neither would see the other's before it commits. A session's request
holds its lock from that check until its summary is committed; other
sessions go on meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from schemas.keys import SessionKey


class SessionLocks:
    """A lock per session, kept only while a request of that session holds or awaits it."""

    def __init__(self) -> None:
        self._locks: dict[SessionKey, tuple[asyncio.Lock, int]] = {}

    @asynccontextmanager
    async def hold(self, session_key: SessionKey) -> AsyncIterator[None]:
        """Hold the lock of `session_key` for the block."""
        lock, users = self._locks.get(session_key, (asyncio.Lock(), 0))
        self._locks[session_key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session_key]
            if users == 1:
                del self._locks[session_key]
            else:
                self._locks[session_key] = (lock, users - 1)

    def __len__(self) -> int:
        """Sessions with a request holding or awaiting their lock."""
        return len(self._locks)
