"""The ``state`` view's tables a batch changes: sessions' last writes, app and user values.

``state_last_writes`` holds, per session, scope and key, the session's last write of the key
(its ``state_writes`` row at the highest offset); ``shared_state``, per ``app:`` and ``user:``
key, the last write latest by (timestamp, partition, offset) among the sessions' last writes.
The ``state`` view reads both (migration 12; ``streams/sink/README.md``, "How `state` is
kept").

:func:`state_plan` says what a classified batch makes read again (pure): a session one of
whose earlier rows left the counted statuses (a deletion, mostly) has its last writes read
again whole, O(its state-writing rows); for every other session, the rows that may have
become a last write (its new rows with a state delta, its earlier rows whose status changed
to a counted one). :func:`keep_state` runs the plan in the batch's transaction, after the
rows and their statuses are written, through the ``state_writes`` view (the one definition
of a counted write), then sets again the value of every ``app:`` and ``user:`` key whose
candidates changed, each under a transaction-level advisory lock of its key: the sinks of
other partitions set a key one after the other, each reading the other's committed writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from psycopg import sql

from projections.history.event_status import APPLIED, EventStatus
from schemas.keys import parse_session_key
from schemas.logged_event import LoggedEvent
from streams.sink.database import Connection
from streams.sink.rows import EventRow

#: A row's place: (partition, offset).
RowPlace = tuple[int, int]
#: The statuses whose rows' state deltas count in every scope (``state_writes``); a
#: ``deleted`` row's count in the app and user scopes only, by its status before deletion.
COUNTED: Final = frozenset(str(status) for status in (*APPLIED, EventStatus.CREATION))
#: The columns of ``state_last_writes``.
_COLUMNS: Final = sql.SQL(
    'session_key, scope, key, tenant, app, user_id, value, partition, "offset", event_timestamp'
)
#: The last counted write per session, scope and key among ``state_writes`` rows ``w``.
_LAST_WRITES: Final = (
    "SELECT DISTINCT ON (w.session_key, w.scope, w.key) w.session_key, w.scope, w.key,"
    " w.tenant, w.app, CASE WHEN w.scope = 'app' THEN NULL ELSE w.user_id END AS user_id,"
    ' w.value, w.partition, w."offset", w.event_timestamp FROM {source}'
    ' ORDER BY w.session_key, w.scope, w.key, w."offset" DESC'
)
#: A session's ``state_writes`` rows, by the session's key parts (each filter its index's).
_OF_SESSION: Final = (
    "{writes} AS w WHERE w.tenant = %s AND w.app = %s AND w.user_id = %s AND w.session_key = %s"
)
#: The ``state_writes`` rows of some rows (partitions, offsets): each read by its primary key
#: (``OFFSET 0`` keeps the planner from scanning every state-writing row to join them).
_AT_PLACES: Final = (
    'unnest(%s::integer[], %s::bigint[]) AS p(partition, "offset") CROSS JOIN LATERAL ('
    ' SELECT * FROM {writes} AS v WHERE v.partition = p.partition AND v."offset" = p."offset"'
    " OFFSET 0) AS w"
)
#: What the statements return of a changed last write: its shared key.
_RETURNING: Final = sql.SQL(" RETURNING scope, tenant, app, user_id, key")


@dataclass(frozen=True, slots=True, order=True)
class SharedKey:
    """An ``app:`` or ``user:`` key of one app (`user_id` None in app scope)."""

    scope: str
    tenant: str
    app: str
    user_id: str | None
    key: str


@dataclass(frozen=True, slots=True)
class StatePlan:
    """What a batch makes read again.

    Attributes:
        rewritten: Sessions whose last writes are read again whole.
        places: Rows of the other sessions that may have become a last write.
    """

    rewritten: tuple[str, ...] = ()
    places: tuple[RowPlace, ...] = ()


def state_plan(
    rows: Sequence[EventRow],
    events: Sequence[LoggedEvent],
    updates: Mapping[RowPlace, EventStatus],
    owners: Mapping[RowPlace, str],
) -> StatePlan:
    """The plan of a batch: its `rows` (decoded as `events`) and its earlier rows' `updates`.

    `owners` names the session of each place in `updates`. A write that was counted stays
    counted while its row's status stays one of :data:`COUNTED`, so only a session that saw
    a row leave them can lose a last write; for the others, a last write only moves to a
    higher offset or appears.
    """
    rewritten = {owners[place] for place, status in updates.items() if str(status) not in COUNTED}
    places = {
        (row.partition, row.offset)
        for row, event in zip(rows, events, strict=True)
        if row.session_key not in rewritten and event.envelope.event.actions.state_delta
    }
    places.update(place for place in updates if owners[place] not in rewritten)
    return StatePlan(tuple(sorted(rewritten)), tuple(sorted(places)))


async def keep_state(conn: Connection, schema: str, plan: StatePlan) -> None:
    """Run `plan` in the batch's transaction (after its rows and statuses are written)."""
    changed: set[SharedKey] = set()
    table = sql.Identifier(schema, "state_last_writes")
    writes = sql.Identifier(schema, "state_writes")
    for session_key in plan.rewritten:
        parts = parse_session_key(session_key)
        session = (parts.tenant, parts.app, parts.user, session_key)
        changed |= await _keys(
            conn,
            sql.SQL("DELETE FROM {} WHERE session_key = %s{}").format(table, _RETURNING),
            (session_key,),
        )
        last = sql.SQL(_LAST_WRITES).format(source=sql.SQL(_OF_SESSION).format(writes=writes))
        changed |= await _keys(
            conn,
            sql.SQL("INSERT INTO {} ({}) {}{}").format(table, _COLUMNS, last, _RETURNING),
            session,
        )
    if plan.places:
        changed |= await _keys(conn, _advanced(schema), _places(plan.places))
    shared = sorted(key for key in changed if key.scope != "session")
    if shared:
        await _lock(conn, schema, shared)
        for scope in ("app", "user"):
            keys = [key for key in shared if key.scope == scope]
            if keys:
                await _set_values(conn, schema, scope, keys)


