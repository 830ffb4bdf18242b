"""One batch through the projector's fold, against a dict standing in for the table."""

from __future__ import annotations

from schemas.codec import decode_envelope_sized, encode
from schemas.keys import SessionKey
from streams.project_batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
    rebuild_session,
)
from streams.projector_settings import ProjectorSettings
from streams.session_table import chunk_key, decode_chunk, decode_header, header_key, request_key
from tests.support.kafka import scripted_sessions

SETTINGS = ProjectorSettings(compaction={"compaction_interval": 2, "overlap_size": 0})
KEY = SessionKey("tenant0/support/u0/s0")


def _records(first_invocation: int, invocations: int, offset: int) -> list[SourceRecord]:
    envelopes = scripted_sessions(1, invocations, first_invocation=first_invocation)
    return [
        SourceRecord("events", 0, offset + n, e.session_key.encode(), encode(e))
        for n, e in enumerate(envelopes)
    ]


class Table:
    """The ``sessions`` table as a dict."""

    def __init__(self) -> None:
        self.values: dict[bytes, bytes] = {}

    def read(self, _: int, key: bytes) -> bytes | None:
        return self.values.get(key)

    def apply(self, outcome: BatchOutcome) -> None:
        for write in outcome.writes:
            if write.value is None:
                self.values.pop(write.key, None)
            else:
                self.values[write.key] = write.value


def test_a_batch_writes_one_chunk_the_request_and_the_header_and_one_snapshot() -> None:
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    outcome = projector.project(_records(1, 3, 0), table.read)
    table.apply(outcome)
    assert [w.key for w in outcome.writes] == [chunk_key(KEY, 0), request_key(KEY), header_key(KEY)]
    assert len(outcome.snapshots()) == 1
    assert len(outcome.requests) == 1
    assert outcome.applied == 12
    header = decode_header(table.values[header_key(KEY)])
    assert (header.last_offset, header.chunks, header.events) == (11, 1, 12)
    assert [r.offset for r in decode_chunk(table.values[chunk_key(KEY, 0)])] == list(range(12))


def test_redelivered_records_change_nothing_and_write_their_entries_again() -> None:
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    table.apply(projector.project(_records(1, 3, 0), table.read))
    before = dict(table.values)
    mixed = _records(1, 3, 0)[8:] + _records(4, 1, 12)
    outcome = projector.project(mixed, table.read)
    table.apply(outcome)
    assert outcome.redelivered == 4
    assert outcome.applied == 4
    assert outcome.requests == []
    keys = [w.key for w in outcome.writes]
    assert keys == [chunk_key(KEY, 0), chunk_key(KEY, 1), request_key(KEY), header_key(KEY)]
    assert table.values[chunk_key(KEY, 0)] == before[chunk_key(KEY, 0)]
    assert len(outcome.snapshots()) == 1


def test_a_rebuilt_session_equals_the_cached_one() -> None:
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    for batch in (_records(1, 3, 0), _records(4, 2, 12)):
        table.apply(projector.project(batch, table.read))
    cached = SessionCache(1 << 30)
    warm = BatchProjector(SETTINGS, cached, partitions=1)
    warm.project(_records(1, 1, 0), table.read)  # redelivered: loads the session
    session = cached.get((0, KEY))
    assert session is not None
    rebuilt = rebuild_session(SETTINGS, KEY, 0, table.read)
    assert rebuilt.projection.last_offset == session.projection.last_offset == 19
    assert rebuilt.projection.in_flight == session.projection.in_flight
    assert rebuilt.projection.in_flight is not None
    assert rebuilt.chunks == 2


def _session_bytes(records: list[SourceRecord]) -> int:
    return sum(decode_envelope_sized(r.value)[1] for r in records)


def test_the_cache_drops_least_recently_used_sessions_beyond_its_bytes() -> None:
    table = Table()
    two = scripted_sessions(2, 3)  # 12 events each, interleaved by invocation
    records = [
        SourceRecord("events", 0, n, e.session_key.encode(), encode(e)) for n, e in enumerate(two)
    ]
    one_session = _session_bytes([r for r in records if r.key == KEY.encode()])
    cache = SessionCache(one_session + one_session // 2)
    projector = BatchProjector(SETTINGS, cache, partitions=1)
    table.apply(projector.project(records, table.read))
    assert len(cache) == 1  # two sessions' bytes > 1.5 sessions': the least recently used went
    assert cache.bytes <= one_session + one_session // 2
    other = SessionKey("tenant1/support/u1/s1")
    assert cache.get((0, other)) is not None
    assert cache.get((0, KEY)) is None
    more = _records(4, 1, len(records))
    outcome = projector.project(more, table.read)  # KEY is rebuilt from the table
    table.apply(outcome)
    assert outcome.applied == 4
    assert outcome.redelivered == 0
    rebuilt = cache.get((0, KEY))
    assert rebuilt is not None
    assert rebuilt.events == 16
    assert rebuilt.size == _session_bytes(_records(1, 3, 0) + more)
    assert cache.bytes == rebuilt.size  # the other session was dropped to make room


def test_the_session_being_folded_stays_even_beyond_the_bound() -> None:
    table = Table()
    cache = SessionCache(1)
    projector = BatchProjector(SETTINGS, cache, partitions=1)
    table.apply(projector.project(_records(1, 3, 0), table.read))
    assert len(cache) == 1
    assert cache.get((0, KEY)) is not None
