"""The SQL the session service reads, composed for one target schema. Pure.

A session: its ``session_index`` row (deleted, writer offset, last activity), its held
events by ``event_rows_session_offset`` (newest first up to a limit, after the last held
event older than ``after_timestamp``), and the ``state`` view's rows of its session, app
and user. A listing: the app's (or user's) ``session_index`` rows and the app's state.
"""

from __future__ import annotations

from typing import Final

from psycopg import sql

#: The statuses of the records ADK holds in ``session.events``: what the fold applied as an
#: event (rewound events and rewinds included, as ADK keeps them); never bookkeeping
#: (creation, deletion, fork, memory, refusal), a stale or partial record, or a copy.
HELD_STATUSES: Final = ["live", "masked", "superseded", "rewound", "rewind"]


def session_row(schema: str) -> sql.Composed:
    """Whether a session is deleted, its writer offset and last activity (parameter: key)."""
    return sql.SQL(
        "SELECT deleted, writer_offset, last_activity FROM {} WHERE session_key = %s"
    ).format(sql.Identifier(schema, "session_index"))


def held_events(schema: str) -> sql.Composed:
    """A session's held events in offset order: the newest `limit` after the cut.

    Parameters: ``key``, ``held``, ``after`` (None: no cut) and ``limit`` (None: all).
    The cut is the last held event older than ``after``: what follows it is ADK's
    "events with timestamp >= after_timestamp", counted from the end as ADK counts.
    """
    rows = sql.Identifier(schema, "event_rows")
    return sql.SQL(
        "SELECT event, CASE WHEN lossy THEN raw END FROM ("
        ' SELECT "offset", event, lossy, raw FROM {rows}'
        ' WHERE session_key = %(key)s AND status = ANY(%(held)s) AND "offset" > coalesce(('
        '   SELECT max("offset") FROM {rows} WHERE session_key = %(key)s'
        "   AND status = ANY(%(held)s) AND event_timestamp < %(after)s), -1)"
        ' ORDER BY "offset" DESC LIMIT %(limit)s) AS recent ORDER BY "offset"'
    ).format(rows=rows)


def scoped_state(schema: str) -> sql.Composed:
    """The app's state, a user's and a session's (parameters: tenant, app, user, key)."""
    return sql.SQL(
        "SELECT scope, key, value FROM {} WHERE tenant = %s AND app = %s AND (scope = 'app'"
        " OR (scope = 'user' AND user_id = %s) OR (scope = 'session' AND session_key = %s))"
    ).format(sql.Identifier(schema, "state"))


def listed_sessions(schema: str, *, by_user: bool) -> sql.Composed:
    """An app's live sessions (of one user when `by_user`): parameters tenant, app[, user]."""
    user = sql.SQL(" AND user_id = %s") if by_user else sql.SQL("")
    return sql.SQL(
        "SELECT session_key, user_id, session_id, last_activity, writer_offset FROM {}"
        " WHERE tenant = %s AND app = %s{} AND NOT deleted"
    ).format(sql.Identifier(schema, "session_index"), user)


def app_state_rows(schema: str, *, by_user: bool) -> sql.Composed:
    """Every state row of an app (of one user and the app's when `by_user`)."""
    user = sql.SQL(" AND (scope = 'app' OR user_id = %s)") if by_user else sql.SQL("")
    return sql.SQL(
        "SELECT scope, user_id, session_key, key, value FROM {} WHERE tenant = %s AND app = %s{}"
    ).format(sql.Identifier(schema, "state"), user)
