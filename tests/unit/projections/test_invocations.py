"""Invocation counts: the live invocations and the sliding window's new ones (reference §4)."""

from __future__ import annotations

from projections.fold.invocations import count_invocations, note_live_event, released_invocations
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


def test_released_invocations_leave_the_ids_and_still_count_in_the_total() -> None:
    counts = count_invocations(
        [
            text_event("e1", "i1", 100.0),
            text_event("e2", "i2", 101.0),
            summary_event("s1", 100.0, 101.0, 102.0),
            text_event("e3", "i3", 103.0),
        ]
    )
    released = released_invocations(counts, ["i1", "i2", "unknown"])
    assert set(released.invocation_ids) == {"i3"}
    assert dict(released.latest_timestamps) == {"i3": 103.0}
    assert released.released == 2  # "unknown" was never live: not counted
    assert released.total == 3
    assert set(released.new_invocations) == {"i3"}
    assert released.previous_end == 101.0


def test_releasing_a_scoped_invocation_drops_its_id_only() -> None:
    # A scoped invocation has an id but no latest timestamp (the sliding window skips it).
    counts = count_invocations(
        [
            text_event("e1", "i1", 100.0),
            text_event("e2", "scoped", 101.0, isolation_scope="sub"),
        ]
    )
    assert dict(counts.latest_timestamps) == {"i1": 100.0}
    released = released_invocations(counts, ["scoped"])
    assert set(released.invocation_ids) == {"i1"}
    assert dict(released.latest_timestamps) == {"i1": 100.0}
    assert (released.released, released.total) == (1, 2)


def test_releasing_nothing_live_changes_nothing() -> None:
    counts = count_invocations([text_event("e1", "i1", 100.0)])
    assert released_invocations(counts, ["other"]) == counts
    assert released_invocations(counts, []) == counts


def test_a_scoped_event_of_a_new_invocation_keeps_the_released_count() -> None:
    counts = released_invocations(
        count_invocations([text_event("e1", "i1", 100.0), text_event("e2", "i2", 101.0)]),
        ["i1"],
    )
    assert counts.total == 2
    after = note_live_event(counts, text_event("e3", "i3", 102.0, isolation_scope="sub"))
    assert after.released == 1
    assert set(after.invocation_ids) == {"i2", "i3"}
    assert after.total == 3
