"""The log tells a gap of markers and aborted records from a gap with records in it."""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.records_to_delete import RecordsToDelete

from streams.faust_engine.offset_probe import OffsetProbe
from tests.conftest import unique_topic

pytestmark = pytest.mark.integration


async def _write(bootstrap: str, topic: str) -> dict[str, int]:
    """Records to partition 0 with a committed and an aborted transaction between them.

    Returns each value's offset.
    """
    plain = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
    transactional = AIOKafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=unique_topic("txn")
    )
    await plain.start()
    await transactional.start()
    offsets: dict[str, int] = {}
    try:
        for value in ("plain-1", "plain-2"):
            offsets[value] = (await plain.send_and_wait(topic, value.encode(), partition=0)).offset
        async with transactional.transaction():
            sent = await transactional.send_and_wait(topic, b"summary", partition=0)
            offsets["summary"] = sent.offset  # its commit marker follows
        await transactional.begin_transaction()
        sent = await transactional.send_and_wait(topic, b"aborted", partition=0)
        offsets["aborted"] = sent.offset
        await transactional.abort_transaction()
        sent = await plain.send_and_wait(topic, b"plain-3", partition=0)
        offsets["plain-3"] = sent.offset
    finally:
        await transactional.stop()
        await plain.stop()
    return offsets


async def _written_topic(bootstrap: str) -> tuple[str, dict[str, int]]:
    """A new one-partition topic holding :func:`_write`'s records, and their offsets."""
    topic = unique_topic()
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])
    finally:
        await admin.close()
    return topic, await _write(bootstrap, topic)


async def test_the_probe_finds_the_first_committed_record_of_a_range(kafka_bootstrap: str) -> None:
    topic, at = await _written_topic(kafka_bootstrap)
    assert at["aborted"] == at["summary"] + 2  # the summary's commit marker between
    assert at["plain-3"] > at["aborted"]  # the abort marker may come before or after it
    probe = OffsetProbe(bootstrap=kafka_bootstrap, topic=topic)
    try:
        # The commit marker, the aborted record and its marker: no record for a reader.
        assert await probe.first_record(0, at["summary"] + 1, at["plain-3"]) is None
        # A range that holds records: the first one, whatever follows it.
        assert await probe.first_record(0, at["plain-1"], at["plain-3"]) == at["plain-1"]
        assert await probe.first_record(0, at["plain-2"] + 1, at["plain-3"]) == at["summary"]
        # Past the end of the log, with markers only before it.
        end = at["plain-3"] + 5
        assert await probe.first_record(0, at["plain-3"] + 1, end) is None
        assert await probe.first_record(0, 3, 3) is None  # an empty range
        # Every committed record of a range, and none of its markers or aborted records.
        found = await probe.records(0, at["plain-1"], at["plain-3"] + 1)
        assert [r.offset for r in found] == [
            at["plain-1"],
            at["plain-2"],
            at["summary"],
            at["plain-3"],
        ]
        assert [r.value for r in found] == [b"plain-1", b"plain-2", b"summary", b"plain-3"]
        assert await probe.records(0, at["summary"] + 1, at["plain-3"]) == []
        assert [r.offset for r in await probe.records(0, at["plain-3"], end)] == [at["plain-3"]]
    finally:
        await probe.stop()


async def test_a_range_below_the_log_start_is_read_from_the_log_start(kafka_bootstrap: str) -> None:
    topic, at = await _written_topic(kafka_bootstrap)
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        tp = TopicPartition(topic, 0)
        await admin.delete_records({tp: RecordsToDelete(before_offset=at["plain-2"])})
    finally:
        await admin.close()
    probe = OffsetProbe(bootstrap=kafka_bootstrap, topic=topic)
    try:
        assert await probe.first_record(0, 0, at["plain-3"]) == at["plain-2"]
        assert await probe.first_record(0, 0, at["plain-2"]) is None  # deleted: gone for all
    finally:
        await probe.stop()
