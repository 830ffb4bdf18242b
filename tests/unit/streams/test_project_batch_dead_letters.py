"""Every dead-letter stage of the projector's batch step, one crafted failure each.

For each :data:`streams.batch.records.DeadLetterStage` a batch holds two sessions and one
record (or one stored entry) made to fail at that stage. Each test checks the
letter (stage, reason, source topic, partition and offset, the original key
and value whole), that the other session of the batch still folds to its last
record, and that the failing session's stored header moves past the refused
record when a later record of it is in the batch (its offsets advance; nothing
waits on a refused record).

``test_project_batch_isolation.py`` already checks that the batches
fold as if the bad records were not there (misrouted, poisoned decodes, a
fold that raises, a session over its bytes, an oversized request of 4,200
events, a corrupt header, a chunk missing at rebuild, a snapshot that cannot
be assembled); the cases here are the ones it leaves out: a record without a
key or under another session's key, a codec that raises something else than
a DecodeError, an unencodable request decided from a seed, a stored chunk or
request that no longer decodes, a chunk missing when a redelivery rewrites
it, and a snapshot that cannot be encoded. Some tests also pin exact reasons (and the
WARNING line a dead letter logs), and what a refusal or a quarantine leaves behind: a refused
record redelivered, a quarantine that lasts until its partition is revoked, the cache it empties.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Final

import pytest

from projections.compaction import decision as compaction_decision
from projections.compaction.config import CompactionConfig
from schemas.codec import MAX_RECORD_BYTES, decode_envelope_sized, encode
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset, SessionKey, TenantId
from schemas.projection_snapshot import ProjectionSnapshot
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    SessionCache,
    SourceRecord,
    TableWrite,
    decode_record,
)
from streams.batch import fold as batch_fold
from streams.batch import outcome as batch_outcome
from streams.batch import records as batch_records
from streams.projector_settings import ProjectorSettings
from streams.session_table import (
    SessionHeader,
    StoredRecord,
    chunk_key,
    decode_header,
    encode_chunk,
    encode_header,
    header_key,
    request_key,
)

TOPIC: Final = "events"
PARTITIONS: Final = 2
VICTIM: Final = SessionKey("acme/app/u1/victim")
OTHER: Final = SessionKey("acme/app/u2/other")
# Sliding window every 10 invocations: no request in these short sessions unless a test asks.
SETTINGS: Final = ProjectorSettings(
    compaction=CompactionConfig(compaction_interval=10, overlap_size=0)
)


Table = dict[tuple[int, bytes], bytes]
"""The ``sessions`` table: values by (partition, key)."""


def _reader(table: Table) -> Callable[[int, bytes], bytes | None]:
    return lambda partition, key: table.get((partition, key))


class Log:
    """An `events` topic being written: each record gets the next offset of its partition."""

    def __init__(self) -> None:
        self._next: defaultdict[int, int] = defaultdict(int)
        self._turns: defaultdict[str, int] = defaultdict(int)

    def record(
        self, key: bytes | None, value: bytes, *, partition: int | None = None
    ) -> SourceRecord:
        if partition is None:
            partition = 0 if key is None else session_partition(key, PARTITIONS)
        offset = self._next[partition]
        self._next[partition] = offset + 1
        return SourceRecord(TOPIC, partition, offset, key, value)

    def turn(self, session: SessionKey, **changes: Any) -> SourceRecord:
        """The session's next event: user and agent take turns, one invocation per pair."""
        n = self._turns[session]
        self._turns[session] = n + 1
        user = n % 2 == 0
        event = {
            "id": f"{session.rsplit('/', 1)[1]}-{n}",
            "invocationId": f"inv{n // 2}",
            "author": "user" if user else "agent",
            "timestamp": 100.0 + n,
            "content": {"role": "user" if user else "model", "parts": [{"text": f"turn {n}"}]},
            **changes,
        }
        return self.record(session.encode(), encode(envelope(session, event)))


