"""The summarizer worker: compaction requests in, summary events out, exactly once.

A consumer group on `compaction-requests` (``read_committed``, no auto
commit). Each request is handled in a task of its own
(:mod:`summarizer_worker.request_pipeline`): at most
``summarizer_concurrency`` at once, one at a time per session
(:mod:`summarizer_worker.session_locks`). Its outcome goes to the lane of its
partition (:mod:`summarizer_worker.partition_lane`), which writes it with the
partition's offset in one transaction. A partition with too many requests
pending is paused (:mod:`summarizer_worker.backpressure`). Nothing a request
contains stops the worker; only its own infrastructure does, and then
``python -m summarizer_worker`` exits non-zero so that its supervisor
restarts it. More: ``summarizer_worker/README.md``, "The worker".
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
from aiokafka.structs import ConsumerRecord

from schemas.codec import decode_compaction_request
from summarizer_worker.backpressure import PendingBound, throttle
from summarizer_worker.partition_lane import PartitionLane
from summarizer_worker.request_pipeline import Clock, NewId, RequestPipeline
from summarizer_worker.request_stage import failure_reason
from summarizer_worker.session_locks import SessionLocks
from summarizer_worker.session_slice import SliceReaders
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.stage_pause import StagePause
from summarizer_worker.summarizers import Summarizer

logger = logging.getLogger(__name__)

POLL_MS = 100


def _new_id() -> str:
    return uuid.uuid4().hex


class _Lanes(ConsumerRebalanceListener):  # type: ignore[misc]  # aiokafka is untyped
    """The open lanes, following the group's assignment."""

    def __init__(self, settings: SummarizerSettings, pause: StagePause) -> None:
        self._settings = settings
        self._pause = pause
        self.by_partition: dict[TopicPartition, PartitionLane] = {}
        self._closed_failure: BaseException | None = None

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        await self.close(list(revoked))

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        for tp in assigned:
            self.lane(tp)
        logger.info(
            "partitions assigned partitions=%s",
            ",".join(str(tp.partition) for tp in sorted(self.by_partition)),
        )

    def lane(self, tp: TopicPartition) -> PartitionLane:
        """The lane of `tp`, started now if it is new.

        Records of a newly assigned partition can be returned before the
        assignment callback runs, so whichever comes first starts the lane.
        """
        lane = self.by_partition.get(tp)
        if lane is None:
            lane = PartitionLane(tp, self._settings, self._pause)
            lane.start()
            self.by_partition[tp] = lane
        return lane

    async def close(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        """Close the lanes of `partitions` (all by default), keeping a failed transaction's error.

        A lane closed on revocation may end with its transaction failing: a
        worker stopped for longer than its session (a pause, a long stall)
        resumes inside a transaction that the partition's next owner fenced,
        and its commit is refused. That is the worker's own failure even
        though the lane is gone: `failure` keeps reporting it, so the worker
        stops once the rebalance it is in ends (handling nothing it fetched
        after) instead of going on as a member as if nothing had happened.
        """
        chosen = list(self.by_partition) if partitions is None else list(partitions)
        for tp in chosen:
            lane = self.by_partition.pop(tp, None)
            if lane is not None:
                await lane.close()
                failed = lane.failure()
                if failed is not None:
                    logger.error(
                        "lane transaction failed topic=%s partition=%d error=%r",
                        tp.topic,
                        tp.partition,
                        failed,
                    )
                    self._closed_failure = self._closed_failure or failed

    def failure(self) -> BaseException | None:
        """The error of a lane whose transaction failed, if any, closed lanes included."""
        if self._closed_failure is not None:
            return self._closed_failure
        for lane in self.by_partition.values():
            failed = lane.failure()
            if failed is not None:
                return failed
        return None


class SummarizerWorker:
    """The consumer loop; `run` until `stop` is set or something fails."""

    def __init__(
        self,
        settings: SummarizerSettings,
        summarizer: Summarizer,
        *,
        producer_id: str,
        clock: Clock = time.time,
        new_id: NewId = _new_id,
    ) -> None:
        """A worker with `settings` and `summarizer`.

        Args:
            settings: The process's settings.
            summarizer: The backend.
            producer_id: Written into every summary envelope.
            clock: ADK timestamps of new summary events.
            new_id: Fresh event and invocation ids.
        """
        self._settings = settings
        self._pause = StagePause(settings.summarizer_stage_delay_s)
        self._readers = SliceReaders(
            bootstrap=settings.kafka_bootstrap,
            security=settings.client_security(),
            topic=settings.topic("events"),
            size=settings.summarizer_concurrency,
            max_slice_bytes=settings.summarizer_max_slice_bytes,
        )
        self._pipeline = RequestPipeline(
            settings,
            summarizer,
            self._readers,
            producer_id=producer_id,
            pause=self._pause,
            clock=clock,
            new_id=new_id,
        )
        self._locks = SessionLocks()
        self._bound = PendingBound(
            settings.summarizer_max_pending, settings.summarizer_max_pending_bytes
        )
        self._lanes = _Lanes(settings, self._pause)
        self._failure: BaseException | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Consume and handle requests until `stop` is set.

        Raises:
            Exception: Whatever made a lane's transaction or a reader fail
                (never a request's content); the uncommitted requests are
                read again after a restart.
        """
        settings = self._settings
        consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap,
            **settings.client_security(),
            group_id=settings.summarizer_group_id,
            group_instance_id=settings.summarizer_instance_id,
            enable_auto_commit=False,
            isolation_level="read_committed",
            auto_offset_reset="earliest",
            session_timeout_ms=settings.summarizer_session_timeout_ms,
            heartbeat_interval_ms=settings.summarizer_session_timeout_ms // 4,
        )
        try:
            await self._readers.start()
            consumer.subscribe([settings.topic("compaction-requests")], listener=self._lanes)
            await consumer.start()
            try:
                logger.info(
                    "summarizer started group=%s topic=%s",
                    settings.summarizer_group_id,
                    settings.topic("compaction-requests"),
                )
                await self._consume(consumer, stop)
            finally:
                await self._lanes.close()
                await consumer.stop()
        finally:
            await self._readers.stop()
        logger.info("summarizer stopped")

    async def _consume(self, consumer: AIOKafkaConsumer, stop: asyncio.Event) -> None:
        while not stop.is_set():
            batches = await consumer.getmany(timeout_ms=POLL_MS)
            taken_at = time.time()  # stamped on the summaries (schemas.kafka.timing)
            # After the fetch: it waits out a rebalance, whose revocation may have
            # closed a lane on a failed transaction; nothing fetched after that is handled.
            failure = self._failure or self._lanes.failure()
            if failure is not None:
                raise failure
            assigned = consumer.assignment()
            for tp, records in batches.items():
                if tp not in assigned:  # revoked since the fetch: its next owner reads it
                    continue
                lane = self._lanes.lane(tp)
                for record in records:
                    self._spawn(lane, record, taken_at)
            self._throttle(consumer)

    def _spawn(self, lane: PartitionLane, record: ConsumerRecord, taken_at: float) -> None:
        lane.ledger.take(record.offset, len(record.key or b"") + len(record.value or b""))
        task = asyncio.create_task(
            self._handle(lane, record, taken_at), name=f"request-{record.offset}"
        )
        lane.handlers.add(task)
        task.add_done_callback(lane.handlers.discard)
        task.add_done_callback(self._note_failure)

    def _note_failure(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            self._failure = self._failure or exc

    async def _handle(self, lane: PartitionLane, record: ConsumerRecord, taken_at: float) -> None:
        try:
            request = decode_compaction_request(record.value)
        except Exception as exc:  # noqa: BLE001 - DecodeError, or what a hostile record provokes
            # RecursionError from a deeply nested value, say (review H1): the
            # record is not a request either way.
            outcome = self._pipeline.dead_letter(record, "decode", failure_reason(exc))
            await lane.finish(record.offset, outcome, request_id="")
            return
        async with self._locks.hold(request.session_key):
            await lane.opened()
            outcome = await self._pipeline.outcome(request, record, taken_at=taken_at)
            placed = await lane.finish(record.offset, outcome, request.request_id)
            # The broker answers a commit before it has written the commit markers
            # to `events`: until they are in, read_committed readers (this worker's
            # next check of the session included) stop below the summary, and a
            # duplicate of this request would be summarized again. Hold the
            # session until the summary is readable.
            events = self._settings.topic("events")
            for metadata in placed:
                if metadata.topic == events:
                    await self._readers.wait_readable(metadata.partition, metadata.offset)

    def _throttle(self, consumer: AIOKafkaConsumer) -> None:
        paused = consumer.paused()
        for tp, lane in self._lanes.by_partition.items():
            pending, pending_bytes = lane.ledger.pending, lane.ledger.pending_bytes
            change = throttle(pending, pending_bytes, paused=tp in paused, bound=self._bound)
            if change is None:
                continue
            logger.info(
                "partition %s partition=%d pending=%d pending_bytes=%d",
                "paused" if change == "pause" else "resumed",
                tp.partition,
                pending,
                pending_bytes,
            )
            if change == "pause":
                consumer.pause(tp)
            else:
                consumer.resume(tp)
