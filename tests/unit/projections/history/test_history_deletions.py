"""Hand-checked deletions: what a deletion record ends, and which later answers it drops.

Each example states its expected statuses, worked out from the rule of
projections/history/deletion.py and projections/README.md ("Deletion"), and
holds them against the fold and the incremental fold (fold_oracle.py), so the
state a deletion leaves must go on as the full classification does.
"""

from __future__ import annotations

from typing import Any

from projections.compaction.summary_request import refusal_event, with_summary_request_id
from projections.history.event_status import EventStatus
from projections.history.incremental import HistoryState, advance, statuses_of
from schemas.deletion_mark import deletion_event
from schemas.event import Event
from schemas.logged_event import LoggedEvent
from tests.support.events import logged, summary_event, text_event
from tests.unit.projections.history.fold_oracle import checked_statuses

LIVE, DELETED, DELETION = EventStatus.LIVE, EventStatus.DELETED, EventStatus.DELETION


def _records(*events: Event) -> list[LoggedEvent]:
    return logged(events, range(10, 10 + len(events)))


def _answer(event_id: str, request_id: str, timestamp: float, **fields: Any) -> Event:
    summary = summary_event(event_id, 1.0, 1.0, timestamp, **fields)
    return with_summary_request_id(summary, request_id)


def _delete(event_id: str, timestamp: float) -> Event:
    return deletion_event(event_id=event_id, timestamp=timestamp)


def test_a_summary_of_a_request_the_deleted_incarnation_answered_is_deleted() -> None:
    records = _records(
        text_event("e1", "a", 1.0),
        _answer("s1", "r1", 2.0),
        _delete("del", 3.0),
        _answer("s2", "r1", 4.0),
        text_event("e2", "b", 5.0),
    )
    assert list(checked_statuses(records).values()) == [DELETED, DELETED, DELETION, DELETED, LIVE]
    state: HistoryState | None = None
    for record in records:
        state, _ = advance(state, record.offset, record.envelope)
    assert state is not None
    assert statuses_of(state) == {14: LIVE}


def test_a_second_deletion_keeps_the_requests_the_first_one_retired() -> None:
    records = _records(
        text_event("e1", "a", 1.0),
        _answer("s1", "r1", 2.0),
        _delete("del1", 3.0),
        text_event("e2", "b", 4.0),
        _delete("del2", 5.0),
        _answer("s2", "r1", 6.0),
    )
    assert list(checked_statuses(records).values()) == [
        DELETED,
        DELETED,
        DELETION,
        DELETED,
        DELETION,
        DELETED,
    ]


def test_a_refused_request_is_retired_and_a_partial_summarys_request_is_not() -> None:
    records = _records(
        refusal_event("r1", "gave up", event_id="no", timestamp=1.0),
        _answer("p", "r2", 2.0, partial=True),
        _delete("del", 3.0),
        _answer("s1", "r1", 4.0),
        _answer("s2", "r2", 5.0),
    )
    assert list(checked_statuses(records).values()) == [DELETED, DELETED, DELETION, DELETED, LIVE]
