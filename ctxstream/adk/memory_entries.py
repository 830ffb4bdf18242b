"""ADK's events and ``MemoryEntry`` as ctxstream memories, and back. Pure but the clock.

A memory is text: what :func:`projections.memory.memory_text.memory_text` keeps of a content
(text parts, thoughts left out). An ADK event or a ``MemoryEntry`` the log does not hold
becomes a :class:`~schemas.memory_mark.WrittenMemory` (the ``write`` memory record's
entry); a search's :class:`ctxstream.memory.MemoryEntry` becomes ADK's ``MemoryEntry`` with
the event id, author, ADK's timestamp string and the text as one part, as ADK's in-memory
service returns it (no custom metadata: ``load_memory`` shows the model all of it).

Example::

    written_event(Event(id="e1", author="user", timestamp=100.0, content=Content(
        role="user", parts=[Part(text="I parked on level 3")])))
    -> WrittenMemory(id="e1", author="user", timestamp=100.0, role="user",
                     text="I parked on level 3")
"""

from __future__ import annotations

import time
import uuid
from datetime import datetime

from google.adk.events.event import Event as AdkEvent
from google.adk.memory.memory_entry import MemoryEntry as AdkMemoryEntry
from google.genai import types

from ctxstream.memory import MemoryEntry
from projections.memory.memory_text import memory_text
from schemas.event import Content
from schemas.memory_mark import MAX_ROLE_CHARS, WrittenMemory


def content_text(content: types.Content | None) -> tuple[str | None, str]:
    """The role and memory text of ADK's `content` (text ``""`` when it holds none)."""
    if content is None:
        return None, ""
    ours = Content.model_validate(content.model_dump(by_alias=True, exclude_none=True, mode="json"))
    role = content.role if content.role and len(content.role) <= MAX_ROLE_CHARS else None
    return role, memory_text(ours)


def written_event(event: AdkEvent) -> WrittenMemory | None:
    """The memory ADK's `event` holds, None when it has no text (or no id, or is partial)."""
    if event.partial or not event.id:
        return None
    role, text = content_text(event.content)
    if not text.strip():
        return None
    return WrittenMemory(
        id=event.id, author=event.author, timestamp=event.timestamp, role=role, text=text
    )


def written_entry(entry: AdkMemoryEntry) -> WrittenMemory:
    """ADK's `entry` as a written memory: its id (a fresh one when None), its time (now when None).

    Raises:
        ValueError: The entry has no text, or its timestamp is no ISO 8601 time; the
            message names the entry's field.
    """
    role, text = content_text(entry.content)
    if not text.strip():
        raise ValueError(f"memories: entry {entry.id!r} has no text part (content)")
    return WrittenMemory(
        id=entry.id or uuid.uuid4().hex,
        author=entry.author or "",
        timestamp=time.time() if entry.timestamp is None else entry_timestamp(entry.timestamp),
        role=role,
        text=text,
    )


def entry_timestamp(timestamp: str) -> float:
    """ADK's ``MemoryEntry.timestamp`` (ISO 8601; naive = local, as ADK writes it) as seconds.

    Raises:
        ValueError: `timestamp` is no ISO 8601 time (the message names the field).
    """
    try:
        return datetime.fromisoformat(timestamp).timestamp()
    except ValueError:
        raise ValueError(f"memories: timestamp {timestamp!r} is no ISO 8601 time") from None


def adk_entry(entry: MemoryEntry) -> AdkMemoryEntry:
    """A search's memory as ADK's ``MemoryEntry`` (id, author, timestamp, role and text)."""
    return AdkMemoryEntry(
        id=entry.id,
        author=entry.author or None,
        timestamp=entry.timestamp,
        content=types.Content(role=entry.content.role, parts=[types.Part(text=entry.text)]),
    )
