"""Whether a compaction request still needs its summary. Pure: no I/O, no clock.

Decided from the session's slice alone: the range and everything the session
appended after it (the *tail*). A live summary in the tail that names the
request: :class:`AlreadySummarized`; a refusal that names it:
:class:`AlreadyRefused`. A rewind in the tail that annuls the window or a
summary that covers the range: :class:`Superseded` (the worker withdraws the
request with a refusal, so the projector stops waiting on it). Otherwise:
:class:`Summarize` the window. Rewinds follow
reference §3.1 over the slice; a tail rewind to an invocation the slice does
not show is taken to reach before the range (conservative). The rules, and
the one case misjudged the other way: ``summarizer_worker/README.md``,
"Is the request still needed". Cost: O(records in the slice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from projections.event_kinds import refused_request_id, summary_request_id
from projections.fold.rewind import drop_rewound
from schemas.compaction_request import CompactionRequest
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from summarizer_worker.errors import RangeNotStableError
from summarizer_worker.request_window import request_window

#: Invocation id of the placeholder that stands for the session before the slice.
BEFORE_SLICE = "\x00before-slice"


@dataclass(frozen=True, slots=True)
class Summarize:
    """Summarize `window` (seed first, then the requested events)."""

    window: tuple[Event, ...]


@dataclass(frozen=True, slots=True)
class AlreadySummarized:
    """A live summary at `summary_offset` already names the request."""

    summary_offset: Offset


@dataclass(frozen=True, slots=True)
class AlreadyRefused:
    """A refusal at `refusal_offset` already names the request: nothing more to write."""

    refusal_offset: Offset


@dataclass(frozen=True, slots=True)
class Superseded:
    """The request is stale; `reason` says why (for the log line and its refusal)."""

    reason: str


RequestStatus = Summarize | AlreadySummarized | AlreadyRefused | Superseded


def request_status(
    request: CompactionRequest, records: Sequence[LoggedEvent], stable_offset: Offset
) -> RequestStatus:
    """What to do with `request`, given its session's slice of the log.

    Example: window at offsets 4..6, tail ``7: summary naming the request`` ->
    ``AlreadySummarized(7)``; tail ``7: refusal naming it`` -> ``AlreadyRefused(7)``;
    tail ``8: rewind to the window's invocation`` -> ``Superseded``; an empty tail ->
    ``Summarize(window)``.

    Args:
        request: The compaction request.
        records: The session's committed records from ``request.start_offset``
            up to `stable_offset`, stream order, other sessions filtered out.
        stable_offset: The partition's last stable offset when the slice was
            read: every offset below it was readable.

    Raises:
        RangeNotStableError: The range reaches `stable_offset` or beyond.
        RangeNotFoundError: The slice does not hold the requested events.
    """
    if request.end_offset >= stable_offset:
        raise RangeNotStableError(
            request_id=request.request_id,
            end_offset=request.end_offset,
            stable_offset=stable_offset,
        )
    window = request_window(request, {record.offset: record for record in records})
    live = _live_records(records, request.end_offset)
    live_offsets = {record.offset for record in live}
    rewound = [offset for offset in request.event_offsets if offset not in live_offsets]
    if rewound:
        return Superseded(f"rewound: a later rewind annuls offset {rewound[0]}")
    tail = [record for record in live if record.offset > request.end_offset]
    for record in tail:
        if summary_request_id(record.envelope.event) == request.request_id:
            return AlreadySummarized(record.offset)
    for record in tail:
        if refused_request_id(record.envelope.event) == request.request_id:
            return AlreadyRefused(record.offset)
    for record in tail:
        if _contains(record.envelope.event, request.start_timestamp, request.end_timestamp):
            return Superseded(f"covered by the summary at offset {record.offset}")
    return Summarize(window)


def _live_records(records: Sequence[LoggedEvent], end_offset: Offset) -> list[LoggedEvent]:
    """The records of the slice that rewinds leave (reference §3.1).

    Tail rewinds to an invocation not seen before them in the slice are
    pointed at a placeholder that stands first, for the session before the
    slice. Rewinds inside the range were known when the request was decided
    and are left as they are.
    """
    placeholder = Event(invocation_id=BEFORE_SLICE, author="user", timestamp=0.0)
    events: list[Event] = [placeholder]
    seen: set[str] = set()
    for record in records:
        event = record.envelope.event
        target = event.actions.rewind_before_invocation_id
        if target and record.offset > end_offset and target not in seen:
            actions = event.actions.model_copy(update={"rewind_before_invocation_id": BEFORE_SLICE})
            event = event.model_copy(update={"actions": actions})
        seen.add(event.invocation_id)
        events.append(event)
    kept = {id(event) for event in drop_rewound(events)}
    # drop_rewound keeps the very objects it is given, so identity pairs them back.
    return [record for record, event in zip(records, events[1:], strict=True) if id(event) in kept]


def _contains(event: Event, start: float, end: float) -> bool:
    """Whether `event` is a summary whose range contains ``[start, end]``."""
    compaction = event.actions.compaction
    if compaction is None:
        return False
    return compaction.start_timestamp <= start and compaction.end_timestamp >= end
