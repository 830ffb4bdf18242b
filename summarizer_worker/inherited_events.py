"""The window events a fork inherited, found in their own sessions' slices. Pure: no I/O.

A fork's compaction window may hold events of its source (:mod:`projections.fold.fork`):
the request names them by their negative places in the fork's history and says
where each is on `events` (``CompactionRequest.inherited``). The worker reads
each named session from the first offset named in it and hands the slices
here; the records come back at their places in the fork, so that the
request's check reads the window and the fork's own records as one
increasing sequence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from schemas.compaction_request import CompactionRequest
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from summarizer_worker.errors import RangeNotFoundError


def inherited_starts(request: CompactionRequest) -> dict[SessionKey, Offset]:
    """Each session the request's inherited events belong to, with the first offset named in it.

    Example: inherited ``(-5, "a/b/c/s1", 40)``, ``(-4, "a/b/c/s1", 43)`` ->
    ``{"a/b/c/s1": 40}``.
    """
    starts: dict[SessionKey, Offset] = {}
    for event in request.inherited:
        known = starts.get(event.session_key)
        if known is None or event.origin_offset < known:
            starts[event.session_key] = event.origin_offset
    return starts


def inherited_records(
    request: CompactionRequest, slices: Mapping[SessionKey, Sequence[LoggedEvent]]
) -> list[LoggedEvent]:
    """The request's inherited events at their places in the fork, in order.

    Args:
        request: The compaction request.
        slices: Each session of :func:`inherited_starts`, its records read back
            from the start given there.

    Raises:
        RangeNotFoundError: A named offset holds no record of its session.
    """
    found: list[LoggedEvent] = []
    for event in request.inherited:
        by_offset = {record.offset: record for record in slices.get(event.session_key, ())}
        record = by_offset.get(event.origin_offset)
        if record is None:
            raise RangeNotFoundError(
                request_id=request.request_id,
                problem=f"offset {event.origin_offset} holds no event of session "
                f"{event.session_key!r}, which the fork inherited",
            )
        found.append(LoggedEvent(Offset(event.offset), record.envelope, event.origin_offset))
    found.sort(key=lambda record: record.offset)
    return found
