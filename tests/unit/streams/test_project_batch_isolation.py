"""No single record stops a batch: every failure of one record is a dead letter with its
stage, a bad stored value quarantines one session, and everything else is folded as if the
bad records were not there (checked against a fold of the good records alone)."""

from __future__ import annotations

import orjson
import pytest

from projections.compaction import decision as compaction_decision
from projections.compaction.config import CompactionConfig
from projections.contents.context_digest import ContentPieces, ContextDigest, DigestedContext
from projections.contents.snapshot import snapshot_carrying as real_snapshot_carrying
from projections.fold.projection import SessionProjection
from schemas.codec import decode_envelope_sized, encode
from schemas.dead_letter import MAX_DEAD_LETTER_BYTES, DeadLetter
from schemas.envelope import Envelope
from schemas.event import MAX_ID_CHARS, Event
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey, TenantId
from schemas.projection_snapshot import ProjectionSnapshot
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
)
from streams.batch import fold as batch_fold
from streams.batch import outcome as batch_outcome
from streams.projector_settings import ProjectorSettings
from streams.session_table import chunk_key, header_key
from tests.support.kafka import scripted_sessions

SETTINGS = ProjectorSettings(compaction={"compaction_interval": 2, "overlap_size": 0})
PARTITIONS = 4


class Table:
    """The ``sessions`` table as a dict keyed by (partition, key)."""

    def __init__(self) -> None:
        self.values: dict[tuple[int, bytes], bytes] = {}

    def read(self, partition: int, key: bytes) -> bytes | None:
        return self.values.get((partition, key))

    def apply(self, outcome: BatchOutcome) -> None:
        for write in outcome.writes:
            if write.value is None:
                self.values.pop((write.partition, write.key), None)
            else:
                self.values[(write.partition, write.key)] = write.value


def _routed(values: list[tuple[bytes, bytes]], first_offset: int = 0) -> list[SourceRecord]:
    """Records on the partitions their keys belong to, offsets counted per partition."""
    next_offset: dict[int, int] = {}
    records = []
    for key, value in values:
        partition = session_partition(key, PARTITIONS)
        offset = next_offset.get(partition, first_offset)
        next_offset[partition] = offset + 1
        records.append(SourceRecord("events", partition, offset, key, value))
    return records


def _session(record: SourceRecord) -> SessionKey:
    assert record.key is not None
    return SessionKey(record.key.decode())


def _sessions(sessions: int, invocations: int) -> list[tuple[bytes, bytes]]:
    return [(e.session_key.encode(), encode(e)) for e in scripted_sessions(sessions, invocations)]


def _fold(records: list[SourceRecord], settings: ProjectorSettings = SETTINGS) -> BatchOutcome:
    return BatchProjector(settings, SessionCache(1 << 30), partitions=PARTITIONS).project(
        records, Table().read
    )


def _summary(outcome: BatchOutcome) -> tuple[object, ...]:
    """What a batch caused, comparable across two folds (snapshots included)."""
    return (
        sorted(r.request_id for r, _ in outcome.requests),
        sorted((w.partition, w.key, w.value) for w in outcome.writes),
        sorted(encode(s) for s in outcome.snapshots()),
        outcome.applied,
    )


def _stages(letters: list[DeadLetter]) -> list[tuple[str, int, int]]:
    return [(letter.stage, letter.source_partition, letter.source_offset) for letter in letters]


def test_a_record_on_another_partition_than_its_key_is_dead_lettered_and_nothing_else() -> None:
    good = _routed(_sessions(3, 2))
    stray = good[5]
    wrong = (stray.partition + 1) % PARTITIONS
    misrouted = SourceRecord("events", wrong, 1_000, stray.key, stray.value)
    outcome = _fold([*good[:7], misrouted, *good[7:]])
    assert _stages(outcome.dead_letters) == [("partition", wrong, 1_000)]
    assert f"belongs to partition {stray.partition}" in outcome.dead_letters[0].reason
    assert _summary(outcome) == _summary(_fold(good))


def test_the_review_probe_misrouted_record_no_longer_breaks_its_session() -> None:
    # H3: four records on the key's partition, one on another, then the next real one.
    envelopes = scripted_sessions(1, 2)
    key = envelopes[0].session_key.encode()
    home = session_partition(key, PARTITIONS)
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    first = [SourceRecord("events", home, n, key, encode(e)) for n, e in enumerate(envelopes[:4])]
    table.apply(projector.project(first, table.read))
    stray = projector.project(
        [SourceRecord("events", (home + 1) % PARTITIONS, 100, key, encode(envelopes[4]))],
        table.read,
    )
    assert _stages(stray.dead_letters) == [("partition", (home + 1) % PARTITIONS, 100)]
    table.apply(stray)
    nxt = projector.project(
        [SourceRecord("events", home, 4, key, encode(envelopes[4]))], table.read
    )
    assert nxt.dead_letters == []
    assert nxt.applied == 1


