"""The plain rebuild's record rules, on hand-written records with the kept ids written out.

:func:`projections.fold.rebuild.effective_records` and
:func:`~projections.fold.rebuild.refused_requests` are the oracle other tests hold the
fold to, so their own rules are pinned here by example: a record at an offset not above every
earlier one is dropped however different its event, and the records after it are still read.
"""

from __future__ import annotations

from projections.compaction.summary_request import refusal_event, with_summary_request_id
from projections.fold.rebuild import effective_records, refused_requests
from schemas.event import Event
from schemas.logged_event import LoggedEvent
from tests.support.events import ids, logged, summary_event, text_event


def _kept(records: list[LoggedEvent]) -> list[tuple[int, str]]:
    return [(record.offset, record.envelope.event.id) for record in effective_records(records)]


def _refusal(request_id: str, event_id: str, timestamp: float) -> Event:
    return refusal_event(request_id, "gave up", event_id=event_id, timestamp=timestamp)


def test_the_docstring_example_drops_the_redelivery_and_the_second_answer() -> None:
    summary = with_summary_request_id(summary_event("s", 1.0, 1.0, 2.0), "r1")
    other_summary = with_summary_request_id(summary_event("s2", 1.0, 1.0, 3.0, "again"), "r1")
    records = logged(
        [
            text_event("a", "i1", 1.0),
            summary,
            summary,
            other_summary,
            text_event("b", "i2", 4.0),
        ],
        [0, 1, 1, 2, 3],
    )
    assert _kept(records) == [(0, "a"), (1, "s"), (3, "b")]


def test_a_different_event_at_an_offset_already_read_is_dropped() -> None:
    records = logged([text_event("a", "i1", 1.0), text_event("b", "i1", 2.0)], [5, 5])
    assert _kept(records) == [(5, "a")]


def test_an_event_at_a_lower_offset_is_dropped() -> None:
    records = logged([text_event("a", "i1", 1.0), text_event("b", "i1", 2.0)], [5, 4])
    assert _kept(records) == [(5, "a")]


def test_records_after_a_redelivery_are_still_read() -> None:
    events = [
        text_event("a", "i1", 1.0),
        text_event("b", "i1", 2.0),
        text_event("b2", "i1", 2.5),
        text_event("c", "i1", 3.0),
    ]
    records = logged(events, [0, 1, 1, 2])
    assert _kept(records) == [(0, "a"), (1, "b"), (2, "c")]
    assert ids([record.envelope.event for record in effective_records(records)]) == [
        "a",
        "b",
        "c",
    ]


def test_the_refusal_docstring_example_skips_the_redelivered_refusal() -> None:
    records = logged(
        [
            text_event("a", "i1", 1.0),
            _refusal("r1", "x1", 2.0),
            _refusal("r2", "x2", 2.0),
            text_event("b", "i2", 3.0),
        ],
        [0, 1, 1, 2],
    )
    assert refused_requests(records) == {"r1"}
    assert _kept(records) == [(0, "a"), (2, "b")]


def test_refusals_after_a_redelivery_are_still_counted() -> None:
    records = logged(
        [
            _refusal("r1", "x1", 1.0),
            _refusal("r2", "x2", 1.5),
            _refusal("r3", "x3", 2.0),
            _refusal("r4", "x4", 2.5),
        ],
        [4, 4, 3, 6],
    )
    assert refused_requests(records) == {"r1", "r4"}
