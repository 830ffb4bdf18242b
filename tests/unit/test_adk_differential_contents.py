"""Regression cases found by differential testing of contents assembly against ADK 2.13.0.

Each case is vector-shaped (a ``contents`` ``input`` as in ``tests/conformance/vectors``)
and its ``expected`` value is what ADK 2.13.0 produced for that input when run
locally (recorded data, like the shared vectors). The core must reproduce it
through :func:`projections.conformance.actual_for`.
"""

from __future__ import annotations

import pytest

from projections.conformance import actual_for
from tests.unit.vector_json import Json, text_content, vector_event


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


_LOOKUP_SUMMARY = vector_event(
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
            "compactedContent": text_content("model", "Looked up x."),
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
                vector_event(
                    "e1", "inv1", "user", 100.0, text_content("user", "run it"), branch="root"
                ),
                vector_event(
                    "e2",
                    "inv1",
                    "agent",
                    101.0,
                    {"parts": [_call("c1", "wf_tool", {"q": "x"})], "role": "model"},
                    branch="root",
                ),
                vector_event(
                    "e3",
                    "inv1",
                    "agent",
                    102.0,
                    text_content("model", "step 1"),
                    branch="root.wf@tool@c1",
                ),
                vector_event(
                    "e4",
                    "inv1",
                    "agent",
                    103.0,
                    {"parts": [_response("c1", "wf_tool", {"result": "ok"})], "role": "user"},
                    branch="root",
                ),
                vector_event(
                    "e5", "inv1", "agent", 104.0, text_content("model", "done"), branch="root"
                ),
            ]
        ),
        [
            text_content("user", "run it"),
            {"parts": [_call("c1", "wf_tool", {"q": "x"})], "role": "model"},
            {"parts": [_response("c1", "wf_tool", {"result": "ok"})], "role": "user"},
            text_content("model", "done"),
        ],
    ),
    (
        # Compacted-call recovery: a response next to a call with its (reused)
        # id in the same event is owned by that event, so the summarized
        # earlier call e2 is not restored.
        "recovery-response-owned-by-call-in-its-own-event",
        _input(
            [
                vector_event("e1", "inv1", "user", 100.0, text_content("user", "look it up")),
                vector_event(
                    "e2",
                    "inv1",
                    "agent",
                    101.0,
                    {"parts": [_call("c1", "lookup", {"q": "x"})], "role": "model"},
                ),
                vector_event(
                    "e3",
                    "inv1",
                    "agent",
                    102.0,
                    {"parts": [_response("c1", "lookup", {"result": "ok"})], "role": "user"},
                ),
                _LOOKUP_SUMMARY,
                vector_event(
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
                vector_event(
                    "e5",
                    "inv2",
                    "agent",
                    105.0,
                    {"parts": [_response("c1", "search", {"result": "ok"})], "role": "user"},
                ),
            ]
        ),
        [
            text_content("model", "Looked up x."),
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
