"""Small builders for hand-written events in unit tests of the compaction core."""

from __future__ import annotations

import math
from typing import Any

from schemas.event import Event


def text_event(
    event_id: str,
    invocation_id: str,
    timestamp: float,
    text: str = "x",
    *,
    author: str = "user",
    **fields: Any,
) -> Event:
    """A plain text event; role follows the author (user or model)."""
    role = "user" if author == "user" else "model"
    data: dict[str, Any] = {
        "id": event_id,
        "invocation_id": invocation_id,
        "author": author,
        "timestamp": timestamp,
        "content": {"role": role, "parts": [{"text": text}]},
    }
    data.update(fields)
    return Event.model_validate(data)


def summary_event(
    event_id: str, start: float, end: float, timestamp: float, text: str = "sum", **fields: Any
) -> Event:
    """A summary event shaped like ADK's: author user, no content.

    A NaN or infinite bound is set after validation: the schema refuses
    non-finite numbers, so none comes through the codec, but the core still
    treats them as ADK does and its tests build them.
    """
    finite = math.isfinite(start) and math.isfinite(end)
    data: dict[str, Any] = {
        "id": event_id,
        "invocation_id": f"cmp-{event_id}",
        "author": "user",
        "timestamp": timestamp,
        "actions": {
            "compaction": {
                "start_timestamp": start if finite else 0.0,
                "end_timestamp": end if finite else 0.0,
                "compacted_content": {"role": "model", "parts": [{"text": text}]},
            }
        },
    }
    data.update(fields)
    event = Event.model_validate(data)
    compaction = event.actions.compaction
    if finite or compaction is None:
        return event
    bounds = {"start_timestamp": start, "end_timestamp": end}
    actions = event.actions.model_copy(update={"compaction": compaction.model_copy(update=bounds)})
    return event.model_copy(update={"actions": actions})


def rewind_event(event_id: str, target: str, timestamp: float) -> Event:
    """A rewind event annulling invocation `target` and what follows it."""
    return Event.model_validate(
        {
            "id": event_id,
            "invocation_id": f"rw-{event_id}",
            "author": "user",
            "timestamp": timestamp,
            "actions": {"rewind_before_invocation_id": target},
        }
    )


def call_event(
    event_id: str,
    invocation_id: str,
    timestamp: float,
    call_id: str,
    name: str = "tool",
    **fields: Any,
) -> Event:
    """A model event with one function call."""
    data: dict[str, Any] = {
        "id": event_id,
        "invocation_id": invocation_id,
        "author": "agent",
        "timestamp": timestamp,
        "content": {
            "role": "model",
            "parts": [{"function_call": {"id": call_id, "name": name, "args": {}}}],
        },
    }
    data.update(fields)
    return Event.model_validate(data)


def response_event(
    event_id: str,
    invocation_id: str,
    timestamp: float,
    call_id: str,
    name: str = "tool",
    **fields: Any,
) -> Event:
    """A tool-result event answering `call_id`."""
    data: dict[str, Any] = {
        "id": event_id,
        "invocation_id": invocation_id,
        "author": "agent",
        "timestamp": timestamp,
        "content": {
            "role": "user",
            "parts": [{"function_response": {"id": call_id, "name": name, "response": {"ok": 1}}}],
        },
    }
    data.update(fields)
    return Event.model_validate(data)


def bare_event(event_id: str, invocation_id: str, timestamp: float, **fields: Any) -> Event:
    """An event authored ``agent`` with only the given fields (snake_case names)."""
    return Event.model_validate(
        {
            "id": event_id,
            "invocation_id": invocation_id,
            "author": "agent",
            "timestamp": timestamp,
            **fields,
        }
    )


def ids(events: list[Event]) -> list[str]:
    """The ids of `events`, in order."""
    return [event.id for event in events]
