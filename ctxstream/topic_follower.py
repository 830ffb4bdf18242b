"""Follow a deployment's topics from their beginning, committed records only, as a subscriber does.

The benchmark and the demo watch what the pipeline writes (requests,
summaries on `events`, snapshots on `projections`) with a reader of their
own: no consumer group, every partition of the chosen topics assigned,
``read_committed`` so that a summary of an aborted transaction never shows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from schemas.kafka.settings import KafkaSettings, TopicRole
from streams.topics import topic_specs

Fetched = dict[TopicPartition, list[ConsumerRecord[Any, Any]]]


async def follow(
    settings: KafkaSettings,
    roles: Sequence[TopicRole],
    *,
    fetch_max_wait_ms: int,
    poll_ms: int,
) -> AsyncIterator[Fetched]:
    """Each fetch of the topics of `roles`, from their first offsets, for as long as it is iterated.

    A fetch may be empty (nothing new within `poll_ms`). The reader closes
    when the iteration ends or is cancelled.
    """
    partitions = [
        TopicPartition(spec.name, partition)
        for spec in topic_specs(settings)
        if spec.role in roles
        for partition in range(spec.partitions)
    ]
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        **settings.client_security(),
        enable_auto_commit=False,
        # Not "latest": a reset racing the seek to the beginning would skip what is there.
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        fetch_max_wait_ms=fetch_max_wait_ms,
    )
    await consumer.start()
    try:
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        while True:
            yield await consumer.getmany(timeout_ms=poll_ms)
    finally:
        await consumer.stop()
