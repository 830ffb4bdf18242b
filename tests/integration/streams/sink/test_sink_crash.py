"""The sink killed at random points, and two sinks with a forced rebalance: equal to a clean load.

Both run ``python -m ctxstream sink`` as child processes while a load of a few thousand events
(some in aborted transactions, some with NUL, some undecodable, summaries and rewinds among
them) is produced; the tables must end equal to the log's committed decodable records, with
the statuses and memories the pure core gives them, and, per session, to one clean run.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from streams.sink.database import Connection
from streams.sink.migrate import migrate
from streams.sink.settings import SinkSettings
from tests.integration.streams.sink.read_model_oracle import (
    expected_memories,
    expected_statuses,
    logged_sessions,
    stored_memories,
    stored_statuses,
)
from tests.integration.streams.sink.sink_load import (
    clean_load,
    expected_rows,
    produce,
    row_count,
    rows_by_offset,
    session_checksums,
    sink_settings,
    start_sink_process,
    stop_sink_process,
    wait_caught_up,
    wait_logged,
    wait_rows,
    workload,
)
from tests.support.kafka import create_topics_for

SESSIONS = 12
EVENTS = 3_000
PARTITIONS = 4


@pytest.fixture
async def sinks(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
) -> tuple[SinkSettings, SinkSettings]:
    """A fresh deployment's topics, and the settings of a tested and a clean sink, migrated."""
    prefix = topic
    await create_topics_for(kafka_bootstrap, prefix, events_partitions=PARTITIONS, partitions=1)
    tested = sink_settings(kafka_bootstrap, prefix, postgres_dsn, make_schema(), PARTITIONS)
    clean = tested.model_copy(update={"sink_schema": make_schema()})
    for each in (tested, clean):
        await migrate(conn, each.sink_schema)
    return tested, clean


async def assert_equal_to_the_log_and_a_clean_load(
    conn: Connection, tested: SinkSettings, clean: SinkSettings
) -> None:
    events = tested.topic("events")
    expected = await expected_rows(tested.kafka_bootstrap, events)
    assert await rows_by_offset(conn, tested.sink_schema) == expected
    clean_sums = await clean_load(conn, clean)
    assert len(clean_sums) == SESSIONS
    assert sum(count for count, _ in clean_sums.values()) == len(expected)
    assert await session_checksums(conn, tested.sink_schema) == clean_sums
    sessions = await logged_sessions(tested.kafka_bootstrap, events)
    assert await stored_statuses(conn, tested.sink_schema) == expected_statuses(sessions)
    memories = expected_memories(sessions, {"app"})
    assert len(memories) > 100
    assert await stored_memories(conn, tested.sink_schema) == memories


async def test_kill_9_at_random_points_ends_equal_to_a_clean_load(
    conn: Connection, sinks: tuple[SinkSettings, SinkSettings], tmp_path: Path
) -> None:
    tested, clean = sinks
    kafka_bootstrap = tested.kafka_bootstrap
    events, schema, log = tested.topic("events"), tested.sink_schema, tmp_path / "sink.log"
    rng = random.Random(24)  # noqa: S311 - reproducible kill points, no secret
    load = asyncio.create_task(
        produce(kafka_bootstrap, events, workload(SESSIONS, EVENTS, seed=24), pause_s=0.1)
    )
    kills_during_load = 0
    for _ in range(3):
        process = start_sink_process(tested, log)
        target = await row_count(conn, schema) + rng.randint(50, 400)
        await wait_rows(conn, schema, target, load=load, process=process)
        await asyncio.sleep(rng.uniform(0, 0.3))
        kills_during_load += not load.done()
        process.kill()  # SIGKILL: no cleanup, a transaction may be half done
        process.wait(timeout=60)
    await load
    assigned = log.read_text().count("sink assigned")
    process = start_sink_process(tested, log)
    # Assigned before it is stopped, even when the killed runs already wrote everything.
    await wait_logged(log, "sink assigned", process=process, times=assigned + 1)
    await wait_caught_up(conn, schema, kafka_bootstrap, events)
    assert stop_sink_process(process) == 0

    assert kills_during_load >= 1
    assert log.read_text().count("sink assigned") >= 4  # every run owned partitions
    await assert_equal_to_the_log_and_a_clean_load(conn, tested, clean)


async def test_two_sinks_with_a_forced_rebalance_end_equal_to_a_clean_load(
    conn: Connection, sinks: tuple[SinkSettings, SinkSettings], tmp_path: Path
) -> None:
    tested, clean = sinks
    kafka_bootstrap = tested.kafka_bootstrap
    events, schema = tested.topic("events"), tested.sink_schema
    load = asyncio.create_task(
        produce(kafka_bootstrap, events, workload(SESSIONS, EVENTS, seed=7), pause_s=0.1)
    )
    first = start_sink_process(tested, tmp_path / "first.log")
    await wait_rows(conn, schema, 300, load=load, process=first)
    second = start_sink_process(tested, tmp_path / "second.log")  # joins: a rebalance
    # Both own partitions after the rebalance (the first's second assignment), then both write.
    await wait_logged(tmp_path / "second.log", "sink assigned", process=second)
    await wait_logged(tmp_path / "first.log", "sink assigned", process=first, times=2)
    await wait_rows(conn, schema, await row_count(conn, schema) + 300, load=load, process=second)
    assert stop_sink_process(first) == 0  # leaves: another rebalance
    await wait_logged(tmp_path / "second.log", "sink assigned", process=second, times=2)
    await load
    await wait_caught_up(conn, schema, kafka_bootstrap, events)
    assert stop_sink_process(second) == 0

    first_log = (tmp_path / "first.log").read_text()
    second_log = (tmp_path / "second.log").read_text()
    assert first_log.count("sink assigned") >= 2  # it shared the partitions
    assert second_log.count("sink assigned") >= 2  # it took them all once the first left
    await assert_equal_to_the_log_and_a_clean_load(conn, tested, clean)
