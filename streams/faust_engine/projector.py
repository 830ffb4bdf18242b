"""The projector worker on faust: consume `events`, fold, publish. A thin shell.

One agent, ``concurrency=1`` (faust-streaming/faust#606: with more, a crash
can lose a record committed past an in-flight one), takes the `events` topic
in batches (``stream.take_events``), hands each batch to
:class:`~streams.project_batch.BatchProjector` and moves the outcome:
dead letters to `dead-letters`, requests to `compaction-requests`, snapshots
to `projections` (log-compacted, keyed by session), writes to the
``sessions`` table (layout in :mod:`streams.session_table`). A timer
re-emits requests no summary answered in time (:mod:`streams.pending_requests`).
Metrics are served at ``/metrics`` on faust's web server.

Delivery and crashes (at least once, made exact by offsets):

* faust acks a batch's records when the agent asks for the next batch and
  commits acked offsets every ``commit_interval_s``. The shell asks for the
  next batch only after the broker acknowledged every output of this one
  (changelog writes, requests, snapshots, dead letters: their delivery
  futures are awaited). faust's own flush before a commit is not enough on
  its own: ``ProducerBuffer.flush`` gives up after 0.1 s without a message
  sent, leaving buffered table writes behind. So a committed offset implies
  that everything the records before it caused is in Kafka.
* A crash (``kill -9``) loses at most the outputs of uncommitted records,
  and those records are delivered again. Their table writes: with the
  memory store the table is read back from the changelog, whose writes for
  one partition are a prefix of what was sent, so the header never runs
  ahead of the chunks and ``last_offset`` tells which records are already in;
  with RocksDB the local database may be ahead of its changelog, so the
  entries produced by redelivered records are written again
  (:mod:`streams.project_batch`). Redelivered records are skipped by
  ``last_offset`` (the core's own rule), their sessions' snapshots are sent
  again, and a request decided by one of them and lost with the crash is in
  the table (``r:``, written before the header): the timer re-emits it one
  timeout after the restart.
* A rebalance revokes partitions after faust committed them; their cached
  projections and pending requests are dropped, and the new owner rebuilds
  from the table it recovered.
* faust-streaming 0.15.3 can drop records around a rebalance and commit
  past them (a stale fetch still being drained moves the read offset past
  records that are fetched again). The table keeps each partition's next
  expected offset (``p:<partition>``, written after the batch's session
  entries); every record that skips offsets is checked against the log
  (:mod:`streams.faust_engine.offset_probe`) before the batch is folded, and the records
  faust skipped are read from the log and folded in their place
  (:mod:`streams.faust_engine.partition_positions`), so no record is skipped, even across
  restarts.

The consumer reads ``read_committed`` (:mod:`streams.faust_engine.read_committed`): a
summary the summarizer appended in a transaction that was later aborted is
never folded. Dead letters are sent with the batch; a bad record never stops
the worker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import faust
from aiokafka.errors import KafkaError
from faust.types import TP

from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.kafka_settings import TopicRole
from schemas.log_text import shown
from schemas.partitioning import session_partition
from streams import liveness
from streams.faust_engine.internals import (
    bound_to,
    changelog_sent_callback,
    committed_offset,
    reset_read_offset,
)
from streams.faust_engine.offset_probe import OffsetProbe, ProbeTimeout
from streams.faust_engine.partition_positions import (
    Gap,
    GapRecords,
    PartitionPositions,
    start_position,
)
from streams.faust_engine.read_committed import ReadCommittedApp
from streams.pending_requests import PendingRequest, PendingRequests
from streams.project_batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
    TableWrite,
)
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings
from streams.request_records import log_emission, stored_request, timed_out_refusal
from streams.session_table import position_key, session_of_request_key

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
    """Moves one batch's bytes between faust and :class:`BatchProjector`."""

    def __init__(
        self,
        settings: ProjectorSettings,
        table: Any,
        requests_topic: Any,
        snapshots_topic: Any,
        dead_letters_topic: Any,
        metrics: ProjectorMetrics,
        seek: Callable[[int, int], Awaitable[None]],
        committed: Callable[[int], int | None],
        probe: OffsetProbe,
        events_topic: Any,
    ) -> None:
        self._settings = settings
        self._table = table
        self._events = events_topic
        self._requests = requests_topic
        self._snapshots = snapshots_topic
        self._dead_letters = dead_letters_topic
        self._metrics = metrics
        self._seek = seek
        self._committed = committed
        self._probe = probe
        self._positions = PartitionPositions(idle_s=max(2.0, 4 * settings.batch_within_s))
        self._cache = SessionCache(settings.session_cache_bytes)
        self._projector: BatchProjector | None = None  # made once the partition count is known
        self.pending = PendingRequests()
        self._rescan = False
        self.first_batch_at: float | None = None
        self.last_batch_at: float | None = None
        self._folding = False
        self._drained_at = 0.0  # when a batch came short of its size: faust had no more
        self._partitions: int | None = None

    async def project(self, events: Sequence[Any]) -> None:
        """Fold one batch of faust events and send everything it causes."""
        self._folding = True
        try:
            await self._project(events)
        finally:
            self._folding = False
            self.last_batch_at = time.monotonic()
            self._positions.heard({event.message.partition for event in events}, self.last_batch_at)

    async def _project(self, events: Sequence[Any]) -> None:
        started = time.perf_counter()
        if self.first_batch_at is None:
            self.first_batch_at = time.monotonic()
        if len(events) < self._settings.batch_size:
            self._drained_at = time.monotonic()
        by_partition = {event.message.partition: event for event in events}
        records = [
            SourceRecord(
                event.message.topic,
                event.message.partition,
                event.message.offset,
                event.message.key,
                event.message.value,
            )
            for event in events
        ]

        def read(partition: int, key: bytes) -> bytes | None:
            with bound_to(by_partition[partition]):
                value: bytes | None = self._table.get(key)
                return value

        def stored_position(partition: int) -> int | None:
            raw = read(partition, position_key(partition))
            stored = None if raw is None else int(raw)
            return start_position(stored, self._committed(partition))

        missing = await self._read_gaps(self._positions.gaps(records, stored_position))
        for gap, dropped in missing.items():
            if dropped:
                logger.warning(
                    "records skipped partition=%d offsets=%d..%d: %d read from the log",
                    gap.partition,
                    gap.expected,
                    gap.seen - 1,
                    len(dropped),
                )
        admission = self._positions.admit(records, stored_position, missing)
        outcome = (await self._batch_projector()).project(admission.records, read)
        outcome.writes.extend(  # after the sessions' entries: a position never runs ahead
            TableWrite(partition, position_key(partition), str(offset).encode())
            for partition, offset in admission.positions.items()
        )
        # Requests leave first, before the batch's snapshots are assembled: the
        # summarizer starts on them while the rest goes out. A crash before the
        # table writes below only redelivers the batch, which decides the same
        # requests again under the same ids (the summarizer skips answered ones).
        sent = await self._send_requests(outcome)
        await asyncio.gather(*sent)
        sent = await self._write(outcome, by_partition)
        sent += await self._send(outcome)
        # The batch's records are acked when this returns: wait until the broker has
        # every output, so a committed offset never outruns what it caused.
        await asyncio.gather(*sent)
        for gap in admission.gaps:
            logger.warning(
                "gap not read topic=%s partition=%d: seeking back to %d (got %d)",
                events[0].message.topic,
                gap.partition,
                gap.expected,
                gap.seen,
            )
            await self._seek(gap.partition, gap.expected)
        self._metrics.batch_seconds.observe(time.perf_counter() - started)
        self._metrics.sessions_cached.set(len(self._cache))
        self._metrics.cache_bytes.set(self._cache.bytes)

    def batch_age_s(self, now: float) -> float:
        """Seconds since the last batch was folded (since the first start: 0 until then)."""
        return 0.0 if self.last_batch_at is None else max(0.0, now - self.last_batch_at)

    async def _batch_projector(self) -> BatchProjector:
        """The batch step, made on the first batch with the `events` partition count."""
        if self._projector is None:
            partitions = await self._probe.partition_count()
            if partitions != self._settings.events_partitions:
                logger.warning(
                    "events has %d partitions, settings say %d: records are checked against %d",
                    partitions,
                    self._settings.events_partitions,
                    partitions,
                )
            self._partitions = partitions
            self._projector = BatchProjector(self._settings, self._cache, partitions=partitions)
        return self._projector

    async def _read_gaps(self, gaps: Sequence[Gap], limit: int | None = None) -> GapRecords:
        """The log's committed records in each gap, at most `limit` each; unanswered: left out."""
        missing: dict[Gap, list[SourceRecord]] = {}
        for gap in gaps:
            try:
                found = await self._probe.records(
                    gap.partition, gap.expected, gap.seen, limit=limit
                )
            except (ProbeTimeout, KafkaError) as exc:
                logger.warning("gap %s not answered by the log: %r", gap, exc)
                self._metrics.gaps_probed.labels(answer="unanswered").inc()
                continue
            missing[gap] = [
                SourceRecord(r.topic, r.partition, r.offset, r.key, r.value) for r in found
            ]
            self._metrics.gaps_probed.labels(answer="records" if found else "empty").inc()
        return missing

    async def _write(self, outcome: BatchOutcome, by_partition: dict[int, Any]) -> list[Any]:
        """Write the table: the local store, then the changelog; the changelog sends.

        What ``table[key] = value`` does (store write, then the changelog
        record to the event's partition, with the table's callback that keeps
        the changelog offset for RocksDB's recovery), but sent to the producer
        at once and keeping the delivery future. faust's ``send_changelog``
        goes through its producer buffer instead: 100 messages deep, drained
        one message per loop step, with a warning and a flush whenever a batch
        overfills it, which cost the projector about a third of its time.
        """
        store = self._table.data
        changelog = self._table.changelog_topic
        on_sent = changelog_sent_callback(self._table)
        sent: list[Any] = []
        for write in outcome.writes:
            with bound_to(by_partition[write.partition]):
                if write.value is not None:
                    store[write.key] = write.value
                elif write.key in store:
                    del store[write.key]
                else:
                    continue
            sent.append(
                await changelog.send(
                    key=write.key,
                    value=write.value,
                    partition=write.partition,
                    key_serializer="raw",
                    value_serializer="raw",
                    callback=on_sent,
                )
            )
        return sent

    async def _send_requests(self, outcome: BatchOutcome) -> list[Any]:
        """Send the batch's new requests and note the in-flight ones; their delivery futures."""
        now = time.time()
        sent: list[Any] = []
        for request, partition in outcome.requests:
            sent.append(await self._send_request(request, "first"))
            self.pending.emitted(request, partition, now)
        for session_key in outcome.answered:
            self.pending.answered(session_key)
        for request, partition in outcome.learned:
            self.pending.learned(request, partition, now)
        return sent

    async def _send(self, outcome: BatchOutcome) -> list[Any]:
        """Send snapshots (assembled here) and dead letters; their delivery futures."""
        snapshots, failed = outcome.snapshot_records()
        sent: list[Any] = [
            await self._snapshots.send(key=key, value=value) for key, value in snapshots
        ]
        letters = [*outcome.dead_letters, *failed]
        for letter in letters:
            key = f"{letter.source_topic}:{letter.source_partition}:{letter.source_offset}"
            sent.append(await self._dead_letters.send(key=key.encode(), value=encode(letter)))
            self._metrics.dead_letters_by_stage.labels(stage=letter.stage).inc()
        metrics = self._metrics
        metrics.events_applied.inc(outcome.applied)
        metrics.events_redelivered.inc(outcome.redelivered)
        metrics.dead_letters.inc(len(letters))
        metrics.snapshots.inc(len(snapshots))
        if self._projector is not None:
            metrics.sessions_quarantined.set(len(self._projector.quarantined))
        return sent

    async def _send_request(self, request: CompactionRequest, kind: str) -> Any:
        log_emission(request)
        sent = await self._requests.send(key=request.session_key.encode(), value=encode(request))
        self._metrics.requests_emitted.labels(trigger=request.trigger, kind=kind).inc()
        return sent

    def revoked(self, partitions: set[int]) -> None:
        """Forget what this worker knew of partitions it no longer owns."""
        if self._projector is not None:
            self._projector.revoked(partitions)
        else:
            self._cache.revoked(partitions)
        self.pending.revoked(partitions)
        self._positions.revoked(partitions)

    def assigned(self) -> None:
        """Look for in-flight requests of the new partitions at the next timer tick."""
        self._rescan = True

    async def seek_stalled(self, fetch_positions: dict[int, int | None]) -> None:
        """Seek back partitions fetched past records this worker never received."""
        if self._folding:
            return  # faust's queue may hold what this batch has not reached yet
        now = time.monotonic()
        drained_at = self._drained_at
        if now - (self.last_batch_at or 0.0) >= self._settings.batch_within_s:
            drained_at = now  # no batch for a while: faust has nothing to deliver
        committed = {partition: self._committed(partition) for partition in fetch_positions}
        stalls = self._positions.stalled(fetch_positions, committed, now, drained_at)
        answers = await self._read_gaps(stalls, limit=1)  # a seek fetches the rest
        for stall in stalls:
            seek = self._positions.stall_answered(stall, answers)
            if seek is None:
                continue
            log = logger.debug if self._positions.sought_before(seek.partition) else logger.warning
            log(
                "partition=%d fetched up to %d but nothing arrived from %d: seeking back",
                seek.partition,
                seek.seen,
                seek.expected,
            )
            await self._seek(seek.partition, seek.expected)

    async def seek_commit_holes(self, owned: set[int]) -> None:
        """Seek back partitions whose faust commits stopped below what was folded."""
        committed = {partition: self._committed(partition) for partition in owned}
        for hole in self._positions.commit_holes(committed, time.monotonic()):
            logger.warning(
                "partition=%d committed offset stays at %d below the fold at %d: seeking back",
                hole.partition,
                hole.expected,
                hole.seen,
            )
            await self._seek(hole.partition, hole.expected)

    async def retry_due(self, owned: set[int], now: float) -> None:
        """Re-emit every in-flight request older than the timeout."""
        if self._rescan:
            self._rescan = False
            self._learn_requests(owned, now)
        settings = self._settings
        due = self.pending.due(
            now, settings.compaction_request_timeout_s, settings.compaction_request_max_attempts
        )
        sent = [await self._send_request(retry, "retry") for retry in due.retries]
        sent += [await self._send_refusal(pending, now) for pending in due.refused]
        await asyncio.gather(*sent)

    async def _send_refusal(self, pending: PendingRequest, now: float) -> Any:
        """Append the refusal of a request no summary answered after its last attempt."""
        request = pending.request
        envelope = timed_out_refusal(
            request,
            app_id=self._settings.app_id,
            timeout_s=self._settings.compaction_request_timeout_s,
            now=now,
        )
        self._metrics.requests_refused.inc()
        return await self._events.send(
            key=request.session_key.encode(), value=encode(envelope), partition=pending.partition
        )

    def _learn_requests(self, owned: set[int], now: float) -> None:
        """Read the ``r:`` keys of the owned partitions into the pending requests.

        O(keys): only keys are listed, and only ``r:`` values are read. A
        stored request that no longer decodes is logged and left alone (its
        session is quarantined when it is next touched).
        """
        partitions = self._partitions or self._settings.events_partitions
        for key in list(self._table.keys()):
            session_key = session_of_request_key(key)
            if session_key is None:
                continue
            partition = session_partition(session_key.encode(), partitions)
            if partition not in owned:
                continue
            value = self._table.get(key)
            if value is None:
                continue
            request = stored_request(session_key, value)
            if request is not None:
                self.pending.learned(request, partition, now)


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
        # Bounded in bytes: at most inflight_max_bytes of maximum-size records wait.
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


