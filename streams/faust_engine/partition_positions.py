"""Which fetched records the projector may fold: every partition in offset order, no record skipped.

No I/O of its own. faust-streaming 0.15.3 can drop records around a
rebalance and commit past them, so the projector keeps, per `events`
partition, the offset it expects next (``p:<partition>``) and checks every
record against it: one below is a redelivery, the expected one moves the
position, one above leaves a *gap* whose committed records the gap recovery
reads from the log (:mod:`streams.faust_engine.gap_recovery`) and folds in
place. Stalls and commit holes are sought back to.

Example: position 10; record 15 arrives -> gap 10..15, the log holds 12 and
13 there -> 12, 13, 15 are folded; then 17 after 15 -> gap 16..17, the log
holds nothing (a marker) -> 17 is folded. The full rules: this folder's README.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from streams.batch import SourceRecord

MAX_STALL_PAUSE_S: Final = 60.0
#: Where a partition's check starts when nothing was folded or committed yet.
FIRST_OFFSET: Final = 0
#: A committed offset below the fold that stays put this many idle periods is sought back to.
COMMIT_HOLE_IDLE_PERIODS: Final = 3

PositionReader = Callable[[int], int | None]
"""The stored next offset of a partition, None when none is stored."""


@dataclass(frozen=True, slots=True)
class Gap:
    """Offsets of a partition skipped between the expected one and one that arrived.

    Attributes:
        partition: The `events` partition.
        expected: The offset expected (as a seek: the offset to seek to).
        seen: The offset that arrived instead (or the fetch position past it).
    """

    partition: int
    expected: int
    seen: int


GapRecords = Mapping[Gap, Sequence[SourceRecord]]
"""The committed records the log holds in each gap (none: markers only), in offset order.

