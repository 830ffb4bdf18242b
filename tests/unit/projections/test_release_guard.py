"""Which ids an event names, and whether one of them was released: hand-listed events.

A summary answers the request its custom metadata names
(``{"ctxstream": {"compaction_request_id": ...}}``); a call, a response and a
``<tool>@<id>`` branch segment name call ids; the invocation id and a
rewind's target name invocations.
"""

from __future__ import annotations

from projections.retention.release_guard import HeldIds, named_ids, released_name
from projections.retention.released_ids import ReleasedIds
from tests.support.events import call_event, response_event, rewind_event, summary_event

_ANSWER = {"ctxstream": {"compaction_request_id": "req-7"}}


def test_a_summary_names_its_invocation_and_the_request_it_answers() -> None:
    summary = summary_event("s1", 100.0, 110.0, 120.0, custom_metadata=_ANSWER)
    assert list(named_ids(summary)) == [("invocation", "cmp-s1"), ("request", "req-7")]


def test_a_summary_naming_no_request_names_only_its_invocation() -> None:
    assert list(named_ids(summary_event("s1", 100.0, 110.0, 120.0))) == [("invocation", "cmp-s1")]


def test_calls_answers_branch_refs_and_rewind_targets_are_named() -> None:
    assert list(named_ids(call_event("c", "inv1", 1.0, "call1", branch="root.wf@tool@c0"))) == [
        ("invocation", "inv1"),
        ("call", "call1"),
        ("call", "c0"),
    ]
    assert list(named_ids(response_event("r", "inv1", 2.0, "call1"))) == [
        ("invocation", "inv1"),
        ("call", "call1"),
    ]
    assert list(named_ids(rewind_event("rw", "inv0", 3.0))) == [
        ("invocation", "rw-rw"),
        ("invocation", "inv0"),
    ]


def test_a_summary_answering_a_released_request_is_caught() -> None:
    released = ReleasedIds().with_ids([("request", "req-7")])
    summary = summary_event("s2", 100.0, 110.0, 121.0, custom_metadata=_ANSWER)
    assert released_name(released, summary) == "the released request 'req-7'"
    other = summary_event("s3", 100.0, 110.0, 122.0)
    assert released_name(released, other) is None


def test_ids_the_projection_holds_are_not_looked_up() -> None:
    # A set whose digests happen to include held ids (as a collision would): the held
    # ones are skipped, so only an id the projection does not hold can ask for the history.
    released = ReleasedIds().with_ids([("invocation", "inv1"), ("call", "call1")])
    response = response_event("r", "inv1", 2.0, "call1")
    held = HeldIds(invocations={"inv1"}, call_positions={"call1": 5}, first_live=5)
    assert released_name(released, response, held) is None
    assert released_name(released, response) == "the released invocation 'inv1'"
    # The call's first naming event is no longer held: it is looked up.
    later = held._replace(first_live=6)
    assert released_name(released, response, later) == "the released call 'call1'"
    assert released_name(released, response, held._replace(invocations=set())) == (
        "the released invocation 'inv1'"
    )
    assert not HeldIds().holds("call", "call1")
    assert not held.holds("request", "call1")
    assert not held.holds("call", "inv1")
    assert not held.holds("invocation", "call1")
