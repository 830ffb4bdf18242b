"""The native projector engine: aiokafka with Kafka transactions around :class:`BatchProjector`.

Exactly once, per `events` partition. The consumer reads `events`
``read_committed`` in batches (``getmany``); each partition's records of a
batch are folded by the batch step, and everything they cause (compaction
requests, the table's entries on the state changelog, snapshots, dead
letters) is written together with the partition's consumed offset
(``send_offsets_to_transaction``) in one transaction of that partition's
producer. A crash anywhere leaves all of a batch's effects or none: the
records of an aborted or never-committed transaction are read again by the
partition's next owner, whose state holds none of their effects.

Zombie fencing: each owned partition has its own transactional producer,
``transactional_id = <app_id>-<events topic>-<partition>``, stable across
processes. aiokafka 0.14 has no KIP-447 (``TxnOffsetCommit`` with the
consumer's group metadata), so one id per process would let a worker that
was paused while its partitions moved commit when it wakes; with one id per
partition, the next owner's ``InitProducerId`` bumps the id's epoch, which
fences the paused one (its commit fails and the worker stops) and ends its
open transaction before the new owner reads the partition's offset or state.

State: the partition's table entries live in a local store
(:mod:`streams.native_engine.store`) written only after the transaction
committed, and in the changelog (:mod:`streams.native_engine.changelog`) written
inside it. On assignment, in this order and under the engine's lock:
start the producer (fence), restore the store from the changelog's committed
records past its position, take the start offset as the larger of the
group's committed offset and the position the state recorded (``p:``, in
the same transaction as the offset), seek there and resume the partition.

A lock serializes batches with the rebalance callbacks: a revocation waits
for the running batch's transaction, then stops the partition's producer and
forgets its sessions; records of a partition not (yet) restored, or below
the offset the engine expects next, are dropped.

Reads: the engine answers context and projection reads of the sessions it
owns on its read endpoint (:mod:`streams.reads.web`), from committed state
only: it tells a :class:`~streams.reads.gate.ReadGate` when a partition is
restored, when a batch has folded into the cache and when it committed,
and claims each partition it restored on the `partition-owners` topic, in a
transaction of the partition's producer (:mod:`streams.reads.owners`).

In-flight requests are retried by the engine's retry timer
(:class:`~streams.pending_requests.PendingRequests`) inside transactions of
the session's partition; a request refused after its last attempt appends
its refusal to `events` the same way.

Backpressure: a backlog (a burst, a restart behind) waits on the broker, not
in memory. aiokafka fetches in the background, but 0.14's fetcher keeps at
most one fetched chunk per assigned partition (at most
``max_partition_fetch_bytes``, or one record batch when a single batch is
larger, up to the broker's ``message.max.bytes``) and sends a partition's
next fetch only once every record of its chunk was taken: a partition whose
chunk waits is in effect paused until the fold catches up. The loop takes a
batch (``getmany``, at most ``batch_size`` records, at most one chunk per
partition) only after the previous batch committed, and while it folds the
drained partitions' next chunks arrive. So the raw bytes of fetched records
held ahead of and in the fold are at most two chunks per owned partition
plus the fetch response being decoded (``fetch_max_bytes``):
:meth:`~streams.projector_settings.ProjectorSettings.fetched_bytes_bound`,
36 MiB with the defaults (1 MiB chunks, 16 MiB responses) and 12
partitions. The engine needs no ``pause`` of its own for this; the only
partitions it pauses are newly assigned ones, until they are restored, and
one at a record that starts a new fork, until the fork's inheritance is
prepared.

Forks: a batch folds a partition's records only up to the first record
that starts a new fork whose inheritance is not prepared; the partition
seeks back to that record and pauses while
:class:`~streams.fork_preparation.ForkPreparations` reads and folds what the
fork inherits without the lock (O(the source)), so every other partition
folds on; when the record comes again the batch step takes the prepared
inheritance. A revocation cancels the partition's preparation.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener

from projections.fold.projection import NO_OFFSET, SessionProjection
from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.kafka.admin import partition_count
from schemas.kafka.partitioning import session_partition
from schemas.kafka.transaction import Transaction, partition_producer, transaction
from schemas.keys import SessionKey
from schemas.read_secret import read_keys
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
    TableWrite,
    inherit,
    rebuild_session,
    stored_header,
)
from streams.fork_preparation import ForkPreparations
from streams.native_engine.changelog import Restored, changelog_topic, ensure_changelog, restore
from streams.native_engine.store import MemoryPartitionStore, PartitionStore, RocksPartitionStore
from streams.native_engine.web import serving
from streams.pending_requests import PendingRequests
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings
from streams.reads.claim import signed_claim
from streams.reads.gate import ReadGate
from streams.reads.owners import write_claim
from streams.reads.sessions import committed_projection
from streams.reads.web import serving_reads
from streams.request_records import log_emission, stored_request, timed_out_refusal
from streams.session_history import SessionHistory
from streams.session_table import (
    header_key,
    position_key,
    request_key,
    session_of_request_key,
)

logger = logging.getLogger(__name__)

#: How long a starting engine waits for the `events` topic to appear in the metadata.
EVENTS_METADATA_WAIT_S: Final = 10.0

#: Transactions older than this are aborted by the broker: well above the longest batch.
TRANSACTION_TIMEOUT_MS: Final = 30_000
#: How long stopping a partition's producer may take before it is left behind.
PRODUCER_STOP_TIMEOUT_S: Final = 10.0


@dataclass(slots=True)
class OwnedPartition:
    """A restored `events` partition: its producer, its store, the next offset to fold."""

    partition: int
    tp: TopicPartition
    producer: AIOKafkaProducer
    store: PartitionStore
    next_offset: int


class NativeProjector:
    """The projector on aiokafka with one transaction per partition and batch."""

    def __init__(self, settings: ProjectorSettings, metrics: ProjectorMetrics | None = None):
        """An engine for `settings`; :meth:`run` (or :meth:`start`) runs it."""
        self._settings = settings
        self.metrics = metrics or ProjectorMetrics()
        self._events = settings.topic("events")
        self._requests = settings.topic("compaction-requests")
        self._snapshots = settings.topic("projections")
        self._dead_letters = settings.topic("dead-letters")
        self._changelog = changelog_topic(settings)
        self._lock = asyncio.Lock()
        self._owned: dict[int, OwnedPartition] = {}
        self._restoring: set[int] = set()
        self._memory_stores: dict[int, MemoryPartitionStore] = {}
        self._cache = SessionCache(settings.session_cache_bytes)
        self._history = SessionHistory(settings)
        self._read_history = SessionHistory(settings)  # reads take turns on their own reader
        self._forks = ForkPreparations(settings)
        self._projector: BatchProjector | None = None
        self._partitions = settings.events_partitions
        self.pending = PendingRequests()
        self._retry_at = 0.0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.started = asyncio.Event()
        #: The last restore of each partition this engine restored.
        self.restored: dict[int, Restored] = {}
        self.first_batch_at: float | None = None
        self.last_batch_at: float | None = None
        #: Where each owned partition stands for reads (committed state only).
        self.reads = ReadGate()
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        #: The read endpoint's address, once it listens: what the claims name.
        self.read_address: str | None = None
        #: The key the claims are signed with (the read secret's), read when the engine runs.
        self._claim_key: bytes | None = None

    # -- running ---------------------------------------------------------------------

    async def start(self) -> None:
        """Run the engine in a task of this loop; returns once it has joined its group."""
        self._stop.clear()
        self._task = asyncio.create_task(self.run(self._stop), name="native-projector")
        started = asyncio.create_task(self.started.wait())
        await asyncio.wait({self._task, started}, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if self._task.done():
            self._task.result()  # raises the failure that ended it

    async def stop(self) -> None:
        """Stop the task :meth:`start` started; raises its failure, if it failed."""
        self._stop.set()
        if self._task is not None:
            task, self._task = self._task, None
            await task

    async def run(self, stop: asyncio.Event) -> None:
        """Fold `events` until `stop` is set.

        Raises:
            Exception: A transaction, a restore or the consumer failed (a
                fenced producer among them); the worker stops, and the records
                not committed are read again by the partitions' next owners.
        """
        settings = self._settings
        self._claim_key = read_keys(settings).claims  # a secret it cannot have stops it first
        session_timeout_ms = int(settings.session_timeout_s * 1000)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap,
            group_id=settings.app_id,
            enable_auto_commit=False,
            isolation_level="read_committed",
            auto_offset_reset="earliest",
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=min(3000, session_timeout_ms // 3),
            # What bounds the records fetched ahead of the fold (the module's docstring).
            max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
            fetch_max_bytes=settings.fetch_max_bytes,
        )
        await consumer.start()
        try:
            self._partitions = await self._partition_count()
            await ensure_changelog(settings, self._partitions)
            projector = BatchProjector(settings, self._cache, partitions=self._partitions)
            self._projector = projector
            consumer.subscribe([self._events], listener=_Rebalance(self, consumer))
            logger.info(
                "native projector started group=%s events=%s partitions=%d store=%s "
                "fetched_bytes_bound=%d",
                settings.app_id,
                self._events,
                self._partitions,
                self._store_kind(),
                settings.fetched_bytes_bound(self._partitions),
            )
            self.started.set()
            self.metrics.folding_alive.set(1)
            async with (
                serving(settings, self.metrics, self._lag_of(consumer), self.batch_age_s),
                serving_reads(settings, self.reads, self, worker_id=self.worker_id) as address,
            ):
                self.read_address = address
                try:
                    await self._consume(consumer, projector, stop)
                except BaseException:
                    self.metrics.folding_alive.set(0)
                    raise
        finally:
            async with self._lock:
                await self._release(set(self._owned))
            await consumer.stop()
            await self._forks.stop()
            await self._history.stop()
            await self._read_history.stop()
            logger.info("native projector stopped")

    async def _partition_count(self) -> int:
        # A topic created a moment ago may not be in the metadata yet: ask again for a while.
        partitions = await partition_count(
            self._settings.kafka_bootstrap, self._events, wait_s=EVENTS_METADATA_WAIT_S
        )
        if partitions != self._settings.events_partitions:
            logger.warning(
                "events has %d partitions, settings say %d: records are checked against %d",
                partitions,
                self._settings.events_partitions,
                partitions,
            )
        return partitions

    async def _consume(
        self, consumer: AIOKafkaConsumer, projector: BatchProjector, stop: asyncio.Event
    ) -> None:
        settings = self._settings
        poll_ms = int(settings.batch_within_s * 1000)
        while not stop.is_set():
            async with self._lock:
                await self._restore_assigned(consumer)
            batches = await consumer.getmany(timeout_ms=poll_ms, max_records=settings.batch_size)
            async with self._lock:
                await self._fold(consumer, projector, batches)
                now = time.time()
                if now >= self._retry_at:
                    self._retry_at = now + settings.request_check_interval_s
                    await self._retry_due(now)

    # -- folding -----------------------------------------------------------------------

    async def _fold(
        self,
        consumer: AIOKafkaConsumer,
        projector: BatchProjector,
        batches: dict[TopicPartition, list[ConsumerRecord]],
    ) -> None:
        """Fold each owned partition's new records, one transaction per partition."""
        started = time.perf_counter()
        assigned = consumer.assignment()
        commits = []
        for owned in self._owned.values():
            if owned.tp not in assigned:
                continue
            records = [r for r in batches.get(owned.tp, []) if r.offset >= owned.next_offset]
            # Past every record returned, and past commit markers and aborted records
            # the fetch skipped, so a partition whose log ends in a marker is caught up.
            position = max(await consumer.position(owned.tp), owned.next_offset)
            if not records and position == owned.next_offset:
                continue
            sources = [
                SourceRecord(r.topic, r.partition, r.offset, r.key, r.value or b"") for r in records
            ]
            cut = self._forks.first_unprepared(owned.partition, sources, _reader(owned.store))
            if cut is not None:
                # Folded up to the new fork only; its partition waits for its inheritance.
                position = sources[cut].offset
                self._prepare_fork(consumer, owned, sources[cut])
                sources = sources[:cut]
                if position == owned.next_offset:
                    continue
            self.reads.folding(owned.partition)  # the cache runs ahead of the commit from here
            outcome = projector.project(sources, _reader(owned.store))
            await self._history.complete(
                projector, outcome, _reader(owned.store), self._history_start, self._forks.take
            )
            commits.append(self._commit(owned, outcome, position))
        if not commits:
            return
        now = time.monotonic()
        if self.first_batch_at is None:
            self.first_batch_at = now
        # One partition's failure (a fenced producer) cancels the others' transactions, which
        # abort, and waits for them: nothing of this batch runs on after the engine stops.
        async with asyncio.TaskGroup() as group:
            for commit in commits:
                group.create_task(commit)
        self.last_batch_at = time.monotonic()
        self.metrics.batch_seconds.observe(time.perf_counter() - started)
        self.metrics.sessions_cached.set(len(self._cache))
        self.metrics.cache_bytes.set(self._cache.bytes)
        self.metrics.sessions_quarantined.set(len(projector.quarantined))

    def _prepare_fork(
        self, consumer: AIOKafkaConsumer, owned: OwnedPartition, record: SourceRecord
    ) -> None:
        """Pause `owned` at the fork `record` starts until its inheritance is prepared."""
        tp = owned.tp
        consumer.seek(tp, record.offset)
        consumer.pause(tp)

        def prepared() -> None:
            if owned.partition in self._owned and tp in consumer.assignment():
                consumer.resume(tp)

        self._forks.start(record, self._partitions, self._history_start, prepared)

    async def _commit(self, owned: OwnedPartition, outcome: BatchOutcome, position: int) -> None:
        """One transaction: `outcome`'s records and the partition's offset `position`."""
        partition = owned.partition
        writes = [
            *outcome.writes,  # after the sessions' entries: a position never runs ahead
            TableWrite(partition, position_key(partition), str(position).encode()),
        ]
        snapshots, failed = outcome.snapshot_records()
        letters = [*outcome.dead_letters, *failed]
        async with transaction(owned.producer) as open_transaction:
            for request, _ in outcome.requests:
                await self._send_request(open_transaction, request, "first")
            changelog = [
                await open_transaction.send(
                    self._changelog, key=write.key, value=write.value, partition=partition
                )
                for write in writes
            ]
            for key, value in snapshots:
                await open_transaction.send(self._snapshots, key=key, value=value)
            for letter in letters:
                await open_transaction.send(
                    self._dead_letters, key=letter.record_key(), value=encode(letter)
                )
                self.metrics.dead_letters_by_stage.labels(stage=letter.stage).inc()
            if self._settings.fault_transaction_pause_s:
                await open_transaction.delivered()
                logger.info("transaction open partition=%d position=%d", partition, position)
                await asyncio.sleep(self._settings.fault_transaction_pause_s)
            await open_transaction.commit_offsets({owned.tp: position}, self._settings.app_id)
        placed = [delivery.result() for delivery in changelog]
        # Committed: the store follows, with the changelog position past this batch.
        owned.store.apply(writes, max(metadata.offset for metadata in placed) + 1)
        owned.next_offset = position
        self._forks.committed(partition, position)
        self.reads.committed(partition, position)
        now = time.time()
        for request, request_partition in outcome.requests:
            self.pending.emitted(request, request_partition, now)
        for session_key in outcome.answered:
            self.pending.answered(session_key)
        for request, request_partition in outcome.learned:
            self.pending.learned(request, request_partition, now)
        metrics = self.metrics
        metrics.events_applied.inc(outcome.applied)
        metrics.events_redelivered.inc(outcome.redelivered)
        metrics.dead_letters.inc(len(letters))
        metrics.snapshots.inc(len(snapshots))

    async def _send_request(
        self, open_transaction: Transaction, request: CompactionRequest, kind: str
    ) -> None:
        log_emission(request)
        await open_transaction.send(
            self._requests, key=request.session_key.encode(), value=encode(request)
        )
        self.metrics.requests_emitted.labels(trigger=request.trigger, kind=kind).inc()

    # -- request retries ------------------------------------------------------------------

    async def _retry_due(self, now: float) -> None:
        """Re-emit in-flight requests older than the timeout; refuse those out of attempts."""
        settings = self._settings
        due = self.pending.due(
            now, settings.compaction_request_timeout_s, settings.compaction_request_max_attempts
        )
        retries: dict[int, list[CompactionRequest]] = {}
        for retry in due.retries:
            partition = session_partition(retry.session_key.encode(), self._partitions)
            retries.setdefault(partition, []).append(retry)
        refusals: dict[int, list[CompactionRequest]] = {}
        for pending in due.refused:
            refusals.setdefault(pending.partition, []).append(pending.request)
        for partition in sorted(set(retries) | set(refusals)):
            owned = self._owned.get(partition)
            if owned is None:
                continue  # revoked: the partition's next owner learns its requests anew
            async with transaction(owned.producer) as open_transaction:
                for retry in retries.get(partition, []):
                    await self._send_request(open_transaction, retry, "retry")
                for request in refusals.get(partition, []):
                    envelope = timed_out_refusal(
                        request,
                        app_id=settings.app_id,
                        timeout_s=settings.compaction_request_timeout_s,
                        now=now,
                    )
                    await open_transaction.send(
                        self._events,
                        key=request.session_key.encode(),
                        value=encode(envelope),
                        partition=partition,
                    )
                    self.metrics.requests_refused.inc()

    # -- partitions ------------------------------------------------------------------------

    def _store_kind(self) -> str:
        return "rocksdb" if self._settings.table_store.startswith("rocksdb") else "memory"

    def _open_store(self, partition: int) -> PartitionStore:
        if self._store_kind() == "rocksdb":
            path = Path(self._settings.data_dir) / f"{self._settings.app_id}-sessions"
            return RocksPartitionStore(path / f"partition-{partition}")
        # Kept across revocations like a RocksDB database's files: a partition that comes
        # back restores only the changelog's tail.
        return self._memory_stores.setdefault(partition, MemoryPartitionStore())

    async def _restore_assigned(self, consumer: AIOKafkaConsumer) -> None:
        """Restore every assigned partition, in the order the module's docstring gives."""
        for partition in sorted(self._restoring):
            self._restoring.discard(partition)
            tp = TopicPartition(self._events, partition)
            if tp not in consumer.assignment():
                self.reads.released({partition})
                continue
            producer = partition_producer(
                self._settings.kafka_bootstrap,
                owner=self._settings.app_id,
                topic=self._events,
                partition=partition,
                transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
            )
            await producer.start()  # InitProducerId: the previous owner is fenced from here on
            store = self._open_store(partition)
            try:
                restored = await restore(self._settings, partition, store)
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
            self._learn_requests(owned)
            await self._claim(owned)
            self.reads.restored(partition, start)
            consumer.resume(tp)
            logger.info(
                "partition restored partition=%d entries=%d wiped=%s seconds=%.3f start=%d",
                partition,
                restored.records,
                restored.wiped,
                restored.seconds,
                start,
            )

    async def _claim(self, owned: OwnedPartition) -> None:
        """Advertise this worker's read endpoint as the partition's on `partition-owners`."""
        if self.read_address is None or self._claim_key is None:
            return
        claim = signed_claim(
            self._claim_key,
            partition=owned.partition,
            events_partitions=self._partitions,
            address=self.read_address,
            worker_id=self.worker_id,
            app_id=self._settings.app_id,
        )
        await write_claim(owned.producer, self._settings.topic("partition-owners"), claim)

    def _learn_requests(self, owned: OwnedPartition) -> None:
        """The partition's stored in-flight requests (``r:`` keys), timed from now."""
        now = time.time()
        for key in owned.store.keys_with_prefix(b"r:"):
            session_key = session_of_request_key(key)
            value = owned.store.get(key)
            if session_key is None or value is None:
                continue
            request = stored_request(session_key, value)
            if request is not None:
                self.pending.learned(request, owned.partition, now)

    async def _release(self, partitions: set[int]) -> None:
        """Forget partitions no longer owned: producers stopped, stores closed, sessions dropped."""
        self.reads.released(partitions)
        self._restoring -= partitions
        await self._forks.revoked(partitions)
        for partition in sorted(partitions & set(self._owned)):
            owned = self._owned.pop(partition)
            # A fenced producer may refuse to stop cleanly, or not answer at all.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(owned.producer.stop(), PRODUCER_STOP_TIMEOUT_S)
            if not isinstance(owned.store, MemoryPartitionStore):
                owned.store.close()
        if self._projector is not None:
            self._projector.revoked(partitions)
        else:
            self._cache.revoked(partitions)
        self.pending.revoked(partitions)

    async def revoked(self, partitions: set[int]) -> None:
        """Partitions revoked: waits for the running batch, then forgets them."""
        async with self._lock:
            await self._release(partitions)

    async def on_assigned(self, consumer: AIOKafkaConsumer, partitions: set[int]) -> None:
        """Partitions assigned: paused until the consume loop restores them (under the lock)."""
        async with self._lock:
            for partition in partitions - set(self._owned):
                consumer.pause(TopicPartition(self._events, partition))
                self._restoring.add(partition)
            self.reads.assigned(partitions - set(self._owned))

    def batch_age_s(self, now: float) -> float:
        """Seconds since the last batch was folded (0 until the first)."""
        return 0.0 if self.last_batch_at is None else max(0.0, now - self.last_batch_at)

    def _lag_of(self, consumer: AIOKafkaConsumer) -> Callable[[], Awaitable[dict[int, int]]]:
        async def lag() -> dict[int, int]:
            lags: dict[int, int] = {}
            for tp in consumer.assignment():
                highwater = consumer.highwater(tp)
                if highwater is None or tp.partition not in self._owned:
                    continue
                lags[tp.partition] = max(0, highwater - await consumer.position(tp))
            return lags

        return lag

    @property
    def events_topic(self) -> str:
        """The `events` topic this engine folds."""
        return self._events

    def owned(self) -> set[int]:
        """The restored partitions this engine folds."""
        return set(self._owned)

    def partition_of(self, session_key: SessionKey) -> int:
        """The `events` partition of `session_key`, over the broker's partition count."""
        return session_partition(session_key.encode(), self._partitions)

    def _history_start(self, partition: int, session_key: SessionKey) -> int | None:
        """Where the session's history starts on `partition`, when this engine owns it.

        Its first applied offset from the stored header (committed state);
        for a session without one, the partition's committed position: none
        of its records is below it. None when the partition is not owned
        here (or the header predates first offsets), and for a quarantined
        session, whose records below that position were refused, not absent
        (a fork prepared after its source's fork record was quarantined, in
        an earlier batch, still reads that record and refuses the cycle).
        """
        owned = self._owned.get(partition)
        if owned is None:
            return None
        if self._projector is not None and self._projector.is_quarantined((partition, session_key)):
            return None
        header = stored_header(session_key, partition, _reader(owned.store))
        if header.last_offset == NO_OFFSET:
            return owned.next_offset
        return header.first_offset if header.first_offset != NO_OFFSET else None

    def first_offset(self, partition: int, session_key: SessionKey) -> int:
        """The session's first applied offset, from its stored header (``-1``: none or not known).

        Committed state while the partition's gate phase is ``committed``.
        """
        return stored_header(
            session_key, partition, _reader(self._owned[partition].store)
        ).first_offset

    def committed_projection(self, partition: int, session_key: SessionKey) -> SessionProjection:
        """The session's projection as its partition's last commit left it (reads only)."""
        read = _reader(self._owned[partition].store)
        return committed_projection(self._settings, self._cache, read, partition, session_key)

    async def whole_projection(self, partition: int, session_key: SessionKey) -> SessionProjection:
        """The session's projection rebuilt from its history on `events` (reads only).

        For a read that needs what the committed projection released (another
        agent's or branch's contents): O(the partition between the session's
        first record and its last), never cached. The records are read on
        the loop (aiokafka's), the fold runs in a thread over the entries it
        needs, taken from the store first (committed state, read at once).
        """
        store = self._owned[partition].store
        header = stored_header(session_key, partition, _reader(store))
        taken = {key: store.get(key) for key in (header_key(session_key), request_key(session_key))}
        records = await self._read_history.records(
            partition, session_key, header.first_offset, header.last_offset + 1
        )
        head = records[0] if records else None
        line = await self._read_history.inherited(head, self._partitions, self._history_start)
        inheritance = None if line is None else inherit(self._settings, session_key, line)

        def read(partition: int, key: bytes) -> bytes | None:
            return taken.get(key)

        session = await asyncio.to_thread(
            rebuild_session,
            self._settings,
            session_key,
            partition,
            read,
            history=records,
            inherited=inheritance,
        )
        return session.projection

    def table_entries(self) -> dict[int, dict[bytes, bytes]]:
        """Each owned partition's table entries. O(state): for tests and tools."""
        return {partition: owned.store.entries() for partition, owned in self._owned.items()}


def _reader(store: PartitionStore) -> Callable[[int, bytes], bytes | None]:
    def read(partition: int, key: bytes) -> bytes | None:
        return store.get(key)

    return read


class _Rebalance(ConsumerRebalanceListener):  # type: ignore[misc]
    """Hands the group's rebalances to the engine, under its lock."""

    def __init__(self, engine: NativeProjector, consumer: AIOKafkaConsumer) -> None:
        self._engine = engine
        self._consumer = consumer

    def _partitions(self, tps: Sequence[Any]) -> set[int]:
        return {tp.partition for tp in tps if tp.topic == self._engine.events_topic}

    async def on_partitions_revoked(self, revoked: Sequence[Any]) -> None:
        await self._engine.revoked(self._partitions(revoked))

    async def on_partitions_assigned(self, assigned: Sequence[Any]) -> None:
        await self._engine.on_assigned(self._consumer, self._partitions(assigned))
