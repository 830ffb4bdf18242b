"""The projector worker on faust: consume `events`, fold, publish. A thin shell.

One agent (``concurrency=1``) takes `events` in batches and hands each to
:class:`~streams.batch.BatchProjector`; :class:`ProjectorShell` composes the
one-idea parts around that step: the table bound to a batch's events
(:mod:`streams.faust_engine.batch_table`), the sends
(:mod:`streams.faust_engine.output_sender`), the requests in flight
(:mod:`streams.faust_engine.request_retries`, under the app's
``request_retry_timer``) and the gap recovery
(:mod:`streams.faust_engine.gap_recovery`, under ``gap_recovery_timer``).
A batch's records are acked only once the broker has every output of the
batch, so a crash loses only outputs of records delivered again. Delivery,
crashes and the records faust drops: this folder's README.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import faust
from faust.types import TP

from schemas.heap.heap_policy import HeapPolicy
from schemas.kafka.settings import TopicRole
from schemas.log_text import shown
from streams import liveness
from streams.batch import BatchProjector, SessionCache, SourceRecord
from streams.faust_engine.batch_table import BatchTable
from streams.faust_engine.gap_recovery import Committed, GapRecovery, Seek
from streams.faust_engine.internals import committed_offset, reset_read_offset
from streams.faust_engine.offset_probe import OffsetProbe
from streams.faust_engine.output_sender import OutputSender
from streams.faust_engine.read_committed import ReadCommittedApp
from streams.faust_engine.request_retries import RequestRetries
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings, checked_events_partitions
from streams.session_history import SessionHistory

logger = logging.getLogger(__name__)

TABLE_NAME = "sessions"


Failure = Callable[[BaseException], None]


class FoldingTask:
    """Supervises the loop that folds batches: its death stops the worker, never silently.

    faust restarts a crashed agent on its own (one-for-one supervision), and a
    worker whose folding died would otherwise stay up, answering its metrics
    while it processes nothing. Here an exception out of a batch (every
    per-record failure is dead-lettered before that: only the worker's own
    I/O can fail a batch) is logged, marks the task dead and calls
    :attr:`on_failure`, which the worker process sets to crash itself, so it
    exits with a non-zero status and its supervisor restarts it; the
    uncommitted records are delivered again.
    """

    def __init__(self, metrics: ProjectorMetrics) -> None:
        self._metrics = metrics
        self.failure: BaseException | None = None
        self.on_failure: Failure = _no_failure_handler
        metrics.folding_alive.set(1)

    async def run(
        self,
        batches: AsyncIterator[Sequence[Any]],
        fold: Callable[[Sequence[Any]], Awaitable[None]],
    ) -> None:
        """Fold every batch of `batches` with `fold` until the stream ends or a batch fails.

        Raises:
            Exception: The failure, after :attr:`on_failure` was told.
        """
        try:
            async for batch in batches:
                await fold(batch)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.failure = exc
            self._metrics.folding_alive.set(0)
            logger.critical("folding events failed; the worker stops", exc_info=exc)
            self.on_failure(exc)
            raise

    def problem(self, *, waiting: int, batch_age_s: float, timeout_s: float) -> str | None:
        """Why the worker is not live, or None: its folding died, or it stalls with work waiting."""
        if self.failure is not None:
            return f"folding died: {shown(repr(self.failure))}"
        return liveness.stall(waiting, batch_age_s, timeout_s)


def _no_failure_handler(exc: BaseException) -> None:
    """Until a worker process installs its own, a failure is only logged and raised."""


@dataclass
class Projector:
    """A projector app with its collaborators, ready to start.

    Attributes:
        app: The faust app (start with ``await app.start()`` or a faust Worker).
        settings: Its settings.
        metrics: Its metrics.
        shell: The batch shell, for inspection (first/last batch times).
        folding: The folding task's supervision (its failure stops the worker).
    """

    app: faust.App
    settings: ProjectorSettings
    metrics: ProjectorMetrics
    shell: ProjectorShell
    folding: FoldingTask


class ProjectorShell:
    """Moves one batch between faust and :class:`BatchProjector`, composing one-idea parts.

    Attributes:
        retries: The requests in flight, retried by the app's ``request_retry_timer``.
        gaps: The gap recovery; the app's ``gap_recovery_timer`` seeks back stalls.
        first_batch_at: When the first batch began (monotonic), None before it.
        last_batch_at: When the last batch ended (monotonic), None before it.
    """

    def __init__(
        self,
        settings: ProjectorSettings,
        table: Any,
        sender: OutputSender,
        metrics: ProjectorMetrics,
        probe: OffsetProbe,
        seek: Seek,
        committed: Committed,
        heap: HeapPolicy | None = None,
    ) -> None:
        """Fold into faust's `table`, send through `sender`, check gaps with `probe`.

        `seek` and `committed` reach faust's consumer for the gap recovery;
        `heap`, the process's started collector policy, is settled after each
        batch and told of revoked partitions (None: the collector is left alone).
        """
        self._settings = settings
        self._heap = heap
        self._table = table
        self._sender = sender
        self._metrics = metrics
        self._probe = probe
        self._cache = SessionCache(settings.session_cache_bytes)
        self.history = SessionHistory(settings)
        self._projector: BatchProjector | None = None  # made once the partition count is known
        self._partitions: int | None = None
        self.retries = RequestRetries(
            settings,
            partitions=self._events_partitions,
            table=table,
            sender=sender,
            metrics=metrics,
        )
        self.gaps = GapRecovery(
            topic=settings.topic("events"),
            batch_within_s=settings.batch_within_s,
            probe=probe,
            seek=seek,
            committed=committed,
            metrics=metrics,
        )
        self.first_batch_at: float | None = None
        self.last_batch_at: float | None = None

    async def project(self, events: Sequence[Any]) -> None:
        """Fold one batch of faust events and send everything it causes."""
        self.gaps.batch_began(drained=len(events) < self._settings.batch_size)
        try:
            await self._project(events)
        finally:
            self.last_batch_at = time.monotonic()
            self.gaps.batch_ended({event.message.partition for event in events}, self.last_batch_at)

    async def _project(self, events: Sequence[Any]) -> None:
        started = time.perf_counter()
        if self.first_batch_at is None:
            self.first_batch_at = time.monotonic()
        table = BatchTable(self._table, events)
        records = [
            SourceRecord(
                event.message.topic,
                event.message.partition,
                event.message.offset,
                event.message.key,
                event.message.value or b"",  # a tombstone: no value
            )
            for event in events
        ]
        admission = await self.gaps.admit(records, table.stored_position)
        projector = await self._batch_projector()
        outcome = projector.project(admission.records, table.read)
        await self.history.complete(projector, outcome, table.read)
        # After the sessions' entries: a position never runs ahead.
        outcome.writes.extend(table.position_writes(admission.positions))
        # Requests leave first, before the batch's snapshots are assembled: the
        # summarizer starts on them while the rest goes out. A crash before the
        # table writes below only redelivers the batch, which decides the same
        # requests again under the same ids (the summarizer skips answered ones).
        await asyncio.gather(*await self.retries.send_first(outcome, time.time()))
        sent = await table.write(outcome.writes)
        outputs = await self._sender.send_outputs(outcome)
        self._metrics.outputs_sent(
            applied=outcome.applied,
            redelivered=outcome.redelivered,
            snapshots=outputs.snapshots,
            letters=outputs.letters,
        )
        self._metrics.summaries_conflicted(
            [self._settings.compaction_entry(key) for key, _ in outcome.conflicting_summaries]
        )
        # The batch's records are acked when this returns: wait until the broker has
        # every output, so a committed offset never outruns what it caused.
        await asyncio.gather(*sent, *outputs.deliveries)
        await self.gaps.seek_back(admission.gaps)
        self._metrics.batch_folded(
            time.perf_counter() - started,
            sessions_cached=len(self._cache),
            cache_bytes=self._cache.bytes,
            quarantined=len(projector.quarantined),
        )
        if self._heap is not None:
            # What the batch left alive (and faust's restored table) leaves the automatic
            # collections.
            self._heap.settle()

    def batch_age_s(self, now: float) -> float:
        """Seconds since the last batch was folded (since the first start: 0 until then)."""
        return 0.0 if self.last_batch_at is None else max(0.0, now - self.last_batch_at)

    def _events_partitions(self) -> int:
        """The `events` partition count: the broker's once a batch asked, the settings' before."""
        return self._partitions or self._settings.events_partitions

    async def _batch_projector(self) -> BatchProjector:
        """The batch step, made on the first batch with the `events` partition count."""
        if self._projector is None:
            found = await self._probe.partition_count()
            partitions = checked_events_partitions(self._settings, found)
            self._partitions = partitions
            self._projector = BatchProjector(self._settings, self._cache, partitions=partitions)
        return self._projector

    def revoked(self, partitions: set[int]) -> None:
        """Forget what this worker knew of partitions it no longer owns."""
        if self._projector is not None:
            self._projector.revoked(partitions)
        else:
            self._cache.revoked(partitions)
        self.retries.revoked(partitions)
        self.gaps.revoked(partitions)
        if self._heap is not None:
            self._heap.released()

    def assigned(self) -> None:
        """Look for in-flight requests of the new partitions at the next retry."""
        self.retries.assigned()


def projector_app(settings: ProjectorSettings, app_id: str) -> faust.App:
    """The faust app the projector runs in, without agents or tables.

    The ingest benchmark runs an empty agent in an app made here, so the
    faust machinery it measures is configured exactly as the projector's.
    """
    # read_committed: a summary appended in a transaction that was later aborted
    # (a summarizer killed mid-transaction) is never folded.
    return ReadCommittedApp(
        app_id,
        broker=f"kafka://{settings.kafka_bootstrap}",
        store=settings.table_store,
        datadir=str(settings.data_dir),
        autodiscover=False,
        topic_partitions=settings.events_partitions,
        topic_replication_factor=settings.replication_factor,
        broker_commit_interval=settings.commit_interval_s,
        broker_session_timeout=settings.session_timeout_s,
        consumer_auto_offset_reset="earliest",
        producer_acks=-1,
        # aiokafka's default, as the native engine's producers: a table chunk
        # (MAX_CHUNK_BYTES, its key and framing) fits; faust's own 1,000,000 does not.
        producer_max_request_size=1024**2,
        # What bounds the records fetched ahead of the fold (ProjectorSettings.fetched_bytes_bound):
        # aiokafka holds at most one chunk of this many bytes per partition, and the stream
        # buffer at most inflight_max_bytes of maximum-size records; faust stops handing a
        # partition's records on while the buffer is full.
        consumer_max_fetch_size=settings.max_partition_fetch_bytes,
        stream_buffer_maxsize=settings.stream_buffer_records,
        # The web server serves /metrics and /healthz only: faust's table pages
        # would expose every tenant's stored events, its router, graph and stats
        # pages the topology and assignment.
        web_enabled=settings.metrics_port > 0,
        web_port=settings.metrics_port or 6066,
        web_bind=settings.metrics_bind,
        web_tables_enabled=False,
        web_router_enabled=False,
        web_graph_enabled=False,
        web_stats_enabled=False,
        web_metrics_enabled=False,
    )


def raw_topic(app: faust.App, settings: ProjectorSettings, role: TopicRole) -> Any:
    """A topic of `app` whose keys and values faust passes through as bytes.

    Decoding is ours (:mod:`schemas.codec`).
    """
    return app.topic(
        settings.topic(role),
        key_type=bytes,
        value_type=bytes,
        key_serializer="raw",
        value_serializer="raw",
    )


def build_projector(settings: ProjectorSettings, heap: HeapPolicy | None = None) -> Projector:
    """The projector app for `settings`; nothing connects until it starts.

    `heap` is the process's started collector policy, if the app is to steer it.
    """
    app = projector_app(settings, settings.app_id)
    events_topic = raw_topic(app, settings, "events")
    requests_topic = raw_topic(app, settings, "compaction-requests")
    snapshots_topic = raw_topic(app, settings, "projections")
    dead_letters_topic = raw_topic(app, settings, "dead-letters")
    # bytes key and value types make faust's table serializers raw.
    table = app.Table(
        TABLE_NAME, partitions=settings.events_partitions, key_type=bytes, value_type=bytes
    )
    metrics = ProjectorMetrics()
    if heap is not None:
        metrics.watch_gc(heap)
    events_name = settings.topic("events")

    async def seek(partition: int, offset: int) -> None:
        # seek_wait runs in faust's consumer thread and resets faust's read offset;
        # Consumer.seek would move aiokafka's fetcher from this thread, racing
        # its fetch (KeyError in Fetcher.fetched_records, the fetcher crashes).
        tp = TP(events_name, partition)
        await app.consumer.seek_wait({tp: offset})
        reset_read_offset(app.consumer, tp, offset)

    def committed(partition: int) -> int | None:
        return committed_offset(app.consumer, TP(events_name, partition))

    probe = OffsetProbe(bootstrap=settings.kafka_bootstrap, topic=events_name)
    sender = OutputSender(
        events=events_topic,
        requests=requests_topic,
        snapshots=snapshots_topic,
        dead_letters=dead_letters_topic,
    )
    shell = ProjectorShell(settings, table, sender, metrics, probe, seek, committed, heap)
    folding = FoldingTask(metrics)

    @app.on_before_shutdown.connect
    async def stop_probe(_: Any, /, *__: Any, signal: Any, **___: Any) -> None:
        await probe.stop()
        await shell.history.stop()

    @app.agent(events_topic, concurrency=1, name="project_sessions")
    async def project_sessions(stream: Any) -> None:
        """Fold `events` into session projections, one batch at a time."""
        batches = stream.take_events(settings.batch_size, within=settings.batch_within_s)
        await folding.run(batches, shell.project)

    def owned() -> set[int]:
        return {tp.partition for tp in app.consumer.assignment() if tp.topic == events_name}

    # faust's timer decorator carries no types.
    @app.timer(  # type: ignore[untyped-decorator]
        settings.request_check_interval_s, name="request_retry_timer"
    )
    async def request_retry_timer() -> None:
        """Re-emit in-flight requests no summary answered in time; refuse those out of attempts."""
        if not app.rebalancing:
            await shell.retries.retry_due(owned(), time.time())

    @app.timer(  # type: ignore[untyped-decorator]
        settings.request_check_interval_s, name="gap_recovery_timer"
    )
    async def gap_recovery_timer() -> None:
        """Seek back partitions fetched past records never delivered, and stuck commits."""
        if not app.rebalancing:
            partitions = owned()
            positions = {
                partition: await app.consumer.position(TP(events_name, partition))
                for partition in partitions
            }
            await shell.gaps.seek_stalled(positions)
            await shell.gaps.seek_commit_holes(partitions)

    @app.on_partitions_revoked.connect
    def on_revoked(_: Any, /, *args: Any, signal: Any, **__: Any) -> None:
        revoked: set[Any] = args[0]
        shell.revoked({tp.partition for tp in revoked if tp.topic == events_name})

    @app.on_partitions_assigned.connect
    def on_assigned(_: Any, /, *__: Any, signal: Any, **___: Any) -> None:
        shell.assigned()

    async def lag() -> dict[int, int]:
        lags: dict[int, int] = {}
        for tp in app.consumer.assignment():
            if tp.topic != events_name:
                continue
            position = await app.consumer.position(tp)
            highwater = app.consumer.highwater(tp)
            if position is not None and highwater is not None:
                lags[tp.partition] = max(0, highwater - position)
        return lags

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        metrics.set_lag(await lag())
        metrics.last_batch_age_seconds.set(shell.batch_age_s(time.monotonic()))
        return web.bytes(metrics.exposition(), content_type="text/plain; version=0.0.4")

    @app.page("/healthz")
    async def health_page(web: Any, request: Any) -> Any:
        """200 while the worker makes progress; 503 with the reason otherwise."""
        waiting = sum((await lag()).values())
        problem = folding.problem(
            waiting=waiting,
            batch_age_s=shell.batch_age_s(time.monotonic()),
            timeout_s=settings.liveness_timeout_s,
        )
        status = 503 if problem else 200
        return web.bytes((problem or "ok").encode(), content_type="text/plain", status=status)

    return Projector(app, settings, metrics, shell, folding)


async def run_until_stopped(projector: Projector, stop: asyncio.Event) -> None:
    """Run `projector` in this event loop until `stop` is set (tests, the benchmark)."""
    await projector.app.start()
    try:
        await stop.wait()
    finally:
        await projector.app.stop()
