"""The plain full rebuild a projection must agree with. Pure: no I/O, no clock.

Written independently of the incremental fold, as directly as the rules
read, so that tests and benchmarks can hold the two together: redelivered
records, refusals (:func:`~projections.event_kinds.refused_request_id`, whose
request is refused for good: :func:`refused_requests`), memory records
(:func:`~projections.event_kinds.is_memory_mark`), partial events,
copies of kept events and summaries of an already answered request are
dropped; the context is :func:`~projections.contents.assembly.build_contents`
of the rest. A deletion record (:func:`~projections.event_kinds.is_deletion`)
drops everything before it, and later summaries and refusals naming a request
that an earlier incarnation's summaries or refusals named
(:func:`current_incarnation`); a conditional record whose expected offset is
not the writer offset is refused (:func:`judged`). Cost O(events) plus
O(events) per rewind.

Example (offset:event): ``0:e1 0:e1 1:S(r1) 2:S(r1)``, ``S`` summaries naming
request ``r1`` -> the effective records ``0:e1 1:S(r1)``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from projections.contents.assembly import ContentsRequest, build_contents
from projections.event_kinds import (
    METADATA_NAMESPACE,
    REFUSAL_AUTHOR,
    is_creation,
    is_deletion,
    is_memory_mark,
    is_rewind,
    is_summary,
    refused_request_id,
    summary_request_id,
)
from projections.fold.rewind import drop_rewound
from schemas.event import Content, Event
from schemas.logged_event import LoggedEvent


def current_incarnation(records: Iterable[LoggedEvent]) -> list[LoggedEvent]:
    """The records after the last deletion, redelivered ones and retired answers left out.

    A deletion retires each request that the summaries it drops (those
    :func:`effective_records` keeps) and its refusals name; a later summary or
    refusal naming a retired request is left out. A refused conditional record
    (:func:`judged`) is left out too, and a refused deletion deletes nothing.

    Example (offset:event): ``0:a 1:S(r1) 2:delete 3:S(r1) 4:b`` -> ``4:b``.
    """
    return judged(records).current


@dataclass(frozen=True, slots=True)
class Judged:
    """A session's records with its conditions judged, by the rule as it reads.

    Attributes:
        current: :func:`current_incarnation` of the records.
        refused: The offsets of every refused conditional record, ascending.
        writer_offset: The offset of the last writer record, ``-1`` when none.
    """

    current: list[LoggedEvent]
    refused: list[int]
    writer_offset: int


def judged(records: Iterable[LoggedEvent]) -> Judged:
    """Walk `records` once: drop redeliveries, judge conditions, split at deletions.

    A record whose ``expected_offset`` is set (and that no fork inherited) is
    refused unless it equals the offset of the last writer record: an applied
    record other than a pipeline summary, a refusal, a fork, deletion or
    memory record, a partial event or an equal copy of a stored event. A
    deletion makes it ``-1``.

    Example (offset:event[expected]): ``0:a 1:b[0] 2:c[0] 3:d[1]`` -> ``2`` refused,
    writer offset 3.
    """
    current: list[LoggedEvent] = []
    retired: set[str] = set()
    highest: int | None = None
    refused: list[int] = []
    writer = -1
    stored: dict[str, Event] = {}
    for record in records:
        if highest is not None and record.offset <= highest:
            continue
        highest = record.offset
        event = record.envelope.event
        expected = record.envelope.expected_offset
        if expected is not None and record.origin_offset is None and expected != writer:
            refused.append(record.offset)
            continue
        if is_deletion(event):
            answered = (summary_request_id(kept.envelope.event) for kept in _effective(current))
            retired |= {request_id for request_id in answered if request_id is not None}
            retired |= _refused(current)
            current, writer, stored = [], -1, {}
            continue
        named = summary_request_id(event) or refused_request_id(event)
        if named is not None and named in retired:
            continue
        current.append(record)
        if _is_writer(event, stored) and record.origin_offset is None:
            writer = record.offset
        if _is_stored_kind(event) and not (event.id and stored.get(event.id) == event):
            stored[event.id] = event
    return Judged(current, refused, writer)


def _is_stored_kind(event: Event) -> bool:
    """Whether `event` is of a kind the log stores (not partial, no bookkeeping)."""
    return not (
        event.partial
        or refused_request_id(event) is not None
        or is_memory_mark(event)
        or _names_fork(event)
    )


def _is_writer(event: Event, stored: dict[str, Event]) -> bool:
    """Whether applying `event` makes it the session's writer record."""
    if not _is_stored_kind(event) or summary_request_id(event) is not None:
        return False
    return not (event.id and stored.get(event.id) == event)


def _names_fork(event: Event) -> bool:
    """Whether `event` is shaped as a fork record (projections.fold.fork's key)."""
    if event.author != REFUSAL_AUTHOR or event.content is not None or is_summary(event):
        return False
    ours = (event.custom_metadata or {}).get(METADATA_NAMESPACE)
    return isinstance(ours, dict) and "fork_of" in ours


def effective_records(records: Iterable[LoggedEvent]) -> list[LoggedEvent]:
    """`records` without redelivered records, refusals and what is never stored, stream order.

    Only the current incarnation counts (:func:`current_incarnation`).

    Example (offset:event): ``0:a 1:S(r1) 1:S(r1) 2:S'(r1) 3:b`` -> ``0:a 1:S(r1) 3:b``.
    """
    return _effective(current_incarnation(records))


def _effective(records: Iterable[LoggedEvent]) -> list[LoggedEvent]:
    """:func:`effective_records` of records of one incarnation."""
    kept: list[LoggedEvent] = []
    answered: set[str] = set()
    stored: dict[str, Event] = {}
    last_offset: int | None = None
    for record in records:
        if last_offset is not None and record.offset <= last_offset:
            continue
        last_offset = record.offset
        event = record.envelope.event
        if refused_request_id(event) is not None or is_memory_mark(event):
            continue
        if event.partial or (event.id and stored.get(event.id) == event):
            continue
        request_id = summary_request_id(event)
        if request_id is not None and request_id in answered:
            continue
        kept.append(record)
        if event.id:
            stored[event.id] = event
        if request_id is not None:
            answered.add(request_id)
        if is_rewind(event):
            answered = _answered_requests(kept)
    return kept


def refused_requests(records: Iterable[LoggedEvent]) -> set[str]:
    """Ids of the requests that refusals among `records` name (redelivered records skipped).

    Only the current incarnation counts (:func:`current_incarnation`).

    Example (offset:event): ``0:a 1:refuse(r1) 1:refuse(r2) 2:b`` -> ``{"r1"}``.
    """
    return _refused(current_incarnation(records))


def _refused(records: Iterable[LoggedEvent]) -> set[str]:
    """:func:`refused_requests` of records of one incarnation (none redelivered)."""
    named = (refused_request_id(record.envelope.event) for record in records)
    return {request_id for request_id in named if request_id is not None}


def _answered_requests(records: list[LoggedEvent]) -> set[str]:
    """Request ids named by the live summaries of `records`."""
    live = drop_rewound([record.envelope.event for record in records])
    return {request_id for event in live if (request_id := summary_request_id(event))}


def rebuild_contents(records: Iterable[LoggedEvent], request: ContentsRequest) -> list[Content]:
    """The request contents assembled from the raw records, without any projection.

    Creation records are left out: ADK never holds such an event.
    """
    effective = [record.envelope.event for record in effective_records(records)]
    return build_contents([event for event in effective if not is_creation(event)], request)
