"""The live view's id closure, rewinds, routing past rewound events and task inputs, by hand.

Hand-worked sessions (positions are event ids, ``e3`` the fourth event) with the
positions projections/live_view/README.md's rules keep, and ADK 2.13.0's readers
answering on them as on the whole session
(:func:`tests.support.live_view_sessions.assert_kept`). Overlap 0.
"""

from __future__ import annotations

import pytest

from projections.live_view.selection import select_live
from schemas.event import Event
from tests.support.events import call, call_event, event, response_event, rewind_event
from tests.support.live_view_sessions import assert_kept, exchange, said, summary


def _call(position: int, invocation: str, timestamp: float, call_id: str) -> Event:
    return call_event(f"e{position}", invocation, timestamp, call_id, author="root")


def _result(position: int, invocation: str, timestamp: float, call_id: str) -> Event:
    """A tool's result the agent records (not a result the client posted back)."""
    return response_event(f"e{position}", invocation, timestamp, call_id, author="root")


def test_a_negative_overlap_is_refused() -> None:
    with pytest.raises(ValueError, match="overlap_size: -1, expected 0 or more"):
        select_live([said(0, "inv0", 1.0)], -1)


def test_the_closure_follows_every_id_a_kept_event_names() -> None:
    """e5 and e6 both name c1 (met first, walking the named ids back); c2 still leads to e1."""
    events = [
        said(0, "inv0", 1.0),
        _call(1, "inv0", 2.0, "c2"),  # covered, answered by e4: kept for its result
        summary(2, 1.0, 2.0, 3.0),
        said(3, "inv1", 4.0),
        _result(4, "inv1", 5.0, "c2"),
        _call(5, "inv1", 6.0, "c1"),
        _result(6, "inv1", 7.0, "c1"),
        said(7, "inv1", 8.0, "root"),
    ]
    assert_kept(events, 0, [1, 2, 3, 4, 5, 6, 7])


def _rewound_inv1(second: Event) -> list[Event]:
    """u0, then inv1 (a user message and `second`) annulled by a rewind at e3."""
    return [said(0, "inv0", 1.0), said(1, "inv1", 2.0), second, rewind_event("e3", "inv1", 4.0)]


def test_the_closure_passes_a_rewound_result_and_keeps_the_live_call_after_it() -> None:
    events = [
        *_rewound_inv1(_result(2, "inv1", 3.0, "c")),  # names c, calls nothing: no reach
        said(4, "inv2", 5.0),
        _call(5, "inv2", 6.0, "c"),  # covered; its result e8 is kept
        summary(6, 5.0, 6.0, 7.0),
        said(7, "inv3", 8.0),
        _result(8, "inv3", 9.0, "c"),
    ]
    assert_kept(events, 0, [0, 5, 6, 7, 8])


def test_a_rewound_call_a_kept_result_answers_pulls_the_suffix_back_to_it() -> None:
    events = [
        *_rewound_inv1(_call(2, "inv1", 3.0, "c")),
        *exchange(4, "inv2", 5.0),
        summary(6, 1.0, 6.0, 7.0),
        said(7, "inv3", 8.0),
        _result(8, "inv3", 9.0, "c"),
    ]
    assert_kept(events, 0, [1, 2, 3, 4, 5, 6, 7, 8])  # back to e2, and its rewind's target


def test_a_rewind_before_the_suffix_pulls_nothing_back_and_routing_looks_past_it() -> None:
    events = [
        *_rewound_inv1(said(2, "inv1", 3.0, "root")),
        *exchange(4, "inv2", 5.0),  # covered, but the last reply the router reads
        summary(6, 1.0, 6.0, 7.0),
        said(7, "inv3", 8.0),
    ]
    assert_kept(events, 0, [5, 6, 7])


def _task(position: int, timestamp: float, call_id: str) -> Event:
    parts = [call(call_id, "task", {"task": f"work for {call_id}"})]
    return event(f"e{position}", "root", timestamp, parts, inv="inv0")


def test_every_task_scopes_input_is_kept_though_a_summary_covers_it() -> None:
    events = [
        said(0, "inv0", 1.0),
        _task(1, 2.0, "c1"),
        _task(2, 2.5, "c2"),
        _result(3, "inv0", 3.0, "c1"),
        _result(4, "inv0", 4.0, "c2"),
        said(5, "inv0", 5.0, "root"),
        summary(6, 1.0, 5.0, 6.0),
        said(7, "inv1", 7.0),
        said(8, "inv1", 8.0, "worker", isolation_scope="c1"),
        said(9, "inv1", 9.0, "worker", isolation_scope="c2"),
    ]
    assert_kept(events, 0, [1, 2, 3, 4, 5, 6, 7, 8, 9])
