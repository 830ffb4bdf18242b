"""ADK events and memory entries as ctxstream memories, and back: values written out by hand."""

from __future__ import annotations

from datetime import datetime

import pytest
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry as AdkMemoryEntry
from google.genai import types

from ctxstream.adk.memory_entries import adk_entry, entry_timestamp, written_entry, written_event
from ctxstream.memory import MemoryEntry
from schemas.event import Content, Part
from schemas.memory_mark import WrittenMemory


def _event(parts: list[types.Part], **fields: object) -> Event:
    content = types.Content(role="model", parts=parts)
    return Event(id="e1", author="helper", timestamp=100.25, content=content, **fields)


def test_an_events_memory_is_its_text_parts_without_thoughts() -> None:
    parts = [
        types.Part(text="Ingrid likes sushi"),
        types.Part(text="plan the answer", thought=True),
        types.Part(function_call=types.FunctionCall(name="f", args={})),
        types.Part(text="and tea"),
    ]
    assert written_event(_event(parts)) == WrittenMemory(
        id="e1", author="helper", timestamp=100.25, role="model", text="Ingrid likes sushi\nand tea"
    )
    call = types.Part(function_call=types.FunctionCall(name="f", args={}))
    assert written_event(_event([call])) is None
    assert written_event(_event([types.Part(text="hi")], partial=True)) is None
    assert written_event(Event(id="e2", author="user", timestamp=1.0)) is None


def test_an_entrys_timestamp_is_read_as_adk_writes_it() -> None:
    stamp = 1_714_559_400.25
    adk_time = datetime.fromtimestamp(stamp).isoformat()  # noqa: DTZ006 - ADK's own form
    assert entry_timestamp(adk_time) == stamp
    with pytest.raises(ValueError, match="memories: timestamp 'yesterday' is no ISO 8601 time"):
        entry_timestamp("yesterday")
    entry = AdkMemoryEntry(
        id="m1",
        author="user",
        timestamp=adk_time,
        content=types.Content(role="user", parts=[types.Part(text="Rafael lives in Porto")]),
    )
    assert written_entry(entry) == WrittenMemory(
        id="m1", author="user", timestamp=stamp, role="user", text="Rafael lives in Porto"
    )
    bare = written_entry(AdkMemoryEntry(content=types.Content(parts=[types.Part(text="x")])))
    assert (len(bare.id), bare.author, bare.role) == (32, "", None)
    with pytest.raises(ValueError, match="memories: entry 'm2' has no text part"):
        written_entry(AdkMemoryEntry(id="m2", content=types.Content(parts=[])))


def test_a_found_memory_is_adks_entry_with_its_id_author_time_and_text() -> None:
    found = MemoryEntry(
        id="e1",
        author="",
        timestamp="2024-05-01T10:30:00",
        content=Content(role="user", parts=[Part(text="Ingrid likes sushi")]),
        kind="event",
        session_key="t/a/u/s",
        score=1.5,
    )
    assert adk_entry(found) == AdkMemoryEntry(
        id="e1",
        author=None,
        timestamp="2024-05-01T10:30:00",
        content=types.Content(role="user", parts=[types.Part(text="Ingrid likes sushi")]),
    )
