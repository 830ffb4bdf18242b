"""The events a projection retains and the live events that rewinds leave. Pure: no I/O.

A rewind can bring back events an earlier rewind annulled, so the live list
cannot be folded forward alone: the whole applied log is kept, and the live
list is recomputed from it when a rewind takes effect (O(events)); every other
record costs O(log events). Each record's size for the size gate
(:func:`~projections.compaction.size_gate.event_json_size`) is measured once,
when it is appended. The vectors keep every position's meaning after retention
releases their start (:class:`~projections.retention.retained_vector.RetainedVector`).

Example: ``a1(inv a) b1(inv b) rw(before b)`` -> log of three records, live
``a1``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from pyrsistent import PMap, pmap

from projections.compaction.live_order import LiveOrder, live_order, note_live_event
from projections.compaction.size_gate import event_json_size
from projections.fold.rewind import drop_rewound
from projections.retention.released_ids import ReleasedIds
from projections.retention.retained_vector import RetainedVector, retained_vector
from schemas.creation_mark import is_creation
from schemas.event import Event
from schemas.event_digest import event_digest
from schemas.logged_event import LoggedEvent


@dataclass(frozen=True, slots=True)
class SessionLog:
    """A session's applied records and its live records.

    Attributes:
        records: Every applied record, stream order (rewinds and the events
            they annul included).
        live: The records that rewinds leave (reference §3.1), stream order;
            never holds a rewind event or a creation record.
        first_positions: Invocation id -> position in `records` of its first
            event, over every record (rewind events included), as
            :func:`~projections.fold.rewind.drop_rewound` computes it.
        stored_by_id: Event id -> the latest applied record with that id (ids
            that are empty are not indexed): what :func:`is_stored` compares,
            and where :func:`stored_offsets` finds a stored event's offset.
        sizes: The size-gate size of each record of `records`, same positions.
        live_sizes: The size-gate size of each record of `live`, same positions.
        order: The order facts of `live` (:mod:`projections.compaction.live_order`): where
            a compaction decision may read only the newest records.
        released: The ids the released records named and the held ones do
            not (:mod:`projections.retention.released_ids`); `first_positions`,
            `stored_by_id` and `order` hold entries for held records only.
    """

    records: RetainedVector[LoggedEvent] = field(default_factory=RetainedVector)
    live: RetainedVector[LoggedEvent] = field(default_factory=RetainedVector)
    first_positions: PMap[str, int] = field(default_factory=pmap)
    stored_by_id: PMap[str, LoggedEvent] = field(default_factory=pmap)
    sizes: RetainedVector[int] = field(default_factory=RetainedVector)
    live_sizes: RetainedVector[int] = field(default_factory=RetainedVector)
    order: LiveOrder = field(default_factory=LiveOrder)
    released: ReleasedIds = field(default_factory=ReleasedIds)


def is_stored(log: SessionLog, event: Event) -> bool:
    """Whether an event equal to `event` (same id and every field) was applied before.

    ADK's session service ignores such a re-delivery (reference §11.1 rule 2);
    on a topic it is a producer's retry at a new offset.
    """
    stored = log.stored_by_id
    # A membership test first: most ids are new, and a missed lookup raises inside the map.
    return bool(event.id) and event.id in stored and stored[event.id].envelope.event == event


def stored_offsets(log: SessionLog, digests: Mapping[str, str]) -> dict[str, int]:
    """Of the ids in `digests`, those whose stored event has that digest, and its offset.

    What the append door asks before it writes (:func:`schemas.event_digest.event_digest`
    is the digest): an event listed here is one :func:`is_stored` finds, which
    the fold would drop. A record a fork inherited is not listed (its offset
    is another session's), nor one retention released (its id is no longer
    indexed): those copies are written and the fold decides.

    Example: ``{"e1": digest(e1)}`` with e1 stored at offset 7 -> ``{"e1": 7}``;
    ``{"e1": digest(other)}`` -> ``{}``.
    """
    stored = log.stored_by_id
    found: dict[str, int] = {}
    for event_id, digest in digests.items():
        record = stored[event_id] if event_id and event_id in stored else None
        if (
            record is not None
            and record.origin_offset is None
            and event_digest(record.envelope.event) == digest
        ):
            found[event_id] = record.offset
    return found


def stored_events(records: Iterable[LoggedEvent]) -> PMap[str, LoggedEvent]:
    """The :attr:`SessionLog.stored_by_id` of `records`: each id's latest record."""
    stored: dict[str, LoggedEvent] = {}
    for record in records:
        if record.envelope.event.id:
            stored[record.envelope.event.id] = record
    return pmap(stored)


