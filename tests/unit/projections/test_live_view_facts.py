"""The live view's per-event predicates, against ADK 2.13.0's rules written out by hand.

Each expectation is the rule of the ADK reader the predicate stands for: the ids
``_get_contents`` and the compaction selections pair events by, the task input
``_build_task_input_user_content`` reads (the first call of the scope's id with
arguments), the summaries ``_should_include_event_in_context`` lets every reader
see, the turn anchors ``_get_current_turn_contents`` accepts for every reader of a
scope, and the events ``find_agent_to_run``'s event filter takes as replies.
"""

from __future__ import annotations

from typing import Any

import pytest

from projections.live_view import event_facts as facts
from schemas.event import Event
from tests.support.events import bare_event, call, event, resp, summary_event, text, thought

USER_NODE = {"path": "wf/node"}


def test_named_ids_gathers_calls_responses_long_running_requests_and_branch_refs() -> None:
    named = event(
        "e1",
        "agent",
        1.0,
        [call("c1"), resp("r1"), call(None)],
        branch="wf@tool@b1.sub",
        long_running_tool_ids=["l1"],
        actions={
            "requested_tool_confirmations": {"k1": {"hint": "go?"}},
            "requested_auth_configs": {"a1": {}},
        },
    )
    assert facts.named_ids(named) == {"c1", "r1", "l1", "k1", "a1", "b1"}


def test_a_task_input_is_a_call_with_an_id_and_arguments() -> None:
    calls = event(
        "e1",
        "agent",
        1.0,
        [call("with", args={"task": "x"}), call("bare"), call(None, args={"task": "y"})],
    )
    assert facts.task_call_ids(calls) == {"with"}


def test_only_a_summary_masks() -> None:
    assert not facts.is_masking_summary(event("e1", "user", 1.0, [text("hello")]))


@pytest.mark.parametrize(
    ("author", "parts", "masks"),
    [
        ("user", None, False),  # a user event on another node: hidden from this reader
        ("agent", None, True),  # the node rule is for user input only
        ("user", [resp("c1")], True),  # a user event with a response is never node input
    ],
)
def test_a_summary_on_a_workflow_node_masks_unless_it_is_user_input(
    author: str, parts: list[dict[str, object]] | None, masks: bool
) -> None:
    summary = summary_event("s", 1.0, 2.0, 3.0, author=author, node_info=USER_NODE)
    if parts is not None:
        content = {"role": "user", "parts": parts}
        summary = Event.model_validate({**summary.model_dump(by_alias=True), "content": content})
    assert facts.is_masking_summary(summary) is masks


def _user(parts: list[dict[str, Any]], **fields: Any) -> Event:
    return event("e1", "user", 1.0, parts, **fields)


@pytest.mark.parametrize(
    ("candidate", "starts"),
    [
        (_user([text("question")]), True),
        (summary_event("s", 1.0, 2.0, 3.0), True),  # a summary is user-authored and shown
        (event("e1", "agent", 1.0, [text("answer")]), False),  # not a start for its author
        (_user([text("question")], branch="a"), False),  # readers on other branches skip it
        (_user([text("question")], node_info=USER_NODE), False),  # other nodes skip it
        (_user([thought("thinking")]), False),  # a user's thoughts are hidden: empty
        (_user([text("go")], actions={"transfer_to_agent": "helper"}), False),
        (_user([call("t1", "transfer_to_agent")]), False),
        (_user([resp("c1")]), False),  # a posted-back tool result continues the turn
        (_user([call("k1", "adk_request_confirmation")]), False),  # framework traffic
    ],
)
def test_a_turn_starts_at_a_user_message_every_reader_of_its_scope_sees(
    candidate: Event, starts: bool
) -> None:
    assert facts.is_turn_start(candidate) is starts


ABORTED = "INVOCATION_ABORTED"


@pytest.mark.parametrize(
    ("candidate", "replies"),
    [
        (event("e1", "helper", 1.0, [text("hi")]), True),
        (bare_event("e1", "i1", 1.0, author="root", actions={"transfer_to_agent": "x"}), True),
        (event("e1", "helper", 1.0, [text("partial")], error_code="MODEL_ERROR"), True),
        (bare_event("e1", "i1", 1.0, author="helper", error_code="NODE_FAILED"), False),
        (event("e1", "user", 1.0, [text("hi")]), False),
        (event("e1", "helper", 1.0, [text("stopped")], error_code=ABORTED), False),
        (bare_event("e1", "i1", 1.0, author="helper", actions={"end_of_agent": True}), False),
        (bare_event("e1", "i1", 1.0, author="helper", actions={"agent_state": {"n": 1}}), False),
    ],
)
def test_the_router_takes_agent_events_but_user_aborts_state_changes_and_bare_errors(
    candidate: Event, replies: bool
) -> None:
    assert facts.is_agent_reply(candidate) is replies
