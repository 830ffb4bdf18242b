"""Spec audit, ``include_contents="none"`` (reference §9).

Every scenario is built from the reference text; the expected request
contents were worked out by hand from the rules, not by running the code.
"""

from __future__ import annotations

from typing import Any

from projections.other_agents import OTHER_AGENT_PREAMBLE, QUOTE_BEGIN, QUOTE_END
from schemas.event import Event
from tests.unit.contents_events import call, contents, event, resp, summary, text, texts

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
        summary("s1", 100, 100, 102, "sum"),
        event("e3", "agent", 103, [text("more")]),
    ]
    assert _none(events) == ["model:sum", "model:more"]
