"""``write`` memory records: the shape, each refusal with its reason, and the memory they carry.

Expected values are written out by hand; a malformed record is never taken for a mark.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.memory.memory_record import Memory, memory_of
from schemas.event import MAX_ID_CHARS, Event
from schemas.keys import SessionKey
from schemas.memory_mark import (
    MAX_ROLE_CHARS,
    MemoryMark,
    WrittenMemory,
    memory_mark,
    memory_mark_event,
    memory_mark_problem,
)
from tests.support.events import envelope, logged_event

ENTRY = {
    "id": "m1",
    "author": "user",
    "timestamp": 100.5,
    "role": "user",
    "text": "Ingrid likes sushi",
}


def marked(mark: Any) -> Event:
    return Event.model_validate(
        {
            "id": "r1",
            "author": "ctxstream",
            "timestamp": 1.0,
            "customMetadata": {"ctxstream": {"memory": mark}},
        }
    )


def test_a_write_record_round_trips_through_its_json() -> None:
    written = WrittenMemory(
        id="m1", author="user", timestamp=100.5, role="user", text="Ingrid likes sushi"
    )
    event = memory_mark_event(MemoryMark("write", entry=written), event_id="r1", timestamp=1.0)
    assert event.custom_metadata == {"ctxstream": {"memory": {"action": "write", "entry": ENTRY}}}
    assert memory_mark(event) == MemoryMark("write", entry=written)
    no_role = WrittenMemory(id="m2", author="", timestamp=3, role=None, text="x")
    again = memory_mark_event(MemoryMark("write", entry=no_role), event_id="r2", timestamp=1.0)
    assert memory_mark(again) == MemoryMark("write", entry=no_role)
    assert envelope(SessionKey("t/a/u/s"), event).event == event  # the envelope takes it


@pytest.mark.parametrize(
    ("mark", "reason"),
    [
        ({"action": "write"}, "a ctxstream.memory write names exactly action and entry"),
        (
            {"action": "write", "entry": ENTRY, "ids": ["m1"]},
            "a ctxstream.memory write names exactly action and entry",
        ),
        (
            {"action": "write", "entry": {**ENTRY, "tags": []}},
            "ctxstream.memory.entry must be an object of id, author, timestamp, role, text",
        ),
        (
            {"action": "write", "entry": {**ENTRY, "id": ""}},
            f"ctxstream.memory.entry.id must be a non-empty string of at most {MAX_ID_CHARS}",
        ),
        (
            {"action": "write", "entry": {**ENTRY, "author": None}},
            f"ctxstream.memory.entry.author must be a string of at most {MAX_ID_CHARS}",
        ),
        (
            {"action": "write", "entry": {**ENTRY, "timestamp": True}},
            "ctxstream.memory.entry.timestamp must be a number (seconds)",
        ),
        (
            {"action": "write", "entry": {**ENTRY, "role": "r" * (MAX_ROLE_CHARS + 1)}},
            f"ctxstream.memory.entry.role must be a non-empty string of at most {MAX_ROLE_CHARS}",
        ),
        (
            {"action": "write", "entry": {**ENTRY, "text": "  "}},
            "ctxstream.memory.entry.text must be a non-empty string",
        ),
        (
            {"action": "add", "entry": ENTRY},
            "ctxstream.memory names only action and ids, not entry",
        ),
    ],
)
def test_a_malformed_write_record_is_refused_with_its_reason(mark: Any, reason: str) -> None:
    event = marked(mark)
    assert memory_mark_problem(event) == reason
    assert memory_mark(event) is None


def test_a_write_record_contributes_the_memory_it_carries_and_marks_none() -> None:
    key = SessionKey("acme/support/u42/%memory")
    event = marked({"action": "write", "entry": ENTRY})
    assert memory_of(logged_event(key, event, 7), 1) == Memory(
        tenant="acme",
        app="support",
        user_id="u42",
        session_key="acme/support/u42/%memory",
        memory_id="m1",
        partition=1,
        offset=7,
        author="user",
        role="user",
        timestamp=100.5,
        kind="event",
        covered=None,
        text="Ingrid likes sushi",
        written=True,
    )
    assert memory_of(logged_event(key, marked({"action": "add"}), 8), 1) is None
