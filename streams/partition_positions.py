"""Which fetched records the projector may fold after a partition is (re)assigned.

No I/O of its own. faust-streaming 0.15.3 can drop records around a
rebalance and commit past them: a stale ``getmany`` result still being
drained after ``Consumer.perform_seek`` moves faust's read offset past
records that are then fetched again and discarded as already read, while
the stale copies were acked as skipped. The records lost are the first ones
the new generation should have delivered for the partition (or, at the end
of a partition, the last ones, which no later record reveals).

So the projector keeps, per `events` partition, the offset it expects next,
in its own table (``p:<partition>``, written after the batch's session
entries), and checks the *first* record of each partition after it loads
that position (a start, a rebalance):

* a record below the position is a redelivery: admitted, and the session's
  ``last_offset`` skips it;
* the expected record is admitted and the partition is *verified*;
* a record above it is a gap: held back, and the shell seeks the partition
  to the expected offset; the first record that then arrives at or after
  that offset (and not after the one that revealed the gap) is admitted and
  verifies the partition: the offsets skipped hold no record (a transaction
  marker, an aborted record under ``read_committed``);
* the position checked is the lower of the stored one and faust's committed
  offset (:func:`start_position`), so records faust skips between the two
  are sought back too (unacked, they would stop its commits);
* a partition fetched past its position with nothing delivered for
  ``idle_s`` is sought back too, with a doubling pause (at most
  :data:`MAX_STALL_PAUSE_S`).

Every gap is checked the same way (a seek back, then the first record at or
after the expected offset) until the partition has been verified for
:data:`SETTLE_IDLE_PERIODS` idle periods (unless nothing was stored for it:
a first start, where no earlier owner left a position to resume from):
faust can also drop a record a few batches after the first one of an
assignment. After that, a partition's gaps are Kafka's own (markers after
every transactional summary), and its records are admitted as they come.
Records held back are still acked by ``take_events``, so while a check is
open faust's committed offset can run ahead of what was folded; the stored
position is what the projector trusts, also across restarts.

Example: position 10 loaded; record 15 -> gap 10..15, seek to 10, held;
after the seek 12 arrives -> admitted, verified (10, 11 were markers); then
14 after 12 -> admitted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from streams.project_batch import SourceRecord

MAX_STALL_PAUSE_S: Final = 60.0
#: After a partition is verified, its gaps are still checked for this many idle periods.
SETTLE_IDLE_PERIODS: Final = 5
#: A committed offset below the fold that stays put this many idle periods is sought back to.
COMMIT_HOLE_IDLE_PERIODS: Final = 3

PositionReader = Callable[[int], int | None]
"""The stored next offset of a partition, None when none is stored."""


@dataclass(frozen=True, slots=True)
class Gap:
    """A partition that skipped offsets: seek it back to `expected`.

    Attributes:
        partition: The `events` partition.
        expected: The offset the projector expects next.
        seen: The offset that arrived instead.
    """

    partition: int
    expected: int
    seen: int


@dataclass(frozen=True, slots=True)
class Admission:
    """What a batch may fold, and what it needs.

    Attributes:
        records: The admitted records, batch order.
        gaps: Partitions to seek back.
        positions: The new next offset of each partition that moved.
    """

    records: list[SourceRecord]
    gaps: list[Gap]
    positions: dict[int, int]


def start_position(stored: int | None, committed: int | None) -> int | None:
    """The offset a partition's first record after a (re)assignment must have.

    faust starts a partition at its committed offset, which can lie below the
    stored position (records folded whose offsets faust had not committed yet
    when the worker died or lost the partition). Those records are folded
    already, but faust must still deliver and ack them: it commits only over
    acked offsets without a hole, and a record it skips around the seek to the
    committed offset would hold its commits back for good. So the check starts
    at the lower of the two; the records between them are redeliveries.

    Example: stored 104, committed 100 -> 100; stored None -> None (nothing
    folded yet: no check).
    """
    if stored is None or committed is None:
        return stored
    return min(stored, committed)


class PartitionPositions:
    """The next expected offset of each owned partition, and the gaps being checked."""

    def __init__(self, idle_s: float) -> None:
        self._idle_s = idle_s
        self._next: dict[int, int | None] = {}
        self._checking: dict[int, tuple[int, int]] = {}
        self._last_seen: dict[int, float] = {}
        self._stall_pause: dict[int, float] = {}
        self._verified_at: dict[int, float] = {}  # the verified partitions, and since when
        self._commit_seen: dict[int, tuple[int, float]] = {}

    def admit(
        self, records: Sequence[SourceRecord], stored: PositionReader, now: float
    ) -> Admission:
        """Split `records` into what may be folded now and the gaps to seek back.

        `now` is a monotonic clock reading: when the partitions were last heard of.
        """
        for record in records:
            self._last_seen[record.partition] = now
        admitted: list[SourceRecord] = []
        gaps: list[Gap] = []
        moved: dict[int, int] = {}
        stopped: set[int] = set()
        for record in records:
            partition, offset = record.partition, record.offset
            if partition in stopped:
                continue
            if partition not in self._next:
                self._next[partition] = stored(partition)
            expected = self._next[partition]
            checking = self._checking.get(partition)
            if checking is not None:
                start, seen = checking
                if not start <= offset <= seen:
                    stopped.add(partition)  # fetched before the seek: it comes again
                    continue
                del self._checking[partition]
            elif expected is not None and offset > expected and not self._trusted(partition, now):
                self._checking[partition] = (expected, offset)
                gaps.append(Gap(partition, expected, offset))
                stopped.add(partition)
                continue
            admitted.append(record)
            if expected is None or offset >= expected:
                self._next[partition] = moved[partition] = offset + 1
                if partition not in self._verified_at:
                    # Nothing stored (a first start): no earlier owner, no seek to
                    # committed, nothing for faust to drop; its gaps are trusted.
                    self._verified_at[partition] = now if expected is not None else -math.inf
        return Admission(admitted, gaps, moved)

    def _trusted(self, partition: int, now: float) -> bool:
        """Whether a gap in `partition` may be taken as Kafka's own without a check.

        Only once the partition was verified and has run for
        :data:`SETTLE_IDLE_PERIODS` idle periods since: faust can also drop a
        record a few batches after the first one of an assignment (a stale
        fetch drained after its seek), so every gap is checked in that time.
        """
        verified_at = self._verified_at.get(partition)
        return verified_at is not None and now - verified_at >= SETTLE_IDLE_PERIODS * self._idle_s

    def stalled(self, fetch_positions: dict[int, int | None], now: float) -> list[Gap]:
        """Partitions fetched past the expected offset with no record for ``idle_s``: seek them.

        Args:
            fetch_positions: The consumer's next fetch offset of each owned partition.
            now: A monotonic clock reading.
        """
        seeks: list[Gap] = []
        for partition, position in fetch_positions.items():
            expected = self._next.get(partition)
            if partition in self._verified_at and partition not in self._checking:
                continue
            if expected is None or position is None or position <= expected:
                self._stall_pause.pop(partition, None)
                continue
            pause = self._stall_pause.get(partition, self._idle_s)
            if now - self._last_seen.get(partition, now) < pause:
                continue
            self._last_seen[partition] = now
            self._stall_pause[partition] = min(2 * pause, MAX_STALL_PAUSE_S)
            self._checking.pop(partition, None)
            seeks.append(Gap(partition, expected, position))
        return seeks

    def commit_holes(self, committed: dict[int, int | None], now: float) -> list[Gap]:
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
            self._checking.pop(partition, None)
            self._last_seen.pop(partition, None)
            self._stall_pause.pop(partition, None)
            self._verified_at.pop(partition, None)
            self._commit_seen.pop(partition, None)
