"""A few connections to the read model's database, shared by concurrent reads. psycopg 3, async.

At most ``size`` connections, opened when first needed and kept while they stay usable: a
read waits for a free one, and a connection a read left broken or inside a transaction (a
cancelled query) is closed, not reused. Each is autocommit; the catalog's transactions are
explicit, read-only, repeatable-read (one snapshot per page). A database that cannot be
reached is a :class:`~ctxstream.errors.ReadModelUnavailableError` naming it, password masked.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Final

from psycopg import IsolationLevel
from psycopg.pq import TransactionStatus

from ctxstream.errors import ReadModelUnavailableError
from schemas.masked_dsn import masked_dsn
from streams.sink.database import Connection, connect
from streams.sink.errors import DatabaseError

#: How long opening a connection may take before the read is refused.
CONNECT_TIMEOUT_S: Final = 10


class ConnectionPool:
    """Up to `size` connections to `dsn`, lent one read at a time."""

    def __init__(self, dsn: str, *, size: int = 1) -> None:
        """Lend up to `size` connections to `dsn` (none is opened yet)."""
        if size < 1:
            raise ValueError("a pool needs at least one connection")
        self._dsn = dsn
        self._slots = asyncio.Semaphore(size)
        self._idle: list[Connection] = []

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A connection of the pool's while the block runs (waits for a free one).

        Raises:
            ReadModelUnavailableError: A new connection could not be opened.
        """
        async with self._slots:
            conn = self._idle.pop() if self._idle else await self._open()
            try:
                yield conn
            finally:
                if conn.closed or conn.info.transaction_status != TransactionStatus.IDLE:
                    await conn.close()
                else:
                    self._idle.append(conn)

    async def close(self) -> None:
        """Close the idle connections (the lent ones are closed as they come back)."""
        idle, self._idle = self._idle, []
        for conn in idle:
            await conn.close()

    async def _open(self) -> Connection:
        try:
            conn = await asyncio.wait_for(connect(self._dsn), CONNECT_TIMEOUT_S)
        except DatabaseError as exc:
            raise ReadModelUnavailableError(f"the read model: {exc}") from None
        except TimeoutError:
            raise ReadModelUnavailableError(
                f"the read model: {masked_dsn(self._dsn)} did not answer within "
                f"{CONNECT_TIMEOUT_S} s"
            ) from None
        await conn.set_read_only(True)
        await conn.set_isolation_level(IsolationLevel.REPEATABLE_READ)
        return conn
