"""Ask the log itself which committed record of a partition comes first in an offset range.

The projector sees offsets skipped between the records faust delivers. Most
such gaps are Kafka's own: a transaction's commit marker after every summary
the summarizer appends, an aborted transaction's records and marker. But
faust can also drop records around a rebalance and go on. Only the log can
tell the two apart: a ``read_committed`` read of the skipped range returns
nothing for a gap of markers and aborted records, and the first record faust
dropped otherwise (:mod:`streams.partition_positions` seeks back to it).

One reader, no consumer group, one probe at a time (the projector's agent
runs one batch at a time, and its timer's probes wait their turn). A probe
assigns the one partition, seeks to the range's start and reads until it
gets a record or its position passes the range: a fetch or two on a healthy
broker, a few milliseconds.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Final

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import OffsetOutOfRangeError

logger = logging.getLogger(__name__)

#: How long one poll waits for fetched records: a range of markers returns no
#: record at all, and the read notices its position passed the range after it.
POLL_MS: Final = 5
#: A fetch at the end of the log waits this long at most for new data.
FETCH_MAX_WAIT_MS: Final = 10
#: Records fetched per partition per fetch: only the first one is looked at.
FETCH_BYTES: Final = 64 * 1024


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

    async def first_record(self, partition: int, start: int, end: int) -> int | None:
        """The offset of the first committed record of `partition` in ``[start, end)``.

        None when the range holds none (transaction markers, aborted records,
        records deleted by retention; past the last stable offset: none yet).
        Connects on first use.

        Raises:
            ProbeTimeout: No answer within the probe's timeout.
        """
        if end <= start:
            return None
        tp = TopicPartition(self._topic, partition)
        async with self._lock:
            reader = await self._started()
            reader.assign([tp])
            reader.seek(tp, start)
            try:
                return await self._read_first(reader, tp, end)
            finally:
                reader.pause(tp)  # no prefetching while idle

    async def _read_first(
        self, reader: AIOKafkaConsumer, tp: TopicPartition, end: int
    ) -> int | None:
        deadline = time.monotonic() + self._timeout_s
        while time.monotonic() < deadline:
            try:
                fetched = await reader.getmany(tp, timeout_ms=POLL_MS, max_records=1)
            except OffsetOutOfRangeError:
                # The range starts below the log start: what retention deleted
                # is gone for every reader; read on from the log start.
                log_start = (await reader.beginning_offsets([tp]))[tp]
                reader.seek(tp, log_start)
                continue
            for record in fetched.get(tp, []):
                return record.offset if record.offset < end else None
            position = await reader.position(tp)
            if position >= end or position >= (await reader.end_offsets([tp]))[tp]:
                return None  # past the range, or at the last stable offset before its end
        raise ProbeTimeout(
            f"partition {tp.partition}: no answer for offsets before {end} in "
            f"{self._timeout_s:.0f} s"
        )
