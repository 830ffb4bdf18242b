"""Issue #24's test: a replay into a new schema and switches while readers loop: no query fails.

The live schema A keeps being written by its sink while the log grows; B is rebuilt from 0
by the command, then kept live by its own sink; the stable views switch to B, back to A and
to B again, while four connections query every stable view. The oracle for the rows is the
log itself and, for A against B, a checksum per session computed on each base table.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from aiokafka import AIOKafkaProducer
from psycopg import sql

from ctxstream.memory.store import MemoryStore
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from streams.sink.replay.switch import stable_target
from tests.integration.streams.sink.replay_commands import ctxstream
from tests.integration.streams.sink.sink_load import (
    expected_rows,
    produce,
    rows_by_offset,
    session_checksums,
    session_event,
    sink_settings,
    start_sink_process,
    stop_sink_process,
    wait_caught_up,
    workload,
)
from tests.integration.streams.sink.stable_readers import Seen, read_loop
from tests.support.kafka import create_topics_for

READERS = 4


@contextlib.asynccontextmanager
async def growing_log(bootstrap: str, topic: str) -> AsyncIterator[None]:
    """Transactions of two records every 20 ms until the block ends (then the last commits)."""
    stop = asyncio.Event()

    async def grow() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=f"test-grow-{uuid.uuid4().hex}"
        )
        await producer.start()
        try:
            number = 5_000
            while not stop.is_set():
                async with producer.transaction():
                    for session in (number % 7, number % 11):
                        key, value = session_event(session, number)
                        await producer.send(topic, value, key=key)
                        number += 1
                await asyncio.sleep(0.02)
        finally:
            await producer.stop()

    task = asyncio.create_task(grow())
    try:
        yield
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)


@contextlib.asynccontextmanager
async def readers(dsn: str, stable: str, views: list[str]) -> AsyncIterator[Seen]:
    """`READERS` connections querying `stable`'s views until the block ends."""
    seen, stop = Seen(), asyncio.Event()
    tasks = [asyncio.create_task(read_loop(dsn, stable, views, seen, stop)) for _ in range(READERS)]
    try:
        yield seen
    finally:
        stop.set()
        await asyncio.gather(*tasks)


async def per_session(conn: Connection, schema: str, view: str) -> dict[str, tuple[int, str]]:
    """Per session of `schema`.`view`: its rows and an md5 over all their columns in order."""
    cursor = await conn.execute(
        sql.SQL(
            "SELECT session_key, count(*), md5(string_agg(v::text, ',' ORDER BY v::text))"
            " FROM {} AS v GROUP BY session_key"
        ).format(sql.Identifier(schema, view))
    )
    return {str(k): (int(n), str(h)) for k, n, h in await cursor.fetchall()}


async def whole(conn: Connection, schema: str, view: str) -> tuple[int, str] | None:
    """`schema`.`view`'s rows and an md5 over all their columns."""
    cursor = await conn.execute(
        sql.SQL(
            "SELECT count(*), md5(string_agg(v::text, ',' ORDER BY v::text)) FROM {} AS v"
        ).format(sql.Identifier(schema, view))
    )
    row = await cursor.fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


async def relations(conn: Connection, schema: str) -> set[str]:
    """The tables and views of `schema`, from the catalog."""
    cursor = await conn.execute(
        "SELECT c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'v')",
        (schema,),
    )
    return {str(row[0]) for row in await cursor.fetchall()}


