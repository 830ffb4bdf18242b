"""An event checked into the record the projector reads, before anything is sent. Pure.

The record is built and decoded by the very decoder the projector runs
(:func:`schemas.codec.decode_envelope`, with the record key), so what the client
accepts the pipeline folds, and what it refuses raises
:class:`~ctxstream.errors.InvalidEventError` naming the field. A NaN or an
infinity, which JSON cannot carry and orjson writes as ``null``, is refused by its
path instead of changed, and so is a value too deep for orjson to write: when the
written record holds ``null`` or could not be written, the caller's values are
walked for the JSON bounds (:func:`schemas.json_bounds.check_json_bounds`, which
descends dicts and lists, what ``orjson.loads`` and ``Event`` dumps give; a
tuple's items are not walked). Stricter than the
decoder: a field no model knows, at any depth (a misspelt ``invocationID``), is
refused by its path (:mod:`schemas.unknown_fields`), and so are the pipeline's own
bookkeeping records (:func:`bookkeeping_refusal`) unless `pipeline` is given.
The idempotency key is ``<session key>/<event id>``; an event without an id gets a
fresh one (the one impure step: ``uuid4``).

Example: ``event_record("acme/app/u1/s1", {"author": "user", "timestamp": 1},
producer_id="p")`` -> ``(b"acme/app/u1/s1", b'{"schema_version":2,...}')``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ctxstream.appends.results import CheckedRecord
from ctxstream.errors import InvalidEventError
from projections.event_kinds import METADATA_NAMESPACE, REFUSAL_AUTHOR, REQUEST_ID_KEY
from schemas.codec import MAX_RECORD_BYTES, decode_envelope
from schemas.errors import DecodeError, InvalidSessionKeyError
from schemas.event import Event, event_to_json
from schemas.event_digest import event_digest
from schemas.json_bounds import check_json_bounds
from schemas.keys import parse_session_key
from schemas.unknown_fields import unknown_fields, unknown_fields_refusal, unknown_top_fields

EventInput = Event | Mapping[str, Any]
"""An event as an ADK ``Event`` or its JSON (camelCase or snake_case field names)."""


def event_record(
    session_key: str, event: EventInput, *, producer_id: str, pipeline: bool = False
) -> tuple[bytes, bytes]:
    """The (key, value) record of `event` in session `session_key`, as the projector reads it.

    The value is an exact-size copy: orjson's buffer keeps kilobytes of slack.
    `pipeline`: the event may be one of the pipeline's own bookkeeping records
    (:func:`bookkeeping_refusal`), which a caller's event may not be.

    Raises:
        InvalidEventError: The session key or the event is not one the pipeline accepts,
            or is the pipeline's own; the message says which field and why.
    """
    record = checked_record(session_key, event, producer_id=producer_id, pipeline=pipeline)
    return record.key, record.value


def checked_record(
    session_key: str,
    event: EventInput,
    *,
    producer_id: str,
    pipeline: bool = False,
    digest: bool = False,
    expected_offset: int | None = None,
) -> CheckedRecord:
    """:func:`event_record`'s record, with the event's digest when `digest` and its id was given.

    `expected_offset`: the record is conditional (``Envelope.expected_offset``).

    Raises:
        InvalidEventError: As :func:`event_record`.
    """
    try:
        tenant = parse_session_key(session_key).tenant
    except InvalidSessionKeyError as exc:
        raise InvalidEventError(f"session_key: {exc}") from exc
    if isinstance(event, Event):
        fields: dict[str, Any] = event_to_json(event)
    elif isinstance(event, Mapping):
        fields = dict(event)
    else:
        raise InvalidEventError(f"event: expected an Event or a JSON object, got {type(event)}")
    event_id = fields.get("id")
    given = bool(event_id)
    if not event_id:
        event_id = fields["id"] = uuid.uuid4().hex
    record = {
        "schema_version": 2,
        "tenant": tenant,
        "session_key": session_key,
        "producer_id": producer_id,
        "idempotency_key": f"{session_key}/{event_id}"[:256],
        "event": fields,
    }
    if expected_offset is not None:
        record["expected_offset"] = expected_offset
    try:
        value = bytes(memoryview(orjson.dumps(record)))
    except TypeError as exc:
        _check_bounds(record)  # too deep for orjson: named by its path
        raise InvalidEventError(f"event: not JSON: {exc}") from exc
    if b"null" in value:  # orjson writes NaN and infinities as null: did the caller give one?
        _check_bounds(record)
    if len(value) > MAX_RECORD_BYTES:
        raise InvalidEventError(
            f"event: the record takes {len(value)} bytes, over the limit of {MAX_RECORD_BYTES}"
        )
    key = session_key.encode()
    try:
        envelope = decode_envelope(value, record_key=key)
    except DecodeError as exc:
        unknown = unknown_top_fields(Event, fields)
        also = f"; {unknown_fields_refusal(unknown)}" if unknown else ""
        raise InvalidEventError(f"{exc}{also}") from exc
    if unknown := unknown_fields(envelope.event):
        raise InvalidEventError(unknown_fields_refusal(unknown))
    if not pipeline and (refusal := bookkeeping_refusal(envelope.event)) is not None:
        raise InvalidEventError(f"event: {refusal}")
    looked_up = event_digest(envelope.event) if digest and given else None
    return CheckedRecord(key, value, envelope.event.id, looked_up)


def _check_bounds(record: dict[str, Any]) -> None:
    """Refuse `record` by the path of the first JSON bound it breaks (NaN included).

    Raises:
        InvalidEventError: The value's path and what is wrong with it.
    """
    try:
        check_json_bounds(record)
    except DecodeError as exc:
        raise InvalidEventError(str(exc)) from exc


def event_records(
    session_key: str, events: Sequence[EventInput], *, producer_id: str, pipeline: bool = False
) -> list[tuple[bytes, bytes]]:
    """The records of `events` (as :func:`event_record`), every one checked.

    Raises:
        InvalidEventError: An event or the key is refused; the message names its index.
    """
    checked = checked_records(session_key, events, producer_id=producer_id, pipeline=pipeline)
    return [(record.key, record.value) for record in checked]


def checked_records(
    session_key: str,
    events: Sequence[EventInput],
    *,
    producer_id: str,
    pipeline: bool = False,
    digest: bool = False,
    expected_offset: int | None = None,
) -> list[CheckedRecord]:
    """The records of `events` (as :func:`checked_record`), every one checked.

    Raises:
        InvalidEventError: An event or the key is refused; the message names its index.
    """
    records = []
    for index, event in enumerate(events):
        try:
            records.append(
                checked_record(
                    session_key,
                    event,
                    producer_id=producer_id,
                    pipeline=pipeline,
                    digest=digest,
                    expected_offset=expected_offset,
                )
            )
        except InvalidEventError as exc:
            raise InvalidEventError(f"events[{index}]: {exc}") from exc
    return records


def bookkeeping_refusal(event: Event) -> str | None:
    """Why `event` is one only the pipeline may append (one line), None when a caller may.

    The pipeline keeps its bookkeeping on `events` as events of author
    ``ctxstream`` or with its own custom-metadata namespace (fork records,
    refusals of compaction requests); the projector folds them as the
    pipeline's word. The one entry a caller's event may carry there is a
    summary's ``compaction_request_id``.

    Example: ``{"author": "user", "customMetadata": {"ctxstream": {"fork_of": ...}}}``
    -> ``"customMetadata.ctxstream: ..."``; ``{"author": "user"}`` -> None.
    """
    if event.author == REFUSAL_AUTHOR:
        return (
            f"author: {REFUSAL_AUTHOR!r} is the pipeline's own bookkeeping author; "
            "start a fork with the fork call"
        )
    ours = (event.custom_metadata or {}).get(METADATA_NAMESPACE)
    if ours is None:
        return None
    if (
        event.actions.compaction is not None
        and isinstance(ours, dict)
        and set(ours) <= {REQUEST_ID_KEY}
    ):
        return None
    return (
        f"customMetadata.{METADATA_NAMESPACE}: the pipeline's own namespace (fork records, "
        f"refusals); a caller's event may carry only a summary's {REQUEST_ID_KEY} there"
    )
