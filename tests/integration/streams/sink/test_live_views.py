"""The sink's kept live views against ``select_live`` of each session's whole held list.

Against the real PostgreSQL (no broker): generated sessions (``seeded_session``: retries,
chunks, refusals, deletions, rewinds, summaries), interleaved and cut into random batches,
written with :func:`~streams.sink.fence.write_batch` and a small view cache (hits and
misses). After every batch each session's ``live_from``/``live_extra`` and what
:func:`~ctxstream.sessions.live_rows.live_rows` reads must be what ``select_live`` keeps of the
session's held records, their statuses from ``classify_session`` of the log so far.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest
from psycopg import sql

from ctxstream.sessions.live_rows import live_rows
from projections.history.classification import classify_session
from projections.live_view.kept_view import HELD
from projections.live_view.selection import select_live
from schemas.codec import decode_envelope, encode
from schemas.deletion_mark import deletion_event
from schemas.event import Event
from schemas.keys import SessionKey
from streams.batch.records import SourceRecord
from streams.sink.database import Connection
from streams.sink.fence import Batch, write_batch
from streams.sink.migrate import migrate
from streams.sink.read_model.batch_memories import MemoryApps
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.live_views import LiveViews
from streams.sink.read_model.status_step import StatusStep
from streams.sink.rows import batch_rows
from tests.integration.streams.sink.sink_load import (
    produce,
    running_sink,
    sink_settings,
    wait_caught_up,
)
from tests.support.events import envelope, logged_event, rewind_event, summary_event, text_event
from tests.support.kafka import create_topics_for, read_all
from tests.support.strategies import seeded_session

TOPIC = "live.events"
#: (offset, session key, event) of one written record.
Written = tuple[int, SessionKey, Event]


def interleaved(seed: int, sessions: int) -> tuple[list[Written], dict[str, int]]:
    """`sessions` generated sessions interleaved at offsets 0.., and an overlap for each."""
    rng = random.Random(seed)  # noqa: S311 (a reproducible workload, not a secret)
    queues = {
        SessionKey(f"acme/app{n % 2}/u1/s{seed}-{n}"): [
            r.envelope.event for r in seeded_session(seed * 100 + n, 10)
        ]
        for n in range(sessions)
    }
    overlaps = {str(key): rng.randrange(4) for key in queues}
    written: list[Written] = []
    while any(queues.values()):
        key = rng.choice([k for k, q in queues.items() if q])
        written.append((len(written), key, queues[key].pop(0)))
    return written, overlaps


def expected(written: Sequence[Written], key: str, overlap: int) -> tuple[int | None, list[int]]:
    """Where `key`'s whole-list view starts (None: nothing held) and the offsets it keeps."""
    records = [logged_event(k, e, o) for o, k, e in written if k == key]
    statuses = classify_session(records)
    held = [r for r in records if statuses[r.offset] in HELD]
    view = select_live([r.envelope.event for r in held], overlap)
    start = held[view.suffix_start].offset if view.suffix_start < len(held) else None
    return start, [held[p].offset for p in view.kept]


async def write(
    conn: Connection,
    schema: str,
    batch: Sequence[Written],
    caches: tuple[HistoryCache, LiveViews],
) -> None:
    """One batch at its offsets of partition 0."""
    records = [SourceRecord(TOPIC, 0, o, k.encode(), encode(envelope(k, e))) for o, k, e in batch]
    planned = batch_rows(records, partitions=1)
    step = StatusStep(caches[0], planned.rows, planned.events, MemoryApps(), caches[1])
    span = Batch(TOPIC, {0: batch[0][0]}, {0: batch[-1][0] + 1}, planned.rows)
    await write_batch(conn, schema, span, step)
    step.committed()


async def stored_views(conn: Connection, schema: str) -> dict[str, tuple[object, object]]:
    cursor = await conn.execute(
        sql.SQL("SELECT session_key, live_from, live_extra FROM {}").format(
            sql.Identifier(schema, "session_index")
        )
    )
    return {str(k): (f, list(x or [])) for k, f, x in await cursor.fetchall()}


async def check(
    conn: Connection, schema: str, written: Sequence[Written], overlaps: dict[str, int]
) -> None:
    """Every session's stored view and live read against the whole list's view."""
    views = await stored_views(conn, schema)
    for key, overlap in overlaps.items():
        if key not in views:
            continue
        start, kept = expected(written, key, overlap)
        live_from, extra = views[key]
        assert [o for o in kept if o < (start if start is not None else 1 << 62)] == extra
        if start is not None:
            assert live_from == start, key
        read = await live_rows(conn, schema, key)
        if read is None:  # deleted: nothing held
            assert kept == []
            continue
        assert list(read.offsets) == kept, key
        by_offset = {o: e for o, k, e in written if k == key}
        assert [Event.model_validate(e) for e in read.events] == [by_offset[o] for o in kept]
        assert read.next_offset >= written[-1][0] + 1