async def test_a_replay_and_switches_under_reading_loops_fail_no_query(
    conn: Connection,
    make_schema: Callable[[], str],
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
    tmp_path: Path,
) -> None:
    await create_topics_for(kafka_bootstrap, topic, events_partitions=3, partitions=1)
    live, rebuilt, stable = make_schema(), make_schema(), make_schema()
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, live, partitions=3)
    events = settings.topic("events")
    await migrate(conn, live)
    await produce(kafka_bootstrap, events, workload(sessions=12, events=1_200, seed=24))

    # Each schema's sink is a process of its own, as in a deployment: a sink sharing this test's
    # event loop with the readers and the producer would lag the other for want of CPU alone.
    live_sink = start_sink_process(settings, tmp_path / "live-sink.log")
    try:
        await wait_caught_up(conn, live, kafka_bootstrap, events)
        first = await ctxstream(settings, "db", "switch", live, "--stable", stable)
        assert first.returncode == 0, first.stderr
        views = await relations(conn, stable) - {"stable_target"}
        assert views == await relations(conn, live) - {"schema_migrations", "sink_offsets"}
        assert views >= {"sessions", "events", "summaries", "state", "live_history"}
        assert "consistent_as_of" in views
        async with readers(postgres_dsn, stable, sorted(views)) as seen:
            async with growing_log(kafka_bootstrap, events):
                replay = await ctxstream(
                    settings, "sink", "--into", rebuilt, "--from-offset", "0", "--until-caught-up"
                )
                assert replay.returncode == 0, replay.stderr
                rebuilt_sink = start_sink_process(
                    settings.model_copy(update={"sink_schema": rebuilt}), tmp_path / "sink.log"
                )
                try:
                    switches = []
                    for target in (rebuilt, live, rebuilt):
                        switches.append(
                            await ctxstream(
                                settings, "db", "switch", target, "--stable", stable, "--wait", "60"
                            )
                        )
                        await asyncio.sleep(0.5)
                except BaseException:
                    stop_sink_process(rebuilt_sink)
                    raise
            await wait_caught_up(conn, live, kafka_bootstrap, events)
            await wait_caught_up(conn, rebuilt, kafka_bootstrap, events)
            await asyncio.sleep(0.5)
    finally:
        live_stopped = stop_sink_process(live_sink)
    assert live_stopped == 0
    assert stop_sink_process(rebuilt_sink) == 0

    assert [(s.returncode, s.stderr) for s in switches] == [(0, "")] * 3
    assert seen.failures == []
    assert seen.backwards == []
    assert len(seen.queries) > 1_000
    assert all(seen.between(s.started, s.ended) > 0 for s in switches)
    assert set(seen.targets) == {live, rebuilt}
    assert seen.targets[-1] == rebuilt

    # The two read models are equal, and equal to the log (the oracle).
    assert await rows_by_offset(conn, rebuilt) == await expected_rows(kafka_bootstrap, events)
    assert await session_checksums(conn, rebuilt) == await session_checksums(conn, live)
    # The stable views read B: they still answer, equal to B's, once A is gone.
    await conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(live)))
    for view in ("events", "live_history", "summaries", "sessions"):
        assert await per_session(conn, stable, view) == await per_session(conn, rebuilt, view)
    for view in ("state", "consistent_as_of"):
        assert await whole(conn, stable, view) == await whole(conn, rebuilt, view)
    recorded = await stable_target(conn, stable)
    assert recorded is not None
    assert recorded.target == rebuilt
    status = await ctxstream(settings, "db", "status", "--stable", stable)
    ends = await wait_caught_up(conn, rebuilt, kafka_bootstrap, events)
    assert status.stdout.splitlines() == [
        f"stable schema {stable} reads {rebuilt} (migration version {recorded.version}) since "
        f"{recorded.switched_at.isoformat()}",
        *(f"  partition {p}: consistent as of {n}" for p, n in sorted(ends.items())),
    ]
    # A memory search reads through the stable views as it reads the target.
    async with (
        MemoryStore.connect(postgres_dsn, schema=stable) as through,
        MemoryStore.connect(postgres_dsn, schema=rebuilt) as direct,
    ):
        for user in ("u0", "u1", "u2"):
            found = await through.search("acme", "app", user, "the text of 120", limit=5)
            assert found
            assert found == await direct.search("acme", "app", user, "the text of 120", limit=5)
