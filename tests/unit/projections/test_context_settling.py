"""The cuts of a reduced list, found in one pass, equal those the definition names one by one.

The oracle tries every position: a cut ``c`` qualifies when ``is_settled(events[:c])``
with a finite newest timestamp and ``extends`` accepts ``events[c:]`` after it (the two
rules the digest relies on, each with its own hand-written tests). ``cut_points``
finds them in one sweep with prefix and suffix arrays; the thinning keeps the first,
each next one at least `gap` after the last kept, and always the last.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from projections.contents.context_settling import (
    cut_points,
    extends,
    is_settled,
    named_ids_of,
    newest_timestamp,
)
from projections.fold.rewind import drop_rewound
from schemas.event import Event
from schemas.logged_event import LoggedEvent
from tests.support.events import call_event, response_event, summary_event, text_event
from tests.support.strategies import core_sessions


def _qualifying(events: Sequence[Event]) -> list[int]:
    found = []
    for cut in range(1, len(events) + 1):
        head = events[:cut]
        floor = newest_timestamp(head)
        if (
            is_settled(head)
            and math.isfinite(floor)
            and extends(floor, named_ids_of(head), events[cut:]) is not None
        ):
            found.append(cut)
    return found


def _thinned(found: list[int], gap: int) -> list[int]:
    kept: list[int] = []
    for cut in found:
        if not kept or cut - kept[-1] >= gap:
            kept.append(cut)
    if kept:
        kept[-1] = found[-1]
    return kept


@settings(deadline=None)
@given(core_sessions(refusals=True), st.integers(1, 5))
def test_the_cuts_are_the_positions_the_rules_accept(log: list[LoggedEvent], gap: int) -> None:
    events = drop_rewound([record.envelope.event for record in log])
    assert cut_points(events, gap) == _thinned(_qualifying(events), gap)


def test_cuts_around_tool_traffic_and_a_summary() -> None:
    events = [
        text_event("u1", "i1", 100.0),
        call_event("c1", "i1", 101.0, "k1"),
        response_event("r1", "i1", 102.0, "k1"),
        text_event("a1", "i1", 103.0, author="agent"),
        summary_event("s1", 100.0, 101.0, 104.0),
        text_event("u2", "i2", 105.0),
        text_event("a2", "i2", 106.0, author="agent"),
        call_event("c2", "i2", 107.0, "k2"),
    ]
    # Not before the summary (nothing with a summary extends), not after a call or a
    # response; after u2 and a2, with the unanswered c2 as their extension.
    assert _qualifying(events) == [6, 7]
    assert cut_points(events, 1) == [6, 7]
    assert cut_points(events, 2) == [7]
    assert cut_points(events, 10) == [7]
    assert cut_points(events[:2], 1) == [1]
    assert cut_points([], 1) == []
