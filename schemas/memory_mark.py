"""The mark of a memory record: the pipeline's bookkeeping event that adds or deletes memories.

A memory record is an event on its session like a deletion record: author
``ctxstream``, no content, no actions, and a ``memory`` entry under the
pipeline's custom-metadata namespace naming the action and, optionally, the
memory ids (event ids) it is limited to::

    {"id": "9f...", "author": "ctxstream", "timestamp": 1733130010.0,
     "customMetadata": {"ctxstream": {"memory": {"action": "add"}}}}
    ... {"memory": {"action": "delete", "ids": ["e1", "e2"]}}

It acts on the session's records *before* it (ctxstream/memory/README.md, "Modes
and records"). The envelope's validation refuses any other shape
(:func:`memory_mark_problem`), so a malformed one is dead-lettered when decoded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, cast

from schemas.bookkeeping import AUTHOR, NAMESPACE, bare_problem
from schemas.event import MAX_ID_CHARS, Event

#: The key of the mark under the pipeline's custom-metadata namespace.
MEMORY_KEY: Final = "memory"
#: The most ids one record may name.
MAX_MEMORY_IDS: Final = 1000
#: What a memory record does.
ACTIONS: Final = ("add", "delete")

MemoryAction = Literal["add", "delete"]


@dataclass(frozen=True, slots=True)
class MemoryMark:
    """What a memory record says: `action` on the session's memories, all or `ids` only."""

    action: MemoryAction
    ids: frozenset[str] | None = None


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


def memory_mark(event: Event) -> MemoryMark | None:
    """The mark of `event` when it is a well-formed memory record, else None."""
    if not names_memory_mark(event) or memory_mark_problem(event) is not None:
        return None
    mark = cast(dict[str, object], (event.custom_metadata or {})[NAMESPACE])[MEMORY_KEY]
    fields = cast(dict[str, object], mark)
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
    if mark.ids is not None:
        body["ids"] = sorted(mark.ids)
    return Event(
        id=event_id,
        author=AUTHOR,
        timestamp=timestamp,
        custom_metadata={NAMESPACE: {MEMORY_KEY: body}},
    )
