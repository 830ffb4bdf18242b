"""The end offsets of the `events` partitions, so a read of an unwritten offset is refused.

``min_offset`` and ``as_of`` must name a written record of the session's
partition: an offset at or past the partition's end offset (its high
watermark) is refused at once, without the end offset in the message (a
position of other tenants' traffic). The ends are cached, raised by the
offsets this process's appends returned, and read from the broker again
once when an offset is past the cached end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Final

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError

from ctxstream.errors import InvalidArgumentError
from schemas.kafka.settings import KafkaSettings
from schemas.read_protocol import ProjectionQuery

logger = logging.getLogger(__name__)

#: The shortest time an end offset's read is given.
_MIN_WAIT_S: Final = 0.001


class EndOffsets:
    """The cached end offsets of the deployment's `events` partitions; a reader opened on need."""

    def __init__(self, settings: KafkaSettings) -> None:
        """The ends of the deployment `settings` name; nothing connects yet."""
        self._settings = settings
        self._ends: dict[int, int] = {}
        self._reader: AIOKafkaConsumer | None = None
        self._turn = asyncio.Lock()

    async def close(self) -> None:
        """Close the reader, if it was opened."""
        reader, self._reader = self._reader, None
        if reader is not None:
            await reader.stop()

    def note_written(self, written: Iterable[tuple[int, int]]) -> None:
        """Note records this process appended (partition, offset): their partitions' ends."""
        for partition, offset in written:
            if offset >= self._ends.get(partition, 0):
                self._ends[partition] = offset + 1

    async def check_written(self, partition: int, query: ProjectionQuery, deadline: float) -> None:
        """Refuse an awaited offset the partition has not reached (its end read if needed).

        Raises:
            InvalidArgumentError: The offset is at or past the partition's end offset.
        """
        awaited = query.awaited()
        if awaited is None or awaited[1] < self._ends.get(partition, 0):
            return
        name, offset = awaited
        try:
            end = await asyncio.wait_for(
                self._end_offset(partition, offset), max(_MIN_WAIT_S, deadline - time.monotonic())
            )
        except (TimeoutError, KafkaError) as exc:
            # Unchecked, not refused: the worker waits for the offset within the read's time.
            logger.warning("end offset not read partition=%d reason=%r", partition, exc)
            return
        if offset >= end:
            raise InvalidArgumentError(
                f"{name}: no record at offset {offset} has been written to the session's "
                "partition (pass an offset that append returned)"
            )

    async def _end_offset(self, partition: int, offset: int) -> int:
        """The partition's end offset (high watermark): cached, or read past `offset`."""
        async with self._turn:
            if offset < (cached := self._ends.get(partition, 0)):
                return cached  # another read's refresh, while this one waited its turn
            reader = self._reader
            if reader is None:
                reader = AIOKafkaConsumer(
                    bootstrap_servers=self._settings.kafka_bootstrap,
                    enable_auto_commit=False,
                    **self._settings.client_security(),
                )
                try:
                    await reader.start()
                except BaseException:
                    await reader.stop()  # a failed or cancelled start leaves its client open
                    raise
                self._reader = reader
            tp = TopicPartition(self._settings.topic("events"), partition)
            end = int((await reader.end_offsets([tp]))[tp])
            self._ends[partition] = max(end, self._ends.get(partition, 0))
            return self._ends[partition]
