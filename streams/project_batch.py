"""One batch of `events` records folded into the sessions they touch. No I/O of its own.

The faust agent hands a batch of raw records here together with a reader of
the ``sessions`` table; what comes back is everything the batch must cause:
dead letters, compaction requests, snapshots and table writes. The agent only
moves those bytes (:mod:`streams.projector`). Every decision is the pure
core's: :func:`projections.compaction_decision.step` per record.

Per session touched, in the batch's order:

1. its projection is taken from the cache, or rebuilt from the table
   (:mod:`streams.session_table`) on a miss;
2. each record whose offset is not above ``last_offset`` is redelivered
   and skipped; each other record is folded with ``step``;
3. one chunk with the new records, the request key (set when a request was
   decided, deleted when a summary answered the in-flight one) and the
   header are written, in that order;
4. the session's projection is listed for a snapshot if it changed *or*
   records were redelivered (the shell assembles the snapshots after sending
   the batch's requests).

Redelivery after a crash: a batch's records are acked only once the broker
has every output of the batch (:mod:`streams.projector`), so every output
lost in a crash belongs to a record that is delivered again. Step 4 publishes
the snapshot again, and the session's table entries written for the
redelivered records are written again (the header, the request key and every
chunk holding a redelivered offset): a RocksDB store keeps writes locally that
its changelog may have lost, and rewriting them makes the changelog whole
before the partition can move to another worker.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from projections.compaction_config import CompactionConfig
from projections.compaction_decision import step
from projections.projection import SessionProjection, apply, empty_projection, note_request
from projections.snapshot import to_snapshot
from schemas.codec import decode_compaction_request, decode_envelope, encode
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter
from schemas.errors import DecodeError
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import ProjectionSnapshot
from streams.projector_settings import ProjectorSettings
from streams.session_table import (
    SessionHeader,
    StoredRecord,
    chunk_key,
    decode_chunk,
    decode_header,
    encode_chunk,
    encode_header,
    header_key,
    request_key,
)

logger = logging.getLogger(__name__)

MAX_DEAD_LETTER_VALUE_BYTES: Final = 512 * 1024
"""Original bytes a dead letter keeps: base64 adds a third, and Kafka's default limit is 1 MiB."""

