"""The sliding-window trigger (reference §4), case by case from the reference text.

Expected values are worked out by hand from the reference (comments show the arithmetic).
"""

from __future__ import annotations

from projections.compaction.config import CompactionConfig
from projections.compaction.sliding_window import select_sliding_window
from tests.support.events import (
    call_event,
    exchange,
    rewind_event,
    summary_event,
    text_event,
)


def _sliding(interval: int, overlap: int) -> CompactionConfig:
    return CompactionConfig(compaction_interval=interval, overlap_size=overlap)


# --------------------------------------------------------------------------- §4 sliding window


def test_sliding_summary_with_end_zero_is_skipped_even_when_appended_last() -> None:
    events = [
        *exchange(1, 100),
        *exchange(2, 102),
        summary_event("s1", 100, 103, 104),
        *exchange(3, 105),
        summary_event("s0", 0.0, 0.0, 107),
    ]
    window = select_sliding_window(events, _sliding(1, 0))
    assert window is not None
    assert window.event_ids == ("q3", "a3")
    assert (window.start_timestamp, window.end_timestamp) == (105.0, 106.0)


def test_sliding_invocation_with_max_timestamp_zero_is_never_new() -> None:
    events = [*exchange(0, 0.0), *exchange(1, 100)]
    events[1] = text_event("a0", "inv0", 0.0, author="agent")
    assert select_sliding_window(events, _sliding(2, 0)) is None
    # It still counts as an older invocation for the overlap.
    window = select_sliding_window(events, _sliding(1, 1))
    assert window is not None
    assert window.event_ids == ("q0", "a0", "q1", "a1")
    assert (window.start_timestamp, window.end_timestamp) == (0.0, 101.0)


def test_sliding_previous_end_is_most_recently_appended_not_latest_survivor() -> None:
    events = [
        *exchange(1, 100),
        *exchange(2, 102),
        summary_event("wide", 100, 103, 104),
        summary_event("narrow", 100, 101, 105),  # subsumed, but appended last
        *exchange(3, 106),
    ]
    # Previous end 101 (not 103): inv2 (max 103) and inv3 are new, 2 >= 2.
    # Gate: W' [102, 107] leaves "wide" visible; removable = 38 + 39 - 27 = 50 > 41.
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q2", "a2", "q3", "a3")


def test_sliding_slice_keeps_other_and_anonymous_events() -> None:
    events = [
        *exchange(1, 100),
        summary_event("s", 100, 101, 102),
        text_event("q2", "inv2", 103),
        text_event("anon", "", 104),
        text_event("q3", "inv3", 105),
        text_event("a2", "inv2", 106, author="agent"),
        text_event("a3", "inv3", 107, author="agent"),
    ]
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q2", "anon", "q3", "a2", "a3")
    assert (window.start_timestamp, window.end_timestamp) == (103.0, 107.0)


def test_sliding_ignores_scoped_events() -> None:
    events = [
        text_event("q1", "inv1", 100),
        text_event("t1", "inv1", 101, isolation_scope="task"),
        text_event("a1", "inv1", 102, author="agent"),
        *exchange(2, 103),
    ]
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2")
    scoped_only = [*exchange(1, 100), text_event("t", "invS", 102, isolation_scope="task")]
    assert select_sliding_window(scoped_only, _sliding(2, 0)) is None


def test_sliding_slice_ends_at_last_event_of_any_kind_of_the_end_invocation() -> None:
    # §4 step 7 read literally: a summary sharing inv2's id is inv2's last
    # event, so the slice reaches it (summaries themselves are left out).
    events = [
        *exchange(1, 100),
        *exchange(2, 102),
        text_event("anon", "", 104),
        summary_event("s", 1.0, 2.0, 105, invocation_id="inv2"),
    ]
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2", "anon")
    assert (window.start_timestamp, window.end_timestamp) == (100.0, 104.0)


def test_sliding_slice_starts_at_first_event_of_any_kind_of_the_start_invocation() -> None:
    events = [
        *exchange(1, 100),
        summary_event("s", 100, 101, 102, invocation_id="inv2"),
        text_event("anon", "", 103),
        *exchange(2, 104),
    ]
    window = select_sliding_window(events, _sliding(1, 0))
    assert window is not None
    assert window.event_ids == ("anon", "q2", "a2")


def test_sliding_gate_refuses_small_window_after_big_summary_then_retries() -> None:
    events = [
        *exchange(1, 100),
        summary_event("s", 100, 101, 102, "S" * 200),  # 238 characters
        *exchange(2, 103),
    ]
    # removable = 38 + 39 - 27 = 50 <= 238
    assert select_sliding_window(events, _sliding(1, 0)) is None
    events += exchange(3, 105, answer="A" * 300)
    window = select_sliding_window(events, _sliding(1, 0))
    assert window is not None
    assert window.event_ids == ("q2", "a2", "q3", "a3")


def test_sliding_first_summary_takes_everything_and_overlap_is_clamped() -> None:
    events = [*exchange(1, 100), *exchange(2, 102), *exchange(3, 104)]
    window = select_sliding_window(events, _sliding(3, 5))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q2", "a2", "q3", "a3")


def test_sliding_rewound_invocations_are_not_counted() -> None:
    events = [*exchange(1, 100), *exchange(2, 102), rewind_event("r", "inv2", 104)]
    assert select_sliding_window(events, _sliding(2, 0)) is None
    events += exchange(3, 105)
    window = select_sliding_window(events, _sliding(2, 0))
    assert window is not None
    assert window.event_ids == ("q1", "a1", "q3", "a3")


def test_sliding_empty_prefix_stops() -> None:
    events = [
        call_event("c", "inv1", 100, "x", long_running_tool_ids=["x"]),
        *exchange(2, 101),
    ]
    # The long-running call of the first (older) invocation is protected.
    assert select_sliding_window(events, _sliding(2, 0)) is None
