"""What the sink's broker tests share: transactional loads, a running sink, the tables read back.

The oracle is the log itself, read ``read_committed`` by the test (``read_all``), never the
sink's code path: what the rows must equal is computed from it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Final

from aiokafka import AIOKafkaProducer
from psycopg import sql

from schemas.codec import decode_envelope, encode
from schemas.errors import DecodeError
from schemas.keys import SessionKey
from streams.batch.records import SourceRecord
from streams.sink.database import Connection
from streams.sink.fence import Batch, write_batch
from streams.sink.read_model.batch_memories import MemoryApps
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.status_step import StatusStep
from streams.sink.rows import batch_rows
from streams.sink.settings import SinkSettings
from streams.sink.worker import Sink
from tests.support.events import envelope, rewind_event, summary_event, text_event
from tests.support.kafka import end_offsets, read_all

REPO: Final = Path(__file__).resolve().parents[4]
CATCH_UP_TIMEOUT_S: Final = 120.0

Record = tuple[bytes | None, bytes]


def sink_settings(
    bootstrap: str, prefix: str, dsn: str, schema: str, partitions: int
) -> SinkSettings:
    """A sink of the test deployment `prefix` into `schema`."""
    return SinkSettings(
        kafka_bootstrap=bootstrap,
        topic_prefix=prefix,
        events_partitions=partitions,
        partitions=1,
        postgres_dsn=dsn,
        sink_schema=schema,
        sink_session_timeout_ms=6_000,
        sink_batch_records=200,
        sink_cache_sessions=5,
        memory_apps="*",
    )


def sink_env(settings: SinkSettings) -> dict[str, str]:
    """The environment of ``python -m ctxstream sink`` for `settings`."""
    return {
        "PYTHONPATH": str(REPO),
        "CTXSTREAM_KAFKA_BOOTSTRAP": settings.kafka_bootstrap,
        "CTXSTREAM_TOPIC_PREFIX": settings.topic_prefix,
        "CTXSTREAM_POSTGRES_DSN": settings.postgres_dsn.get_secret_value(),
        "CTXSTREAM_SINK_SCHEMA": settings.sink_schema,
        "CTXSTREAM_SINK_SESSION_TIMEOUT_MS": str(settings.sink_session_timeout_ms),
        "CTXSTREAM_SINK_BATCH_RECORDS": str(settings.sink_batch_records),
        "CTXSTREAM_SINK_CACHE_SESSIONS": str(settings.sink_cache_sessions),
        "CTXSTREAM_MEMORY_APPS": settings.memory_apps,
    }


def start_sink_process(settings: SinkSettings, log: Path) -> subprocess.Popen[bytes]:
    """``python -m ctxstream sink`` as a child process, its output appended to `log`."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "ctxstream", "sink"],
            cwd=REPO,
            env={**os.environ, **sink_env(settings)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop_sink_process(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM and wait; the exit status."""
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=60)


def session_event(session: int, number: int, text: str = "hello") -> Record:
    """A valid `events` record of session `session`: a text, now and then a summary or a rewind.

    Every 11th record is a summary of the timestamps 6 to 2 before it, every 29th a rewind to
    the invocation before its own (absent from the session or not), so rows change status.
    """
    key = SessionKey(f"acme/app/u{session % 3}/s{session}")
    event_id, stamp = f"s{session}-e{number}", float(number)
    if number % 11 == 10:
        event = summary_event(event_id, stamp - 6, stamp - 2, stamp)
    elif number % 29 == 28:
        event = rewind_event(event_id, f"inv{number // 4 - 1}", stamp)
    else:
        event = text_event(event_id, f"inv{number // 4}", stamp, text)
    return key.encode(), encode(envelope(key, event))


async def produce(
    bootstrap: str,
    topic: str,
    transactions: Sequence[tuple[Sequence[Record], bool]],
    *,
    pause_s: float = 0.0,
) -> None:
    """Each (records, commit) as one Kafka transaction, committed or aborted, `pause_s` apart."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=f"test-sink-{uuid.uuid4().hex}"
    )
    await producer.start()
    try:
        for records, commit in transactions:
            await producer.begin_transaction()
            sent = [await producer.send(topic, key=k, value=v) for k, v in records]
            await asyncio.gather(*sent)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
            await asyncio.sleep(pause_s)
    finally:
        await producer.stop()


def workload(sessions: int, events: int, seed: int) -> list[tuple[list[Record], bool]]:
    """`events` records of `sessions` sessions in transactions of 1 to 40, one in five aborted.

    Every 97th record holds a NUL; every 131st is not an envelope.
    """
    rng = random.Random(seed)  # noqa: S311 - a reproducible workload, no secret
    transactions: list[tuple[list[Record], bool]] = []
    number = 0
    while number < events:
        size = rng.randint(1, 40)
        records: list[Record] = []
        for _ in range(size):
            session = rng.randrange(sessions)
            if number % 131 == 130:
                records.append((f"acme/app/u0/s{session}".encode(), b"{not json"))
            else:
                text = "nul \x00 here" if number % 97 == 96 else f"text {number}"
                records.append(session_event(session, number, text))
            number += 1
        transactions.append((records, rng.random() >= 0.2))
    return transactions


async def expected_rows(bootstrap: str, topic: str) -> dict[tuple[int, int], str]:
    """(partition, offset) -> event id of every committed record that decodes, from the log."""
    expected = {}
    for record in await read_all(bootstrap, topic):
        if record.value is None:  # a tombstone: dead-lettered, no row
            continue
        try:
            env = decode_envelope(record.value, record_key=record.key)
        except DecodeError:
            continue
        expected[(record.partition, record.offset)] = env.event.id
    return expected


async def stored_offsets(conn: Connection, schema: str, topic: str) -> dict[int, int]:
    """``sink_offsets`` of `topic`: partition -> next offset."""
    cursor = await conn.execute(
        sql.SQL("SELECT partition, next_offset FROM {} WHERE topic = %s").format(
            sql.Identifier(schema, "sink_offsets")
        ),
        (topic,),
    )
    return {int(p): int(n) for p, n in await cursor.fetchall()}


async def wait_caught_up(
    conn: Connection, schema: str, bootstrap: str, topic: str, timeout_s: float = CATCH_UP_TIMEOUT_S
) -> dict[int, int]:
    """Wait until ``sink_offsets`` equals the topic's end offsets (partitions with records)."""
    ends = {p: end for p, end in (await end_offsets(bootstrap, topic)).items() if end > 0}
    deadline = time.monotonic() + timeout_s
    while (now := await stored_offsets(conn, schema, topic)) != ends:
        assert time.monotonic() < deadline, f"sink at {now}, log ends at {ends}"
        await asyncio.sleep(0.2)
    return ends


async def wait_rows(
    conn: Connection,
    schema: str,
    at_least: int,
    *,
    load: asyncio.Task[None],
    process: subprocess.Popen[bytes],
    timeout_s: float = CATCH_UP_TIMEOUT_S,
) -> None:
    """Wait until `schema` holds `at_least` rows, or the load is over; the sink must be alive."""
    deadline = time.monotonic() + timeout_s
    while await row_count(conn, schema) < at_least and not load.done():
        assert process.poll() is None, f"the sink exited with {process.returncode}"
        assert time.monotonic() < deadline, f"fewer than {at_least} rows in {timeout_s} s"
        await asyncio.sleep(0.05)


async def wait_logged(
    log: Path,
    line: str,
    *,
    process: subprocess.Popen[bytes],
    times: int = 1,
    timeout_s: float = CATCH_UP_TIMEOUT_S,
) -> None:
    """Wait until `log` holds `line` `times` times; the process must be alive meanwhile."""
    deadline = time.monotonic() + timeout_s
    while _count(log, line) < times:
        assert process.poll() is None, f"the process exited with {process.returncode}"
        assert time.monotonic() < deadline, f"{line!r} not in {log} after {timeout_s} s"
        await asyncio.sleep(0.05)


def _count(log: Path, line: str) -> int:
    return log.read_text(errors="replace").count(line) if log.exists() else 0


async def row_count(conn: Connection, schema: str) -> int:
    """Rows of ``event_rows``."""
    cursor = await conn.execute(
        sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, "event_rows"))
    )
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def rows_by_offset(conn: Connection, schema: str) -> dict[tuple[int, int], str]:
    """(partition, offset) -> event id of every row."""
    cursor = await conn.execute(
        sql.SQL('SELECT partition, "offset", event_id FROM {}').format(
            sql.Identifier(schema, "event_rows")
        )
    )
    return {(int(p), int(o)): str(e) for p, o, e in await cursor.fetchall()}


