"""Who serves context reads of each `events` partition: claims on the `partition-owners` topic.

A native projector that has restored an `events` partition *claims* it: a
signed record (:mod:`streams.reads.claim`) keyed by the partition, naming its
read endpoint, committed in a transaction of the partition's own producer, so
the next owner's ``InitProducerId`` fences a worker that lost it. Read
``read_committed`` in log order, the newest claim of a partition is its
newest owner's. :class:`PartitionOwners` is the directory the client routes
with and a worker names owners from; it reads the topic on demand and takes
in only validly signed claims. Example, 4 partitions, workers A then B:
claims 0..3 -> A, then 2 -> B, 3 -> B; owners 0 -> A, 1 -> A, 2 -> B, 3 -> B.
The reasons in full: this folder's README.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from pydantic import ValidationError

from schemas.codec import encode
from schemas.kafka.admin import TopicsCreated, ensure_topics
from schemas.kafka.settings import KafkaSettings
from schemas.kafka.transaction import transaction
from schemas.log_text import shown
from schemas.read_secret import read_keys
from streams.reads.claim import PartitionClaim, UnsignedClaim, claim_refusal, decode_claim
from streams.topics import topic_specs

logger = logging.getLogger(__name__)

#: The only partition of the `partition-owners` topic.
OWNERS_PARTITION: Final = 0
#: How long one fetch of a refresh waits for records the end offset promised.
_FETCH_MS: Final = 200
#: Skipped records logged one line each; past these, every 1000th (with the count).
_LOGGED_SKIPS: Final = 10


def claim_key(partition: int) -> bytes:
    """The record key of a claim of `partition`: its number, so compaction keeps the newest."""
    return str(partition).encode()


async def ensure_owners_topic(settings: KafkaSettings) -> TopicsCreated:
    """Create the deployment's `partition-owners` topic unless it exists.

    A deployment whose topics were created before the role existed gets it
    from its first native worker.
    """
    specs = [spec for spec in topic_specs(settings) if spec.role == "partition-owners"]
    return await ensure_topics(settings.kafka_bootstrap, specs, security=settings.client_security())


async def write_claim(producer: AIOKafkaProducer, topic: str, claim: PartitionClaim) -> None:
    """Commit `claim` in one transaction of the claimed partition's producer.

    Raises:
        Exception: The transaction failed; a fenced producer among the
            causes, when another worker took the partition over meanwhile.
    """
    async with transaction(producer) as open_transaction:
        await open_transaction.send(
            topic, key=claim_key(claim.partition), value=encode(claim), partition=OWNERS_PARTITION
        )
    logger.info(
        "partition claimed partition=%d address=%s worker=%s",
        claim.partition,
        shown(claim.address),
        shown(claim.worker_id),
    )


class PartitionOwners:
    """The newest committed claim of each `events` partition, read from the topic on demand.

    Holds one ``read_committed`` consumer of the topic's only partition,
    started at the first :meth:`refresh` (which also reads the read secret);
    :meth:`close` stops it. Refreshes take turns, so concurrent callers
    share one reader.
    """

    def __init__(self, settings: KafkaSettings) -> None:
        """A directory of the deployment `settings` name; nothing connects yet."""
        self._settings = settings
        self._bootstrap = settings.kafka_bootstrap
        self._security = settings.client_security()
        self._claim_key: bytes | None = None
        self._skipped = 0
        self._unsigned_logged = False
        self._topic = settings.topic("partition-owners")
        self._tp = TopicPartition(self._topic, OWNERS_PARTITION)
        self._consumer: AIOKafkaConsumer | None = None
        self._assigned = False
        self._claims: dict[int, PartitionClaim] = {}
        self._newest: PartitionClaim | None = None
        self._turn = asyncio.Lock()

    @property
    def topic(self) -> str:
        """The `partition-owners` topic this directory reads."""
        return self._topic

    def owner(self, partition: int) -> PartitionClaim | None:
        """The newest signed claim of `partition` read so far (None: nobody claimed it yet)."""
        return self._claims.get(partition)

    @property
    def events_partitions(self) -> int | None:
        """The partition count the newest signed claim routes by (None before any)."""
        return self._newest.events_partitions if self._newest is not None else None

    async def refresh(self) -> None:
        """Read every claim committed up to the topic's end as of now.

        A topic that does not exist yet (no native worker ever ran on the
        deployment) holds no claims: the directory stays as it is.
        """
        async with self._turn:
            if self._claim_key is None:
                self._claim_key = read_keys(self._settings).claims
            consumer = await self._started()
            if not self._assigned:
                if self._topic not in await consumer.topics():
                    return
                consumer.assign([self._tp])
                await consumer.seek_to_beginning(self._tp)
                self._assigned = True
            end = (await consumer.end_offsets([self._tp]))[self._tp]
            while await consumer.position(self._tp) < end:
                fetched = await consumer.getmany(self._tp, timeout_ms=_FETCH_MS)
                for record in fetched.get(self._tp, []):
                    self._note(record.key, record.value)

    def _note(self, key: bytes | None, value: bytes | None) -> None:
        """Take one record of the topic in: a signed claim; anything else is skipped."""
        if value is None:
            # Workers never delete claims: a tombstone is another writer's, and would
            # leave a partition unserved.
            self._skip("a tombstone", shown(key))
            return
        try:
            claim = decode_claim(value)
        except ValidationError as exc:
            # Another writer's record, or a newer schema: the claims around it still count.
            self._skip("not a claim", shown(str(exc), 300))
            return
        if isinstance(claim, UnsignedClaim):
            if not self._unsigned_logged:
                self._unsigned_logged = True
                logger.warning(
                    "unsigned claims skipped topic=%s partition=%d: written before claims "
                    "were signed; the partition's next owner signs its claim",
                    self._topic,
                    claim.partition,
                )
            return
        assert self._claim_key is not None  # noqa: S101 (refresh read it first)
        refused = claim_refusal(self._claim_key, claim)
        if refused is not None:
            self._skip(refused, f"partition={claim.partition} address={shown(claim.address)}")
            return
        self._claims[claim.partition] = claim
        self._newest = claim

    def _skip(self, why: str, what: str) -> None:
        """Log a skipped record: the first few, then every 1000th, each with the count so far."""
        self._skipped += 1
        if self._skipped <= _LOGGED_SKIPS or self._skipped % 1000 == 0:
            logger.warning(
                "claim skipped topic=%s skipped=%d reason=%s %s",
                self._topic,
                self._skipped,
                why,
                what,
            )

    async def _started(self) -> AIOKafkaConsumer:
        if self._consumer is None:
            consumer = AIOKafkaConsumer(
                bootstrap_servers=self._bootstrap,
                **self._security,
                enable_auto_commit=False,
                isolation_level="read_committed",
                auto_offset_reset="earliest",
            )
            try:
                await consumer.start()
            except BaseException:
                # A start that failed or was cancelled (a read's time ran out) leaves the
                # consumer's client open: close it, or it leaks until the process ends.
                await consumer.stop()
                raise
            self._consumer = consumer
        return self._consumer

    async def close(self) -> None:
        """Stop the reader, if it started."""
        consumer, self._consumer = self._consumer, None
        self._assigned = False
        if consumer is not None:
            await consumer.stop()
