"""Stale and creation rows, ``session_index.writer_offset`` and state, against real PostgreSQL.

Generated sessions (tests/support/strategies.py's seeded ones) get creation records (always
expecting ``-1``, often right after a deletion) and conditional records (the right writer
offset, ``-1`` or a stale one, chosen by the separately written
tests/support/conditions_oracle.py), interleaved at offsets 0.. of one partition, and are
written in batches cut at several sizes. Every row's status must be the full classification's,
``session_index`` must hold the fold's writer offset, say what the records say of creation
and deletion, and equal the ``sessions`` view; the ``state`` view must count creation rows.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence

from psycopg import sql

from projections.fold.projection import project
from projections.history.classification import classify_session
from projections.history.event_status import EventStatus
from schemas.codec import encode
from schemas.creation_mark import creation_event, is_creation
from schemas.deletion_mark import is_deletion
from schemas.event import Event
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from streams.batch.records import SourceRecord
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from tests.integration.streams.sink.read_model_oracle import (
    LoggedSession,
    expected_state,
    fetch,
    stored_state,
    stored_statuses,
)
from tests.integration.streams.sink.sink_load import write_in_batches
from tests.integration.streams.sink.test_session_index import table
from tests.support.conditional_records import conditional_envelope, expected_offset_for
from tests.support.conditions_oracle import WriterOracle
from tests.support.events import tenant_of
from tests.support.strategies import seeded_session

TOPIC = "conditional.events"
SESSIONS = 12
INDEXED = ("created", "last_offset", "deleted")


def with_creations(events: list[Event], rng: random.Random) -> list[Event]:
    """`events` with creation records: first, after most deletions, and now and then."""
    out: list[Event] = []
    for number, event in enumerate([None, *events]):
        if event is not None:
            out.append(event)
        after_deletion = event is None or is_deletion(event)
        if rng.random() < (0.7 if after_deletion else 0.05):
            state = {"topic": f"t{number}", "app:shared": number}
            out.append(creation_event(event_id=f"c{number}", timestamp=0.5, state=state))
    return out


def conditional_log(
    seed: int, count: int = SESSIONS, apps: Sequence[str] = ("cond",)
) -> dict[str, list[LoggedEvent]]:
    """Each session's records, interleaved at offsets 0.. of one partition.

    `count` sessions, of `apps` and three users in turn.
    """
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, no secret
    queues = {}
    for number in range(count):
        key = SessionKey(f"acme/{apps[number % len(apps)]}/u{number % 3}/s{number}")
        events = [r.envelope.event for r in seeded_session(seed * 100 + number)]
        queues[key] = list(reversed(with_creations(events, rng)))
    oracles = {key: WriterOracle() for key in queues}
    sessions: dict[str, list[LoggedEvent]] = {key: [] for key in queues}
    offset = 0
    while queues:
        key = rng.choice(sorted(queues))
        event = queues[key].pop()
        if not queues[key]:
            del queues[key]
        earlier = [int(record.offset) for record in sessions[key]]
        expected = -1 if is_creation(event) else expected_offset_for(rng, oracles[key], earlier)
        envelope = conditional_envelope(key, event, expected, f"{key}/{offset}")
        record = LoggedEvent(Offset(offset), envelope)
        oracles[key].feed(record)
        sessions[key].append(record)
        offset += 1
    return sessions


async def load(
    conn: Connection,
    schema: str,
    records: list[LoggedEvent],
    cut: int,
    after_each: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Write `records` (offsets 0.., or on from where the schema is) to partition 0 in batches
    of `cut` records; `after_each` runs after each batch."""
    source = [
        SourceRecord(TOPIC, 0, r.offset, r.envelope.session_key.encode(), encode(r.envelope))
        for r in records
    ]
    await write_in_batches(conn, schema, source, cut, after_each)


