"""Projections rebuilt from the live `events` log into another namespace: what ``replay`` runs.

A replay reads `events` as the projector reads it (``read_committed``) and folds it
with the projector's own batch step (:class:`~streams.batch.BatchProjector`), but
writes what the fold causes under another topic prefix, the *target*: snapshots,
compaction requests and dead letters to ``<target>.projections`` and its kin, each
made when missing. The same log gives the same projections. Nothing of the live
deployment is written or moved: no group, no committed offset, no changelog, no
claim. It reads each partition from ``from_offset`` (or ``from_time``) up to the end
offsets taken when it starts; from a later offset a session is folded as if its log
began there. Why not the native engine, and the memory and failure analysis: see
``ctxstream/README.md`` ("Replay"). :meth:`ctxstream.Client.replay` is the way in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from typing import Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from ctxstream.broker_calls import broker_calls
from ctxstream.errors import (
    BrokerUnavailableError,
    InvalidArgumentError,
    TopicCreationError,
)
from ctxstream.replay_request import ReplayRequest
from ctxstream.subscription import CONNECT_TIMEOUT_S, opened_reader
from schemas.codec import encode
from schemas.errors import TopicError
from schemas.kafka.admin import ensure_topics, partition_count
from schemas.kafka.partitioning import session_partition
from schemas.kafka.settings import KafkaSettings, TopicRole
from schemas.keys import SessionKey
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
    TableReader,
    TableWrite,
)
from streams.projector_settings import ProjectorSettings
from streams.session_history import SessionHistory
from streams.topics import topic_specs

logger = logging.getLogger(__name__)

#: The target's topics a replay writes to.
OUTPUT_ROLES: Final[tuple[TopicRole, ...]] = ("projections", "compaction-requests", "dead-letters")
#: How long the replay may read without its position moving before it gives up on the broker.
STALLED_S: Final = 60.0
# A fetch returns as soon as records arrive; the bound only paces a loop waiting on markers.
_POLL_MS: Final = 200


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    """How far a replay has read one `events` partition's range ``[start_offset, end_offset)``."""

    start_offset: int
    end_offset: int
    position: int
    """The next offset to read; `end_offset` once the range is read."""

    @property
    def done(self) -> int:
        """Offsets of the range read."""
        return self.position - self.start_offset

    @property
    def total(self) -> int:
        """Offsets in the range."""
        return self.end_offset - self.start_offset


@dataclass(frozen=True, slots=True)
class ReplayProgress:
    """How far a replay has read, by `events` partition (only those it reads)."""

    partitions: Mapping[int, PartitionProgress]

    @property
    def done(self) -> int:
        """Offsets read, over every partition."""
        return sum(p.done for p in self.partitions.values())

    @property
    def total(self) -> int:
        """Offsets to read, over every partition."""
        return sum(p.total for p in self.partitions.values())


