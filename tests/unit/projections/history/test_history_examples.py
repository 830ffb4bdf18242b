"""Hand-checked examples of each status, the changes `advance` reports, and bad input.

Each example states its expected statuses, worked out from the reference's
rules by hand, and holds them against the fold too (fold_oracle.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from projections.compaction.summary_request import refusal_event, with_summary_request_id
from projections.fold.fork import ForkSource, fork_event, inherited
from projections.history.classification import classify_session, live_history
from projections.history.event_status import EventStatus
from projections.history.incremental import HistoryState, StatusChange, advance, statuses_of
from schemas.errors import SessionMismatchError
from schemas.event import Event
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from tests.support.events import (
    SESSION,
    bare_event,
    envelope,
    event,
    logged,
    logged_event,
    rewind_event,
    session_key,
    summary_event,
    text_event,
)
from tests.unit.projections.history.fold_oracle import assert_statuses_match_fold, checked_statuses

LIVE, MASKED, SUPERSEDED = EventStatus.LIVE, EventStatus.MASKED, EventStatus.SUPERSEDED
REWOUND, REWIND, DUPLICATE = EventStatus.REWOUND, EventStatus.REWIND, EventStatus.DUPLICATE


def _records(*events: Event) -> list[LoggedEvent]:
    return logged(events, range(10, 10 + len(events)))


def _classified(records: Sequence[LoggedEvent]) -> list[EventStatus]:
    """The statuses of `records` in order, after checking both folds agree with them."""
    statuses = checked_statuses(records)
    return list(statuses.values())


def _changes_of_last(records: Sequence[LoggedEvent]) -> tuple[StatusChange, ...]:
    state: HistoryState | None = None
    changes: tuple[StatusChange, ...] = ()
    for record in records:
        state, changes = advance(state, record.offset, record.envelope)
    return changes


def test_a_summary_masks_the_raw_events_in_its_range_both_ends_inclusive() -> None:
    records = _records(
        text_event("e1", "a", 1.0),
        text_event("e2", "a", 2.0, author="agent"),
        text_event("e3", "b", 3.0),
        summary_event("s", 1.0, 2.0, 4.0),
    )
    assert _classified(records) == [MASKED, MASKED, LIVE, LIVE]
    assert _changes_of_last(records) == ((10, MASKED), (11, MASKED), (13, LIVE))
    assert [r.envelope.event.id for r in live_history(records)] == ["e3", "s"]


def test_a_late_event_inside_a_summary_range_is_masked_on_arrival() -> None:
    records = _records(
        text_event("e1", "a", 1.0),
        summary_event("s", 1.0, 3.0, 4.0),
        text_event("late", "a", 2.0, author="agent"),
        text_event("e5", "b", 5.0),
    )
    assert _classified(records) == [MASKED, LIVE, MASKED, LIVE]
    assert _changes_of_last(records[:3]) == ((12, MASKED),)


def test_a_summary_contained_in_a_later_one_is_superseded_and_identical_ranges_keep_the_last() -> (
    None
):
    records = _records(
        text_event("e1", "a", 1.0),
        text_event("e2", "b", 2.0),
        summary_event("s1", 1.0, 1.0, 3.0),
        summary_event("s2", 1.0, 2.0, 4.0),
        summary_event("s3", 1.0, 2.0, 5.0),
        summary_event("s4", 2.0, 2.0, 6.0),  # contained in s3: superseded on arrival
    )
    assert _classified(records) == [MASKED, MASKED, SUPERSEDED, SUPERSEDED, LIVE, SUPERSEDED]
    assert _changes_of_last(records[:5]) == ((13, SUPERSEDED), (14, LIVE))


def test_a_rewind_annuls_its_target_invocation_and_what_follows() -> None:
    records = _records(
        text_event("a1", "a", 1.0),
        text_event("b1", "b", 2.0),
        rewind_event("r", "b", 3.0),
        text_event("c1", "c", 4.0),
    )
    assert _classified(records) == [LIVE, REWOUND, REWIND, LIVE]


def test_a_rewind_to_an_unknown_invocation_only_marks_itself() -> None:
    records = _records(text_event("a1", "a", 1.0), rewind_event("r", "zz", 2.0))
    assert _classified(records) == [LIVE, REWIND]


def test_a_later_rewind_over_an_earlier_one_brings_back_what_that_one_annulled() -> None:
    records = _records(
        text_event("a1", "a", 1.0),
        text_event("b1", "b", 2.0),
        rewind_event("r1", "a", 3.0),
        rewind_event("r2", "b", 4.0),
    )
    assert _classified(records) == [LIVE, REWOUND, REWOUND, REWIND]
    assert _changes_of_last(records) == ((10, LIVE), (12, REWOUND), (13, REWIND))


def test_a_rewind_that_annuls_nothing_keeps_its_status_when_later_records_arrive() -> None:
    records = _records(
        text_event("a1", "a", 1.0),
        rewind_event("r1", "zz", 2.0),
        text_event("b1", "b", 3.0),
        rewind_event("r2", "b", 4.0),
    )
    assert _classified(records) == [LIVE, REWIND, REWOUND, REWIND]
    state: HistoryState | None = None
    for record in records[:3]:
        state, _ = advance(state, record.offset, record.envelope)
    assert state is not None
    assert statuses_of(state) == {10: LIVE, 11: REWIND, 12: LIVE}
    # r1 was a rewind before r2 and stays one: only b1 and r2 change.
    assert _changes_of_last(records) == ((12, REWOUND), (13, REWIND))


def test_a_rewind_inside_its_target_invocation_annuls_that_invocation_before_it() -> None:
    rewind = event("r", "user", 3.0, inv="b", actions={"rewind_before_invocation_id": "b"})
    records = _records(text_event("a1", "a", 1.0), text_event("b1", "b", 2.0), rewind)
    assert _classified(records) == [LIVE, REWOUND, REWIND]
    assert _changes_of_last(records) == ((11, REWOUND), (12, REWIND))


def test_a_summary_with_a_nan_bound_survives_beside_others_and_masks_nothing() -> None:
    records = _records(
        text_event("e1", "a", 1.0),
        summary_event("s1", 1.0, 2.0, 3.0),
        summary_event("s2", math.nan, 3.0, 4.0),
        text_event("e2", "b", 2.5),
    )
    assert _classified(records) == [MASKED, LIVE, LIVE, LIVE]


def test_rewinding_a_summary_away_unmasks_what_it_covered() -> None:
    records = _records(
        text_event("e1", "a", 1.0),
        summary_event("s", 1.0, 1.0, 2.0, invocation_id="cmp"),
        rewind_event("r", "cmp", 3.0),
    )
    assert _classified(records) == [LIVE, REWOUND, REWIND]
    assert _changes_of_last(records) == ((10, LIVE), (11, REWOUND), (12, REWIND))


def test_an_equal_redelivery_is_a_duplicate_and_a_changed_one_is_applied() -> None:
    first = text_event("e1", "a", 1.0)
    records = _records(
        first, first.model_copy(), first.model_copy(update={"timestamp": 2.0}), first.model_copy()
    )
    # The last copy equals the first, but the latest applied e1 is the changed one.
    assert _classified(records) == [LIVE, DUPLICATE, LIVE, LIVE]


def test_an_equal_copy_of_a_rewound_event_is_still_a_duplicate() -> None:
    b1 = text_event("b1", "b", 2.0)
    records = _records(text_event("a1", "a", 1.0), b1, rewind_event("r", "b", 3.0), b1)
    assert _classified(records) == [LIVE, REWOUND, REWIND, DUPLICATE]


def test_a_second_summary_for_an_answered_request_is_passed_over_until_a_rewind_frees_it() -> None:
    def answer(event_id: str, timestamp: float) -> Event:
        summary = summary_event(event_id, 1.0, 1.0, timestamp, invocation_id=f"cmp-{event_id}")
        return with_summary_request_id(summary, "r1")

    records = _records(
        text_event("e1", "a", 1.0),
        answer("s1", 2.0),
        answer("s2", 3.0),
        rewind_event("r", "cmp-s1", 4.0),
        answer("s3", 5.0),
    )
    assert _classified(records) == [MASKED, REWOUND, EventStatus.DUPLICATE_SUMMARY, REWIND, LIVE]


def test_a_refusal_is_bookkeeping_and_a_summary_of_the_refused_request_still_applies() -> None:
    refusal = refusal_event("r1", "gave up", event_id="no", timestamp=2.0)
    summary = with_summary_request_id(summary_event("s", 1.0, 1.0, 3.0), "r1")
    records = _records(text_event("e1", "a", 1.0), refusal, summary)
    assert _classified(records) == [MASKED, EventStatus.REFUSAL, LIVE]


def test_a_partial_event_is_never_stored() -> None:
    chunk = text_event("c", "a", 1.0, partial=True)
    records = _records(chunk, summary_event("s", 0.0, 5.0, 2.0))
    assert _classified(records) == [EventStatus.PARTIAL, LIVE]


def test_a_scoped_summary_masks_only_its_own_scope() -> None:
    # E5: a summary of scope X over 1.5..4.0 must not hide the unscoped answer at 3.0.
    records = _records(
        text_event("q", "a", 1.0),
        text_event("x1", "a", 2.0, author="agent", isolation_scope="X"),
        text_event("answer", "a", 3.0, author="agent"),
        summary_event("sx", 1.5, 4.0, 5.0, isolation_scope="X"),
        summary_event("s", 0.0, 1.0, 6.0),
    )
    assert _classified(records) == [MASKED, MASKED, LIVE, LIVE, LIVE]


def test_a_summary_on_a_branch_masks_events_of_every_branch_of_its_scope() -> None:
    # The projector's view has no branch, so it sees every branch's summaries (§8.2 rule 4).
    records = _records(
        text_event("e1", "a", 1.0, branch="root"),
        text_event("e2", "a", 2.0, author="agent", branch="root.helper"),
        summary_event("s", 1.0, 2.0, 3.0, branch="root.helper"),
    )
    assert _classified(records) == [MASKED, MASKED, LIVE]


def test_a_state_only_event_is_masked_or_live_like_any_raw_event() -> None:
    state_only = bare_event("d", "a", 1.0, actions={"stateDelta": {"k": 1}})
    records = _records(state_only, bare_event("d2", "a", 3.0), summary_event("s", 1.0, 2.0, 4.0))
    assert _classified(records) == [MASKED, LIVE, LIVE]


def test_a_fork_classifies_its_own_records_over_the_history_it_inherits() -> None:
    parent = logged(
        [text_event("p1", "a", 1.0), text_event("p2", "b", 2.0), text_event("p3", "c", 3.0)],
        [5, 6, 7],
    )
    child = SessionKey("acme/support/u1/s2")
    fork = fork_event(ForkSource(SESSION, parent[-1].offset), event_id="f", timestamp=4.0)
    own = [
        fork,
        rewind_event("r", "c", 5.0),  # annuls the inherited p3
        summary_event("s", 1.0, 1.0, 6.0),  # masks the inherited p1
        text_event("c1", "d", 7.0),
    ]
    records = inherited(parent) + [
        logged_event(child, each, offset) for offset, each in enumerate(own)
    ]
    statuses = classify_session(records)
    assert_statuses_match_fold(records, statuses)
    assert statuses == {
        -4: MASKED,
        -3: LIVE,
        -2: REWOUND,
        0: EventStatus.FORK,
        1: REWIND,
        2: LIVE,
        3: LIVE,
    }


def test_offsets_must_rise() -> None:
    records = _records(text_event("e1", "a", 1.0), text_event("e2", "a", 2.0))
    with pytest.raises(ValueError, match="not above the last offset 11"):
        classify_session([*records, LoggedEvent(Offset(11), records[0].envelope)])
    state, _ = advance(None, 11, records[1].envelope)
    with pytest.raises(ValueError, match="offset 10 is not above"):
        advance(state, 10, records[0].envelope)


def test_records_of_another_session_are_refused() -> None:
    state, _ = advance(None, 1, envelope(SESSION, text_event("e1", "a", 1.0)))
    with pytest.raises(SessionMismatchError):
        advance(state, 2, envelope(session_key(4), text_event("e2", "a", 2.0)))
