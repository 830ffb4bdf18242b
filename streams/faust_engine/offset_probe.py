"""Ask the log itself which committed records of a partition lie in an offset range.

The projector sees offsets skipped between the records faust delivers. Most
such gaps are Kafka's own: a transaction's commit marker after every summary
the summarizer appends, an aborted transaction's records and marker. But
faust can also drop records around a rebalance and go on. Only the log can
tell the two apart: a ``read_committed`` read of the skipped range returns
nothing for a gap of markers and aborted records, and the records faust
dropped otherwise (:mod:`streams.faust_engine.partition_positions` folds them in place).

One reader, no consumer group, one read at a time (the projector's agent
runs one batch at a time, and its timer's probes wait their turn). A read
assigns the one partition, seeks to the range's start and reads until its
position passes the range: a fetch or two on a healthy broker, about half a
millisecond here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import OffsetOutOfRangeError

from streams.topics import partition_count

logger = logging.getLogger(__name__)

#: How long one poll waits for fetched records: a range of markers returns no
#: record at all, and the read notices its position passed the range after it.
POLL_MS: Final = 5
#: A fetch at the end of the log waits this long at most for new data.
FETCH_MAX_WAIT_MS: Final = 10
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
        self._reader: AIOKafkaConsumer | None = None  # made in the loop that probes

    async def _started(self) -> AIOKafkaConsumer:
        if self._reader is None:
            reader = AIOKafkaConsumer(
                bootstrap_servers=self._bootstrap,
                group_id=None,
                enable_auto_commit=False,
                isolation_level="read_committed",
                # Below the log start is an error the probe handles, never a jump.
                auto_offset_reset="none",
                fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
                max_partition_fetch_bytes=FETCH_BYTES,
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
        partitions = await partition_count(self._bootstrap, self._topic, wait_s=self._timeout_s)
        if not partitions:
            raise ProbeTimeout(f"no partitions of {self._topic} in {self._timeout_s:.0f} s")
        return partitions

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
        tp = TopicPartition(self._topic, partition)
        async with self._lock:
            reader = await self._started()
            reader.assign([tp])
            reader.seek(tp, start)
            try:
                return await self._read(reader, tp, end, wanted)
            finally:
                reader.pause(tp)  # no prefetching while idle

    async def _read(
        self, reader: AIOKafkaConsumer, tp: TopicPartition, end: int, wanted: int
    ) -> list[ConsumerRecord[Any, Any]]:
        found: list[ConsumerRecord[Any, Any]] = []
        deadline = time.monotonic() + self._timeout_s
        while time.monotonic() < deadline:
            # No more records than wanted or than offsets left in the range: the
            # fetch beyond them is never decoded.
            left = min(wanted - len(found), max(1, end - await reader.position(tp)))
            try:
                fetched = await reader.getmany(tp, timeout_ms=POLL_MS, max_records=left)
            except OffsetOutOfRangeError:
                # The range starts below the log start: what retention deleted
                # is gone for every reader; read on from the log start.
                log_start = (await reader.beginning_offsets([tp]))[tp]
                reader.seek(tp, log_start)
                continue
            for record in fetched.get(tp, []):
                if record.offset >= end:
                    return found
                found.append(record)
                if len(found) == wanted:
                    return found
            position = await reader.position(tp)
            if position >= end or position >= (await reader.end_offsets([tp]))[tp]:
                return found  # past the range, or at the last stable offset before its end
        raise ProbeTimeout(
            f"partition {tp.partition}: offsets before {end} not read in {self._timeout_s:.0f} s"
        )
