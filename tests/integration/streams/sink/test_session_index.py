"""``session_index`` as the sink keeps it, against the real PostgreSQL (no broker needed).

Sessions with deletions and fresh starts are written in batches cut at every size from 1 to
all; after each load, every session's row must equal both what the records say (the test's
own reading of them: the last record, whether it is a deletion, the first record after the
last deletion) and the ``sessions`` view (the same facts aggregated from the rows' statuses).
A migration over a schema that holds rows fills the table from them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from psycopg import sql

from ctxstream.appends.deletion_record import deletion_record
from ctxstream.appends.memory_record import memory_record
from schemas.codec import encode
from schemas.event import Event
from schemas.keys import SessionKey
from streams.batch.records import SourceRecord
from streams.sink.database import Connection
from streams.sink.migrate import migrate
from tests.integration.streams.sink.sink_load import write_in_batches
from tests.support.events import envelope, text_event

TOPIC = "index.events"
KEYS = [SessionKey(f"acme/{app}/u{n % 2}/s{n}") for n, app in enumerate(["a", "a", "b", "b", "a"])]
INDEXED = ("partition", "created", "last_activity", "last_offset", "deleted")


@dataclass(frozen=True)
class Written:
    """One record the test wrote: its session, its event, whether it deletes the session or
    is a memory record (bookkeeping: it neither starts nor ends an incarnation)."""

    key: SessionKey
    event: Event
    deletes: bool
    memory: bool = False


def workload(seed: int, count: int) -> list[Written]:
    """`count` records over :data:`KEYS`, about one in eight a deletion and one in six a memory
    record; timestamps not sorted; the last session ends deleted, a memory record after."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible workload, not a secret)
    written = []
    for n in range(count):
        key = rng.choice(KEYS)
        timestamp = float(rng.randrange(1_000, 1_100))
        draw = rng.random()
        if draw < 0.125:
            event = deletion_record(key, event_id=f"d{n}", timestamp=timestamp)
            written.append(Written(key, event, deletes=True))
        elif draw < 0.29:
            event = memory_record(key, "add", event_id=f"m{n}", timestamp=timestamp)
            written.append(Written(key, event, deletes=False, memory=True))
        else:
            written.append(Written(key, text_event(f"e{n}", f"inv{n}", timestamp), deletes=False))
    # The last session ends with a deletion and a memory record after it: still deleted.
    last = KEYS[-1]
    written.append(Written(last, deletion_record(last, event_id="dz", timestamp=999.0), True))
    marked = memory_record(last, "add", event_id="mz", timestamp=1_200.0)
    written.append(Written(last, marked, deletes=False, memory=True))
    return written


def expected_index(written: list[Written]) -> dict[str, tuple[object, ...]]:
    """Per session: partition, created, last activity, last offset, deleted, read off the log."""
    found: dict[str, tuple[object, ...]] = {}
    for key in {w.key for w in written}:
        mine = [(offset, w) for offset, w in enumerate(written) if w.key == key]
        last_offset, last = mine[-1]
        since = max((n + 1 for n, (_, w) in enumerate(mine) if w.deletes), default=0)
        alive = [(offset, w) for offset, w in mine[since:] if not w.memory]
        created = alive[0][1].event.timestamp if alive else None
        marking = [w for _, w in mine if not w.memory]
        deleted = bool(marking) and marking[-1].deletes
        found[key] = (0, created, last.event.timestamp, last_offset, deleted)
    return found


async def load(conn: Connection, schema: str, written: list[Written], cut: int) -> None:
    """Write `written` at offsets 0.. of partition 0 in batches of `cut` records."""
    records = [
        SourceRecord(TOPIC, 0, offset, w.key.encode(), encode(envelope(w.key, w.event)))
        for offset, w in enumerate(written)
    ]
    await write_in_batches(conn, schema, records, cut)


async def table(
    conn: Connection, schema: str, name: str, columns: tuple[str, ...] = INDEXED
) -> dict[str, tuple[object, ...]]:
    """`columns` of each session of the table or view `name`, by session key."""
    listed = sql.SQL(", ").join(map(sql.Identifier, columns))
    cursor = await conn.execute(
        sql.SQL("SELECT session_key, {} FROM {}").format(listed, sql.Identifier(schema, name))
    )
    return {str(row[0]): tuple(row[1:]) for row in await cursor.fetchall()}


async def test_the_index_follows_deletions_and_fresh_starts_however_the_log_is_cut(
    conn: Connection, make_schema: Callable[[], str]
) -> None:
    written = workload(seed=24, count=60)
    assert any(w.deletes for w in written[:-10])
    assert not all(w.deletes for w in written)
    expected = expected_index(written)
    assert any(row[4] for row in expected.values())  # a session ends deleted
    # the last session ends deleted with a memory record after its deletion
    ending = [w for w in written if w.key == KEYS[-1]][-2:]
    assert [(w.deletes, w.memory) for w in ending] == [(True, False), (False, True)]
    for cut in (1, 3, 7, 60):
        schema = make_schema()
        await migrate(conn, schema)
        await load(conn, schema, written, cut)
        assert await table(conn, schema, "session_index") == expected, cut
        assert await table(conn, schema, "sessions") == expected, cut


async def test_a_migration_over_stored_rows_fills_the_index_from_them(
    conn: Connection, schema: str
) -> None:
    written = workload(seed=7, count=25)
    await migrate(conn, schema)
    await load(conn, schema, written, 4)
    await conn.execute(sql.SQL("DELETE FROM {}").format(sql.Identifier(schema, "session_index")))
    await conn.execute(
        sql.SQL("DELETE FROM {} WHERE version = 6").format(
            sql.Identifier(schema, "schema_migrations")
        )
    )
    await conn.execute(sql.SQL("DROP TABLE {}").format(sql.Identifier(schema, "session_index")))
    assert [m.version for m in await migrate(conn, schema)] == [6]
    assert await table(conn, schema, "session_index") == expected_index(written)