def envelope(session: SessionKey, event: dict[str, Any]) -> Envelope:
    return Envelope(
        tenant=TenantId(session.split("/", 1)[0]),
        session_key=session,
        producer_id="runner",
        idempotency_key=f"{session}#{event['timestamp']}",
        event=Event.model_validate(event),
    )


def _project(
    records: list[SourceRecord],
    table: Table | None = None,
    projector: BatchProjector | None = None,
) -> BatchOutcome:
    table = table if table is not None else {}
    projector = projector or BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    outcome = projector.project(records, _reader(table))
    for write in outcome.writes:  # stored as the table would keep them
        if write.value is None:
            table.pop((write.partition, write.key), None)
        else:
            table[(write.partition, write.key)] = write.value
    return outcome


def _headers(outcome: BatchOutcome) -> dict[SessionKey, SessionHeader]:
    """The header each session's last write of the batch stores."""
    headers = {}
    for write in outcome.writes:
        for session in (VICTIM, OTHER):
            if write.key == header_key(session) and write.value is not None:
                headers[session] = decode_header(write.value)
    return headers


def _assert_letter(letter: DeadLetter, stage: str, record: SourceRecord, phrase: str) -> None:
    assert (letter.stage, letter.source_topic) == (stage, TOPIC)
    assert (letter.source_partition, letter.source_offset) == (record.partition, record.offset)
    assert letter.original_key == record.key
    assert letter.original_value == record.value
    assert (letter.original_size, letter.truncated) == (len(record.value), False)
    assert phrase in letter.reason, letter.reason


def _assert_folded(outcome: BatchOutcome, session: SessionKey, last: SourceRecord) -> None:
    """`session` stored and published up to `last`, its last record of the batch."""
    assert _headers(outcome)[session].last_offset == last.offset
    snapshots = {s.session_key: s for s in outcome.snapshots()}
    assert snapshots[session].last_offset == last.offset


def _interleaved(log: Log, turns: int) -> tuple[list[SourceRecord], list[SourceRecord]]:
    """`turns` events of each session, the victim's and the other's alternating."""
    victim, other = [], []
    for _ in range(turns):
        victim.append(log.turn(VICTIM))
        other.append(log.turn(OTHER))
    return victim, other


def _merged(*streams: list[SourceRecord]) -> list[SourceRecord]:
    return [record for group in zip(*streams, strict=True) for record in group]


# --- decode --------------------------------------------------------------------------


def test_decode_a_record_without_a_key_names_the_stage_and_reason_and_logs_the_letter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="streams.batch")
    keyless = SourceRecord(TOPIC, 1, 7, None, b'{"x":1}')
    outcome = _project([keyless])
    [letter] = outcome.dead_letters
    assert (letter.stage, letter.reason) == ("decode", "record has no key (the session key)")
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == ("events", 1, 7)
    assert (letter.original_key, letter.original_value) == (None, b'{"x":1}')
    # Operators grep this line: it names the record and why it was refused.
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "WARNING",
            "dead letter topic=events partition=1 offset=7 stage=decode "
            "reason=record has no key (the session key)",
        )
    ]
    assert outcome.writes == []


def test_decode_record_refuses_a_record_without_a_key() -> None:
    letter = decode_record(SourceRecord(TOPIC, 3, 41, None, b"{}"))
    assert isinstance(letter, DeadLetter)
    assert (letter.stage, letter.reason) == ("decode", "record has no key (the session key)")
    assert (letter.source_topic, letter.source_partition, letter.source_offset) == ("events", 3, 41)
    assert (letter.original_key, letter.original_value, letter.truncated) == (None, b"{}", False)


def test_decode_a_record_without_a_key() -> None:
    log = Log()
    victim, other = _interleaved(log, 2)
    keyless = log.record(None, victim[1].value, partition=victim[1].partition)
    later = log.turn(VICTIM)
    outcome = _project([*_merged(victim, other), keyless, later])
    [letter] = outcome.dead_letters
    _assert_letter(letter, "decode", keyless, "record has no key")
    assert letter.original_key is None
    _assert_folded(outcome, OTHER, other[-1])
    _assert_folded(outcome, VICTIM, later)
    assert outcome.applied == 5