def test_a_record_whose_fold_raises_is_dead_lettered_and_its_session_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good = _routed(_sessions(2, 3))
    poisoned = good[9]
    real_step = compaction_decision.step

    def step(projection, record, config):  # type: ignore[no-untyped-def]
        if record.offset == poisoned.offset and projection.session_key == _session(poisoned):
            raise RecursionError("maximum recursion depth exceeded")
        return real_step(projection, record, config)

    monkeypatch.setattr(batch_fold, "step", step)
    outcome = _fold(good)
    assert _stages(outcome.dead_letters) == [("fold", poisoned.partition, poisoned.offset)]
    assert "RecursionError" in outcome.dead_letters[0].reason
    monkeypatch.setattr(batch_fold, "step", real_step)
    assert _summary(outcome) == _summary(_fold([r for r in good if r is not poisoned]))


def test_a_corrupt_stored_header_quarantines_its_session_only() -> None:
    values = _sessions(2, 2)
    records = _routed(values)
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    table.apply(projector.project(records, table.read))
    victim = _session(records[0])
    other = next(r for r in records if r.key != records[0].key)
    victim_partition = records[0].partition
    table.values[(victim_partition, header_key(victim))] = b"\x00not a header"
    fresh = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    later = scripted_sessions(2, 1, first_invocation=3)
    more = [
        SourceRecord(
            "events",
            session_partition(e.session_key.encode(), PARTITIONS),
            100 + n,
            e.session_key.encode(),
            encode(e),
        )
        for n, e in enumerate(later)
    ]
    outcome = fresh.project(more, table.read)
    victims = [r for r in more if r.key == victim.encode()]
    assert _stages(outcome.dead_letters) == [("rebuild", r.partition, r.offset) for r in victims]
    assert "quarantined" in outcome.dead_letters[0].reason
    assert outcome.applied == len(more) - len(victims)
    assert {s.session_key for s in outcome.snapshots()} == {_session(other)}
    again = fresh.project(victims, table.read)  # still quarantined: no rebuild attempt
    assert [letter.stage for letter in again.dead_letters] == ["rebuild"] * len(victims)
    assert set(fresh.quarantined) == {(victim_partition, victim)}
    fresh.revoked({victim_partition})
    assert fresh.quarantined == {}


def test_a_missing_chunk_quarantines_its_session_instead_of_raising() -> None:
    records = _routed(_sessions(1, 2))
    table = Table()
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    table.apply(projector.project(records[:4], table.read))
    table.apply(projector.project(records[4:], table.read))
    key = _session(records[0])
    del table.values[(records[0].partition, chunk_key(key, 0))]
    fresh = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    outcome = fresh.project(records[-1:], table.read)
    assert [letter.stage for letter in outcome.dead_letters] == ["rebuild"]
    assert "chunk 0 of 2 is missing" in outcome.dead_letters[0].reason


def test_a_session_over_its_byte_limit_refuses_further_records() -> None:
    records = _routed(_sessions(1, 3))
    sizes = [decode_envelope_sized(r.value)[1] for r in records]
    limit = sum(sizes[:5])
    settings = SETTINGS.model_copy(update={"session_max_bytes": limit})
    outcome = _fold(records, settings)
    assert outcome.applied == 5
    assert _stages(outcome.dead_letters) == [
        ("session-size", r.partition, r.offset) for r in records[5:]
    ]
    assert f"session_max_bytes={limit}" in outcome.dead_letters[0].reason


def test_a_snapshot_that_cannot_be_assembled_is_a_dead_letter_and_the_others_go_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = _routed(_sessions(3, 1))
    victim = _session(records[0])
    real = real_snapshot_carrying

    def snapshot_carrying(
        projection: SessionProjection,
        previous: ContextDigest | None = None,
        pieces: ContentPieces | None = None,
    ) -> tuple[ProjectionSnapshot, DigestedContext]:
        if projection.session_key == victim:
            raise ValueError("Circular reference detected (depth exceeded)")
        return real(projection, previous, pieces)

    monkeypatch.setattr(batch_outcome, "snapshot_carrying", snapshot_carrying)
    outcome = _fold(records)
    snapshots, failed = outcome.snapshot_records()
    assert {SessionKey(key.decode()) for key, _ in snapshots} == {
        _session(r) for r in records if _session(r) != victim
    }
    last = [r for r in records if r.key == victim.encode()][-1]
    assert _stages(failed) == [("snapshot", last.partition, last.offset)]