async def test_kept_views_equal_the_whole_lists_after_every_batch(
    conn: Connection, make_schema: Callable[[], str]
) -> None:
    fast = 0
    for seed in (1, 2, 3):
        written, overlaps = interleaved(seed, sessions=6)
        schema = make_schema()
        await migrate(conn, schema)
        rng = random.Random(seed)  # noqa: S311
        caches = (HistoryCache(3), LiveViews(overlaps.__getitem__, capacity=3))
        done = 0
        while done < len(written):
            cut = min(len(written), done + rng.randrange(1, 25))
            await write(conn, schema, written[done:cut], caches)
            done = cut
            await check(conn, schema, written[:done], overlaps)
            fast += 1
    assert fast > 10


def _conversation() -> list[Event]:
    """Three turns, a summary of the first two, the third after it."""
    events = []
    for turn in range(3):
        at = 10.0 * turn
        events.append(text_event(f"u{turn}", f"inv{turn}", at + 1, f"q{turn}"))
        events.append(text_event(f"a{turn}", f"inv{turn}", at + 2, f"a{turn}", author="root"))
        if turn == 1:
            events.append(summary_event("s1", 1.0, 12.0, 13.0))
    return events


async def test_summaries_a_rewind_into_the_dropped_region_and_a_fresh_start(
    conn: Connection, schema: str
) -> None:
    await migrate(conn, schema)
    key = SessionKey("acme/app/u1/story")
    overlaps = {str(key): 0}
    caches = (HistoryCache(4), LiveViews(overlaps.__getitem__))
    written: list[Written] = []

    async def append(events: Sequence[Event]) -> None:
        batch = [(len(written) + n, key, e) for n, e in enumerate(events)]
        written.extend(batch)
        await write(conn, schema, batch, caches)
        await check(conn, schema, written, overlaps)

    await append(_conversation())
    read = await live_rows(conn, schema, key)
    assert read is not None
    assert read.selected
    assert 0 not in read.offsets
    assert 1 not in read.offsets
    assert len(read.offsets) < len(written)

    # A rewind to inv1 annuls the summary: inv0's events come back into the view.
    await append([rewind_event("rw", "inv1", 40.0), text_event("u4", "inv4", 41.0, "again")])
    read = await live_rows(conn, schema, key)
    assert read is not None
    assert {0, 1} <= set(read.offsets)

    # Deleted, then started afresh in one batch: only the new incarnation is held.
    fresh = [deletion_event(event_id="gone", timestamp=50.0), text_event("n1", "new1", 51.0)]
    await append(fresh)
    read = await live_rows(conn, schema, key)
    assert read is not None
    assert list(read.offsets) == [len(written) - 1]

    await append([deletion_event(event_id="gone2", timestamp=60.0)])
    assert await live_rows(conn, schema, key) is None
    await append([text_event("n2", "new2", 61.0)])
    read = await live_rows(conn, schema, key)
    assert read is not None
    assert list(read.offsets) == [len(written) - 1]


async def test_a_replay_into_a_fresh_schema_keeps_the_same_views(
    conn: Connection, make_schema: Callable[[], str]
) -> None:
    written, overlaps = interleaved(7, sessions=5)
    found = []
    for cuts in (1, 9, len(written)):
        schema = make_schema()
        await migrate(conn, schema)
        caches = (HistoryCache(2), LiveViews(overlaps.__getitem__, capacity=2))
        for start in range(0, len(written), cuts):
            await write(conn, schema, written[start : start + cuts], caches)
        found.append(await stored_views(conn, schema))
    assert found[0] == found[1] == found[2]
    await check(conn, schema, written, overlaps)


async def test_the_sink_keeps_views_with_the_configured_overlaps(
    conn: Connection,
    schema: str,
    postgres_dsn: str,
    kafka_bootstrap: str,
    topic: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # app0 is compacted by ADK with an overlap of 2; app1 takes the default config's (1).
    overrides = '{"acme/app0": {"owner": "adk", "compaction_interval": 3, "overlap_size": 2}}'
    monkeypatch.setenv("CTXSTREAM_COMPACTION_OVERRIDES", overrides)
    await create_topics_for(kafka_bootstrap, topic, events_partitions=1, partitions=1)
    settings = sink_settings(kafka_bootstrap, topic, postgres_dsn, schema, partitions=1)
    generated, _ = interleaved(11, sessions=4)
    sent = [(k.encode(), encode(envelope(k, e))) for _, k, e in generated]
    await produce(kafka_bootstrap, settings.topic("events"), [(sent[:40], True), (sent[40:], True)])
    await migrate(conn, schema)
    async with running_sink(settings):
        await wait_caught_up(conn, schema, kafka_bootstrap, settings.topic("events"))
    written = []
    for record in await read_all(kafka_bootstrap, settings.topic("events")):
        stored = decode_envelope(record.value)
        written.append((record.offset, SessionKey(stored.session_key), stored.event))
    overlaps = {str(k): 2 if "/app0/" in k else 1 for _, k, _ in written}
    await check(conn, schema, written, overlaps)
