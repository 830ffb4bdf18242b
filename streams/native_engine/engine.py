"""The native projector engine: consume `events`, fold, commit, in Kafka transactions.

Exactly once, per `events` partition: the consumer reads ``read_committed``
in batches (``getmany``); each owned partition's records of a batch are
folded by :class:`~streams.batch.BatchProjector`, and everything they cause
(requests, changelog entries, snapshots, dead letters) is committed with the
partition's consumed offset in one transaction of the partition's producer;
the store follows once it committed. This module is that loop alone; it
composes :mod:`~streams.native_engine.ownership` (restores and releases),
:mod:`~streams.native_engine.retries` (requests in flight),
:mod:`~streams.native_engine.owned_sessions` (what reads see) and the
endpoints (:mod:`~streams.native_engine.web`, :mod:`streams.reads.web`).
Crashes, fencing, backpressure and forks: this folder's README.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from schemas.codec import encode
from schemas.heap.heap_policy import HeapPolicy
from schemas.kafka.admin import EVENTS_METADATA_WAIT_S, partition_count
from schemas.kafka.timing import TAKEN, stamp
from schemas.kafka.transaction import transaction
from schemas.keys import SessionKey
from schemas.read_secret import read_keys
from streams.batch import BatchOutcome, BatchProjector, SessionCache, SourceRecord, TableWrite
from streams.fork_preparation import ForkPreparations
from streams.native_engine.changelog import changelog_topic, ensure_changelog
from streams.native_engine.owned_sessions import OwnedSessions
from streams.native_engine.ownership import (
    KafkaTakeover,
    OwnedPartition,
    PartitionOwnership,
    Rebalance,
    new_worker_id,
)
from streams.native_engine.retries import RequestRetries
from streams.native_engine.web import serving
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings, checked_events_partitions
from streams.reads.gate import ReadGate
from streams.reads.web import serving_reads
from streams.session_history import SessionHistory
from streams.session_table import position_key

logger = logging.getLogger(__name__)


class NativeProjector:
    """The projector on aiokafka with one transaction per partition and batch."""

    def __init__(
        self,
        settings: ProjectorSettings,
        metrics: ProjectorMetrics | None = None,
        heap: HeapPolicy | None = None,
    ):
        """An engine for `settings`; :meth:`run` (or :meth:`start`) runs it.

        `heap`, the process's started collector policy (the worker's), is
        settled after each poll and told of released partitions; None leaves
        the collector alone (an engine inside another program).
        """
        self._settings = settings
        self.metrics = metrics or ProjectorMetrics()
        self._heap = heap
        if heap is not None:
            self.metrics.watch_gc(heap)
        self._events = settings.topic("events")
        self._snapshots = settings.topic("projections")
        self._dead_letters = settings.topic("dead-letters")
        self._changelog = changelog_topic(settings)
        self._lock = asyncio.Lock()
        self._cache = SessionCache(settings.session_cache_bytes)
        self._history = SessionHistory(settings)
        self._forks = ForkPreparations(settings)
        self._projector: BatchProjector | None = None
        self._partitions = settings.events_partitions
        self.worker_id = new_worker_id()
        #: Where each owned partition stands for reads (committed state only).
        self.reads = ReadGate()
        self.retries = RequestRetries(settings, self.metrics, partitions=self._partition_total)
        self.partitions = PartitionOwnership(
            settings,
            lock=self._lock,
            takeover=KafkaTakeover(settings),
            gate=self.reads,
            retries=self.retries,
            forks=self._forks,
            forget_sessions=self._forget_sessions,
            partitions=self._partition_total,
            worker_id=self.worker_id,
        )
        self.sessions = OwnedSessions(
            settings,
            self.partitions,
            self._cache,
            partitions=self._partition_total,
            quarantined=self._quarantined,
        )
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.started = asyncio.Event()
        self.first_batch_at: float | None = None
        self.last_batch_at: float | None = None

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
        claim_key = read_keys(settings).claims  # a secret it cannot have stops it first
        session_timeout_ms = int(settings.session_timeout_s * 1000)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap,
            **settings.client_security(),
            group_id=settings.app_id,
            enable_auto_commit=False,
            isolation_level="read_committed",
            auto_offset_reset="earliest",
            session_timeout_ms=session_timeout_ms,
            heartbeat_interval_ms=min(3000, session_timeout_ms // 3),
            # What bounds the records fetched ahead of the fold (this folder's README).
            max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
            fetch_max_bytes=settings.fetch_max_bytes,
        )
        await consumer.start()
        try:
            self._partitions = await self._partition_count()
            await ensure_changelog(settings, self._partitions)
            projector = BatchProjector(settings, self._cache, partitions=self._partitions)
            self._projector = projector
            consumer.subscribe(
                [self._events], listener=Rebalance(self.partitions, consumer, self._events)
            )
            logger.info(
                "native projector started group=%s events=%s partitions=%d store=%s "
                "fetched_bytes_bound=%d",
                settings.app_id,
                self._events,
                self._partitions,
                self.partitions.stores.kind,
                settings.fetched_bytes_bound(self._partitions),
            )
            self.started.set()
            self.metrics.folding_alive.set(1)
            async with (
                serving(settings, self.metrics, self._lag_of(consumer), self.batch_age_s),
                serving_reads(
                    settings, self.reads, self.sessions, worker_id=self.worker_id
                ) as address,
            ):
                self.partitions.advertise(address, claim_key)
                try:
                    await self._consume(consumer, projector, stop)
                except BaseException:
                    self.metrics.folding_alive.set(0)
                    raise
        finally:
            await self.partitions.release_all()
            await consumer.stop()
            await self._forks.stop()
            await self._history.stop()
            await self.sessions.stop()
            logger.info("native projector stopped")

    async def _partition_count(self) -> int:
        # A topic created a moment ago may not be in the metadata yet: ask again for a while.
        partitions = await partition_count(
            self._settings.kafka_bootstrap,
            self._events,
            wait_s=EVENTS_METADATA_WAIT_S,
            security=self._settings.client_security(),
        )
        return checked_events_partitions(self._settings, partitions)

    def _partition_total(self) -> int:
        """The `events` partition count: the broker's once running, the settings' before."""
        return self._partitions

    async def _consume(
        self, consumer: AIOKafkaConsumer, projector: BatchProjector, stop: asyncio.Event
    ) -> None:
        settings = self._settings
        poll_ms = int(settings.batch_within_s * 1000)
        while not stop.is_set():
            async with self._lock:
                await self.partitions.restore_assigned(consumer)
            batches = await consumer.getmany(timeout_ms=poll_ms, max_records=settings.batch_size)
            taken_at = time.time()  # the batch's timing stamp (schemas.kafka.timing)
            async with self._lock:
                await self._fold(consumer, projector, batches, taken_at)
                await self.retries.retry_if_due(time.time(), self.partitions.transaction)
                if self._heap is not None:
                    # What the restores and the batch left alive leaves the automatic collections.
                    self._heap.settle()

    # -- folding -----------------------------------------------------------------------

    async def _fold(
        self,
        consumer: AIOKafkaConsumer,
        projector: BatchProjector,
        batches: dict[TopicPartition, list[ConsumerRecord]],
        taken_at: float,
    ) -> None:
        """Fold each owned partition's new records, one transaction per partition.

        `taken_at`: when the batch was taken (wall clock), stamped on its
        requests and snapshots (:mod:`schemas.kafka.timing`).
        """
        started = time.perf_counter()
        assigned = consumer.assignment()
        commits = []
        for owned in self.partitions:
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
            cut = self._forks.first_unprepared(owned.partition, sources, owned.read)
            if cut is not None:
                # Folded up to the new fork only; its partition waits for its inheritance.
                position = sources[cut].offset
                self._prepare_fork(consumer, owned, sources[cut])
                sources = sources[:cut]
                if position == owned.next_offset:
                    continue
            self.reads.folding(owned.partition)  # the cache runs ahead of the commit from here
            outcome = projector.project(sources, owned.read)
            await self._history.complete(
                projector, outcome, owned.read, self.sessions.history_start, self._forks.take
            )
            commits.append(self._commit(owned, outcome, position, taken_at))
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
            if owned.partition in self.partitions and tp in consumer.assignment():
                consumer.resume(tp)

        self._forks.start(record, self._partitions, self.sessions.history_start, prepared)

    async def _commit(
        self, owned: OwnedPartition, outcome: BatchOutcome, position: int, taken_at: float
    ) -> None:
        """One transaction: `outcome`'s records and the partition's offset `position`."""
        partition = owned.partition
        writes = [
            *outcome.writes,  # after the sessions' entries: a position never runs ahead
            TableWrite(partition, position_key(partition), str(position).encode()),
        ]
        snapshots, failed = outcome.snapshot_records()
        letters = [*outcome.dead_letters, *failed]
        stamps = (stamp(TAKEN, taken_at),)
        async with transaction(owned.producer) as open_transaction:
            for request, _ in outcome.requests:
                topic, request_key, request_value = self.retries.emission(request, "first")
                await open_transaction.send(
                    topic, key=request_key, value=request_value, headers=stamps
                )
            changelog = [
                await open_transaction.send(
                    self._changelog, key=write.key, value=write.value, partition=partition
                )
                for write in writes
            ]
            for key, value in snapshots:
                await open_transaction.send(self._snapshots, key=key, value=value, headers=stamps)
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
        self.retries.committed(outcome, time.time())
        metrics = self.metrics
        metrics.events_applied.inc(outcome.applied)
        metrics.events_redelivered.inc(outcome.redelivered)
        metrics.dead_letters.inc(len(letters))
        metrics.snapshots.inc(len(snapshots))
        metrics.summaries_conflicted(
            [self._settings.compaction_entry(key) for key, _ in outcome.conflicting_summaries]
        )

    def _forget_sessions(self, partitions: set[int]) -> None:
        """Drop the released partitions' sessions (and the batch step's view of them)."""
        if self._projector is not None:
            self._projector.revoked(partitions)
        else:
            self._cache.revoked(partitions)
        if self._heap is not None:
            self._heap.released()

    def _quarantined(self, session: tuple[int, SessionKey]) -> bool:
        return self._projector is not None and self._projector.is_quarantined(session)

    # -- the web endpoint's figures ------------------------------------------------------

    def batch_age_s(self, now: float) -> float:
        """Seconds since the last batch was folded (0 until the first)."""
        return 0.0 if self.last_batch_at is None else max(0.0, now - self.last_batch_at)

    def _lag_of(self, consumer: AIOKafkaConsumer) -> Callable[[], Awaitable[dict[int, int]]]:
        async def lag() -> dict[int, int]:
            lags: dict[int, int] = {}
            for tp in consumer.assignment():
                highwater = consumer.highwater(tp)
                if highwater is None or tp.partition not in self.partitions:
                    continue
                lags[tp.partition] = max(0, highwater - await consumer.position(tp))
            return lags

        return lag
