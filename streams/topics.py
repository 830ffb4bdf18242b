"""Every topic of a deployment, declared once, and their idempotent creation."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.errors import TopicError
from schemas.kafka.settings import KafkaSettings, TopicRole

logger = logging.getLogger(__name__)

_TOPIC_ALREADY_EXISTS: Final = 36  # Kafka protocol error code


@dataclass(frozen=True, slots=True)
class TopicSpec:
    """One topic as the deployment wants it (`role` None: a worker's own, such as a changelog)."""

    role: TopicRole | None
    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str] = field(default_factory=dict)


def topic_specs(settings: KafkaSettings) -> tuple[TopicSpec, ...]:
    """The six topics of a deployment.

    - `events`: the source of truth, kept forever;
    - `compaction-requests`: ranges to summarize, kept a week (a request older
      than that has long been re-requested);
    - `projections`: log-compacted, the latest snapshot per session;
    - `dead-letters`: bad input with its reason, kept for
      `dead_letters_retention_ms` and at most `dead_letters_retention_bytes`
      per partition (a session past its size cap makes one letter per append:
      a topic kept forever would fill the broker's disk for every tenant);
    - `partition-owners`: log-compacted, one partition: which projector serves
      context reads of each `events` partition (:mod:`streams.reads.owners`);
    - `api-keys`: log-compacted, one partition: the HTTP API's keys, each
      stored as a salted hash with its tenant (``ctxstream keys``).
    """
    isr = {"min.insync.replicas": str(settings.min_insync_replicas)}
    forever = {"retention.ms": "-1", "retention.bytes": "-1"}
    return (
        TopicSpec(
            "events",
            settings.topic("events"),
            settings.events_partitions,
            settings.replication_factor,
            {**isr, **forever, "cleanup.policy": "delete"},
        ),
        TopicSpec(
            "compaction-requests",
            settings.topic("compaction-requests"),
            settings.partitions,
            settings.replication_factor,
            {**isr, "cleanup.policy": "delete", "retention.ms": str(7 * 24 * 3600 * 1000)},
        ),
        TopicSpec(
            "projections",
            settings.topic("projections"),
            settings.partitions,
            settings.replication_factor,
            {**isr, "cleanup.policy": "compact"},
        ),
        TopicSpec(
            "dead-letters",
            settings.topic("dead-letters"),
            settings.partitions,
            settings.replication_factor,
            {
                **isr,
                "cleanup.policy": "delete",
                "retention.ms": str(settings.dead_letters_retention_ms),
                "retention.bytes": str(settings.dead_letters_retention_bytes),
            },
        ),
        TopicSpec(
            "partition-owners",
            settings.topic("partition-owners"),
            1,  # one log: the newest claim of a partition is the last one in it
            settings.replication_factor,
            {**isr, "cleanup.policy": "compact"},
        ),
        TopicSpec(
            "api-keys",
            settings.topic("api-keys"),
            1,  # one log: a key's newest record, or its tombstone, is the last one in it
            settings.replication_factor,
            {**isr, "cleanup.policy": "compact"},
        ),
    )


@dataclass(frozen=True, slots=True)
class TopicsCreated:
    """What :func:`create_topics` did."""

    created: tuple[str, ...]
    existing: tuple[str, ...]


async def create_topics(settings: KafkaSettings) -> TopicsCreated:
    """Create the deployment's topics that do not exist yet; existing ones are left alone.

    Raises:
        RuntimeError: the broker refused a topic for another reason than that
            it exists already (the message names the topic and the error).
    """
    return await ensure_topics(settings.kafka_bootstrap, topic_specs(settings))


async def ensure_topics(bootstrap: str, specs: Sequence[TopicSpec]) -> TopicsCreated:
    """Create the topics of `specs` that do not exist yet; existing ones are left alone.

    Raises:
        RuntimeError: the broker refused a topic for another reason than that
            it exists already (the message names the topic and the error).
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        present = set(await admin.list_topics())
        missing = [spec for spec in specs if spec.name not in present]
        if missing:
            response = await admin.create_topics(
                [
                    NewTopic(
                        name=spec.name,
                        num_partitions=spec.partitions,
                        replication_factor=spec.replication_factor,
                        topic_configs=dict(spec.config),
                    )
                    for spec in missing
                ]
            )
            for name, code, message in _topic_errors(response):
                if code not in (0, _TOPIC_ALREADY_EXISTS):
                    raise TopicError(name, f"could not be created: error {code}: {message}")
    finally:
        await admin.close()
    created = tuple(spec.name for spec in missing)
    existing = tuple(spec.name for spec in specs if spec.name in present)
    logger.info("topics created=%s existing=%s", ",".join(created), ",".join(existing))
    return TopicsCreated(created, existing)


async def delete_topics_of(settings: KafkaSettings) -> None:
    """Delete every topic whose name starts with the deployment's prefix.

    The six, and the workers' own where their app ids start with the prefix
    (the benchmarks' projectors: ``<prefix>-projector-sessions-changelog``).
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    await admin.start()
    try:
        ours = [t for t in await admin.list_topics() if t.startswith(settings.topic_prefix)]
        if ours:
            await admin.delete_topics(ours)
    finally:
        await admin.close()


async def partition_count(bootstrap: str, topic: str, *, wait_s: float = 0.0) -> int:
    """How many partitions the broker reports for `topic`; 0 when it names none.

    A topic just created may be missing from the metadata for a moment: with
    `wait_s`, the question is asked again until it is there or time runs out.
    """
    deadline = time.monotonic() + wait_s
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        while True:
            described = await admin.describe_topics([topic])
            if described and described[0].get("error_code") == 0 and described[0].get("partitions"):
                return len(described[0]["partitions"])
            if time.monotonic() >= deadline:
                return 0
            await asyncio.sleep(0.1)
    finally:
        await admin.close()


def _topic_errors(response: object) -> list[tuple[str, int, str | None]]:
    # CreateTopics responses list (topic, error_code[, error_message]) per topic.
    rows: list[tuple[str, int, str | None]] = []
    for row in getattr(response, "topic_errors", []):
        name, code = row[0], row[1]
        message = row[2] if len(row) > 2 else None
        rows.append((str(name), int(code), message))
    return rows
