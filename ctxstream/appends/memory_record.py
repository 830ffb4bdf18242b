"""The memory record a session is given to add or delete its memories, checked first.

``Client.mark_memory(session_key, "add")`` appends one record to the session
(:mod:`schemas.memory_mark`): author ``ctxstream``, no content, the action (and
the memory ids it is limited to) under ``ctxstream.memory``. It acts on the
session's records before it: ``add`` is ADK's ``add_session_to_memory`` (with
ids, ``add_events_to_memory`` of events already appended), ``delete`` its
``delete_memory`` (ids: memory ids, i.e. event ids; none: every memory of the
session). The sink turns it into memory rows (ctxstream/memory/README.md,
"Modes and records"). Pure but :func:`fresh_memory_record` (a uuid and the clock):
id and timestamp are the caller's, so a test pins them.

Example::

    memory_record("acme/app/u1/s1", "delete", ["e1"], event_id="9f...", timestamp=1733130010.0)
    -> {"id": "9f...", "author": "ctxstream", "timestamp": 1733130010.0,
        "customMetadata": {"ctxstream": {"memory": {"action": "delete", "ids": ["e1"]}}}}
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable

from ctxstream.appends.deletion_record import checked_session_key
from ctxstream.errors import InvalidArgumentError
from schemas.event import MAX_ID_CHARS, Event
from schemas.memory_mark import (
    ACTIONS,
    MAX_MEMORY_IDS,
    MemoryAction,
    MemoryMark,
    memory_mark_event,
)


def checked_mark(action: object, ids: object) -> MemoryMark:
    """The mark of `action` on `ids` (None: every memory of the session).

    Raises:
        InvalidArgumentError: `action` is not ``add`` or ``delete``, or `ids` is not an
            iterable of 1 to :data:`~schemas.memory_mark.MAX_MEMORY_IDS` non-empty strings
            of at most :data:`~schemas.event.MAX_ID_CHARS` characters; the message names
            the argument.
    """
    checked_action: MemoryAction
    if action == "add":
        checked_action = "add"
    elif action == "delete":
        checked_action = "delete"
    else:
        raise InvalidArgumentError(f"action: {action!r}, expected one of {', '.join(ACTIONS)}")
    if ids is None:
        return MemoryMark(checked_action)
    if isinstance(ids, str | bytes) or not isinstance(ids, Iterable):
        raise InvalidArgumentError(
            f"ids: expected a list of memory ids (event ids), got {type(ids).__name__}"
        )
    listed = list(ids)
    if not 0 < len(listed) <= MAX_MEMORY_IDS:
        raise InvalidArgumentError(
            f"ids: {len(listed)} ids, expected 1 to {MAX_MEMORY_IDS} (None: all of the session)"
        )
    for index, memory_id in enumerate(listed):
        if not isinstance(memory_id, str) or not 0 < len(memory_id) <= MAX_ID_CHARS:
            raise InvalidArgumentError(
                f"ids[{index}]: expected a non-empty string of at most {MAX_ID_CHARS} characters"
            )
    return MemoryMark(checked_action, frozenset(listed))


def memory_record(
    session_key: object, action: object, ids: object = None, *, event_id: str, timestamp: float
) -> Event:
    """The memory record of `session_key` (checked as :func:`checked_mark` and the key).

    Raises:
        InvalidArgumentError: As :func:`checked_mark`, or the key is refused
            (the message starts with ``session_key:``).
    """
    checked_session_key(session_key)
    return memory_mark_event(checked_mark(action, ids), event_id=event_id, timestamp=timestamp)


def fresh_memory_record(session_key: object, action: object, ids: object = None) -> Event:
    """:func:`memory_record` with a fresh uuid as its id, stamped now."""
    return memory_record(session_key, action, ids, event_id=uuid.uuid4().hex, timestamp=time.time())