async def session_checksums(conn: Connection, schema: str) -> dict[str, tuple[int, str]]:
    """Per session: its row count and an md5 over every column of its rows in offset order."""
    cursor = await conn.execute(
        sql.SQL(
            "SELECT session_key, count(*), md5(string_agg(concat_ws('|', partition, \"offset\","
            " tenant, app, user_id, session_id, event_id, invocation_id, author,"
            " event_timestamp, producer_id, idempotency_key, event::text, encode(raw, 'hex'),"
            " lossy, status), ',' ORDER BY \"offset\")) FROM {} GROUP BY session_key"
        ).format(sql.Identifier(schema, "event_rows"))
    )
    return {str(k): (int(n), str(h)) for k, n, h in await cursor.fetchall()}


@contextlib.asynccontextmanager
async def running_sink(settings: SinkSettings) -> AsyncIterator[asyncio.Task[None]]:
    """A sink in this process until the block ends (then stopped, and its failure raised)."""
    stop = asyncio.Event()
    task = asyncio.create_task(Sink(settings).run(stop))
    try:
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, 60)


async def clean_load(conn: Connection, settings: SinkSettings) -> Mapping[str, tuple[int, str]]:
    """The per-session checksums of one uninterrupted sink run into `settings`' schema."""
    async with running_sink(settings):
        await wait_caught_up(
            conn, settings.sink_schema, settings.kafka_bootstrap, settings.topic("events")
        )
    return await session_checksums(conn, settings.sink_schema)


async def write_in_batches(
    conn: Connection,
    schema: str,
    records: Sequence[SourceRecord],
    cut: int,
    after_each: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Write `records` (one topic, partition 0, contiguous offsets from the stored next one)
    as the sink does, `cut` a batch.

    The classification cache holds two sessions, so most states are rebuilt from stored rows.
    `after_each` runs after every committed batch.
    """
    cache = HistoryCache(2)
    for start in range(0, len(records), cut):
        batch = records[start : start + cut]
        planned = batch_rows(batch, partitions=1)
        step = StatusStep(cache, planned.rows, planned.events, MemoryApps())
        first, end = batch[0].offset, batch[-1].offset + 1
        topic = batch[0].topic
        await write_batch(conn, schema, Batch(topic, {0: first}, {0: end}, planned.rows), step)
        step.committed()
        if after_each is not None:
            await after_each()
