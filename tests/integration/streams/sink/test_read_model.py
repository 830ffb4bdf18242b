"""The sink's statuses, views and memories against the pure core, through the real broker.

Every recorded vector the repository carries (as tests/unit/projections/history turns them
into sessions) and generated sessions (rewinds, summaries, retries, chunks, refusals, scoped
events) are appended to a fresh `events` topic, interleaved; a sink with small batches and a
tiny cache (so states are rebuilt from rows) loads them. Each row's status must equal
``classify_session`` of its session read back from the log, ``live_history`` must equal
``live_history``, the ``sessions`` view the projector's fold, the memories the rule.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from ctxstream.appends.memory_record import memory_record
from projections.fold.projection import project
from projections.history.classification import classify_session
from projections.history.event_status import EventStatus
from schemas.codec import encode
from schemas.event import Event
from schemas.keys import SessionKey
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from streams.sink.settings import SinkSettings
from tests.integration.streams.sink.read_model_oracle import (
    LoggedSession,
    expected_live,
    expected_memories,
    expected_state,
    expected_statuses,
    expected_summaries,
    fetch,
    logged_sessions,
    stored_live,
    stored_memories,
    stored_state,
    stored_statuses,
)
from tests.integration.streams.sink.sink_load import (
    Record,
    produce,
    running_sink,
    sink_settings,
    wait_caught_up,
)
from tests.support.events import envelope
from tests.support.kafka import create_topics_for, end_offsets
from tests.support.strategies import seeded_session
from tests.unit.projections.history.test_history_vectors import VECTORS, _session_events

PARTITIONS = 2
#: A deleted incarnation's rows, the deletion records and memory records: no activity of the
#: current incarnation.
ENDED = frozenset({EventStatus.DELETED, EventStatus.DELETION, EventStatus.MEMORY})
GENERATED = 40


def session_records() -> dict[SessionKey, list[Record]]:
    """Each session's records in its order: the vectors' (app ``vec``), then generated ones
    (app ``mem``, whose memories the sink keeps, or ``gen``)."""
    sessions: dict[SessionKey, list[Record]] = {}
    for number, vector in enumerate(VECTORS):
        key = SessionKey(f"acme/vec/u{number % 5}/v{number}")
        sessions[key] = [(key.encode(), encode(envelope(key, e))) for e in _session_events(vector)]
    for seed in range(GENERATED):
        key = SessionKey(f"acme/{'mem' if seed % 2 else 'gen'}/u{seed % 3}/g{seed}")
        events = with_memory_records(key, [r.envelope.event for r in seeded_session(seed)], seed)
        sessions[key] = [(key.encode(), encode(envelope(key, event))) for event in events]
    return {key: records for key, records in sessions.items() if records}


def with_memory_records(key: SessionKey, events: list[Event], seed: int) -> list[Event]:
    """`events` with a memory record after every fourth: an add or a delete, of the whole
    session or of up to two ids of events before it (app ``gen`` is in explicit mode)."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible session, no secret
    marked: list[Event] = []
    for number, event in enumerate(events):
        marked.append(event)
        if number % 4 != 3:
            continue
        known = sorted({each.id for each in marked if each.id})
        ids = None if rng.random() < 0.5 else rng.sample(known, min(2, len(known))) or None
        action = "add" if rng.random() < 0.6 else "delete"
        stamp = event.timestamp
        marked.append(memory_record(key, action, ids, event_id=f"m{number}", timestamp=stamp))
    return marked


def interleaved(sessions: dict[SessionKey, list[Record]], seed: int) -> list[list[Record]]:
    """The records of every session, each session's in order, mixed, in transactions of 50."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible order, no secret
    queues = [list(reversed(records)) for records in sessions.values()]
    mixed: list[Record] = []
    while queues:
        queue = rng.choice(queues)
        mixed.append(queue.pop())
        if not queue:
            queues.remove(queue)
    return [mixed[i : i + 50] for i in range(0, len(mixed), 50)]


@pytest.fixture
async def loaded(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> tuple[SinkSettings, dict[str, LoggedSession]]:
    """A fresh topic with every session appended, sunk into a fresh schema; the log's sessions."""
    await create_topics_for(kafka_bootstrap, topic, events_partitions=PARTITIONS, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, make_schema(), PARTITIONS)
    settings = settings.model_copy(
        update={"sink_batch_records": 37, "sink_cache_sessions": 4, "memory_apps": "mem"}
    )
    await migrate(conn, settings.sink_schema)
    events = settings.topic("events")
    transactions = [(records, True) for records in interleaved(session_records(), seed=24)]
    await produce(kafka_bootstrap, events, transactions)
    async with running_sink(settings):
        await wait_caught_up(conn, settings.sink_schema, kafka_bootstrap, events)
    return settings, await logged_sessions(kafka_bootstrap, events)


