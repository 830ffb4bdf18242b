"""Conditional appends: an event, or a session's creation, applied only if no writer came first.

Kafka has no conditional append, so the condition travels in the record
(``Envelope.expected_offset``) and the projector's fold decides
(projections/README.md, "Conditional records"). :func:`append_if` and
:func:`create_if_absent` append one record like ``Client.append`` (``acks=all``,
the idempotent producer, no duplicate lookup: the fold decides), then read the
session's ``write-verdicts`` from its owner with the record's offset as
``min_offset`` (read-your-writes) and return the :class:`Verdict`. A verdict the
projector no longer remembers raises :class:`UnknownVerdictError`, never a guess.
They use the client's writer and reads directly: ``Client`` is at its line cap.

Example::

    verdict = await append_if(client, "acme/app/u1/s1", event, expected_offset=41)
    # Verdict(offset=57, accepted=True, writer_offset=57, deleted=False)
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ctxstream.appends.deletion_record import checked_session_key
from ctxstream.appends.event_records import EventInput
from ctxstream.errors import ContextReadError, InvalidArgumentError
from projections.fold.conditions import Conditions, refusal_verdict
from schemas.creation_mark import CREATION_EXPECTED_OFFSET, TEMP, creation_event
from schemas.json_bounds import INT64_MAX
from schemas.keys import Offset
from schemas.read_protocol import DEFAULT_READ_WAIT_S, WriteVerdicts

if TYPE_CHECKING:
    from ctxstream.client import Client

#: How long a conditional append waits for its verdict by default, in seconds.
DEFAULT_VERDICT_WAIT_S: Final = DEFAULT_READ_WAIT_S


class UnknownVerdictError(ContextReadError):
    """The projector no longer knows whether the record was refused (too many refusals since)."""


@dataclass(frozen=True)
class Verdict:
    """What the fold made of one conditional record.

    Attributes:
        offset: Where the record landed on its session's partition.
        accepted: The fold applied it (its condition held).
        writer_offset: The session's writer offset right after the record: its own
            offset when accepted; else the one that made it stale (as of the read).
        deleted: The session has no live incarnation (absent or deleted), as of the read.
    """

    offset: int
    accepted: bool
    writer_offset: int
    deleted: bool


async def append_if(
    client: Client,
    session_key: str,
    event: EventInput,
    *,
    expected_offset: int,
    timeout_s: float = DEFAULT_VERDICT_WAIT_S,
) -> Verdict:
    """Append `event` only if the session's last writer record is at `expected_offset`.

    ``-1``: only if the session has no writer record (never written, or deleted since).
    The event is checked as ``Client.append`` checks it (no bookkeeping records).

    Raises:
        InvalidArgumentError: `expected_offset` is no offset (nothing was sent).
        InvalidEventError: The event or key is refused (nothing was sent).
        ReadTimeoutError, NoPartitionOwnerError: No verdict in `timeout_s` (the record was sent).
        UnknownVerdictError: The projector no longer knows the record's verdict.
        RuntimeError: The client is not started.
    """
    _check_expected(expected_offset)
    written = await client._writer.write(
        session_key, [event], pipeline=False, lookup=False, expected_offset=expected_offset
    )
    return await _verdict(client, session_key, written[0].offset, timeout_s)


async def create_if_absent(
    client: Client,
    session_key: str,
    *,
    event_id: str,
    timestamp: float,
    state: Mapping[str, object],
    timeout_s: float = DEFAULT_VERDICT_WAIT_S,
) -> Verdict:
    """Create the session with the initial `state` only if it has no writer record.

    Appends a creation record (:mod:`schemas.creation_mark`) expecting ``-1``: of
    concurrent creates of one session one is accepted, the others refused. `state`
    holds JSON values and no ``temp:`` key (drop those first).

    Raises:
        InvalidArgumentError: The key, `event_id` or `state` is refused (nothing was sent).
        ReadTimeoutError, NoPartitionOwnerError: No verdict in `timeout_s` (the record was sent).
        UnknownVerdictError: The projector no longer knows the record's verdict.
        RuntimeError: The client is not started.
    """
    checked_session_key(session_key)
    if temporary := sorted(str(key) for key in state if str(key).startswith(TEMP)):
        raise InvalidArgumentError(
            f"state: {temporary[0]!r} is a {TEMP} key; a session's stored state holds none"
        )
    event = creation_event(event_id=event_id or uuid.uuid4().hex, timestamp=timestamp, state=state)
    written = await client._writer.write(
        session_key, [event], pipeline=True, lookup=False, expected_offset=CREATION_EXPECTED_OFFSET
    )
    return await _verdict(client, session_key, written[0].offset, timeout_s)


def _check_expected(expected_offset: object) -> None:
    if (
        not isinstance(expected_offset, int)
        or isinstance(expected_offset, bool)
        or not -1 <= expected_offset <= INT64_MAX
    ):
        raise InvalidArgumentError(
            f"expected_offset: {expected_offset!r}, expected an offset (an integer from -1)"
        )


async def _verdict(client: Client, session_key: str, offset: Offset, timeout_s: float) -> Verdict:
    """The verdict on the record at `offset`, read from the session's owner once it folded it."""
    verdicts = await client._reads.write_verdicts(
        session_key, min_offset=offset, timeout_s=timeout_s
    )
    return verdict_of(verdicts, offset)


def verdict_of(verdicts: WriteVerdicts, offset: int) -> Verdict:
    """The :class:`Verdict` on the record at `offset` that `verdicts` (past it) give.

    Raises:
        UnknownVerdictError: `verdicts` are not past `offset`, or no longer remember it.
    """
    if verdicts.last_offset < offset:
        reason = f"the projector answered at offset {verdicts.last_offset}, before {offset}"
        raise UnknownVerdictError(session_key=verdicts.session_key, reason=reason)
    conditions = Conditions(
        Offset(verdicts.writer_offset),
        tuple(Offset(at) for at in verdicts.refused),
        Offset(verdicts.refused_floor),
    )
    refused = refusal_verdict(conditions, offset)
    if refused is None:
        reason = (
            f"the verdict on offset {offset} is no longer known (refusals are remembered "
            f"above offset {verdicts.refused_floor} only); read the session again"
        )
        raise UnknownVerdictError(session_key=verdicts.session_key, reason=reason)
    return Verdict(
        offset=offset,
        accepted=not refused,
        writer_offset=verdicts.writer_offset if refused else offset,
        deleted=verdicts.deleted,
    )
