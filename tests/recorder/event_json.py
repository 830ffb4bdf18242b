"""Small builders of ADK event JSON (camelCase, as vectors store it) for the scenarios.

The recorder passes every event through ADK's own ``Event.model_validate`` and
``model_dump`` before writing it, so these builders only set what a scenario
needs; ADK fills in its defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class VectorScenario:
    """One vector of the five ADK kinds: its name, intent and ``input``."""

    slug: str
    description: str
    input: Json


def content(role: str, *parts: Json | str) -> Json:
    """A content; a str part is a text part."""
    return {
        "role": role,
        "parts": [{"text": part} if isinstance(part, str) else part for part in parts],
    }


def thought(text: str) -> Json:
    """A thought part."""
    return {"text": text, "thought": True}


def fcall(name: str, args: Json | None, call_id: str | None) -> Json:
    """A function-call part."""
    call: Json = {"name": name}
    if args is not None:
        call["args"] = args
    if call_id is not None:
        call["id"] = call_id
    return {"functionCall": call}


def fresp(name: str, response: Json | None, call_id: str | None) -> Json:
    """A function-response part."""
    answer: Json = {"name": name}
    if response is not None:
        answer["response"] = response
    if call_id is not None:
        answer["id"] = call_id
    return {"functionResponse": answer}


def event(
    event_id: str,
    invocation: str,
    author: str,
    timestamp: float,
    body: Json | None = None,
    **extra: Any,
) -> Json:
    """One event; `extra` holds any other camelCase field (``branch``, ``actions``...)."""
    data: Json = {"id": event_id, "invocationId": invocation, "author": author}
    data["timestamp"] = timestamp
    if body is not None:
        data["content"] = body
    data.update(extra)
    return data


def user(event_id: str, invocation: str, timestamp: float, text: str, **extra: Any) -> Json:
    """A user message."""
    return event(event_id, invocation, "user", timestamp, content("user", text), **extra)


def reply(
    event_id: str,
    invocation: str,
    timestamp: float,
    text: str,
    author: str = "agent",
    tokens: int | None = None,
    **extra: Any,
) -> Json:
    """A model text reply, optionally reporting ``promptTokenCount``."""
    if tokens is not None:
        extra["usageMetadata"] = {"promptTokenCount": tokens, "candidatesTokenCount": 9}
    return event(event_id, invocation, author, timestamp, content("model", text), **extra)


def call(
    event_id: str,
    invocation: str,
    timestamp: float,
    name: str,
    args: Json | None,
    call_id: str | None,
    author: str = "agent",
    long_running: bool = False,
    tokens: int | None = None,
    **extra: Any,
) -> Json:
    """A model event with one function call."""
    if long_running and call_id is not None:
        extra["longRunningToolIds"] = [call_id]
    if tokens is not None:
        extra["usageMetadata"] = {"promptTokenCount": tokens}
    return event(
        event_id,
        invocation,
        author,
        timestamp,
        content("model", fcall(name, args, call_id)),
        **extra,
    )


def response(
    event_id: str,
    invocation: str,
    timestamp: float,
    name: str,
    answer: Json | None,
    call_id: str | None,
    author: str = "agent",
    **extra: Any,
) -> Json:
    """A function-response event (role ``user``), authored by the calling agent by default."""
    return event(
        event_id,
        invocation,
        author,
        timestamp,
        content("user", fresp(name, answer, call_id)),
        **extra,
    )


def summary(
    event_id: str,
    timestamp: float,
    start: float,
    end: float,
    text: str,
    **extra: Any,
) -> Json:
    """A summary event shaped like ADK's summarizer output (author user, no content)."""
    actions = dict(extra.pop("actions", {}))
    actions["compaction"] = {
        "startTimestamp": start,
        "endTimestamp": end,
        "compactedContent": content("model", text),
    }
    return event(event_id, f"cmp-{event_id}", "user", timestamp, actions=actions, **extra)


def rewind(event_id: str, timestamp: float, target: str, **state: Any) -> Json:
    """A rewind event annulling invocation `target` and everything after it."""
    return event(
        event_id,
        f"rw-{event_id}",
        "user",
        timestamp,
        actions={"rewindBeforeInvocationId": target, "stateDelta": state},
    )


def state_only(event_id: str, invocation: str, timestamp: float, **delta: Any) -> Json:
    """A content-less event carrying only a state delta."""
    return event(event_id, invocation, "agent", timestamp, actions={"stateDelta": delta})


def chat(
    turns: int,
    *,
    first: int = 1,
    start: float = 100.0,
    number: int | None = None,
    author: str = "agent",
) -> list[Json]:
    """Invocations ``inv<first>``.. of a question and a reply, one second apart from `start`.

    Event ids run from ``e<number>`` (default ``2 * first - 1``, so that
    consecutive calls line up: ``chat(2)`` then ``chat(1, first=3, ...)``).
    """
    events: list[Json] = []
    next_number = 2 * first - 1 if number is None else number
    for turn in range(first, first + turns):
        clock = start + 2 * (turn - first)
        events.append(user(f"e{next_number}", f"inv{turn}", clock, f"question {turn}"))
        events.append(
            reply(f"e{next_number + 1}", f"inv{turn}", clock + 1, f"answer {turn}", author)
        )
        next_number += 2
    return events


def renumbered(events: list[Json]) -> list[Json]:
    """`events` with ids ``e1``.. in stream order (summaries and rewinds keep their id prefixes).

    Lets a scenario concatenate pieces built with overlapping ids.
    """
    out: list[Json] = []
    for number, original in enumerate(events, start=1):
        renamed = dict(original, id=f"e{number}")
        invocation = str(original.get("invocationId", ""))
        for prefix in ("cmp-", "rw-"):
            if invocation.startswith(prefix):
                renamed["invocationId"] = f"{prefix}e{number}"
        out.append(renamed)
    return out
