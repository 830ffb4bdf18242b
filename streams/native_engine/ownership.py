"""The `events` partitions a native engine owns: taking them over, restoring and releasing them.

An assigned partition is paused until the consume loop restores it, under
the engine's lock, in partition order: its producer starts (fencing the
previous owner), its store is restored from the changelog, it starts at the
larger of the group's committed offset and the position its state recorded
(``p:``), its in-flight requests are learned, its read endpoint is claimed
on `partition-owners`, and it resumes. A revocation waits for the running
batch, then stops the producer, closes the store and forgets the
partition's sessions, requests and fork preparations. Kafka is reached only
through :class:`Takeover` and :class:`AssignedConsumer`; the order and its
reasons are in this folder's README.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Final, Protocol

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener

from schemas.kafka.transaction import Transaction, partition_producer, transaction
from streams.fork_preparation import ForkPreparations
from streams.native_engine.changelog import Restored, restore
from streams.native_engine.retries import RequestRetries
from streams.native_engine.store import PartitionStore, PartitionStores
from streams.projector_settings import ProjectorSettings
from streams.reads.claim import PartitionClaim, signed_claim
from streams.reads.gate import ReadGate
from streams.reads.owners import write_claim
from streams.session_table import position_key

logger = logging.getLogger(__name__)

#: Transactions older than this are aborted by the broker: well above the longest batch.
TRANSACTION_TIMEOUT_MS: Final = 30_000
#: How long stopping a partition's producer may take before it is left behind.
PRODUCER_STOP_TIMEOUT_S: Final = 10.0


def new_worker_id() -> str:
    """``<host>-<pid>-<random>``: the name this process's claims carry."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


@dataclass(slots=True)
class OwnedPartition:
    """A restored `events` partition: its producer, its store, the next offset to fold."""

    partition: int
    tp: TopicPartition
    producer: AIOKafkaProducer
    store: PartitionStore
    next_offset: int

    def read(self, partition: int, key: bytes) -> bytes | None:
        """The store's entry of `key`: the batch step's table reader of this partition."""
        return self.store.get(key)


class AssignedConsumer(Protocol):
    """What ownership needs of the group's consumer (aiokafka's)."""

    def assignment(self) -> AbstractSet[TopicPartition]:
        """The partitions the group assigned to this consumer."""
        ...

    async def committed(self, partition: TopicPartition) -> int | None:
        """The group's committed offset of `partition`, if any."""
        ...

    def seek(self, partition: TopicPartition, offset: int) -> None:
        """Fetch `partition` from `offset` on."""
        ...

    def pause(self, *partitions: TopicPartition) -> None:
        """Fetch nothing of `partitions` until resumed."""
        ...

    def resume(self, *partitions: TopicPartition) -> None:
        """Fetch `partitions` again."""
        ...


class Takeover(Protocol):
    """What taking a partition over does on Kafka."""

    def producer(self, partition: int) -> AIOKafkaProducer:
        """The partition's transactional producer, not started yet."""
        ...

    async def restore(self, partition: int, store: PartitionStore) -> Restored:
        """Bring `store` up to the partition's changelog."""
        ...

    async def claim(self, producer: AIOKafkaProducer, claim: PartitionClaim) -> None:
        """Commit `claim` on `partition-owners` in a transaction of `producer`."""
        ...


class KafkaTakeover:
    """:class:`Takeover` on the deployment's broker."""

    def __init__(self, settings: ProjectorSettings) -> None:
        """Producers, changelogs and claims of `settings`' deployment."""
        self._settings = settings

    def producer(self, partition: int) -> AIOKafkaProducer:
        """The partition's producer; its start fences the previous owner's."""
        return partition_producer(
            self._settings.kafka_bootstrap,
            owner=self._settings.app_id,
            topic=self._settings.topic("events"),
            partition=partition,
            transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
            security=self._settings.client_security(),
        )

    async def restore(self, partition: int, store: PartitionStore) -> Restored:
        """Read the changelog's committed records past the store's position into it."""
        return await restore(self._settings, partition, store)

    async def claim(self, producer: AIOKafkaProducer, claim: PartitionClaim) -> None:
        """Commit `claim` on the deployment's `partition-owners` topic."""
        await write_claim(producer, self._settings.topic("partition-owners"), claim)


