"""Every topic of a deployment, declared once, and their idempotent creation.

Administration itself (ensure, partition count, delete) is the shared
:mod:`schemas.kafka.admin`; this module says which topics a deployment has.
"""

from __future__ import annotations

from schemas.kafka.admin import TopicsCreated, TopicSpec, ensure_topics
from schemas.kafka.settings import KafkaSettings


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


async def create_topics(settings: KafkaSettings) -> TopicsCreated:
    """Create the deployment's topics that do not exist yet; existing ones are left alone.

    Raises:
        TopicError: The broker refused a topic for another reason than that
            it exists already (the message names the topic and the error).
    """
    return await ensure_topics(
        settings.kafka_bootstrap, topic_specs(settings), security=settings.client_security()
    )
