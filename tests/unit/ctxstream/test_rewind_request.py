"""The rewind event: ADK's shape, refused arguments, and what readers then drop."""

from __future__ import annotations

import pytest

from ctxstream.appends.event_records import event_record
from ctxstream.appends.rewind_record import rewind_record
from ctxstream.errors import InvalidArgumentError
from projections.fold.rewind import drop_rewound
from schemas.codec import decode_envelope
from schemas.event import MAX_ID_CHARS, Event
from tests.support.events import ids, text_event


def _rewind(target: object) -> dict[str, object]:
    return rewind_record(target, event_id="r1", invocation_id="e-1", timestamp=130.0)


def test_the_rewind_is_adks_event_and_the_pipeline_accepts_it() -> None:
    event = _rewind("inv2")
    assert event == {
        "id": "r1",
        "invocationId": "e-1",
        "author": "user",
        "timestamp": 130.0,
        "actions": {"rewindBeforeInvocationId": "inv2", "stateDelta": {}},
    }
    key, value = event_record("acme/support/u1/s1", event, producer_id="p")
    decoded = decode_envelope(value, record_key=key).event
    assert decoded.actions.rewind_before_invocation_id == "inv2"
    session = [
        text_event("a1", "inv1", 100.0),
        text_event("b1", "inv2", 110.0),
        text_event("b2", "inv2", 111.0, author="root"),
        decoded,
    ]
    assert ids(drop_rewound(session)) == ["a1"]


@pytest.mark.parametrize(
    ("target", "named"),
    [("", "empty"), (None, "expected a string"), (7, "expected a string"), ("x" * 257, "at most")],
)
def test_a_bad_invocation_id_is_refused_naming_it(target: object, named: str) -> None:
    with pytest.raises(InvalidArgumentError, match=f"^before_invocation_id: .*{named}"):
        _rewind(target)


def test_the_state_delta_is_carried_as_given() -> None:
    event = rewind_record(
        "inv2", event_id="r1", invocation_id="e-1", timestamp=130.0, state_delta={"a": 1, "b": None}
    )
    assert event["actions"] == {
        "rewindBeforeInvocationId": "inv2",
        "stateDelta": {"a": 1, "b": None},
    }


def test_the_longest_invocation_id_is_accepted() -> None:
    event = _rewind("x" * MAX_ID_CHARS)
    assert Event.model_validate(event).actions.rewind_before_invocation_id == "x" * MAX_ID_CHARS
