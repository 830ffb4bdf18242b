"""The batch step keeps a long session bounded: a checkpoint and the chunks since, and its history.

The oracle is the core's whole fold of the session's records
(:func:`~projections.compaction.decision.replay_decisions`, nothing
released): after every batch the snapshot and the requests the batch step
emits must be the core's, while the table holds a checkpoint and only the
chunks written since; a fresh worker restores from the checkpoint and folds
on as the core does; a rewind behind what the projection holds makes the
batch ask for the session's history, and folding the batch on that history
gives the core's projection again.
"""

from __future__ import annotations

import logging
import re
from dataclasses import replace

import pytest

from ctxstream.bench.workload import BENCH_SESSION, bench_session
from projections.compaction.decision import replay_decisions
from projections.contents.snapshot import to_snapshot
from projections.fold.projection import SessionProjection
from projections.retention.state_codec import decode_state
from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    HistoryNeed,
    SessionCache,
    SourceRecord,
    rebuild_session,
)
from streams.projector_settings import ProjectorSettings
from streams.session_table import (
    MAX_CHUNK_BYTES,
    checkpoint_key,
    chunk_key,
    decode_chunk,
    decode_header,
    header_key,
)
from tests.support.events import rewind_event

SETTINGS = ProjectorSettings(compaction={"compaction_interval": 4, "overlap_size": 1})
CONFIG = SETTINGS.compaction_for(BENCH_SESSION)
KEY = BENCH_SESSION.encode()
BATCH = 100


class Table:
    """The ``sessions`` table of one partition, as the store holds it."""

    def __init__(self) -> None:
        self.values: dict[bytes, bytes] = {}

    def read(self, partition: int, key: bytes) -> bytes | None:
        assert partition == 0
        return self.values.get(key)

    def apply(self, outcome: BatchOutcome) -> None:
        for write in outcome.writes:
            if write.value is None:
                self.values.pop(write.key, None)
            else:
                self.values[write.key] = write.value


def _source(record: LoggedEvent) -> SourceRecord:
    return SourceRecord("events", 0, record.offset, KEY, encode(record.envelope))


class Core:
    """The whole fold of the records so far, and the requests it decided."""

    def __init__(self) -> None:
        self.projection = SessionProjection(BENCH_SESSION)
        self.requests: list[CompactionRequest] = []

    def fold(self, records: list[LoggedEvent]) -> None:
        self.projection, new = replay_decisions(BENCH_SESSION, records, CONFIG, self.projection)
        self.requests.extend(new)


def _folded(
    records: list[LoggedEvent], table: Table, projector: BatchProjector, core: Core
) -> list[CompactionRequest]:
    """Fold `records` in batches, checking each batch's snapshot against the core's."""
    emitted: list[CompactionRequest] = []
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        outcome = projector.project([_source(r) for r in batch], table.read)
        assert outcome.history_needed == []
        assert outcome.dead_letters == []
        table.apply(outcome)
        core.fold(batch)
        assert outcome.snapshots() == [to_snapshot(core.projection)]
        emitted.extend(request for request, _ in outcome.requests)
    return emitted


def _stored_offsets(table: Table) -> list[int]:
    header = decode_header(table.values[header_key(BENCH_SESSION)])
    return [
        stored.offset
        for number in range(header.base, header.chunks)
        for stored in decode_chunk(table.values[chunk_key(BENCH_SESSION, number)])
    ]


def _session() -> tuple[list[LoggedEvent], Table, BatchProjector, Core]:
    records = bench_session(3_010)  # the last batch of 10 releases nothing
    table, core = Table(), Core()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 40), partitions=1)
    assert _folded(records, table, projector, core) == core.requests
    return records, table, projector, core


def test_a_long_session_keeps_a_checkpoint_and_only_the_chunks_since() -> None:
    _, table, _, core = _session()
    header = decode_header(table.values[header_key(BENCH_SESSION)])
    assert header.chunks == 31
    assert header.base == 30  # each batch of 100 released what it could
    assert header.first_offset == 0
    numbers = sorted(int(key.rsplit(b":", 1)[1]) for key in table.values if key.startswith(b"c:"))
    assert numbers == list(range(header.base, header.chunks))
    checkpoint = decode_state(table.values[checkpoint_key(BENCH_SESSION)])
    stored = _stored_offsets(table)
    # The checkpoint and the chunks since are the session: nothing between, nothing twice.
    assert stored == list(range(checkpoint.last_offset + 1, core.projection.last_offset + 1))
    assert len(stored) == 10
    assert len(checkpoint.log.records.tail) < 300
    assert checkpoint.log.records.first > 2_500


