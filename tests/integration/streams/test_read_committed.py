"""The projector's faust app never sees records of aborted transactions; plain faust does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import faust
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from streams.read_committed import ReadCommittedApp
from tests.conftest import unique_topic

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


async def _seen_by(make_app: Callable[..., faust.App], bootstrap: str, topic: str) -> list[bytes]:
    """What an agent of `make_app` reads from `topic` up to and including its last record."""
    app = make_app(
        unique_topic("faust"),
        broker=f"kafka://{bootstrap}",
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


async def test_aborted_summaries_are_invisible_to_the_projector(kafka_bootstrap: str) -> None:
    topic = unique_topic()
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, 1, replication_factor=1)])
    finally:
        await admin.close()
    await _write(kafka_bootstrap, topic)

    committed = await _seen_by(ReadCommittedApp, kafka_bootstrap, topic)
    assert committed == [b"plain-1", b"committed", b"plain-2"]
    # The control: faust's default consumer delivers the aborted record too.
    uncommitted = await _seen_by(faust.App, kafka_bootstrap, topic)
    assert uncommitted == [b"plain-1", b"aborted", b"committed", b"plain-2"]
