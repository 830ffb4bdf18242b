"""The part accessors shared by the steps of contents assembly."""

from __future__ import annotations

from projections.contents.parts import parts_of, with_parts
from schemas.event import Part
from tests.support.events import bare_event, text_event


def test_with_parts_gives_a_content_less_event_a_content() -> None:
    event = bare_event("e1", "inv1", 1.0)
    copy = with_parts(event, [Part(text="hi")])
    assert copy.content is not None
    assert copy.content.role is None
    assert [part.text for part in parts_of(copy)] == ["hi"]
    assert event.content is None


def test_with_parts_keeps_the_role_and_other_fields() -> None:
    event = text_event("e1", "inv1", 1.0, "old", author="agent")
    copy = with_parts(event, [Part(text="new")])
    assert copy.content is not None
    assert copy.content.role == "model"
    assert [part.text for part in parts_of(copy)] == ["new"]
    assert copy.model_copy(update={"content": event.content}) == event
