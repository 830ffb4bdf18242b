"""ADK's own SQLite services, bulk-loaded with a session as their ``append_event`` leaves it.

Filling them through ``append_event`` takes minutes at 10,000 events (notes §3 E7), so
:func:`load_sqlite` and :func:`load_dss` create the session through the service itself
(its schema, its state rows: the session's final state goes in with ``create_session``) and
then write the events into the service's own tables in one transaction, as the service
writes them: ``SqliteSessionService``'s ``events`` table with ``model_dump_json``,
``DatabaseSessionService``'s v1 ``events`` rows through ADK's own ``StorageEvent.from_event``;
the session's update time is the last event's timestamp, as ``append_event`` sets it.
:func:`check_loaded` reads the session back through the service's own ``get_session``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Final

from google.adk.events.event import Event
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.schemas.shared import timestamp_to_utc_datetime
from google.adk.sessions.schemas.v1 import StorageEvent, StorageSession
from google.adk.sessions.session import Session
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from ctxstream.bench.adk.workload import AdkSession, expected_state

#: The baselines, by the name the figures give them.
SQLITE: Final = "adk_sqlite"
DSS_SQLITE: Final = "adk_dss_sqlite"

_INSERT_EVENT: Final = (
    "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data)"
    " VALUES (?, ?, ?, ?, ?, ?, ?)"
)
_SET_UPDATE_TIME: Final = (
    "UPDATE sessions SET update_time=? WHERE app_name=? AND user_id=? AND id=?"
)


async def load_sqlite(folder: Path, session: AdkSession) -> SqliteSessionService:
    """A ``SqliteSessionService`` on a new file in `folder` holding `session`."""
    path = folder / f"adk-sqlite-{session.session_id}.db"
    service = SqliteSessionService(str(path))
    created = await _create(service, session)
    rows = [
        (
            event.id,
            created.app_name,
            created.user_id,
            created.id,
            event.invocation_id,
            event.timestamp,
            event.model_dump_json(exclude_none=True),
        )
        for event in session.events
    ]
    with sqlite3.connect(path) as conn:
        conn.executemany(_INSERT_EVENT, rows)
        if session.events:
            keys = (created.app_name, created.user_id, created.id)
            conn.execute(_SET_UPDATE_TIME, (session.events[-1].timestamp, *keys))
    return service


async def load_dss(folder: Path, session: AdkSession) -> DatabaseSessionService:
    """A ``DatabaseSessionService`` on ``sqlite+aiosqlite`` (a new file in `folder`) holding it."""
    path = folder / f"adk-dss-{session.session_id}.db"
    service = DatabaseSessionService(f"sqlite+aiosqlite:///{path}")
    created = await _create(service, session)
    async with service.database_session_factory() as sql_session:
        stored = await sql_session.get(
            StorageSession, (created.app_name, created.user_id, created.id)
        )
        if stored is None:
            raise RuntimeError(f"DatabaseSessionService did not store session {created.id}")
        sql_session.add_all(StorageEvent.from_event(created, event) for event in session.events)
        if session.events:
            stored.update_time = timestamp_to_utc_datetime(session.events[-1].timestamp)
        await sql_session.commit()
    return service


async def _create(service: BaseSessionService, session: AdkSession) -> Session:
    return await service.create_session(
        app_name=session.app_name,
        user_id=session.user_id,
        session_id=session.session_id,
        state=expected_state(session.events),
    )


async def check_loaded(
    service: BaseSessionService, session: AdkSession, *, update_time: bool = True
) -> None:
    """Raise unless `service`'s ``get_session`` returns `session`'s events and final state.

    `update_time`: check too that ``last_update_time`` is the last event's timestamp (not
    for ctxstream, whose session was created, now, after the workload's timestamps).

    Raises:
        RuntimeError: The session reads back different (which events or the state).
    """
    loaded = await service.get_session(
        app_name=session.app_name, user_id=session.user_id, session_id=session.session_id
    )
    name = type(service).__name__
    if loaded is None:
        raise RuntimeError(f"{name} has no session {session.session_id} after loading")
    if loaded.events != session.events:
        first = _first_difference(loaded.events, session.events)
        raise RuntimeError(
            f"{name} read back {len(loaded.events)} events for {len(session.events)} loaded;"
            f" the first difference is at index {first}"
        )
    if loaded.state != expected_state(session.events):
        raise RuntimeError(f"{name} read back the state {loaded.state!r}")
    if update_time and session.events and loaded.last_update_time != session.events[-1].timestamp:
        raise RuntimeError(f"{name} read back last_update_time {loaded.last_update_time}")


def _first_difference(left: list[Event], right: list[Event]) -> int:
    return next(
        (index for index, (a, b) in enumerate(zip(left, right, strict=False)) if a != b),
        min(len(left), len(right)),
    )
