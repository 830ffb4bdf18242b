"""The sink end to end on the real broker and PostgreSQL: committed records only, NUL kept."""

from __future__ import annotations

import orjson
from psycopg import sql

from schemas.codec import decode_dead_letter
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from tests.integration.streams.sink.sink_load import (
    expected_rows,
    produce,
    rows_by_offset,
    running_sink,
    session_event,
    sink_settings,
    wait_caught_up,
)
from tests.support.kafka import create_topics_for, read_all


async def test_rows_are_the_committed_decodable_events_and_offsets_the_log_ends(
    conn: Connection, schema: str, postgres_dsn: str, kafka_bootstrap: str, topic: str
) -> None:
    await create_topics_for(kafka_bootstrap, topic, events_partitions=3, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, schema, partitions=3)
    events = settings.topic("events")
    await migrate(conn, schema)
    nul_key, nul_value = session_event(1, 100, "before \x00 after")
    bad = (b"acme/app/u1/s1", b'{"schema_version": 2, "tenant"')
    await produce(
        kafka_bootstrap,
        events,
        [
            ([session_event(s, n) for s in range(4) for n in range(3)], True),
            ([session_event(s, 50) for s in range(4)], False),
            ([(nul_key, nul_value), bad, session_event(2, 101)], True),
            ([session_event(3, 60)], False),
            ([session_event(0, 102)], True),
        ],
    )

    async with running_sink(settings):
        ends = await wait_caught_up(conn, schema, kafka_bootstrap, events)

    expected = await expected_rows(kafka_bootstrap, events)
    assert len(expected) == 4 * 3 + 3
    assert await rows_by_offset(conn, schema) == expected
    assert sum(ends.values()) > len(expected) + 1  # markers and aborted records: gaps
    cursor = await conn.execute(
        sql.SQL("SELECT raw, lossy, event FROM {} WHERE event_id = 's1-e100'").format(
            sql.Identifier(schema, "event_rows")
        )
    )
    assert await cursor.fetchall() == [
        (
            nul_value,
            True,
            orjson.loads(nul_value.decode().replace("\\u0000", "\ufffd"))["event"],
        )
    ]
    cursor = await conn.execute(
        sql.SQL("SELECT count(*) FROM {} WHERE lossy OR raw IS NOT NULL").format(
            sql.Identifier(schema, "event_rows")
        )
    )
    assert await cursor.fetchone() == (1,)
    letters = [
        decode_dead_letter(r.value)
        for r in await read_all(kafka_bootstrap, settings.topic("dead-letters"))
    ]
    bad_at = {
        (r.partition, r.offset)
        for r in await read_all(kafka_bootstrap, events)
        if r.value == bad[1]
    }
    assert [(d.source_topic, d.source_partition, d.source_offset) for d in letters] == [
        (events, p, o) for p, o in bad_at
    ]
    assert letters[0].stage == "decode"
    assert "JSON" in letters[0].reason
    assert letters[0].original_value == bad[1]
