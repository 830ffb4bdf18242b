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
(:func:`current_incarnation`). Cost O(events) plus O(events) per rewind.

Example (offset:event): ``0:e1 0:e1 1:S(r1) 2:S(r1)``, ``S`` summaries naming
request ``r1`` -> the effective records ``0:e1 1:S(r1)``.
"""

from __future__ import annotations

from collections.abc import Iterable

from projections.contents.assembly import ContentsRequest, build_contents
from projections.event_kinds import (
    is_deletion,
    is_memory_mark,
    is_rewind,
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
    refusal naming a retired request is left out.

    Example (offset:event): ``0:a 1:S(r1) 2:delete 3:S(r1) 4:b`` -> ``4:b``.
    """
    current: list[LoggedEvent] = []
    retired: set[str] = set()
    highest: int | None = None
    for record in records:
        if highest is not None and record.offset <= highest:
            continue
        highest = record.offset
        event = record.envelope.event
        if is_deletion(event):
            answered = (summary_request_id(kept.envelope.event) for kept in _effective(current))
            retired |= {request_id for request_id in answered if request_id is not None}
            retired |= _refused(current)
            current = []
            continue
        named = summary_request_id(event) or refused_request_id(event)
        if named is None or named not in retired:
            current.append(record)
    return current


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
    """The request contents assembled from the raw records, without any projection."""
    return build_contents([record.envelope.event for record in effective_records(records)], request)
