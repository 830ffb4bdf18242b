"""The catalog's SQL, composed for one target schema: identifiers quoted, values parameters.

A listing reads ``session_index`` by the index its filter matches (tenant; tenant and app;
tenant, app and user: migration 6), newest first, from the cursor's position on by a row
comparison the index serves, one row past the page to know whether another follows. A
history reads the ``events`` view by ``event_rows_session_offset``.
"""

from __future__ import annotations

from typing import Final

from psycopg import sql

from ctxstream.sessions.cursor import ListingPosition, ListingScope
from streams.sink.read_model.session_index import INDEX_COLUMNS

#: What a listing reads of each session: its ``session_index`` row but ``deleted`` and
#: ``writer_offset`` (the conditional-append bookkeeping: no listing shows it).
LISTED_COLUMNS: Final = tuple(
    name for name in INDEX_COLUMNS if name not in ("deleted", "writer_offset")
)
STORED_COLUMNS: Final = (
    "partition",
    "offset",
    "event_id",
    "invocation_id",
    "author",
    "timestamp",
    "status",
    "lossy",
    "event",
)
#: The statuses of a deleted incarnation's records: a history leaves them out.
ENDED_STATUSES: Final = ["deleted", "deletion"]


def _columns(names: tuple[str, ...]) -> sql.Composable:
    return sql.SQL(", ").join(map(sql.Identifier, names))


def listing(
    schema: str, scope: ListingScope, position: ListingPosition | None, limit: int
) -> tuple[sql.Composed, dict[str, object]]:
    """The statement of a page of `scope`'s sessions after `position`, and its parameters."""
    filters = [sql.SQL("tenant = %(tenant)s"), sql.SQL("NOT deleted")]
    parameters: dict[str, object] = {"tenant": scope.tenant, "limit": limit}
    if scope.app is not None:
        filters.append(sql.SQL("app = %(app)s"))
        parameters["app"] = scope.app
    if scope.user is not None:
        filters.append(sql.SQL("user_id = %(user)s"))
        parameters["user"] = scope.user
    if position is not None:
        filters.append(sql.SQL("(last_activity, session_key) < (%(at)s, %(key)s)"))
        parameters.update(at=position.last_activity, key=position.session_key)
    statement = sql.SQL(
        "SELECT {columns} FROM {table} WHERE {filters}"
        " ORDER BY last_activity DESC, session_key DESC LIMIT %(limit)s"
    ).format(
        columns=_columns(LISTED_COLUMNS),
        table=sql.Identifier(schema, "session_index"),
        filters=sql.SQL(" AND ").join(filters),
    )
    return statement, parameters


def session_state(schema: str) -> sql.Composed:
    """Whether a session is deleted, and its partition (no row: the model holds none of it)."""
    return sql.SQL("SELECT deleted, partition FROM {} WHERE session_key = %s").format(
        sql.Identifier(schema, "session_index")
    )


def history(schema: str) -> sql.Composed:
    """A page of a session's stored records after an offset (parameters: key, after, limit)."""
    return sql.SQL(
        'SELECT {columns} FROM {view} WHERE session_key = %s AND "offset" > %s'
        ' AND status <> ALL(%s) ORDER BY "offset" LIMIT %s'
    ).format(columns=_columns(STORED_COLUMNS), view=sql.Identifier(schema, "events"))


def consistency(schema: str) -> sql.Composed:
    """Every partition's next offset the read model has consumed up to."""
    return sql.SQL("SELECT partition, next_offset FROM {} ORDER BY partition").format(
        sql.Identifier(schema, "consistent_as_of")
    )


def partition_position(schema: str) -> sql.Composed:
    """One partition's next offset (parameter: the partition)."""
    return sql.SQL("SELECT max(next_offset) FROM {} WHERE partition = %s").format(
        sql.Identifier(schema, "consistent_as_of")
    )
