"""A tombstone (a record with no value) on `events` is dead-lettered by the sink, which goes on.

Anyone who reaches the broker can write one. The sink handed its ``None`` value to
the dead-letter builder, whose ``len(None)`` raised: the sink stopped on the
record, and again at every restart, since its offset never moved past it.
"""

from __future__ import annotations

from schemas.codec import decode_dead_letter
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from tests.integration.streams.sink.sink_load import (
    expected_rows,
    rows_by_offset,
    running_sink,
    session_event,
    sink_settings,
    wait_caught_up,
)
from tests.support.kafka import append, create_topics_for, read_all


async def test_a_tombstone_is_dead_lettered_and_the_records_after_it_stored(
    conn: Connection, schema: str, postgres_dsn: str, kafka_bootstrap: str, topic: str
) -> None:
    await create_topics_for(kafka_bootstrap, topic, events_partitions=1, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, schema, partitions=1)
    events = settings.topic("events")
    await migrate(conn, schema)
    tombstone = (b"acme/app/u1/s1", None)
    await append(kafka_bootstrap, events, [session_event(1, 1), tombstone, session_event(1, 2)])

    async with running_sink(settings):  # raises when the sink failed
        await wait_caught_up(conn, schema, kafka_bootstrap, events)

    expected = await expected_rows(kafka_bootstrap, events)
    assert sorted(expected) == [(0, 0), (0, 2)]
    assert await rows_by_offset(conn, schema) == expected
    (letter,) = [
        decode_dead_letter(r.value)
        for r in await read_all(kafka_bootstrap, settings.topic("dead-letters"))
    ]
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == (events, 0, 1)
    assert (letter.stage, letter.original_value, letter.original_size) == ("decode", b"", 0)
    assert "no value" in letter.reason, letter.reason
