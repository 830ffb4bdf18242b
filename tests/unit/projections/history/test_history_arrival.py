"""What both classifications hold a record to: one session, rising offsets, after any record.

Whatever the last record was (applied, passed over, a deletion, an answer to a
retired request, a rewind), the next one must lie above its offset and, unless
it is an inherited record (negative offset), be of the session's own key. The
expected errors are the contract of `advance` and `classify_session`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

import pytest

from projections.compaction.summary_request import with_summary_request_id
from projections.event_kinds import REFUSAL_AUTHOR
from projections.history.classification import classify_session
from projections.history.event_status import EventStatus
from projections.history.incremental import HistoryState, advance
from schemas.deletion_mark import deletion_event
from schemas.errors import SessionMismatchError
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    logged_event,
    rewind_event,
    session_key,
    summary_event,
    text_event,
)
from tests.unit.projections.history.fold_oracle import checked_statuses

OTHER: Final = session_key(4)
PARENT: Final = session_key(5)


def _answer(event_id: str, request_id: str, timestamp: float) -> Event:
    return with_summary_request_id(summary_event(event_id, 1.0, 1.0, timestamp), request_id)


def _own(*placed: tuple[int, Event]) -> list[LoggedEvent]:
    return [logged_event(SESSION, each, offset) for offset, each in placed]


E1, E2 = text_event("e1", "a", 1.0), text_event("e2", "b", 2.0)
DELETE = deletion_event(event_id="del", timestamp=3.0)

#: Records ending in each kind of record, at offsets with a gap before the last one.
SCENARIOS: Final[dict[str, list[LoggedEvent]]] = {
    "an applied event": _own((10, E1), (12, E2)),
    "a partial event first": _own((12, text_event("p", "a", 1.0, partial=True))),
    "a duplicate": _own((10, E1), (12, E1)),
    "a deletion first": _own((12, DELETE)),
    "a deletion": _own((10, E1), (12, DELETE)),
    "an answer to a retired request": _own(
        (10, _answer("s1", "r1", 2.0)), (11, DELETE), (13, _answer("s2", "r1", 4.0))
    ),
    # Hand-made: inherited() hands no deletion over, but negative offsets are never held.
    "an inherited deletion, then an answer to the request it retired": [
        logged_event(PARENT, _answer("s1", "r1", 2.0), -2),
        logged_event(PARENT, DELETE, -1),
        logged_event(SESSION, _answer("s2", "r1", 4.0), 12),
    ],
    "a rewind to an unknown invocation": _own((10, E1), (12, rewind_event("r", "zz", 3.0))),
    "an effective rewind": _own((10, E1), (12, rewind_event("r", "a", 3.0))),
}


def _advanced(records: Sequence[LoggedEvent]) -> HistoryState:
    state: HistoryState | None = None
    for record in records:
        state, _ = advance(state, record.offset, record.envelope)
    assert state is not None
    return state


@pytest.mark.parametrize("records", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_after_any_record_a_lower_offset_is_refused(records: list[LoggedEvent]) -> None:
    last = records[-1]
    below = last.offset - 1  # above every earlier record, below the last one
    message = f"offset {below} is not above the last offset {last.offset}: "
    message += "a session's records are classified once each, in rising offsets"
    late = LoggedEvent(Offset(below), last.envelope)
    whole = f"^{re.escape(message)}$"
    with pytest.raises(ValueError, match=whole):
        advance(_advanced(records), below, late.envelope)
    with pytest.raises(ValueError, match=whole):
        classify_session([*records, late])


@pytest.mark.parametrize("records", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_after_any_record_a_record_of_another_session_is_refused(
    records: list[LoggedEvent],
) -> None:
    stray = logged_event(OTHER, text_event("x", "x", 9.0), records[-1].offset + 1)
    with pytest.raises(SessionMismatchError) as raised:
        advance(_advanced(records), stray.offset, stray.envelope)
    assert (raised.value.projection_key, raised.value.event_key) == (SESSION, OTHER)
    with pytest.raises(SessionMismatchError) as raised:
        classify_session([*records, stray])
    assert (raised.value.projection_key, raised.value.event_key) == (SESSION, OTHER)


def test_offset_zero_is_an_own_record_held_to_the_session() -> None:
    first = logged_event(SESSION, E1, 0)
    stray = logged_event(OTHER, E2, 1)
    state, _ = advance(None, 0, first.envelope)
    with pytest.raises(SessionMismatchError) as raised:
        advance(state, 1, stray.envelope)
    assert (raised.value.projection_key, raised.value.event_key) == (SESSION, OTHER)
    with pytest.raises(SessionMismatchError):
        classify_session([first, stray])


def test_records_of_the_pipelines_author_that_fork_nothing_are_applied() -> None:
    records = _own(
        (10, text_event("c1", "a", 1.0, author=REFUSAL_AUTHOR)),
        (11, text_event("e2", "b", 2.0)),
    )
    assert checked_statuses(records) == {10: EventStatus.LIVE, 11: EventStatus.LIVE}
