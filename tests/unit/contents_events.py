"""Builders for hand-written sessions in the contents-assembly unit tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from projections.contents import ContentsRequest, build_contents
from schemas.event import Event, content_to_json

Json = dict[str, Any]


def text(value: str, **fields: Any) -> Json:
    return {"text": value, **fields}


def thought(value: str) -> Json:
    return {"text": value, "thought": True}


def call(call_id: str | None, name: str = "tool", args: Json | None = None) -> Json:
    body: Json = {"name": name, "args": {} if args is None else args}
    if call_id is not None:
        body["id"] = call_id
    return {"functionCall": body}


def resp(call_id: str | None, name: str = "tool", response: Json | None = None) -> Json:
    body: Json = {"name": name, "response": {"ok": 1} if response is None else response}
    if call_id is not None:
        body["id"] = call_id
    return {"functionResponse": body}


def event(
    event_id: str,
    author: str,
    timestamp: float,
    parts: Sequence[Json] | None = None,
    *,
    role: str | None = None,
    inv: str = "inv1",
    **fields: Any,
) -> Event:
    """An event; the content role defaults to user for "user", model otherwise."""
    data: Json = {"id": event_id, "invocationId": inv, "author": author, "timestamp": timestamp}
    if parts is not None:
        data["content"] = {
            "role": role or ("user" if author == "user" else "model"),
            "parts": list(parts),
        }
    data.update(fields)
    return Event.model_validate(data)


def summary(event_id: str, start: float, end: float, timestamp: float, value: str) -> Event:
    return Event.model_validate(
        {
            "id": event_id,
            "invocationId": f"cmp-{event_id}",
            "author": "user",
            "timestamp": timestamp,
            "actions": {
                "compaction": {
                    "startTimestamp": start,
                    "endTimestamp": end,
                    "compactedContent": {"role": "model", "parts": [{"text": value}]},
                }
            },
        }
    )


def contents(events: Sequence[Event], **request: Any) -> list[Json]:
    """build_contents as genai JSON, for agent "agent" unless told otherwise."""
    request.setdefault("agent_name", "agent")
    return [content_to_json(c) for c in build_contents(events, ContentsRequest(**request))]


def texts(events: Sequence[Event], **request: Any) -> list[str]:
    """Each content as ``role:text|text`` (calls as ``call(id)``, responses as ``resp(id)``)."""
    rendered: list[str] = []
    for content in contents(events, **request):
        pieces: list[str] = []
        for part in content["parts"]:
            if "functionCall" in part:
                pieces.append(f"call({part['functionCall'].get('id')})")
            elif "functionResponse" in part:
                fr = part["functionResponse"]
                pieces.append(f"resp({fr.get('id')}={fr.get('response')})")
            else:
                pieces.append(str(part.get("text")))
        rendered.append(f"{content['role']}:{'|'.join(pieces)}")
    return rendered
