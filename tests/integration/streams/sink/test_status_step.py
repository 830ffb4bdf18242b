"""The status step in the fenced transaction, against the real PostgreSQL (no broker needed).

Batches are written with :func:`~streams.sink.fence.write_batch` and their
:class:`~streams.sink.read_model.status_step.StatusStep`; the statuses must equal
``classify_session`` of the records written so far, whether the session's state comes from the
cache or is rebuilt from the rows (a lossy row from its bytes); a fenced batch must leave
the cache as it was, and a cached state that rows written elsewhere overtook is not used.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from psycopg import sql

from projections.history.classification import classify_session
from schemas.codec import encode
from schemas.event import Event
from schemas.keys import SessionKey
from streams.batch.records import SourceRecord
from streams.sink.database import Connection
from streams.sink.errors import FenceError
from streams.sink.fence import Batch, write_batch
from streams.sink.migrate import migrate
from streams.sink.read_model.batch_memories import MemoryApps
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.status_step import StatusStep
from streams.sink.rows import batch_rows
from tests.support.events import envelope, summary_event, text_event

TOPIC = "step.events"
KEY = SessionKey("acme/support/u1/s1")


def records(events: Sequence[Event], first: int) -> list[SourceRecord]:
    return [
        SourceRecord(TOPIC, 0, first + n, KEY.encode(), encode(envelope(KEY, event)))
        for n, event in enumerate(events)
    ]


async def write(
    conn: Connection, schema: str, cache: HistoryCache, batch: list[SourceRecord], start: int
) -> None:
    planned = batch_rows(batch, partitions=1)
    step = StatusStep(cache, planned.rows, planned.events, MemoryApps.parse("*"))
    end = batch[-1].offset + 1
    await write_batch(conn, schema, Batch(TOPIC, {0: start}, {0: end}, planned.rows), step)
    step.committed()


async def statuses(conn: Connection, schema: str) -> dict[int, str]:
    cursor = await conn.execute(
        sql.SQL('SELECT "offset", status FROM {}').format(sql.Identifier(schema, "event_rows"))
    )
    return {int(o): str(s) for o, s in await cursor.fetchall()}


def expected(written: list[SourceRecord]) -> dict[int, str]:
    planned = batch_rows(written, partitions=1)
    return {o: str(s) for o, s in classify_session(planned.events).items()}


async def test_statuses_from_the_cache_from_rows_and_after_a_fence(
    conn: Connection, schema: str
) -> None:
    await migrate(conn, schema)
    cache = HistoryCache(4)
    nul = text_event("e1", "inv1", 1.0, "parked \x00 on 3")
    first = records([nul, text_event("e2", "inv1", 2.0)], 0)
    await write(conn, schema, cache, first, 0)
    assert cache.get(KEY, 0) is not None

    second = records([summary_event("s1", 1.0, 1.0, 3.0), nul], 2)  # e1 again: a retry
    stale = cache.get(KEY, 0)
    with pytest.raises(FenceError):
        await write(conn, schema, cache, second, 1)  # fetched from the wrong place
    assert cache.get(KEY, 0) is stale  # a rolled-back batch leaves the cache as it was

    await write(conn, schema, HistoryCache(4), second, 2)  # a miss: rebuilt, e1 from raw
    assert await statuses(conn, schema) == expected(first + second)
    assert (await statuses(conn, schema))[3] == "duplicate"
    assert (await statuses(conn, schema))[0] == "masked"

    # The first cache ends before rows another writer stored: it must not be used.
    third = records([summary_event("s1", 1.0, 1.0, 3.0), text_event("e3", "inv2", 4.0)], 4)
    await write(conn, schema, cache, third, 4)
    assert await statuses(conn, schema) == expected(first + second + third)
    assert (await statuses(conn, schema))[4] == "duplicate"
