"""One batch of `events` records folded into the sessions they touch. No I/O of its own.

The faust agent hands a batch of raw records here together with a reader of
the ``sessions`` table; what comes back is everything the batch must cause:
dead letters, compaction requests, snapshots and table writes. The agent only
moves those bytes (:mod:`streams.faust_engine.projector`). Every decision is the pure
core's: :func:`projections.compaction.decision.step` per record.

Per session touched, in the batch's order:

1. its projection is taken from the cache, or rebuilt from the table
   (:mod:`streams.session_table`) on a miss;
2. each record whose offset is not above ``last_offset`` is redelivered
   and skipped; each other record is folded with ``step``;
3. one chunk with the new records (several when together they would not fit
   one changelog record), the request key (set when a request was decided,
   deleted when a summary answered the in-flight one) and the header are
   written, in that order;
4. the session's projection is listed for a snapshot if it changed *or*
   records were redelivered (the shell assembles the snapshots after sending
   the batch's requests).

No single record stops the batch (:data:`Stage` names the stages): a record
without a key, on a partition other than its key's, that does not decode,
whose fold or decision raises, whose request cannot be encoded, or that would
take its session over ``session_max_bytes`` is dead-lettered with its stage
and reason, and the rest of the batch goes on.
A session whose stored entries cannot be read back (a chunk missing, a value
that no longer decodes) is quarantined: its records are dead-lettered while
the worker owns the partition, and every other session goes on.

Memory is accounted in bytes: each record's retained size is estimated from
the record itself when it is decoded (:func:`schemas.codec.decode_envelope_sized`),
a session's projection holds the sum of its records', and the cache drops
least recently used sessions beyond ``session_cache_bytes`` after each
session it folds. Records are decoded one session at a time, so a batch never
holds more decoded records than one session's.

Redelivery after a crash: a batch's records are acked only once the broker
has every output of the batch (:mod:`streams.faust_engine.projector`), so every output
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
from dataclasses import dataclass, field, replace
from typing import Final, Literal

from projections.compaction.config import CompactionConfig
from projections.compaction.decision import step
from projections.contents.context_digest import ContextDigest, digest_context
from projections.contents.snapshot import snapshot_with_digest
from projections.fold.projection import (
    NO_OFFSET,
    SessionProjection,
    apply,
    empty_projection,
    inheriting,
    note_request,
)
from projections.retention.log_retention import retained
from projections.retention.retained_vector import NeedsHistory
from projections.retention.state_codec import decode_state, encode_state
from schemas.codec import (
    MAX_RECORD_BYTES,
    decode_compaction_request,
    decode_envelope_sized,
    encode,
)
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter, build_dead_letter
from schemas.errors import DecodeError
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset, SessionKey
from schemas.letter_log import LetterLog
from schemas.log_text import shown
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import ProjectionSnapshot
from streams.projector_settings import ProjectorSettings
from streams.session_table import (
    MAX_CHUNK_BYTES,
    SessionHeader,
    StoredRecord,
    checkpoint_key,
    chunk_key,
    chunked,
    decode_chunk,
    decode_header,
    encode_chunk,
    encode_header,
    header_key,
    request_key,
)

logger = logging.getLogger(__name__)

Stage = Literal["decode", "partition", "fold", "encode", "session-size", "rebuild", "snapshot"]
"""Where a record was refused: ``decode`` (no key, not a valid envelope), ``partition``
(not on its key's partition), ``fold`` (applying it or deciding compaction raised),
``encode`` (its compaction request cannot be encoded), ``session-size`` (it would take
its session over ``session_max_bytes``), ``rebuild`` (its session's stored entries cannot
be read back: the session is quarantined), ``snapshot`` (its session's snapshot cannot be
assembled or encoded)."""

TableReader = Callable[[int, bytes], bytes | None]
"""Reads one key of the ``sessions`` table, given the session's partition."""

SessionId = tuple[int, SessionKey]
"""A session as the worker holds it: its `events` partition and its key."""

_REASON_CHARS: Final = 500
#: What a decoded checkpoint retains in memory, per byte of its encoding (records as
#: models, persistent maps of identifiers): the cache's estimate, as the codec's is
#: for a record (:func:`schemas.codec.decode_envelope_sized`).
CHECKPOINT_RETAINED_FACTOR: Final = 4


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
    """A session's projection in the worker's memory, with what its header adds.

    Attributes:
        projection: The projection.
        partition: The session's `events` partition.
        chunks: Chunks stored in the table.
        events: Records the chunks hold.
        request: The in-flight request as stored (``r:``), if any.
        config: The compaction config of the session's app.
        size: Estimated bytes the projection's records retain in memory.
        base: The first chunk the stored checkpoint does not cover (0: none).
        first_offset: Offset of the session's first applied record (-1: none).
        digest: The context digest its last snapshot left (None: none yet), so
            the next snapshot assembles only what came since.
    """

    projection: SessionProjection
    partition: int
    chunks: int
    events: int
    request: CompactionRequest | None
    config: CompactionConfig
    size: int = 0
    base: int = 0
    first_offset: Offset = NO_OFFSET
    digest: ContextDigest | None = field(default=None, compare=False)  # derived, never stored


@dataclass(frozen=True, slots=True)
class Changed:
    """A session whose snapshot the batch publishes, its batch's last record, and its cache entry.

    The snapshot reads the entry's context digest and leaves the new one there.
    """

    projection: SessionProjection
    last_record: SourceRecord
    session: CachedSession

    def snapshot(self) -> ProjectionSnapshot:
        """The session's snapshot, from and then into its entry's context digest."""
        snapshot, self.session.digest = snapshot_with_digest(self.projection, self.session.digest)
        return snapshot


@dataclass(frozen=True, slots=True)
class HistoryNeed:
    """A session whose batch needs records its projection released: the shell reads them.

    Attributes:
        partition: The session's `events` partition.
        session_key: The session.
        first_offset: Offset of its first applied record.
        end_offset: One past its last applied record: the history is
            ``[first_offset, end_offset)`` of the partition, the session's key only.
        group: The session's records of the batch, folded once the history is read.
    """

    partition: int
    session_key: SessionKey
    first_offset: Offset
    end_offset: Offset
    group: list[SourceRecord]


class _HistoryNeeded(Exception):
    """Raised out of one session's fold when its projection released what a record needs."""

    def __init__(self, first_offset: Offset, end_offset: Offset) -> None:
        super().__init__(f"history [{first_offset}, {end_offset}) needed")
        self.first_offset = first_offset
        self.end_offset = end_offset


@dataclass(slots=True)
class BatchOutcome:
    """What one batch causes.

    `history_needed` lists the sessions whose records were not folded yet
    because their projections released what those records need; the shell
    reads each one's history and hands it to
    :meth:`BatchProjector.project_history`, which folds them into this same
    outcome.
    """

    dead_letters: list[DeadLetter] = field(default_factory=list)
    requests: list[tuple[CompactionRequest, int]] = field(default_factory=list)
    answered: list[SessionKey] = field(default_factory=list)
    learned: list[tuple[CompactionRequest, int]] = field(default_factory=list)
    changed: list[Changed] = field(default_factory=list)
    writes: list[TableWrite] = field(default_factory=list)
    applied: int = 0
    redelivered: int = 0
    history_needed: list[HistoryNeed] = field(default_factory=list)
    letters_logged: int = 0  # how many of `dead_letters` the projector has logged

    def snapshots(self) -> list[ProjectionSnapshot]:
        """The snapshots to publish, one per session in `changed`. O(their visible contexts).

        Assembled on demand, so the shell can send the batch's requests before
        paying for the contexts.

        Raises:
            Exception: A snapshot cannot be assembled (the shell uses
                :meth:`snapshot_records`, which dead-letters instead).
        """
        return [changed.snapshot() for changed in self.changed]

    def snapshot_records(self) -> tuple[list[tuple[bytes, bytes]], list[DeadLetter]]:
        """The encoded snapshots (key, value) to publish, and dead letters for those that failed.

        A session whose snapshot cannot be assembled or encoded gets no
        snapshot; its batch's last record is dead-lettered at stage
        ``snapshot`` with the reason, and the other sessions' snapshots go out.
        """
        records: list[tuple[bytes, bytes]] = []
        letters: list[DeadLetter] = []
        for changed in self.changed:
            try:
                snapshot = changed.snapshot()
                records.append((snapshot.session_key.encode(), encode(snapshot)))
            except Exception as exc:  # noqa: BLE001 - one session's snapshot never stops the batch
                letter = dead_letter(changed.last_record, "snapshot", _failure(exc))
                logger.warning(  # at most one a session and batch, never one per record
                    "dead letter topic=%s partition=%d offset=%d stage=snapshot reason=%s",
                    shown(letter.source_topic),
                    letter.source_partition,
                    letter.source_offset,
                    shown(letter.reason),
                )
                letters.append(letter)
        return records, letters


class SessionCache:
    """The projections of recently touched sessions, bounded by the bytes they retain.

    A cached projection keeps every record of its session, so the bound is on
    their estimated memory (:attr:`CachedSession.size`), not on sessions or
    events: beyond it the least recently used sessions are dropped, and rebuilt
    from the table when touched again. The session being folded is never dropped.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max_bytes = max_bytes
        self._sessions: OrderedDict[SessionId, CachedSession] = OrderedDict()
        self._bytes = 0

    def __len__(self) -> int:
        return len(self._sessions)

    @property
    def bytes(self) -> int:
        """Estimated bytes the cached sessions retain."""
        return self._bytes

    def get(self, key: SessionId) -> CachedSession | None:
        """The cached session, marked as most recently used."""
        session = self._sessions.get(key)
        if session is not None:
            self._sessions.move_to_end(key)
        return session

    def put(self, key: SessionId, session: CachedSession) -> None:
        """Cache `session` as the most recently used one."""
        self.drop(key)
        self._sessions[key] = session
        self._bytes += session.size

    def grew(self, session: CachedSession, size: int) -> None:
        """Account `size` more bytes retained by the cached `session`."""
        session.size += size
        self._bytes += size

    def drop(self, key: SessionId) -> None:
        """Forget one session (it is rebuilt from the table when touched again)."""
        dropped = self._sessions.pop(key, None)
        if dropped is not None:
            self._bytes -= dropped.size

    def evict(self, keep: SessionId | None = None) -> None:
        """Drop least recently used sessions, never `keep`, until the cache fits its bound."""
        while self._bytes > self._max_bytes and self._sessions:
            oldest = next(iter(self._sessions))
            if oldest == keep:
                if len(self._sessions) == 1:
                    return
                self._sessions.move_to_end(oldest)
                continue
            self.drop(oldest)

    def revoked(self, partitions: set[int]) -> None:
        """Drop the sessions of partitions this worker no longer owns."""
        for key in [k for k in self._sessions if k[0] in partitions]:
            self.drop(key)


def _failure(exc: BaseException) -> str:
    """``Type: message`` of an exception, bounded and escaped, for a reason."""
    return f"{type(exc).__name__}: {shown(str(exc), _REASON_CHARS)}"


def dead_letter(record: SourceRecord, stage: Stage, reason: str) -> DeadLetter:
    """The dead letter of `record` (through the one builder); the projector logs it."""
    letter = build_dead_letter(
        reason=reason,
        stage=stage,
        source_topic=record.topic,
        source_partition=record.partition,
        source_offset=record.offset,
        key=record.key,
        value=record.value,
    )
    return letter


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """A record that decoded: its logged event and its estimated retained bytes."""

    source: SourceRecord
    logged: LoggedEvent
    size: int


def decode_record(record: SourceRecord) -> DecodedRecord | DeadLetter:
    """The decoded record, or its dead letter when it breaks the event contract."""
    if record.key is None:
        return dead_letter(record, "decode", "record has no key (the session key)")
    try:
        envelope, size = decode_envelope_sized(record.value, record_key=record.key)
    except DecodeError as exc:
        return dead_letter(record, "decode", str(exc))
    except Exception as exc:  # noqa: BLE001 - the codec's own bug must not stop the batch
        return dead_letter(record, "decode", _failure(exc))
    return DecodedRecord(record, LoggedEvent(Offset(record.offset), envelope), size)


class BatchProjector:
    """Folds batches of `events` records into cached session projections."""

    def __init__(
        self, settings: ProjectorSettings, cache: SessionCache, *, partitions: int
    ) -> None:
        """A projector folding into `cache`.

        Args:
            settings: The worker's settings.
            cache: The session cache.
            partitions: The `events` topic's partition count, as the broker
                reports it: a record on another partition than its key's is
                dead-lettered.
        """
        self._settings = settings
        self._cache = cache
        self._partitions = partitions
        self._quarantined: dict[SessionId, str] = {}
        self._letters = LetterLog(logger)

    @property
    def partitions(self) -> int:
        """The `events` topic's partition count."""
        return self._partitions

    @property
    def quarantined(self) -> dict[SessionId, str]:
        """Sessions whose stored entries could not be read back, with the reason."""
        return dict(self._quarantined)

    def is_quarantined(self, session_id: SessionId) -> bool:
        """Whether the session is quarantined (its records refused)."""
        return session_id in self._quarantined

    def revoked(self, partitions: set[int]) -> None:
        """Forget the cached and quarantined sessions of partitions no longer owned."""
        self._cache.revoked(partitions)
        for key in [k for k in self._quarantined if k[0] in partitions]:
            del self._quarantined[key]

    def project(self, records: Sequence[SourceRecord], read: TableReader) -> BatchOutcome:
        """Everything `records` cause, in order; the cache moves forward. Never raises."""
        self._letters.sweep()  # counts of letters that stopped coming are logged all the same
        outcome = BatchOutcome()
        groups: dict[tuple[int, bytes], list[SourceRecord]] = {}
        # murmur2 is pure Python (about 11 µs a key): once per session of the batch.
        home: dict[bytes, int] = {}
        for record in records:
            if record.key is None:
                outcome.dead_letters.append(
                    dead_letter(record, "decode", "record has no key (the session key)")
                )
                continue
            expected = home.get(record.key)
            if expected is None:
                expected = home[record.key] = session_partition(record.key, self._partitions)
            if record.partition != expected:
                reason = (
                    f"record on partition {record.partition}, but its key belongs to partition "
                    f"{expected} of {self._partitions} (Kafka's default murmur2 partitioner)"
                )
                outcome.dead_letters.append(dead_letter(record, "partition", reason))
                continue
            groups.setdefault((record.partition, record.key), []).append(record)
        for (partition, _), group in groups.items():
            self._project_group(partition, group, read, outcome)
        self._log_letters(outcome)
        return outcome

    def _log_letters(self, outcome: BatchOutcome) -> None:
        """Log `outcome`'s dead letters not logged yet: each session and stage's first.

        The rest are counted (a session past its size cap letters every append:
        one line each would let one tenant fill the log). Every letter still
        goes to `dead-letters`, and to the metrics.
        """
        for letter in outcome.dead_letters[outcome.letters_logged :]:
            self._letters.letter(letter)
        outcome.letters_logged = len(outcome.dead_letters)

    def _project_group(
        self,
        partition: int,
        group: list[SourceRecord],
        read: TableReader,
        outcome: BatchOutcome,
        history: Sequence[SourceRecord] | None = None,
        inherited: Inheritance | None = None,
    ) -> None:
        """Decode and fold one session's records of the batch (one key, one partition).

        A session whose projection released what a record needs is listed in
        ``outcome.history_needed`` and left as it was. With `history` (its
        records on `events` up to the batch) the projection is first rebuilt
        from it, which releases nothing, so that cannot happen again; if it
        did, the session is quarantined.
        """
        decoded: list[DecodedRecord] = []
        for record in group:
            result = decode_record(record)
            if isinstance(result, DeadLetter):
                outcome.dead_letters.append(result)
            else:
                decoded.append(result)
        if not decoded:
            return
        key = decoded[0].logged.envelope.session_key
        session_id: SessionId = (partition, key)
        reason = self._quarantined.get(session_id)
        if reason is None:
            try:
                self._project_session(session_id, decoded, read, outcome, history, inherited)
            except _HistoryNeeded as needed:
                if history is None:
                    sources = [item.source for item in decoded]
                    need = HistoryNeed(
                        partition, key, needed.first_offset, needed.end_offset, sources
                    )
                    outcome.history_needed.append(need)
                    return
                reason = f"session {shown(key)} quarantined: its history did not restore it"
                self._quarantine(session_id, reason)
            except Exception as exc:  # noqa: BLE001 - a bad stored value quarantines one session
                self._quarantine(session_id, f"session {shown(key)} quarantined: {_failure(exc)}")
            else:
                self._cache.evict(keep=session_id)
                return
            reason = self._quarantined[session_id]
        outcome.dead_letters.extend(dead_letter(r.source, "rebuild", reason) for r in decoded)

    def _quarantine(self, session_id: SessionId, reason: str) -> None:
        self._quarantined[session_id] = reason
        self._cache.drop(session_id)
        logger.error("%s", reason)

    def _session(
        self,
        session_id: SessionId,
        read: TableReader,
        outcome: BatchOutcome,
        history: Sequence[SourceRecord] | None = None,
        inherited: Inheritance | None = None,
    ) -> CachedSession:
        """The session from the cache, else rebuilt from the table (or from `history`).

        Raises:
            _HistoryNeeded: The table's checkpoint and chunks do not restore it.
        """
        cached = self._cache.get(session_id)
        if cached is None or history is not None:
            partition, key = session_id
            started = time.perf_counter()
            try:
                rebuilt = rebuild_session(
                    self._settings, key, partition, read, history=history, inherited=inherited
                )
            except NeedsHistory as exc:
                header = stored_header(key, partition, read)
                raise _HistoryNeeded(header.first_offset, Offset(header.last_offset + 1)) from exc
            if cached is None and rebuilt.request is not None:
                if rebuilt.projection.in_flight is None:  # answered, key left behind
                    outcome.writes.append(TableWrite(partition, request_key(key), None))
                    rebuilt.request = None
                else:
                    outcome.learned.append((rebuilt.request, partition))
            elif cached is not None:
                rebuilt.request = cached.request
                rebuilt.projection = replace_waiting(rebuilt.projection, cached.projection)
            cached = rebuilt
            if cached.events:
                logger.debug(
                    "rebuilt session=%s events=%d bytes=%d seconds=%.4f from=%s",
                    shown(key),
                    cached.events,
                    cached.size,
                    time.perf_counter() - started,
                    "table" if history is None else "history",
                )
            self._cache.put(session_id, cached)
        return cached

    def _project_session(
        self,
        session_id: SessionId,
        decoded: list[DecodedRecord],
        read: TableReader,
        outcome: BatchOutcome,
        history: Sequence[SourceRecord] | None = None,
        inherited: Inheritance | None = None,
    ) -> None:
        """Fold one session's records; what it writes reaches `outcome` only if it all succeeds.

        Raises:
            Exception: The session's stored entries cannot be read back
                (quarantine); a record's own failure is dead-lettered instead.
        """
        partition, key = session_id
        session = self._session(session_id, read, outcome, history, inherited)
        config = session.config
        was_fork = session.projection.forked_at is not None
        projection = session.projection
        limit = self._settings.session_max_bytes
        new: list[StoredRecord] = []
        letters: list[DeadLetter] = []
        requests: list[tuple[CompactionRequest, bytes]] = []
        first_redelivered: Offset | None = None
        decided: tuple[CompactionRequest, bytes] | None = None
        answered = False
        redelivered = 0
        added = 0
        for item in decoded:
            record, source = item.logged, item.source
            if record.offset <= projection.last_offset:
                redelivered += 1
                if first_redelivered is None:
                    first_redelivered = record.offset
                continue
            if session.size + added + item.size > limit:
                reason = (
                    f"session {shown(key)} would hold about {session.size + added + item.size} "
                    f"bytes in memory with this record, over session_max_bytes={limit}"
                )
                letters.append(dead_letter(source, "session-size", reason))
                continue
            waiting = projection.in_flight is not None
            try:
                folded = step(projection, record, config)
            except NeedsHistory as exc:
                first, end = session.first_offset, Offset(session.projection.last_offset + 1)
                raise _HistoryNeeded(first, end) from exc
            except Exception as exc:  # noqa: BLE001 - one record's fold never stops its session
                letters.append(dead_letter(source, "fold", _failure(exc)))
                continue
            encoded: bytes | None = None
            if folded.request is not None:
                try:
                    encoded = encode(folded.request)
                    if len(encoded) > MAX_RECORD_BYTES:
                        raise ValueError(  # noqa: TRY301 - the same refusal as a failed encode
                            f"the compaction request it decides takes {len(encoded)} bytes, "
                            f"over the record limit of {MAX_RECORD_BYTES}"
                        )
                except Exception as exc:  # noqa: BLE001 - an unencodable request refuses its record
                    letters.append(dead_letter(source, "encode", _failure(exc)))
                    continue
            projection = folded.projection
            new.append(StoredRecord(record.offset, source.value))
            added += item.size
            if waiting and projection.in_flight is None:
                answered, decided = True, None
            if folded.request is not None and encoded is not None:
                decided = (folded.request, encoded)
                requests.append(decided)
        writes: list[TableWrite] = []
        if first_redelivered is not None:
            writes.extend(self._chunks_again(key, session, first_redelivered, read))
        # A batch that made the session a fork checkpoints it, so that a restore does not
        # read the source's history again.
        forked = not was_fork and projection.forked_at is not None
        checkpoint = _checkpoint(key, projection, config, force=forked) if new else None
        if checkpoint is not None:
            kept = len(checkpoint[0].log.records.tail)
            held = max(len(projection.log.records.tail), 1)
            projection = checkpoint[0]
        # Nothing below raises: the session moves forward only now.
        outcome.dead_letters.extend(letters)
        outcome.redelivered += redelivered
        outcome.applied += len(new)
        outcome.requests.extend((request, partition) for request, _ in requests)
        outcome.writes.extend(writes)
        deletions: list[TableWrite] = []
        if new:
            if checkpoint is None:
                for records in chunked(new):  # each fits one changelog record
                    outcome.writes.append(
                        TableWrite(partition, chunk_key(key, session.chunks), encode_chunk(records))
                    )
                    session.chunks += 1
            session.events += len(new)
            if session.first_offset == NO_OFFSET:
                session.first_offset = new[0].offset
            session.projection = projection
            self._cache.grew(session, added)
        if checkpoint is not None:
            # The checkpoint covers this batch's records too: they get no chunk of their own,
            # only the chunk number they would have had, so that the base is above 0.
            outcome.writes.append(TableWrite(partition, checkpoint_key(key), checkpoint[1]))
            deletions = [
                TableWrite(partition, chunk_key(key, number), None)
                for number in range(session.base, session.chunks)
            ]
            session.chunks += 1
            session.base = session.chunks
            # The records it let go, in proportion: the cache's estimate shrinks with the log.
            self._cache.grew(session, session.size * kept // held - session.size)
        if decided is not None:
            session.request = decided[0]
            outcome.writes.append(TableWrite(partition, request_key(key), decided[1]))
        elif answered:
            session.request = None
            outcome.answered.append(key)
            outcome.writes.append(TableWrite(partition, request_key(key), None))
        elif first_redelivered is not None and session.request is not None:
            outcome.writes.append(TableWrite(partition, request_key(key), encode(session.request)))
        if new or first_redelivered is not None:
            outcome.writes.append(TableWrite(partition, header_key(key), _header(session)))
            outcome.changed.append(Changed(projection, decoded[-1].source, session))
        outcome.writes.extend(deletions)

    def project_history(
        self,
        need: HistoryNeed,
        history: Sequence[SourceRecord],
        read: TableReader,
        outcome: BatchOutcome,
        inherited: Inheritance | None = None,
    ) -> None:
        """Fold `need`'s records of the batch on its projection rebuilt from `history`.

        `history` is the session's records of ``[first_offset, end_offset)``
        as `events` holds them (the shell reads them). The rebuilt projection
        releases nothing, so the batch's records fold as on a session that
        never released anything, into this same `outcome`; the batch's
        retention then releases again. A history that does not start at the
        session's first record (the log's retention deleted it) quarantines
        the session and dead-letters its records. Never raises.

        With `inherited` (the session is a fork: what it inherits, which the
        shell read from its source's partition and folded with :func:`inherit`)
        the rebuild starts from it;
        a new session's `history` is empty (``need.first_offset`` is -1) and
        its fork record is in the batch.
        """
        session_id: SessionId = (need.partition, need.session_key)
        new_session = need.first_offset == NO_OFFSET
        if not new_session and (not history or history[0].offset != need.first_offset):
            first = history[0].offset if history else need.end_offset
            topic = need.group[0].topic if need.group else "events"
            self._quarantine(
                session_id,
                f"session {shown(need.session_key)} quarantined: its records before offset "
                f"{first} are no longer on {topic}, and its projection released them "
                f"(from offset {need.first_offset})",
            )
        self._project_group(need.partition, need.group, read, outcome, history, inherited)
        self._log_letters(outcome)

    def refuse_history(self, need: HistoryNeed, reason: str, outcome: BatchOutcome) -> None:
        """Quarantine `need`'s session, whose history cannot be read (`reason`), and its records.

        What a fork's line too long to follow (or a cycle of forks), or a
        history not read within ``history_read_timeout_s``, comes to: that
        session alone stops, saying why; the batch goes on.
        """
        session_id: SessionId = (need.partition, need.session_key)
        message = f"session {shown(need.session_key)} quarantined: {reason}"
        self._quarantine(session_id, message)
        letters = [dead_letter(source, "rebuild", message) for source in need.group]
        outcome.dead_letters.extend(letters)
        self._log_letters(outcome)

    @staticmethod
    def _chunks_again(
        key: SessionKey, session: CachedSession, first_redelivered: Offset, read: TableReader
    ) -> list[TableWrite]:
        """The session's stored entries holding a redelivered offset, to be written again.

        Walks back from the newest stored chunk (this batch's is not stored yet)
        to the one that holds `first_redelivered`; when the checkpoint covers
        it, the checkpoint is written again too (before the chunks after it).

        Raises:
            LookupError: A chunk or the checkpoint the header names is missing.
        """
        partition = session.partition
        rewrites: list[TableWrite] = []
        for number in range(session.chunks - 1, session.base - 1, -1):
            chunk = read(partition, chunk_key(key, number))
            if chunk is None:
                raise LookupError(f"session {shown(key)}: chunk {number} is missing")
            rewrites.append(TableWrite(partition, chunk_key(key, number), chunk))
            if next(decode_chunk(chunk)).offset <= first_redelivered:
                break
        else:
            if session.base:
                stored = read(partition, checkpoint_key(key))
                if stored is None:
                    raise LookupError(f"session {shown(key)}: its checkpoint is missing")
                rewrites.append(TableWrite(partition, checkpoint_key(key), stored))
        rewrites.reverse()
        return rewrites


def _header(session: CachedSession) -> bytes:
    return encode_header(
        SessionHeader(
            session.projection.last_offset,
            session.chunks,
            session.events,
            session.base,
            session.first_offset,
        )
    )


def _checkpoint(
    key: SessionKey, projection: SessionProjection, config: CompactionConfig, *, force: bool
) -> tuple[SessionProjection, bytes] | None:
    """The released projection and its bytes, when retention releases anything now (or `force`).

    A failure to release or encode keeps the whole projection (logged): the
    session folds on as before and tries again at its next batch. So does a
    checkpoint larger than one changelog record may be (:data:`MAX_CHUNK_BYTES`:
    a fork of a long session that no summary has compacted, say): the session
    keeps its chunks, and a fork restored without a checkpoint reads what it
    inherits again, which is slower but never a record the changelog refuses.
    """
    try:
        released = retained(projection, config)
        if released is projection and not force:
            return None
        encoded = encode_state(released)
    except Exception:
        logger.exception("session=%s: no checkpoint this batch", shown(key))
        return None
    if len(encoded) > MAX_CHUNK_BYTES:
        logger.info(
            "session=%s: no checkpoint this batch: it takes %d bytes, over %d",
            shown(key),
            len(encoded),
            MAX_CHUNK_BYTES,
        )
        return None
    return released, encoded


def _whole_fold(
    projection: SessionProjection, history: Sequence[SourceRecord], last_offset: Offset
) -> tuple[SessionProjection, int]:
    """`projection` with the records of `history` up to `last_offset` applied, and their bytes."""
    size = 0
    for source in history:
        if source.offset > last_offset:
            break
        decoded = decode_record(source)
        if isinstance(decoded, DeadLetter):
            continue
        try:
            projection = apply(projection, decoded.logged)
        except Exception:  # noqa: BLE001, S112 - refused when it came; refused again
            continue
        size += decoded.size
    return projection, size


@dataclass(frozen=True, slots=True)
class Inheritance:
    """A fork's inherited records folded into its starting projection (:func:`inherit`).

    `projection` is the new session's empty projection with every inherited
    record applied (its fork record not yet); `size` is their bytes, what the
    session's cache entry starts from; `digest` is its context's digest, so
    the fork's first snapshot assembles only what came since (O(context)
    otherwise, on the folding loop).
    """

    projection: SessionProjection
    size: int
    digest: ContextDigest | None = field(default=None, compare=False)


def _no_check() -> object:
    return None


def inherit(
    settings: ProjectorSettings,
    key: SessionKey,
    records: Sequence[LoggedEvent],
    between: Callable[[], object] = _no_check,
) -> Inheritance:
    """The fork `key`'s starting projection with its inherited `records` folded. Pure.

    O(records): the one fold of a fork's inheritance (and its context's
    digest), inline in the batch step or prepared off the folding loop
    (:mod:`streams.fork_preparation`), which passes `between` (called after
    each record) to pace itself.
    """
    projection = inheriting(empty_projection(key, settings.view_request_for(key)))
    size = 0
    for record in records:
        between()
        try:
            projection = apply(projection, record)
        except Exception:  # noqa: BLE001, S112 - refused in its own session; refused again
            continue
        size += len(encode(record.envelope))
    return Inheritance(projection, size, digest_context(projection.view).digest)


def replace_waiting(projection: SessionProjection, waiting: SessionProjection) -> SessionProjection:
    """`projection` waiting on `waiting`'s in-flight request, nothing else moved."""
    return replace(projection, in_flight=waiting.in_flight)


def stored_header(key: SessionKey, partition: int, read: TableReader) -> SessionHeader:
    """The session's stored header (an empty session's when none is stored)."""
    raw = read(partition, header_key(key))
    return SessionHeader(NO_OFFSET, 0, 0) if raw is None else decode_header(raw)


def rebuild_session(
    settings: ProjectorSettings,
    key: SessionKey,
    partition: int,
    read: TableReader,
    *,
    history: Sequence[SourceRecord] | None = None,
    inherited: Inheritance | None = None,
) -> CachedSession:
    """A session's projection restored from the table, waiting on its stored request.

    From the checkpoint, if one is stored, with the chunks since folded on:
    O(what the session holds + records since the checkpoint). Chunks hold
    only records that decoded when they were applied, so they decode again
    (unless the codec grew stricter since: then this raises and the shell
    quarantines the session). With `history` (the session's records on
    `events` up to its last applied offset) the projection is the whole fold
    of those instead, and the table gives only the header and the request;
    records that no longer decode or apply are passed over, as they were when
    they came (dead-lettered then). With `inherited` (the session is a fork)
    the projection starts from what it inherits, folded by :func:`inherit`.

    Raises:
        NeedsHistory: A record since the checkpoint needs records the
            checkpoint released (a rewind behind it): rebuild from `history`.
        LookupError: A chunk or the checkpoint the header names is missing.
        DecodeError: A stored record or request no longer decodes.
        Exception: A stored value is not what the table layout says.
    """
    projection = empty_projection(key, settings.view_request_for(key))
    size = 0
    digest = None
    if inherited is not None:
        projection, size, digest = inherited.projection, inherited.size, inherited.digest
    raw_header = read(partition, header_key(key))
    if raw_header is None:
        config = settings.compaction_for(key)
        return CachedSession(projection, partition, 0, 0, None, config, size, digest=digest)
    header = decode_header(raw_header)
    if history is not None:
        projection, own_size = _whole_fold(projection, history, header.last_offset)
        size += own_size
    else:
        if header.base:
            raw_checkpoint = read(partition, checkpoint_key(key))
            if raw_checkpoint is None:
                raise LookupError(f"session {shown(key)}: its checkpoint is missing")
            projection = decode_state(raw_checkpoint)
            size = len(raw_checkpoint) * CHECKPOINT_RETAINED_FACTOR
        for number in range(header.base, header.chunks):
            chunk = read(partition, chunk_key(key, number))
            if chunk is None:
                raise LookupError(
                    f"session {shown(key)}: chunk {number} of {header.chunks} is missing"
                )
            for stored in decode_chunk(chunk):
                envelope, record_size = decode_envelope_sized(stored.envelope)
                projection = apply(projection, LoggedEvent(stored.offset, envelope))
                size += record_size
    request = None
    raw_request = read(partition, request_key(key))
    if raw_request is not None:
        request = decode_compaction_request(raw_request)
        projection = note_request(projection, request)
    return CachedSession(
        projection,
        partition,
        header.chunks,
        header.events,
        request,
        settings.compaction_for(key),
        size,
        header.base,
        header.first_offset,
        digest,
    )
