"""One batch through the projector's fold, against a dict standing in for the table."""

from __future__ import annotations

import pytest

from schemas.codec import decode_envelope_sized, encode
from schemas.keys import Offset, SessionKey
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
    TableWrite,
    rebuild_session,
)
from streams.batch.cache import CachedSession
from streams.projector_settings import ProjectorSettings
from streams.session_table import (
    SessionHeader,
    chunk_key,
    decode_chunk,
    decode_header,
    encode_header,
    header_key,
    request_key,
)
from tests.support.events import answer_envelope
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


# --- the session cache on its own ------------------------------------------------------


def _cached(partition: int, size: int) -> CachedSession:
    key = SessionKey(f"tenant0/support/u{partition}/s{size}")
    projection = SETTINGS.empty_projection_for(key)
    return CachedSession(projection, partition, 0, 0, None, SETTINGS.compaction_for(key), size)


def _id(session: CachedSession) -> tuple[int, SessionKey]:
    return (session.partition, session.projection.session_key)


def test_revoking_partitions_drops_their_sessions_and_keeps_the_others() -> None:
    cache = SessionCache(1 << 30)
    a, b, c, d = _cached(0, 10), _cached(1, 20), _cached(2, 40), _cached(1, 80)
    for session in (a, b, c, d):
        cache.put(_id(session), session)
    assert (len(cache), cache.bytes) == (4, 150)
    cache.revoked({1})
    assert (len(cache), cache.bytes) == (2, 50)  # a and c: 10 + 40
    assert cache.get(_id(b)) is None
    assert cache.get(_id(d)) is None
    assert cache.get(_id(a)) is a
    assert cache.get(_id(c)) is c
    cache.revoked({3})  # owns no cached session: nothing changes
    assert (len(cache), cache.bytes) == (2, 50)
    cache.revoked({0, 2})
    assert (len(cache), cache.bytes) == (0, 0)


def test_putting_a_cached_session_again_replaces_it_and_its_bytes() -> None:
    cache = SessionCache(1 << 30)
    first, other = _cached(0, 100), _cached(1, 7)
    cache.put(_id(first), first)
    cache.put(_id(other), other)
    again = _cached(0, 100)
    again.size = 30
    cache.put(_id(first), again)
    assert (len(cache), cache.bytes) == (2, 37)
    assert cache.get(_id(first)) is again


def test_a_cache_exactly_at_its_bound_drops_nothing() -> None:
    cache = SessionCache(100)
    a, b = _cached(0, 60), _cached(1, 40)
    cache.put(_id(a), a)
    cache.put(_id(b), b)
    cache.evict()
    assert (len(cache), cache.bytes) == (2, 100)
    c = _cached(2, 1)
    cache.put(_id(c), c)
    cache.evict()  # 101 bytes: the least recently used (a, 60) goes
    assert (len(cache), cache.bytes) == (2, 41)
    assert cache.get(_id(a)) is None


def test_evicting_around_the_kept_least_recently_used_session_drops_the_next_one() -> None:
    cache = SessionCache(60)
    kept, other = _cached(0, 50), _cached(1, 50)
    cache.put(_id(kept), kept)
    cache.put(_id(other), other)
    cache.evict(keep=_id(kept))
    assert (len(cache), cache.bytes) == (1, 50)
    assert cache.get(_id(kept)) is kept
    assert cache.get(_id(other)) is None


# --- a rebuilt session, and the entries a redelivery writes again -------------------------


def test_a_rebuilt_session_whose_stored_request_was_answered_deletes_the_request_key() -> None:
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    decided = projector.project(_records(1, 3, 0), table.read)
    table.apply(decided)
    [(request, _)] = decided.requests
    stale = table.values[request_key(KEY)]
    summary = SourceRecord(
        "events", 0, 12, KEY.encode(), encode(answer_envelope(request, 1, 2_000.0))
    )
    table.apply(projector.project([summary], table.read))
    # The delete of the answered request's key was lost (say, with a crash): it is back.
    table.values[request_key(KEY)] = stale
    chunk = table.values[chunk_key(KEY, 1)]
    cache = SessionCache(1 << 30)
    fresh = BatchProjector(SETTINGS, cache, partitions=1)
    outcome = fresh.project([summary], table.read)  # redelivered to a worker that rebuilds
    assert outcome.writes == [
        TableWrite(0, request_key(KEY), None),
        TableWrite(0, chunk_key(KEY, 1), chunk),
        TableWrite(
            0, header_key(KEY), encode_header(SessionHeader(Offset(12), 2, 13, 0, Offset(0)))
        ),
        TableWrite(0, request_key(KEY), None),  # a redelivery writes its delete again
    ]
    assert (outcome.redelivered, outcome.applied, outcome.dead_letters) == (1, 0, [])
    assert outcome.learned == []
    rebuilt = cache.get((0, KEY))
    assert rebuilt is not None
    assert rebuilt.request is None
    assert rebuilt.projection.in_flight is None


