"""What the read model must hold, computed from the log alone, and what it holds, read back.

The oracle reads the committed records of `events` (``read_committed``) and classifies each
session with the pure core directly (:func:`~projections.history.classification.classify_session`,
``live_history``, the projector's fold ``project``), never through the sink's code path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from psycopg import sql

from projections.event_kinds import summary_request_id
from projections.fold.projection import project
from projections.history.classification import classify_session, live_history
from projections.history.event_status import APPLIED, EventStatus
from projections.memory.memory_record import memory_of
from projections.memory.memory_text import memory_text
from schemas.codec import decode_envelope
from schemas.errors import DecodeError
from schemas.keys import Offset, SessionKey, parse_session_key
from schemas.logged_event import LoggedEvent
from streams.sink.database import Connection
from tests.support.kafka import read_all

#: What a row of the read model is: (partition, offset).
Place = tuple[int, int]
#: The statuses whose rows have a memory (the fold keeps them), as the sink's README states.
REMEMBERED = frozenset({EventStatus.LIVE, EventStatus.MASKED, EventStatus.SUPERSEDED})


@dataclass(frozen=True)
class LoggedSession:
    """One session's committed, decodable records, in offset order, and their partition."""

    key: str
    partition: int
    records: list[LoggedEvent]


async def logged_sessions(bootstrap: str, topic: str) -> dict[str, LoggedSession]:
    """Every session of `topic`'s committed records that decode."""
    sessions: dict[str, LoggedSession] = {}
    for record in await read_all(bootstrap, topic):
        try:
            env = decode_envelope(record.value, record_key=record.key)
        except DecodeError:
            continue
        session = sessions.setdefault(
            env.session_key, LoggedSession(env.session_key, record.partition, [])
        )
        session.records.append(LoggedEvent(Offset(record.offset), env))
    return sessions


def expected_statuses(sessions: Mapping[str, LoggedSession]) -> dict[Place, str]:
    """Every record's status, by the full classification of its session."""
    return {
        (session.partition, offset): str(status)
        for session in sessions.values()
        for offset, status in classify_session(session.records).items()
    }


def expected_live(sessions: Mapping[str, LoggedSession]) -> dict[str, list[int]]:
    """Per session with any, the offsets of its live history, in order."""
    found = {key: [int(r.offset) for r in live_history(s.records)] for key, s in sessions.items()}
    return {key: offsets for key, offsets in found.items() if offsets}


def expected_memories(sessions: Mapping[str, LoggedSession], apps: set[str]) -> set[Place]:
    """The rows that have a memory: kept by the fold, with text, and either named last by an
    ``add`` memory record after them or, when none names them, of one of `apps` (mode
    ``all``); of two rows with one event id, the first."""
    places: set[Place] = set()
    for session in sessions.values():
        every = parse_session_key(session.key).app in apps
        statuses = classify_session(session.records)
        seen: set[str] = set()
        for position, record in enumerate(session.records):
            memory = memory_of(record, session.partition)
            if not (statuses[record.offset] in REMEMBERED and memory):
                continue
            later = session.records[position + 1 :]
            if memory.memory_id not in seen and _last_word(later, memory.memory_id, every=every):
                seen.add(memory.memory_id)
                places.add((session.partition, record.offset))
    return places


def _last_word(later: list[LoggedEvent], memory_id: str, *, every: bool) -> bool:
    """Walking back from the session's last record: the first memory record naming
    `memory_id` says whether it is a memory (read from the raw custom metadata)."""
    for record in reversed(later):
        ours = (record.envelope.event.custom_metadata or {}).get("ctxstream")
        mark = ours.get("memory") if isinstance(ours, dict) else None
        if isinstance(mark, dict) and ("ids" not in mark or memory_id in mark["ids"]):
            return bool(mark["action"] == "add")
    return every


def expected_summaries(sessions: Mapping[str, LoggedSession]) -> set[tuple[object, ...]]:
    """Each summary: session, offset, status, scope, range, request id and text (None: none)."""
    expected: set[tuple[object, ...]] = set()
    for key, session in sessions.items():
        statuses = classify_session(session.records)
        for record in session.records:
            event = record.envelope.event
            compaction = event.actions.compaction
            if compaction is None:
                continue
            text = memory_text(compaction.compacted_content) or None
            status = str(statuses[record.offset])
            start, end = compaction.start_timestamp, compaction.end_timestamp
            request = summary_request_id(event)
            scope = event.isolation_scope
            expected.add((key, record.offset, status, scope, start, end, request, text))
    return expected