@pytest.mark.parametrize(
    "raw",
    [
        # H1: a tenant nested 1,000 deep (escaped the codec as RecursionError before).
        b'{"schema_version":2,"tenant":'
        + b"[" * 1000
        + b"]" * 1000
        + b',"session_key":"acme/app/u/s","producer_id":"p","idempotency_key":"i",'
        b'"event":{"author":"user","timestamp":1}}',
        # M5: one 600,000-character extra field; its reason would have been as long.
        b'{"schema_version":2,"tenant":"acme","session_key":"acme/app/u/s","producer_id":"p",'
        b'"idempotency_key":"i","event":{"author":"user","timestamp":1},"'
        + b"k" * 600_000
        + b'":1}',
        # H2: a timestamp that decodes as infinity in lax mode.
        b'{"schema_version":2,"tenant":"acme","session_key":"acme/app/u/s","producer_id":"p",'
        b'"idempotency_key":"i","event":{"author":"user","timestamp":"inf"}}',
    ],
    ids=["deep-nesting", "huge-field-name", "inf-timestamp"],
)
def test_poison_records_are_dead_lettered_fitting_the_topic_and_the_rest_applied(
    raw: bytes,
) -> None:
    good = _routed(_sessions(2, 2))
    key = b"acme/app/u/s"
    poison = SourceRecord("events", session_partition(key, PARTITIONS), 50, key, raw)
    outcome = _fold([*good[:3], poison, *good[3:]])
    assert _stages(outcome.dead_letters) == [("decode", poison.partition, 50)]
    letter = outcome.dead_letters[0]
    assert len(encode(letter)) <= MAX_DEAD_LETTER_BYTES
    assert letter.original_size == len(raw)
    assert letter.original_value == raw[: len(letter.original_value)]
    assert letter.truncated or letter.original_value == raw
    assert "\n" not in letter.reason
    assert _summary(outcome) == _summary(_fold(good))
    assert orjson.loads(encode(letter))["stage"] == "decode"


def _envelope(key: SessionKey, event: dict[str, object]) -> Envelope:
    return Envelope(
        tenant=TenantId(key.split("/")[0]),
        session_key=key,
        producer_id="test",
        idempotency_key=f"e{event['timestamp']}",
        event=Event.model_validate(event),
    )


def _long_invocation(key: SessionKey, id_chars: int) -> list[Envelope]:
    """4,200 user events of one invocation with ids of `id_chars`, then the next one's first."""
    events = [
        _envelope(
            key,
            {
                "id": f"{n:06d}" + "i" * (id_chars - 6),
                "invocationId": "inv1",
                "author": "user",
                "timestamp": 1.0 + n,
                "content": {"role": "user", "parts": [{"text": "hello there"}]},
            },
        )
        for n in range(4_200)
    ]
    nxt = {
        "id": "next",
        "invocationId": "inv2",
        "author": "user",
        "timestamp": 10_000.0,
        "content": {"role": "user", "parts": [{"text": "more"}]},
    }
    return [*events, _envelope(key, nxt)]


@pytest.mark.parametrize(("id_chars", "decided"), [(MAX_ID_CHARS, False), (6, True)])
def test_a_window_no_record_could_carry_decides_nothing_and_the_session_folds_on(
    id_chars: int, decided: bool
) -> None:
    # 4,200 events with ids of the longest length: a request naming them all would be over
    # 1 MB. That window decides nothing (no record could carry its request) and every
    # record, the one whose hook selected it included, folds. With short ids the same
    # window is decided: it was selected, and only its size kept it back.
    key = SessionKey("acme/app/u1/s1")
    settings = SETTINGS.model_copy(
        update={"compaction": CompactionConfig(compaction_interval=1, overlap_size=0)}
    )
    records = _routed([(key.encode(), encode(e)) for e in _long_invocation(key, id_chars)])
    outcome = _fold(records, settings)
    assert outcome.dead_letters == []
    assert [len(r.event_offsets) for r, _ in outcome.requests] == ([4_200] if decided else [])
    assert outcome.applied == len(records)
