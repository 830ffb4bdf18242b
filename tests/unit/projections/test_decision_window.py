"""A decision reads a tail of the live list only where the tail decides what the whole would.

The oracle is the plain selection over the whole live list (``use_memo=False``):
generated sessions kept in order (:mod:`projections.compaction.live_order`), with tool
traffic, branches, summaries, rewinds, reused call ids, now and then an event
that breaks the order, and the summarizer's answers, are folded twice in
lockstep, and every decision must be the same. The hand-worked cases pin
where the tail starts and each rule of the order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, overload

from hypothesis import event as note
from hypothesis import given, settings
from hypothesis import strategies as st
from pyrsistent import pvector
from pyrsistent.typing import PVector

from projections.compaction.config import CompactionConfig
from projections.compaction.decision import step
from projections.compaction.decision_window import decision_start
from projections.compaction.live_order import call_ids_named, live_order
from projections.fold.projection import SessionProjection, project
from projections.retention.retained_vector import RetainedVector
from schemas.compaction_request import CompactionRequest
from schemas.event import Event
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    bare_event,
    call_event,
    logged,
    response_event,
    rewind_event,
    summary_event,
    text_event,
)
from tests.support.ordered import Orderer, compaction_configs
from tests.support.strategies import session_events

Json = dict[str, Any]


def _projection(events: list[Event]) -> SessionProjection:
    return project(SESSION, logged(events, list(range(len(events)))))


def _start(events: list[Event], overlap: int) -> int:
    log = _projection(events).log
    return decision_start(log.live, log.order, overlap)


# -- where the tail starts ---------------------------------------------------------------

#: §4.1's example: inv1 (100, 101), inv2 (102, 103), S1 [100, 103] at 104, inv3, inv4.
WORKED = [
    text_event("a", "inv1", 100.0),
    text_event("b", "inv1", 101.0),
    text_event("c", "inv2", 102.0),
    text_event("d", "inv2", 103.0),
    summary_event("s1", 100.0, 103.0, 104.0),
    text_event("e", "inv3", 105.0),
    text_event("f", "inv3", 106.0),
    text_event("g", "inv4", 107.0),
]


def test_the_tail_starts_at_the_newest_summary_without_overlap() -> None:
    assert _start(WORKED, 0) == 4


def test_the_tail_reaches_the_overlap_invocations_behind_the_first_new_one() -> None:
    assert _start(WORKED, 1) == 2


def test_an_overlap_behind_the_first_invocation_reads_the_whole_list() -> None:
    assert _start(WORKED, 2) == 0
    assert _start(WORKED, 5) == 0


def test_events_after_the_newest_summary_older_than_its_end_stay_in_the_tail() -> None:
    # inv3's first event landed before the summary of inv1..inv2 did: new, so in the tail.
    events = [
        text_event("a", "inv1", 100.0),
        text_event("b", "inv2", 101.0),
        text_event("c", "inv2", 102.0),
        text_event("d", "inv3", 103.0),
        summary_event("s1", 100.0, 101.0, 104.0),
        text_event("e", "inv3", 105.0),
    ]
    # First newer than 101: c (position 2), of inv2, which starts at 1.
    assert _start(events, 0) == 1


def test_a_summary_that_shares_no_invocation_is_passed_over_by_the_overlap() -> None:
    # Behind the first new invocation (inv3) lie the summary's own run and inv2.
    events = [*WORKED[:5], text_event("e", "inv3", 105.0)]
    assert _start(events, 1) == 2


def test_a_one_event_invocation_counts_in_the_overlap() -> None:
    # q0 alone is inv0; behind inv3 (the first new one) lie inv2, inv1 and inv0.
    events = [
        text_event("q0", "inv0", 99.0),
        *WORKED[:4],
        summary_event("s1", 100.0, 103.0, 104.0),
        text_event("e", "inv3", 105.0),
    ]
    assert _start(events, 1) == 3  # inv2
    assert _start(events, 2) == 1  # inv1
    assert _start(events, 3) == 0  # inv0, the first


def test_the_overlap_steps_over_a_summary_onto_a_one_event_invocation() -> None:
    events = [
        *WORKED[:2],
        text_event("c", "inv2", 102.0),
        summary_event("s1", 100.0, 101.0, 103.0),
        text_event("e", "inv3", 104.0),
        text_event("f", "inv3", 105.0),
    ]
    # First newer than 101: c (inv2, position 2). One behind it: inv1, from 0.
    assert _start(events, 0) == 2
    assert _start(events, 1) == 0
    # From inv3 (after a second summary) one behind is inv2: the single event c.
    later = [*events, summary_event("s2", 100.0, 102.0, 106.0), text_event("g", "inv4", 107.0)]
    assert _start(later, 1) == 2


def test_the_overlap_counts_each_invocation_once() -> None:
    events = [
        text_event("a", "inv1", 100.0),
        text_event("b", "inv2", 101.0),
        text_event("c", "inv3", 102.0),
        text_event("d", "inv4", 103.0),
        summary_event("s1", 100.0, 103.0, 104.0),
        text_event("e", "inv5", 105.0),
    ]
    assert _start(events, 2) == 2  # inv3 and inv4 behind inv5
    assert _start(events, 3) == 1


def test_a_summary_first_in_the_list_bounds_the_tail() -> None:
    # One invocation behind inv2 is inv1, from 1; a second would be behind the first
    # summary, at the session's start: the tail is then the whole list.
    events = [
        summary_event("s0", 1.0, 2.0, 3.0),
        text_event("a", "inv1", 100.0),
        text_event("b", "inv1", 101.0),
        summary_event("s1", 100.0, 101.0, 102.0),
        text_event("c", "inv2", 103.0),
    ]
    assert _start(events, 0) == 3
    assert _start(events, 1) == 1
    assert _start(events, 2) == 0
    assert _start(events[:3], 0) == 0  # only the first summary: the tail holds it


def test_the_first_naming_of_a_call_may_open_the_tail() -> None:
    events = [
        text_event("a", "inv1", 100.0),
        text_event("b", "inv1", 101.0),
        call_event("c", "inv2", 102.0, "c1"),
        summary_event("s1", 100.0, 101.0, 103.0),
        response_event("r", "inv2", 104.0, "c1"),
    ]
    assert _start(events, 0) == 2


def test_a_session_without_a_summary_reads_from_the_start() -> None:
    assert _start(WORKED[:4], 0) == 0


def test_an_older_event_that_names_a_tail_call_reads_the_whole_list() -> None:
    events = [
        *WORKED[:3],
        response_event("r", "inv2", 102.5, "c1"),
        WORKED[3],
        summary_event("s1", 100.0, 103.0, 104.0),
        call_event("e", "inv3", 105.0, "c1"),
    ]
    assert _start(events, 0) == 0
    fresh = [*events[:3], *events[4:]]
    assert _start(fresh, 0) == 4


def test_an_old_answer_to_a_reused_call_id_keeps_the_window_short() -> None:
    # inv2 calls c1 again and never hears back; c1's only response is inv1's, before the
    # tail. Over the whole list c1 is answered, so not dead: the window stops before the call.
    # A tail that left the old response out would call it dead and take all of inv2 and inv3.
    long = "x" * 400
    events = [
        text_event("q1", "inv1", 100.0, long),
        call_event("c", "inv1", 101.0, "c1"),
        response_event("r", "inv1", 102.0, "c1"),
        text_event("a1", "inv1", 103.0, long, author="agent"),
        summary_event("s1", 100.0, 103.0, 104.0),
        text_event("q2", "inv2", 105.0, long),
        call_event("c-again", "inv2", 106.0, "c1"),
        text_event("q3", "inv3", 107.0, long),
        text_event("a3", "inv3", 108.0, long, author="agent"),
    ]
    config = CompactionConfig(compaction_interval=1, overlap_size=0)
    before = _projection(events)
    record = logged([text_event("q4", "inv4", 109.0)], [len(events)])[0]
    decided = step(before, record, config).request
    assert decided is not None
    assert decided.event_ids == ("q2",)
    assert step(before, record, config, use_memo=False).request == decided


def test_without_usage_the_token_trigger_estimates_from_the_view() -> None:
    # No event reports usage. After the summary the contents are its 3 characters and two
    # texts of 400: 803 characters, 200 tokens by ADK's estimate, at the threshold of 200.
    # One event is retained, so the window is q2, with the summary rolled in as its seed.
    events = [
        text_event("q1", "inv1", 100.0, "x" * 40),
        text_event("a1", "inv1", 101.0, "y" * 40, author="agent"),
        summary_event("s1", 100.0, 101.0, 102.0),
        text_event("q2", "inv2", 103.0, "x" * 400),
        text_event("a2", "inv2", 104.0, "y" * 400, author="agent"),
    ]
    config = CompactionConfig(token_threshold=200, event_retention_size=1)
    before = _projection(events)
    assert decision_start(before.log.live, before.log.order, 0) == 2
    record = logged([text_event("q3", "inv3", 105.0)], [len(events)])[0]
    decided = step(before, record, config).request
    assert decided is not None
    assert (decided.trigger, decided.event_ids) == ("token_threshold", ("q2",))
    assert decided.seed is not None
    assert decided.seed.timestamp == 100.0
    assert step(before, record, config, use_memo=False).request == decided
    # At 201 tokens the estimate of 200 does not reach the threshold.
    below = CompactionConfig(token_threshold=201, event_retention_size=1)
    assert step(before, record, below).request is None


def test_a_tail_without_the_newest_invocation_reads_the_whole_list() -> None:
    # After the summary only an event without invocation id: the newest invocation is inv2.
    events = [*WORKED[:5], text_event("e", "", 105.0)]
    assert _start(events, 0) == 0


def test_an_unordered_list_reads_from_the_start() -> None:
    late = text_event("h", "inv4", 90.0)
    assert _start([*WORKED, late], 0) == 0


# -- the rules of the order ------------------------------------------------------------


def _ordered(events: list[Event]) -> bool:
    return live_order(events).ordered


def test_rising_timestamps_unscoped_and_contiguous_are_in_order() -> None:
    assert _ordered(WORKED)


def test_a_tie_or_a_step_back_breaks_the_order() -> None:
    assert not _ordered([*WORKED, text_event("h", "inv4", 107.0)])
    assert not _ordered([*WORKED, text_event("h", "inv4", 106.5)])


def test_a_scoped_event_breaks_the_order() -> None:
    assert not _ordered([*WORKED, text_event("h", "inv4", 108.0, isolation_scope="s")])


def test_an_invocation_that_comes_back_breaks_the_order() -> None:
    assert not _ordered([*WORKED, text_event("h", "inv3", 108.0)])
    assert _ordered([*WORKED, text_event("h", "inv4", 108.0), text_event("i", "inv5", 109.0)])


def test_a_summary_may_land_mid_invocation_with_an_id_of_its_own() -> None:
    events = [*WORKED[:4], text_event("e", "inv3", 103.5), *WORKED[4:5]]
    assert _ordered([*events, text_event("f", "inv3", 105.0)])
    reused = summary_event("s2", 100.0, 103.5, 106.0, invocation_id="inv3")
    assert not _ordered([*events, text_event("f", "inv3", 105.0), reused])
    assert not _ordered([*WORKED, summary_event("s2", 100.0, 105.0, 108.0, invocation_id="cmp-s1")])


def test_a_raw_event_may_not_take_a_summary_invocation_id() -> None:
    assert not _ordered([*WORKED, text_event("h", "cmp-s1", 108.0)])


def test_an_empty_invocation_id_counts_as_an_id() -> None:
    events = [text_event("a", "", 100.0), text_event("b", "inv1", 101.0)]
    assert _ordered(events)
    assert not _ordered([*events, text_event("c", "", 102.0)])


def test_each_summary_rule_breaks_the_order() -> None:
    base = WORKED[:4]
    assert _ordered([*base, summary_event("s", 100.0, 103.0, 104.0)])
    assert _ordered([*base, summary_event("s", 0.5, 103.0, 104.0)])  # any start above 0
    assert _ordered([*base, summary_event("s", 103.0, 103.0, 104.0)])  # start at the end
    assert not _ordered([*base, summary_event("s", 0.0, 103.0, 104.0)])  # start not above 0
    assert not _ordered([*base, summary_event("s", 103.5, 103.0, 104.0)])  # inverted
    assert not _ordered([*base, summary_event("s", 100.0, 104.0, 104.0)])  # ends at itself
    assert not _ordered([*base, summary_event("s", 100.0, float("nan"), 104.0)])
    later = [*WORKED, summary_event("t", 100.0, 103.0, 108.0)]  # end not above s1's
    assert not _ordered(later)
    assert _ordered([*WORKED, summary_event("t", 100.0, 105.0, 108.0)])


def test_the_order_records_the_newest_summary_and_first_call_positions() -> None:
    events = [
        *WORKED[:5],
        call_event("e", "inv3", 105.0, "c1"),
        response_event("f", "inv3", 106.0, "c1"),
    ]
    order = live_order(events)
    assert dict(order.invocations) == {"inv1": 0, "inv2": 2, "cmp-s1": 4, "inv3": 5}
    assert (order.last_summary_position, order.last_summary_end) == (4, 103.0)
    assert dict(order.call_positions) == {"c1": 5}
    assert order.length == 7


def test_every_kind_of_call_id_is_named() -> None:
    event = Event.model_validate(
        {
            "id": "x",
            "author": "agent",
            "timestamp": 1.0,
            "content": {
                "role": "model",
                "parts": [
                    {"function_call": {"id": "call", "name": "f"}},
                    {"function_response": {"id": "response", "name": "f"}},
                    {"function_call": {"id": "", "name": "f"}},
                ],
            },
            "long_running_tool_ids": ["long"],
            "actions": {
                "requested_tool_confirmations": {"confirm": {}},
                "requested_auth_configs": {"auth": {}},
            },
        }
    )
    assert call_ids_named(event) == ["call", "response", "long", "confirm", "auth"]


def test_call_ids_of_events_without_content_are_recorded() -> None:
    confirm = bare_event("x", "inv3", 105.0, actions={"requested_tool_confirmations": {"k1": {}}})
    auth = bare_event("y", "inv3", 106.0, actions={"requested_auth_configs": {"k2": {}}})
    running = bare_event("z", "inv3", 107.0, long_running_tool_ids=["k3"])
    order = live_order([*WORKED[:5], confirm, auth, running])
    assert dict(order.call_positions) == {"k1": 5, "k2": 6, "k3": 7}


def test_a_rewind_recomputes_the_order_of_what_is_left() -> None:
    late = text_event("h", "inv3", 108.0)  # inv3 comes back: out of order
    rewind = rewind_event("r", "inv3", 109.0)
    log = _projection([*WORKED, late]).log
    assert not log.order.ordered
    log = _projection([*WORKED, late, rewind]).log
    assert log.order.ordered  # inv3 and inv4 are gone
    assert log.order.length == len(log.live) == 5


# -- the tail decides what the whole list decides --------------------------------------


def _ordered_lockstep(
    events: list[Event], config: CompactionConfig, draw: Callable[[Any], Any], break_order: bool
) -> tuple[SessionProjection, SessionProjection, int]:
    orderer = Orderer(draw, break_order)
    tail = plain = SessionProjection(SESSION)
    offset = tails = 0
    requested: CompactionRequest | None = None
    overlap = config.overlap_size or 0
    for serial, generated in enumerate(events):
        waiting = plain.in_flight is not None
        for item in orderer.incoming(generated, serial, requested, waiting):
            offset += 1
            record = logged([item], [offset])[0]
            tails += decision_start(tail.log.live, tail.log.order, overlap) > 0
            with_tail = step(tail, record, config)
            whole = step(plain, record, config, use_memo=False)
            assert with_tail.request == whole.request, f"at offset {offset}"
            requested = whole.request or requested
            tail, plain = with_tail.projection, whole.projection
    return tail, plain, tails


@settings(max_examples=300, deadline=None)
@given(session_events(max_invocations=10), compaction_configs(), st.booleans(), st.data())
def test_the_tail_decides_exactly_as_the_whole_live_list(
    events: list[Event], config: CompactionConfig, break_order: bool, data: st.DataObject
) -> None:
    tail, plain, tails = _ordered_lockstep(events, config, data.draw, break_order)
    note(f"tail used: {tails > 0}")
    assert replace(tail, gate_memo=None) == plain


# -- the cost of finding the tail ---------------------------------------------------------


class _CountedLive(RetainedVector[LoggedEvent]):
    """A live list that counts its positions read and refuses to read on without end."""

    __slots__ = ("reads",)

    def __init__(self, records: list[LoggedEvent]) -> None:
        super().__init__(pvector(records))
        self.reads = 0

    @overload
    def __getitem__(self, index: int) -> LoggedEvent: ...

    @overload
    def __getitem__(self, index: slice) -> PVector[LoggedEvent]: ...

    def __getitem__(self, index: int | slice) -> LoggedEvent | PVector[LoggedEvent]:
        self.reads += 1
        if self.reads > _READ_LIMIT:
            raise AssertionError(f"more than {_READ_LIMIT} positions read")
        return super().__getitem__(index)


_READ_LIMIT = 40


def _long_session() -> list[Event]:
    """inv0..inv14 of two events (100..129), a summary over them at 130, inv15 (131, 132)."""
    events = [text_event(f"e{i}", f"inv{i // 2}", 100.0 + i) for i in range(30)]
    events.append(summary_event("s1", 100.0, 129.0, 130.0))
    events += [text_event("f1", "inv15", 131.0), text_event("f2", "inv15", 132.0)]
    return events


def test_the_first_new_event_is_found_in_logarithmic_reads() -> None:
    # A binary search over 33 positions reads 6 of them; the rest of the walk a few more.
    events = _long_session()
    live = _CountedLive(logged(events, list(range(len(events)))))
    assert decision_start(live, live_order(events), 0) == 30  # the newest summary
    assert live.reads <= 12


def test_a_summary_newer_than_every_event_is_the_whole_tail() -> None:
    # The summary's end (140) is past every timestamp: no position is newer, so the search
    # ends at the list's end and the tail falls back to the newest summary, then to 0.
    events = [text_event(f"e{i}", f"inv{i // 2}", 100.0 + i) for i in range(6)]
    events.append(summary_event("s1", 100.0, 140.0, 106.5))
    live = _CountedLive(logged(events, list(range(len(events)))))
    assert decision_start(live, live_order(events), 0) == 0