def test_decode_an_envelope_under_another_sessions_key() -> None:
    log = Log()
    victim, other = _interleaved(log, 2)
    # The other session's next event, keyed (and routed) as the victim's.
    foreign = log.record(VICTIM.encode(), log.turn(OTHER).value)
    later = log.turn(VICTIM)
    outcome = _project([*_merged(victim, other), foreign, later])
    [letter] = outcome.dead_letters
    _assert_letter(letter, "decode", foreign, "differs from the envelope's session_key")
    _assert_folded(outcome, OTHER, other[-1])
    _assert_folded(outcome, VICTIM, later)


def test_decode_a_codec_failure_of_another_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    log = Log()
    victim, other = _interleaved(log, 3)
    poisoned = victim[1]
    real = decode_envelope_sized

    def decode(raw: bytes, *, record_key: bytes | None = None) -> tuple[Envelope, int]:
        if raw == poisoned.value:
            raise MemoryError("cannot allocate")
        return real(raw, record_key=record_key)

    monkeypatch.setattr(batch_records, "decode_envelope_sized", decode)
    outcome = _project(_merged(victim, other))
    [letter] = outcome.dead_letters
    _assert_letter(letter, "decode", poisoned, "MemoryError: cannot allocate")
    _assert_folded(outcome, OTHER, other[-1])
    _assert_folded(outcome, VICTIM, victim[-1])
    assert outcome.applied == 5


# --- partition -----------------------------------------------------------------------


def test_partition_a_record_on_another_partition_than_its_keys() -> None:
    log = Log()
    victim, other = _interleaved(log, 2)
    home = victim[0].partition
    stray = log.record(VICTIM.encode(), log.turn(VICTIM).value, partition=1 - home)
    later = log.turn(VICTIM)
    outcome = _project([*_merged(victim, other), stray, later])
    [letter] = outcome.dead_letters
    _assert_letter(letter, "partition", stray, f"belongs to partition {home} of 2")
    _assert_folded(outcome, OTHER, other[-1])
    _assert_folded(outcome, VICTIM, later)


# --- fold ----------------------------------------------------------------------------


def test_fold_a_record_whose_step_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    log = Log()
    victim, other = _interleaved(log, 4)
    poisoned = victim[2]
    real = compaction_decision.step

    def step(projection: Any, record: Any, config: CompactionConfig) -> Any:
        if record.envelope.event.id == "victim-2":
            raise KeyError("call-7")
        return real(projection, record, config)

    monkeypatch.setattr(batch_fold, "step", step)
    outcome = _project(_merged(victim, other))
    [letter] = outcome.dead_letters
    _assert_letter(letter, "fold", poisoned, "KeyError: 'call-7'")
    _assert_folded(outcome, OTHER, other[-1])
    _assert_folded(outcome, VICTIM, victim[-1])
    assert _headers(outcome)[VICTIM].events == 3
    assert outcome.applied == 7


def test_fold_a_failure_with_a_long_message_keeps_its_first_500_characters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log = Log()
    victim = [log.turn(VICTIM) for _ in range(3)]
    real = compaction_decision.step

    def step(projection: Any, record: Any, config: CompactionConfig) -> Any:
        if record.envelope.event.id == "victim-1":
            raise ValueError("v" * 1_000)
        return real(projection, record, config)

    monkeypatch.setattr(batch_fold, "step", step)
    [letter] = _project(victim).dead_letters
    assert (letter.stage, letter.source_offset) == ("fold", victim[1].offset)
    assert letter.reason == "ValueError: " + "v" * 500 + "..."
    assert letter.truncated is False  # the cut is the reason's own, not the letter's


# --- encode --------------------------------------------------------------------------


