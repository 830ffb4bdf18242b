"""``ctxstream.adk.SessionService``: google-adk's ``BaseSessionService`` on ctxstream. Async.

Writes are records on the log through :class:`ctxstream.Client`: a creation record
(:func:`~ctxstream.appends.conditional.create_if_absent`: one winner among concurrent
creates), each event with the writer offset the held session was read at
(:func:`~ctxstream.appends.conditional.append_if`: the fold refuses a stale one, and the
call returns only with its verdict), a deletion record. Reads come from the SQL read
model once the sink has passed this service's writes and the session's last offset
(:mod:`ctxstream.adk.positions`). Every method keeps the contract ADK's own services
keep; ``ctxstream/adk/README.md`` has the details and what differs.

Example::

    service = SessionService("ctxstream://127.0.0.1:9092/?tenant=acme")
    runner = Runner(agent=root, app_name="support", session_service=service)
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Final

from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.platform import time as platform_time
from google.adk.platform import uuid as platform_uuid
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from typing_extensions import override

from ctxstream import errors
from ctxstream.adk import ids
from ctxstream.adk.compaction_wait import settled
from ctxstream.adk.events import event_json
from ctxstream.adk.positions import SINK_WAIT_S, Positions
from ctxstream.adk.read_model import SessionReads, StoredSession
from ctxstream.adk.state import merged_state, session_scope, stored_state
from ctxstream.adk.uri import parse_uri, read_model_location
from ctxstream.appends.conditional import append_if, create_if_absent
from ctxstream.client import Client
from ctxstream.partition_counts import known_partition_count
from ctxstream.sessions.catalog import SessionCatalog
from ctxstream.sessions.connections import ConnectionPool
from schemas.keys import SessionKey, SessionKeyParts, parse_session_key

#: ADK's own wording (its database service's), so callers matching on it keep working.
STALE_MESSAGE: Final = (
    "The session has been modified in storage since it was loaded. "
    "Please reload the session before appending more events."
)
#: Read-model connections a service keeps.
CONNECTIONS: Final = 4
#: How long get_session waits for a pipeline compaction in flight, by default, and between looks.
COMPACTION_WAIT_S: Final = 5.0


@dataclass(frozen=True, slots=True)
class _Backend:
    client: Client
    pool: ConnectionPool
    reads: SessionReads
    positions: Positions


class SessionService(BaseSessionService):
    """ADK's session service contract, kept on a ctxstream deployment and its read model."""

    def __init__(
        self, uri: str, *, compaction_wait_s: float = COMPACTION_WAIT_S, **kwargs: Any
    ) -> None:
        """The service `uri` names (:mod:`ctxstream.adk.uri`); nothing connects yet.

        `compaction_wait_s`: how long ``get_session`` waits, at most, for a compaction the
        pipeline has in flight for the session (its summary is then in the answer, as
        ADK's own compaction would have put it there). Extra keyword arguments ADK's
        service registry passes (``agents_dir``) are ignored.

        Raises:
            ValueError: The URI is refused, ``compaction_wait_s`` is negative, or
                ``CTXSTREAM_POSTGRES_DSN`` is not set.
        """
        del kwargs  # ADK's registry passes agents_dir and others; none is needed here
        if not compaction_wait_s >= 0:
            raise ValueError(f"compaction_wait_s: {compaction_wait_s!r}, expected 0 or more")
        self._compaction_wait_s = compaction_wait_s
        self._uri = parse_uri(uri)
        self._dsn, self._schema = read_model_location(os.environ)
        self._backend: _Backend | None = None
        self._starting = asyncio.Lock()

    async def _started(self) -> _Backend:
        async with self._starting:
            if self._backend is None:
                client = Client(bootstrap=self._uri.bootstrap, topic_prefix=self._uri.prefix)
                partitions = await known_partition_count(self._uri.bootstrap, client.events_topic)
                if partitions == 0:
                    raise errors.TopicMissingError(client.events_topic)
                await client.start()
                pool = ConnectionPool(self._dsn, size=CONNECTIONS)
                catalog = SessionCatalog(pool, schema=self._schema, events_partitions=partitions)
                positions = Positions(catalog, partitions, timeout_s=SINK_WAIT_S)
                self._backend = _Backend(
                    client,
                    pool,
                    SessionReads(catalog, self._schema, live=self._uri.view == "live"),
                    positions,
                )
            return self._backend

    async def close(self) -> None:
        """Close the client and the read model's connections (the service may start again)."""
        backend, self._backend = self._backend, None
        if backend is not None:
            try:
                await backend.client.stop()
            finally:
                await backend.pool.close()

    def _key(self, app_name: str, user_id: str, session_id: str) -> SessionKey:
        return ids.session_key(self._uri.tenant, app_name, user_id, session_id)

    @override
    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        """A new session with `state` (its ``app:``/``user:`` keys to their scopes), no events.

        Raises:
            AlreadyExistsError: The id is taken (one of concurrent creates wins).
            ValueError: An id is refused, naming it (:mod:`ctxstream.adk.ids`).
        """
        session_id = (session_id.strip() if session_id else None) or platform_uuid.new_uuid()
        key = self._key(app_name, user_id, session_id)
        backend = await self._started()
        initial = stored_state(state)
        now = platform_time.get_time()
        verdict = await create_if_absent(
            backend.client, key, event_id=platform_uuid.new_uuid(), timestamp=now, state=initial
        )
        backend.positions.wrote(key, verdict.offset)
        if not verdict.accepted:
            raise AlreadyExistsError(f"Session with id {session_id} already exists.")
        await backend.positions.sunk()
        parts = parse_session_key(key)
        app, user = await backend.reads.scoped_state(parts.tenant, parts.app, parts.user)
        session = Session(
            id=session_id,
            app_name=app_name,
            user_id=user_id,
            state=merged_state(session_scope(initial), app=app, user=user),
            last_update_time=now,
        )
        session._storage_update_marker = str(verdict.writer_offset)
        return session

    @override
    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        """The session with its merged state and the events `config` asks for; None if absent."""
        session_id = session_id.strip() if session_id else session_id
        if not session_id:
            return None
        key = parse_session_key(self._key(app_name, user_id, session_id))
        stored = await self._read(key, config)
        if stored is None:
            return None
        return _session(app_name, stored)

    async def _read(
        self, key: SessionKeyParts, config: GetSessionConfig | None
    ) -> StoredSession | None:
        """The session as the read model holds it once it has every record the log had."""
        backend = await self._started()
        client = backend.client
        try:
            # A pipeline compaction in flight: its summary is what ADK's own compaction
            # would have appended before this read (bounded; the read goes on without it).
            written = backend.positions.written(key.key)
            snapshot = await settled(client, key.key, written, self._compaction_wait_s)
            last_offset: int | None = snapshot.last_offset
        except errors.SessionNotFoundError:
            last_offset = None  # no records, or deleted: the read model says which
        await backend.positions.sunk(key.key, last_offset)
        return await backend.reads.session(key, config)

    @override
    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        """The app's (or user's) sessions without events, oldest update first, merged state."""
        app = ids.app_part(app_name)
        user = ids.escape_id(user_id, "user_id") if user_id is not None else None
        backend = await self._started()
        await backend.positions.sunk()
        listed = await backend.reads.listing(self._uri.tenant, app, user)
        sessions = [_session(app_name, stored) for stored in listed]
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    @override
    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        """Append the session's deletion record; its app and user state stay."""
        session_id = session_id.strip() if session_id else session_id
        key = self._key(app_name, user_id, session_id)
        backend = await self._started()
        backend.positions.wrote(key, await backend.client.delete_session(key))

    @override
    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        """The user's state of the app, keys without ``user:`` (``{}`` if none)."""
        app, user = ids.app_part(app_name), ids.escape_id(user_id, "user_id")
        backend = await self._started()
        await backend.positions.sunk()
        return (await backend.reads.scoped_state(self._uri.tenant, app, user))[1]

    @override
    async def append_event(self, session: Session, event: Event) -> Event:
        """Append `event` if `session` is current; the held session changes only once accepted.

        Raises:
            StaleSessionError: Another writer appended since `session` was read.
            SessionNotFoundError: The session does not exist (never created, or deleted).
        """
        if event.partial:
            return event
        if any(held == event for held in session.events if held.id == event.id):
            return event  # an equal re-delivery: ADK's in-memory service ignores it too
        starts_invocation = event.author == "user" and (
            not session.events or session.events[-1].invocation_id != event.invocation_id
        )
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        key = self._key(session.app_name, session.user_id, session.id)
        backend = await self._started()
        expected = await self._expected_offset(parse_session_key(key), session)
        verdict = await append_if(backend.client, key, event_json(event), expected_offset=expected)
        backend.positions.wrote(key, verdict.offset)
        if not verdict.accepted:
            if verdict.deleted:
                raise SessionNotFoundError(f"Session {session.id} not found.")
            raise StaleSessionError(STALE_MESSAGE)
        self._commit_event_to_session(session, event)
        session.last_update_time = event.timestamp
        session._storage_update_marker = str(verdict.writer_offset)
        if starts_invocation:
            await self._catch_up_summaries(parse_session_key(key), session, event, verdict.offset)
        return event

    async def _catch_up_summaries(
        self, key: SessionKeyParts, session: Session, event: Event, offset: int
    ) -> None:
        """Give the held session the summary the pipeline decided at an invocation's start.

        The projector finds the end of the previous invocation only at this event, so a
        summary ADK's own compaction would have appended before the turn is requested
        now: wait for it (bounded), then add the pipeline's summaries stored after `event`
        (at `offset`) to the held session, so the turn's model calls see them. Summaries
        are not writer records: the held session's marker stays.
        """
        backend = await self._started()
        try:
            snapshot = await settled(backend.client, key.key, offset, self._compaction_wait_s)
        except errors.SessionNotFoundError:
            return
        # The latest summary may have been folded before the first look (a projector
        # behind by more than the summarizer's round trip): whether one was appended
        # after `event` is the question, not whether a request was still in flight.
        if snapshot.boundary is None or snapshot.boundary.summary_offset <= offset:
            return
        stored = await self._read(key, None)
        after = stored.events if stored is not None else []
        ids_after = [e.id for e in after]
        if event.id not in ids_after:
            return
        held = {e.id for e in session.events}
        for summary in after[ids_after.index(event.id) + 1 :]:
            if summary.actions.compaction is not None and summary.id not in held:
                session.events.append(summary)

    async def _expected_offset(self, key: SessionKeyParts, session: Session) -> int:
        """The writer offset `session` was read at; for a session without one, the stored one.

        A session this service did not return (built by hand, or another service's) has
        no offset marker: as ADK's database service does, it is current when its last
        event is the stored session's last (or both have none).

        Raises:
            SessionNotFoundError: No such session is stored.
            StaleSessionError: The stored session has moved past the held one.
        """
        marker = session._storage_update_marker
        if marker is not None and marker.lstrip("-").isdigit():
            return int(marker)
        stored = await self._read(key, GetSessionConfig(num_recent_events=1))
        if stored is None:
            raise SessionNotFoundError(f"Session {session.id} not found.")
        held_last = session.events[-1].id if session.events else None
        stored_last = stored.events[-1].id if stored.events else None
        if held_last != stored_last:
            raise StaleSessionError(STALE_MESSAGE)
        return stored.writer_offset


def _session(app_name: str, stored: StoredSession) -> Session:
    session = Session(
        id=stored.session_id,
        app_name=app_name,
        user_id=stored.user_id,
        state=stored.state,
        events=stored.events,
        last_update_time=stored.last_update_time,
    )
    session._storage_update_marker = str(stored.writer_offset)
    return session