def test_a_fresh_worker_restores_from_the_checkpoint_and_folds_on_as_the_core() -> None:
    _, table, projector, core = _session()
    cached = projector._cache.get((0, BENCH_SESSION))
    assert cached is not None
    rebuilt = rebuild_session(SETTINGS, BENCH_SESSION, 0, table.read)
    assert replace(rebuilt.projection, gate_memo=None) == replace(cached.projection, gate_memo=None)
    assert (rebuilt.chunks, rebuilt.base, rebuilt.first_offset) == (
        cached.chunks,
        cached.base,
        cached.first_offset,
    )
    fresh = BatchProjector(SETTINGS, SessionCache(1 << 40), partitions=1)
    more = bench_session(3_610)[3_010:]
    before = len(core.requests)
    assert _folded(more, table, fresh, core) == core.requests[before:]


def _rewind(records: list[LoggedEvent]) -> LoggedEvent:
    last = records[-1]
    event = rewind_event("rewind-deep", "inv10", last.envelope.event.timestamp + 1.0)
    envelope = Envelope.model_validate({**last.envelope.model_dump(), "event": event})
    return LoggedEvent(Offset(last.offset + 1), envelope)


def test_a_rewind_behind_the_checkpoint_reads_the_history_and_folds_as_the_core() -> None:
    records, table, projector, core = _session()
    rewind = _rewind(records)
    outcome = projector.project([_source(rewind)], table.read)
    assert outcome.history_needed == [
        HistoryNeed(0, BENCH_SESSION, Offset(0), Offset(records[-1].offset + 1), [_source(rewind)])
    ]
    assert (outcome.writes, outcome.changed, outcome.applied) == ([], [], 0)
    projector.project_history(
        outcome.history_needed[0], [_source(r) for r in records], table.read, outcome
    )
    table.apply(outcome)
    core.fold([rewind])
    assert outcome.snapshots() == [to_snapshot(core.projection)]
    assert outcome.applied == 1
    assert len(core.projection.log.live) < 200  # the rewind left only the first invocations
    # A fresh worker restoring the table reads the history too (the checkpoint is behind the
    # rewind until the next release), and folds on as the core does.
    fresh = BatchProjector(SETTINGS, SessionCache(1 << 40), partitions=1)
    more = bench_session(3_200)[3_010:]
    shifted = [LoggedEvent(Offset(r.offset + 1), r.envelope) for r in more]
    first = fresh.project([_source(shifted[0])], table.read)
    [need] = first.history_needed
    assert (need.first_offset, need.end_offset) == (0, rewind.offset + 1)
    fresh.project_history(need, [_source(r) for r in [*records, rewind]], table.read, first)
    table.apply(first)
    core.fold(shifted[:1])
    assert first.snapshots() == [to_snapshot(core.projection)]


def test_a_history_that_lost_its_start_quarantines_the_session_and_says_why() -> None:
    records, table, projector, _ = _session()
    rewind = _rewind(records)
    outcome = projector.project([_source(rewind)], table.read)
    [need] = outcome.history_needed
    projector.project_history(need, [_source(r) for r in records[10:]], table.read, outcome)
    assert [(letter.stage, letter.source_offset) for letter in outcome.dead_letters] == [
        ("rebuild", rewind.offset)
    ]
    assert "no longer on events" in outcome.dead_letters[0].reason
    assert (0, BENCH_SESSION) in projector.quarantined


def _padded(record: LoggedEvent) -> LoggedEvent:
    """`record` carrying 60 kB of custom metadata: a session whose held records are large."""
    event = record.envelope.event.model_copy(update={"custom_metadata": {"pad": "x" * 60_000}})
    envelope = record.envelope.model_copy(update={"event": event})
    return LoggedEvent(record.offset, envelope)


def test_a_checkpoint_too_large_for_one_changelog_record_is_not_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The records a checkpoint would hold take over 2 MB at some releases here: more than
    # one changelog record may carry. The session keeps its chunks then, every write fits
    # one record, and a fresh worker still folds it as the core does.
    caplog.set_level(logging.INFO, logger="streams.batch")
    records = [_padded(record) for record in bench_session(400)]
    table, core = Table(), Core()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 40), partitions=1)
    assert _folded(records, table, projector, core) == core.requests
    assert max(len(value) for value in table.values.values()) <= MAX_CHUNK_BYTES
    rebuilt = rebuild_session(SETTINGS, BENCH_SESSION, 0, table.read)
    assert to_snapshot(rebuilt.projection) == to_snapshot(core.projection)
    # Each skipped checkpoint is said, with its size against the limit.
    skipped = [
        record.getMessage()
        for record in caplog.records
        if "no checkpoint this batch: it takes" in record.getMessage()
    ]
    assert skipped
    for message in skipped:
        size, limit = re.fullmatch(
            rf"session={BENCH_SESSION}: no checkpoint this batch: it takes (\d+) bytes, over (\d+)",
            message,
        ).groups()  # type: ignore[union-attr]
        assert int(size) > int(limit) == MAX_CHUNK_BYTES
