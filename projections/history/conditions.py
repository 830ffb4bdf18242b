"""Conditional and creation records in a session's statuses. Pure: no I/O, no clock.

A conditional record whose expected offset is not the session's writer offset
is ``stale`` on arrival, before any other rule (a stale deletion deletes
nothing); a creation record is ``creation``, applied but never live. The
writer offset moves with every applied own record but a pipeline summary
(and with a creation record); a deletion resets it to ``-1``. Records at
negative offsets, a fork's inherited ones, are never judged and move nothing.
The rule: projections/README.md, "Conditional records".

Example (offset:event[expected]): ``0:a 1:b[0] 2:c[0]`` -> ``0 live, 1 live,
2 stale``; the writer offset is 1.
"""

from __future__ import annotations

from projections.event_kinds import summary_request_id
from schemas.envelope import Envelope
from schemas.event import Event

#: The writer offset of a session without a writer record.
NO_WRITER = -1


def is_stale(offset: int, envelope: Envelope, writer: int) -> bool:
    """Whether the fold refuses the record at `offset`: it expects another writer offset."""
    expected = envelope.expected_offset
    return offset >= 0 and expected is not None and expected != writer


def writer_after(writer: int, offset: int, event: Event) -> int:
    """The writer offset after the applied record `event` at `offset`."""
    if offset < 0 or summary_request_id(event) is not None:
        return writer
    return offset
