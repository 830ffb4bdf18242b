"""The window a compaction request names, rebuilt from the records read back. Pure: no I/O.

The projector decided the window on its own copy of the session; the worker
reads the same offsets from `events` and must find exactly the events the
request names, in the order it names them. Anything else means the request
and the log disagree, and summarizing would mask the wrong range.
"""

from __future__ import annotations

from collections.abc import Mapping

from projections.compaction.rolling_seed import rebuilt_seed_event
from schemas.compaction_request import CompactionRequest
from schemas.event import Event
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from summarizer_worker.errors import RangeNotFoundError


def request_window(
    request: CompactionRequest, records: Mapping[Offset, LoggedEvent]
) -> tuple[Event, ...]:
    """The events to summarize: the seed (if any), then the event at each requested offset.

    Example: offsets ``(4, 5, 9)`` with ids ``("e4", "e5", "e9")`` and a seed
    -> ``(seed, e4, e5, e9)``; if offset 9 holds ``"e10"`` or nothing of the
    session, the range is not found.

    Args:
        request: The compaction request.
        records: The session's records read back, by offset (other sessions'
            records already filtered out).

    Raises:
        RangeNotFoundError: An offset holds no event of the session, another
            event than the request names, or the window's first/last
            timestamps differ from the request's range.
    """
    window: list[Event] = []
    if request.seed is not None:
        window.append(rebuilt_seed_event(request.seed, invocation_id=f"seed-{request.request_id}"))
    for offset, event_id in zip(request.event_offsets, request.event_ids, strict=True):
        record = records.get(offset)
        if record is None:
            raise RangeNotFoundError(
                request_id=request.request_id,
                problem=f"offset {offset} holds no event of session {request.session_key!r}",
            )
        found = record.envelope.event.id
        if found != event_id:
            raise RangeNotFoundError(
                request_id=request.request_id,
                problem=f"offset {offset} holds event {found!r}, the request names {event_id!r}",
            )
        window.append(record.envelope.event)
    first, last = window[0].timestamp, window[-1].timestamp
    if (first, last) != (request.start_timestamp, request.end_timestamp):
        raise RangeNotFoundError(
            request_id=request.request_id,
            problem=f"the window spans [{first}, {last}], "
            f"the request [{request.start_timestamp}, {request.end_timestamp}]",
        )
    return tuple(window)
