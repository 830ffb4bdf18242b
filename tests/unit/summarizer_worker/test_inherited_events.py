"""A fork's inherited window events are found in their own sessions' slices, at their places."""

from __future__ import annotations

import pytest

from schemas.compaction_request import CompactionRequest, InheritedEvent
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from summarizer_worker.errors import RangeNotFoundError
from summarizer_worker.inherited_events import inherited_records, inherited_starts
from tests.support.events import exchange, logged

FORK = SessionKey("acme/support/u1/fork")
FIRST = SessionKey("acme/support/u1/first")
SECOND = SessionKey("acme/support/u1/second")


def _request(inherited: list[tuple[int, SessionKey, int]], own: list[int]) -> CompactionRequest:
    offsets = [offset for offset, _, _ in inherited] + own
    return CompactionRequest(
        request_id="r1",
        tenant="acme",
        session_key=FORK,
        trigger="sliding_window",
        event_offsets=tuple(Offset(offset) for offset in offsets),
        event_ids=tuple(f"e{offset}" for offset in offsets),
        start_timestamp=1.0,
        end_timestamp=2.0,
        decided_at_offset=Offset(9),
        inherited=tuple(
            InheritedEvent(offset=Offset(at), session_key=key, origin_offset=Offset(origin))
            for at, key, origin in inherited
        ),
        fork_offset=Offset(5) if inherited else None,
    )


def test_each_named_session_is_read_from_its_first_named_offset() -> None:
    request = _request([(-5, FIRST, 43), (-4, FIRST, 40), (-3, SECOND, 7), (-2, SECOND, 9)], [6])
    assert inherited_starts(request) == {FIRST: 40, SECOND: 7}
    assert inherited_starts(_request([], [6, 7])) == {}


def test_the_records_come_back_at_their_places_in_the_fork_in_order() -> None:
    events = exchange(1, 100.0) + exchange(2, 110.0)
    first = logged(events[:2], [40, 43], key=FIRST)
    second = logged(events[2:], [7, 9], key=SECOND)
    request = _request([(-3, SECOND, 7), (-5, FIRST, 43), (-2, SECOND, 9), (-4, FIRST, 40)], [6])
    found = inherited_records(request, {FIRST: first, SECOND: second})
    assert [(r.offset, r.origin_offset, r.envelope.event.id) for r in found] == [
        (-5, 43, "a1"),
        (-4, 40, "q1"),
        (-3, 7, "q2"),
        (-2, 9, "a2"),
    ]
    assert all(isinstance(record, LoggedEvent) for record in found)


def test_a_named_offset_that_holds_nothing_of_its_session_is_not_found() -> None:
    first = logged(exchange(1, 100.0)[:1], [40], key=FIRST)
    request = _request([(-3, FIRST, 40), (-2, FIRST, 41)], [])
    with pytest.raises(RangeNotFoundError, match="offset 41 holds no event of session"):
        inherited_records(request, {FIRST: first})
    with pytest.raises(RangeNotFoundError, match="offset 40"):
        inherited_records(request, {})