def _deciding(
    monkeypatch: pytest.MonkeyPatch, request_bytes: int
) -> tuple[BatchOutcome, list[SourceRecord]]:
    """Two invocations of the victim, the second's first event deciding a request over the
    first, whose encoding is made `request_bytes` long."""
    settings = SETTINGS.model_copy(
        update={"compaction": CompactionConfig(compaction_interval=1, overlap_size=0)}
    )
    log = Log()
    victim = [log.turn(VICTIM, invocationId=f"inv{n}") for n in range(2)]
    real = encode

    def encode_request(record: Any) -> bytes:
        if isinstance(record, CompactionRequest):
            return b"x" * request_bytes
        return real(record)

    monkeypatch.setattr(batch_fold, "encode", encode_request)
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=PARTITIONS)
    return _project(victim, projector=projector), victim


def test_encode_a_request_of_exactly_the_record_limit_is_decided(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcome, victim = _deciding(monkeypatch, 1_000_000)
    assert outcome.dead_letters == []
    assert [request.decided_at_offset for request, _ in outcome.requests] == [victim[1].offset]
    partition = victim[0].partition
    assert TableWrite(partition, request_key(VICTIM), b"x" * 1_000_000) in outcome.writes


def test_encode_a_request_over_the_record_limit_refuses_its_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcome, victim = _deciding(monkeypatch, 1_000_001)
    [letter] = outcome.dead_letters
    assert (letter.stage, letter.source_offset) == ("encode", victim[1].offset)
    assert letter.reason == (
        "ValueError: the compaction request it decides takes 1000001 bytes, "
        "over the record limit of 1000000"
    )
    assert outcome.requests == []
    assert _headers(outcome)[VICTIM].last_offset == victim[0].offset


def _summary_with_inline_data(session: SessionKey, data_chars: int) -> dict[str, Any]:
    """A summary (tenant-written) whose compacted content is one large inline-data part."""
    return {
        "id": "s",
        "invocationId": "c",
        "author": "user",
        "timestamp": 101.5,
        "actions": {
            "compaction": {
                "startTimestamp": 100.0,
                "endTimestamp": 101.0,
                "compactedContent": {
                    "role": "model",
                    "parts": [{"inlineData": {"mimeType": "a/b", "data": "A" * data_chars}}],
                },
            }
        },
    }


def test_encode_a_request_that_cannot_be_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    # A decision whose request fails to encode refuses the record that decided it; the
    # session's records before and after it fold, and so do the other session's.
    settings = SETTINGS.model_copy(
        update={"compaction": CompactionConfig(compaction_interval=1, overlap_size=0)}
    )
    log = Log()
    victim = [log.turn(VICTIM, invocationId=f"inv{n}") for n in range(3)]
    other = [log.turn(OTHER) for _ in range(2)]
    real = encode

    def encode_request(record: Any) -> bytes:
        if isinstance(record, CompactionRequest) and record.session_key == VICTIM:
            raise OverflowError("Integer exceeds 64-bit range")
        return real(record)

    monkeypatch.setattr(batch_fold, "encode", encode_request)
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=PARTITIONS)
    outcome = _project([*victim, *other], projector=projector)
    # inv1's first event completes inv0 and decides; so does inv2's, over inv0 and inv1 again
    # since the first decision was refused with its record.
    letters = outcome.dead_letters
    assert [letter.source_offset for letter in letters] == [victim[1].offset, victim[2].offset]
    for letter, record in zip(letters, victim[1:], strict=True):
        _assert_letter(letter, "encode", record, "OverflowError: Integer exceeds 64-bit range")
    assert [request.session_key for request, _ in outcome.requests] == []
    assert _headers(outcome)[VICTIM].last_offset == victim[0].offset
    assert _headers(outcome)[OTHER].last_offset == other[-1].offset


