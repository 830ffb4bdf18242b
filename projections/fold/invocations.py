"""How many invocations a session holds, and how many are new since the last summary.

Pure: no I/O, no clock. "New" is the sliding window's notion (reference §4
steps 2-4): an invocation of the live, unscoped raw events whose latest
timestamp is strictly greater than the end of the most recently appended
summary with a non-zero end. Its count is what the sliding window compares
with ``compaction_interval``, so the projector can tell when to look for a
window without reading the history.

Memory: one entry per live invocation id (O(invocations) per session).
Applying a raw event is O(log invocations); a summary whose end does not move
backwards is O(new invocations); anything else recounts from the kept
timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pyrsistent import PMap, PSet, pmap, pset

from projections.event_kinds import is_summary
from schemas.event import Event


@dataclass(frozen=True, slots=True)
class InvocationCounts:
    """Invocation ids of the live raw events, and the sliding window's new ones.

    Attributes:
        invocation_ids: Non-empty invocation ids of live raw events, any scope.
        latest_timestamps: For unscoped live raw events: invocation id -> its
            greatest timestamp, starting from 0.0 (so an invocation whose
            events are all at or before 0.0 is never new, as in ADK).
        previous_end: End of the most recently appended unscoped live summary
            whose end is non-zero; 0.0 when there is none.
        new_invocations: Ids in `latest_timestamps` whose timestamp is
            greater than `previous_end`.
        released: How many ids retention took out of `invocation_ids` and
            `latest_timestamps` (:func:`released_invocations`): invocations
            that are neither new nor ever seen again without the history.
    """

    invocation_ids: PSet[str] = field(default_factory=pset)
    latest_timestamps: PMap[str, float] = field(default_factory=pmap)
    previous_end: float = 0.0
    new_invocations: PSet[str] = field(default_factory=pset)
    released: int = 0

    @property
    def total(self) -> int:
        """Distinct invocations among the live raw events."""
        return self.released + len(self.invocation_ids)

    @property
    def since_compaction(self) -> int:
        """Invocations the sliding window counts as new (reference §4 step 4)."""
        return len(self.new_invocations)


def note_live_event(counts: InvocationCounts, event: Event) -> InvocationCounts:
    """`counts` after one more live event (never a rewind event).

    Example: previous end 103; inv3 at 105 -> inv3 is new; then a summary
    ending at 106 -> no invocation is new.
    """
    if is_summary(event):
        return _note_summary(counts, event)
    invocation = event.invocation_id
    if not invocation:
        return counts
    # Most events continue an invocation already counted: leave unchanged parts as they are.
    invocation_ids = counts.invocation_ids
    if invocation not in invocation_ids:
        invocation_ids = invocation_ids.add(invocation)
    if event.isolation_scope is not None:
        if invocation_ids is counts.invocation_ids:
            return counts
        return InvocationCounts(
            invocation_ids,
            counts.latest_timestamps,
            counts.previous_end,
            counts.new_invocations,
            counts.released,
        )
    known = counts.latest_timestamps.get(invocation)
    latest = max(known if known is not None else 0.0, event.timestamp)
    latest_timestamps = counts.latest_timestamps
    if known is None or latest != known:
        latest_timestamps = latest_timestamps.set(invocation, latest)
    new_invocations = counts.new_invocations
    if latest > counts.previous_end and invocation not in new_invocations:
        new_invocations = new_invocations.add(invocation)
    if (
        invocation_ids is counts.invocation_ids
        and latest_timestamps is counts.latest_timestamps
        and new_invocations is counts.new_invocations
    ):
        return counts
    return InvocationCounts(
        invocation_ids, latest_timestamps, counts.previous_end, new_invocations, counts.released
    )


def _note_summary(counts: InvocationCounts, summary: Event) -> InvocationCounts:
    compaction = summary.actions.compaction
    if summary.isolation_scope is not None or compaction is None or not compaction.end_timestamp:
        return counts
    end = compaction.end_timestamp
    if end >= counts.previous_end:
        # The bar only rises: the new set is a subset of the current one.
        still_new = [i for i in counts.new_invocations if counts.latest_timestamps[i] > end]
    else:
        still_new = [i for i, latest in counts.latest_timestamps.items() if latest > end]
    return InvocationCounts(
        counts.invocation_ids, counts.latest_timestamps, end, pset(still_new), counts.released
    )


def released_invocations(counts: InvocationCounts, ids: Iterable[str]) -> InvocationCounts:
    """`counts` without `ids` (released invocations, none of them new), still counting them."""
    gone = [i for i in ids if i in counts.invocation_ids]
    if not gone:
        return counts
    invocation_ids = counts.invocation_ids.evolver()
    latest = counts.latest_timestamps.evolver()
    for invocation in gone:
        invocation_ids.remove(invocation)
        if invocation in counts.latest_timestamps:
            del latest[invocation]
    return InvocationCounts(
        invocation_ids.persistent(),
        latest.persistent(),
        counts.previous_end,
        counts.new_invocations,
        counts.released + len(gone),
    )


def count_invocations(live: Iterable[Event]) -> InvocationCounts:
    """The counts of a whole live list, stream order (what a rewind recomputes)."""
    counts = InvocationCounts()
    for event in live:
        counts = note_live_event(counts, event)
    return counts
