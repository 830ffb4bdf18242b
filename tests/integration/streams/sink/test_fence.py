"""The fenced batch transaction against the real PostgreSQL: one commit per range, ever."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import pytest
from psycopg import sql

from schemas.codec import encode
from schemas.keys import SessionKey
from streams.batch.records import SourceRecord
from streams.sink.database import Connection, connect
from streams.sink.errors import FenceError
from streams.sink.fence import Batch, copy_rows, lock_offsets, write_batch
from streams.sink.migrate import migrate
from streams.sink.rows import EventRow, event_row
from tests.support.events import envelope, text_event

TOPIC = "fence.events"
KEY = SessionKey("acme/app/u/s")


def rows(partition: int, offsets: range) -> list[EventRow]:
    made = []
    for offset in offsets:
        value = encode(envelope(KEY, text_event(f"e{offset}", "inv", float(offset), "x")))
        row = event_row(SourceRecord(TOPIC, partition, offset, KEY.encode(), value))
        assert isinstance(row, EventRow)
        made.append(replace(row, status="live"))  # the statuses are the step's: not tested here
    return made


async def stored(conn: Connection, schema: str) -> dict[int, int]:
    cursor = await conn.execute(
        sql.SQL("SELECT partition, next_offset FROM {} WHERE topic = %s").format(
            sql.Identifier(schema, "sink_offsets")
        ),
        (TOPIC,),
    )
    return {int(p): int(n) for p, n in await cursor.fetchall()}


async def row_offsets(conn: Connection, schema: str) -> list[tuple[int, int]]:
    cursor = await conn.execute(
        sql.SQL('SELECT partition, "offset" FROM {} ORDER BY 1, 2').format(
            sql.Identifier(schema, "event_rows")
        )
    )
    return [(int(p), int(o)) for p, o in await cursor.fetchall()]


async def waiting_on_a_lock(conn: Connection, pid: int) -> bool:
    cursor = await conn.execute(
        "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,)
    )
    row = await cursor.fetchone()
    return bool(row and row[0])


async def test_two_transactions_claiming_one_range_commit_once(
    conn: Connection, schema: str, postgres_dsn: str
) -> None:
    await migrate(conn, schema)
    first, second = await connect(postgres_dsn), await connect(postgres_dsn)
    try:
        async with first.transaction():
            assert await lock_offsets(first, schema, TOPIC, [0, 1]) == {0: 0, 1: 0}
            # The same range from another sink: it waits on the first's locks.
            claim = asyncio.create_task(
                write_batch(second, schema, Batch(TOPIC, {0: 0}, {0: 3}, rows(0, range(3))))
            )
            deadline = time.monotonic() + 30
            while not await waiting_on_a_lock(conn, second.info.backend_pid):
                assert time.monotonic() < deadline, "the second claim never waited on a lock"
                await asyncio.sleep(0.01)
            await copy_rows(first, schema, rows(0, range(4)))
            await first.execute(
                sql.SQL("UPDATE {} SET next_offset = 5 WHERE topic = %s").format(
                    sql.Identifier(schema, "sink_offsets")
                ),
                (TOPIC,),
            )
        with pytest.raises(FenceError) as fenced:
            await claim
    finally:
        await first.close()
        await second.close()

    assert fenced.value.stored == {0: 5}
    assert "partition 0: the batch starts at 0, the stored next offset is 5" in str(fenced.value)
    assert await stored(conn, schema) == {0: 5, 1: 5}
    assert await row_offsets(conn, schema) == [(0, 0), (0, 1), (0, 2), (0, 3)]


async def test_concurrent_first_batches_of_a_fresh_partition_commit_once(
    conn: Connection, schema: str, postgres_dsn: str
) -> None:
    await migrate(conn, schema)
    sinks = [await connect(postgres_dsn) for _ in range(4)]
    try:
        results = await asyncio.gather(
            *(
                write_batch(each, schema, Batch(TOPIC, {2: 0}, {2: 6}, rows(2, range(1, 5))))
                for each in sinks
            ),
            return_exceptions=True,
        )
    finally:
        for each in sinks:
            await each.close()

    assert sum(result is None for result in results) == 1
    assert all(isinstance(r, FenceError) and r.stored == {2: 6} for r in results if r is not None)
    assert await stored(conn, schema) == {2: 6}
    assert await row_offsets(conn, schema) == [(2, 1), (2, 2), (2, 3), (2, 4)]


async def test_a_stale_batch_after_a_newer_commit_is_refused(conn: Connection, schema: str) -> None:
    await migrate(conn, schema)
    await write_batch(conn, schema, Batch(TOPIC, {0: 0, 1: 0}, {0: 5, 1: 2}, rows(0, range(5))))
    await write_batch(conn, schema, Batch(TOPIC, {0: 5}, {0: 9}, rows(0, range(5, 8))))

    with pytest.raises(FenceError) as fenced:
        await write_batch(
            conn, schema, Batch(TOPIC, {0: 5, 1: 2}, {0: 9, 1: 3}, rows(0, range(5, 9)))
        )

    assert fenced.value.stored == {0: 9, 1: 2}
    assert await stored(conn, schema) == {0: 9, 1: 2}
    assert await row_offsets(conn, schema) == [(0, o) for o in range(8)]
