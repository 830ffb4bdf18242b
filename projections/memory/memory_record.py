"""What one `events` record contributes to long-term memory, if anything. Pure: no I/O, no clock.

A record with text becomes one :class:`Memory`, its id the event's id (ADK's
``MemoryEntry.id``, which ``delete_memory`` names). A summary (``actions.compaction``)
becomes a memory of kind ``summary`` whose text is the compacted content and
which covers its ``[start_timestamp, end_timestamp]`` range of the session, as
masking reads it; the search drops the covered raw events when the summary is a
hit too (``ctxstream/memory/README.md``). A ``write`` memory record
(:mod:`schemas.memory_mark`) contributes the memory it carries. Partial (streamed)
events are left out: the final event repeats their text. Which records reach this function (live,
not rewound, not refused) is the sink's choice, not this module's.

Example: ``acme/support/u42/s7`` event ``e1`` by ``user`` at 100.0, text "I parked
on level 3" -> ``Memory(tenant="acme", app="support", user_id="u42", memory_id="e1",
kind="event", covered=None, text="I parked on level 3", ...)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from projections.memory.memory_text import memory_text, storable
from schemas.keys import parse_session_key
from schemas.logged_event import LoggedEvent
from schemas.memory_mark import WrittenMemory, memory_mark

MemoryKind = Literal["event", "summary"]


@dataclass(frozen=True, slots=True)
class Memory:
    """One memory: a text of a session, its scope, its source record and what it covers.

    Attributes:
        tenant: The session key's tenant.
        app: The session key's app.
        user_id: The session key's user.
        session_key: The session the memory comes from.
        memory_id: The event's id (``offset:<partition>:<offset>`` for an event without one).
        partition: The `events` partition of the source record.
        offset: The source record's offset.
        author: The event's author.
        role: The content's role, None when it has none.
        timestamp: The event's timestamp, ADK's float seconds.
        kind: ``event`` or ``summary``.
        covered: A summary's ``(start_timestamp, end_timestamp)``; None for an event.
        text: The text parts, thoughts left out (:mod:`projections.memory.memory_text`).
        written: It comes from a ``write`` memory record (kept unless a later
            ``delete`` names it, whatever the app's mode).
    """

    tenant: str
    app: str
    user_id: str
    session_key: str
    memory_id: str
    partition: int
    offset: int
    author: str
    role: str | None
    timestamp: float
    kind: MemoryKind
    covered: tuple[float, float] | None
    text: str
    written: bool = False


def memory_of(record: LoggedEvent, partition: int) -> Memory | None:
    """The memory `record` (read on `partition`) contributes, None when it has no text.

    None too for a partial event, and for a summary whose range is NaN or
    inverted: it covers nothing (as :func:`projections.compaction.masking.coverage`
    reads it), a malformed summary rather than a memory.
    """
    event = record.envelope.event
    mark = memory_mark(event)
    if mark is not None:
        return None if mark.entry is None else _memory(record, partition, mark.entry, written=True)
    if event.partial:
        return None
    compaction = event.actions.compaction
    content = compaction.compacted_content if compaction is not None else event.content
    text = memory_text(content)
    if not text.strip():
        return None
    covered: tuple[float, float] | None = None
    if compaction is not None:
        start, end = compaction.start_timestamp, compaction.end_timestamp
        if not start <= end:  # NaN compares False, as masking.coverage reads it
            return None
        covered = (start, end)
    role = content.role if content is not None and content.role else None
    memory_id = event.id or f"offset:{partition}:{record.offset}"
    found = WrittenMemory(memory_id, event.author, event.timestamp, role, text)
    return _memory(record, partition, found, covered=covered)


def _memory(
    record: LoggedEvent,
    partition: int,
    entry: WrittenMemory,
    *,
    covered: tuple[float, float] | None = None,
    written: bool = False,
) -> Memory:
    """The memory `entry` at `record`'s place: a summary when it `covered` a range."""
    key = parse_session_key(record.envelope.session_key)
    return Memory(
        tenant=key.tenant,
        app=key.app,
        user_id=key.user,
        session_key=key.key,
        memory_id=storable(entry.id),
        partition=partition,
        offset=record.offset,
        author=storable(entry.author),
        role=None if entry.role is None else storable(entry.role),
        timestamp=entry.timestamp,
        kind="event" if covered is None else "summary",
        covered=covered,
        text=storable(entry.text),
        written=written,
    )


def memory_timestamp(timestamp: float) -> str:
    """ADK's ``MemoryEntry.timestamp``: `timestamp` as local, naive ISO 8601.

    Deliberate ADK quirk: ADK writes ``datetime.fromtimestamp(ts).isoformat()``,
    the process's local time without an offset; this is the same string.

    Example (TZ=UTC): ``1700000000.5`` -> ``"2023-11-14T22:13:20.500000"``.
    """
    return datetime.fromtimestamp(timestamp).isoformat()  # noqa: DTZ006 - ADK's own form
