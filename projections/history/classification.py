"""The full classification of a session's records, and its live history. Pure: no I/O, no clock.

Written plainly from the rules, record by record: a conditional record that
expects another writer offset is ``stale`` and a creation record ``creation``
(:mod:`projections.history.conditions`); a deletion record makes
every earlier record ``deleted`` (:mod:`projections.history.deletion`); the
records the fold passes over (:mod:`projections.history.arrival`) get their
final status; the applied
ones are then classified all at once: the rewind walk of §3.1
(:mod:`projections.history.rewind_marks`), then masking per isolation scope
(§3.2, §3.3) over the live ones. :mod:`projections.history.incremental` must
agree with it after every record. Cost O(records) plus O(records) per rewind.

Example (offset:event): ``0:e1@1 1:e1@1 2:S[1,1] 3:e2@2`` -> ``0 masked,
1 duplicate, 2 live, 3 live``; :func:`live_history` -> ``2:S 3:e2``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from projections.compaction.masking import (
    coverage,
    is_covered,
    summary_range,
    surviving_summary_positions,
)
from projections.event_kinds import is_creation, is_summary, summary_request_id
from projections.history.arrival import checked_session, passed_over
from projections.history.conditions import NO_WRITER, is_stale, writer_after
from projections.history.deletion import deletion_status, named_request
from projections.history.event_status import EventStatus
from projections.history.rewind_marks import rewind_marks
from schemas.event import Event
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent


def classify_session(records: Iterable[LoggedEvent]) -> dict[Offset, EventStatus]:
    """Each record's status as the fold treats `records`, by offset (rising).

    Args:
        records: One session's records in rising offsets; a fork's inherited
            records first, at their negative offsets, when it is a fork.

    Raises:
        ValueError: The offsets do not rise.
        SessionMismatchError: A record (not inherited) is of another session.
        ForkError: A malformed fork record.
    """
    statuses: dict[Offset, EventStatus] = {}
    applied: list[LoggedEvent] = []
    refusals: list[LoggedEvent] = []
    stored: dict[str, Event] = {}
    answered: set[str] = set()
    retired: set[str] = set()
    session: SessionKey | None = None
    last: int | None = None
    writer = NO_WRITER
    for record in records:
        session = checked_session(session, last, record.offset, record.envelope)
        last = record.offset
        if is_stale(record.offset, record.envelope, writer):
            statuses[record.offset] = EventStatus.STALE
            continue
        event = record.envelope.event
        ended = deletion_status(event, retired)
        if ended is EventStatus.DELETION:
            writer = NO_WRITER
            retired |= _named_requests([*applied, *refusals])
            statuses = {  # an earlier deletion record stays one
                offset: status if status is EventStatus.DELETION else EventStatus.DELETED
                for offset, status in statuses.items()
            }
            statuses.update(dict.fromkeys((kept.offset for kept in applied), EventStatus.DELETED))
            applied, refusals, stored, answered = [], [], {}, set()
        if ended is not None:
            statuses[record.offset] = ended
            continue
        if is_creation(event):
            statuses[record.offset] = EventStatus.CREATION
            if event.id:
                stored[event.id] = event
            writer = writer_after(writer, record.offset, event)
            continue
        status = passed_over(record.envelope, stored, answered)
        if status is not None:
            statuses[record.offset] = status
            if status is EventStatus.REFUSAL:
                refusals.append(record)
            continue
        applied.append(record)
        writer = writer_after(writer, record.offset, event)
        if event.id:
            stored[event.id] = event
        request_id = summary_request_id(event)
        if request_id is not None:
            answered.add(request_id)
        if event.actions.rewind_before_invocation_id:
            answered = _live_requests(applied)
    statuses.update(_applied_statuses(applied))
    return dict(sorted(statuses.items()))


def live_history(records: Iterable[LoggedEvent]) -> list[LoggedEvent]:
    """The live records of `records`, rising offsets: what the ``live_history`` view selects.

    Per isolation scope, the surviving summaries and the raw events they do
    not mask, after rewinds; a fork's inherited records among them when
    `records` starts with them.
    """
    kept = list(records)
    statuses = classify_session(kept)
    return [record for record in kept if statuses[record.offset] is EventStatus.LIVE]


def _named_requests(records: Sequence[LoggedEvent]) -> set[str]:
    """Request ids named by the summaries and refusals among `records`."""
    return {
        request_id
        for record in records
        if (request_id := named_request(record.envelope.event)) is not None
    }


def _live_requests(applied: Sequence[LoggedEvent]) -> set[str]:
    """Request ids named by the summaries among `applied` that rewinds leave."""
    marks = _marks(applied)
    return {
        request_id
        for record, mark in zip(applied, marks, strict=True)
        if mark is None and (request_id := summary_request_id(record.envelope.event))
    }


def _marks(applied: Sequence[LoggedEvent]) -> list[EventStatus | None]:
    events = [record.envelope.event for record in applied]
    return rewind_marks(
        [event.invocation_id for event in events],
        [event.actions.rewind_before_invocation_id for event in events],
    )


def _applied_statuses(applied: Sequence[LoggedEvent]) -> dict[Offset, EventStatus]:
    """The statuses of the applied records: rewinds first, then masking per scope."""
    statuses: dict[Offset, EventStatus] = {}
    scopes: dict[str | None, list[LoggedEvent]] = {}
    for record, mark in zip(applied, _marks(applied), strict=True):
        if mark is not None:
            statuses[record.offset] = mark
        else:
            scopes.setdefault(record.envelope.event.isolation_scope, []).append(record)
    for live in scopes.values():
        statuses.update(_masked_scope(live))
    return statuses


def _masked_scope(live: Sequence[LoggedEvent]) -> dict[Offset, EventStatus]:
    """Statuses of one isolation scope's live records: §3.2 survivors, §3.3 coverage."""
    events = [record.envelope.event for record in live]
    survivors = set(surviving_summary_positions(events))
    covered = coverage(summary_range(events[position]) for position in survivors)
    statuses: dict[Offset, EventStatus] = {}
    for position, (record, event) in enumerate(zip(live, events, strict=True)):
        if is_summary(event):
            shown = position in survivors
        else:
            shown = not is_covered(event.timestamp, covered)
        if shown:
            statuses[record.offset] = EventStatus.LIVE
        elif is_summary(event):
            statuses[record.offset] = EventStatus.SUPERSEDED
        else:
            statuses[record.offset] = EventStatus.MASKED
    return statuses
