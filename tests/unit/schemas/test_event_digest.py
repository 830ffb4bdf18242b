"""Equal events have equal digests, whatever order their JSON gave the fields in."""

from __future__ import annotations

from schemas.event import Event
from schemas.event_digest import event_digest


def _event(**extras: object) -> Event:
    return Event.model_validate({"id": "e1", "author": "user", "timestamp": 1.0, **extras})


def test_equal_events_whose_extra_fields_came_in_another_order_have_one_digest() -> None:
    first = Event.model_validate_json(
        '{"id": "e1", "author": "u", "timestamp": 1.0, "b": 2, "a": 1}'
    )
    second = Event.model_validate_json(
        '{"a": 1, "b": 2, "timestamp": 1.0, "author": "u", "id": "e1"}'
    )
    assert first == second  # as the fold compares them

    assert event_digest(first) == event_digest(second)


def test_events_that_differ_in_any_field_have_different_digests() -> None:
    base = event_digest(_event())
    assert event_digest(_event(branch="root")) != base
    assert event_digest(_event(futureField=1)) != base
    assert (
        event_digest(Event.model_validate({"id": "e1", "author": "user", "timestamp": 2.0})) != base
    )
