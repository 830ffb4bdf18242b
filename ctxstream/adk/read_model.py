"""Sessions, events and scoped state as ADK returns them, read from the SQL read model. Async.

Each read is one read-only, repeatable-read snapshot (the catalog's ``snapshot``), so a
session's events, state and writer offset (its staleness marker) agree.
What the reads must see is waited for by the caller first
(:class:`ctxstream.adk.positions.Positions`). Ids in rows are key parts; the ADK ids are
decoded here (:mod:`ctxstream.adk.ids`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import GetSessionConfig

from ctxstream.adk import statements
from ctxstream.adk.events import stored_event
from ctxstream.adk.ids import unescape_id
from ctxstream.adk.state import merged_state
from ctxstream.sessions.catalog import SessionCatalog
from ctxstream.sessions.live_rows import live_rows
from schemas.keys import SessionKeyParts
from streams.sink.database import Connection


@dataclass(frozen=True, slots=True)
class StoredSession:
    """A session as one snapshot of the read model holds it.

    Attributes:
        user_id: ADK's user id.
        session_id: ADK's session id.
        writer_offset: The offset of its last writer record (the staleness marker).
        last_update_time: ADK's float seconds of its last record.
        state: The merged state (session keys, ``app:`` and ``user:`` keys).
        events: The held events asked for, in offset order.
    """

    user_id: str
    session_id: str
    writer_offset: int
    last_update_time: float
    state: dict[str, Any]
    events: list[Event]


class SessionReads:
    """The read model's sessions of one target schema, read in a catalog's snapshots."""

    def __init__(self, catalog: SessionCatalog, schema: str, *, live: bool = False) -> None:
        """Read `schema` in `catalog`'s snapshots; `live`: a session's live view, not all events."""
        self._catalog, self._schema, self._live = catalog, schema, live

    async def session(
        self, key: SessionKeyParts, config: GetSessionConfig | None
    ) -> StoredSession | None:
        """The session at `key` with the events `config` asks for; None: absent or deleted."""
        limit = config.num_recent_events if config else None
        after = config.after_timestamp if config else None
        async with self._catalog.snapshot() as conn:
            row = await (
                await conn.execute(
                    statements.session_row(self._schema),
                    {"key": key.key, "updating": statements.UPDATE_STATUSES},
                )
            ).fetchone()
            if row is None or row[0]:
                return None
            events: list[Event] = []
            if limit != 0 and self._live:
                events = await _live_events(conn, self._schema, key.key, after, limit)
            elif limit != 0:
                found = await conn.execute(
                    statements.held_events(self._schema),
                    {
                        "key": key.key,
                        "held": statements.HELD_STATUSES,
                        "after": after,
                        "limit": limit,
                    },
                )
                events = [stored_event(event, raw) for event, raw in await found.fetchall()]
            scoped = await conn.execute(
                statements.scoped_state(self._schema),
                {"tenant": key.tenant, "app": key.app, "user": key.user, "key": key.key},
            )
            by_scope = _by_scope(await scoped.fetchall())
        return StoredSession(
            user_id=unescape_id(key.user),
            session_id=unescape_id(key.session),
            writer_offset=int(row[1]),
            last_update_time=float(row[2]),
            state=merged_state(by_scope["session"], app=by_scope["app"], user=by_scope["user"]),
            events=events,
        )

    async def scoped_state(
        self, tenant: str, app: str, user: str
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The app's state and the user's (`user`: a key part), prefixes stripped."""
        async with self._catalog.snapshot() as conn:
            # No session key: `session_key = NULL` matches no session row.
            scoped = await conn.execute(
                statements.scoped_state(self._schema),
                {"tenant": tenant, "app": app, "user": user, "key": None},
            )
            by_scope = _by_scope(await scoped.fetchall())
        return by_scope["app"], by_scope["user"]

    async def listing(self, tenant: str, app: str, user: str | None) -> list[StoredSession]:
        """The app's live sessions (of `user`, a key part, when given), without events."""
        by_user = user is not None
        named: dict[str, object] = {"tenant": tenant, "app": app, "user": user}
        named["updating"] = statements.UPDATE_STATUSES
        async with self._catalog.snapshot() as conn:
            listed = await (
                await conn.execute(statements.listed_sessions(self._schema, by_user=by_user), named)
            ).fetchall()
            rows = await (
                await conn.execute(statements.app_state_rows(self._schema, by_user=by_user), named)
            ).fetchall()
        app_state: dict[str, Any] = {}
        users: dict[str, dict[str, Any]] = {}
        sessions: dict[str, dict[str, Any]] = {}
        for kind, user_part, session_key, name, value in rows:
            if kind == "app":
                app_state[name] = value
            elif kind == "user":
                users.setdefault(user_part, {})[name] = value
            else:
                sessions.setdefault(session_key, {})[name] = value
        return [
            StoredSession(
                user_id=unescape_id(user_part),
                session_id=unescape_id(session_part),
                writer_offset=int(writer_offset),
                last_update_time=float(last_activity),
                state=merged_state(
                    sessions.get(session_key, {}), app=app_state, user=users.get(user_part, {})
                ),
                events=[],
            )
            for session_key, user_part, session_part, last_activity, writer_offset in listed
        ]


async def _live_events(
    conn: Connection, schema: str, key: str, after: float | None, limit: int | None
) -> list[Event]:
    """The session's live view (in the open snapshot), then `config`'s filters as ADK's own.

    As ADK's in-memory service applies them to the list it holds: ``num_recent_events``
    keeps the last ones, then ``after_timestamp`` the run after the last event older than it.
    """
    found = await live_rows(conn, schema, key)
    if found is None:
        return []
    events = [Event.model_validate(event) for event in found.events]
    if limit is not None:
        events = events[-limit:] if limit > 0 else []
    if after is not None:
        older = [n for n, event in enumerate(events) if event.timestamp < after]
        events = events[older[-1] + 1 :] if older else events
    return events


def _by_scope(rows: Sequence[Sequence[Any]]) -> dict[str, dict[str, Any]]:
    by_scope: dict[str, dict[str, Any]] = {"app": {}, "user": {}, "session": {}}
    for scope, name, value in rows:
        by_scope[scope][name] = value
    return by_scope
