"""A tenant's sessions and a session's stored records, read from the SQL read model. Async.

:meth:`SessionCatalog.list_sessions` pages a tenant's sessions (of an app, of one of its
users) newest first by a keyset cursor (:mod:`ctxstream.sessions.cursor`);
:meth:`SessionCatalog.history` pages one session's stored records in offset order, its
current incarnation only (a deleted session is not found). Each page is read in one
read-only snapshot and says up to which offsets of `events` it is consistent; with
`min_offset` a history read first waits until the sink has passed that offset on the
session's partition. Design: ``ctxstream/sessions/README.md``.

Example::

    async with SessionCatalog.connect(dsn, schema="ctxstream") as catalog:
        page = await catalog.list_sessions("acme", app="support", limit=20)
        more = await catalog.list_sessions("acme", app="support", cursor=page.next_cursor)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

import psycopg
from psycopg import errors as pg_errors

from ctxstream.errors import (
    InvalidArgumentError,
    ReadModelUnavailableError,
    ReadTimeoutError,
    SessionNotFoundError,
)
from ctxstream.sessions import statements
from ctxstream.sessions.connections import ConnectionPool
from ctxstream.sessions.cursor import (
    ListingPosition,
    ListingScope,
    decode_cursor,
    encode_cursor,
)
from ctxstream.sessions.pages import (
    HistoryPage,
    ListedSession,
    PartitionPosition,
    SessionPage,
    StoredEvent,
)
from schemas.errors import InvalidSessionKeyError
from schemas.kafka.partitioning import session_partition
from schemas.keys import parse_session_key
from streams.sink.database import Connection

DEFAULT_LIMIT: Final = 50
MAX_LIMIT: Final = 500
#: How long a history read waits for `min_offset` by default, and at most.
DEFAULT_WAIT_S: Final = 10.0
MAX_WAIT_S: Final = 60.0
_POLL_S: Final = (0.05, 0.5)
PageItem = TypeVar(
    "PageItem", ListedSession, StoredEvent
)  # the first and the longest pause between looks at the offsets


class SessionCatalog:
    """The sessions and stored records of one target schema, over a :class:`ConnectionPool`."""

    def __init__(
        self,
        pool: ConnectionPool,
        *,
        schema: str = "ctxstream",
        events_partitions: int | None = None,
    ) -> None:
        """Read `schema` through `pool`.

        `events_partitions`: the partition count of `events`, which places a session that
        has no row yet when a history read waits for `min_offset` (None: such a read waits
        until the session has a row).
        """
        self._pool = pool
        self._schema = schema
        self._partitions = events_partitions

    @classmethod
    @asynccontextmanager
    async def connect(
        cls,
        dsn: str,
        *,
        schema: str = "ctxstream",
        connections: int = 1,
        events_partitions: int | None = None,
    ) -> AsyncIterator[SessionCatalog]:
        """A catalog of `schema` on up to `connections` connections of its own, closed on exit."""
        pool = ConnectionPool(dsn, size=connections)
        try:
            yield cls(pool, schema=schema, events_partitions=events_partitions)
        finally:
            await pool.close()

    async def list_sessions(
        self,
        tenant: str,
        *,
        app: str | None = None,
        user: str | None = None,
        limit: int = DEFAULT_LIMIT,
        cursor: str | None = None,
    ) -> SessionPage:
        """A page of `tenant`'s sessions (of `app`, of its `user`) newest first, deleted left out.

        Newest is the latest event timestamp of a session's last record; ties go to the
        greater session key. Pass ``next_cursor`` as `cursor` for the next page (None:
        the first). A session whose activity moves it past the cursor meanwhile is not
        on a later page (it is newer than the cursor now).

        Raises:
            InvalidArgumentError: `limit` out of 1..:data:`MAX_LIMIT`, `user` without
                `app`, or `cursor` not one of this listing's.
            ReadModelUnavailableError: The database or the schema's table cannot be read.
        """
        _check_limit(limit)
        scope = ListingScope(tenant, app=app, user=user)
        position = decode_cursor(cursor, scope) if cursor is not None else None
        statement, parameters = statements.listing(self._schema, scope, position, limit + 1)
        async with self.snapshot() as conn:
            rows = await (await conn.execute(statement, parameters)).fetchall()
            consistent = await self._consistency(conn)
        listed, last = _paged(ListedSession, statements.LISTED_COLUMNS, rows, limit)
        following = None
        if last is not None:
            following = encode_cursor(scope, ListingPosition(last.last_activity, last.session_key))
        return SessionPage(sessions=listed, next_cursor=following, consistent_as_of=consistent)

    async def history(
        self,
        session_key: str,
        *,
        after: int | None = None,
        limit: int = DEFAULT_LIMIT,
        min_offset: int | None = None,
        timeout_s: float = DEFAULT_WAIT_S,
    ) -> HistoryPage:
        """A page of the session's stored records after offset `after`, in offset order.

        Every record of the session's current incarnation as the sink stored it, with its
        status (a duplicate, a refusal, a rewound record are there too); a deleted
        incarnation's records are not. Pass ``next_after`` as `after` for the next page.
        With `min_offset` the read first waits, up to `timeout_s`, until the read model
        holds every record of the session's partition up to that offset.

        Raises:
            InvalidArgumentError: A bad key, `limit`, `after`, `min_offset` or `timeout_s`.
            SessionNotFoundError: The read model holds no record of the session, or it
                was deleted and nothing was appended since.
            ReadTimeoutError: The read model had not reached `min_offset` in time.
            ReadModelUnavailableError: The database or the schema's views cannot be read.
        """
        key = _checked_key(session_key)
        _check_limit(limit)
        for name, value in (("after", after), ("min_offset", min_offset)):
            if value is not None and value < 0:
                raise InvalidArgumentError(f"{name}: {value!r}, expected an offset (0 or more)")
        if not 0 < timeout_s <= MAX_WAIT_S:
            raise InvalidArgumentError(
                f"timeout_s: {timeout_s!r}, expected above 0 to {MAX_WAIT_S}"
            )
        if min_offset is not None:
            await self._wait_for(key, min_offset, timeout_s)
        async with self.snapshot() as conn:
            found = await (
                await conn.execute(statements.session_state(self._schema), (key,))
            ).fetchone()
            if found is None or found[0]:
                raise SessionNotFoundError(session_key=key, reason=_missing(found is not None))
            start = -1 if after is None else after
            cursor = await conn.execute(
                statements.history(self._schema), (key, start, statements.ENDED_STATUSES, limit + 1)
            )
            rows = await cursor.fetchall()
            consistent = await self._consistency(conn)
        events, last_event = _paged(StoredEvent, statements.STORED_COLUMNS, rows, limit)
        following_offset = last_event.offset if last_event is not None else None
        return HistoryPage(events=events, next_after=following_offset, consistent_as_of=consistent)

    async def wait_for_offset(
        self, session_key: str, min_offset: int, *, timeout_s: float = DEFAULT_WAIT_S
    ) -> None:
        """Wait, up to `timeout_s`, until the session's partition is consistent past `min_offset`.

        Raises:
            InvalidArgumentError: A bad key.
            ReadTimeoutError: The read model had not reached `min_offset` in time.
        """
        await self._wait_for(_checked_key(session_key), min_offset, timeout_s)

    async def _wait_for(self, key: str, min_offset: int, timeout_s: float) -> None:
        """Wait until the session's partition is consistent past `min_offset`."""
        deadline = time.monotonic() + timeout_s
        pause = _POLL_S[0]
        partition = session_partition(key.encode(), self._partitions) if self._partitions else None
        while True:
            async with self.snapshot() as conn:
                if partition is None:
                    row = await (
                        await conn.execute(statements.session_state(self._schema), (key,))
                    ).fetchone()
                    partition = None if row is None else int(row[1])
                reached = None
                if partition is not None:
                    found = await (
                        await conn.execute(
                            statements.partition_position(self._schema), (partition,)
                        )
                    ).fetchone()
                    reached = found[0] if found is not None else None
            if reached is not None and reached > min_offset:
                return
            left = deadline - time.monotonic()
            if left <= 0:
                where = f"partition {partition}" if partition is not None else "its partition"
                raise ReadTimeoutError(
                    session_key=key,
                    reason=f"the read model had not reached offset {min_offset} of {where} "
                    f"within {timeout_s:g} s (the sink is behind, or not running)",
                )
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, _POLL_S[1])

    async def _consistency(self, conn: Connection) -> list[PartitionPosition]:
        rows = await (await conn.execute(statements.consistency(self._schema))).fetchall()
        return [PartitionPosition(partition=p, next_offset=n) for p, n in rows]

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Connection]:
        """A connection inside one read-only snapshot; a schema without the tables refused.

        Raises:
            ReadModelUnavailableError: The schema lacks the tables, or the database failed.
        """
        async with self._pool.connection() as conn:
            try:
                async with conn.transaction():
                    yield conn
            except (
                pg_errors.UndefinedTable,
                pg_errors.UndefinedColumn,
                pg_errors.InvalidSchemaName,
            ) as exc:
                raise ReadModelUnavailableError(
                    f"the read model: schema {self._schema!r} lacks what sessions are read from "
                    f"(run 'ctxstream db migrate --schema {self._schema}'): "
                    f"{exc.diag.message_primary}"
                ) from None
            except psycopg.OperationalError as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise ReadModelUnavailableError(
                    f"the read model's database failed: {first}"
                ) from None


def _paged(
    model: type[PageItem], columns: Sequence[str], rows: Sequence[Sequence[Any]], limit: int
) -> tuple[list[PageItem], PageItem | None]:
    """The page's items from `rows` (one past `limit` read) and, when more follow, its last."""
    items = [model(**dict(zip(columns, row, strict=True))) for row in rows]
    return (items[:limit], items[limit - 1]) if len(items) > limit else (items, None)


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidArgumentError(f"limit: {limit!r}, expected 1 to {MAX_LIMIT}")


def _checked_key(session_key: str) -> str:
    try:
        return parse_session_key(session_key).key
    except InvalidSessionKeyError as exc:
        raise InvalidArgumentError(f"session_key: {exc}") from None


def _missing(deleted: bool) -> str:
    if deleted:
        return "it was deleted, and nothing was appended to it since"
    return (
        "the read model holds no record of it (none appended, or not sunk yet: pass the "
        "append's offset as min_offset)"
    )
