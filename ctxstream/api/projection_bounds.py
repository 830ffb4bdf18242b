"""The first and end offsets of every partition of the deployment's `projections` topic.

What an HTTP subscription resolves its start against before it answers
(:func:`ctxstream.api.positions.start_offsets`), so that a broker it cannot
reach or a missing topic is an error answer (503), not a stream that never
starts. The ends are the last stable offsets (``read_committed``), as the
subscription's own reader sees them.
"""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, TopicPartition

from ctxstream.broker_calls import broker_calls
from ctxstream.closing import close_shielded, start_shielded
from ctxstream.errors import TopicMissingError
from ctxstream.partition_counts import known_partition_count
from schemas.kafka.settings import KafkaSettings

Offsets = dict[int, int]


async def projection_bounds(
    settings: KafkaSettings, *, timeout_s: float
) -> tuple[Offsets, Offsets]:
    """The first and the end offset of each partition of `projections`, by partition.

    Raises:
        BrokerUnavailableError: The broker refused or did not answer within `timeout_s`.
        TopicMissingError: The deployment has no `projections` topic.
    """
    topic = settings.topic("projections")
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        **settings.client_security(),
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    try:
        async with broker_calls(settings.kafka_bootstrap, timeout_s):
            count = await known_partition_count(
                settings.kafka_bootstrap, topic, security=settings.client_security()
            )
            if count == 0:
                raise TopicMissingError(topic)
            await start_shielded(consumer.start, what="projection bounds reader")
            # Let its background task start: stopping it before its first step re-raises
            # the cancellation (as ctxstream.subscription notes).
            await asyncio.sleep(0)
            partitions = [TopicPartition(topic, p) for p in range(count)]
            beginnings = await consumer.beginning_offsets(partitions)
            ends = await consumer.end_offsets(partitions)
    finally:
        await close_shielded(consumer.stop, what="projection bounds reader")
    return (
        {tp.partition: offset for tp, offset in beginnings.items()},
        {tp.partition: offset for tp, offset in ends.items()},
    )
