"""The agent a read without one is for: ADK's router, folded one event at a time.

The property compares the fold with an oracle written apart from it
(:mod:`tests.support.next_agent_oracle`) after every prefix of random event
lists; the examples pin each rule, so that a plausible slip (the first
author instead of the newest, ``user`` counted as an agent, an agent's own
tool answer routed as the user's, an abort seal taken for a reply) fails.
"""

from __future__ import annotations

from typing import Any, Final

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projections.contents.next_agent import NextAgentTrail, agent_to_run, note_event, trail_of
from schemas.event import Event
from tests.support.events import call, event, resp, summary_event
from tests.support.next_agent_oracle import expected_agent

ROOT: Final = "root"
SEAL: Final = "INVOCATION_ABORTED"


@st.composite
def router_events(draw: st.DrawFn, serial: int) -> Event:
    """One event with what the router reads drawn: author, calls, answers, actions, errors."""
    author = draw(st.sampled_from(("user", "user", "a", "b", "")))
    ids = st.sampled_from(("c1", "c2", "c3"))
    part = st.one_of(
        st.just({"text": "x"}),
        ids.map(call),
        st.one_of(ids, st.none(), st.just("")).map(resp),
    )
    parts = draw(st.one_of(st.none(), st.lists(part, max_size=3)))
    fields: dict[str, Any] = {}
    error = draw(st.sampled_from((None, None, None, SEAL, "E")))
    if error is not None:
        fields["errorCode"] = error
    actions: dict[str, Any] = {}
    if draw(st.integers(0, 5)) == 0:
        actions["transferToAgent"] = draw(st.sampled_from(("b", "c")))
    if draw(st.integers(0, 7)) == 0:
        actions["endOfAgent"] = True
    if draw(st.integers(0, 7)) == 0:
        actions["agentState"] = {}
    if actions:
        fields["actions"] = actions
    return event(f"e{serial}", author, float(serial), parts, **fields)


@st.composite
def router_sessions(draw: st.DrawFn) -> list[Event]:
    """A live list of up to 12 drawn events."""
    length = draw(st.integers(0, 12))
    return [draw(router_events(serial)) for serial in range(length)]


@settings(deadline=None, max_examples=300)
@given(router_sessions(), st.sampled_from(("", ROOT)))
def test_the_folded_agent_equals_the_routers_after_every_event(
    live: list[Event], root: str
) -> None:
    trail = NextAgentTrail(root)
    assert agent_to_run(trail) == expected_agent([], root)
    for length, each in enumerate(live, start=1):
        trail = note_event(trail, each)
        assert agent_to_run(trail) == expected_agent(live[:length], root), f"after {length}"
    assert trail == trail_of(root, live)


def _text(serial: int, author: str, **fields: Any) -> Event:
    return event(f"e{serial}", author, float(serial), [{"text": "x"}], **fields)


def _agent(*events: Event, root: str = ROOT) -> str:
    return agent_to_run(trail_of(root, events))


def test_without_a_reply_the_root_runs_and_without_a_root_no_agent() -> None:
    assert _agent(_text(0, "user")) == ROOT
    assert _agent(_text(0, "user"), root="") == ""


def test_the_newest_agent_to_reply_runs_not_the_first() -> None:
    assert _agent(_text(0, "user"), _text(1, "a"), _text(2, "b"), _text(3, "user")) == "b"


def test_a_tool_using_agent_runs_after_its_own_call_and_answer() -> None:
    session = (
        _text(0, "user"),
        event("e1", "shop_agent", 1.0, [call("c1", "lookup_order")]),
        event("e2", "shop_agent", 2.0, [resp("c1", "lookup_order")], role="user"),
        _text(3, "shop_agent"),
        _text(4, "user"),
    )
    for length in range(2, len(session) + 1):
        assert _agent(*session[:length], root="") == "shop_agent"


def test_the_users_answer_goes_back_to_the_caller() -> None:
    # a asked (a long-running call), b spoke since; the user's answer routes to a.
    asked = event("e1", "a", 1.0, [call("c1")])
    answer = event("e3", "user", 3.0, [resp("c1")])
    assert _agent(asked, _text(2, "b"), answer) == "a"
    # Only the first answer's id counts.
    two = event("e3", "user", 3.0, [resp("nope"), resp("c1")])
    assert _agent(asked, _text(2, "b"), two) == "b"
    # An answer the agent's own tool wrote is a reply of that agent.
    own = event("e3", "b", 3.0, [resp("c1")], role="user")
    assert _agent(asked, _text(2, "a"), own) == "b"


def test_an_answer_to_a_call_nobody_made_answers_no_one() -> None:
    # The trail holds "" (no agent), not a missing value, so stored trails compare equal.
    trail = trail_of("", [_text(1, "a"), event("e2", "user", 2.0, [resp("unknown")])])
    assert trail == NextAgentTrail("", answered="", replier="a")
    assert agent_to_run(trail) == "a"


def test_a_transfer_hands_over_until_the_target_replies() -> None:
    handed = event("e1", "a", 1.0, [resp("t1")], role="user", actions={"transferToAgent": "b"})
    assert _agent(_text(0, "user"), handed) == "b"
    assert _agent(_text(0, "user"), handed, _text(2, "c")) == "c"


def test_bookkeeping_and_seals_are_no_replies() -> None:
    base = (_text(0, "user"), _text(1, "a"))
    assert _agent(*base, _text(2, "b", actions={"endOfAgent": True})) == "a"
    assert _agent(*base, _text(2, "b", actions={"agentState": {}})) == "a"
    assert _agent(*base, event("e2", "b", 2.0, errorCode="E")) == "a"
    assert _agent(*base, _text(2, "b", errorCode="E")) == "b"  # a failure with content replies
    assert _agent(*base, _text(2, "b", errorCode=SEAL)) == "a"
    assert _agent(*base, _text(2, "")) == "a"


def test_a_seal_stops_the_answer_going_back_to_the_caller() -> None:
    asked = event("e1", "a", 1.0, [call("c1")])
    sealed = event("e2", "b", 2.0, [resp("c1")], role="user", errorCode=SEAL)
    answer = event("e3", "user", 3.0, [resp("c1")])
    assert _agent(_text(0, "b"), asked, answer) == "a"
    assert _agent(_text(0, "b"), asked, sealed, answer) == "a"  # the walk back finds a
    assert _agent(_text(0, "c"), event("e1", "a", 1.0, [call("c1")], errorCode=SEAL), answer) == (
        "c"
    )


@pytest.mark.parametrize("author", ["user", ""])
def test_a_call_without_an_agent_routes_nowhere(author: str) -> None:
    asked = event("e1", author, 1.0, [call("c1")])
    assert _agent(_text(0, "a"), asked, event("e2", "user", 2.0, [resp("c1")])) == "a"


def test_summaries_name_no_agent() -> None:
    # ADK's (and ctxstream's) summary events are authored "user".
    summary = summary_event("s1", 0.0, 1.0, 2.0)
    assert summary.author == "user"
    assert _agent(_text(0, "user"), _text(1, "a"), summary) == "a"
    assert _agent(summary) == ROOT
