"""Deletion records in the fold, the plain rebuild, the history statuses and the schema.

The expectations are written out by hand from the rule (projections/README.md,
"Deletion"): nothing before a deletion survives but the offset watermark and
the retired requests; later events start the session afresh.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from ctxstream.appends.deletion_record import deletion_record
from ctxstream.errors import InvalidArgumentError
from projections.fold.projection import (
    apply,
    context_contents,
    empty_projection,
    note_request,
    project,
)
from projections.fold.rebuild import current_incarnation, effective_records, refused_requests
from projections.history.classification import classify_session
from projections.history.event_status import EventStatus
from projections.history.incremental import advance
from projections.retention.state_codec import decode_state, encode_state
from schemas.codec import decode_envelope, encode
from schemas.deletion_mark import deletion_event, is_deletion
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.event import Event, content_to_json
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    answer_envelope,
    envelope,
    logged_event,
    request_for,
    session,
    text_event,
)

DELETION = deletion_event(event_id="del-1", timestamp=200.0)


def _at(offset: int, event: Event) -> LoggedEvent:
    return logged_event(SESSION, event, offset)


def _texts(records: list[LoggedEvent]) -> list[str]:
    projection = project(SESSION, records)
    return [
        part["text"]
        for content in context_contents(projection)
        for part in content_to_json(content)["parts"]
    ]


def test_the_record_has_the_documented_wire_shape() -> None:
    event = deletion_record("acme/app/u1/s1", event_id="9f", timestamp=1733130010.0)
    assert encode(envelope(SESSION, event))  # an envelope carries it
    assert event.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True) == {
        "id": "9f",
        "author": "ctxstream",
        "timestamp": 1733130010.0,
        "customMetadata": {"ctxstream": {"session_deleted": True}},
    }
    assert is_deletion(event)


@pytest.mark.parametrize(
    ("key", "message"),
    [(7, "session_key: expected a string, got int"), ("no-slashes", "session_key: ")],
)
def test_a_bad_session_key_is_refused_naming_the_argument(key: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"^{message}"):
        deletion_record(key, event_id="9f", timestamp=1.0)


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"customMetadata": {"ctxstream": {"session_deleted": "yes"}}}, "must be true, got str"),
        ({"customMetadata": {"ctxstream": {"session_deleted": True, "x": 1}}}, "names x"),
        ({"author": "user"}, "author is 'ctxstream', got 'user'"),
        ({"content": {"role": "user", "parts": [{"text": "hi"}]}}, "no content"),
        ({"actions": {"stateDelta": {"k": 1}}}, "carries no actions"),
    ],
)
def test_a_malformed_deletion_is_refused_when_decoded(
    changes: dict[str, Any], problem: str
) -> None:
    raw = envelope(SESSION, DELETION).model_dump(mode="json", by_alias=True)
    raw["event"] = {**raw["event"], **changes}
    with pytest.raises(ValidationError, match=problem):
        Envelope.model_validate(raw)
    with pytest.raises(DecodeError, match=problem):  # as the projector decodes a record
        decode_envelope(json.dumps(raw).encode())


def test_a_deletion_empties_the_projection_but_keeps_the_watermark() -> None:
    records = [*session(2), _at(30, DELETION)]
    projection = project(SESSION, records)
    fresh = empty_projection(SESSION)
    assert projection.last_offset == 30
    assert projection.deleted_at == 30
    assert list(projection.log.records) == []
    assert projection.state == fresh.state
    assert projection.invocations == fresh.invocations
    assert context_contents(projection) == []
    # A redelivered record from before the deletion changes nothing.
    assert apply(projection, records[3]) is projection


def test_events_after_a_deletion_start_the_session_afresh() -> None:
    old = session(1)  # offsets 10..16
    new = text_event("q-new", "inv-new", 300.0, "fresh start")
    records = [*old, _at(20, DELETION), _at(21, new)]
    assert _texts(records) == ["fresh start"]
    assert project(SESSION, records).deleted_at is None
    # The same event id as a deleted one is no retry: it is applied again.
    again = [*old, _at(20, DELETION), _at(21, old[0].envelope.event)]
    assert [r.offset for r in project(SESSION, again).log.records] == [21]


def test_a_late_summary_of_a_deleted_request_resurrects_nothing() -> None:
    old = session(1)
    request = request_for(old)
    waiting = note_request(project(SESSION, old), request)
    deleted = apply(waiting, _at(20, DELETION))
    assert deleted.in_flight is None
    assert request.request_id in deleted.retired_requests
    late = LoggedEvent(Offset(21), answer_envelope(request, 1, 250.0))
    after = apply(deleted, late)
    assert after.last_offset == 21
    assert list(after.log.records) == []
    assert after.deleted_at == 20  # still deleted: nothing was applied since
    # A fresh event, then the late summary again: still dropped.
    fresh = apply(after, _at(22, text_event("q2", "inv2", 300.0, "new")))
    later = LoggedEvent(Offset(23), answer_envelope(request, 2, 260.0))
    assert [r.offset for r in apply(fresh, later).log.records] == [22]


def test_a_deletion_survives_a_checkpoint() -> None:
    old = session(1)
    request = request_for(old)
    summary = LoggedEvent(Offset(18), answer_envelope(request, 1, 250.0))
    projection = project(SESSION, [*old, summary, _at(20, DELETION)])
    restored = decode_state(encode_state(projection))
    assert restored.deleted_at == 20
    assert set(restored.retired_requests) == {request.request_id}
    assert restored.last_offset == 20


def test_the_rebuild_drops_the_deleted_incarnation_and_its_late_answers() -> None:
    old = session(1)
    request = request_for(old)
    summary = LoggedEvent(Offset(18), answer_envelope(request, 1, 250.0))
    new = _at(22, text_event("q2", "inv2", 300.0, "new"))
    late = LoggedEvent(Offset(23), answer_envelope(request, 2, 260.0))
    records = [*old, summary, _at(20, DELETION), new, late]
    assert [r.offset for r in current_incarnation(records)] == [22]
    assert [r.offset for r in effective_records(records)] == [22]
    assert refused_requests(records) == set()


def test_history_marks_everything_before_a_deletion_deleted() -> None:
    old = session(1)  # 10, 12, 14, 16
    request = request_for(old)
    summary = LoggedEvent(Offset(18), answer_envelope(request, 1, 250.0))
    new = _at(22, text_event("q2", "inv2", 300.0, "new"))
    late = LoggedEvent(Offset(23), answer_envelope(request, 2, 260.0))
    records = [*old, summary, _at(20, DELETION), new, late]
    expected = {
        10: EventStatus.DELETED,
        12: EventStatus.DELETED,
        14: EventStatus.DELETED,
        16: EventStatus.DELETED,
        18: EventStatus.DELETED,
        20: EventStatus.DELETION,
        22: EventStatus.LIVE,
        23: EventStatus.DELETED,
    }
    assert classify_session(records) == expected
    state = None
    changes_at_deletion = None
    for record in records:
        state, changes = advance(state, record.offset, record.envelope)
        if record.offset == 20:
            changes_at_deletion = [(c.offset, c.status) for c in changes]
    assert changes_at_deletion == [
        *((offset, EventStatus.DELETED) for offset in (10, 12, 14, 16, 18)),
        (20, EventStatus.DELETION),
    ]
