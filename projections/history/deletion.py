"""What a deletion record does to a session's statuses. Pure: no I/O, no clock.

A deletion record (:mod:`schemas.deletion_mark`) is ``deletion``; every record
before it becomes ``deleted``; after it the session starts afresh, but a summary
or refusal naming a request that a deleted incarnation's applied summaries or
refusals named is ``deleted`` on arrival, as the fold drops it
(projections/README.md, "Deletion").

Example (offset:event): ``0:e1 1:S(r1) 2:delete 3:S'(r1) 4:e2`` -> ``0 deleted,
1 deleted, 2 deletion, 3 deleted, 4 live``.
"""

from __future__ import annotations

from collections.abc import Container

from projections.event_kinds import is_deletion, refused_request_id, summary_request_id
from projections.history.event_status import EventStatus
from schemas.event import Event


def deletion_status(event: Event, retired: Container[str]) -> EventStatus | None:
    """``deletion`` for a deletion record, ``deleted`` for an answer to a retired request.

    None for every other record.
    """
    if is_deletion(event):
        return EventStatus.DELETION
    named = named_request(event)
    if named is not None and named in retired:
        return EventStatus.DELETED
    return None


def named_request(event: Event) -> str | None:
    """The request a summary answers or a refusal refuses; None for other records."""
    return summary_request_id(event) or refused_request_id(event)
