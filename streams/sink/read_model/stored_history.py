"""A session's stored rows read back as records: its classification state rebuilt, rows re-read.

A row's envelope is its columns (``expected_offset`` on a conditional record) and its
``event`` (``jsonb``), validated like a record value
(:func:`schemas.codec.decode_envelope`); a lossy row's is decoded from ``raw``, its exact
bytes, or a retry of it would not be recognised as one. Rows are read in the caller's
transaction, after the fence locked their partition, so no other sink is writing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import orjson
from psycopg import sql

from projections.history.incremental import HistoryState, advance
from schemas.codec import decode_envelope
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from streams.sink.database import Connection

_COLUMNS: Final = sql.SQL(
    '"offset", tenant, session_key, producer_id, idempotency_key, event::text, raw, expected_offset'
)


def row_record(row: Sequence[object]) -> LoggedEvent:
    """The record of one stored row (the columns of ``_COLUMNS``, in order)."""
    offset, tenant, session_key, producer_id, idempotency_key, event, raw, expected = row
    if isinstance(raw, bytes | bytearray | memoryview):
        return LoggedEvent(Offset(int(str(offset))), decode_envelope(bytes(raw)))
    fields = {
        "schema_version": 2,
        "tenant": tenant,
        "session_key": session_key,
        "producer_id": producer_id,
        "idempotency_key": idempotency_key,
        "event": orjson.Fragment(str(event)),
    }
    if expected is not None:  # a conditional record
        fields["expected_offset"] = expected
    value = orjson.dumps(fields)
    return LoggedEvent(Offset(int(str(offset))), decode_envelope(value))


async def stored_records(
    conn: Connection,
    schema: str,
    session_keys: Sequence[str],
    *,
    statuses: Sequence[str] | None = None,
) -> dict[str, list[LoggedEvent]]:
    """Every stored record of each of `session_keys` that has rows, in offset order.

    With `statuses`, only the rows of those statuses.
    """
    only = sql.SQL(" AND status = ANY(%s)") if statuses is not None else sql.SQL("")
    cursor = await conn.execute(
        sql.SQL(
            'SELECT {} FROM {} WHERE session_key = ANY(%s){} ORDER BY session_key, "offset"'
        ).format(_COLUMNS, sql.Identifier(schema, "event_rows"), only),
        (list(session_keys), *([list(statuses)] if statuses is not None else [])),
    )
    found: dict[str, list[LoggedEvent]] = {}
    for row in await cursor.fetchall():
        found.setdefault(str(row[2]), []).append(row_record(row))
    return found


async def records_at(
    conn: Connection, schema: str, partition: int, offsets: Sequence[int]
) -> list[LoggedEvent]:
    """The stored records at `offsets` of `partition`, in offset order."""
    cursor = await conn.execute(
        sql.SQL('SELECT {} FROM {} WHERE partition = %s AND "offset" = ANY(%s) ORDER BY 1').format(
            _COLUMNS, sql.Identifier(schema, "event_rows")
        ),
        (partition, list(offsets)),
    )
    return [row_record(row) for row in await cursor.fetchall()]


async def last_offsets(
    conn: Connection, schema: str, session_keys: Sequence[str]
) -> dict[str, int]:
    """The highest stored offset of each of `session_keys` that has rows."""
    # One backward step of the (session_key, "offset") index per key: a GROUP BY would read
    # every row of each session.
    cursor = await conn.execute(
        sql.SQL(
            'SELECT k, (SELECT max("offset") FROM {} WHERE session_key = k)'
            " FROM unnest(%s::text[]) AS k"
        ).format(sql.Identifier(schema, "event_rows")),
        (list(session_keys),),
    )
    return {str(key): int(offset) for key, offset in await cursor.fetchall() if offset is not None}


async def rebuilt_states(
    conn: Connection, schema: str, session_keys: Sequence[str]
) -> dict[str, HistoryState]:
    """The classification state after the stored rows of each of `session_keys` with rows."""
    if not session_keys:
        return {}
    states: dict[str, HistoryState] = {}
    for session_key, records in (await stored_records(conn, schema, session_keys)).items():
        state: HistoryState | None = None
        for record in records:
            state, _ = advance(state, record.offset, record.envelope)
        if state is not None:
            states[session_key] = state
    return states