async def fetch(conn: Connection, schema: str, query: str) -> list[tuple[object, ...]]:
    """The rows of `query`, whose ``{}`` is the schema (``search_path`` is not relied on)."""
    cursor = await conn.execute(sql.SQL(query).format(sql.Identifier(schema)))
    return list(await cursor.fetchall())


async def stored_statuses(conn: Connection, schema: str) -> dict[Place, str]:
    """(partition, offset) -> status of every row."""
    rows = await fetch(conn, schema, 'SELECT partition, "offset", status FROM {}.event_rows')
    return {(int(str(p)), int(str(o))): str(s) for p, o, s in rows}


async def stored_live(conn: Connection, schema: str) -> dict[str, list[int]]:
    """Per session, the offsets the ``live_history`` view holds, in offset order."""
    rows = await fetch(
        conn, schema, 'SELECT session_key, "offset" FROM {}.live_history ORDER BY 1, 2'
    )
    live: dict[str, list[int]] = {}
    for key, offset in rows:
        live.setdefault(str(key), []).append(int(str(offset)))
    return live


async def stored_memories(conn: Connection, schema: str) -> set[Place]:
    """(partition, offset) of every memory's source row."""
    rows = await fetch(conn, schema, 'SELECT partition, "offset" FROM {}.memories')
    return {(int(str(p)), int(str(o))) for p, o in rows}


#: A key of the ``state`` view: (scope, tenant, app, user or None, session or None, key).
StatePlace = tuple[str, str, str, str | None, str | None, str]


def expected_state(sessions: Mapping[str, LoggedSession]) -> dict[StatePlace, object]:
    """Each scope's state: per session the projector's fold's, shared keys by latest write.

    A shared (``app:``, ``user:``) key takes the value of the session whose last applied
    write of it is latest by (timestamp, partition, offset), as the README states; in a
    session, the last (highest offset) of its incarnations' writes, a deleted incarnation's
    as the fold held them just before its deletion (ADK's delete_session keeps app and user
    state). Session scope: the current incarnation's only.
    """
    latest: dict[StatePlace, tuple[tuple[float, int, int], object]] = {}
    for key, session in sessions.items():
        statuses = classify_session(session.records)
        ends = [
            n
            for n, record in enumerate(session.records)
            if statuses[record.offset] is EventStatus.DELETION
        ]
        own: dict[StatePlace, tuple[tuple[float, int, int], object]] = {}
        for end in (*ends, len(session.records)):
            records = session.records[:end]
            current = end == len(session.records)
            for place, (record, value) in _incarnation_state(key, records, current).items():
                order = (record.envelope.event.timestamp, session.partition, int(record.offset))
                if place not in own or own[place][0][2] < order[2]:
                    own[place] = (order, value)
        for place, (order, value) in own.items():
            if place not in latest or latest[place][0] < order:
                latest[place] = (order, value)
    return {place: value for place, (_, value) in latest.items()}


def _incarnation_state(
    key: str, records: list[LoggedEvent], current: bool
) -> dict[StatePlace, tuple[LoggedEvent, object]]:
    """The state the fold holds after `records` (app and user; session too when `current`).

    Each place with its value and the applied record that last wrote its key.
    """
    parsed = parse_session_key(key)
    state = project(SessionKey(key), records).state
    statuses = classify_session(records)
    writer: dict[str, LoggedEvent] = {}
    for record in records:
        if statuses[record.offset] in APPLIED | {EventStatus.CREATION}:
            for name in record.envelope.event.actions.state_delta or {}:
                writer[name] = record
    scopes = [("app", state.app, "app:"), ("user", state.user, "user:")]
    if current:
        scopes.append(("session", state.session, ""))
    found: dict[StatePlace, tuple[LoggedEvent, object]] = {}
    for scope, values, prefix in scopes:
        for name, value in values.items():
            place: StatePlace = (
                scope,
                parsed.tenant,
                parsed.app,
                None if scope == "app" else parsed.user,
                key if scope == "session" else None,
                name,
            )
            found[place] = (writer[prefix + name], value)
    return found


async def stored_state(conn: Connection, schema: str) -> dict[StatePlace, object]:
    """The ``state`` view: place -> value."""
    rows = await fetch(
        conn, schema, "SELECT scope, tenant, app, user_id, session_key, key, value FROM {}.state"
    )
    return {
        (
            str(s),
            str(t),
            str(a),
            None if u is None else str(u),
            None if k is None else str(k),
            str(n),
        ): v
        for s, t, a, u, k, n, v in rows
    }
