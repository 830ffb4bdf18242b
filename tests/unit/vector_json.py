"""Events and contents as ADK's conformance vectors serialize them, for vector-shaped tests."""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]


def vector_event(
    event_id: str,
    invocation_id: str,
    author: str,
    timestamp: float,
    content: Json | None = None,
    **fields: Any,
) -> Json:
    """An event as the vectors serialize it (camelCase, container defaults present)."""
    event: Json = {
        "actions": {
            "artifactDelta": {},
            "requestedAuthConfigs": {},
            "requestedToolConfirmations": {},
            "stateDelta": {},
        },
        "author": author,
        "id": event_id,
        "invocationId": invocation_id,
        "nodeInfo": {"path": ""},
        "timestamp": timestamp,
        **fields,
    }
    if content is not None:
        event["content"] = content
    return event


def text_content(role: str, text: str) -> Json:
    """A one-part text content."""
    return {"parts": [{"text": text}], "role": role}