def expected_index(records: list[LoggedEvent]) -> tuple[object, ...]:
    """created, last offset, deleted and writer offset of one session, read off its records.

    Stale and memory records neither start nor end an incarnation; a session of stale records
    only was never created (deleted). The writer offset is the projector's fold's.
    """
    statuses = classify_session(records)
    bystanders = {EventStatus.STALE, EventStatus.MEMORY}
    marking = [r for r in records if statuses[r.offset] not in bystanders]
    deletions = (n for n, r in enumerate(records) if statuses[r.offset] is EventStatus.DELETION)
    since = max((n + 1 for n in deletions), default=0)
    alive = [r for r in records[since:] if statuses[r.offset] not in bystanders]
    if marking:
        deleted = is_deletion(marking[-1].envelope.event)
    else:
        deleted = any(statuses[r.offset] is EventStatus.STALE for r in records)
    created = alive[0].envelope.event.timestamp if alive and not deleted else None
    key = records[0].envelope.session_key
    writer = project(key, records).conditions.writer_offset
    return (created, records[-1].offset, deleted, writer)


async def test_rows_index_and_state_say_what_the_fold_says_however_the_log_is_cut(
    conn: Connection, make_schema: Callable[[], str]
) -> None:
    sessions = conditional_log(seed=25)
    records = sorted((r for rs in sessions.values() for r in rs), key=lambda r: r.offset)
    expected_statuses = {
        (0, int(offset)): str(status)
        for rs in sessions.values()
        for offset, status in classify_session(rs).items()
    }
    counts = {status: list(expected_statuses.values()).count(status) for status in EventStatus}
    assert counts[EventStatus.STALE] > 10
    assert counts[EventStatus.CREATION] > 5
    assert counts[EventStatus.DELETED] > 0
    expected = {key: expected_index(rs) for key, rs in sessions.items()}
    assert any(values[2] for values in expected.values())  # a session ends deleted
    assert len({values[3] for values in expected.values()}) > 5
    logged = {key: LoggedSession(key, 0, rs) for key, rs in sessions.items()}
    for cut in (1, 7, 40, len(records)):
        schema = make_schema()
        await migrate(conn, schema)
        await load(conn, schema, records, cut)
        assert await stored_statuses(conn, schema) == expected_statuses, cut
        index = await fetch(
            conn,
            schema,
            "SELECT session_key, created, last_offset, deleted, writer_offset FROM {}"
            ".session_index",
        )
        assert {str(row[0]): tuple(row[1:]) for row in index} == expected, cut
        view = await table(conn, schema, "sessions", INDEXED)
        assert view == {key: values[:3] for key, values in expected.items()}, cut
        assert await stored_state(conn, schema) == expected_state(logged), cut


async def test_the_migration_gives_stored_sessions_the_writer_offset_of_their_rows(
    conn: Connection, schema: str
) -> None:
    # Rows written before 0009 hold no conditional record: every session's writer offset
    # follows from its rows' statuses (pipeline summaries, refusals, deletions do not write).
    sessions: dict[str, list[LoggedEvent]] = {}
    records: list[LoggedEvent] = []
    for number in range(8):
        key = SessionKey(f"acme/old/u{number % 2}/s{number}")
        for record in seeded_session(700 + number):
            logged = LoggedEvent(
                Offset(len(records)),
                record.envelope.model_copy(update={"session_key": key, "tenant": tenant_of(key)}),
            )
            records.append(logged)
            sessions.setdefault(key, []).append(logged)
    await migrate(conn, schema)
    await load(conn, schema, records, 9)
    for statement in (
        "ALTER TABLE {}.session_index DROP COLUMN writer_offset",
        "ALTER TABLE {}.event_rows DROP COLUMN expected_offset",
        "DELETE FROM {}.schema_migrations WHERE version = 9",
    ):
        await conn.execute(sql.SQL(statement).format(sql.Identifier(schema)))
    assert [m.version for m in await migrate(conn, schema)] == [9]
    rows = await fetch(conn, schema, "SELECT session_key, writer_offset FROM {}.session_index")
    expected = {
        key: project(SessionKey(key), rs).conditions.writer_offset for key, rs in sessions.items()
    }
    assert {str(key): writer for key, writer in rows} == expected
    assert len(set(expected.values())) == len(expected)
