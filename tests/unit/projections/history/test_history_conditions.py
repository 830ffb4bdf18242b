"""Stale and creation statuses by hand, from the rule (projections/README.md, "Conditional ...")."""

from __future__ import annotations

import pytest

from projections.fold.fork import ForkSource, fork_event, inherited
from projections.history.classification import classify_session
from projections.history.event_status import EventStatus
from projections.history.incremental import HistoryState, advance
from schemas.deletion_mark import deletion_event
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from tests.support.conditional_records import creation_record
from tests.support.events import SESSION, logged_event, text_event
from tests.unit.projections.history.fold_oracle import checked_statuses
from tests.unit.projections.test_conditions import at, text

LIVE, STALE, CREATION = EventStatus.LIVE, EventStatus.STALE, EventStatus.CREATION
DELETED, DELETION = EventStatus.DELETED, EventStatus.DELETION


def test_a_creation_then_the_right_and_a_stale_append() -> None:
    records = [creation_record(1, 1, {"a": 1}), text(3, expected=1), text(5, expected=1)]
    assert checked_statuses(records) == {1: CREATION, 3: LIVE, 5: STALE}


def test_of_concurrent_creates_one_is_creation_and_the_others_stale() -> None:
    records = [creation_record(offset, offset, {"n": offset}) for offset in (2, 3, 4)]
    assert checked_statuses(records) == {2: CREATION, 3: STALE, 4: STALE}


def test_a_deletion_ends_creation_and_stale_rows_and_a_new_creation_starts_over() -> None:
    records = [creation_record(1, 1, {}), text(2, expected=1), text(3, expected=1)]
    records += [at(4, deletion_event(event_id="d", timestamp=1.0)), creation_record(5, 5, {})]
    records += [text(6, expected=1), text(7, expected=5)]
    statuses = checked_statuses(records)
    assert statuses == {
        1: DELETED,
        2: DELETED,
        3: DELETED,
        4: DELETION,
        5: CREATION,
        6: STALE,
        7: LIVE,
    }


def test_a_stale_deletion_deletes_nothing() -> None:
    records = [text(1), at(2, deletion_event(event_id="d", timestamp=1.0), expected=0)]
    assert classify_session(records) == {1: LIVE, 2: STALE}


def test_the_incremental_state_keeps_the_writer_offset() -> None:
    state: HistoryState | None = None
    for record in [creation_record(1, 1, {}), text(3, expected=1), text(4, expected=1)]:
        state, _ = advance(state, record.offset, record.envelope)
    assert state is not None
    assert state.writer_offset == 3


def _forked_after_a_creation(expected: int | None) -> list[LoggedEvent]:
    """A fork of a session that holds only its creation record, then one own text."""
    parent = [creation_record(5, 5, {"a": 1})]
    child = SessionKey("acme/support/u1/s2")
    fork = fork_event(ForkSource(SESSION, parent[-1].offset), event_id="f", timestamp=4.0)
    own = logged_event(child, text_event("c1", "d", 7.0), 1)
    if expected is not None:
        own = LoggedEvent(own.offset, own.envelope.model_copy(update={"expected_offset": expected}))
    return [*inherited(parent), logged_event(child, fork, 0), own]


def test_an_inherited_creation_moves_no_writer_offset() -> None:
    """Records at negative offsets move nothing: the fork's first append expects ``-1``."""
    assert checked_statuses(_forked_after_a_creation(-1))[Offset(1)] is LIVE
    assert checked_statuses(_forked_after_a_creation(0))[Offset(1)] is STALE


@pytest.mark.parametrize("first", [creation_record(3, 3, {}), text(3, expected=7)])
def test_offsets_must_rise_after_a_creation_or_a_stale_record(first: LoggedEvent) -> None:
    state, (change,) = advance(None, first.offset, first.envelope)
    assert change.status in {CREATION, STALE}
    with pytest.raises(ValueError, match="offset 3 is not above"):
        advance(state, 3, text(3).envelope)
