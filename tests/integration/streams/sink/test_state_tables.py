"""The ``state`` view read from the tables the sink keeps (migration 12) is the old view's.

Generated sessions of two apps and three users (tests/support/strategies.py's seeded ones,
with creation records carrying initial state, conditional records some of which are stale,
deletions and re-creations, rewinds, summaries masking, ``temp:`` keys, timestamps that tie
and go back), interleaved, are written in batches cut at several sizes; after every batch the
view must equal :data:`~tests.integration.streams.sink.state_oracle.OLD_STATE` (the view of
migrations 5 and 11, written out) over the same rows, every column; at the end, the fold's
state (``expected_state``). Then through the real broker, on three partitions, with two sinks
of one schema sharing them: the view equals the old one whenever they have caught up.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import pairwise

import pytest

from projections.history.classification import classify_session
from projections.history.event_status import EventStatus
from schemas.codec import encode
from schemas.logged_event import LoggedEvent
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from tests.integration.streams.sink.read_model_oracle import (
    LoggedSession,
    expected_state,
    logged_sessions,
    stored_state,
)
from tests.integration.streams.sink.sink_load import (
    Record,
    produce,
    running_sink,
    sink_settings,
    wait_caught_up,
)
from tests.integration.streams.sink.state_oracle import StateRow, old_state, state_view
from tests.integration.streams.sink.test_conditional_rows import conditional_log, load
from tests.support.kafka import create_topics_for

APPS = ("shop", "desk")
SESSIONS = 16
#: What every generated log must hold, so each rule of the view is exercised.
FEATURES = frozenset(
    {
        "live",
        "masked",
        "rewound",
        "rewind",
        "stale",
        "creation",
        "deleted",
        "deletion",
        "initial state",
        "re-created",
        "temp: key",
        "timestamp back",
        "shared key of several sessions",
    }
)


def state_log(seed: int) -> dict[str, list[LoggedEvent]]:
    """Sessions of :data:`APPS` and three users, interleaved at offsets 0.. of one partition."""
    return conditional_log(seed, count=SESSIONS, apps=APPS)


def in_log_order(sessions: Mapping[str, list[LoggedEvent]]) -> list[LoggedEvent]:
    return sorted((r for rs in sessions.values() for r in rs), key=lambda r: r.offset)


def log_features(sessions: Mapping[str, list[LoggedEvent]]) -> set[str]:
    """The statuses the full classification gives, and the shapes of :data:`FEATURES`."""
    found: set[str] = set()
    writers: dict[tuple[str, str, str], set[str]] = {}
    for key, records in sessions.items():
        statuses = classify_session(records)
        found |= {str(status) for status in statuses.values()}
        stamps = [r.envelope.event.timestamp for r in records]
        if any(later < earlier for earlier, later in pairwise(stamps)):
            found.add("timestamp back")
        order = [statuses[r.offset] for r in records]
        ended = order.index(EventStatus.DELETION) if EventStatus.DELETION in order else len(order)
        if EventStatus.CREATION in order[ended + 1 :]:
            found.add("re-created")
        for record in records:
            delta = record.envelope.event.actions.state_delta or {}
            if statuses[record.offset] is EventStatus.CREATION and delta:
                found.add("initial state")
            if any(name.startswith("temp:") for name in delta):
                found.add("temp: key")
            app, user = key.split("/")[1:3]
            for name in delta:
                if name.startswith("app:"):
                    writers.setdefault((app, "", name), set()).add(key)
                elif name.startswith("user:"):
                    writers.setdefault((app, user, name), set()).add(key)
    if any(len(keys) > 1 for keys in writers.values()):
        found.add("shared key of several sessions")
    return found


@pytest.mark.parametrize(("seed", "cut"), [(41, 1), (42, 3), (43, 11), (44, 60)])
async def test_the_view_is_the_old_views_after_every_batch(
    conn: Connection, schema: str, seed: int, cut: int
) -> None:
    sessions = state_log(seed)
    assert log_features(sessions) >= FEATURES
    await migrate(conn, schema)
    seen: list[list[StateRow]] = []

    async def same_as_the_old_view() -> None:
        old = await old_state(conn, schema)
        assert await state_view(conn, schema) == old, f"after batch {len(seen) + 1}"
        seen.append(old)

    await load(conn, schema, in_log_order(sessions), cut, same_as_the_old_view)

    assert {row[0] for row in seen[-1]} == {"app", "user", "session"}
    # A shared key's value moved from one session to another as the batches went by.
    winners: dict[tuple[object, ...], set[object]] = {}
    for rows in seen:
        for row in rows:
            if row[0] != "session":
                winners.setdefault(row[:6], set()).add(row[7])
    assert any(len(by) > 1 for by in winners.values())
    logged = {key: LoggedSession(key, 0, records) for key, records in sessions.items()}
    assert await stored_state(conn, schema) == expected_state(logged)


def transactions(records: list[Record], size: int) -> list[tuple[list[Record], bool]]:
    return [(records[n : n + size], True) for n in range(0, len(records), size)]


async def test_two_sinks_of_one_schema_keep_the_old_views_state_through_the_broker(
    conn: Connection,
    schema: str,
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> None:
    partitions = 3
    await create_topics_for(kafka_bootstrap, topic, events_partitions=partitions, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, schema, partitions)
    settings = settings.model_copy(update={"sink_batch_records": 13, "sink_cache_sessions": 3})
    await migrate(conn, schema)
    events = settings.topic("events")
    records: list[Record] = [
        (r.envelope.session_key.encode(), encode(r.envelope))
        for r in in_log_order(state_log(seed=45))
    ]
    third = len(records) // 3 + 1
    async with running_sink(settings), running_sink(settings):
        for start in range(0, len(records), third):
            await produce(kafka_bootstrap, events, transactions(records[start : start + third], 25))
            await wait_caught_up(conn, schema, kafka_bootstrap, events)
            assert await state_view(conn, schema) == await old_state(conn, schema), start
    logged = await logged_sessions(kafka_bootstrap, events)
    assert len({session.partition for session in logged.values()}) == partitions
    expected = expected_state(logged)
    assert {place[0] for place in expected} == {"app", "user", "session"}
    assert await stored_state(conn, schema) == expected