def build_projector(settings: ProjectorSettings) -> Projector:
    """The projector app for `settings`; nothing connects until it starts."""
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
    shell = ProjectorShell(
        settings,
        table,
        requests_topic,
        snapshots_topic,
        dead_letters_topic,
        metrics,
        seek,
        committed,
        probe,
        events_topic,
    )
    folding = FoldingTask(metrics)

    @app.on_before_shutdown.connect
    async def stop_probe(_: Any, /, *__: Any, signal: Any, **___: Any) -> None:
        await probe.stop()

    @app.agent(events_topic, concurrency=1, name="project_sessions")
    async def project_sessions(stream: Any) -> None:
        """Fold `events` into session projections, one batch at a time."""
        batches = stream.take_events(settings.batch_size, within=settings.batch_within_s)
        await folding.run(batches, shell.project)

    def owned() -> set[int]:
        return {tp.partition for tp in app.consumer.assignment() if tp.topic == events_name}

    # faust's timer decorator carries no types.
    @app.timer(  # type: ignore[untyped-decorator]
        settings.request_check_interval_s, name="retry_compaction_requests"
    )
    async def retry_compaction_requests() -> None:
        """Re-emit in-flight requests that no summary answered in time."""
        if not app.rebalancing:
            partitions = owned()
            await shell.retry_due(partitions, time.time())
            positions = {
                partition: await app.consumer.position(TP(events_name, partition))
                for partition in partitions
            }
            await shell.seek_stalled(positions)
            await shell.seek_commit_holes(partitions)

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
