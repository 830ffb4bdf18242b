"""Whether a compaction request still needs its summary. Pure: no I/O, no clock.

The worker reads a session's committed records from the request's first
offset up to the last stable offset of the partition: the range itself and
everything the session appended after it (the *tail*). From that slice alone
it decides:

* **rewound**: a rewind in the tail annuls part of the window, so a summary
  would stand for events that are no longer live;
* **answered**: a live summary in the tail already names the request id (a
  duplicated request, a retry, or a redelivery after a crash between the
  commit of the summary and the commit of the request's offset), so a second
  one must not be appended;
* **refused**: a live refusal in the tail already names the request (this
  worker gave it up before a crash kept its offset from being committed, or
  the projector stopped waiting for it), so the session has moved on;
* **covered**: a live summary in the tail already spans the whole range;
* otherwise the window is summarized.

Rewinds follow reference §3.1 over the slice. A tail rewind whose target
invocation does not appear in the slice before it may reach back before the
range (the slice starts at the range): it is taken to, and the request is
dropped. This is conservative: a rewind to an invocation that never existed
(a no-op in ADK) also drops a request whose range it follows; the projector
decides again on its next trigger, over a range that ends after that rewind.
The one case it misjudges the other way: an invocation that began before the
range, has no event inside it and goes on after it is taken to begin where
the slice first shows it, so a rewind to it is not seen to annul the range.
Cost: O(records in the slice).
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
class Answered:
    """A live summary at `summary_offset` already names the request."""

    summary_offset: Offset


@dataclass(frozen=True, slots=True)
class Superseded:
    """The request is stale; `reason` says why (for the log line)."""

    reason: str


RequestStatus = Summarize | Answered | Superseded


def request_status(
    request: CompactionRequest, records: Sequence[LoggedEvent], stable_offset: Offset
) -> RequestStatus:
    """What to do with `request`, given its session's slice of the log.

    Example: window at offsets 4..6, tail ``7: summary naming the request`` ->
    ``Answered(7)``; tail ``8: rewind to the window's invocation`` ->
    ``Superseded``; an empty tail -> ``Summarize(window)``.

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
            return Answered(record.offset)
    for record in tail:
        if refused_request_id(record.envelope.event) == request.request_id:
            return Superseded(f"refused by the refusal at offset {record.offset}")
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
