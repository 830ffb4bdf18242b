"""Conditional and creation records in the fold, by hand and against a plain oracle.

The hand-written cases spell out design25.md §1; the properties hold the fold
and :func:`~projections.fold.rebuild.judged` against
:class:`~tests.support.conditions_oracle.WriterOracle`, written separately from both.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings

from projections.compaction.summary_request import with_summary_request_id
from projections.fold.conditions import MAX_REFUSALS, refusal_verdict
from projections.fold.projection import SessionProjection, apply, live_events, project
from projections.fold.rebuild import judged
from projections.fold.time_travel import projection_as_of
from schemas.deletion_mark import deletion_event
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from schemas.memory_mark import MemoryMark, memory_mark_event
from tests.support.conditional_records import creation_record, with_conditions
from tests.support.conditions_oracle import WriterOracle
from tests.support.events import SESSION, envelope, summary_event, text_event
from tests.support.strategies import sessions


def at(offset: int, event: Event, expected: int | None = None) -> LoggedEvent:
    """`event` of :data:`SESSION` at `offset`, conditional on `expected` when given."""
    plain = envelope(SESSION, event)
    if expected is None:
        return LoggedEvent(Offset(offset), plain)
    return LoggedEvent(Offset(offset), plain.model_copy(update={"expected_offset": expected}))


def text(offset: int, expected: int | None = None, name: str | None = None) -> LoggedEvent:
    """A user text ``e<offset>`` (or `name`) at `offset`."""
    event_id = name or f"e{offset}"
    return at(offset, text_event(event_id, f"i{offset}", float(offset), event_id), expected)


def folded(records: list[LoggedEvent]) -> SessionProjection:
    return project(SESSION, records)


def test_the_right_expected_offset_applies_and_a_stale_one_changes_only_the_offset() -> None:
    base = folded([text(3), text(5, expected=3)])
    assert base.conditions.writer_offset == 5
    stale = apply(base, text(8, expected=3))
    assert stale == replace(base, last_offset=Offset(8), conditions=stale.conditions)
    assert stale.conditions.refused == (8,)
    assert stale.conditions.writer_offset == 5
    assert [event.id for event in live_events(stale)] == ["e3", "e5"]
    assert refusal_verdict(stale.conditions, 8) is True
    assert refusal_verdict(stale.conditions, 5) is False


def test_minus_one_applies_only_to_a_session_without_a_writer() -> None:
    assert folded([text(2, expected=-1)]).conditions.writer_offset == 2
    assert folded([text(2), text(4, expected=-1)]).conditions.refused == (4,)


def test_summaries_refusals_memory_partials_and_copies_leave_the_writer_offset() -> None:
    summary = with_summary_request_id(summary_event("s1", 1.0, 2.0, 9.0), "req-1")
    memory = memory_mark_event(MemoryMark("add"), event_id="m1", timestamp=9.0)
    partial = text_event("p1", "i9", 9.0, "chunk", partial=True)
    copy = text_event("e2", "i2", 2.0, "e2")
    records = [text(2), at(4, summary), at(6, memory), at(8, partial), at(10, copy)]
    projection = folded([*records, text(12, expected=2)])
    assert projection.conditions.writer_offset == 12
    assert projection.conditions.refused == ()
    adk_summary = summary_event("s2", 1.0, 2.0, 13.0)  # ADK's own compaction: a writer
    assert apply(projection, at(14, adk_summary)).conditions.writer_offset == 14


def test_a_deletion_resets_the_writer_and_a_creation_starts_afresh() -> None:
    deleted = folded([text(2), text(4), at(6, deletion_event(event_id="d", timestamp=1.0))])
    assert deleted.conditions.writer_offset == -1
    assert apply(deleted, text(8, expected=4)).conditions.refused == (8,)
    created = apply(deleted, creation_record(8, 1, {"topic": "trains"}))
    assert created.deleted_at is None
    assert created.conditions.writer_offset == 8
    assert dict(created.state.session) == {"topic": "trains"}
    assert live_events(created) == []
    assert created.invocations.total == 0
    assert apply(created, text(9, expected=8)).conditions.writer_offset == 9


def test_of_concurrent_creates_the_first_applies_and_the_others_are_refused() -> None:
    creates = [creation_record(offset, offset, {"n": offset}) for offset in (3, 4, 5)]
    projection = folded(creates)
    assert projection.conditions.writer_offset == 3
    assert projection.conditions.refused == (4, 5)
    assert dict(projection.state.session) == {"n": 3}


def test_a_refused_deletion_deletes_nothing() -> None:
    deletion = at(6, deletion_event(event_id="d", timestamp=1.0), expected=2)
    projection = folded([text(2), text(4), deletion])
    assert projection.deleted_at is None
    assert [event.id for event in live_events(projection)] == ["e2", "e4"]
    assert judged([text(2), text(4), deletion]).refused == [6]


def test_refusals_are_bounded_and_a_verdict_below_the_floor_is_unknown() -> None:
    records = [text(1), *(text(offset, expected=0) for offset in range(2, MAX_REFUSALS + 12))]
    conditions = folded(records).conditions
    assert len(conditions.refused) == MAX_REFUSALS
    assert conditions.refused_floor == MAX_REFUSALS + 11 - MAX_REFUSALS
    assert refusal_verdict(conditions, 2) is None  # refused, forgotten: unknown, never False
    assert refusal_verdict(conditions, MAX_REFUSALS + 11) is True
    assert refusal_verdict(conditions, 1) is None


def test_a_record_a_fork_inherited_is_never_judged_and_moves_no_writer() -> None:
    inherited = LoggedEvent(Offset(-3), text(40, expected=99).envelope, Offset(40))
    projection = apply(replace(SessionProjection(SESSION), last_offset=Offset(-10)), inherited)
    assert projection.conditions == SessionProjection(SESSION).conditions
    assert [event.id for event in live_events(projection)] == ["e40"]


def test_as_of_a_past_offset_keeps_the_writer_and_refusals_of_that_time() -> None:
    records = [creation_record(1, 1, {"a": 1}), text(3, expected=1), text(5, expected=1)]
    records += [text(7, expected=3), text(9, expected=7)]
    projection = folded(records)
    past = projection_as_of(projection, 5)
    assert (past.conditions.writer_offset, past.conditions.refused) == (3, (5,))
    assert dict(past.state.session) == {"a": 1}


def _oracle_after_each(records: list[LoggedEvent]) -> list[tuple[int, list[int]]]:
    oracle = WriterOracle()
    seen: list[tuple[int, list[int]]] = []
    for record in records:
        oracle.feed(record)
        seen.append((oracle.writer, list(oracle.refused)))
    return seen


@settings(max_examples=150, deadline=None)
@given(with_conditions(sessions(refusals=True, deletions=True)))
def test_the_fold_and_the_rebuild_judge_as_the_oracle_after_every_record(
    records: list[LoggedEvent],
) -> None:
    projection = SessionProjection(SESSION)
    for length, (record, (writer, refused)) in enumerate(
        zip(records, _oracle_after_each(records), strict=True), start=1
    ):
        projection = apply(projection, record)
        conditions = projection.conditions
        assert conditions.writer_offset == writer, f"after {length}"
        assert list(conditions.refused) == refused[-MAX_REFUSALS:], f"after {length}"
        for earlier in records[:length]:
            verdict = refusal_verdict(conditions, earlier.offset)
            assert verdict is None or verdict == (earlier.offset in refused), earlier.offset
        rebuilt = judged(records[:length])
        assert (rebuilt.writer_offset, rebuilt.refused) == (writer, refused), f"after {length}"