async def test_every_row_has_the_status_and_live_history_the_core_gives(
    conn: Connection, loaded: tuple[SinkSettings, dict[str, LoggedSession]]
) -> None:
    settings, sessions = loaded
    expected = expected_statuses(sessions)
    assert len(sessions) > 150
    # Every status occurs but fork and those of conditional records (test_conditional_rows.py).
    absent = {EventStatus.FORK, EventStatus.STALE, EventStatus.CREATION}
    assert set(expected.values()) == {str(status) for status in EventStatus} - absent
    assert await stored_statuses(conn, settings.sink_schema) == expected
    assert await stored_live(conn, settings.sink_schema) == expected_live(sessions)


async def test_the_sessions_view_says_what_the_fold_says(
    conn: Connection, loaded: tuple[SinkSettings, dict[str, LoggedSession]]
) -> None:
    settings, sessions = loaded
    rows = await fetch(
        conn,
        settings.sink_schema,
        "SELECT session_key, last_offset, invocations, prompt_tokens, candidates_tokens,"
        " boundary_offset, boundary_end, created, deleted FROM {}.sessions",
    )
    found = {str(row[0]): row[1:] for row in rows}
    expected = {}
    statuses_of = {}
    for key, session in sessions.items():
        projection = project(SessionKey(key), session.records)
        statuses = statuses_of[key] = classify_session(session.records)
        current = [r for r in session.records if statuses[r.offset] not in ENDED]
        boundary = projection.summaries.boundary
        compaction = boundary.envelope.event.actions.compaction if boundary else None
        expected[key] = (
            session.records[-1].offset,
            projection.invocations.total,
            projection.tokens.total_prompt_tokens,
            projection.tokens.total_candidates_tokens,
            boundary.offset if boundary else None,
            compaction.end_timestamp if compaction else None,
            current[0].envelope.event.timestamp if current else None,
            not current,
        )
    assert found == expected
    assert sum(1 for values in expected.values() if values[4] is not None) > 20
    assert sum(1 for values in expected.values() if values[2]) > 20
    deletion = {EventStatus.DELETED, EventStatus.DELETION}
    ended = [key for key, session in sessions.items() if deletion & set(statuses_of[key].values())]
    assert len(ended) > 3  # sessions deleted, some appended to again
    assert any(expected[key][6] is not None for key in ended)


async def test_memories_are_the_kept_rows_of_the_apps_that_feed_memory(
    conn: Connection, loaded: tuple[SinkSettings, dict[str, LoggedSession]]
) -> None:
    settings, sessions = loaded
    expected = expected_memories(sessions, {"mem"})
    assert len(expected) > 50
    # Memory records decide: app gen is explicit, yet rows an add names have memories.
    gen_places = {
        (s.partition, r.offset) for s in sessions.values() if "/gen/" in s.key for r in s.records
    }
    assert expected & gen_places
    assert expected_memories(sessions, {"mem", "gen"}) - expected  # gen in mode all: more
    assert await stored_memories(conn, settings.sink_schema) == expected


async def test_the_state_view_is_each_scope_as_the_fold_merges_it(
    conn: Connection, loaded: tuple[SinkSettings, dict[str, LoggedSession]]
) -> None:
    settings, sessions = loaded
    expected = expected_state(sessions)
    assert {place[0] for place in expected} == {"app", "user", "session"}
    assert await stored_state(conn, settings.sink_schema) == expected


async def test_the_summaries_view_holds_each_summary_its_range_text_and_status(
    conn: Connection, loaded: tuple[SinkSettings, dict[str, LoggedSession]]
) -> None:
    expected = expected_summaries(loaded[1])
    assert len(expected) > 100
    assert {"live", "superseded", "duplicate_summary"} <= {row[2] for row in expected}
    query = (
        'SELECT session_key, "offset", status, isolation_scope, start_timestamp,'
        " end_timestamp, request_id, text FROM {}.summaries"
    )
    assert set(await fetch(conn, loaded[0].sink_schema, query)) == expected


async def test_consistent_as_of_is_where_the_sink_stands(
    conn: Connection, loaded: tuple[SinkSettings, dict[str, LoggedSession]]
) -> None:
    settings, _ = loaded
    events = settings.topic("events")
    rows = await fetch(conn, settings.sink_schema, "SELECT * FROM {}.consistent_as_of")
    ends = await end_offsets(settings.kafka_bootstrap, events)
    assert {(str(t), int(str(p)), int(str(n))) for t, p, n in rows} == {
        (events, p, end) for p, end in ends.items()
    }
