"""Which summaries hide which events: the pairwise rules against ADK's, and the index against them.

``event_facts.branch_within``, ``hides`` and ``subsumes`` state, for one pair of events,
ADK 2.13.0's rules as written out here by hand: a reader on branch ``b`` sees events on
no branch, on ``b`` and on its ancestors (``_is_event_belongs_to_branch``, whole
segments); masking runs per isolation scope and covers a summary's range, both ends
included (``_process_compaction_events``); of two summaries, one that contains the
other's range hides it, and of equal ranges the later stays (``_get_compaction_ranges``).
:class:`~projections.live_view.hiding.Hiding` answers the same questions from an index;
the property holds it equal to the pairwise rules over generated sessions.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from projections.live_view import event_facts as facts
from projections.live_view.hiding import Hiding
from schemas.event import Event
from tests.support.events import summary_event, text_event
from tests.support.strategies import session_events


@pytest.mark.parametrize(
    ("inner", "outer", "within"),
    [
        (None, None, True),
        ("a", None, True),  # every reader sees an event on no branch
        ("a", "", True),
        (None, "a", False),  # a reader on z sees the unbranched event, not one on a
        ("a", "a", True),
        ("a.b", "a", True),  # whoever sees a.b sees its ancestor a
        ("a", "a.b", False),
        ("ab", "a", False),  # branches compare by whole segments
        ("a.bc", "a.b", False),
    ],
)
def test_branch_within_means_every_reader_of_the_inner_branch_sees_the_outer(
    inner: str | None, outer: str | None, within: bool
) -> None:
    assert facts.branch_within(inner, outer) is within


def _raw(timestamp: float, **more: Any) -> Event:
    return text_event("e", "inv", timestamp, "hello", **more)


@pytest.mark.parametrize(
    ("summary", "raw", "hidden"),
    [
        (summary_event("s", 1.0, 3.0, 4.0), _raw(1.0), True),  # at the start
        (summary_event("s", 1.0, 3.0, 4.0), _raw(3.0), True),  # at the end
        (summary_event("s", 1.0, 3.0, 4.0), _raw(3.5), False),
        (summary_event("s", 1.0, 3.0, 4.0), _raw(0.5), False),
        (summary_event("s", 1.0, 3.0, 4.0), _raw(2.0, isolation_scope="X"), False),
        (summary_event("s", 1.0, 3.0, 4.0, isolation_scope="X"), _raw(2.0), False),
        (summary_event("s", 1.0, 3.0, 4.0, branch="a"), _raw(2.0, branch="a.b"), True),
        (summary_event("s", 1.0, 3.0, 4.0, branch="a.b"), _raw(2.0, branch="a"), False),
        (summary_event("s", 1.0, 3.0, 4.0, branch="a"), _raw(2.0), False),
        (_raw(5.0), _raw(2.0), False),  # no summary hides nothing
    ],
)
def test_a_summary_hides_its_scopes_events_in_range_on_its_branch_or_below(
    summary: Event, raw: Event, hidden: bool
) -> None:
    assert facts.hides(summary, raw) is hidden


def _summary(start: float, end: float, **more: Any) -> Event:
    return summary_event("s", start, end, 9.0, **more)


@pytest.mark.parametrize(
    ("later", "earlier", "later_after", "subsumed"),
    [
        (_summary(1.0, 4.0), _summary(2.0, 3.0), True, True),
        (_summary(1.0, 4.0), _summary(2.0, 3.0), False, True),  # containing: either order
        (_summary(1.0, 4.0), _summary(1.0, 4.0), True, True),  # equal: the later stays
        (_summary(1.0, 4.0), _summary(1.0, 4.0), False, False),
        (_summary(1.0, 4.0), _summary(1.0, 3.0), False, True),  # same start, wider
        (_summary(1.0, 4.0), _summary(2.0, 4.0), False, True),  # same end, wider
        (_summary(1.0, 3.0), _summary(2.0, 4.0), True, False),  # overlapping: both stay
        (_summary(2.0, 4.0), _summary(1.0, 3.0), True, False),
        (_summary(1.0, 4.0, isolation_scope="X"), _summary(2.0, 3.0), True, False),
        (_summary(1.0, 4.0, branch="a"), _summary(2.0, 3.0, branch="a.b"), True, True),
        (_summary(1.0, 4.0, branch="a.b"), _summary(2.0, 3.0, branch="a"), True, False),
        (_summary(1.0, 4.0, branch="a"), _summary(2.0, 3.0), True, False),
        (_raw(5.0), _summary(2.0, 3.0), True, False),
        (_summary(1.0, 4.0), _raw(2.0), True, False),
    ],
)
def test_a_summary_containing_anothers_range_subsumes_it_for_every_reader(
    later: Event, earlier: Event, later_after: bool, subsumed: bool
) -> None:
    assert facts.subsumes(later, earlier, later_after=later_after) is subsumed


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(session_events(max_invocations=8))
def test_the_index_answers_as_the_pairwise_rules(events: list[Event]) -> None:
    everything = range(len(events))
    hiding = Hiding(events, everything)
    masking = [p for p in everything if facts.is_masking_summary(events[p])]
    for position, each in enumerate(events):
        if each.actions.compaction is None:
            hidden = any(facts.hides(events[s], each) for s in masking)
            assert hiding.hides(each) is hidden, position
        else:
            subsumed = any(
                facts.subsumes(events[s], each, later_after=s > position)
                for s in masking
                if s != position
            )
            assert hiding.subsumes(each, position) is subsumed, position
