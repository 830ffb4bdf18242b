"""The incremental classification: one record at a time, with every status it changes. Pure.

:func:`advance` folds one record into a :class:`HistoryState` and returns the
new record's status with every earlier status it changed, so a sink can
update its rows in the same transaction. A record the fold passes over keeps
nothing; an applied record keeps a few facts (a rewind can reach any earlier
invocation and bring back what an earlier rewind annulled) and its event by
id (a retry can repeat any earlier event). A raw event costs O(log n), a
summary O(log survivors) plus, when it widens its scope's coverage, the
scope's shown raw events, an effective rewind O(applied records). It equals
:func:`~projections.history.classification.classify_session` after every
record; the state is rebuilt by advancing over the stored rows again. The
bound: projections/history/README.md.

Example: ``advance(None, 0, e1@1)`` -> ``(0, live)``; then a summary [1,1]
at 1 -> ``(0, masked), (1, live)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

from pyrsistent import PMap, PSet, PVector, pmap, pset, pvector

from projections.event_kinds import is_creation, summary_request_id
from projections.history.arrival import checked_session, passed_over
from projections.history.conditions import NO_WRITER, is_stale, writer_after
from projections.history.deletion import deletion_status, named_request
from projections.history.event_status import EventStatus
from projections.history.rewind_marks import rewind_marks
from projections.history.scope_masking import Range, ScopeMasking, note_raw, note_summary
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import Offset, SessionKey


class StatusChange(NamedTuple):
    """A record's new status."""

    offset: Offset
    status: EventStatus


@dataclass(frozen=True, slots=True)
class AppliedFacts:
    """What the classification reads of an applied record.

    Attributes:
        offset: Its offset.
        invocation_id: Its invocation (a rewind's target is found by it).
        rewind_target: ``rewind_before_invocation_id`` (``""``: no rewind).
        isolation_scope: Its isolation scope, where it masks or is masked.
        timestamp: Its timestamp, which masking reads.
        summary: Its range when it is a summary.
        request_id: The compaction request it answers, when it names one.
    """

    offset: Offset
    invocation_id: str
    rewind_target: str
    isolation_scope: str | None
    timestamp: float
    summary: Range | None
    request_id: str | None


@dataclass(frozen=True, slots=True)
class HistoryState:
    """A session's classification so far.

    Attributes:
        session_key: The session (None until its first own record).
        last_offset: The offset of the last record advanced over.
        applied: The facts of each applied record, stream order.
        statuses: Each applied record's current status, same positions.
        first_positions: Invocation id -> position of its first applied record.
        stored: Event id -> the latest applied event with that id.
        answered: Request ids named by the live summaries.
        scopes: Isolation scope -> its masking.
        passed: The offsets of the records passed over since the last
            deletion, stale and creation records among them (a deletion
            makes them ``deleted``).
        refused: Request ids the refusals since the last deletion name.
        retired: Request ids a deleted incarnation knew (:mod:`projections.history.deletion`).
        writer_offset: The offset of the last writer record, ``-1`` when none
            (:mod:`projections.history.conditions`).
    """

    session_key: SessionKey | None = None
    last_offset: Offset | None = None
    applied: PVector[AppliedFacts] = field(default_factory=pvector)
    statuses: PVector[EventStatus] = field(default_factory=pvector)
    first_positions: PMap[str, int] = field(default_factory=pmap)
    stored: PMap[str, Event] = field(default_factory=pmap)
    answered: PSet[str] = field(default_factory=pset)
    scopes: PMap[str | None, ScopeMasking] = field(default_factory=pmap)
    passed: PVector[Offset] = field(default_factory=pvector)
    refused: PSet[str] = field(default_factory=pset)
    retired: PSet[str] = field(default_factory=pset)
    writer_offset: int = NO_WRITER


def advance(
    state: HistoryState | None, offset: int, envelope: Envelope
) -> tuple[HistoryState, tuple[StatusChange, ...]]:
    """`state` after the record at `offset`, and the statuses that record set, by offset.

    The changes hold the new record's status (last) and every earlier
    record's whose status changed.

    Raises:
        ValueError: `offset` is not above the last one.
        SessionMismatchError: An own record (offset from 0) of another session.
        ForkError: A malformed fork record.
    """
    state = state if state is not None else HistoryState()
    session = checked_session(state.session_key, state.last_offset, offset, envelope)
    at = Offset(offset)
    if is_stale(offset, envelope, state.writer_offset):
        return _passed(replace(state, session_key=session), at, EventStatus.STALE)
    if is_creation(envelope.event):
        creation = EventStatus.CREATION
        return _passed(replace(state, session_key=session), at, creation, envelope.event)
    ended = deletion_status(envelope.event, state.retired)
    if ended is EventStatus.DELETION:
        return _deleted(replace(state, session_key=session), at)
    if ended is not None:
        return replace(state, session_key=session, last_offset=at), (StatusChange(at, ended),)
    status = passed_over(envelope, state.stored, state.answered)
    if status is not None:
        refused = named_request(envelope.event) if status is EventStatus.REFUSAL else None
        return replace(
            state,
            session_key=session,
            last_offset=at,
            passed=state.passed.append(at),
            refused=state.refused if refused is None else state.refused.add(refused),
        ), (StatusChange(at, status),)
    event = envelope.event
    facts = _facts(at, event)
    position = len(state.applied)
    applied = state.applied.append(facts)
    first_positions = (
        state.first_positions
        if event.invocation_id in state.first_positions
        else state.first_positions.set(event.invocation_id, position)
    )
    stored = state.stored.set(event.id, event) if event.id else state.stored
    if facts.rewind_target:
        grown = replace(
            state,
            session_key=session,
            last_offset=at,
            applied=applied,
            first_positions=first_positions,
            stored=stored,
            writer_offset=writer_after(state.writer_offset, offset, event),
        )
        start = first_positions.get(facts.rewind_target)
        if start is not None and start < position:
            return _rewound(grown, state.statuses)
        statuses = grown.statuses.append(EventStatus.REWIND)
        return replace(grown, statuses=statuses), (StatusChange(at, EventStatus.REWIND),)
    scopes, answered, changes = _noted(state.scopes, state.answered, position, facts)
    evolver = state.statuses.append(EventStatus.LIVE).evolver()
    for changed, new_status in changes:
        evolver[changed] = new_status
    ordered = sorted(changes)
    # Built field by field: dataclasses.replace costs several times more, on every record.
    return HistoryState(
        session_key=session,
        last_offset=at,
        applied=applied,
        statuses=evolver.persistent(),
        first_positions=first_positions,
        stored=stored,
        answered=answered,
        scopes=scopes,
        passed=state.passed,
        refused=state.refused,
        retired=state.retired,
        writer_offset=writer_after(state.writer_offset, offset, event),
    ), tuple(StatusChange(applied[changed].offset, new_status) for changed, new_status in ordered)


