"""The events a summary covers, a page at a time: hand-worked sessions of the masking rules.

A summary covers the live raw events whose timestamps lie in its range, both
ends inclusive (reference §3.2, §3.3); rewinds apply first (§3.1).
"""

from __future__ import annotations

from projections.fold.rewind import drop_rewound
from projections.fold.summary_expansion import CoveredPage, SummaryMissing, covered_page
from schemas.logged_event import LoggedEvent
from tests.support.events import ids, logged, rewind_event, summary_event, text_event


def _live(records: list[LoggedEvent]) -> list[LoggedEvent]:
    kept = {id(event) for event in drop_rewound([record.envelope.event for record in records])}
    return [record for record in records if id(record.envelope.event) in kept]


def _ids(page: CoveredPage | SummaryMissing) -> list[str]:
    assert isinstance(page, CoveredPage)
    return ids([record.envelope.event for record in page.records])


def _docstring_session() -> list[LoggedEvent]:
    events = [
        text_event("e1", "i1", 100),
        text_event("e2", "i1", 101, author="agent"),
        summary_event("s", 100.0, 101.0, 102.0),
        text_event("e3", "i2", 103),
    ]
    return logged(events, [0, 2, 3, 4])


def test_a_summary_covers_the_raw_events_of_its_range_in_stream_order() -> None:
    page = covered_page(_docstring_session(), "s", after=-1, size=10)
    assert _ids(page) == ["e1", "e2"]
    assert isinstance(page, CoveredPage)
    assert not page.more


def test_pages_continue_after_the_offset_the_last_one_ended_at() -> None:
    first = covered_page(_docstring_session(), "s", after=-1, size=1)
    assert _ids(first) == ["e1"]
    assert isinstance(first, CoveredPage)
    assert first.more
    second = covered_page(_docstring_session(), "s", after=first.records[-1].offset, size=1)
    assert _ids(second) == ["e2"]
    assert isinstance(second, CoveredPage)
    assert not second.more
    exact = covered_page(_docstring_session(), "s", after=-1, size=2)
    assert isinstance(exact, CoveredPage)
    assert not exact.more  # nothing covered follows the second event


def test_both_ends_count_other_summaries_are_left_out_and_later_events_count_too() -> None:
    events = [
        text_event("before", "i1", 99.5),
        text_event("start", "i1", 100),
        summary_event("inner", 100.0, 100.5, 100.6),
        text_event("end", "i1", 101, author="agent"),
        summary_event("outer", 100.0, 101.0, 102.0),
        text_event("late", "i2", 100.5),  # a late timestamp inside the range
        text_event("after", "i2", 101.5),
    ]
    records = logged(events, [1, 2, 3, 4, 5, 6, 7])
    assert _ids(covered_page(records, "outer", after=-1, size=10)) == ["start", "end", "late"]
    # A summary contained in another one still expands its own range.
    assert _ids(covered_page(records, "inner", after=-1, size=10)) == ["start", "late"]


def test_an_inverted_range_covers_nothing() -> None:
    events = [text_event("e1", "i1", 100), summary_event("s", 101.0, 100.0, 102.0)]
    assert _ids(covered_page(logged(events, [0, 1]), "s", after=-1, size=10)) == []


def test_rewound_events_are_not_listed() -> None:
    events = [
        text_event("a1", "a", 100),
        text_event("b1", "b", 101),
        rewind_event("r", "b", 102),
        text_event("c1", "c", 103),
        summary_event("s", 100.0, 103.0, 104.0),
    ]
    live = _live(logged(events, [0, 1, 2, 3, 4]))
    assert _ids(covered_page(live, "s", after=-1, size=10)) == ["a1", "c1"]


def test_an_id_of_no_live_event_or_of_no_summary_is_missing() -> None:
    records = _docstring_session()
    unknown = covered_page(records, "nope", after=-1, size=10)
    assert unknown == SummaryMissing("the session has no live event 'nope'")
    raw = covered_page(records, "e2", after=-1, size=10)
    assert raw == SummaryMissing("the session's event 'e2' is not a summary")


def test_the_last_live_summary_with_the_id_is_the_one_expanded() -> None:
    events = [
        text_event("e1", "i1", 100),
        summary_event("s", 100.0, 100.0, 100.5),
        text_event("e2", "i1", 101),
        summary_event("s", 100.0, 101.0, 102.0, text="again"),
    ]
    assert _ids(covered_page(logged(events, [0, 1, 2, 3]), "s", after=-1, size=10)) == ["e1", "e2"]
