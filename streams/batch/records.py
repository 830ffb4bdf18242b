"""An `events` record as fetched, decoded, or refused as a dead letter. No I/O.

:func:`decode_record` turns a :class:`SourceRecord` into a :class:`DecodedRecord`
(its logged event and the bytes it will retain) or the record's dead letter;
:func:`dead_letter` builds the letter of any stage (:data:`DeadLetterStage`)
through the one builder (:func:`schemas.dead_letter.build_dead_letter`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from schemas.codec import decode_envelope_sized
from schemas.dead_letter import DeadLetter, build_dead_letter
from schemas.errors import DecodeError
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset
from schemas.log_text import shown
from schemas.logged_event import LoggedEvent

DeadLetterStage = Literal[
    "decode", "partition", "fold", "encode", "session-size", "rebuild", "snapshot"
]
"""Where the batch step refused a record: ``decode`` (no key, no value, not a valid envelope),
``partition`` (not on its key's partition), ``fold`` (applying it or deciding compaction
raised), ``encode`` (its compaction request cannot be encoded), ``session-size`` (it would
take its session over ``session_max_bytes``), ``rebuild`` (its session's stored entries
cannot be read back: the session is quarantined), ``snapshot`` (its session's snapshot
cannot be assembled or encoded)."""

_REASON_CHARS: Final = 500


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """One `events` record as the consumer fetched it; a tombstone's value is ``b""``."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes


@dataclass(frozen=True, slots=True)
class DecodedRecord:
    """A record that decoded: its logged event and its estimated retained bytes."""

    source: SourceRecord
    logged: LoggedEvent
    size: int


def failure_reason(exc: BaseException) -> str:
    """``Type: message`` of an exception, bounded and escaped, for a reason."""
    return f"{type(exc).__name__}: {shown(str(exc), _REASON_CHARS)}"


def dead_letter(record: SourceRecord, stage: DeadLetterStage, reason: str) -> DeadLetter:
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


def decode_record(record: SourceRecord) -> DecodedRecord | DeadLetter:
    """The decoded record, or its dead letter when it breaks the event contract."""
    if record.key is None:
        return dead_letter(record, "decode", "record has no key (the session key)")
    if not record.value:
        return dead_letter(record, "decode", "record has no value (a tombstone, or empty)")
    try:
        envelope, size = decode_envelope_sized(record.value, record_key=record.key)
    except DecodeError as exc:
        return dead_letter(record, "decode", str(exc))
    except Exception as exc:  # noqa: BLE001 - the codec's own bug must not stop the batch
        return dead_letter(record, "decode", failure_reason(exc))
    return DecodedRecord(record, LoggedEvent(Offset(record.offset), envelope), size)


class HomePartitions:
    """Which partition each session key belongs to, for refusing records found elsewhere.

    A session's records must share one partition (Kafka's default partitioner over
    `partitions`) for its offsets to order them; a record elsewhere is refused alike by every
    reader of ``events`` (the projector's batch step, the SQL sink). murmur2 is pure Python
    (about 11 µs a key), so each key's partition is computed once per instance: one a batch.
    """

    def __init__(self, partitions: int) -> None:
        """Keys placed over `partitions` partitions."""
        self.partitions = partitions
        self._home: dict[bytes, int] = {}

    def misplaced(self, record: SourceRecord) -> DeadLetter | None:
        """The ``partition`` dead letter of a keyed `record` off its key's partition, else None."""
        if record.key is None:
            return None
        expected = self._home.get(record.key)
        if expected is None:
            expected = self._home[record.key] = session_partition(record.key, self.partitions)
        if record.partition == expected:
            return None
        reason = (
            f"record on partition {record.partition}, but its key belongs to partition "
            f"{expected} of {self.partitions} (Kafka's default murmur2 partitioner)"
        )
        return dead_letter(record, "partition", reason)
