"""ADK events to the stored JSON and back: ``==`` to the event ADK built, lossy rows included."""

from __future__ import annotations

import datetime
from typing import Any

import orjson
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types

from ctxstream.adk.events import event_json, stored_event
from ctxstream.appends.event_records import checked_record


def _event(text: str, **actions: Any) -> Event:
    return Event(
        author="model",
        invocation_id="inv-1",
        timestamp=1_733_130_000.25,
        content=types.Content(role="model", parts=[types.Part(text=text)]),
        actions=EventActions(**actions),
    )


def test_an_event_round_trips_through_the_record_the_client_writes() -> None:
    event = _event("hello", state_delta={"a": [1, {"b": None}]}, transfer_to_agent="helper")
    record = checked_record("t/app/u/s", event_json(event), producer_id="p")
    stored = orjson.loads(record.value)["event"]
    assert stored_event(stored, None) == event


def test_a_lossy_row_is_read_from_the_record_bytes() -> None:
    event = _event("nul \x00 inside")
    record = checked_record("t/app/u/s", event_json(event), producer_id="p")
    replaced = orjson.loads(record.value.replace(b"\\u0000", b"\\ufffd"))["event"]
    assert stored_event(replaced, None) != event
    assert stored_event(replaced, record.value) == event


def test_state_values_are_made_json_safe_as_adk_stores_them() -> None:
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    event = _event("x", state_delta={"when": moment, "fn": len})
    stored = event_json(event)["actions"]["stateDelta"]
    assert stored["when"] == "2026-01-02T03:04:05Z"
    assert isinstance(stored["fn"], str)
    assert event.actions.state_delta["when"] is moment  # the caller's event is left as it was
