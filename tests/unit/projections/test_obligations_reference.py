"""Open calls and the self-contained prefix (reference §3.4), case by case from the reference text.

Expected values are worked out by hand from the reference.
"""

from __future__ import annotations

from projections.compaction.obligations import self_contained_prefix, strict_prefix_length
from schemas.event import Event
from tests.support.events import (
    call,
    call_event,
    ids,
    parts_event,
    resp,
    text_event,
)


def _placeholder(event_id: str, invocation_id: str, timestamp: float, call_id: str) -> Event:
    """ADK's placeholder: answers `call_id` and requests confirmation for it."""
    return parts_event(
        event_id,
        invocation_id,
        timestamp,
        [resp(call_id)],
        actions={"requested_tool_confirmations": {call_id: {"hint": "ok?"}}},
    )


# --------------------------------------------------------------------------- §3.4 obligations


def test_response_before_open_in_one_event_leaves_the_id_open() -> None:
    window = [call_event("c", "inv1", 100, "x"), _placeholder("p", "inv1", 101, "x")]
    assert strict_prefix_length(window) == 0


def test_confirmation_request_first_without_call_blocks_everything() -> None:
    window = [
        _placeholder("p", "inv1", 100, "x"),
        text_event("q2", "inv2", 101),
        text_event("q3", "inv3", 102),
    ]
    assert self_contained_prefix(window, window) == []


def test_long_running_call_of_older_invocation_is_protected() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "lr", long_running_tool_ids=["lr"]),
        text_event("q2", "inv2", 102),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1"]


def test_long_running_client_call_of_older_invocation_is_dead() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "lr", "adk_request_input", long_running_tool_ids=["lr"]),
        text_event("q2", "inv2", 102),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "c", "q2"]


def test_long_running_client_call_of_newest_invocation_is_protected() -> None:
    window = [
        text_event("q1", "inv1", 100),
        text_event("q2", "inv2", 101),
        call_event("c", "inv2", 102, "lr", "adk_request_input", long_running_tool_ids=["lr"]),
        text_event("a2", "inv2", 103, author="agent"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "q2"]


def test_calls_of_newest_invocation_are_never_dead() -> None:
    window = [
        text_event("q1", "inv1", 100),
        text_event("a1", "inv1", 101, author="agent"),
        text_event("q2", "inv2", 102),
        call_event("c", "inv2", 103, "x"),
        text_event("a2", "inv2", 104, author="agent"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "a1", "q2"]
    # Once a newer invocation exists, the same call is dead.
    live = [*window, text_event("q3", "inv3", 105)]
    assert ids(self_contained_prefix(window, live)) == ids(window)


def test_dead_call_opening_an_invocation_blocks_at_that_boundary() -> None:
    window = [
        text_event("q1", "inv1", 100),
        text_event("a1", "inv1", 101, author="agent"),
        call_event("c", "inv2", 102, "x"),
        text_event("a2", "inv2", 103, author="agent"),
        text_event("q3", "inv3", 104),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "a1"]


def test_call_answered_outside_the_window_is_not_dead() -> None:
    window = [text_event("q1", "inv1", 100), call_event("c", "inv1", 101, "x")]
    window.append(text_event("q2", "inv2", 102))
    live = [
        *window,
        parts_event("r", "inv3", 103, [resp("x")]),
        text_event("q3", "inv3", 104),
    ]
    assert ids(self_contained_prefix(window, live)) == ["q1"]


def test_placeholder_response_does_not_answer_its_own_request() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "x"),
        _placeholder("p", "inv1", 102, "x"),
        text_event("q2", "inv2", 103),
    ]
    # Answered = {x} - {x}: x is dead, ignored for the call and the request key.
    assert ids(self_contained_prefix(window, window)) == ["q1", "c", "p", "q2"]


def test_request_keys_of_newest_invocation_are_protected() -> None:
    window = [
        text_event("q1", "inv1", 100),
        call_event("c", "inv1", 101, "x"),
        text_event("q2", "inv2", 102),
        _placeholder("p", "inv2", 103, "x"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1"]
    # An event without invocation id protects its request keys as well.
    anonymous = [*window[:3], _placeholder("p", "", 103, "x"), text_event("q3", "inv3", 104)]
    assert ids(self_contained_prefix(anonymous, anonymous)) == ["q1"]


def test_dead_ids_are_ignored_for_request_keys_too() -> None:
    window = [
        text_event("q1", "inv1", 100),
        parts_event(
            "c",
            "inv1",
            101,
            [call("x")],
            actions={"requested_tool_confirmations": {"x": {"hint": "?"}}},
        ),
        text_event("q2", "inv2", 102),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q1", "c", "q2"]


def test_closing_one_call_does_not_help_while_another_stays_open() -> None:
    window = [
        text_event("q", "inv1", 100),
        parts_event("c", "inv1", 101, [call("a"), call("b")]),
        parts_event("r", "inv1", 102, [resp("a")]),
        text_event("t", "inv1", 103, author="agent"),
    ]
    assert ids(self_contained_prefix(window, window)) == ["q"]
