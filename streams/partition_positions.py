"""Which fetched records the projector may fold: each partition's records in offset order.

No I/O of its own. The projector keeps, per `events` partition, the offset
it expects next, in its own table (``p:<partition>``, written after the batch's
session entries), and admits only records that continue it:

* a record below the expected offset is a redelivery: admitted, and the
  session's ``last_offset`` skips it;
* the expected record (or, with no position yet, any record) is admitted
  and moves the position;
* a record *above* it is a gap. A gap is legitimate where Kafka has no
  record (a transaction's commit marker, an aborted record under
  ``read_committed``), but faust-streaming 0.15.3 also drops records after a
  rebalance: a stale ``getmany`` result still being drained after
  ``Consumer.perform_seek`` moves the read offset past records that are
  fetched again, and those are discarded as already read, while the stale
  copies were acked as skipped. So the shell seeks the partition back to the
  expected offset and this module waits for the first record at or after it;
  the gap is real only if nothing arrives before the record that revealed it.

The same faust path can drop the *last* records of a partition, which no
later record reveals (faust acked the stale copies, so it commits past
them). So a timer compares each owned partition's fetch position with the
expected offset: a partition whose position is beyond it while no record
came for ``idle_s`` is sought back to it, again and again with a doubling
pause (at most :data:`MAX_STALL_PAUSE_S`) until a record arrives. The
position never moves on without a record: a partition that ends with a
transaction marker is sought back now and then while it is idle, which
costs an empty fetch.

The position is written with the state it produced, so the check holds
across restarts even when faust committed past a lost record.

Example: position 10; records 10, 11 admitted (position 12); record 15 ->
gap 12..15, seek to 12, 15 and later dropped; after the seek 13 arrives ->
admitted (12 was a commit marker), position 14.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from streams.project_batch import SourceRecord

MAX_STALL_PAUSE_S: Final = 60.0

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


class PartitionPositions:
    """The next expected offset of each owned partition, and the gaps being checked."""

    def __init__(self, idle_s: float) -> None:
        self._idle_s = idle_s
        self._next: dict[int, int | None] = {}
        self._checking: dict[int, tuple[int, int]] = {}
        self._last_seen: dict[int, float] = {}
        self._stall_pause: dict[int, float] = {}

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
            elif expected is not None and offset > expected:
                self._checking[partition] = (expected, offset)
                gaps.append(Gap(partition, expected, offset))
                stopped.add(partition)
                continue
            admitted.append(record)
            if expected is None or offset >= expected:
                self._next[partition] = moved[partition] = offset + 1
        return Admission(admitted, gaps, moved)

    def stalled(self, fetch_positions: dict[int, int | None], now: float) -> list[Gap]:
        """Partitions fetched past the expected offset with no record for ``idle_s``: seek them.

        Args:
            fetch_positions: The consumer's next fetch offset of each owned partition.
            now: A monotonic clock reading.
        """
        seeks: list[Gap] = []
        for partition, position in fetch_positions.items():
            expected = self._next.get(partition)
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