OnProgress = Callable[[ReplayProgress], None]
"""Called with the replay's progress when it starts, after each batch, and at the end."""


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a replay did.

    Attributes:
        target_prefix: The namespace it wrote.
        sessions: Sessions whose projections it rebuilt (a snapshot written for each).
        records: `events` records folded into them.
        offsets: Offsets read over every partition (other sessions' records,
            dead letters and transaction markers included).
        snapshots: Snapshots written to the target's `projections`.
        requests: Compaction requests written to the target's `compaction-requests`.
        dead_letters: Dead letters written to the target's `dead-letters`.
        seconds: How long it took, connecting included.
    """

    target_prefix: str
    sessions: int
    records: int
    offsets: int
    snapshots: int
    requests: int
    dead_letters: int
    seconds: float


async def replay(
    settings: ProjectorSettings,
    request: ReplayRequest,
    *,
    progress: OnProgress | None = None,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
) -> ReplayReport:
    """Rebuild the projections `request` names from the deployment `settings` name.

    :meth:`ctxstream.Client.replay` is the public way in; see the module's docstring.

    Raises:
        InvalidArgumentError: `connect_timeout_s` is not positive, or
            ``from_offset`` names a partition `events` does not have.
        BrokerUnavailableError: The broker refused, did not answer within
            `connect_timeout_s`, or stopped serving records for :data:`STALLED_S`.
        TopicMissingError: The deployment has no `events` topic.
        TopicCreationError: The broker refused to create a target topic.
    """
    if not connect_timeout_s > 0:
        raise InvalidArgumentError(f"connect_timeout_s: {connect_timeout_s!r} is not positive")
    started = time.monotonic()
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        **settings.client_security(),
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset="earliest",
        max_partition_fetch_bytes=settings.max_partition_fetch_bytes,
        fetch_max_bytes=settings.fetch_max_bytes,
    )
    history = SessionHistory(settings)
    try:
        ranges, partitions = await _placed(consumer, settings, request, connect_timeout_s)
        logger.info(
            "replay started events=%s target=%s partitions=%d offsets=%d sessions=%s",
            settings.topic("events"),
            request.target_prefix,
            len(ranges),
            sum(end - start for start, end in ranges.values()),
            "all" if request.sessions is None else len(request.sessions),
        )
        async with _target(settings, request.target_prefix, connect_timeout_s) as target:
            fold = _Fold(settings, partitions, history, target)
            await _read(consumer, ranges, request.sessions, fold, progress, settings)
    finally:
        await consumer.stop()
        await history.stop()
    report = ReplayReport(
        target_prefix=request.target_prefix,
        sessions=len(fold.sessions),
        records=fold.records,
        offsets=sum(end - start for start, end in ranges.values()),
        snapshots=fold.snapshots,
        requests=fold.requests,
        dead_letters=fold.dead_letters,
        seconds=time.monotonic() - started,
    )
    logger.info(
        "replay done target=%s sessions=%d records=%d snapshots=%d requests=%d "
        "dead_letters=%d seconds=%.3f",
        report.target_prefix,
        report.sessions,
        report.records,
        report.snapshots,
        report.requests,
        report.dead_letters,
        report.seconds,
    )
    return report


async def _placed(
    consumer: AIOKafkaConsumer, settings: KafkaSettings, request: ReplayRequest, timeout_s: float
) -> tuple[dict[TopicPartition, tuple[int, int]], int]:
    """Connect, find each range to read, assign those partitions and seek to their starts.

    The ranges ``{partition: (start, end)}`` and `events`' partition count.

    Raises:
        BrokerUnavailableError: The broker refused or did not answer within `timeout_s`.
        TopicMissingError: The deployment has no `events` topic.
        InvalidArgumentError: ``from_offset`` names a partition `events` does not have.
    """
    events = settings.topic("events")
    async with broker_calls(settings.kafka_bootstrap, timeout_s):
        opened = await opened_reader(
            consumer,
            settings.kafka_bootstrap,
            events,
            request.start,
            security=settings.client_security(),
        )
    ends, starts = opened.ends, opened.starts
    every, count = list(ends), len(ends)
    if request.sessions is None:
        wanted = every
    else:
        homes = {session_partition(key.encode(), count) for key in request.sessions}
        wanted = [tp for tp in every if tp.partition in homes]
    consumer.assign(wanted)
    for tp in wanted:
        consumer.seek(tp, starts[tp])
    return {tp: (starts[tp], ends[tp]) for tp in wanted}, count


@dataclass(frozen=True, slots=True)
class _Target:
    """The target namespace's producer and topic names."""

    producer: AIOKafkaProducer
    settings: KafkaSettings


@contextlib.asynccontextmanager
async def _target(
    settings: KafkaSettings, target_prefix: str, timeout_s: float
) -> AsyncIterator[_Target]:
    """The target's output topics (made when missing) and a producer writing to them.

    Raises:
        BrokerUnavailableError: The broker did not answer within `timeout_s`.
        TopicCreationError: The broker refused to create a topic.
    """
    target = settings.model_copy(update={"topic_prefix": target_prefix})
    bootstrap = settings.kafka_bootstrap
    specs = {spec.role: spec for spec in topic_specs(target)}
    security = settings.client_security()
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, **security
    )
    async with broker_calls(bootstrap, timeout_s):
        wanted = []
        for role in OUTPUT_ROLES:
            try:
                live = await partition_count(bootstrap, settings.topic(role), security=security)
            except TopicError:  # no such source topic: the target gets the declared count
                live = 0
            spec = specs[role]
            wanted.append(replace(spec, partitions=live or spec.partitions))
        try:
            created = await ensure_topics(bootstrap, wanted, security=security)
        except TopicError as exc:  # the broker refused a topic: the message names it
            raise TopicCreationError(str(exc)) from exc
        await producer.start()
    if created.created:
        # A topic created a moment ago may not be in the metadata yet: the first send waits.
        logger.info("replay target topics created=%s", ",".join(created.created))
    try:
        yield _Target(producer, target)
    finally:
        await producer.stop()


