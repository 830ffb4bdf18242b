"""What the ADK memory service reads of the SQL read model besides searches.

By index (but the user's ``delete`` records: a scan of ``memory_marks``) on a target
schema the sink writes: whether the sink passed a record
(``event_rows`` by session and offset), a session's last activity, which event ids a
session's rows hold, which of a session's memories exist, which memory ids a user's
``delete`` records named (the ids a later add never brings back, as ADK's in-memory
service blocks them), and which sessions hold a memory id. Statements composed with
identifiers, values as parameters.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from typing import Final, LiteralString

from psycopg import sql

from ctxstream.errors import ReadTimeoutError
from ctxstream.sessions.connections import ConnectionPool

#: The first and the longest pause between looks at the sink's progress.
_POLL_S: Final = (0.02, 0.25)


class MemorySql:
    """The reads of one target schema through `pool`."""

    def __init__(self, pool: ConnectionPool, schema: str) -> None:
        """Read `schema` (a target schema of the sink) through `pool`."""
        self._pool = pool
        self._schema = schema

    async def wait_stored(self, session_key: str, offset: int, timeout_s: float) -> None:
        """Wait until the sink stored the session's record at `offset` (and its memories).

        Raises:
            ReadTimeoutError: It had not within `timeout_s` (the sink is behind or stopped).
        """
        statement = sql.SQL('SELECT 1 FROM {} WHERE session_key = %s AND "offset" = %s').format(
            sql.Identifier(self._schema, "event_rows")
        )
        deadline = time.monotonic() + timeout_s
        pause = _POLL_S[0]
        while True:
            async with self._pool.connection() as conn:
                found = await (await conn.execute(statement, (session_key, offset))).fetchone()
            if found is not None:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise ReadTimeoutError(
                    session_key=session_key,
                    reason=f"the sink had not stored its memory record at offset {offset} "
                    f"within {timeout_s:g} s (it is behind, or not running)",
                )
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _POLL_S[1])

    async def last_activity(self, session_key: str) -> float | None:
        """The session's last activity as the read model holds it; None for none."""
        statement = sql.SQL("SELECT last_activity FROM {} WHERE session_key = %s").format(
            sql.Identifier(self._schema, "session_index")
        )
        async with self._pool.connection() as conn:
            found = await (await conn.execute(statement, (session_key,))).fetchone()
        return None if found is None else float(found[0])

    async def held_event_ids(self, session_key: str, ids: Collection[str]) -> set[str]:
        """The ids among `ids` of events the session's rows hold (any status)."""
        return await self._ids(
            "SELECT DISTINCT event_id FROM {} WHERE session_key = %s AND event_id = ANY(%s)",
            "event_rows",
            (session_key, sorted(ids)),
        )

    async def memory_ids(self, session_key: str, ids: Collection[str]) -> set[str]:
        """The ids among `ids` the session has memories of now."""
        return await self._ids(
            "SELECT memory_id FROM {} WHERE session_key = %s AND memory_id = ANY(%s)",
            "memories",
            (session_key, sorted(ids)),
        )

    async def deleted_ids(self, user_prefix: str) -> set[str]:
        """The memory ids the ``delete`` records of the sessions under `user_prefix` named.

        `user_prefix` is ``tenant/app/user/``; a ``delete`` naming no ids (all of a
        session's) blocks nothing by id.
        """
        return await self._ids(
            "SELECT DISTINCT unnest(ids) FROM {} WHERE action = 'delete' AND ids IS NOT NULL"
            " AND starts_with(session_key, %s)",
            "memory_marks",
            (user_prefix,),
        )

    async def sessions_holding(self, tenant: str, app: str, user: str, memory_id: str) -> set[str]:
        """The session keys of (`tenant`, `app`, `user`) that hold a memory `memory_id`."""
        return await self._ids(
            "SELECT DISTINCT session_key FROM {} WHERE tenant = %s AND app = %s"
            " AND user_id = %s AND memory_id = %s",
            "memories",
            (tenant, app, user, memory_id),
        )

    async def _ids(
        self, statement: LiteralString, table: str, parameters: tuple[object, ...]
    ) -> set[str]:
        query = sql.SQL(statement).format(sql.Identifier(self._schema, table))
        async with self._pool.connection() as conn:
            rows = await (await conn.execute(query, parameters)).fetchall()
        return {str(row[0]) for row in rows}