class PartitionOwnership:
    """The partitions this engine owns, and the restores and releases that change them."""

    def __init__(
        self,
        settings: ProjectorSettings,
        *,
        lock: asyncio.Lock,
        takeover: Takeover,
        gate: ReadGate,
        retries: RequestRetries,
        forks: ForkPreparations,
        forget_sessions: Callable[[set[int]], None],
        partitions: Callable[[], int],
        worker_id: str,
    ) -> None:
        """Ownership under the engine's `lock`, telling `gate`, `retries` and `forks` what moves.

        `forget_sessions` drops the cached sessions of released partitions;
        `partitions` is the `events` partition count, as known now.
        """
        self._settings = settings
        self._events = settings.topic("events")
        self._lock = lock
        self._takeover = takeover
        self._gate = gate
        self._retries = retries
        self._forks = forks
        self._forget_sessions = forget_sessions
        self._partitions = partitions
        self._worker_id = worker_id
        self.stores = PartitionStores(settings)
        self._owned: dict[int, OwnedPartition] = {}
        self._restoring: set[int] = set()
        #: The last restore of each partition this engine restored.
        self.restored: dict[int, Restored] = {}
        self._address: str | None = None
        self._claim_key: bytes | None = None

    def __contains__(self, partition: int) -> bool:
        return partition in self._owned

    def __iter__(self) -> Iterator[OwnedPartition]:
        return iter(list(self._owned.values()))

    def get(self, partition: int) -> OwnedPartition | None:
        """The owned partition, or None when this engine does not own it (yet)."""
        return self._owned.get(partition)

    def owned(self) -> set[int]:
        """The restored partitions this engine folds."""
        return set(self._owned)

    def advertise(self, address: str, claim_key: bytes) -> None:
        """Claim every partition restored from now on for the read endpoint at `address`."""
        self._address = address
        self._claim_key = claim_key

    def transaction(
        self, partition: int
    ) -> contextlib.AbstractAsyncContextManager[Transaction] | None:
        """A new transaction of the owned partition's producer; None when it is not owned."""
        owned = self._owned.get(partition)
        return None if owned is None else transaction(owned.producer)

    async def on_assigned(self, consumer: AssignedConsumer, partitions: set[int]) -> None:
        """Partitions assigned: paused until the consume loop restores them (under the lock)."""
        async with self._lock:
            for partition in partitions - set(self._owned):
                consumer.pause(TopicPartition(self._events, partition))
                self._restoring.add(partition)
            self._gate.assigned(partitions - set(self._owned))

    async def revoked(self, partitions: set[int]) -> None:
        """Partitions revoked: waits for the running batch, then forgets them."""
        async with self._lock:
            await self.release(partitions)

    async def release_all(self) -> None:
        """Forget every partition (the engine stops), once the running batch is over."""
        async with self._lock:
            await self.release(set(self._owned))

    async def restore_assigned(self, consumer: AssignedConsumer) -> None:
        """Restore every assigned partition, in partition order; the caller holds the lock."""
        for partition in sorted(self._restoring):
            self._restoring.discard(partition)
            tp = TopicPartition(self._events, partition)
            if tp not in consumer.assignment():
                self._gate.released({partition})
                continue
            producer = self._takeover.producer(partition)
            await producer.start()  # InitProducerId: the previous owner is fenced from here on
            store = self.stores.open(partition)
            try:
                restored = await self._takeover.restore(partition, store)
                committed = await consumer.committed(tp)
                stored = store.get(position_key(partition))
                start = max(committed or 0, int(stored) if stored is not None else 0)
            except BaseException:
                await producer.stop()
                store.close()
                raise
            consumer.seek(tp, start)
            self.restored[partition] = restored
            owned = OwnedPartition(partition, tp, producer, store, start)
            self._owned[partition] = owned
            self._retries.learn(partition, store, time.time())
            await self._claim(owned)
            self._gate.restored(partition, start)
            consumer.resume(tp)
            logger.info(
                "partition restored partition=%d entries=%d wiped=%s seconds=%.3f start=%d",
                partition,
                restored.records,
                restored.wiped,
                restored.seconds,
                start,
            )

    async def release(self, partitions: set[int]) -> None:
        """Forget partitions no longer owned; the caller holds the lock.

        Producers stopped, stores closed, sessions, requests and fork
        preparations dropped.
        """
        self._gate.released(partitions)
        self._restoring -= partitions
        await self._forks.revoked(partitions)
        for partition in sorted(partitions & set(self._owned)):
            owned = self._owned.pop(partition)
            # A fenced producer may refuse to stop cleanly, or not answer at all.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(owned.producer.stop(), PRODUCER_STOP_TIMEOUT_S)
            owned.store.close()  # a memory store stays whole for the partition's return
        self._forget_sessions(partitions)
        self._retries.revoked(partitions)

    def table_entries(self) -> dict[int, dict[bytes, bytes]]:
        """Each owned partition's table entries. O(state): for tests and tools."""
        return {partition: owned.store.entries() for partition, owned in self._owned.items()}

    async def _claim(self, owned: OwnedPartition) -> None:
        """Advertise this worker's read endpoint as the partition's on `partition-owners`."""
        if self._address is None or self._claim_key is None:
            return
        claim = signed_claim(
            self._claim_key,
            partition=owned.partition,
            events_partitions=self._partitions(),
            address=self._address,
            worker_id=self._worker_id,
            app_id=self._settings.app_id,
        )
        await self._takeover.claim(owned.producer, claim)


class Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    """Hands the group's rebalances of `events` to the ownership, under the engine's lock."""

    def __init__(
        self, ownership: PartitionOwnership, consumer: AssignedConsumer, events: str
    ) -> None:
        """The listener of `consumer`, passing `events`' partitions to `ownership`."""
        self._ownership = ownership
        self._consumer = consumer
        self._events = events

    def _partitions(self, tps: Sequence[Any]) -> set[int]:
        return {tp.partition for tp in tps if tp.topic == self._events}

    async def on_partitions_revoked(self, revoked: Sequence[Any]) -> None:
        """Release `revoked`, once the running batch is over."""
        await self._ownership.revoked(self._partitions(revoked))

    async def on_partitions_assigned(self, assigned: Sequence[Any]) -> None:
        """Pause `assigned` until the consume loop restores them."""
        await self._ownership.on_assigned(self._consumer, self._partitions(assigned))
