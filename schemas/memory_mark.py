"""The mark of a memory record: the pipeline's bookkeeping event that adds or deletes memories.

A memory record is an event on its session like a deletion record: author
``ctxstream``, no content, no actions, and a ``memory`` entry under the
pipeline's custom-metadata namespace naming the action and, optionally, the
memory ids (event ids) it is limited to::

    {"id": "9f...", "author": "ctxstream", "timestamp": 1733130010.0,
     "customMetadata": {"ctxstream": {"memory": {"action": "add"}}}}
    ... {"memory": {"action": "delete", "ids": ["e1", "e2"]}}
    ... {"memory": {"action": "write", "entry": {"id": "m1", "author": "user",
         "timestamp": 1733130000.0, "role": "user", "text": "I parked on level 3"}}}

``add`` and ``delete`` act on the session's records *before* it; ``write`` carries one
memory itself (ADK's ``add_memory``, or an event the log does not hold), removed by a
later ``delete`` naming its id (ctxstream/memory/README.md, "Modes and records"). The
envelope's validation refuses any other shape
(:func:`memory_mark_problem`), so a malformed one is dead-lettered when decoded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal, cast

from schemas.bookkeeping import AUTHOR, NAMESPACE, bare_problem
from schemas.event import MAX_ID_CHARS, Event

#: The key of the mark under the pipeline's custom-metadata namespace.
MEMORY_KEY: Final = "memory"
#: The most ids one record may name.
MAX_MEMORY_IDS: Final = 1000
#: What a memory record does to the session's records before it.
ACTIONS: Final = ("add", "delete")
#: The action of a memory record that carries its memory (:class:`WrittenMemory`).
WRITE: Final = "write"
#: The longest role a written memory may name.
MAX_ROLE_CHARS: Final = 64

MemoryAction = Literal["add", "delete", "write"]


@dataclass(frozen=True, slots=True)
class WrittenMemory:
    """A memory a ``write`` record carries: ADK's ``MemoryEntry`` as text.

    Attributes:
        id: The memory id (``MemoryEntry.id``; ``delete`` names it).
        author: Who said it (may be empty).
        timestamp: When it happened, ADK's float seconds.
        role: The content's role, None when it has none.
        text: The memory's text, not empty.
    """

    id: str
    author: str
    timestamp: float
    role: str | None
    text: str


@dataclass(frozen=True, slots=True)
class MemoryMark:
    """What a memory record says: `action` on the session's memories, all or `ids` only.

    A ``write`` names no ids and carries `entry`; ``add`` and ``delete`` carry none.
    """

    action: MemoryAction
    ids: frozenset[str] | None = None
    entry: WrittenMemory | None = None


def names_memory_mark(event: Event) -> bool:
    """Whether `event` names the memory key at all (well formed or not)."""
    ours = (event.custom_metadata or {}).get(NAMESPACE)
    return isinstance(ours, dict) and MEMORY_KEY in ours


def memory_mark_problem(event: Event) -> str | None:
    """Why `event`, which names the memory key, is no memory record; None when it is one.

    Example: ``{"ctxstream": {"memory": {"action": "forget"}}}`` ->
    ``"ctxstream.memory.action must be 'add' or 'delete', got 'forget'"``.
    """
    ours = (event.custom_metadata or {}).get(NAMESPACE)
    if not isinstance(ours, dict) or MEMORY_KEY not in ours:
        return "it names no ctxstream.memory"
    if set(ours) != {MEMORY_KEY}:
        others = ", ".join(sorted(str(key) for key in ours if key != MEMORY_KEY))
        return f"a memory record names nothing else under ctxstream (it also names {others})"
    problem = _mark_problem(ours[MEMORY_KEY])
    if problem is not None:
        return problem
    return bare_problem(event, "memory")


def _mark_problem(mark: object) -> str | None:
    """Why `mark` (the value under ``ctxstream.memory``) is malformed; None when it is fine."""
    if not isinstance(mark, dict):
        return f"ctxstream.memory must be an object, got {type(mark).__name__}"
    if mark.get("action") == WRITE:
        return _write_problem(mark)
    if unknown := sorted(str(key) for key in mark if key not in ("action", "ids")):
        return f"ctxstream.memory names only action and ids, not {', '.join(unknown)}"
    action = mark.get("action")
    if action not in ACTIONS:
        return f"ctxstream.memory.action must be 'add' or 'delete', got {action!r}"
    if "ids" not in mark:
        return None
    ids = mark["ids"]
    if not isinstance(ids, list) or not ids or len(ids) > MAX_MEMORY_IDS:
        return f"ctxstream.memory.ids must be a list of 1 to {MAX_MEMORY_IDS} ids"
    for index, memory_id in enumerate(ids):
        if not isinstance(memory_id, str) or not 0 < len(memory_id) <= MAX_ID_CHARS:
            return (
                f"ctxstream.memory.ids[{index}] must be a non-empty string of at most "
                f"{MAX_ID_CHARS} characters"
            )
    return None


def _write_problem(mark: dict[object, object]) -> str | None:
    """Why a ``write`` mark is malformed; None when it carries one well-formed entry."""
    if set(mark) != {"action", "entry"}:
        return "a ctxstream.memory write names exactly action and entry"
    entry = mark["entry"]
    if not isinstance(entry, dict) or not set(entry) <= {
        "id",
        "author",
        "timestamp",
        "role",
        "text",
    }:
        return "ctxstream.memory.entry must be an object of id, author, timestamp, role, text"
    memory_id, author, role, text = (entry.get(k) for k in ("id", "author", "role", "text"))
    if not isinstance(memory_id, str) or not 0 < len(memory_id) <= MAX_ID_CHARS:
        return f"ctxstream.memory.entry.id must be a non-empty string of at most {MAX_ID_CHARS}"
    if not isinstance(author, str) or len(author) > MAX_ID_CHARS:
        return f"ctxstream.memory.entry.author must be a string of at most {MAX_ID_CHARS}"
    timestamp = entry.get("timestamp")
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        return "ctxstream.memory.entry.timestamp must be a number (seconds)"
    if not math.isfinite(timestamp):
        return "ctxstream.memory.entry.timestamp must be finite"
    if role is not None and (not isinstance(role, str) or not 0 < len(role) <= MAX_ROLE_CHARS):
        return f"ctxstream.memory.entry.role must be a non-empty string of at most {MAX_ROLE_CHARS}"
    if not isinstance(text, str) or not text.strip():
        return "ctxstream.memory.entry.text must be a non-empty string"
    return None


def memory_mark(event: Event) -> MemoryMark | None:
    """The mark of `event` when it is a well-formed memory record, else None."""
    if not names_memory_mark(event) or memory_mark_problem(event) is not None:
        return None
    mark = cast(dict[str, object], (event.custom_metadata or {})[NAMESPACE])[MEMORY_KEY]
    fields = cast(dict[str, object], mark)
    if fields["action"] == WRITE:
        entry = cast(dict[str, object], fields["entry"])
        role = entry.get("role")
        written = WrittenMemory(
            id=cast(str, entry["id"]),
            author=cast(str, entry["author"]),
            timestamp=float(cast(float, entry["timestamp"])),
            role=None if role is None else cast(str, role),
            text=cast(str, entry["text"]),
        )
        return MemoryMark(action="write", entry=written)
    ids = fields.get("ids")
    return MemoryMark(
        action=cast(MemoryAction, fields["action"]),
        ids=None if ids is None else frozenset(cast(list[str], ids)),
    )


def is_memory_mark(event: Event) -> bool:
    """Whether `event` is a well-formed memory record."""
    return memory_mark(event) is not None


def memory_mark_event(mark: MemoryMark, *, event_id: str, timestamp: float) -> Event:
    """The memory record's event for `mark`, as the module docstring shows it (ids sorted)."""
    body: dict[str, object] = {"action": mark.action}
    if mark.entry is not None:
        entry = mark.entry
        body["entry"] = {
            "id": entry.id,
            "author": entry.author,
            "timestamp": entry.timestamp,
            "text": entry.text,
        } | ({} if entry.role is None else {"role": entry.role})
    if mark.ids is not None:
        body["ids"] = sorted(mark.ids)
    return Event(
        id=event_id,
        author=AUTHOR,
        timestamp=timestamp,
        custom_metadata={NAMESPACE: {MEMORY_KEY: body}},
    )