A gap missing from the mapping was not answered (the read failed)."""


@dataclass(frozen=True, slots=True)
class Admission:
    """What a batch may fold, and what it needs.

    Attributes:
        records: The admitted records, batch order.
        gaps: Partitions to seek back, each to its gap's ``expected`` offset.
        positions: The new next offset of each partition that moved.
    """

    records: list[SourceRecord]
    gaps: list[Gap]
    positions: dict[int, int]


def start_position(stored: int | None, committed: int | None) -> int:
    """The offset a partition's first record after a (re)assignment must have.

    faust starts a partition at its committed offset, which can lie below the
    stored position (records folded whose offsets faust had not committed yet
    when the worker died or lost the partition). Those records are folded
    already, but faust must still deliver and ack them: it commits only over
    acked offsets without a hole. So the check starts at the lower of the
    two: records between them are redeliveries, and any that faust skips
    there are read from the log like every gap's (its commits then wait
    below them until :meth:`PartitionPositions.commit_holes` seeks back).

    Nothing stored means nothing folded yet: the check starts at offset 0
    (the probe reads a log whose start retention moved from that start).

    Example: stored 104, committed 100 -> 100; stored None -> 0.
    """
    if stored is None:
        return FIRST_OFFSET
    if committed is None:
        return stored
    return min(stored, committed)


class PartitionPositions:
    """The next expected offset of each owned partition, and the partitions held back."""

    def __init__(self, idle_s: float) -> None:
        self._idle_s = idle_s
        self._next: dict[int, int | None] = {}
        self._holding: set[int] = set()
        self._last_seen: dict[int, float] = {}
        self._stall_pause: dict[int, float] = {}
        self._empty_to: dict[int, int] = {}
        self._commit_seen: dict[int, tuple[int, float]] = {}

    def _expected(self, partition: int, stored: PositionReader) -> int | None:
        if partition not in self._next:
            self._next[partition] = stored(partition)
        return self._next[partition]

    def gaps(self, records: Sequence[SourceRecord], stored: PositionReader) -> list[Gap]:
        """The gaps :meth:`admit` needs read for `records`: read them from the log, then admit.

        Each gap as if the ones before it in its partition were answered; a
        read not needed after all (a gap after an unanswered one) costs a
        read, nothing else.
        """
        expected: dict[int, int | None] = {}
        holding = set(self._holding)
        stopped: set[int] = set()
        found: list[Gap] = []
        for record in records:
            partition, offset = record.partition, record.offset
            if partition in stopped:
                continue
            if partition not in expected:
                expected[partition] = self._expected(partition, stored)
            position = expected[partition]
            if partition in holding:
                if position is not None and offset > position:
                    stopped.add(partition)
                elif offset == position:
                    holding.discard(partition)
                    expected[partition] = offset + 1
                continue
            if position is not None and offset > position:
                found.append(Gap(partition, position, offset))
            if position is None or offset >= position:
                expected[partition] = offset + 1
        return found

    def admit(
        self,
        records: Sequence[SourceRecord],
        stored: PositionReader,
        missing: GapRecords,
    ) -> Admission:
        """Split `records` into what may be folded now and the partitions to seek back.

        Args:
            records: A batch, in delivery order.
            stored: The stored position of a partition not seen since it was assigned.
            missing: The log's records in the :meth:`gaps` of the same records:
                folded before the record that revealed their gap.
        """
        admitted: list[SourceRecord] = []
        seeks: list[Gap] = []
        moved: dict[int, int] = {}
        stopped: set[int] = set()
        for record in records:
            partition, offset = record.partition, record.offset
            if partition in stopped:
                continue
            expected = self._expected(partition, stored)
            if expected is not None and offset > expected:
                if partition in self._holding:
                    stopped.add(partition)  # fetched before the seek: it comes again
                    continue
                gap = Gap(partition, expected, offset)
                if gap not in missing:  # unanswered: from the expected offset again
                    seeks.append(gap)
                    stopped.add(partition)
                    continue
                admitted.extend(missing[gap])  # faust dropped them: the log had them
            admitted.append(record)
            if expected is None or offset >= expected:
                self._next[partition] = moved[partition] = offset + 1
                self._holding.discard(partition)
        return Admission(admitted, seeks, moved)

    def stalled(
        self,
        fetch_positions: Mapping[int, int | None],
        committed: Mapping[int, int | None],
        now: float,
        drained_at: float,
    ) -> list[Gap]:
        """Partitions fetched past the expected offset with no record for a while: probe them.

        Only once faust had nothing more to deliver after the partition was
        last heard of (`drained_at` later than that): while batches come in
        full, a partition's fetched records may still wait in faust's queue
        behind other partitions', which is no stall (a catch-up would seek
        back for nothing). The expected offset is faust's committed one (0 when it has none) for
        a partition that delivered nothing since it was assigned: at worst the
        records from there are redeliveries. Answer each with
        :meth:`stall_answered`.

        Args:
            fetch_positions: The consumer's next fetch offset of each owned partition.
            committed: faust's committed offset of each owned partition.
            now: A monotonic clock reading.
            drained_at: When faust's queue was last seen empty (a batch short of
                its size, or no batch at all): a monotonic clock reading.
        """
        probes: list[Gap] = []
        for partition, position in fetch_positions.items():
            expected = self._next.get(partition)
            if expected is None:
                commit = committed.get(partition)
                expected = FIRST_OFFSET if commit is None else commit
            if position is None or position <= expected:
                self._stall_pause.pop(partition, None)
                continue
            if position <= self._empty_to.get(partition, -1):
                continue  # the log said before: nothing there
            pause = self._stall_pause.get(partition, self._idle_s)
            last_seen = self._last_seen.setdefault(partition, now)
            if now - last_seen < pause or drained_at < last_seen:
                continue
            self._last_seen[partition] = now
            probes.append(Gap(partition, expected, position))
        return probes

    def heard(self, partitions: Iterable[int], now: float) -> None:
        """The partitions delivered records until `now` (a batch's end: its fold took a while)."""
        for partition in partitions:
            self._last_seen[partition] = now

    def stall_answered(self, gap: Gap, answers: GapRecords) -> Gap | None:
        """The seek a stalled partition needs, given the log's answer to its :meth:`stalled` gap.

        None when the gap holds no committed record (the fetch went past
        markers only: the next record lies beyond it); otherwise the
        partition is sought back, to the first record (held until it
        arrives), or to the expected offset if the log did not answer, and
        its next probe waits twice as long, up to :data:`MAX_STALL_PAUSE_S`.
        """
        partition = gap.partition
        found = answers.get(gap)
        if found is not None and not found:
            self._empty_to[partition] = gap.seen
            self._stall_pause.pop(partition, None)
            if self._next.get(partition) is not None:
                self._next[partition] = gap.seen
                self._holding.discard(partition)
            return None
        pause = self._stall_pause.get(partition, self._idle_s)
        self._stall_pause[partition] = min(2 * pause, MAX_STALL_PAUSE_S)
        if found is None:
            return gap
        first = found[0].offset
        if self._next.get(partition) is not None:
            self._next[partition] = first
            self._holding.add(partition)
        return Gap(partition, first, gap.seen)

    def commit_holes(self, committed: Mapping[int, int | None], now: float) -> list[Gap]:
        """Partitions whose committed offset stays below what was folded: seek them to it.

        faust commits only over acked offsets without a hole; a record it
        skipped without delivering it is never acked, and its commits stop
        there for good. A partition whose committed offset lies below the next
        expected offset and has not moved for :data:`COMMIT_HOLE_IDLE_PERIODS`
        idle periods is sought back to it: the records from there on come
        again, are redeliveries to the fold, and are acked.

        Args:
            committed: faust's committed offset of each owned partition.
            now: A monotonic clock reading.
        """
        seeks: list[Gap] = []
        for partition, offset in committed.items():
            expected = self._next.get(partition)
            if offset is None or expected is None or offset >= expected:
                self._commit_seen.pop(partition, None)
                continue
            seen = self._commit_seen.get(partition)
            if seen is None or seen[0] != offset:
                self._commit_seen[partition] = (offset, now)
                continue
            if now - seen[1] >= COMMIT_HOLE_IDLE_PERIODS * self._idle_s:
                self._commit_seen[partition] = (offset, now)
                seeks.append(Gap(partition, offset, expected))
        return seeks

    def sought_before(self, partition: int) -> bool:
        """Whether the partition was sought back for a stall before (log quieter)."""
        return self._stall_pause.get(partition, self._idle_s) > 2 * self._idle_s

    def revoked(self, partitions: set[int]) -> None:
        """Forget partitions this worker no longer owns; they are read from the table again."""
        for partition in partitions:
            self._next.pop(partition, None)
            self._holding.discard(partition)
            self._last_seen.pop(partition, None)
            self._stall_pause.pop(partition, None)
            self._empty_to.pop(partition, None)
            self._commit_seen.pop(partition, None)
