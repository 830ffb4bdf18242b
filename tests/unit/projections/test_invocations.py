"""Invocation counts: the live invocations and the sliding window's new ones (reference §4)."""

from __future__ import annotations

from projections.fold.invocations import count_invocations
from tests.support.events import summary_event, text_event


def test_an_earlier_event_of_an_invocation_leaves_its_latest_timestamp() -> None:
    counts = count_invocations([text_event("e1", "i1", 105.0), text_event("e2", "i1", 101.0)])
    assert dict(counts.latest_timestamps) == {"i1": 105.0}


def test_an_earlier_event_does_not_make_a_new_invocation_old_at_the_next_summary() -> None:
    # i1 ends at 105: still after the second summary's end 104, a late event at 101 or not.
    counts = count_invocations(
        [
            text_event("e1", "i1", 105.0),
            summary_event("s1", 100.0, 103.0, 106.0),
            text_event("e2", "i1", 101.0),
            summary_event("s2", 100.0, 104.0, 107.0),
        ]
    )
    assert set(counts.new_invocations) == {"i1"}
    assert counts.since_compaction == 1


def test_a_summary_ending_earlier_leaves_an_invocation_ending_exactly_there_old() -> None:
    # s2 moves the bar back from 103 to 100: i2 (102) is new again, i1 (100) is not.
    counts = count_invocations(
        [
            text_event("e1", "i1", 100.0),
            text_event("e2", "i2", 102.0),
            summary_event("s1", 100.0, 103.0, 104.0),
            summary_event("s2", 100.0, 100.0, 105.0),
        ]
    )
    assert counts.previous_end == 100.0
    assert set(counts.new_invocations) == {"i2"}
    assert counts.since_compaction == 1
