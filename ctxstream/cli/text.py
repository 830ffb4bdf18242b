"""Contents and events as the ``context`` and ``expand`` commands print them: text or JSON.

Text is for people: one heading line per content (its position and role) or
per event (its timestamp, author, invocation and id), then one indented line
per part: a text as it is (each of its lines indented), a thought marked as
one, a tool call or response as its name and JSON, any other part as its
JSON. JSON is for programs: the contents as one array, an event per line, each
exactly as the client decoded it (camelCase, ``None`` fields left out).

Example (text)::

    [1] user
        Where is my order?
    [2] model
        call lookup_order {"order":42}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import orjson

from schemas.event import Content, Event, Part, content_to_json

#: How far a part's lines are indented under their heading.
INDENT = "    "


def contents_text(contents: Sequence[Content]) -> str:
    """`contents` as text: ``[n] role`` and the parts of each, in order."""
    lines: list[str] = []
    for number, content in enumerate(contents, start=1):
        lines.append(f"[{number}] {content.role or '(no role)'}")
        lines.extend(_parts_lines(content.parts or []))
    return "".join(f"{line}\n" for line in lines)


def contents_json(contents: Sequence[Content]) -> bytes:
    """`contents` as one JSON array and a newline."""
    return orjson.dumps([content_to_json(content) for content in contents]) + b"\n"


def events_text(events: Iterable[Event]) -> str:
    """`events` as text: a heading per event, then its content's parts."""
    lines: list[str] = []
    for event in events:
        lines.append(
            f"@{event.timestamp} {event.author} invocation={event.invocation_id} id={event.id}"
        )
        if event.content is None:
            lines.append(f"{INDENT}(no content)")
        else:
            lines.extend(_parts_lines(event.content.parts or []))
    return "".join(f"{line}\n" for line in lines)


def events_json(events: Iterable[Event]) -> bytes:
    """`events` as JSON lines, one event a line."""
    return b"".join(
        orjson.dumps(event.model_dump(mode="json", by_alias=True, exclude_none=True)) + b"\n"
        for event in events
    )


def _parts_lines(parts: Sequence[Part]) -> list[str]:
    if not parts:
        return [f"{INDENT}(no parts)"]
    return [f"{INDENT}{line}" for part in parts for line in _part_text(part).splitlines() or [""]]


def _part_text(part: Part) -> str:
    if part.function_call is not None:
        call = part.function_call
        return f"call {call.name} {_json(call.args or {})}"
    if part.function_response is not None:
        response = part.function_response
        return f"response {response.name} {_json(response.response or {})}"
    if part.text is not None:
        return f"thought: {part.text}" if part.thought else part.text
    return _json(part.model_dump(mode="json", by_alias=True, exclude_none=True))


def _json(value: object) -> str:
    return orjson.dumps(value).decode()