def test_a_request_over_the_record_limit_is_not_decided_and_the_session_folds_on() -> None:
    # The seed bound counts parts and text characters, not inline data: a summary of
    # almost a whole record, rolled into a token window, would make a request over the
    # limit. No record could carry it, so that window decides nothing (as a window not
    # worth compacting), and no record is refused: the deciding one and every later one fold.
    settings = SETTINGS.model_copy(
        update={
            "compaction_overrides": {
                "acme/tokens": CompactionConfig(token_threshold=1_000, event_retention_size=1)
            }
        }
    )
    victim_key = SessionKey("acme/tokens/u1/victim")
    log = Log()
    first = [log.turn(victim_key), log.turn(victim_key)]
    small = encode(envelope(victim_key, _summary_with_inline_data(victim_key, 0)))
    fitting = MAX_RECORD_BYTES - 100 - len(small)
    summary = log.record(
        victim_key.encode(),
        encode(envelope(victim_key, _summary_with_inline_data(victim_key, fitting))),
    )
    assert decode_envelope_sized(summary.value)[0].event.actions.compaction is not None
    long_id = {"id": "q" * 256}
    question = log.turn(victim_key, **long_id)
    answer = log.turn(victim_key, usageMetadata={"promptTokenCount": 5_000})
    deciding = log.turn(victim_key)  # completes the invocation: the token check selects
    later = [log.turn(victim_key), log.turn(victim_key)]
    others = [log.turn(OTHER) for _ in range(3)]
    records = [*first, summary, question, answer, deciding, *later, *others]
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=PARTITIONS)
    outcome = _project(records, projector=projector)
    assert outcome.dead_letters == []
    assert outcome.requests == []
    assert outcome.applied == len(records)
    assert _headers(outcome)[OTHER].last_offset == others[-1].offset
    header = decode_header(
        next(w.value for w in outcome.writes if w.key == header_key(victim_key) and w.value)
    )
    assert header.last_offset == later[-1].offset


# --- session-size --------------------------------------------------------------------


def test_session_size_the_record_that_takes_its_session_over_the_limit() -> None:
    log = Log()
    victim, other = _interleaved(log, 3)
    big = log.turn(VICTIM, content={"role": "user", "parts": [{"text": "x" * 50_000}]})
    sizes = [decode_envelope_sized(r.value)[1] for r in victim]
    # Room for the victim's small records and the other session's, not for the big one.
    settings = SETTINGS.model_copy(update={"session_max_bytes": sum(sizes) + 10_000})
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=PARTITIONS)
    outcome = _project([*_merged(victim, other), big], projector=projector)
    [letter] = outcome.dead_letters
    _assert_letter(letter, "session-size", big, f"session_max_bytes={sum(sizes) + 10_000}")
    _assert_folded(outcome, OTHER, other[-1])
    _assert_folded(outcome, VICTIM, victim[-1])
    # A record that fits still folds after the refused one: the session's offsets move on.
    later = log.turn(VICTIM)
    after = _project([later], projector=projector)
    assert after.dead_letters == []
    assert _headers(after)[VICTIM].last_offset == later.offset > big.offset


def test_session_size_reason_counts_the_stored_the_batchs_and_the_records_bytes() -> None:
    log = Log()
    small = [log.turn(VICTIM) for _ in range(3)]
    big = log.turn(VICTIM, content={"role": "user", "parts": [{"text": "x" * 50_000}]})
    sizes = [decode_envelope_sized(r.value)[1] for r in [*small, big]]
    limit = sum(sizes[:3]) + 10_000
    settings = SETTINGS.model_copy(update={"session_max_bytes": limit})
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=PARTITIONS)
    table: Table = {}
    assert _project(small[:2], table, projector).dead_letters == []
    # Stored: the first two records; this batch: the third, then the big one.
    [letter] = _project([small[2], big], table, projector).dead_letters
    assert (letter.stage, letter.source_offset) == ("session-size", big.offset)
    assert letter.reason == (
        f"session {VICTIM} would hold about {sizes[0] + sizes[1] + sizes[2] + sizes[3]} "
        f"bytes in memory with this record, over session_max_bytes={limit}"
    )


