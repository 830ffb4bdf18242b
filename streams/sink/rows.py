"""`events` records as the sink's rows, NUL made storable, or their dead letters. Pure.

PostgreSQL refuses the escape of U+0000 in ``jsonb`` and NUL in ``text``. A record holding one is
stored whole all the same: ``raw`` keeps the record value's bytes, the JSON and text
columns have each NUL replaced by :data:`NUL_REPLACEMENT`, and ``lossy`` is true.
Decoding and dead letters are the projector's (:mod:`streams.batch.records`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from projections.event_kinds import REFUSAL_AUTHOR, refused_request_id
from projections.fold.fork import ForkError, fork_source
from schemas.dead_letter import DeadLetter
from schemas.event import event_to_json
from schemas.keys import parse_session_key
from schemas.logged_event import LoggedEvent
from streams.batch.records import HomePartitions, SourceRecord, dead_letter, decode_record

#: What a NUL character becomes in a lossy row's ``jsonb`` and text columns: U+FFFD.
NUL_REPLACEMENT: Final = "\ufffd"
_NUL: Final = "\x00"
#: How a NUL is written inside a JSON string; JSON cannot hold it any other way.
_ESCAPED_NUL: Final = b"\\u0000"

#: The columns of ``event_rows`` in :class:`EventRow`'s field order.
COLUMNS: Final = (
    "partition",
    "offset",
    "session_key",
    "tenant",
    "app",
    "user_id",
    "session_id",
    "event_id",
    "invocation_id",
    "author",
    "event_timestamp",
    "producer_id",
    "idempotency_key",
    "event",
    "raw",
    "lossy",
    "expected_offset",
    "status",
    "status_before_deletion",
)


@dataclass(frozen=True, slots=True)
class EventRow:
    """One ``event_rows`` row: where the record is, what it says, and whether NUL was replaced.

    ``event`` is the event's JSON text (ADK's camelCase, the fields the producer set);
    ``raw`` is the record value's bytes when the row is lossy, else None;
    ``expected_offset`` is the envelope's, on a conditional record; ``status`` is
    what the fold made of the record (:class:`~projections.history.event_status.EventStatus`),
    set by the sink's classification before the row is written; ``status_before_deletion``
    the status a row ``deleted`` in its own batch had before (None on every other row).
    """

    partition: int
    offset: int
    session_key: str
    tenant: str
    app: str
    user_id: str
    session_id: str
    event_id: str
    invocation_id: str
    author: str
    event_timestamp: float
    producer_id: str
    idempotency_key: str
    event: str
    raw: bytes | None
    lossy: bool
    expected_offset: int | None = None
    status: str | None = None
    status_before_deletion: str | None = None

    def values(self) -> tuple[object, ...]:
        """The row's values in :data:`COLUMNS` order (field by field: ``astuple`` deep-copies)."""
        return (
            self.partition,
            self.offset,
            self.session_key,
            self.tenant,
            self.app,
            self.user_id,
            self.session_id,
            self.event_id,
            self.invocation_id,
            self.author,
            self.event_timestamp,
            self.producer_id,
            self.idempotency_key,
            self.event,
            self.raw,
            self.lossy,
            self.expected_offset,
            self.status,
            self.status_before_deletion,
        )

    def with_status(self, status: str, before_deletion: str | None = None) -> EventRow:
        """This row with `status` and, when it is ``deleted``, its status `before_deletion`.

        Field by field: ``dataclasses.replace`` costs several times more.
        """
        fields: tuple[Any, ...] = self.values()[:-2]
        return EventRow(*fields, status=status, status_before_deletion=before_deletion)  # type: ignore[misc]


@dataclass(frozen=True, slots=True)
class BatchRows:
    """A batch's records as rows (with each row's decoded record), and the dead letters.

    ``events[i]`` is the decoded record of ``rows[i]``: what the classification folds.
    """

    rows: list[EventRow] = field(default_factory=list)
    events: list[LoggedEvent] = field(default_factory=list)
    letters: list[DeadLetter] = field(default_factory=list)


