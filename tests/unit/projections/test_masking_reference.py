"""Surviving summaries and masking (reference §3.2, §3.3), case by case from the reference text.

Expected values are worked out by hand from the reference (comments show the arithmetic).
"""

from __future__ import annotations

import math

from projections.compaction.masking import (
    latest_summary,
    latest_summary_end,
    mask_compacted,
    surviving_summary_positions,
)
from schemas.event import Event
from tests.support.events import (
    summary_event,
    text_event,
)


def _labels(events: list[Event]) -> list[str]:
    return [f"S:{e.id}" if e.actions.compaction is not None else e.id for e in events]


# --------------------------------------------------------------------------- §3.2 survivors


def test_nan_bound_always_survives_and_never_hides() -> None:
    nan = math.nan
    events = [summary_event("n", 90, nan, 1), summary_event("a", 100, 101, 2)]
    assert surviving_summary_positions(events) == [0, 1]
    # A containing range does not hide a NaN-bounded one either.
    events += [summary_event("w", 0, 1000, 3), summary_event("m", nan, 101, 4)]
    assert surviving_summary_positions(events) == [0, 2, 3]


def test_nan_bounded_latest_summary_has_nan_end() -> None:
    events = [summary_event("w", 0, 1000, 3), summary_event("n", 90, math.nan, 4)]
    latest = latest_summary(events)
    assert latest is not None
    assert latest.id == "n"
    assert math.isnan(latest_summary_end(events))


def test_nan_range_hides_nothing_but_is_shown_at_its_end() -> None:
    events = [text_event("e1", "i", 100), summary_event("n", math.nan, 105, 106)]
    assert _labels(mask_compacted(events, "")) == ["e1", "S:n"]


def test_nan_end_summary_keeps_its_place_before_raw_events() -> None:
    # A NaN key compares neither less nor greater, so the stable sort keeps
    # the initial order: summaries first, then raw events (as ADK builds it).
    events = [
        text_event("e1", "i", 100),
        summary_event("n", 90, math.nan, 101),
        text_event("e2", "i", 102),
    ]
    assert _labels(mask_compacted(events, "")) == ["S:n", "e1", "e2"]


def test_inverted_ranges_take_part_in_subsumption() -> None:
    wide = [summary_event("inv", 105, 100, 1), summary_event("w", 100, 110, 2)]
    assert surviving_summary_positions(wide) == [1]
    # [104, 101] contains [105, 100]: 104 <= 105 and 101 >= 100.
    nested = [summary_event("outer", 105, 100, 1), summary_event("inner", 104, 101, 2)]
    assert surviving_summary_positions(nested) == [1]


def test_identical_ranges_last_appended_survives() -> None:
    events = [
        summary_event("s1", 100, 101, 102, "first"),
        summary_event("s2", 100, 101, 103, "second"),
    ]
    assert surviving_summary_positions(events) == [1]
    shown = mask_compacted(events, "agent")
    assert len(shown) == 1
    assert shown[0].content is not None
    assert shown[0].content.parts is not None
    assert shown[0].content.parts[0].text == "second"


def test_latest_summary_is_last_survivor_not_widest_nor_last_appended() -> None:
    events = [
        summary_event("wide", 100, 105, 106),
        summary_event("part", 103, 108, 109),
        summary_event("narrow", 101, 102, 110),  # contained in "wide": not a survivor
    ]
    assert surviving_summary_positions(events) == [0, 1]
    latest = latest_summary(events)
    assert latest is not None
    assert latest.id == "part"
    assert latest_summary_end(events) == 108.0
    assert latest_summary_end([text_event("e", "i", 1)]) == 0.0


# --------------------------------------------------------------------------- §3.3 masking


def test_inverted_range_hides_nothing_and_shows_at_end_time() -> None:
    events = [
        text_event("e1", "i", 100),
        text_event("e2", "i", 103),
        text_event("e3", "i", 105),
        summary_event("s", 105, 100, 106),
    ]
    # Sorted by (timestamp, position): e1 (100, 0), S (100, 3), e2, e3.
    assert _labels(mask_compacted(events, "")) == ["e1", "S:s", "e2", "e3"]


def test_late_summary_hides_only_its_range() -> None:
    events = [
        text_event("e1", "i", 100),
        text_event("e2", "i", 101),
        text_event("e3", "i", 102),
        summary_event("s", 100, 101, 103),
    ]
    assert _labels(mask_compacted(events, "")) == ["S:s", "e3"]


def test_any_summary_resorts_raw_events_by_timestamp() -> None:
    raw = [text_event("e1", "i", 105), text_event("e2", "i", 100)]
    assert _labels(mask_compacted(raw, "")) == ["e1", "e2"]  # no summary: stream order
    events = [*raw, summary_event("s", 10, 20, 106)]
    assert _labels(mask_compacted(events, "")) == ["S:s", "e2", "e1"]


def test_masking_bounds_are_inclusive_and_union_is_merged() -> None:
    events = [
        text_event("before", "i", 99.5),
        text_event("at_start", "i", 100),
        text_event("gap", "i", 103),
        text_event("at_end", "i", 104),
        text_event("after", "i", 104.5),
        summary_event("a", 100, 102, 105),
        summary_event("b", 101, 104, 106),
    ]
    assert _labels(mask_compacted(events, "")) == ["before", "S:a", "S:b", "after"]


def test_materialized_summary_shape() -> None:
    summary = summary_event(
        "s", 100, 101, 150, "text", branch="root.a", isolation_scope="sc", invocation_id="cmp"
    )
    for agent, author in (("helper", "helper"), ("", "model")):
        (shown,) = mask_compacted([summary], agent)
        assert shown.author == author
        assert shown.timestamp == 101.0
        assert shown.branch == "root.a"
        assert shown.isolation_scope == "sc"
        assert shown.invocation_id == "cmp"
        assert shown.content is not None
        assert shown.content.role == "model"
        assert shown.actions.compaction is not None