TableReader = Callable[[int, bytes], bytes | None]
"""Reads one key of the ``sessions`` table, given the session's partition."""


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """One `events` record as the consumer fetched it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


@dataclass(frozen=True, slots=True)
class TableWrite:
    """One write of the ``sessions`` table; ``value`` None deletes the key."""

    partition: int
    key: bytes
    value: bytes | None


@dataclass(slots=True)
class CachedSession:
    """A session's projection in the worker's memory, with what its header adds."""

    projection: SessionProjection
    partition: int
    chunks: int
    events: int
    request: CompactionRequest | None
    config: CompactionConfig


@dataclass(slots=True)
class BatchOutcome:
    """What one batch causes."""

    dead_letters: list[DeadLetter] = field(default_factory=list)
    requests: list[tuple[CompactionRequest, int]] = field(default_factory=list)
    answered: list[SessionKey] = field(default_factory=list)
    learned: list[tuple[CompactionRequest, int]] = field(default_factory=list)
    changed: list[SessionProjection] = field(default_factory=list)
    writes: list[TableWrite] = field(default_factory=list)
    applied: int = 0
    redelivered: int = 0

    def snapshots(self) -> list[ProjectionSnapshot]:
        """The snapshots to publish, one per session in `changed`. O(their visible contexts).

        Assembled on demand, so the shell can send the batch's requests before
        paying for the contexts.
        """
        return [to_snapshot(projection) for projection in self.changed]


class SessionCache:
    """The projections of recently touched sessions, bounded by the events they hold.

    A cached projection keeps every event of its session (several KB each in
    memory), so the bound is on events, not sessions: beyond it the least
    recently used sessions are dropped, and rebuilt from the table when
    touched again. The session just touched is never dropped.
    """

    def __init__(self, max_events: int) -> None:
        self._max_events = max_events
        self._sessions: OrderedDict[SessionKey, CachedSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: SessionKey) -> CachedSession | None:
        """The cached session, marked as most recently used."""
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
        return session

    def put(self, key: SessionKey, session: CachedSession) -> None:
        """Cache `session` as the most recently used one."""
        self._sessions[key] = session
        self._sessions.move_to_end(key)

    def evict(self) -> None:
        """Drop least recently used sessions until the cached events fit the bound.

        O(cached sessions); called once per batch.
        """
        total = sum(session.events for session in self._sessions.values())
        while total > self._max_events and len(self._sessions) > 1:
            _, dropped = self._sessions.popitem(last=False)
            total -= dropped.events

    def revoked(self, partitions: set[int]) -> None:
        """Drop the sessions of partitions this worker no longer owns."""
        for key in [k for k, s in self._sessions.items() if s.partition in partitions]:
            del self._sessions[key]


def dead_letter(record: SourceRecord, reason: str) -> DeadLetter:
    """The dead letter of `record`, logged at WARNING.

    The original value is kept whole up to :data:`MAX_DEAD_LETTER_VALUE_BYTES`;
    a larger one (its base64 would not fit in a Kafka record) is cut to that
    many bytes and the reason says so: the whole record stays in `events` at
    its source offset, which the dead letter names.
    """
    value = record.value
    if len(value) > MAX_DEAD_LETTER_VALUE_BYTES:
        reason = (
            f"{reason}; original_value cut to its first {MAX_DEAD_LETTER_VALUE_BYTES} of "
            f"{len(value)} bytes (the whole record stays at its source offset)"
        )
        value = value[:MAX_DEAD_LETTER_VALUE_BYTES]
    logger.warning(
        "dead letter topic=%s partition=%d offset=%d reason=%s",
        record.topic,
        record.partition,
        record.offset,
        reason,
    )
    return DeadLetter(
        reason=reason,
        source_topic=record.topic,
        source_partition=record.partition,
        source_offset=record.offset,
        original_key=record.key,
        original_value=value,
    )


def decode_record(record: SourceRecord) -> LoggedEvent | DeadLetter:
    """The logged event of a record, or its dead letter when it breaks the event contract."""
    if record.key is None:
        return dead_letter(record, "record has no key (the session key)")
    try:
        envelope = decode_envelope(record.value, record_key=record.key)
    except DecodeError as exc:
        return dead_letter(record, str(exc))
    return LoggedEvent(Offset(record.offset), envelope)


class BatchProjector:
    """Folds batches of `events` records into cached session projections."""

    def __init__(self, settings: ProjectorSettings, cache: SessionCache) -> None:
        self._settings = settings
        self._cache = cache

    def project(self, records: Sequence[SourceRecord], read: TableReader) -> BatchOutcome:
        """Everything `records` cause, in order; the cache moves forward."""
        outcome = BatchOutcome()
        by_session: dict[SessionKey, tuple[int, list[tuple[LoggedEvent, bytes]]]] = {}
        for record in records:
            decoded = decode_record(record)
            if isinstance(decoded, DeadLetter):
                outcome.dead_letters.append(decoded)
                continue
            key = decoded.envelope.session_key
            entry = by_session.get(key)
            if entry is None:
                by_session[key] = (record.partition, [(decoded, record.value)])
            else:
                entry[1].append((decoded, record.value))
        for key, (partition, logged) in by_session.items():
            self._project_session(key, partition, logged, read, outcome)
        self._cache.evict()
        return outcome

    def _session(
        self, key: SessionKey, partition: int, read: TableReader, outcome: BatchOutcome
    ) -> CachedSession:
        cached = self._cache.get(key)
        if cached is None:
            started = time.perf_counter()
            cached = rebuild_session(self._settings, key, partition, read)
            if cached.request is not None:
                if cached.projection.in_flight is None:  # answered, key left behind
                    outcome.writes.append(TableWrite(partition, request_key(key), None))
                    cached.request = None
                else:
                    outcome.learned.append((cached.request, partition))
            if cached.events:
                logger.debug(
                    "rebuilt session=%s events=%d seconds=%.4f",
                    key,
                    cached.events,
                    time.perf_counter() - started,
                )
            self._cache.put(key, cached)
        return cached

    def _project_session(
        self,
        key: SessionKey,
        partition: int,
        logged: list[tuple[LoggedEvent, bytes]],
        read: TableReader,
        outcome: BatchOutcome,
    ) -> None:
        session = self._session(key, partition, read, outcome)
        config = session.config
        projection = session.projection
        new: list[StoredRecord] = []
        first_redelivered: Offset | None = None
        decided: CompactionRequest | None = None
        answered = False
        for record, raw in logged:
            if record.offset <= projection.last_offset:
                outcome.redelivered += 1
                if first_redelivered is None:
                    first_redelivered = record.offset
                continue
            waiting = projection.in_flight is not None
            folded = step(projection, record, config)
            projection = folded.projection
            new.append(StoredRecord(record.offset, raw))
            if waiting and projection.in_flight is None:
                answered, decided = True, None
            if folded.request is not None:
                decided = folded.request
                outcome.requests.append((decided, partition))
        outcome.applied += len(new)
        if first_redelivered is not None:
            outcome.writes.extend(self._chunks_again(key, session, first_redelivered, read))
        if new:
            outcome.writes.append(
                TableWrite(partition, chunk_key(key, session.chunks), encode_chunk(new))
            )
            session.chunks += 1
            session.events += len(new)
            session.projection = projection
        if decided is not None:
            session.request = decided
            outcome.writes.append(TableWrite(partition, request_key(key), encode(decided)))
        elif answered:
            session.request = None
            outcome.answered.append(key)
            outcome.writes.append(TableWrite(partition, request_key(key), None))
        elif first_redelivered is not None and session.request is not None:
            outcome.writes.append(TableWrite(partition, request_key(key), encode(session.request)))
        if new or first_redelivered is not None:
            outcome.writes.append(TableWrite(partition, header_key(key), _header(session)))
            outcome.changed.append(projection)

    @staticmethod
    def _chunks_again(
        key: SessionKey, session: CachedSession, first_redelivered: Offset, read: TableReader
    ) -> list[TableWrite]:
        """The session's stored chunks holding a redelivered offset, to be written again.

        Walks back from the newest stored chunk (this batch's is not stored yet)
        to the one that holds `first_redelivered`.
        """
        partition = session.partition
        rewrites: list[TableWrite] = []
        for number in range(session.chunks - 1, -1, -1):
            chunk = read(partition, chunk_key(key, number))
            if chunk is None:
                raise RuntimeError(f"session {key!r}: chunk {number} is missing")
            rewrites.append(TableWrite(partition, chunk_key(key, number), chunk))
            if next(decode_chunk(chunk)).offset <= first_redelivered:
                break
        rewrites.reverse()
        return rewrites


def _header(session: CachedSession) -> bytes:
    return encode_header(
        SessionHeader(session.projection.last_offset, session.chunks, session.events)
    )


def rebuild_session(
    settings: ProjectorSettings, key: SessionKey, partition: int, read: TableReader
) -> CachedSession:
    """A session's projection folded again from its chunks, waiting on its stored request.

    O(session events). Chunks hold only records that decoded when they were
    applied, so they decode again.
    """
    projection = empty_projection(key, settings.view_request_for(key))
    raw_header = read(partition, header_key(key))
    if raw_header is None:
        return CachedSession(projection, partition, 0, 0, None, settings.compaction_for(key))
    header = decode_header(raw_header)
    for number in range(header.chunks):
        chunk = read(partition, chunk_key(key, number))
        if chunk is None:
            raise RuntimeError(f"session {key!r}: chunk {number} of {header.chunks} is missing")
        for stored in decode_chunk(chunk):
            envelope = decode_envelope(stored.envelope)
            projection = apply(projection, LoggedEvent(stored.offset, envelope))
    request = None
    raw_request = read(partition, request_key(key))
    if raw_request is not None:
        request = decode_compaction_request(raw_request)
        projection = note_request(projection, request)
    return CachedSession(
        projection, partition, header.chunks, header.events, request, settings.compaction_for(key)
    )