def statuses_of(state: HistoryState) -> dict[Offset, EventStatus]:
    """The current status of every applied record, by offset (the others are final)."""
    return {
        facts.offset: status for facts, status in zip(state.applied, state.statuses, strict=True)
    }


def _passed(
    state: HistoryState, at: Offset, status: EventStatus, event: Event | None = None
) -> tuple[HistoryState, tuple[StatusChange, ...]]:
    """`state` after a record at `at` whose `status` is final: ``stale``, or ``creation``.

    It is kept among the passed records (a deletion makes it ``deleted``). A
    creation's `event` is the writer. It is not stored: a copy of it is a
    creation record again, judged before any retry rule.
    """
    changed = replace(state, last_offset=at, passed=state.passed.append(at))
    if event is not None:
        changed = replace(changed, writer_offset=writer_after(state.writer_offset, at, event))
    return changed, (StatusChange(at, status),)


def _deleted(state: HistoryState, at: Offset) -> tuple[HistoryState, tuple[StatusChange, ...]]:
    """`state` after a deletion record at `at`: every earlier record ``deleted``."""
    ended = [*state.passed, *(facts.offset for facts in state.applied)]
    named = {facts.request_id for facts in state.applied if facts.request_id is not None}
    fresh = HistoryState(
        session_key=state.session_key,
        last_offset=at,
        retired=state.retired.update(named).update(state.refused),
    )
    changes = [StatusChange(offset, EventStatus.DELETED) for offset in sorted(ended)]
    return fresh, (*changes, StatusChange(at, EventStatus.DELETION))


def _facts(offset: Offset, event: Event) -> AppliedFacts:
    compaction = event.actions.compaction
    return AppliedFacts(
        offset=offset,
        invocation_id=event.invocation_id,
        rewind_target=event.actions.rewind_before_invocation_id or "",
        isolation_scope=event.isolation_scope,
        timestamp=event.timestamp,
        summary=(
            None if compaction is None else (compaction.start_timestamp, compaction.end_timestamp)
        ),
        request_id=summary_request_id(event),
    )


def _noted(
    scopes: PMap[str | None, ScopeMasking], answered: PSet[str], position: int, facts: AppliedFacts
) -> tuple[PMap[str | None, ScopeMasking], PSet[str], list[tuple[int, EventStatus]]]:
    """`scopes` and `answered` with the live record `facts` at `position` masked or masking.

    Returns the scopes, the answered request ids, and the (position, status) changes.
    """
    masking = scopes.get(facts.isolation_scope, ScopeMasking())
    if facts.summary is None:
        masking, change = note_raw(masking, position, facts.timestamp)
        changes = [change]
    else:
        masking, changes = note_summary(masking, position, facts.summary)
        if facts.request_id is not None:
            answered = answered.add(facts.request_id)
    return scopes.set(facts.isolation_scope, masking), answered, changes


def _rewound(
    state: HistoryState, before: PVector[EventStatus]
) -> tuple[HistoryState, tuple[StatusChange, ...]]:
    """`state` after an effective rewind (its last applied record): every status anew. O(n)."""
    applied = state.applied
    marks = rewind_marks(
        [facts.invocation_id for facts in applied], [facts.rewind_target for facts in applied]
    )
    scopes: PMap[str | None, ScopeMasking] = pmap()
    answered: PSet[str] = pset()
    statuses: list[EventStatus] = []
    for position, (facts, mark) in enumerate(zip(applied, marks, strict=True)):
        statuses.append(mark or EventStatus.LIVE)
        if mark is None:
            scopes, answered, changes = _noted(scopes, answered, position, facts)
            for changed, new_status in changes:
                statuses[changed] = new_status
    last = len(applied) - 1
    differ = tuple(
        StatusChange(applied[position].offset, status)
        for position, status in enumerate(statuses)
        if position == last or before[position] != status
    )
    return replace(state, answered=answered, scopes=scopes, statuses=pvector(statuses)), differ
