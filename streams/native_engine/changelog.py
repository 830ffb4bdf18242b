"""The native engine's state changelog: its topic, and restoring a partition's store from it.

The changelog is log-compacted and co-partitioned with `events`: the entries
of `events` partition *p* (:mod:`streams.session_table`) go to changelog
partition *p*, inside the transaction that commits *p*'s consumed offset.
Its name is the one faust gives the ``sessions`` table's changelog
(``<app_id>-sessions-changelog``), and its entries have the same layout, so
a reader of one engine's changelog reads the other's.

Restoring reads the changelog's committed records (``read_committed``: an
aborted transaction's entries never reach a store) from the store's
position to the last stable offset, with a consumer of its own that joins no
group. It runs after the partition's transactional producer has started, so
the previous owner is fenced and its open transaction is over: nothing
committed later can precede what was read.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Final

from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.errors import TopicError
from schemas.kafka.admin import TopicSpec, ensure_topics, partition_count
from streams.batch import TableWrite
from streams.native_engine.store import PartitionStore
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)

#: How long a changelog just created may take to appear in the cluster's metadata.
METADATA_WAIT_S: Final = 30.0
#: How long a restore may go without reading anything before it gives up.
RESTORE_STALL_S: Final = 60.0
#: Records applied to the store at once while restoring.
RESTORE_WRITE_BATCH: Final = 5_000


def changelog_topic(settings: ProjectorSettings) -> str:
    """``<app_id>-sessions-changelog``."""
    return f"{settings.app_id}-sessions-changelog"


async def ensure_changelog(settings: ProjectorSettings, partitions: int) -> None:
    """Create the changelog (log-compacted, `partitions` partitions) unless it exists.

    Raises:
        TopicError: The broker refused the topic for another reason than
            that it exists, or it exists with another partition count than
            `events` (its partitions would not line up with `events`').
    """
    name = changelog_topic(settings)
    spec = TopicSpec(
        role=None,
        name=name,
        partitions=partitions,
        replication_factor=settings.replication_factor,
        config={
            "cleanup.policy": "compact",
            "min.insync.replicas": str(settings.min_insync_replicas),
        },
    )
    security = settings.client_security()
    await ensure_topics(settings.kafka_bootstrap, [spec], security=security)
    found = await partition_count(
        settings.kafka_bootstrap, name, wait_s=METADATA_WAIT_S, security=security
    )
    if found != partitions:
        raise TopicError(
            name,
            f"(the changelog) has {found} partitions, events has {partitions}: "
            "they must match (entries of events partition p live in changelog partition p)",
        )


@dataclass(frozen=True, slots=True)
class Restored:
    """What restoring one partition read."""

    partition: int
    records: int
    wiped: bool
    seconds: float


async def restore(settings: ProjectorSettings, partition: int, store: PartitionStore) -> Restored:
    """Bring `store` up to the changelog partition's last stable offset.

    A store whose position is past the partition's end (the topic was
    deleted and made anew) is wiped and restored from the start.

    Raises:
        TimeoutError: Nothing could be read for :data:`RESTORE_STALL_S`
            while records remained.
    """
    started = time.monotonic()
    tp = TopicPartition(changelog_topic(settings), partition)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        **settings.client_security(),
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    records = 0
    wiped = False
    try:
        consumer.assign([tp])
        beginning = (await consumer.beginning_offsets([tp]))[tp]
        end = (await consumer.end_offsets([tp]))[tp]
        if store.changelog_next > end:
            logger.warning(
                "changelog partition=%d ends at %d below the store's position %d: "
                "the topic was made anew; wiping the store",
                partition,
                end,
                store.changelog_next,
            )
            store.wipe()
            wiped = True
        position = max(store.changelog_next, beginning)
        consumer.seek(tp, position)
        progress_at = time.monotonic()
        while position < end:
            fetched = await consumer.getmany(tp, timeout_ms=200, max_records=RESTORE_WRITE_BATCH)
            writes = [
                TableWrite(partition, record.key, record.value)
                for record in fetched.get(tp, [])
                if record.key is not None
            ]
            records += len(writes)
            new_position = await consumer.position(tp)
            if new_position > position:  # past every record read, or markers only
                store.apply(writes, new_position)
                position = new_position
                progress_at = time.monotonic()
            elif time.monotonic() - progress_at > RESTORE_STALL_S:
                raise TimeoutError(
                    f"restoring changelog partition {partition}: no progress for "
                    f"{RESTORE_STALL_S:g} s at offset {position} of {end}"
                )
    finally:
        await consumer.stop()
    return Restored(partition, records, wiped, time.monotonic() - started)