def _two_chunks() -> tuple[BatchProjector, Table]:
    """KEY stored in two chunks (offsets 0-11 and 12-19), its request of the first in flight."""
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    for batch in (_records(1, 3, 0), _records(4, 2, 12)):
        table.apply(projector.project(batch, table.read))
    header = decode_header(table.values[header_key(KEY)])
    assert (header.last_offset, header.chunks, header.events) == (19, 2, 20)
    return projector, table


def test_a_redelivery_from_the_first_chunk_writes_every_chunk_the_request_and_the_header() -> None:
    projector, table = _two_chunks()
    stored = dict(table.values)
    outcome = projector.project(_records(1, 3, 0)[8:], table.read)  # offsets 8 to 11
    assert outcome.redelivered == 4
    assert outcome.writes == [
        TableWrite(0, chunk_key(KEY, 0), stored[chunk_key(KEY, 0)]),
        TableWrite(0, chunk_key(KEY, 1), stored[chunk_key(KEY, 1)]),
        TableWrite(0, request_key(KEY), stored[request_key(KEY)]),
        TableWrite(
            0, header_key(KEY), encode_header(SessionHeader(Offset(19), 2, 20, 0, Offset(0)))
        ),
    ]


def test_a_redelivery_from_a_chunks_first_offset_writes_that_chunk_and_no_earlier_one() -> None:
    projector, table = _two_chunks()
    stored = dict(table.values)
    outcome = projector.project(_records(4, 2, 12)[:1], table.read)  # offset 12: chunk 1's first
    assert outcome.redelivered == 1
    assert outcome.writes == [
        TableWrite(0, chunk_key(KEY, 1), stored[chunk_key(KEY, 1)]),
        TableWrite(0, request_key(KEY), stored[request_key(KEY)]),
        TableWrite(
            0, header_key(KEY), encode_header(SessionHeader(Offset(19), 2, 20, 0, Offset(0)))
        ),
    ]


# --- a request key whose delete reached the worker's store but not the changelog -----------


def _answered_then_crashed(kept: list[bytes]) -> tuple[Table, Table, SourceRecord]:
    """KEY's request decided, then its answer's batch crashed: its writes to `kept` stored.

    The worker's store (RocksDB, kept over the restart) holds those writes of
    the answer's batch, the changelog none of them: the changelog still holds
    the request key.
    """
    store, changelog = Table(), Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    decided = projector.project(_records(1, 3, 0), store.read)
    store.apply(decided)
    changelog.apply(decided)
    [(request, _)] = decided.requests
    summary = SourceRecord(
        "events", 0, 12, KEY.encode(), encode(answer_envelope(request, 1, 2_000.0))
    )
    answered = projector.project([summary], store.read)
    # The deletion comes last: a crash that kept it kept the header.
    assert [w.key for w in answered.writes] == [
        chunk_key(KEY, 1),
        header_key(KEY),
        request_key(KEY),
    ]
    store.apply(BatchOutcome(writes=[w for w in answered.writes if w.key in kept]))
    assert request_key(KEY) in changelog.values
    return store, changelog, summary


def _restarted(store: Table, changelog: Table, summary: SourceRecord) -> BatchOutcome:
    """The answer delivered again to a restarted worker; its writes reach store and changelog."""
    fresh = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    outcome = fresh.project([summary], store.read)
    store.apply(outcome)
    changelog.apply(outcome)
    return outcome


@pytest.mark.parametrize(
    ("kept", "applied", "redelivered"),
    [
        # The store kept the chunk and the deletion, not the header (what a store written
        # in another order could keep): the answer folds again as a new record on a
        # session that has nothing in flight.
        ([chunk_key(KEY, 1), request_key(KEY)], 1, 0),
        # The store kept every write of the answer's batch: the answer is redelivered.
        ([chunk_key(KEY, 1), header_key(KEY), request_key(KEY)], 0, 1),
    ],
)
def test_an_answer_folded_again_after_a_crash_deletes_the_request_key_again(
    kept: list[bytes], applied: int, redelivered: int
) -> None:
    store, changelog, summary = _answered_then_crashed(kept)
    outcome = _restarted(store, changelog, summary)
    assert (outcome.applied, outcome.redelivered) == (applied, redelivered)
    assert TableWrite(0, request_key(KEY), None) in outcome.writes
    assert request_key(KEY) not in changelog.values
    assert changelog.values == store.values


def test_a_decision_folded_again_over_a_store_that_kept_its_request_key_writes_it_again() -> None:
    # The deciding batch crashed: the store kept its chunk and request key, not its
    # header, the changelog none of them. The rebuild learns the request from the store.
    store, changelog = Table(), Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    records = _records(1, 3, 0)
    before = projector.project(records[:8], store.read)
    store.apply(before)
    changelog.apply(before)
    decided = projector.project(records[8:], store.read)
    assert [w.key for w in decided.writes] == [chunk_key(KEY, 1), request_key(KEY), header_key(KEY)]
    store.apply(BatchOutcome(writes=decided.writes[:2]))
    fresh = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=1)
    again = fresh.project(records[8:], store.read)
    store.apply(again)
    changelog.apply(again)
    assert [r for r, _ in again.learned] == [r for r, _ in decided.requests]
    assert again.requests == []
    assert request_key(KEY) in changelog.values
    assert changelog.values == store.values
