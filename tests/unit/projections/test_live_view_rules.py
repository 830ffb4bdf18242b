"""The live view's masking, routing and current-turn rules on hand-worked sessions.

Each test lists the positions the rules of projections/live_view/README.md keep, worked
out by hand (what ADK 2.13.0 shows no reader is dropped, what some reader reads is kept),
and checks with ADK's own readers that they answer on the kept events as on the whole
session (:func:`tests.support.live_view_sessions.assert_kept`). Positions are event ids:
``e3`` is the fourth event. Overlap 0 unless a test says.
"""

from __future__ import annotations

import pytest

from schemas.event import Event
from tests.support.events import bare_event, call_event, event, response_event, thought
from tests.support.live_view_sessions import assert_kept, exchange, said, summary

NODE = {"path": "wf/node"}


def test_a_summary_drops_what_it_covers_both_ends_included() -> None:
    events = [
        *exchange(0, "inv0", 1.0),  # at the summary's end: covered
        summary(2, 1.0, 2.0, 3.0),
        *exchange(3, "inv1", 4.0),
    ]
    assert_kept(events, 0, [2, 3, 4])


def test_a_summary_of_one_instant_covers_the_event_at_that_instant() -> None:
    events = [
        said(0, "inv0", 1.0),
        said(1, "inv0", 1.5, "root"),
        said(2, "inv0", 2.0),
        summary(3, 2.0, 2.0, 3.0),
        *exchange(4, "inv1", 4.0),
    ]
    assert_kept(events, 0, [0, 1, 3, 4, 5])


def test_a_summary_another_contains_is_dropped_and_of_equal_ranges_the_last_stays() -> None:
    events = [
        *exchange(0, "inv0", 1.0),
        summary(2, 1.0, 2.0, 2.5),  # inside the two below
        *exchange(3, "inv1", 3.0),
        summary(5, 1.0, 4.0, 5.0),  # the same range as the next one
        summary(6, 1.0, 4.0, 5.5),
        *exchange(7, "inv2", 6.0),
    ]
    assert_kept(events, 0, [6, 7, 8])


def test_a_summary_on_a_branch_hides_that_branch_and_the_branches_below_it() -> None:
    events = [
        said(0, "inv0", 1.0),  # no branch: readers on other branches see it, unsummarized
        said(1, "inv0", 2.0, "worker", branch="a.b.c"),
        said(2, "inv0", 3.0, "worker", branch="a.b"),  # the worker's last reply: routing
        summary(3, 1.0, 3.0, 4.0, branch="a.b"),
        *exchange(4, "inv1", 5.0),
    ]
    assert_kept(events, 0, [0, 2, 3, 4, 5])


@pytest.mark.parametrize(
    ("author", "kept"),
    [
        ("user", [0, 1, 2, 3, 4]),  # user input for another node: no reader here sees it
        ("root", [2, 3, 4]),  # an agent's summary on a node is read by every node
    ],
)
def test_a_summary_on_a_workflow_node_masks_only_if_every_node_reads_it(
    author: str, kept: list[int]
) -> None:
    events = [
        *exchange(0, "inv0", 1.0),
        summary(2, 1.0, 2.0, 3.0, author=author, node_info=NODE),
        *exchange(3, "inv1", 4.0),
    ]
    assert_kept(events, 0, kept)


def test_the_router_keeps_each_agents_last_reply_per_transfer_and_the_last_agent_event() -> None:
    events = [
        said(0, "inv0", 1.0),
        bare_event("e1", "inv0", 2.0, author="root", actions={"transfer_to_agent": "helper"}),
        said(2, "inv0", 3.0, "root"),
        said(3, "inv0", 4.0, "critic", error_code="INVOCATION_ABORTED"),  # no reply
        said(4, "inv0", 5.0, "helper", error_code="MODEL_ERROR"),  # an error with parts: a reply
        bare_event("e5", "inv0", 6.0, author="root", actions={"end_of_agent": True}),
        bare_event("e6", "inv0", 7.0, author="helper", actions={"agent_state": {"step": 1}}),
        summary(7, 1.0, 7.0, 8.0),
        said(8, "inv1", 9.0),
    ]
    assert_kept(events, 0, [1, 2, 4, 6, 7, 8])


def test_the_current_turn_starts_at_the_last_user_message_every_reader_of_the_scope_sees() -> None:
    events = [
        said(0, "inv0", 1.0),
        summary(1, 0.0, 10.0, 11.0),  # covers what follows it too: timestamps 5 to 8
        said(2, "inv1", 5.0),  # the turn starts here for every unscoped reader
        said(3, "inv1", 6.0, "root"),
        event("e4", "user", 7.0, [thought("hmm")], inv="inv1"),  # empty: no turn start
        said(5, "inv1", 8.0, isolation_scope="X"),  # another scope's turn start
        summary(6, 6.0, 7.0, 12.0, node_info=NODE),  # input for another node: no turn start
    ]
    assert_kept(events, 0, [1, 2, 3, 4, 5, 6])


def _posted(position: int, invocation: str, timestamp: float, call_id: str) -> Event:
    """A tool result the client posted back: a user event answering `call_id`."""
    return response_event(f"e{position}", invocation, timestamp, call_id, author="user")


def _long_call(position: int, invocation: str, timestamp: float, call_id: str) -> Event:
    return call_event(
        f"e{position}",
        invocation,
        timestamp,
        call_id,
        author="root",
        long_running_tool_ids=[call_id],
    )


def test_posted_back_results_pull_the_turn_back_before_every_call_they_answer() -> None:
    events = [
        said(0, "inv0", 1.0),
        call_event("e1", "inv0", 2.0, "c0", author="root"),
        response_event("e2", "inv0", 3.0, "c0", author="root"),  # answered: owes nothing
        said(3, "inv1", 4.0),  # the turn starts here: nothing is owed before it
        _long_call(4, "inv1", 5.0, "lr1"),
        said(5, "inv2", 6.0),  # owed lr1 (posted last): no turn start
        _long_call(6, "inv2", 7.0, "lr2"),
        summary(7, 1.0, 7.0, 8.0),
        *exchange(8, "inv3", 9.0),
        _posted(10, "inv4", 11.0, "lr2"),
        _posted(11, "inv5", 12.0, "lr1"),
    ]
    assert_kept(events, 0, [3, 4, 5, 6, 7, 8, 9, 10, 11])


def test_an_agents_late_tool_result_owes_nothing_to_the_current_turn() -> None:
    events = [
        said(0, "inv0", 1.0),
        call_event("e1", "inv0", 2.0, "c2", author="root"),  # kept: the result below names it
        summary(2, 1.0, 2.0, 3.0),
        said(3, "inv1", 4.0),
        response_event("e4", "inv1", 5.0, "c2", author="root"),
        said(5, "inv1", 6.0, "root"),
    ]
    assert_kept(events, 0, [1, 2, 3, 4, 5])