def test_session_size_a_refused_record_redelivered_rewrites_every_stored_chunk() -> None:
    # The session's first record was refused: its offset is below the first stored chunk's.
    log = Log()
    big = log.turn(VICTIM, content={"role": "user", "parts": [{"text": "x" * 50_000}]})
    small = [log.turn(VICTIM), log.turn(VICTIM)]
    settings = SETTINGS.model_copy(update={"session_max_bytes": 20_000})  # two small ones fit
    projector = BatchProjector(settings, SessionCache(1 << 30), partitions=PARTITIONS)
    table: Table = {}
    first = _project([big, *small], table, projector)
    assert [(letter.stage, letter.source_offset) for letter in first.dead_letters] == [
        ("session-size", big.offset)
    ]
    partition = big.partition
    chunk = table[(partition, chunk_key(VICTIM, 0))]
    again = _project([big, small[0]], table, projector)
    assert (again.dead_letters, again.redelivered, again.applied) == ([], 2, 0)
    header = SessionHeader(Offset(small[-1].offset), 1, 2, 0, Offset(small[0].offset))
    assert again.writes == [
        TableWrite(partition, chunk_key(VICTIM, 0), chunk),
        TableWrite(partition, header_key(VICTIM), encode_header(header)),
        TableWrite(partition, request_key(VICTIM), None),  # none in flight: its delete again
    ]


# --- rebuild -------------------------------------------------------------------------


def _stored_then(corrupt: Callable[[Table, int], None]) -> tuple[BatchOutcome, list[SourceRecord]]:
    """Both sessions stored, the victim's entries corrupted, then a fresh worker's batch."""
    log = Log()
    table: Table = {}
    victim, other = _interleaved(log, 2)
    _project(_merged(victim, other), table)
    corrupt(table, victim[0].partition)
    victim_more, other_more = _interleaved(log, 2)
    outcome = _project(_merged(victim_more, other_more), table)
    assert outcome.applied == 2
    _assert_folded(outcome, OTHER, other_more[-1])
    assert VICTIM not in _headers(outcome)
    return outcome, victim_more


def test_rebuild_a_stored_chunk_that_no_longer_decodes() -> None:
    def corrupt(table: Table, partition: int) -> None:
        stale = encode_chunk([StoredRecord(Offset(0), b'{"schema_version":3}')])
        table[(partition, chunk_key(VICTIM, 0))] = stale

    outcome, victim_more = _stored_then(corrupt)
    assert len(outcome.dead_letters) == len(victim_more)
    for letter, record in zip(outcome.dead_letters, victim_more, strict=True):
        _assert_letter(letter, "rebuild", record, "unknown schema_version 3")
        assert letter.reason.startswith(f"session {VICTIM} quarantined: DecodeError: ")


def test_rebuild_a_stored_request_that_no_longer_decodes() -> None:
    def corrupt(table: Table, partition: int) -> None:
        table[(partition, request_key(VICTIM))] = b'{"schema_version":1,"request_id":""}'

    outcome, victim_more = _stored_then(corrupt)
    for letter, record in zip(outcome.dead_letters, victim_more, strict=True):
        _assert_letter(letter, "rebuild", record, "invalid compaction_request")
    assert len(outcome.dead_letters) == len(victim_more)


def test_rebuild_a_chunk_missing_when_a_redelivery_rewrites_it() -> None:
    log = Log()
    table: Table = {}
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    victim, other = _interleaved(log, 2)
    _project(_merged(victim, other), table, projector)
    # The cached session needs its stored chunk only to write it again for a redelivery.
    del table[(victim[0].partition, chunk_key(VICTIM, 0))]
    redelivered = victim[1]
    later = log.turn(VICTIM)
    other_later = log.turn(OTHER)
    outcome = _project([redelivered, later, other_later], table, projector)
    assert len(outcome.dead_letters) == 2
    for letter, record in zip(outcome.dead_letters, [redelivered, later], strict=True):
        _assert_letter(letter, "rebuild", record, "chunk 0 is missing")
    assert set(projector.quarantined) == {(victim[0].partition, VICTIM)}
    assert _headers(outcome)[OTHER].last_offset == other_later.offset
    assert VICTIM not in _headers(outcome)


