"""The backlog of ``bench ingest --workers``: produced in one transaction, readable at its commit.

The worker processes read `events` ``read_committed``, so the records of a
transaction still open are in the log but not readable by them: the
benchmark produces the whole workload inside one transaction before it
starts the workers, lets them start, join their group and restore their
partitions on an `events` topic that reads as empty, then commits. From the
commit on, every worker finds the whole backlog at once, and none of them has
folded anything during its own or another's start-up.

:class:`GatedWorkload` holds that open transaction, and what the producer's
acknowledgements say of the workload: how many records went to each
partition and where each partition's workload ends (its last record's offset
plus one; the commit marker comes after it).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

from aiokafka import AIOKafkaProducer, TopicPartition

from ctxstream.bench.agents.stream import AgentsWorkload
from streams.projector_settings import ProjectorSettings

#: How long the workload's transaction may stay open: the production of the whole workload,
#: then the workers' start-up. Kafka's default ``transaction.max.timeout.ms`` (15 minutes)
#: bounds it.
GATE_TIMEOUT_MS: Final = 900_000


@dataclass(slots=True)
class GatedWorkload:
    """The workload in an open transaction of `producer`, until :meth:`release` commits it.

    Attributes:
        producer: The transactional producer, its transaction open.
        records: Records of the workload on each partition.
        ends: Each partition's last workload offset plus one (partitions
            with no record are left out).
        released_at: ``time.monotonic()`` when the commit was asked for
            (None before).
    """

    producer: AIOKafkaProducer
    records: dict[TopicPartition, int] = field(default_factory=dict)
    ends: dict[TopicPartition, int] = field(default_factory=dict)
    released_at: float | None = None

    @property
    def total(self) -> int:
        """The workload's records."""
        return sum(self.records.values())

    async def release(self) -> float:
        """Commit the transaction: the whole workload becomes readable. Returns when it was asked.

        The returned time (``time.monotonic()``) is taken before the commit
        is sent, so the commit's own round trip is inside any time measured
        from it.
        """
        self.released_at = time.monotonic()
        await self.producer.commit_transaction()
        return self.released_at

    async def close(self) -> None:
        """Stop the producer; a transaction never released is aborted first."""
        try:
            if self.released_at is None:
                await self.producer.abort_transaction()
        finally:
            await self.producer.stop()


def workload_producer(bootstrap: str, **options: Any) -> AIOKafkaProducer:
    """The producer ``bench ingest`` writes a workload with: acks=all, idempotent, large batches.

    `options` adds aiokafka producer options (a transactional id, say).
    """
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=20,
        max_batch_size=256 * 1024,
        **options,
    )


async def produce_gated(settings: ProjectorSettings, workload: AgentsWorkload) -> GatedWorkload:
    """Produce `workload` to the settings' `events` topic inside one transaction, left open.

    The producer is :func:`workload_producer`'s, with a transactional id.
    """
    producer = workload_producer(
        settings.kafka_bootstrap,
        transactional_id=f"{settings.topic_prefix}-workload",
        transaction_timeout_ms=GATE_TIMEOUT_MS,
    )
    await producer.start()
    gated = GatedWorkload(producer)
    try:
        await producer.begin_transaction()
        topic = settings.topic("events")
        pending = [
            await producer.send(topic, key=key, value=value) for key, value in workload.records()
        ]
        await producer.flush()
        placed = [await delivery for delivery in pending]
    except BaseException:
        await gated.close()
        raise
    counts = Counter(TopicPartition(m.topic, m.partition) for m in placed)
    gated.records = dict(counts)
    for metadata in placed:
        tp = TopicPartition(metadata.topic, metadata.partition)
        gated.ends[tp] = max(gated.ends.get(tp, 0), metadata.offset + 1)
    return gated
