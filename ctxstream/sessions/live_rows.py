"""A session's live view read from the SQL read model: a few index ranges, one snapshot. Async.

:func:`live_rows` reads the session's ``session_index`` row (``live_from``, ``live_extra``,
kept by the sink: ``streams/sink/README.md``, "The live view") with the sink's position on its
partition, then its held rows from ``live_from`` on and at the extra offsets, both by
``event_rows_session_offset``. ADK's readers answer the same on these events as on all the
session's (projections/live_view/README.md). Both statements run in one repeatable-read
snapshot: the caller's transaction when one is open (so other reads can share it), else one
of its own.

Example::

    found = await live_rows(conn, "ctxstream", "acme/support/u1/s1")
    events = [Event.model_validate(event) for event in found.events] if found else None
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

import orjson
from psycopg import sql
from psycopg.pq import TransactionStatus

from projections.live_view.kept_view import HELD
from streams.sink.database import Connection

_HELD: Final = sorted(HELD)


@dataclass(frozen=True, slots=True)
class LiveRows:
    """A session's live view as one snapshot of the read model holds it.

    Attributes:
        partition: The session's partition of ``events``.
        next_offset: The sink's position on it in the snapshot: every record of the
            partition below it is in the read model, none at or above.
        last_offset: The session's highest stored offset.
        offsets: The offsets of the events, rising.
        events: The live view's events, the event JSON as appended (ADK's camelCase; a
            lossy row's from the record's exact bytes), in offset order.
        selected: False when the sink has not selected the view yet (a session with no
            batch since migration 10): `events` are then every held event.
    """

    partition: int
    next_offset: int
    last_offset: int
    offsets: tuple[int, ...]
    events: tuple[Mapping[str, Any], ...]
    selected: bool


async def live_rows(conn: Connection, schema: str, session_key: str) -> LiveRows | None:
    """The live view of `session_key` in `schema`; None when the session is absent or deleted."""
    async with _snapshot(conn):
        cursor = await conn.execute(_session(schema), (session_key,))
        row = await cursor.fetchone()
        if row is None or row[1]:
            return None
        partition, _, live_from, extra, last_offset, next_offset = row
        found = await conn.execute(
            _events(schema),
            {
                "key": session_key,
                "from": 0 if live_from is None else live_from,
                "extra": list(extra or ()),
                "held": _HELD,
            },
        )
        rows = await found.fetchall()
    return LiveRows(
        partition=int(partition),
        next_offset=int(next_offset or 0),
        last_offset=int(last_offset),
        offsets=tuple(int(offset) for offset, _, _ in rows),
        events=tuple(_event(event, raw) for _, event, raw in rows),
        selected=live_from is not None,
    )


@asynccontextmanager
async def _snapshot(conn: Connection) -> AsyncIterator[None]:
    """The caller's open transaction, else a read-only repeatable-read one of its own."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        yield
        return
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _event(event: Mapping[str, Any], raw: bytes | None) -> Mapping[str, Any]:
    if raw is not None:
        exact: Mapping[str, Any] = orjson.loads(raw)["event"]
        return exact
    return event


def _session(schema: str) -> sql.Composed:
    """The session's row and its partition's sink position (parameter: the key)."""
    return sql.SQL(
        "SELECT s.partition, s.deleted, s.live_from, s.live_extra, s.last_offset,"
        " (SELECT max(c.next_offset) FROM {offsets} AS c WHERE c.partition = s.partition)"
        " FROM {index} AS s WHERE s.session_key = %s"
    ).format(
        index=sql.Identifier(schema, "session_index"),
        offsets=sql.Identifier(schema, "consistent_as_of"),
    )


def _events(schema: str) -> sql.Composed:
    """The held rows from ``live_from`` on and at the extra offsets below it, by index."""
    return sql.SQL(
        'SELECT "offset", event, CASE WHEN lossy THEN raw END FROM {rows}'
        ' WHERE session_key = %(key)s AND "offset" >= %(from)s AND status = ANY(%(held)s)'
        ' UNION ALL SELECT "offset", event, CASE WHEN lossy THEN raw END FROM {rows}'
        ' WHERE session_key = %(key)s AND "offset" = ANY(%(extra)s) AND "offset" < %(from)s'
        " AND status = ANY(%(held)s)"
        " ORDER BY 1"
    ).format(rows=sql.Identifier(schema, "event_rows"))