class _Fold:
    """The batch step over the replayed records, its table in memory, its outputs on the target."""

    def __init__(
        self,
        settings: ProjectorSettings,
        partitions: int,
        history: SessionHistory,
        target: _Target,
    ) -> None:
        self._projector = BatchProjector(
            settings, SessionCache(settings.session_cache_bytes), partitions=partitions
        )
        self._table: dict[tuple[int, bytes], bytes] = {}
        self._history = history
        self._target = target
        #: What the batches caused so far (the report's figures).
        self.sessions: set[SessionKey] = set()
        self.records = self.snapshots = self.requests = self.dead_letters = 0

    def _read(self, partition: int, key: bytes) -> bytes | None:
        return self._table.get((partition, key))

    async def batch(self, records: list[SourceRecord]) -> None:
        """Fold `records`, keep the table's writes, and write what they cause to the target."""
        read: TableReader = self._read
        outcome = self._projector.project(records, read)
        await self._history.complete(self._projector, outcome, read)
        self._apply(outcome.writes)
        await self._write(outcome)

    def _apply(self, writes: list[TableWrite]) -> None:
        for write in writes:
            if write.value is None:
                self._table.pop((write.partition, write.key), None)
            else:
                self._table[(write.partition, write.key)] = write.value

    async def _write(self, outcome: BatchOutcome) -> None:
        producer, target = self._target.producer, self._target.settings
        snapshots, failed = outcome.snapshot_records()
        letters = [*outcome.dead_letters, *failed]
        deliveries = [
            await producer.send(
                target.topic("compaction-requests"),
                key=request.session_key.encode(),
                value=encode(request),
            )
            for request, _ in outcome.requests
        ]
        for key, value in snapshots:
            deliveries.append(
                await producer.send(target.topic("projections"), key=key, value=value)
            )
        for letter in letters:
            delivery = await producer.send(
                target.topic("dead-letters"), key=letter.record_key(), value=encode(letter)
            )
            deliveries.append(delivery)
        await asyncio.gather(*deliveries)
        self.records += outcome.applied
        self.snapshots += len(snapshots)
        self.requests += len(outcome.requests)
        self.dead_letters += len(letters)
        self.sessions.update(changed.projection.session_key for changed in outcome.changed)


async def _read(
    consumer: AIOKafkaConsumer,
    ranges: Mapping[TopicPartition, tuple[int, int]],
    sessions: frozenset[SessionKey] | None,
    fold: _Fold,
    progress: OnProgress | None,
    settings: ProjectorSettings,
) -> None:
    """Read every range to its end, folding each batch of the sessions asked for.

    Raises:
        BrokerUnavailableError: No position moved for :data:`STALLED_S`.
    """
    keys = None if sessions is None else {key.encode() for key in sessions}
    positions = {tp: start for tp, (start, _) in ranges.items()}
    remaining = set()
    for tp, (start, end) in ranges.items():
        if start < end:
            remaining.add(tp)
        else:
            consumer.pause(tp)
    _report_progress(progress, ranges, positions)
    moved_at = time.monotonic()
    while remaining:
        fetched = await consumer.getmany(timeout_ms=_POLL_MS, max_records=settings.batch_size)
        records: list[SourceRecord] = []
        for tp, batch in fetched.items():
            end = ranges[tp][1]
            records.extend(
                SourceRecord(r.topic, r.partition, r.offset, r.key, r.value or b"")
                for r in batch
                if r.offset < end and (keys is None or r.key in keys)
            )
        moved = False
        for tp in sorted(remaining, key=lambda tp: tp.partition):
            # Past every record returned, and past the markers and aborted records skipped.
            position = min(await consumer.position(tp), ranges[tp][1])
            moved = moved or position != positions[tp]
            positions[tp] = position
            if position >= ranges[tp][1]:
                consumer.pause(tp)  # nothing past the end is fetched
                remaining.discard(tp)
        if records:
            await fold.batch(records)
        if moved:
            moved_at = time.monotonic()
            _report_progress(progress, ranges, positions)
        elif time.monotonic() - moved_at > STALLED_S:
            raise BrokerUnavailableError(
                bootstrap=settings.kafka_bootstrap,
                reason=f"no record read for {STALLED_S:g} s, "
                f"{sum(ranges[tp][1] - positions[tp] for tp in remaining)} offsets before the end",
            )


def _report_progress(
    progress: OnProgress | None,
    ranges: Mapping[TopicPartition, tuple[int, int]],
    positions: Mapping[TopicPartition, int],
) -> None:
    if progress is None:
        return
    progress(
        ReplayProgress(
            {
                tp.partition: PartitionProgress(start, end, positions[tp])
                for tp, (start, end) in sorted(ranges.items(), key=lambda item: item[0].partition)
            }
        )
    )


def replay_settings(client: KafkaSettings, given: ProjectorSettings | None) -> ProjectorSettings:
    """`given` (else `client`'s settings, or the projector's from the environment), on `client`'s.

    Its cluster and deployment are always the client's: the target was checked against it.
    """
    if given is None and isinstance(client, ProjectorSettings):
        return client
    base = given if given is not None else ProjectorSettings()
    ours = {name: getattr(client, name) for name in KafkaSettings.model_fields}
    return base.model_copy(update=ours)
