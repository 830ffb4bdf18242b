"""Read one session's committed records of `events`, from an offset to the last stable offset.

A read assigns the session's one partition to a consumer of its own (the
range read of :class:`~schemas.kafka.committed_range.CommittedRangeReader`),
seeks to the first requested offset and reads up to the partition's last
stable offset (LSO) as it was when the read began, keeping the session's
records only: its cost is the range plus what the partition received after
it. Readers are pooled, one read at a time each; a record of another session
is skipped before it is decoded, and the records a read keeps are bounded in
bytes (:class:`~summarizer_worker.errors.SliceTooLargeError`, review H6).
More: ``summarizer_worker/README.md``, "Reading a session's slice".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Final, Protocol

from aiokafka import ConsumerRecord

from schemas.codec import decode_envelope
from schemas.kafka.admin import partition_count
from schemas.kafka.committed_range import CommittedRangeReader
from schemas.kafka.partitioning import session_partition
from schemas.kafka.security import PLAINTEXT, ClientSecurity
from schemas.keys import Offset
from schemas.log_text import shown
from schemas.logged_event import LoggedEvent
from summarizer_worker.errors import SliceTooLargeError

logger = logging.getLogger(__name__)

#: Bytes per partition per fetch: a tail after a backlog arrives in few fetches.
FETCH_BYTES: Final = 8 * 1024 * 1024
#: How often, and how long at most, to ask for the last stable offset while
#: waiting for a committed record to become readable.
STABLE_POLL_S: Final = 0.002
STABLE_WAIT_S: Final = 30.0


@dataclass(frozen=True, slots=True)
class SessionSlice:
    """A session's committed records from `start_offset` up to `stable_offset`.

    Attributes:
        partition: The partition of `events` the session lives in.
        start_offset: Where the read began.
        stable_offset: The partition's last stable offset when the read began:
            every offset below it was readable.
        records: The session's records in the slice, stream order (records of
            other sessions, transaction markers, aborted and undecodable
            records left out).
    """

    partition: int
    start_offset: Offset
    stable_offset: Offset
    records: tuple[LoggedEvent, ...]


class SliceReader(Protocol):
    """What the request pipeline reads through: one session's slice of `events`."""

    async def read(self, key: bytes, start_offset: Offset) -> SessionSlice:
        """The session keyed `key` from `start_offset` up to its partition's LSO.

        Raises:
            aiokafka.errors.OffsetOutOfRangeError: `start_offset` is below the
                partition's log start.
            SliceTooLargeError: The session's records in the slice exceed the
                reader's byte bound.
        """
        ...


class SliceReaders:
    """A pool of readers of one `events` topic, started and stopped together."""

    def __init__(
        self,
        *,
        bootstrap: str,
        topic: str,
        size: int,
        max_slice_bytes: int,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        """Readers of `topic` on the cluster at `bootstrap`, `size` of them.

        A read keeps at most `max_slice_bytes` of its session's records.
        """
        self._bootstrap = bootstrap
        self._security = security
        self._topic = topic
        self._max_slice_bytes = max_slice_bytes
        self._partitions = 0
        self._readers = [
            CommittedRangeReader(
                bootstrap=bootstrap, topic=topic, fetch_bytes=FETCH_BYTES, security=security
            )
            for _ in range(size)
        ]
        self._idle: asyncio.Queue[CommittedRangeReader] = asyncio.Queue()

    async def start(self) -> None:
        """Learn the topic's partition count and connect every reader.

        The count is read once: adding partitions to `events` moves sessions
        to other partitions, which breaks their order anyway, and needs a
        restart of every worker.

        Raises:
            TopicError: The topic does not exist.
        """
        self._partitions = await partition_count(
            self._bootstrap, self._topic, security=self._security
        )
        for reader in self._readers:
            await reader.start()
            self._idle.put_nowait(reader)

    async def stop(self) -> None:
        """Close every reader."""
        for reader in self._readers:
            await reader.stop()

    @asynccontextmanager
    async def _reader(self) -> AsyncIterator[CommittedRangeReader]:
        reader = await self._idle.get()
        try:
            yield reader
        finally:
            self._idle.put_nowait(reader)

    async def read(self, key: bytes, start_offset: Offset) -> SessionSlice:
        """The session keyed `key` from `start_offset` up to its partition's LSO.

        Raises:
            aiokafka.errors.OffsetOutOfRangeError: `start_offset` is below the
                partition's log start (deleted by retention).
            SliceTooLargeError: The session's records from `start_offset` on
                exceed the byte bound.
        """
        partition = session_partition(key, self._partitions)
        kept = _SessionRecords(
            key, partition=partition, start_offset=start_offset, max_bytes=self._max_slice_bytes
        )
        async with self._reader() as reader:
            stable = await reader.read_to_stable(partition, start_offset, kept.add)
        return SessionSlice(partition, start_offset, Offset(stable), tuple(kept.records))

    async def wait_readable(self, partition: int, offset: int) -> None:
        """Return once the record at `offset` of `partition` is below the last stable offset.

        That is once a committed transaction's markers are written, so that a
        ``read_committed`` read sees the record. Polls every
        :data:`STABLE_POLL_S`; gives up with a warning after
        :data:`STABLE_WAIT_S` (the markers of a committed transaction are
        written in milliseconds unless the broker is in trouble).
        """
        deadline = time.monotonic() + STABLE_WAIT_S
        async with self._reader() as reader:
            while await reader.stable_offset(partition) <= offset:
                if time.monotonic() > deadline:
                    logger.warning(
                        "offset=%d partition=%d not readable after %.0f s",
                        offset,
                        partition,
                        STABLE_WAIT_S,
                    )
                    return
                await asyncio.sleep(STABLE_POLL_S)


class _SessionRecords:
    """The records of one session a slice read keeps, bounded in bytes."""

    def __init__(self, key: bytes, *, partition: int, start_offset: Offset, max_bytes: int) -> None:
        self._key = key
        self._partition = partition
        self._start_offset = start_offset
        self._max_bytes = max_bytes
        self._kept_bytes = 0
        self.records: list[LoggedEvent] = []

    def add(self, record: ConsumerRecord[bytes, bytes]) -> None:
        """Keep `record` if it is the session's and decodes (skipped otherwise).

        Raises:
            SliceTooLargeError: Keeping it would exceed the byte bound.
        """
        if record.key != self._key:
            return
        # Counted before decoding: what is refused is never decoded.
        self._kept_bytes += len(record.key) + len(record.value or b"")
        if self._kept_bytes > self._max_bytes:
            raise SliceTooLargeError(
                partition=self._partition,
                start_offset=self._start_offset,
                limit_bytes=self._max_bytes,
            )
        try:
            envelope = decode_envelope(record.value, record_key=record.key)
        except Exception as exc:  # noqa: BLE001 - DecodeError, or what a hostile record provokes
            # The projector dead-letters it; here it is simply not an event.
            logger.debug(
                "skipped offset=%d partition=%d reason=%s",
                record.offset,
                self._partition,
                shown(exc),
            )
            return
        self.records.append(LoggedEvent(Offset(record.offset), envelope))