# --- snapshot ------------------------------------------------------------------------


def test_snapshot_that_cannot_be_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    log = Log()
    victim, other = _interleaved(log, 3)
    real = encode

    def encode_snapshot(record: Any) -> bytes:
        if isinstance(record, ProjectionSnapshot) and record.session_key == VICTIM:
            raise OverflowError("Integer exceeds 64-bit range")
        return real(record)

    monkeypatch.setattr(batch_outcome, "encode", encode_snapshot)
    outcome = _project(_merged(victim, other))
    assert outcome.dead_letters == []
    published, letters = outcome.snapshot_records()
    [letter] = letters
    _assert_letter(letter, "snapshot", victim[-1], "OverflowError: Integer exceeds 64-bit range")
    assert [key for key, _ in published] == [OTHER.encode()]
    # The session itself moved on: only its snapshot is missing.
    assert _headers(outcome)[VICTIM].last_offset == victim[-1].offset
    assert _headers(outcome)[OTHER].last_offset == other[-1].offset


def test_rebuild_a_quarantined_session_stays_so_until_its_partition_is_revoked(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="streams.batch")
    log = Log()
    table: Table = {}
    victim = [log.turn(VICTIM), log.turn(VICTIM)]
    _project(victim, table)
    partition = victim[0].partition
    chunk = table.pop((partition, chunk_key(VICTIM, 0)))
    projector = BatchProjector(SETTINGS, SessionCache(1 << 30), partitions=PARTITIONS)
    first = log.turn(VICTIM)
    caplog.clear()
    outcome = _project([first], table, projector)
    reason = f"session {VICTIM} quarantined: LookupError: session {VICTIM}: chunk 0 of 1 is missing"
    assert [
        (letter.stage, letter.source_offset, letter.reason) for letter in outcome.dead_letters
    ] == [("rebuild", first.offset, reason)]
    assert projector.quarantined == {(partition, VICTIM): reason}
    errors = [(r.levelname, r.getMessage()) for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [("ERROR", reason)]
    # The chunk is back, but the session stays quarantined while the worker owns it.
    table[(partition, chunk_key(VICTIM, 0))] = chunk
    second = log.turn(VICTIM)
    outcome = _project([second], table, projector)
    assert [
        (letter.stage, letter.source_offset, letter.reason) for letter in outcome.dead_letters
    ] == [("rebuild", second.offset, reason)]
    assert (outcome.writes, outcome.applied) == ([], 0)
    assert projector.quarantined == {(partition, VICTIM): reason}
    projector.revoked({partition})
    assert projector.quarantined == {}
    third = log.turn(VICTIM)
    outcome = _project([third], table, projector)
    assert (outcome.dead_letters, outcome.applied) == ([], 1)
    header = _headers(outcome)[VICTIM]
    assert (header.last_offset, header.chunks, header.events) == (third.offset, 2, 3)


def test_rebuild_a_cached_session_quarantined_at_a_redelivery_leaves_the_cache() -> None:
    log = Log()
    table: Table = {}
    cache = SessionCache(1 << 30)
    projector = BatchProjector(SETTINGS, cache, partitions=PARTITIONS)
    victim, other = _interleaved(log, 2)
    _project(_merged(victim, other), table, projector)
    partition = victim[0].partition
    del table[(partition, chunk_key(VICTIM, 0))]
    other_later = log.turn(OTHER)
    outcome = _project([victim[1], other_later], table, projector)
    reason = f"session {VICTIM} quarantined: LookupError: session {VICTIM}: chunk 0 is missing"
    assert [
        (letter.stage, letter.source_offset, letter.reason) for letter in outcome.dead_letters
    ] == [("rebuild", victim[1].offset, reason)]
    assert projector.quarantined == {(partition, VICTIM): reason}
    assert cache.get((partition, VICTIM)) is None
    other_bytes = sum(decode_envelope_sized(r.value)[1] for r in [*other, other_later])
    assert (len(cache), cache.bytes) == (1, other_bytes)