def append_record(log: SessionLog, record: LoggedEvent) -> tuple[SessionLog, bool]:
    """`log` with one more record, and whether a rewind changed the earlier live records.

    A rewind event (non-empty ``rewind_before_invocation_id``) never enters
    the live list. When its target invocation appeared earlier, the live list
    is recomputed from every record (it may shrink, or regain events that an
    earlier rewind annulled); a rewind to an unknown invocation leaves the live
    list as it was.

    Example: live ``a1 b1`` + ``R(b)`` -> live ``a1``, True; live ``a1`` +
    ``R(z)`` -> live ``a1``, False.
    """
    event = record.envelope.event
    position = len(log.records)
    records = log.records.append(record)
    size = event_json_size(event)
    sizes = log.sizes.append(size)
    first_positions = log.first_positions
    if event.invocation_id not in first_positions:
        first_positions = first_positions.set(event.invocation_id, position)
    stored = log.stored_by_id.set(event.id, record) if event.id else log.stored_by_id
    target = event.actions.rewind_before_invocation_id
    if not target:
        live, live_sizes = log.live.append(record), log.live_sizes.append(size)
        order = note_live_event(log.order, event)
        return (
            SessionLog(
                records, live, first_positions, stored, sizes, live_sizes, order, log.released
            ),
            False,
        )
    if target not in log.first_positions:
        return (
            SessionLog(
                records,
                log.live,
                first_positions,
                stored,
                sizes,
                log.live_sizes,
                log.order,
                log.released,
            ),
            False,
        )
    live, live_sizes = live_records(records, sizes)
    order = live_order(record.envelope.event for record in live)
    return (
        SessionLog(records, live, first_positions, stored, sizes, live_sizes, order, log.released),
        True,
    )


def append_unlisted(log: SessionLog, record: LoggedEvent) -> SessionLog:
    """`log` with one more record that is never live: a creation record.

    It is kept and indexed as any applied record (a refold of the log applies
    it again), but never listed in the live records, so no contents, count or
    compaction decision reads it.
    """
    event = record.envelope.event
    first_positions = log.first_positions
    if event.invocation_id not in first_positions:
        first_positions = first_positions.set(event.invocation_id, len(log.records))
    return SessionLog(
        log.records.append(record),
        log.live,
        first_positions,
        log.stored_by_id.set(event.id, record) if event.id else log.stored_by_id,
        log.sizes.append(event_json_size(event)),
        log.live_sizes,
        log.order,
        log.released,
    )


def live_records(
    records: RetainedVector[LoggedEvent], sizes: RetainedVector[int]
) -> tuple[RetainedVector[LoggedEvent], RetainedVector[int]]:
    """The records of `records` that rewinds leave, stream order, and their `sizes`.

    Raises:
        NeedsHistory: `records` released its oldest records.
    """
    events = (record.envelope.event for record in records)
    kept = drop_rewound([event for event in events if not is_creation(event)])
    live: list[LoggedEvent] = []
    live_sizes: list[int] = []
    # drop_rewound returns a subsequence of its input, the same objects in the
    # same order, so one forward walk pairs every kept event with its record.
    index = 0
    for record, size in zip(records, sizes, strict=True):
        if index < len(kept) and record.envelope.event is kept[index]:
            live.append(record)
            live_sizes.append(size)
            index += 1
    return retained_vector(live), retained_vector(live_sizes)
