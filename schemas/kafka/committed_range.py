"""Read a range of one partition's committed records: ``read_committed``, seek, read to an end.

One reader both workers share: the faust engine's offset probe
(:mod:`streams.faust_engine.offset_probe`) and the summarizer's slices of
`events` (:mod:`summarizer_worker.session_slice`). A
:class:`CommittedRangeReader` is one consumer of one topic (no group, no
commits) that reads one range at a time; an offset below the log start is
an error, never a silent jump. The end is the caller's choice:
:meth:`~CommittedRangeReader.read_to_stable` reads to the last stable offset,
:meth:`~CommittedRangeReader.read_range` to a named end, within a deadline.
Transaction markers and aborted records are never returned. More:
``schemas/kafka/README.md``, "Reading a committed range".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition
from aiokafka.errors import OffsetOutOfRangeError

from schemas.kafka.security import PLAINTEXT, ClientSecurity

#: How long one poll waits for fetched records. A range that ends in
#: transaction markers returns no record for them: the read notices its
#: position passed the end at the end of such a wait.
POLL_MS: Final = 5
#: A fetch at the end of the log waits this long at most for new data; kept
#: short so that a reader moving to another partition is not held up by its
#: previous long poll.
FETCH_MAX_WAIT_MS: Final = 10

OnRecord = Callable[[ConsumerRecord[Any, Any]], None]
"""Called with each committed record of the range, in offset order; what it raises ends the read."""


class RangeReadTimeout(Exception):
    """The log did not answer a range read within its deadline."""


class CommittedRangeReader:
    """One consumer that reads committed ranges of `topic`'s partitions, one read at a time.

    Made in the event loop that reads (aiokafka binds its consumer to it).
    """

    def __init__(
        self,
        *,
        bootstrap: str,
        topic: str,
        fetch_bytes: int,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        """A reader of `topic` on the cluster at `bootstrap`, fetching `fetch_bytes` per fetch."""
        self._topic = topic
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            enable_auto_commit=False,
            isolation_level="read_committed",
            # A requested offset below the log start is an error, never a
            # silent jump to another offset.
            auto_offset_reset="none",
            fetch_max_wait_ms=FETCH_MAX_WAIT_MS,
            max_partition_fetch_bytes=fetch_bytes,
            **security,
        )

    async def start(self) -> None:
        """Connect."""
        await self._consumer.start()

    async def stop(self) -> None:
        """Close the consumer."""
        await self._consumer.stop()

    async def stable_offset(self, partition: int) -> int:
        """The partition's last stable offset now: every offset below it is readable.

        A ``read_committed`` consumer's end offset: below the first offset of
        a transaction still open, else the high watermark.
        """
        tp = TopicPartition(self._topic, partition)
        offsets: dict[TopicPartition, int] = await self._consumer.end_offsets([tp])
        return offsets[tp]

    async def read_to_stable(self, partition: int, start: int, on_record: OnRecord) -> int:
        """Pass `on_record` the committed records from `start` up to the LSO; return that LSO.

        The LSO is read once, when the read begins: records committed later
        are not read. Nothing is read when `start` is at or past it.

        Raises:
            aiokafka.errors.OffsetOutOfRangeError: `start` is below the
                partition's log start (deleted by retention).
        """
        tp = TopicPartition(self._topic, partition)
        self._consumer.assign([tp])
        stable = await self.stable_offset(partition)
        if start < stable:
            self._consumer.seek(tp, start)
            try:
                await self._read(tp, stable, on_record, until_stable=False)
            finally:
                self._consumer.pause(tp)  # no prefetching past the range while idle
        return stable

    async def read_range(
        self,
        partition: int,
        start: int,
        end: int,
        on_record: OnRecord,
        *,
        limit: int,
        timeout_s: float,
        from_log_start: bool,
    ) -> None:
        """Pass `on_record` the first `limit` committed records of ``[start, end)``.

        The read ends early at the partition's LSO, checked after every poll
        (nothing past it is readable yet). With `from_log_start`, a range
        that starts below the log start is read from the log start: what
        retention deleted is gone for every reader.

        Raises:
            RangeReadTimeout: The read did not pass the range within `timeout_s`.
            aiokafka.errors.OffsetOutOfRangeError: `start` is below the log
                start, and not `from_log_start`.
        """
        tp = TopicPartition(self._topic, partition)
        self._consumer.assign([tp])
        self._consumer.seek(tp, start)
        try:
            await self._read(
                tp,
                end,
                on_record,
                until_stable=True,
                limit=limit,
                timeout_s=timeout_s,
                from_log_start=from_log_start,
            )
        finally:
            self._consumer.pause(tp)  # no prefetching while idle

    async def _read(
        self,
        tp: TopicPartition,
        end: int,
        on_record: OnRecord,
        *,
        until_stable: bool,
        limit: int | None = None,
        timeout_s: float | None = None,
        from_log_start: bool = False,
    ) -> None:
        """Read from the position until it passes `end` (or the LSO: `until_stable`)."""
        consumer = self._consumer
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        taken = 0
        while deadline is None or time.monotonic() < deadline:
            # No more records than wanted or than offsets left in the range: the
            # fetch beyond them is never decoded.
            most = (
                None
                if limit is None
                else min(limit - taken, max(1, end - await consumer.position(tp)))
            )
            try:
                fetched = await consumer.getmany(tp, timeout_ms=POLL_MS, max_records=most)
            except OffsetOutOfRangeError:
                if not from_log_start:
                    raise
                consumer.seek(tp, (await consumer.beginning_offsets([tp]))[tp])
                continue
            for record in fetched.get(tp, ()):
                if record.offset >= end:
                    return
                on_record(record)
                taken += 1
                if taken == limit:
                    return
            position = await consumer.position(tp)
            if position >= end:
                return  # past the range, markers and aborted records included
            if until_stable and position >= await self.stable_offset(tp.partition):
                return  # at the last stable offset, before the range's end
        raise RangeReadTimeout(
            f"partition {tp.partition}: offsets before {end} not read in {timeout_s:.0f} s"
        )
