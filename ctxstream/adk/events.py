"""ADK ``Event`` <-> the event JSON ctxstream stores, by ADK's own pydantic model. Pure.

Out: ADK's dump (camelCase aliases, ``exclude_none``, JSON mode), with the state delta first
made JSON-safe the way ADK's database service makes it (``_session_util``: rich values
serialized, an unserializable one stringified with a warning). In: ``Event.model_validate``
of the stored JSON; a row the sink stored lossy (its text held NUL) is read from the
record's exact bytes instead. Every event the Runner produces round-trips ``==``.

Example::

    event_json(Event(author="user", invocation_id="i1", id="e1", timestamp=1.0))
    -> {"invocationId": "i1", "author": "user", "actions": {...}, "id": "e1", "timestamp": 1.0}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from google.adk.events.event import Event

from ctxstream.adk.state import json_safe


def event_json(event: Event) -> dict[str, Any]:
    """`event` as the JSON object appended to the log (its state delta made JSON-safe)."""
    delta = event.actions.state_delta if event.actions else None
    if delta:
        actions = event.actions.model_copy(update={"state_delta": json_safe(delta)})
        event = event.model_copy(update={"actions": actions})
    return event.model_dump(by_alias=True, exclude_none=True, mode="json")


def stored_event(event: Mapping[str, Any] | str, raw: bytes | None) -> Event:
    """The ADK event a read-model row holds: its JSON (an object or its text) or the record's.

    `raw`: the record's exact bytes, for a lossy row (its text held NUL).
    """
    if raw is not None:
        event = orjson.loads(raw)["event"]
    elif isinstance(event, str):
        event = orjson.loads(event)
    return Event.model_validate(event)
