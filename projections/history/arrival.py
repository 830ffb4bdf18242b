"""Which records the fold passes over on arrival, and why. Pure: no I/O, no clock.

:func:`projections.fold.projection.apply` checks, in this order: a memory
record, a refusal, a fork record, a partial event, an event equal to the
latest applied one with its id, a summary of a request a live summary answers. Each of these changes
nothing but the offset, so its status is final; any other record is applied.

:func:`checked_session` holds the records to one session, in rising offsets.

Example: ``e1`` applied, then ``e1`` again -> ``duplicate``; a summary naming
``r1`` while a live summary names ``r1`` -> ``duplicate_summary``.
"""

from __future__ import annotations

from collections.abc import Container, Mapping

from projections.event_kinds import (
    REFUSAL_AUTHOR,
    is_memory_mark,
    refused_request_id,
    summary_request_id,
)
from projections.fold.fork import fork_source
from projections.history.event_status import EventStatus
from schemas.envelope import Envelope
from schemas.errors import SessionMismatchError
from schemas.event import Event
from schemas.keys import SessionKey


def passed_over(
    envelope: Envelope, stored: Mapping[str, Event], answered: Container[str]
) -> EventStatus | None:
    """The final status of a record the fold does not apply, None when it applies it.

    Args:
        envelope: The record.
        stored: Event id -> the latest applied event with that id.
        answered: Request ids the live summaries name.

    Raises:
        ForkError: The record names a fork but a malformed one (the fold refuses it too).
    """
    event = envelope.event
    if is_memory_mark(event):
        return EventStatus.MEMORY
    if refused_request_id(event) is not None:
        return EventStatus.REFUSAL
    if event.author == REFUSAL_AUTHOR and fork_source(envelope) is not None:
        return EventStatus.FORK
    if event.partial:
        return EventStatus.PARTIAL
    if event.id and stored.get(event.id) == event:
        return EventStatus.DUPLICATE
    request_id = summary_request_id(event)
    if request_id is not None and request_id in answered:
        return EventStatus.DUPLICATE_SUMMARY
    return None


def checked_session(
    session_key: SessionKey | None, last_offset: int | None, offset: int, envelope: Envelope
) -> SessionKey | None:
    """The session of the records so far with `envelope` at `offset` after them.

    Records at negative offsets are a fork's inherited ones
    (:func:`projections.fold.fork.inherited`): they belong to the sessions of
    its line, so only the others are held to one session.

    Args:
        session_key: The session of the records so far (None: no own record yet).
        last_offset: The offset of the last record (None: none yet).
        offset: The new record's offset.
        envelope: The new record.

    Raises:
        ValueError: `offset` is not above `last_offset`.
        SessionMismatchError: The record is of another session than the earlier ones.
    """
    if last_offset is not None and offset <= last_offset:
        raise ValueError(
            f"offset {offset} is not above the last offset {last_offset}: "
            "a session's records are classified once each, in rising offsets"
        )
    if offset < 0:
        return session_key
    if session_key is not None and envelope.session_key != session_key:
        raise SessionMismatchError(projection_key=session_key, event_key=envelope.session_key)
    return envelope.session_key