def batch_rows(
    records: Iterable[SourceRecord],
    partitions: int | HomePartitions,
    result: BatchRows | None = None,
) -> BatchRows:
    """Each record's row, or its dead letter, added to `result` (a new one by default).

    A dead letter for no key, a record off its key's partition of `partitions` (as the
    projector refuses it: a session's offsets order it only on one partition), not an
    envelope, a key refused, or a malformed fork record. `partitions` may be a
    :class:`HomePartitions` already holding keys' partitions (a batch decoded in parts).
    """
    result = BatchRows() if result is None else result
    home = partitions if isinstance(partitions, HomePartitions) else HomePartitions(partitions)
    for record in records:
        if (misplaced := home.misplaced(record)) is not None:
            result.letters.append(misplaced)
            continue
        decoded = decode_record(record)
        if isinstance(decoded, DeadLetter):
            result.letters.append(decoded)
            continue
        refusal = fork_refusal(decoded.logged)
        if refusal is not None:
            result.letters.append(dead_letter(record, "fold", refusal))
            continue
        result.rows.append(decoded_row(record, decoded.logged))
        result.events.append(decoded.logged)
    return result


def fork_refusal(logged: LoggedEvent) -> str | None:
    """Why the fold refuses `logged` as a malformed fork record, None when it does not.

    The fold checks a refusal of a compaction request first, so such a record is no fork.
    """
    event = logged.envelope.event
    if refused_request_id(event) is not None or event.author != REFUSAL_AUTHOR:
        return None
    try:
        fork_source(logged.envelope)
    except ForkError as exc:
        return f"malformed fork record: {exc}"
    return None


def event_row(record: SourceRecord) -> EventRow | DeadLetter:
    """The row of one record, or its dead letter when it cannot be stored at all."""
    decoded = decode_record(record)
    if isinstance(decoded, DeadLetter):
        return decoded
    return decoded_row(record, decoded.logged)


def decoded_row(record: SourceRecord, logged: LoggedEvent) -> EventRow:
    """The row of `record`, decoded as `logged` (status not set yet)."""
    envelope = logged.envelope
    event = envelope.event
    key = parse_session_key(envelope.session_key)  # NUL-free: the key's rules refuse controls
    document: object = event_to_json(event)
    nul_in_json = False
    if _ESCAPED_NUL in record.value:  # else no string of it holds a NUL: the fast path
        cleaned = without_nul(document)
        nul_in_json, document = cleaned != document, cleaned
    texts: tuple[str, ...] = (
        event.id,
        event.invocation_id,
        event.author,
        envelope.producer_id,
        envelope.idempotency_key,
    )
    nul_in_texts = _NUL in "".join(texts)  # one scan: the texts hold a NUL in rare records
    lossy = nul_in_json or nul_in_texts
    if nul_in_texts:
        texts = tuple(text.replace(_NUL, NUL_REPLACEMENT) for text in texts)
    event_id, invocation_id, author, producer_id, idempotency_key = texts
    return EventRow(
        partition=record.partition,
        offset=record.offset,
        session_key=key.key,
        tenant=key.tenant,
        app=key.app,
        user_id=key.user,
        session_id=key.session,
        event_id=event_id,
        invocation_id=invocation_id,
        author=author,
        event_timestamp=event.timestamp,
        producer_id=producer_id,
        idempotency_key=idempotency_key,
        event=orjson.dumps(document).decode(),
        raw=record.value if lossy else None,
        lossy=lossy,
        expected_offset=envelope.expected_offset,
    )


def without_nul(value: object) -> object:
    """`value` (decoded JSON) with every NUL in its strings and keys replaced."""
    if isinstance(value, str):
        return value.replace(_NUL, NUL_REPLACEMENT)
    if isinstance(value, dict):
        return {str(without_nul(key)): without_nul(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_nul(item) for item in value]
    return value