def _advanced(schema: str) -> sql.Composed:
    """The statement putting each key's last write among the rows in place, when later.

    Parameters: the rows' partitions and offsets. A write goes in when the session has none
    of its key at the same or a higher offset, and replaces the one it has at a lower one.
    """
    table = sql.Identifier(schema, "state_last_writes")
    writes = sql.Identifier(schema, "state_writes")
    last = sql.SQL(_LAST_WRITES).format(source=sql.SQL(_AT_PLACES).format(writes=writes))
    same = sql.SQL(
        "s.session_key = c.session_key AND s.scope = c.scope AND md5(s.key) = md5(c.key)"
        " AND s.key = c.key"
    )
    return sql.SQL(
        "WITH c AS ({last}), replaced AS ("
        ' DELETE FROM {table} AS s USING c WHERE {same} AND s."offset" < c."offset")'
        " INSERT INTO {table} ({columns}) SELECT * FROM c WHERE NOT EXISTS ("
        ' SELECT 1 FROM {table} AS s WHERE {same} AND s."offset" >= c."offset"){returning}'
    ).format(last=last, table=table, same=same, columns=_COLUMNS, returning=_RETURNING)


def _places(places: Iterable[RowPlace]) -> tuple[list[int], list[int]]:
    ordered = sorted(places)
    return [p for p, _ in ordered], [o for _, o in ordered]


async def _keys(
    conn: Connection, statement: sql.Composed, params: Sequence[object]
) -> set[SharedKey]:
    """The keys of the rows `statement` returns (scope, tenant, app, user, key)."""
    cursor = await conn.execute(statement, params)
    return {SharedKey(*row) for row in await cursor.fetchall()}


async def _lock(conn: Connection, schema: str, keys: Sequence[SharedKey]) -> None:
    """Take each key's transaction-level advisory lock, in the locks' order (no deadlock)."""
    names = [
        "ctxstream.state:"
        + json.dumps([schema, key.scope, key.tenant, key.app, key.user_id, key.key])
        for key in keys
    ]
    await conn.execute(
        "SELECT pg_advisory_xact_lock(l.h) FROM (SELECT DISTINCT hashtextextended(n, 0) AS h"
        " FROM unnest(%s::text[]) AS n ORDER BY h) AS l",
        (names,),
    )


async def _set_values(conn: Connection, schema: str, scope: str, keys: Sequence[SharedKey]) -> None:
    """Set the ``shared_state`` rows of `keys` (all of `scope`): the latest last write, if any.

    Under the keys' locks, so this statement reads every committed last write of them.
    """
    user = "{0}.user_id IS NULL" if scope == "app" else "{0}.user_id = c.user_id"
    same = sql.SQL(
        "{0}.tenant = c.tenant AND {0}.app = c.app AND {0}.scope = %(scope)s AND "
        + user
        + " AND md5({0}.key) = md5(c.key) AND {0}.key = c.key"
    )
    statement = sql.SQL(
        "WITH c AS (SELECT * FROM unnest(%(tenants)s::text[], %(apps)s::text[],"
        " %(users)s::text[], %(keys)s::text[]) AS c(tenant, app, user_id, key)),"
        " gone AS (DELETE FROM {shared} AS s USING c WHERE {same_s})"
        " INSERT INTO {shared} (scope, tenant, app, user_id, key, value, written_by, partition,"
        ' "offset", event_timestamp)'
        " SELECT %(scope)s, c.tenant, c.app, w.user_id, c.key, w.value, w.session_key,"
        ' w.partition, w."offset", w.event_timestamp FROM c CROSS JOIN LATERAL ('
        " SELECT * FROM {last} AS w WHERE {same_w}"
        ' ORDER BY w.event_timestamp DESC, w.partition DESC, w."offset" DESC LIMIT 1) AS w'
    ).format(
        shared=sql.Identifier(schema, "shared_state"),
        last=sql.Identifier(schema, "state_last_writes"),
        same_s=same.format(sql.Identifier("s")),
        same_w=same.format(sql.Identifier("w")),
    )
    await conn.execute(
        statement,
        {
            "scope": scope,
            "tenants": [key.tenant for key in keys],
            "apps": [key.app for key in keys],
            "users": [key.user_id for key in keys],
            "keys": [key.key for key in keys],
        },
    )
