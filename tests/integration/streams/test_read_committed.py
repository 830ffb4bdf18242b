"""The projector never folds records of aborted transactions: the faust engine's app reads
``read_committed`` where plain faust does not, and on both engines a session's aborted events
never reach its snapshots."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faust
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.codec import encode
from streams.faust_engine.read_committed import ReadCommittedApp
from tests.conftest import unique_topic
from tests.support.kafka import (
    ENGINES,
    append_envelopes,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_log,
    read_topic,
    running_projector,
    scripted_sessions,
    wait_caught_up,
    wait_for_snapshots,
)

pytestmark = pytest.mark.integration

STARTUP_TIMEOUT_S = 60.0  # joining the group on a cold broker
RECEIVE_TIMEOUT_S = 30.0  # the agent reads what was committed
STOP_TIMEOUT_S = 60.0
#: The partition's last record: once an agent read it, it read everything it will.
LAST = b"plain-2"


async def _write(bootstrap: str, topic: str) -> None:
    """`plain-1`, then `aborted` in an aborted transaction, `committed` in a committed one,
    then `plain-2`, all to partition 0."""
    plain = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    transactional = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=unique_topic("txn")
    )
    await plain.start()
    await transactional.start()
    try:
        await plain.send_and_wait(topic, b"plain-1", partition=0)
        await transactional.begin_transaction()
        await transactional.send_and_wait(topic, b"aborted", partition=0)
        await transactional.abort_transaction()
        async with transactional.transaction():
            await transactional.send_and_wait(topic, b"committed", partition=0)
        await plain.send_and_wait(topic, LAST, partition=0)
    finally:
        await transactional.stop()
        await plain.stop()


async def _seen_by(
    make_app: Callable[..., faust.App], bootstrap: str, topic: str, datadir: Path
) -> list[bytes]:
    """What an agent of `make_app` reads from `topic` up to and including its last record."""
    app = make_app(
        unique_topic("faust"),
        broker=f"kafka://{bootstrap}",
        datadir=datadir,  # faust's default is a folder in the working directory
        store="memory://",
        web_enabled=False,
        topic_replication_factor=1,
        consumer_auto_offset_reset="earliest",
    )
    source = app.topic(topic, value_serializer="raw", key_serializer="raw", partitions=1)
    seen: list[bytes] = []
    enough = asyncio.Event()

    @app.agent(source, concurrency=1)
    async def collect(stream: Any) -> None:
        async for value in stream:
            seen.append(value)
            if value == LAST:  # one partition, read in order: nothing comes after it
                enough.set()

    await asyncio.wait_for(app.start(), STARTUP_TIMEOUT_S)
    try:
        await asyncio.wait_for(enough.wait(), RECEIVE_TIMEOUT_S)
    finally:
        await asyncio.wait_for(app.stop(), STOP_TIMEOUT_S)
    return seen


async def test_aborted_summaries_are_invisible_to_the_projector(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = unique_topic()
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, replication_factor=1)])
    finally:
        await admin.close()
    await _write(kafka_bootstrap, topic)

    committed = await _seen_by(ReadCommittedApp, kafka_bootstrap, topic, tmp_path / "committed")
    assert committed == [b"plain-1", b"committed", b"plain-2"]
    # The control: faust's default consumer delivers the aborted record too.
    uncommitted = await _seen_by(faust.App, kafka_bootstrap, topic, tmp_path / "uncommitted")
    assert uncommitted == [b"plain-1", b"aborted", b"committed", b"plain-2"]


@pytest.mark.parametrize("engine", ENGINES)
async def test_an_aborted_transactions_events_are_never_folded(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    """A session's events appended in an aborted transaction (a summarizer killed mid-write,
    say) never reach its projection: the snapshots equal a clean fold of the committed log."""
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("aborted"),
        data_dir=tmp_path / "data",
        engine=engine,
        events_partitions=1,
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    first, aborted, later = (
        scripted_sessions(2, 3),
        scripted_sessions(2, 2, first_invocation=4),
        scripted_sessions(2, 3, first_invocation=6),
    )
    await append_envelopes(kafka_bootstrap, events, first)
    producer = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, transactional_id=unique_topic("txn")
    )
    await producer.start()
    try:
        await producer.begin_transaction()
        for env in aborted:
            await producer.send_and_wait(events, encode(env), key=env.session_key.encode())
        await producer.abort_transaction()
    finally:
        await producer.stop()
    await append_envelopes(kafka_bootstrap, events, later)

    async with running_projector(settings, STARTUP_TIMEOUT_S):
        await wait_caught_up(settings, RECEIVE_TIMEOUT_S)
        log = await read_log(kafka_bootstrap, events)  # read_committed: without the aborted
        folded = clean_fold(settings, log)
        await wait_for_snapshots(settings, expected_snapshots(folded), RECEIVE_TIMEOUT_S)
    assert sum(len(records) for records in log.values()) == len(first) + len(later)
    everything = await read_topic(
        kafka_bootstrap,
        events,
        partitions=1,
        until=lambda records: True,
        timeout_s=RECEIVE_TIMEOUT_S,
        isolation_level="read_uncommitted",
    )
    assert len(everything) == len(first) + len(aborted) + len(later)  # the aborted are there
