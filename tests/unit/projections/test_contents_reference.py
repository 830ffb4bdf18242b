"""Contents assembly against the reference: ``include_contents="none"`` (§9), and ADK's own cases.

The ``none``-mode scenarios are built from the reference text; the expected
request contents were worked out by hand from the rules, not by running the
code. The differential cases are vector-shaped (a ``contents`` ``input`` as in
``tests/conformance/vectors``) and expect what ADK 2.13.0 produced for that
input when run locally (recorded data, like the shared vectors); the core must
reproduce it through :func:`projections.conformance.actual_for`.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.conformance import actual_for
from projections.contents.other_agents import OTHER_AGENT_PREAMBLE, QUOTE_BEGIN, QUOTE_END
from schemas.event import Event
from tests.support.contents import contents, texts
from tests.support.events import call, event, resp, summary_event, text
from tests.support.vectors import Json, text_content, vector_event

BEGIN, END = QUOTE_BEGIN, QUOTE_END


def _none(events: list[Event], **request: Any) -> list[str]:
    return texts(events, include_contents="none", **request)


def test_anchor_is_searched_before_rewinds_so_a_rewound_turn_can_survive() -> None:
    events = [
        event("e1", "user", 100, [text("first")], inv="inv1"),
        event("e2", "agent", 101, [text("reply")], inv="inv1"),
        event("e3", "user", 102, [text("second")], inv="inv2"),
        event("rw", "user", 103, None, inv="rw-1", actions={"rewindBeforeInvocationId": "inv1"}),
    ]
    # Default mode: everything from inv1 on is rewound.
    assert texts(events) == []
    # None mode: the rewind event is empty, "second" anchors; inside the
    # slice inv1 is unknown, so only the rewind event goes.
    assert _none(events) == ["user:second"]


def test_owed_result_pulls_the_slice_back_to_its_call() -> None:
    events = [
        event("e1", "user", 100, [text("start job")], inv="inv1"),
        event("e2", "agent", 101, [call("lr", "job")], inv="inv1", longRunningToolIds=["lr"]),
        event("e3", "user", 102, [text("meanwhile")], inv="inv2"),
        event("e4", "agent", 103, [text("sure")], inv="inv2"),
        event("e5", "user", 104, [resp("lr", "job", {"r": 1})], inv="inv3"),
    ]
    # The latest-response rearrangement then drops everything after the call.
    assert _none(events) == ["user:start job", "model:call(lr)", "user:resp(lr={'r': 1})"]


def test_owed_call_made_by_another_agent_lets_that_event_anchor() -> None:
    events = [
        event("e1", "user", 100, [text("q")]),
        event("e2", "helper", 101, [call("h1", "approve")], longRunningToolIds=["h1"]),
        event("e3", "user", 102, [text("in between")], inv="inv2"),
        event("e4", "user", 103, [resp("h1", "approve", {"ok": True})], inv="inv3"),
    ]
    # Walking back: e4 owes h1 (not an anchor); e3 cannot anchor while h1 is
    # owed; e2 first pays h1, then anchors as another agent's reply.
    got = contents(events, include_contents="none")
    assert got == [
        {
            "role": "user",
            "parts": [
                {"text": OTHER_AGENT_PREAMBLE},
                {"text": f"[helper] called tool `approve` with parameters:\n{BEGIN}\n{{}}\n{END}"},
            ],
        },
        {"role": "user", "parts": [{"text": "in between"}]},
        {
            "role": "user",
            "parts": [
                {"text": OTHER_AGENT_PREAMBLE},
                {"text": f"[user] `approve` tool returned result:\n{BEGIN}\n{{'ok': True}}\n{END}"},
            ],
        },
    ]


def test_transfer_by_action_or_call_is_no_anchor() -> None:
    events = [
        event("e1", "user", 100, [text("need billing")]),
        event("e2", "root", 101, [text("handing over")], actions={"transferToAgent": "billing"}),
        event("e3", "root", 102, [call("t1", "transfer_to_agent", {"agent_name": "billing"})]),
    ]
    got = _none(events, agent_name="billing")
    assert got[0] == "user:need billing"
    assert len(got) == 3  # both transfer events are kept as quoted context
    assert "[root] said:" in got[1]
    assert "[root] called tool `transfer_to_agent`" in got[2]


def test_anchor_must_pass_the_inclusion_filter() -> None:
    events = [
        event("e1", "user", 100, [text("real")]),
        event("e2", "user", 101, [text("other branch")], branch="root.sib"),
        event("e3", "user", 102, [text("for a node")], nodeInfo={"path": "wf@1/n@1"}),
        event("e4", "user", 103, [text("scoped")], isolationScope="fc-9"),
        event("e5", "user", 104, None, actions={"stateDelta": {"k": 1}}),
        event("e6", "user", 105, [resp("nobody")]),
    ]
    assert _none(events, current_branch="root.me") == ["user:real"]


def test_tool_progress_of_another_agent_is_no_anchor() -> None:
    events = [
        event("e1", "user", 100, [text("run")]),
        event("e2", "agent", 101, [call("w1", "wf")]),
        event("e3", "agent", 102, [resp("w1", "wf")], role="user"),
        event("e4", "worker", 103, [text("step")], branch="wf@w1"),
    ]
    assert _none(events, current_branch=None) == [
        "user:run",
        "model:call(w1)",
        "user:resp(w1={'ok': 1})",
    ]


def test_empty_agent_name_anchors_only_on_user_events() -> None:
    events = [
        event("e1", "user", 100, [text("q")]),
        event("e2", "helper", 101, [text("helper says")]),
    ]
    assert _none(events, agent_name="") == ["user:q", "model:helper says"]
    got = _none(events, agent_name="writer")
    assert len(got) == 1
    assert "[helper] said:" in got[0]


def test_own_messages_are_never_anchors() -> None:
    events = [
        event("e1", "agent", 100, [text("one")]),
        event("e2", "agent", 101, [text("two")]),
    ]
    assert _none(events) == []


def test_summary_after_the_user_message_is_the_anchor() -> None:
    events = [
        event("e1", "user", 100, [text("question")]),
        event("e2", "agent", 101, [text("answer")]),
        summary_event("s1", 100, 100, 102, "sum"),
        event("e3", "agent", 103, [text("more")]),
    ]
    assert _none(events) == ["model:sum", "model:more"]


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
