"""The repair of records faust drops around rebalances: every gap checked against the log.

The rules are :mod:`streams.faust_engine.partition_positions`' (pure); this
is their I/O. Before a batch is folded, each gap its records leave is read
from the log (:class:`~streams.faust_engine.offset_probe.OffsetProbe`) and
the records faust dropped there are admitted in their place; a gap the log
did not answer is sought back to once the batch's outputs are in. The app's
``gap_recovery_timer`` seeks back partitions fetched past records never
delivered (:meth:`GapRecovery.seek_stalled`) and partitions whose faust
commits stay below the fold (:meth:`GapRecovery.seek_commit_holes`).

It reaches faust only through two small typed callables: :data:`Seek`
(faust's consumer thread moves the fetch position, and faust's read offset
with it) and :data:`Committed` (faust's committed offset of a partition).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

from aiokafka.errors import KafkaError

from streams.batch import SourceRecord
from streams.faust_engine.offset_probe import OffsetProbe, ProbeTimeout
from streams.faust_engine.partition_positions import (
    Admission,
    Gap,
    GapRecords,
    PartitionPositions,
    PositionReader,
    start_position,
)
from streams.projector_metrics import ProjectorMetrics

logger = logging.getLogger(__name__)

Seek = Callable[[int, int], Awaitable[None]]
"""Move an `events` partition's fetch position (and faust's read offset) to an offset."""
Committed = Callable[[int], int | None]
"""faust's committed offset of an `events` partition, None when it has none."""


class GapRecovery:
    """Checks each batch's records against the expected offsets, and seeks back what is missing."""

    def __init__(
        self,
        *,
        topic: str,
        batch_within_s: float,
        probe: OffsetProbe,
        seek: Seek,
        committed: Committed,
        metrics: ProjectorMetrics,
    ) -> None:
        """Recover gaps of `topic` (`events`), whose batches wait up to `batch_within_s`."""
        self._topic = topic
        self._batch_within_s = batch_within_s
        self._positions = PartitionPositions(idle_s=max(2.0, 4 * batch_within_s))
        self._probe = probe
        self._seek = seek
        self._committed = committed
        self._metrics = metrics
        self._folding = False
        self._drained_at = 0.0  # when a batch came short of its size: faust had no more
        self._last_batch_at: float | None = None

    def batch_began(self, *, drained: bool) -> None:
        """A batch is being folded; `drained`: it came short of its size (faust had no more)."""
        self._folding = True
        if drained:
            self._drained_at = time.monotonic()

    def batch_ended(self, partitions: Iterable[int], now: float) -> None:
        """The batch, which delivered records of `partitions`, ended at `now` (monotonic)."""
        self._folding = False
        self._last_batch_at = now
        self._positions.heard(partitions, now)

    async def admit(self, records: Sequence[SourceRecord], stored: PositionReader) -> Admission:
        """What of `records` may be folded, with the records faust dropped in their gaps.

        Args:
            records: A batch, in delivery order.
            stored: The table's next offset of a partition (``p:``), None when none is stored.
        """

        def expected(partition: int) -> int | None:
            return start_position(stored(partition), self._committed(partition))

        missing = await self._read_gaps(self._positions.gaps(records, expected))
        for gap, dropped in missing.items():
            if dropped:
                logger.warning(
                    "records skipped partition=%d offsets=%d..%d: %d read from the log",
                    gap.partition,
                    gap.expected,
                    gap.seen - 1,
                    len(dropped),
                )
        return self._positions.admit(records, expected, missing)

    async def seek_back(self, gaps: Sequence[Gap]) -> None:
        """Seek each partition of an unanswered gap back to the gap's expected offset."""
        for gap in gaps:
            logger.warning(
                "gap not read topic=%s partition=%d: seeking back to %d (got %d)",
                self._topic,
                gap.partition,
                gap.expected,
                gap.seen,
            )
            await self._seek(gap.partition, gap.expected)

    async def seek_stalled(self, fetch_positions: dict[int, int | None]) -> None:
        """Seek back partitions fetched past records this worker never received."""
        if self._folding:
            return  # faust's queue may hold what this batch has not reached yet
        now = time.monotonic()
        drained_at = self._drained_at
        if now - (self._last_batch_at or 0.0) >= self._batch_within_s:
            drained_at = now  # no batch for a while: faust has nothing to deliver
        committed = {partition: self._committed(partition) for partition in fetch_positions}
        stalls = self._positions.stalled(fetch_positions, committed, now, drained_at)
        answers = await self._read_gaps(stalls, limit=1)  # a seek fetches the rest
        for stall in stalls:
            seek = self._positions.stall_answered(stall, answers)
            if seek is None:
                continue
            log = logger.debug if self._positions.sought_before(seek.partition) else logger.warning
            log(
                "partition=%d fetched up to %d but nothing arrived from %d: seeking back",
                seek.partition,
                seek.seen,
                seek.expected,
            )
            await self._seek(seek.partition, seek.expected)

    async def seek_commit_holes(self, owned: set[int]) -> None:
        """Seek back partitions whose faust commits stopped below what was folded."""
        committed = {partition: self._committed(partition) for partition in owned}
        for hole in self._positions.commit_holes(committed, time.monotonic()):
            logger.warning(
                "partition=%d committed offset stays at %d below the fold at %d: seeking back",
                hole.partition,
                hole.expected,
                hole.seen,
            )
            await self._seek(hole.partition, hole.expected)

    def revoked(self, partitions: set[int]) -> None:
        """Forget partitions this worker no longer owns; their positions are read again."""
        self._positions.revoked(partitions)

    async def _read_gaps(self, gaps: Sequence[Gap], limit: int | None = None) -> GapRecords:
        """The log's committed records in each gap, at most `limit` each; unanswered: left out."""
        missing: dict[Gap, list[SourceRecord]] = {}
        for gap in gaps:
            try:
                found = await self._probe.records(
                    gap.partition, gap.expected, gap.seen, limit=limit
                )
            except (ProbeTimeout, KafkaError) as exc:
                logger.warning("gap %s not answered by the log: %r", gap, exc)
                self._metrics.gaps_probed.labels(answer="unanswered").inc()
                continue
            missing[gap] = [
                SourceRecord(r.topic, r.partition, r.offset, r.key, r.value or b"") for r in found
            ]
            self._metrics.gaps_probed.labels(answer="records" if found else "empty").inc()
        return missing
