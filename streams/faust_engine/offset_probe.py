"""Ask the log itself which committed records of a partition lie in an offset range.

The projector sees offsets skipped between the records faust delivers. Most
such gaps are Kafka's own: a transaction's commit marker after every summary
the summarizer appends, an aborted transaction's records and marker. But
faust can also drop records around a rebalance and go on. Only the log can
tell the two apart: a ``read_committed`` read of the skipped range returns
nothing for a gap of markers and aborted records, and the records faust
dropped otherwise (:mod:`streams.faust_engine.partition_positions` folds them in place).

One reader (:class:`~schemas.kafka.committed_range.CommittedRangeReader`, the range
read the summarizer's slices share: no consumer group, ``read_committed``),
one read at a time (the projector's agent runs one batch at a time, and its
timers' probes wait their turn). A read assigns the one partition, seeks to
the range's start and reads until its position passes the range or reaches
the last stable offset: a fetch or two on a healthy broker, about half a
millisecond here.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from aiokafka import ConsumerRecord

from schemas.errors import TopicError
from schemas.kafka.admin import partition_count
from schemas.kafka.committed_range import CommittedRangeReader, RangeReadTimeout

logger = logging.getLogger(__name__)

#: Bytes per partition per fetch: a gap is short, and a probe looks at one record.
FETCH_BYTES: Final = 256 * 1024


class ProbeTimeout(Exception):
    """The log did not answer a probe in time; the range may or may not hold records."""


class OffsetProbe:
    """Finds the first committed record of an `events` partition in an offset range."""

    def __init__(self, *, bootstrap: str, topic: str, timeout_s: float = 5.0) -> None:
        """A prober of `topic` on the cluster at `bootstrap`; a probe gives up after `timeout_s`."""
        self._bootstrap = bootstrap
        self._topic = topic
        self._timeout_s = timeout_s
        self._lock = asyncio.Lock()
        self._reader: CommittedRangeReader | None = None  # made in the loop that probes

    async def _started(self) -> CommittedRangeReader:
        if self._reader is None:
            reader = CommittedRangeReader(
                bootstrap=self._bootstrap, topic=self._topic, fetch_bytes=FETCH_BYTES
            )
            await reader.start()
            self._reader = reader
        return self._reader

    async def stop(self) -> None:
        """Close the reader (a probe after this connects again)."""
        async with self._lock:
            if self._reader is not None:
                reader, self._reader = self._reader, None
                await reader.stop()

    async def partition_count(self) -> int:
        """How many partitions the broker reports for the topic.

        Asks the cluster's metadata once, through an admin client of its own
        (the probe's reader has no subscription that would load the topic's).

        Raises:
            ProbeTimeout: The broker named no partitions within the probe's timeout.
        """
        try:
            return await partition_count(self._bootstrap, self._topic, wait_s=self._timeout_s)
        except TopicError as exc:
            raise ProbeTimeout(
                f"no partitions of {self._topic} in {self._timeout_s:.0f} s"
            ) from exc

    async def first_record(self, partition: int, start: int, end: int) -> int | None:
        """The offset of the first committed record of `partition` in ``[start, end)``.

        None when the range holds none (transaction markers, aborted records,
        records deleted by retention; past the last stable offset: none yet).

        Raises:
            ProbeTimeout: No answer within the probe's timeout.
        """
        found = await self.records(partition, start, end, limit=1)
        return found[0].offset if found else None

    async def records(
        self, partition: int, start: int, end: int, *, limit: int | None = None
    ) -> list[ConsumerRecord[Any, Any]]:
        """The committed records of `partition` in ``[start, end)``, in offset order.

        At most `limit` of them, the first ones; none when the range holds
        none (see :meth:`first_record`). Connects on first use.

        Raises:
            ProbeTimeout: No answer within the probe's timeout.
        """
        wanted = end - start if limit is None else min(limit, end - start)
        if wanted <= 0:
            return []
        found: list[ConsumerRecord[Any, Any]] = []
        async with self._lock:
            reader = await self._started()
            try:
                await reader.read_range(
                    partition,
                    start,
                    end,
                    found.append,
                    limit=wanted,
                    timeout_s=self._timeout_s,
                    # What retention deleted is gone for every reader: read on from the log start.
                    from_log_start=True,
                )
            except RangeReadTimeout as exc:
                raise ProbeTimeout(str(exc)) from exc
        return found
