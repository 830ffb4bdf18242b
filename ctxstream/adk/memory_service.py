"""ADK's memory service on ctxstream: memory records on the log, searched in the SQL read model.

Every change is a memory record (:mod:`schemas.memory_mark`) appended to the log, so a
replay of the log rebuilds the same memories; each method returns once the sink stored
its last record (the memories are searchable then). A session's memories come from the
log up to the session's last offset (an ``add`` record after it), so the session object
may be partial (``view=live``); its events the log does not hold (a session of another
session service) are written as ``write`` records. Design and the mapping of ADK's
methods: ``ctxstream/adk/README.md``, "Memory".

Example::

    memory = MemoryService("ctxstream://127.0.0.1:9092/?tenant=acme")
    await memory.add_session_to_memory(session)
    found = await memory.search_memory(app_name="support", user_id="u42", query="car?")
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry as AdkMemoryEntry
from typing_extensions import override

from ctxstream.adk.ids import app_part, escape_id, session_key
from ctxstream.adk.memory_entries import adk_entry, written_entry, written_event
from ctxstream.adk.memory_log import MemoryLog
from ctxstream.adk.memory_sql import MemorySql
from ctxstream.adk.uri import parse_uri, read_model_location
from ctxstream.memory import MemoryStore
from ctxstream.sessions.connections import ConnectionPool
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKeyParts, parse_session_key
from schemas.memory_mark import MAX_MEMORY_IDS, MemoryMark, WrittenMemory

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session

#: The session part of a user's key that holds what ``add_memory`` wrote and events given
#: without a session. No ADK session id escapes to it (``%`` is always escaped as ``%25``).
MEMORY_SESSION: Final = "%memory"
#: How long a method waits for the sink to store its records, by default.
DEFAULT_SINK_WAIT_S: Final = 30.0


class MemoryService(BaseMemoryService):
    """ADK's ``BaseMemoryService`` on a ctxstream deployment and its SQL read model."""

    def __init__(
        self, uri: str, *, sink_wait_s: float = DEFAULT_SINK_WAIT_S, **kwargs: object
    ) -> None:
        """The memory of the deployment and tenant `uri` names (``ctxstream/adk/uri.py``).

        The read model's DSN is ``CTXSTREAM_POSTGRES_DSN``, its target schema
        ``CTXSTREAM_SINK_SCHEMA``. `sink_wait_s` bounds each wait for the sink. Other
        keyword arguments (ADK's registry passes ``agents_dir``) are ignored.

        Raises:
            ValueError: The URI is refused or the DSN is not set; the message says which.
        """
        del kwargs
        location = parse_uri(uri)
        dsn, schema = read_model_location(os.environ)
        if not sink_wait_s > 0:
            raise ValueError(f"sink_wait_s: {sink_wait_s!r}, expected more than 0 seconds")
        settings = KafkaSettings(kafka_bootstrap=location.bootstrap)
        if location.prefix is not None:
            settings = settings.model_copy(update={"topic_prefix": location.prefix})
        self._tenant = location.tenant
        self._log = MemoryLog(settings)
        self._pool = ConnectionPool(dsn, size=2)
        self._sql = MemorySql(self._pool, schema)
        self._schema = schema
        self._sink_wait_s = sink_wait_s

    async def close(self) -> None:
        """Close the producer and the read model's connections."""
        try:
            await self._log.close()
        finally:
            await self._pool.close()

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        """Remember the session's records on the log up to now, and its events the log lacks.

        Memory ids deleted earlier for the user stay deleted (as ADK's in-memory service).
        """
        key = session_key(self._tenant, session.app_name, session.user_id, session.id)
        stamp = session.last_update_time or _latest(session.events)
        await self._remember(key, session.events, whole=True, timestamp=stamp)

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Remember `events` of the session (without `session_id`: of the user's memory).

        `custom_metadata` is not kept (a memory is its text).
        """
        if session_id is None:
            key = self._memory_key(app_name, user_id)
            blocked = await self._sql.deleted_ids(_user_prefix(key))
            offered = _offered(events, blocked)
            kept = await self._sql.memory_ids(key, offered) if offered else set()
            await self._write(key, [w for i, w in offered.items() if i not in kept])
            return
        key = session_key(self._tenant, app_name, user_id, session_id)
        await self._remember(key, events, whole=False, timestamp=_latest(events))

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[AdkMemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Write `memories` to the user's memory; an entry with an id replaces that id's.

        Raises:
            ValueError: An entry has no text or a timestamp that is no ISO 8601 time.
        """
        key = self._memory_key(app_name, user_id)
        written = [written_entry(entry) for entry in memories]
        replaced = [_mark("delete", ids) for ids in _chunks(w.id for w in written)]
        await self._append(key, [*replaced, *(MemoryMark("write", entry=w) for w in written)])

    @override
    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Delete the user's memory `memory_id` (an event id) in every session that holds it."""
        if not memory_id:
            return
        user = parse_session_key(self._memory_key(app_name, user_id))
        holding = await self._sql.sessions_holding(user.tenant, user.app, user.user, memory_id)
        for key in sorted(holding):
            await self._append(key, [_mark("delete", [memory_id])])

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The user's memories that best answer `query` (at most 10, best first)."""
        user = parse_session_key(self._memory_key(app_name, user_id))
        async with self._pool.connection() as conn:
            store = MemoryStore(conn, schema=self._schema)
            found = await store.search(user.tenant, user.app, user.user, query)
        return SearchMemoryResponse(memories=[adk_entry(entry) for entry in found])

    async def _remember(
        self, key: str, events: Sequence[Event], *, whole: bool, timestamp: float | None
    ) -> None:
        """An ``add`` of the session's records (`whole`, else of `events`), then what it lacks.

        The records carry the later of `timestamp` (the session's own last time) and the
        stored last activity, so adding a session to memory leaves its last activity, which
        ``list_sessions`` orders by, where it was.
        """
        stored = await self._sql.last_activity(key)
        timestamp = max((t for t in (timestamp, stored) if t is not None), default=None)
        blocked = await self._sql.deleted_ids(_user_prefix(key))
        offered = _offered(events, blocked)
        if whole:
            marks = [MemoryMark("add"), *(_mark("delete", ids) for ids in _chunks(blocked))]
        else:
            marks = [_mark("add", ids) for ids in _chunks(offered)]
        await self._append(key, marks, timestamp)
        if not offered:
            return
        lacking = set(offered) - await self._sql.held_event_ids(key, offered)
        kept = await self._sql.memory_ids(key, lacking) if lacking else set()
        await self._write(key, [offered[i] for i in sorted(lacking - kept)], timestamp)

    async def _write(
        self, key: str, written: Sequence[WrittenMemory], timestamp: float | None = None
    ) -> None:
        await self._append(key, [MemoryMark("write", entry=w) for w in written], timestamp)

    async def _append(
        self, key: str, marks: Sequence[MemoryMark], timestamp: float | None = None
    ) -> None:
        """Append `marks` to the session in order, then wait until the sink stored the last."""
        offsets = await self._log.append(key, marks, timestamp=timestamp)
        if offsets:
            await self._sql.wait_stored(key, offsets[-1], self._sink_wait_s)

    def _memory_key(self, app_name: str, user_id: str) -> str:
        """The key of the user's own memory (``tenant/app/user/%memory``)."""
        user = escape_id(user_id, "user_id")
        return SessionKeyParts(
            parse_session_key(f"{self._tenant}/a/u/s").tenant,
            app_part(app_name),
            user,
            MEMORY_SESSION,
        ).key


def _latest(events: Sequence[Event]) -> float | None:
    """The latest timestamp of `events`; None for none."""
    return max((event.timestamp for event in events), default=None)


def _user_prefix(key: str) -> str:
    """``tenant/app/user/`` of a session key (every session of that user starts so)."""
    parts = parse_session_key(key)
    return f"{parts.tenant}/{parts.app}/{parts.user}/"


def _offered(events: Iterable[Event], blocked: set[str]) -> dict[str, WrittenMemory]:
    """The memories `events` hold by event id, those of `blocked` ids left out."""
    found = (written_event(event) for event in events)
    return {w.id: w for w in found if w is not None and w.id not in blocked}


def _chunks(ids: Iterable[str]) -> list[list[str]]:
    """`ids` sorted, in lists of at most :data:`MAX_MEMORY_IDS`."""
    ordered = sorted(set(ids))
    return [ordered[n : n + MAX_MEMORY_IDS] for n in range(0, len(ordered), MAX_MEMORY_IDS)]


def _mark(action: str, ids: Iterable[str]) -> MemoryMark:
    return MemoryMark("add" if action == "add" else "delete", frozenset(ids))
