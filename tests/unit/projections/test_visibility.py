"""Inclusion rules of contents assembly (reference §8.2), through build_contents."""

from __future__ import annotations

import pytest

from projections.contents.assembly import ContentsRequest
from projections.contents.visibility import (
    is_included,
    is_on_visible_branch,
    is_tool_progress,
    is_workflow_user_input,
)
from tests.support.contents import texts
from tests.support.events import call, event, resp, text, thought


def test_partial_events_are_not_filtered() -> None:
    # Deliberate ADK quirk (§14.7): the assembler keeps streaming chunks.
    events = [
        event("e1", "user", 100, [text("hi")]),
        event("e2", "agent", 101, [text("Hel")], partial=True),
        event("e3", "agent", 102, [text("Hello")]),
    ]
    assert texts(events) == ["user:hi", "model:Hel", "model:Hello"]


def test_branch_lookalike_segment_is_hidden() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "child", 101, [text("sibling says")], branch="a.child"),
        event("e3", "child000", 102, [text("mine")], branch="a.child000"),
        event("e4", "root", 103, [text("parent says")], branch="a"),
    ]
    got = texts(events, agent_name="child000", current_branch="a.child000")
    assert got[0] == "user:go"
    assert got[1] == "model:mine"
    assert len(got) == 3  # the parent's event is visible (quoted), the lookalike sibling not
    assert "[root] said:" in got[2]
    assert not any("sibling says" in line for line in got)


def test_branch_rules_segment_wise() -> None:
    def visible(event_branch: str | None, current: str | None) -> bool:
        return is_on_visible_branch(event("e", "a", 1, [text("x")], branch=event_branch), current)

    assert visible("a.b", "a.b")
    assert visible("a", "a.b.c")  # ancestor
    assert not visible("a.b.c", "a.b")  # descendant
    assert not visible("a.c", "a.b")  # sibling
    assert not visible("a.b", "a.b0")  # lookalike prefix
    assert visible(None, "a.b")
    assert visible("x.y", None)
    assert visible("x.y", "")


def test_scope_must_match_exactly() -> None:
    events = [
        event("e1", "user", 100, [text("unscoped")]),
        event("e2", "agent", 101, [text("scoped")], isolationScope="fc-1"),
    ]
    assert texts(events) == ["user:unscoped"]
    assert texts(events, isolation_scope="fc-1") == ["model:scoped"]


def test_empty_events_are_dropped() -> None:
    no_role = event("e5", "agent", 104, [text("no role")])
    assert no_role.content is not None
    no_role = no_role.model_copy(
        update={"content": no_role.content.model_copy(update={"role": None})}
    )
    events = [
        event("e1", "user", 100, [text("keep")]),
        event("e2", "agent", 101, None, actions={"stateDelta": {"k": 1}}),  # state only
        event("e3", "agent", 102, []),  # parts: []
        event("e4", "agent", 103, [text("")]),  # empty text
        no_role,
        event("e6", "agent", 105, [thought("thinking")]),  # own thought only
        event("e7", "agent", 106, [text("tail")]),
    ]
    assert texts(events) == ["user:keep", "model:tail"]


def test_own_thought_beside_text_is_kept_in_the_copy() -> None:
    events = [event("e1", "agent", 100, [thought("plan"), text("answer")])]
    assert texts(events) == ["model:plan|answer"]


def test_framework_auth_and_confirmation_events_are_dropped_whole() -> None:
    events = [
        event("e1", "user", 100, [text("go")]),
        event("e2", "agent", 101, [text("let me"), call("adk-a", "adk_request_credential")]),
        event("e3", "user", 102, [resp("adk-a", "adk_request_credential")]),
        event("e4", "agent", 103, [call("f1", "adk_framework")]),
        event("e5", "agent", 104, [text("done")]),
    ]
    assert texts(events) == ["user:go", "model:done"]


def test_workflow_user_input_for_a_node_is_dropped() -> None:
    events = [
        event("e1", "user", 100, [text("for node")], nodeInfo={"path": "wf@1/node@2"}),
        event("e2", "user", 101, [text("plain")]),
        event("e3", "user", 102, [resp("c1")], nodeInfo={"path": "wf@1/node@2"}),
    ]
    request = ContentsRequest(agent_name="agent")
    assert not is_included(events[0], request, frozenset())
    assert is_included(events[1], request, frozenset())
    assert is_included(events[2], request, frozenset())  # carries a function response


@pytest.mark.parametrize("path", ["wf@1/node@2", "node", "XXXX"])
def test_outside_a_workflow_user_input_at_any_node_path_is_workflow_input(path: str) -> None:
    # The current node path defaults to "": every non-empty path is another node's.
    addressed = event("e1", "user", 100, [text("for node")], nodeInfo={"path": path})
    assert is_workflow_user_input(addressed)
    assert not is_workflow_user_input(event("e2", "user", 101, [text("plain")]))
    assert not is_workflow_user_input(addressed, node_path=path)


def test_tool_progress_hidden_even_without_current_branch() -> None:
    events = [
        event("e1", "user", 100, [text("run")]),
        event("e2", "agent", 101, [call("w1", "wf_tool")], branch="agent"),
        event("e3", "agent", 102, [text("step 1")], branch="agent.wf_tool@w1"),
        event("e4", "agent", 103, [resp("w1", "wf_tool")], role="user", branch="agent"),
        event("e5", "agent", 104, [text("run 1")], branch="agent.wf@1"),  # 1 is no call id
    ]
    got = texts(events, current_branch=None)
    assert got == ["user:run", "model:call(w1)", "user:resp(w1={'ok': 1})", "model:run 1"]


def test_tool_progress_ignores_segments_named_after_the_agent() -> None:
    progress = event("e", "agent", 1, [text("x")], branch="root.agent@c1")
    assert not is_tool_progress(progress, "root", "agent", {"c1"})
    assert is_tool_progress(progress, "root", "other", {"c1"})
    assert not is_tool_progress(progress, "root", "other", {"c2"})
    assert not is_tool_progress(progress, "root.agent@c1", "other", {"c1"})  # not strictly below


def test_an_event_beside_the_current_branch_is_no_tool_progress() -> None:
    # b.tool@c1 is not below a: the rule is only about events below the current branch.
    beside = event("p1", "agent", 1.0, [text("progress")], branch="b.tool@c1")
    assert not is_tool_progress(beside, "a", "agent", {"c1"})
    below = event("p2", "agent", 1.0, [text("progress")], branch="a.tool@c1")
    assert is_tool_progress(below, "a", "agent", {"c1"})
