"""The view's coverage: the union of its surviving summaries' ranges, written out by hand."""

from __future__ import annotations

from projections.contents import ContentsRequest
from projections.context_view import rebuild_view
from tests.support.events import logged, summary_event


def _coverage(ranges: list[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    summaries = [
        summary_event(f"s{number}", start, end, 20.0 + number)
        for number, (start, end) in enumerate(ranges)
    ]
    view = rebuild_view(ContentsRequest(), logged(summaries, range(len(summaries))))
    return view.coverage


def test_touching_ranges_merge_and_an_inverted_one_covers_nothing() -> None:
    assert _coverage([(1.0, 3.0), (3.0, 5.0), (7.0, 6.0), (8.0, 9.0)]) == ((1.0, 5.0), (8.0, 9.0))


def test_a_one_instant_range_covers_its_instant() -> None:
    assert _coverage([(2.0, 2.0), (4.0, 6.0)]) == ((2.0, 2.0), (4.0, 6.0))


def test_overlapping_ranges_merge_from_the_earliest_start() -> None:
    assert _coverage([(5.0, 8.0), (1.0, 6.0)]) == ((1.0, 8.0),)
