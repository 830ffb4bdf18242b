from __future__ import annotations

import math

import pytest

from projections.compaction.masking import (
    coverage,
    is_covered,
    latest_summary,
    latest_summary_end,
    mask_compacted,
    materialize_summary,
    summary_range,
    surviving_summary_positions,
)
from projections.event_kinds import is_summary
from schemas.event import Event
from tests.support.events import ids, summary_event, text_event


def test_is_summary_distinguishes_compaction_events() -> None:
    assert is_summary(summary_event("s", 1, 2, 3))
    assert not is_summary(text_event("e", "i", 1))


def test_contained_summary_is_dropped_partial_overlap_both_survive() -> None:
    events = [
        summary_event("s1", 100, 103, 104),
        text_event("e", "i", 105),
        summary_event("s2", 102, 108, 109),
        summary_event("s3", 101, 102, 110),  # inside s1
    ]
    assert surviving_summary_positions(events) == [0, 2]


def test_identical_ranges_keep_the_last_appended() -> None:
    events = [summary_event("s1", 1, 2, 3), summary_event("s2", 1, 2, 4)]
    assert surviving_summary_positions(events) == [1]
    latest = latest_summary(events)
    assert latest is not None
    assert latest.id == "s2"


def test_nan_range_survives_and_hides_nothing() -> None:
    events = [
        summary_event("n", math.nan, 200, 201),
        summary_event("s", 100, 101, 202),
        text_event("e", "i", 150),
    ]
    assert surviving_summary_positions(events) == [0, 1]
    masked = mask_compacted(events, "agent")
    assert ids(masked) == ["s", "e", "n"]


def test_latest_summary_end_is_zero_without_summaries() -> None:
    assert latest_summary_end([text_event("e", "i", 1)]) == 0.0
    assert latest_summary([]) is None


def test_latest_summary_is_last_survivor_in_stream_order_not_widest() -> None:
    events = [summary_event("wide", 100, 110, 120), summary_event("late", 111, 115, 121)]
    assert latest_summary_end(events) == 115.0
    events = [summary_event("late", 101, 105, 120), summary_event("wide", 100, 110, 121)]
    assert latest_summary_end(events) == 110.0


def test_mask_boundaries_inclusive_and_summary_shown_at_end() -> None:
    events = [
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101),
        text_event("e3", "i2", 102),
        summary_event("s", 100, 101, 103),
    ]
    masked = mask_compacted(events, "")
    assert ids(masked) == ["s", "e3"]
    shown = masked[0]
    assert shown.author == "model"
    assert shown.timestamp == 101.0
    assert shown.content is not None
    assert shown.content.role == "model"
    assert shown.invocation_id == "cmp-s"


def test_mask_authors_summary_as_current_agent_and_forces_model_role() -> None:
    summary = summary_event("s", 1, 2, 3).model_copy()
    events = [summary]
    shown = mask_compacted(events, "helper")[0]
    assert shown.author == "helper"
    assert shown.content is not None
    assert shown.content.parts is not None
    assert shown.content.parts[0].text == "sum"


def test_mask_resorts_unrelated_raw_events_by_timestamp() -> None:
    events = [
        text_event("late", "i1", 120),
        text_event("early", "i1", 110),
        summary_event("s", 50, 60, 130),
    ]
    assert ids(mask_compacted(events, "a")) == ["s", "early", "late"]


def test_equal_timestamps_keep_stream_order() -> None:
    events = [
        text_event("b", "i1", 5),
        summary_event("s", 1, 5, 6),  # shown at 5, position 1
        text_event("c", "i1", 7),
        text_event("a", "i1", 5.5),
    ]
    # b (ts 5) is covered; summary at 5 precedes a at 5.5.
    assert ids(mask_compacted(events, "a")) == ["s", "a", "c"]


def test_inverted_range_hides_nothing_but_is_shown_at_its_end() -> None:
    events = [
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101),
        summary_event("s", 101, 100, 102),
    ]
    assert ids(mask_compacted(events, "a")) == ["e1", "s", "e2"]


def test_touching_ranges_merge_and_late_summary_keeps_newer_events() -> None:
    events = [
        text_event("e1", "i", 100),
        text_event("e2", "i", 101),
        text_event("e3", "i", 102),
        text_event("e4", "i", 103),
        summary_event("s1", 100, 101, 104),
        summary_event("s2", 101, 102, 105),
    ]
    assert ids(mask_compacted(events, "a")) == ["s1", "s2", "e4"]


def test_subsumed_summary_vanishes() -> None:
    events = [summary_event("inner", 2, 3, 4), summary_event("outer", 1, 5, 6)]
    assert ids(mask_compacted(events, "a")) == ["outer"]


def test_without_summaries_stream_order_is_kept() -> None:
    events = [text_event("late", "i1", 120), text_event("early", "i1", 110)]
    assert ids(mask_compacted(events, "a")) == ["late", "early"]


def test_coverage_merges_touching_ranges_and_drops_inverted_ones() -> None:
    covered = coverage([(3.0, 5.0), (1.0, 3.0), (7.0, 6.0), (8.0, 9.0)])
    assert (covered.starts, covered.ends) == ((1.0, 8.0), (5.0, 9.0))


def test_the_bounds_of_each_interval_are_covered_and_the_gaps_are_not() -> None:
    covered = coverage([(1.0, 5.0), (8.0, 9.0)])
    assert [is_covered(t, covered) for t in (0.5, 1.0, 5.0, 6.0, 8.0, 9.0, 9.5)] == [
        False,
        True,
        True,
        False,
        True,
        True,
        False,
    ]
    assert not is_covered(3.0, coverage([]))


def test_the_range_of_an_event_that_is_no_summary_is_refused() -> None:
    with pytest.raises(ValueError, match="'q1' is not a summary event"):
        summary_range(text_event("q1", "i1", 1.0))


def test_a_shown_summary_keeps_five_fields_of_its_event_and_defaults_the_rest() -> None:
    summary = summary_event(
        "s",
        100,
        103,
        104,
        branch="root.a",
        isolation_scope="call-1",
        usage_metadata={"prompt_token_count": 7},
        custom_metadata={"k": "v"},
        turn_complete=True,
        long_running_tool_ids=["c1"],
    )
    shown = materialize_summary(summary, "root")
    compaction = summary.actions.compaction
    assert compaction is not None
    expected = Event.model_construct(
        id="s",
        invocation_id="cmp-s",
        author="root",
        branch="root.a",
        isolation_scope="call-1",
        timestamp=103,
        content=compaction.compacted_content,
        actions=summary.actions,
    )
    assert shown == expected
    assert shown.model_fields_set == expected.model_fields_set
    assert (shown.usage_metadata, shown.custom_metadata) == (None, None)
    assert (shown.turn_complete, shown.long_running_tool_ids) == (None, None)
    assert materialize_summary(summary, "").author == "model"
