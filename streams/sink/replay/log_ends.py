"""The end offsets of `events` as a ``read_committed`` reader sees them: the bar of catching up."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.kafka.admin import EVENTS_METADATA_WAIT_S, partition_count
from schemas.kafka.security import PLAINTEXT, ClientSecurity


async def log_end_offsets(
    bootstrap: str, topic: str, *, security: ClientSecurity = PLAINTEXT
) -> dict[int, int]:
    """Partition -> end offset of every partition of `topic`, ``read_committed``.

    ``read_committed`` answers the last stable offset: a sink cannot pass a transaction
    still open, so that is as far as it can be caught up now.

    Raises:
        TopicError: `topic` does not exist.
    """
    count = await partition_count(
        bootstrap, topic, wait_s=EVENTS_METADATA_WAIT_S, security=security
    )
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        **security,
    )
    await consumer.start()
    await asyncio.sleep(0)  # let its background task start: stopping before it re-raises
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in range(count)])
    finally:
        await consumer.stop()
    return {tp.partition: int(offset) for tp, offset in ends.items()}
