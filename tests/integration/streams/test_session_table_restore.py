"""A faust table counting events per session is rebuilt from its changelog by a fresh
instance of the app (same app id, empty local state), with the same counts."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faust
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.codec import decode_envelope, encode
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey, TenantId
from tests.conftest import unique_topic

pytestmark = pytest.mark.integration

PARTITIONS = 2
SESSIONS = 12
FIRST_EVENTS = 300
LATER_EVENTS = 60
STARTUP_TIMEOUT_S = 60.0  # joining the group, creating the changelog, recovering the table
PROCESS_TIMEOUT_S = 60.0  # the agent folds the events it was sent
COMMIT_TIMEOUT_S = 30.0  # broker_commit_interval is 2.8 s by default; the test sets 0.5 s
STOP_TIMEOUT_S = 60.0
POLL_INTERVAL_S = 0.2


@dataclass
class CountingApp:
    """One instance of the faust app under test and its table."""

    app: faust.App
    counts: Any  # faust.Table[str, int]; faust ships no type information
    started: asyncio.Event

    def snapshot(self) -> Counter[str]:
        """The table as this instance sees it now."""
        return Counter({key: value for key, value in self.counts.items() if value})


def _counting_app(
    app_id: str, bootstrap: str, source: str, store: str, datadir: Path
) -> CountingApp:
    """A faust app whose agent counts each session's events in a changelog-backed table."""
    app = faust.App(
        app_id,
        broker=f"kafka://{bootstrap}",
        store=store,
        datadir=str(datadir),
        topic_partitions=PARTITIONS,
        topic_replication_factor=1,
        web_enabled=False,
        broker_commit_interval=0.5,
        producer_acks=-1,
    )
    events = app.topic(
        source,
        key_type=bytes,
        value_type=bytes,
        value_serializer="raw",
        key_serializer="raw",
        partitions=PARTITIONS,
    )
    counts = app.Table("counts", key_type=str, value_type=int, default=int, partitions=PARTITIONS)

    @app.agent(events, concurrency=1)
    async def count_events(stream: Any) -> None:
        async for record in stream.events():
            envelope = decode_envelope(record.value, record_key=record.key)
            counts[envelope.session_key] += 1

    started = asyncio.Event()

    async def on_startup_finished() -> None:
        started.set()

    app.on_startup_finished = on_startup_finished
    return CountingApp(app, counts, started)


def _envelope(session: int, number: int) -> Envelope:
    key = SessionKey(f"acme/support/u{session}/s{session}")
    return Envelope(
        tenant=TenantId("acme"),
        session_key=key,
        producer_id="faust-restore-test",
        idempotency_key=f"{key}#e{number}",
        event=Event.model_validate(
            {"id": f"e{number}", "author": "user", "timestamp": float(number)}
        ),
    )


async def _send(bootstrap: str, topic: str, envelopes: list[Envelope]) -> dict[int, int]:
    """Produces the envelopes keyed by session; returns each partition's end offset."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        pending = [
            await producer.send(topic, key=e.session_key.encode(), value=encode(e))
            for e in envelopes
        ]
        written = await asyncio.gather(*pending)
    finally:
        await producer.stop()
    ends: dict[int, int] = {}
    for metadata in written:
        ends[metadata.partition] = max(ends.get(metadata.partition, 0), metadata.offset + 1)
    return ends


async def _wait_for(what: str, check: Callable[[], Awaitable[bool]], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(POLL_INTERVAL_S)


async def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}


async def _start(instance: CountingApp) -> None:
    await instance.app.start()
    await asyncio.wait_for(instance.started.wait(), STARTUP_TIMEOUT_S)


@pytest.mark.parametrize("store", ["memory://", "rocksdb://"])
async def test_table_is_restored_from_its_changelog(
    kafka_bootstrap: str, tmp_path: Path, store: str
) -> None:
    app_id = unique_topic("faust")
    source = unique_topic()
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(source, PARTITIONS, replication_factor=1)])
    finally:
        await admin.close()

    first_batch = [_envelope(n % SESSIONS, n) for n in range(FIRST_EVENTS)]
    expected = Counter(e.session_key for e in first_batch)

    first = _counting_app(app_id, kafka_bootstrap, source, store, tmp_path / "first")
    await _start(first)
    try:
        ends = await _send(kafka_bootstrap, source, first_batch)

        async def counted() -> bool:
            return first.snapshot() == expected

        await _wait_for("the first instance to count every event", counted, PROCESS_TIMEOUT_S)

        async def committed() -> bool:
            return await _committed(kafka_bootstrap, app_id, source) == ends

        await _wait_for("the source offsets to be committed", committed, COMMIT_TIMEOUT_S)
    finally:
        await asyncio.wait_for(first.app.stop(), STOP_TIMEOUT_S)

    second = _counting_app(app_id, kafka_bootstrap, source, store, tmp_path / "second")
    await _start(second)
    try:
        assert second.snapshot() == expected  # restored, before any new event

        later_batch = [
            _envelope(n % SESSIONS, n) for n in range(FIRST_EVENTS, FIRST_EVENTS + LATER_EVENTS)
        ]
        await _send(kafka_bootstrap, source, later_batch)
        expected.update(e.session_key for e in later_batch)

        async def caught_up() -> bool:
            return second.snapshot() == expected

        await _wait_for("the restored table to keep counting", caught_up, PROCESS_TIMEOUT_S)
    finally:
        await asyncio.wait_for(second.app.stop(), STOP_TIMEOUT_S)
