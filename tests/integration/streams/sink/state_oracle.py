"""The ``state`` view as migrations 5 and 11 defined it, written out: the oracle of migration 12.

Migration 12 reads ``state`` from tables the sink keeps per batch; before it, the view merged
every counted state write of the rows on each read. :data:`OLD_STATE` is that view's SQL
(0005_state.sql's ``state`` over 0011_deleted_state.sql's ``state_writes``) as one query over
``event_rows``, copied here so it stays what it was whatever the migrations become.
"""

from __future__ import annotations

from typing import Final

from psycopg import sql

from streams.sink.database import Connection

#: Every key a counted row's stateDelta writes, in its scope (0011's ``state_writes``); per
#: scope and key the value last written: per session the highest offset, then among the
#: sessions' last writes the latest by (timestamp, partition, offset) (0005's ``state``).
OLD_STATE: Final = """
WITH state_writes AS (
    SELECT w.scope, w.key, w.value, r.tenant, r.app, r.user_id, r.session_key, r.partition,
           r."offset", r.event_timestamp
    FROM {rows} AS r
    CROSS JOIN LATERAL jsonb_each(r.event #> '{{actions,stateDelta}}') AS d(key, value)
    CROSS JOIN LATERAL (
        SELECT CASE WHEN starts_with(d.key, 'app:') THEN 'app'
                    WHEN starts_with(d.key, 'user:') THEN 'user'
                    ELSE 'session' END AS scope,
               CASE WHEN starts_with(d.key, 'app:') THEN substr(d.key, 5)
                    WHEN starts_with(d.key, 'user:') THEN substr(d.key, 6)
                    ELSE d.key END AS key,
               d.value
    ) AS w
    WHERE jsonb_typeof(r.event #> '{{actions,stateDelta}}') = 'object'
      AND NOT starts_with(d.key, 'temp:')
      AND (r.status IN ('live', 'masked', 'superseded', 'rewound', 'rewind', 'creation')
           OR (r.status = 'deleted' AND w.scope <> 'session'
               AND r.status_before_deletion IN (
                   'live', 'masked', 'superseded', 'rewound', 'rewind', 'creation', 'applied')))
)
SELECT DISTINCT ON (scope, tenant, app, user_id, session_key, key)
       scope, tenant, app, user_id, session_key, key, value,
       written_by, partition, "offset", event_timestamp AS "timestamp"
FROM (
    SELECT DISTINCT ON (w.tenant, w.app, w.user_id, w.session_key, w.scope, w.key)
           w.scope, w.tenant, w.app,
           CASE WHEN w.scope = 'app' THEN NULL ELSE w.user_id END AS user_id,
           CASE WHEN w.scope = 'session' THEN w.session_key END AS session_key,
           w.key, w.value, w.session_key AS written_by, w.partition, w."offset",
           w.event_timestamp
    FROM state_writes AS w
    ORDER BY w.tenant, w.app, w.user_id, w.session_key, w.scope, w.key, w."offset" DESC
) AS last_per_session
ORDER BY scope, tenant, app, user_id, session_key, key,
         event_timestamp DESC, partition DESC, "offset" DESC
"""
#: The columns compared, every one of the view's (the value as its ``jsonb`` text).
COLUMNS: Final = (
    'scope, tenant, app, user_id, session_key, key, value::text, written_by, partition, "offset",'
    ' "timestamp"'
)

StateRow = tuple[object, ...]


async def old_state(conn: Connection, schema: str) -> list[StateRow]:
    """What the old view gives for `schema`'s rows, every column, sorted."""
    query = sql.SQL("SELECT {} FROM ({}) AS old").format(
        sql.SQL(COLUMNS), sql.SQL(OLD_STATE).format(rows=sql.Identifier(schema, "event_rows"))
    )
    return await _sorted(conn, query)


async def state_view(conn: Connection, schema: str, relation: str = "state") -> list[StateRow]:
    """What `schema`'s ``state`` view (or `relation`) gives, every column, sorted."""
    query = sql.SQL("SELECT {} FROM {}").format(sql.SQL(COLUMNS), sql.Identifier(schema, relation))
    return await _sorted(conn, query)


async def _sorted(conn: Connection, query: sql.Composed) -> list[StateRow]:
    rows = await (await conn.execute(query)).fetchall()
    return sorted(rows, key=repr)
