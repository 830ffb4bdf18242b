"""One transaction of a partition's producer: its records and offsets commit together or not at all.

The consumed offsets join the transaction while its records are being
delivered (`Transaction.commit_offsets`); these tests hold that a record
the broker refuses still takes the offsets down with it. The oracles are
independent of the code under test: a ``read_committed`` read of the output
topic and the group's committed offsets as the broker's admin API lists them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaError

from schemas.kafka.admin import TopicSpec, delete_topics_of, ensure_topics
from schemas.kafka.settings import KafkaSettings
from schemas.kafka.transaction import partition_producer, transaction
from tests.conftest import unique_topic
from tests.support.kafka import committed_offsets, read_all

pytestmark = pytest.mark.integration

#: The output topic's record size limit: the refused record is above it.
MAX_MESSAGE_BYTES = 2_000


@dataclass(frozen=True)
class Setup:
    """A consumed topic's partition producer, the output topic, and the group committing."""

    producer: AIOKafkaProducer
    consumed: TopicPartition
    output: str
    group: str


@contextlib.asynccontextmanager
async def _setup(bootstrap: str) -> AsyncIterator[Setup]:
    """Both topics under a fresh prefix and the consumed partition's producer; deleted after."""
    prefix = unique_topic("txn")
    consumed, output = f"{prefix}.in", f"{prefix}.out"
    await ensure_topics(
        bootstrap,
        [
            TopicSpec(None, consumed, 1, 1),
            TopicSpec(None, output, 1, 1, {"max.message.bytes": str(MAX_MESSAGE_BYTES)}),
        ],
    )
    group = f"{prefix}-group"
    producer = partition_producer(
        bootstrap, owner=group, topic=consumed, partition=0, transaction_timeout_ms=30_000
    )
    await producer.start()
    try:
        yield Setup(producer, TopicPartition(consumed, 0), output, group)
    finally:
        await producer.stop()
        await delete_topics_of(KafkaSettings(kafka_bootstrap=bootstrap, topic_prefix=prefix))


async def _commit(setup: Setup, values: list[bytes], offset: int) -> None:
    """One transaction: `values` sent to the output topic, the consumed `offset` committed."""
    async with transaction(setup.producer) as sends:
        for value in values:
            await sends.send(setup.output, key=b"k", value=value)
        await sends.commit_offsets({setup.consumed: offset}, setup.group)


async def _committed(bootstrap: str, setup: Setup) -> tuple[list[bytes], dict[int, int]]:
    """What a `read_committed` reader sees of the output, and the group's committed offsets."""
    records = await read_all(bootstrap, setup.output)
    offsets = await committed_offsets(bootstrap, setup.group, setup.consumed.topic)
    return [record.value for record in records], offsets


async def test_records_and_offsets_commit_together(kafka_bootstrap: str) -> None:
    async with _setup(kafka_bootstrap) as setup:
        await _commit(setup, [b"first 0", b"first 1", b"first 2"], 7)
        await _commit(setup, [b"second"], 9)
        assert await _committed(kafka_bootstrap, setup) == (
            [b"first 0", b"first 1", b"first 2", b"second"],
            {0: 9},
        )


async def test_a_refused_record_takes_the_transactions_offsets_down_with_it(
    kafka_bootstrap: str,
) -> None:
    async with _setup(kafka_bootstrap) as setup:
        await _commit(setup, [b"committed"], 4)
        with pytest.raises(KafkaError):
            await _commit(setup, [b"x" * (4 * MAX_MESSAGE_BYTES)], 8)
        # The refused transaction aborted whole: neither its record nor its offset is committed.
        assert await _committed(kafka_bootstrap, setup) == ([b"committed"], {0: 4})
