"""What an append answers: each event's offset, and whether it was a duplicate. Pure.

The idempotency key of an event is ``<session key>/<event id>``. Before an
append writes, the client asks the session's owner which of its events are
stored already, equal (:meth:`ctxstream.reads.ContextReads.stored_offsets`,
by :func:`schemas.event_digest.event_digest`): those are not written again,
and their answer is the stored record's offset with ``duplicate`` true.
Only events whose id the caller gave are asked about, and only ids that
appear once in the call (two events of one id in one call are written, and
the fold decides).

The lookup is a read of committed state: a copy sent before the projector
folded the first one is written, answered with its new offset and
``duplicate`` false, and dropped by the fold (ADK's rule, reference §11.1).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from schemas.keys import Offset


@dataclass(frozen=True, slots=True)
class AppendResult:
    """One appended event's answer.

    Attributes:
        offset: The offset of the event's record; for a duplicate, the stored one's.
        duplicate: The session had stored this event already (same id, every field
            equal), so nothing was written.
    """

    offset: Offset
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class CheckedRecord:
    """One event's record, checked, with what the duplicate lookup asks about it.

    Attributes:
        key: The record's key (the session key).
        value: The record's value, as the projector decodes it.
        event_id: The event's id (given, or fresh).
        digest: The event's digest, when it is looked up (None: a fresh id, or no lookup).
    """

    key: bytes
    value: bytes
    event_id: str
    digest: str | None = None


def lookup_digests(records: Sequence[CheckedRecord]) -> dict[str, str]:
    """The id -> digest of `records` to ask about: those with a digest, of ids seen once."""
    seen = Counter(record.event_id for record in records)
    return {
        record.event_id: record.digest
        for record in records
        if record.digest is not None and seen[record.event_id] == 1
    }


def unstored(records: Sequence[CheckedRecord], stored: Mapping[str, int]) -> list[CheckedRecord]:
    """The records of `records` to write: all but those `stored` names (asked, found equal)."""
    return [record for record in records if not _is_stored(record, stored)]


def merged(
    records: Sequence[CheckedRecord], stored: Mapping[str, int], written: Sequence[Offset]
) -> list[AppendResult]:
    """Each record's answer, in order: its stored offset, or the next of `written`.

    `written` holds the offsets of :func:`unstored`'s records, in their order.
    """
    offsets: Iterator[Offset] = iter(written)
    return [
        AppendResult(Offset(stored[record.event_id]), duplicate=True)
        if _is_stored(record, stored)
        else AppendResult(next(offsets))
        for record in records
    ]


def _is_stored(record: CheckedRecord, stored: Mapping[str, int]) -> bool:
    return record.digest is not None and record.event_id in stored
