from __future__ import annotations

from typing import Any

from projections.compaction.obligations import (
    dead_call_ids,
    newest_invocation_id,
    self_contained_prefix,
    strict_prefix_length,
)
from schemas.event import Event
from tests.support.events import call_event, ids, response_event, text_event


def _confirmation_placeholder(event_id: str, inv: str, ts: float, call_id: str) -> Event:
    fields: dict[str, Any] = {
        "actions": {"requested_tool_confirmations": {call_id: {"hint": "ok?", "confirmed": False}}}
    }
    return response_event(event_id, inv, ts, call_id, **fields)


def test_response_then_request_in_one_event_leaves_the_call_open() -> None:
    window = [call_event("c", "i1", 1, "x"), _confirmation_placeholder("p", "i1", 2, "x")]
    assert strict_prefix_length(window) == 0
    assert strict_prefix_length([*window, response_event("r", "i1", 3, "x")]) == 3


def test_reused_call_id_reopens_after_its_first_answer() -> None:
    window = [
        call_event("c1", "i1", 1, "x"),
        response_event("r1", "i1", 2, "x"),
        call_event("c2", "i1", 3, "x"),
        text_event("t", "i1", 4, author="agent"),
    ]
    assert strict_prefix_length(window) == 2


def test_cut_on_invocation_boundary_keeps_strict_prefix() -> None:
    # The unanswered call opens inv2, so rule 2 applies and it blocks (§14.15).
    window = [
        text_event("q1", "inv1", 1),
        call_event("c", "inv2", 2, "dead"),
        text_event("q3", "inv3", 3),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1"]


def test_dead_call_mid_invocation_does_not_block() -> None:
    window = [
        text_event("q2", "inv2", 1),
        call_event("c", "inv2", 2, "dead"),
        text_event("q3", "inv3", 3),
    ]
    assert dead_call_ids(window, window) == {"dead"}
    assert ids(self_contained_prefix(window, window)) == ["q2", "c", "q3"]


def test_call_in_newest_invocation_is_never_dead() -> None:
    window = [text_event("q2", "inv2", 1), call_event("c", "inv2", 2, "open")]
    assert dead_call_ids(window, window) == set()
    assert ids(self_contained_prefix(window, window)) == ["q2"]


def test_newest_invocation_ignores_summaries_and_empty_ids() -> None:
    live = [
        text_event("q", "inv1", 1),
        call_event("c", "inv1", 2, "x"),
        text_event("s", "", 3),
    ]
    # inv1 is still the newest, so its call is not dead.
    assert dead_call_ids(live[:2], live) == set()


def test_long_running_call_of_older_invocation_is_protected() -> None:
    live = [
        text_event("q", "inv1", 1),
        call_event("c", "inv1", 2, "lr", long_running_tool_ids=["lr"]),
        text_event("q2", "inv2", 3),
    ]
    assert dead_call_ids(live, live) == set()
    assert ids(self_contained_prefix(live, live)) == ["q"]


def test_client_call_of_older_invocation_is_not_protected_by_long_running() -> None:
    live = [
        text_event("q", "inv1", 1),
        call_event("c", "inv1", 2, "cc", name="adk_request_input", long_running_tool_ids=["cc"]),
        text_event("q2", "inv2", 3),
    ]
    assert dead_call_ids(live, live) == {"cc"}
    assert ids(self_contained_prefix(live, live)) == ["q", "c", "q2"]


def test_confirmation_request_at_start_blocks_everything() -> None:
    live = [
        _confirmation_placeholder("p", "inv1", 1, "x"),
        text_event("q2", "inv2", 2),
        text_event("q3", "inv3", 3),
    ]
    assert self_contained_prefix(live, live) == []


def test_closing_one_obligation_does_not_help_while_another_is_open() -> None:
    live = [
        text_event("q", "inv1", 1),
        call_event("a", "inv1", 2, "x", long_running_tool_ids=["x"]),
        call_event("b", "inv1", 3, "y", long_running_tool_ids=["y"]),
        response_event("ra", "inv1", 4, "x"),
        text_event("q2", "inv2", 5),
    ]
    assert ids(self_contained_prefix(live, live)) == ["q"]


def test_response_carrying_its_own_request_is_not_an_answer() -> None:
    live = [
        text_event("q", "inv1", 1),
        call_event("c", "inv1", 2, "x"),
        _confirmation_placeholder("p", "inv1", 3, "x"),
        text_event("q2", "inv2", 4),
    ]
    # x is unanswered and not protected (older invocation): dead, so all compact.
    assert dead_call_ids(live, live) == {"x"}
    assert ids(self_contained_prefix(live, live)) == ["q", "c", "p", "q2"]


def test_no_newest_invocation_without_any_invocation_id() -> None:
    assert newest_invocation_id([]) == ""
    assert newest_invocation_id([text_event("q", "", 1)]) == ""


def test_long_running_ids_of_an_older_event_without_content_stay_protected() -> None:
    # The event naming lr carries no content, so no client call of it can be unprotected.
    live = [
        call_event("c", "inv1", 1, "lr"),
        Event.model_validate(
            {
                "invocation_id": "inv1",
                "author": "agent",
                "timestamp": 2,
                "longRunningToolIds": ["lr"],
            }
        ),
        text_event("q2", "inv2", 3),
    ]
    assert dead_call_ids(live, live) == set()


def test_a_window_opening_with_a_dead_call_is_kept_whole() -> None:
    # The call k1 of inv1 is never answered and inv1 is not the newest invocation:
    # the call is dead, so nothing is left open and the whole window is returned.
    window = [
        call_event("c1", "inv1", 100.0, "k1"),
        text_event("t2", "inv2", 101.0),
        text_event("t3", "inv3", 102.0),
    ]
    assert ids(self_contained_prefix(window, window)) == ["c1", "t2", "t3"]
