"""Regression cases found by differential testing of contents assembly against ADK 2.13.0.

Each case is vector-shaped (a ``contents`` ``input`` as in ``../shared/conformance``)
and its ``expected`` value is what ADK 2.13.0 produced for that input when run
locally (recorded data, like the shared vectors). The core must reproduce it
through :func:`projections.conformance.actual_for`.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.conformance import actual_for

Json = dict[str, Any]


def _event(
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


def _text(role: str, text: str) -> Json:
    return {"parts": [{"text": text}], "role": role}


def _call(call_id: str, name: str, args: Json) -> Json:
    return {"functionCall": {"args": args, "id": call_id, "name": name}}


def _response(call_id: str, name: str, response: Json) -> Json:
    return {"functionResponse": {"id": call_id, "name": name, "response": response}}


def _input(events: list[Json]) -> Json:
    return {
        "events": events,
        "agent_name": "agent",
        "current_branch": None,
        "include_contents": "default",
        "preserve_function_call_ids": False,
        "include_thoughts_from_other_agents": False,
        "isolation_scope": None,
    }


_LOOKUP_SUMMARY = _event(
    "s1",
    "cmp-s1",
    "user",
    103.0,
    actions={
        "artifactDelta": {},
        "requestedAuthConfigs": {},
        "requestedToolConfirmations": {},
        "stateDelta": {},
        "compaction": {
            "startTimestamp": 100.0,
            "endTimestamp": 102.0,
            "compactedContent": _text("model", "Looked up x."),
        },
    },
)

CASES: list[tuple[str, Json, list[Json]]] = [
    (
        # A tool-progress segment's call id is what follows its LAST "@":
        # `wf@tool@c1` names call c1 (recorded), so the event is progress.
        "tool-progress-call-id-after-last-at",
        _input(
            [
                _event("e1", "inv1", "user", 100.0, _text("user", "run it"), branch="root"),
                _event(
                    "e2",
                    "inv1",
                    "agent",
                    101.0,
                    {"parts": [_call("c1", "wf_tool", {"q": "x"})], "role": "model"},
                    branch="root",
                ),
                _event(
                    "e3", "inv1", "agent", 102.0, _text("model", "step 1"), branch="root.wf@tool@c1"
                ),
                _event(
                    "e4",
                    "inv1",
                    "agent",
                    103.0,
                    {"parts": [_response("c1", "wf_tool", {"result": "ok"})], "role": "user"},
                    branch="root",
                ),
                _event("e5", "inv1", "agent", 104.0, _text("model", "done"), branch="root"),
            ]
        ),
        [
            _text("user", "run it"),
            {"parts": [_call("c1", "wf_tool", {"q": "x"})], "role": "model"},
            {"parts": [_response("c1", "wf_tool", {"result": "ok"})], "role": "user"},
            _text("model", "done"),
        ],
    ),
    (
        # Compacted-call recovery: a response next to a call with its (reused)
        # id in the same event is owned by that event, so the summarized
        # earlier call e2 is not restored.
        "recovery-response-owned-by-call-in-its-own-event",
        _input(
            [
                _event("e1", "inv1", "user", 100.0, _text("user", "look it up")),
                _event(
                    "e2",
                    "inv1",
                    "agent",
                    101.0,
                    {"parts": [_call("c1", "lookup", {"q": "x"})], "role": "model"},
                ),
                _event(
                    "e3",
                    "inv1",
                    "agent",
                    102.0,
                    {"parts": [_response("c1", "lookup", {"result": "ok"})], "role": "user"},
                ),
                _LOOKUP_SUMMARY,
                _event(
                    "e4",
                    "inv2",
                    "agent",
                    104.0,
                    {
                        "parts": [
                            _response("c1", "lookup", {"result": "late"}),
                            _call("c1", "search", {"q": "y"}),
                        ],
                        "role": "model",
                    },
                ),
                _event(
                    "e5",
                    "inv2",
                    "agent",
                    105.0,
                    {"parts": [_response("c1", "search", {"result": "ok"})], "role": "user"},
                ),
            ]
        ),
        [
            _text("model", "Looked up x."),
            {"parts": [_call("c1", "search", {"q": "y"})], "role": "model"},
            {"parts": [_response("c1", "search", {"result": "ok"})], "role": "user"},
        ],
    ),
]


@pytest.mark.parametrize(
    ("vector_input", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_matches_adk(vector_input: Json, expected: list[Json]) -> None:
    assert actual_for({"kind": "contents", "input": vector_input}) == {"contents": expected}
