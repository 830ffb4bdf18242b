"""How many invocations a session holds, and how many are new since the last summary.

Pure: no I/O, no clock. "New" is the sliding window's notion (reference §4
steps 2-4): an invocation of the live, unscoped raw events whose latest
timestamp is strictly greater than the end of the most recently appended
summary with a non-zero end. Its count is what the sliding window compares
with ``compaction_interval``, so the projector can tell when to look for a
window without reading the history.

Memory: one entry per live invocation id (O(invocations) per session).
Applying a raw event that continues the newest invocation is O(1) (its latest
timestamp is kept beside the map), one that starts or resumes another is
O(log invocations); a summary whose end does not move backwards is O(new
invocations); anything else recounts from the kept timestamps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from pyrsistent import PMap, PSet, pmap, pset

from projections.event_kinds import is_summary
from schemas.event import Event


@dataclass(frozen=True, slots=True, eq=False)
class InvocationCounts:
    """Invocation ids of the live raw events, and the sliding window's new ones.

    The latest timestamp of the invocation the newest unscoped event continues
    is kept apart (`current`), so the events of one invocation, which each move
    it, write no map: the map takes it when another invocation starts.
    Equal to counts with the same ids, latest timestamps (:attr:`latest_timestamps`),
    previous end, new ids and released count, wherever the current latest is kept.

    Attributes:
        invocation_ids: Non-empty invocation ids of live raw events, any scope.
        flushed: For unscoped live raw events: invocation id -> its greatest
            timestamp, starting from 0.0 (so an invocation whose events are
            all at or before 0.0 is never new, as in ADK); for `current`, an
            entry may be stale: `current_latest` is its value.
        previous_end: End of the most recently appended unscoped live summary
            whose end is non-zero; 0.0 when there is none.
        new_invocations: Ids with a latest timestamp greater than `previous_end`.
        released: How many ids retention took out of `invocation_ids` and
            the latest timestamps (:func:`released_invocations`): invocations
            that are neither new nor ever seen again without the history.
        current: The invocation of the newest unscoped live raw event with an
            id (``""``: none yet).
        current_latest: Its greatest timestamp, from 0.0.
    """

    invocation_ids: PSet[str] = field(default_factory=pset)
    flushed: PMap[str, float] = field(default_factory=pmap)
    previous_end: float = 0.0
    new_invocations: PSet[str] = field(default_factory=pset)
    released: int = 0
    current: str = ""
    current_latest: float = 0.0

    @property
    def total(self) -> int:
        """Distinct invocations among the live raw events."""
        return self.released + len(self.invocation_ids)

    @property
    def since_compaction(self) -> int:
        """Invocations the sliding window counts as new (reference §4 step 4)."""
        return len(self.new_invocations)

    @property
    def latest_timestamps(self) -> PMap[str, float]:
        """For unscoped live raw events: invocation id -> its greatest timestamp, from 0.0."""
        if not self.current:
            return self.flushed
        return self.flushed.set(self.current, self.current_latest)

    def latest(self, invocation: str) -> float | None:
        """The greatest timestamp of unscoped `invocation` (None: it has no unscoped event)."""
        if invocation and invocation == self.current:
            return self.current_latest
        return self.flushed.get(invocation)

    def knows(self, invocation: str) -> bool:
        """Whether `invocation` has a latest timestamp."""
        return (bool(invocation) and invocation == self.current) or invocation in self.flushed

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InvocationCounts):
            return NotImplemented
        return (
            self.invocation_ids == other.invocation_ids
            and self.previous_end == other.previous_end
            and self.new_invocations == other.new_invocations
            and self.released == other.released
            and self.latest_timestamps == other.latest_timestamps
        )

    __hash__ = None  # type: ignore[assignment]  # equal counts may keep the current apart or not


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
    if invocation == counts.current and event.isolation_scope is None:
        # The common case: the invocation the previous events continued. Nothing but a float.
        latest = max(counts.current_latest, event.timestamp)
        new_invocations = counts.new_invocations
        if latest > counts.previous_end and invocation not in new_invocations:
            new_invocations = new_invocations.add(invocation)
        elif latest == counts.current_latest:
            return counts
        return InvocationCounts(
            counts.invocation_ids,
            counts.flushed,
            counts.previous_end,
            new_invocations,
            counts.released,
            invocation,
            latest,
        )
    invocation_ids = counts.invocation_ids
    if invocation not in invocation_ids:
        invocation_ids = invocation_ids.add(invocation)
    if event.isolation_scope is not None:
        if invocation_ids is counts.invocation_ids:
            return counts
        return replace(counts, invocation_ids=invocation_ids)
    # Another invocation becomes the current one: the map takes the one it follows.
    known = counts.flushed.get(invocation)
    latest = max(known if known is not None else 0.0, event.timestamp)
    flushed = counts.latest_timestamps
    new_invocations = counts.new_invocations
    if latest > counts.previous_end and invocation not in new_invocations:
        new_invocations = new_invocations.add(invocation)
    return InvocationCounts(
        invocation_ids,
        flushed,
        counts.previous_end,
        new_invocations,
        counts.released,
        invocation,
        latest,
    )


def _note_summary(counts: InvocationCounts, summary: Event) -> InvocationCounts:
    compaction = summary.actions.compaction
    if summary.isolation_scope is not None or compaction is None or not compaction.end_timestamp:
        return counts
    end = compaction.end_timestamp
    if end >= counts.previous_end:
        # The bar only rises: the new set is a subset of the current one.
        current, flushed = counts.current, counts.flushed
        still_new = [
            i
            for i in counts.new_invocations
            if (counts.current_latest if i == current else flushed[i]) > end
        ]
    else:
        still_new = [i for i, last in counts.latest_timestamps.items() if last > end]
    return replace(counts, previous_end=end, new_invocations=pset(still_new))


def released_invocations(counts: InvocationCounts, ids: Iterable[str]) -> InvocationCounts:
    """`counts` without `ids` (released invocations, none of them new), still counting them."""
    gone = [i for i in ids if i in counts.invocation_ids]
    if not gone:
        return counts
    invocation_ids = counts.invocation_ids.evolver()
    flushed = counts.flushed.evolver()
    current, current_latest = counts.current, counts.current_latest
    for invocation in gone:
        invocation_ids.remove(invocation)
        if invocation in counts.flushed:
            del flushed[invocation]
        if invocation == current:
            current, current_latest = "", 0.0
    return InvocationCounts(
        invocation_ids.persistent(),
        flushed.persistent(),
        counts.previous_end,
        counts.new_invocations,
        counts.released + len(gone),
        current,
        current_latest,
    )


def count_invocations(live: Iterable[Event]) -> InvocationCounts:
    """The counts of a whole live list, stream order (what a rewind recomputes)."""
    counts = InvocationCounts()
    for event in live:
        counts = note_live_event(counts, event)
    return counts
