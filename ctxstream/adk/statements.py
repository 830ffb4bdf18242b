"""The SQL the session service reads, composed for one target schema. Pure.

A session: its ``session_index`` row (deleted, writer offset, last activity), its held
events by ``event_rows_session_offset`` (newest first up to a limit, after the last held
event older than ``after_timestamp``), and the ``state`` view's rows of its session, app
and user. A listing: the app's (or user's) ``session_index`` rows and the app's state.
"""

from __future__ import annotations

from typing import Final

from psycopg import sql

from projections.history.event_status import EventStatus
from projections.live_view.kept_view import HELD

#: The statuses of the records ADK holds in ``session.events``: what the fold applied as an
#: event (rewound events and rewinds included, as ADK keeps them); never bookkeeping
#: (creation, deletion, fork, memory, refusal), a stale or partial record, or a copy.
HELD_STATUSES: Final = sorted(str(status) for status in HELD)  # the live view's too
#: The statuses of the records that set ADK's ``last_update_time``: held events and creations
#: (a stale record, a memory or other bookkeeping record does not).
UPDATE_STATUSES: Final = [*HELD_STATUSES, str(EventStatus.CREATION)]
#: The timestamp of a session's last update: its last row of UPDATE_STATUSES (backwards on
#: ``event_rows_session_offset``), else its last activity.
_LAST_UPDATE: Final = sql.SQL(
    "coalesce((SELECT event_timestamp FROM {rows} AS r WHERE r.session_key = i.session_key"
    ' AND r.status = ANY(%(updating)s) ORDER BY r."offset" DESC LIMIT 1), i.last_activity)'
)


def session_row(schema: str) -> sql.Composed:
    """Whether a session is deleted, its writer offset and last update.

    Parameters: ``key``, ``updating`` (:data:`UPDATE_STATUSES`).
    """
    return sql.SQL(
        "SELECT i.deleted, i.writer_offset, {last} FROM {index} AS i WHERE i.session_key = %(key)s"
    ).format(
        last=_LAST_UPDATE.format(rows=sql.Identifier(schema, "event_rows")),
        index=sql.Identifier(schema, "session_index"),
    )


def held_events(schema: str) -> sql.Composed:
    """A session's held events in offset order: the newest `limit` after the cut.

    Each event comes as its JSON text (orjson decodes it: at 10,000 events that halves the
    read against psycopg's own ``jsonb`` loader; ``ctxstream bench adk``).

    Parameters: ``key``, ``held``, ``after`` (None: no cut) and ``limit`` (None: all).
    The cut is the last held event older than ``after``: what follows it is ADK's
    "events with timestamp >= after_timestamp", counted from the end as ADK counts.
    """
    rows = sql.Identifier(schema, "event_rows")
    return sql.SQL(
        "SELECT event::text, CASE WHEN lossy THEN raw END FROM ("
        ' SELECT "offset", event, lossy, raw FROM {rows}'
        ' WHERE session_key = %(key)s AND status = ANY(%(held)s) AND "offset" > coalesce(('
        '   SELECT max("offset") FROM {rows} WHERE session_key = %(key)s'
        "   AND status = ANY(%(held)s) AND event_timestamp < %(after)s), -1)"
        ' ORDER BY "offset" DESC LIMIT %(limit)s) AS recent ORDER BY "offset"'
    ).format(rows=rows)


def scoped_state(schema: str) -> sql.Composed:
    """The app's state, a user's and a session's.

    Parameters: ``tenant``, ``app``, ``user``, ``key`` (None: no session). One query per
    scope, each a lookup by its index (``streams/sink/README.md``, "Reading them").
    """
    return sql.SQL(
        "SELECT scope, key, value FROM {0} WHERE tenant = %(tenant)s AND app = %(app)s"
        " AND scope = 'app'"
        " UNION ALL SELECT scope, key, value FROM {0} WHERE tenant = %(tenant)s"
        " AND app = %(app)s AND scope = 'user' AND user_id = %(user)s"
        " UNION ALL SELECT scope, key, value FROM {0} WHERE scope = 'session'"
        " AND session_key = %(key)s"
    ).format(sql.Identifier(schema, "state"))


def listed_sessions(schema: str, *, by_user: bool) -> sql.Composed:
    """An app's live sessions (of one user when `by_user`).

    A key that holds memory records only (a user's ``%memory`` key, a session another
    service made) has no first row of its own (``created`` is NULL): it is no session.

    Parameters: ``tenant``, ``app``, ``user`` (when `by_user`), ``updating``.
    """
    user = sql.SQL(" AND i.user_id = %(user)s") if by_user else sql.SQL("")
    return sql.SQL(
        "SELECT i.session_key, i.user_id, i.session_id, {last}, i.writer_offset FROM {index} AS i"
        " WHERE i.tenant = %(tenant)s AND i.app = %(app)s{user} AND NOT i.deleted"
        " AND i.created IS NOT NULL"
    ).format(
        last=_LAST_UPDATE.format(rows=sql.Identifier(schema, "event_rows")),
        index=sql.Identifier(schema, "session_index"),
        user=user,
    )


def app_state_rows(schema: str, *, by_user: bool) -> sql.Composed:
    """Every state row of an app (of one user and the app's when `by_user`).

    Parameters: ``tenant``, ``app``, ``user`` (when `by_user`). One query per scope.
    """
    user = sql.SQL(" AND user_id = %(user)s") if by_user else sql.SQL("")
    return sql.SQL(
        "SELECT scope, user_id, session_key, key, value FROM {0} WHERE tenant = %(tenant)s"
        " AND app = %(app)s AND scope = 'app'"
        " UNION ALL SELECT scope, user_id, session_key, key, value FROM {0}"
        " WHERE tenant = %(tenant)s AND app = %(app)s AND scope = 'user'{1}"
        " UNION ALL SELECT scope, user_id, session_key, key, value FROM {0}"
        " WHERE tenant = %(tenant)s AND app = %(app)s AND scope = 'session'{1}"
    ).format(sql.Identifier(schema, "state"), user)
