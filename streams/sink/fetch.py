"""One fetch of the sink, decoded: the positions it spans and its rows or dead letters.

:func:`fetch_batch` fetches the owned partitions from the positions the caller expects (seeking
a partition whose consumer position is elsewhere) and decodes the records in parts of
:data:`DECODE_PART` records, yielding to the event loop between parts: the worker fetches and
decodes the next batch while the database writes the current one (``streams/sink/README.md``,
"The pipeline"). A fetched batch is written only if it starts where the partitions' next batch
must start (:meth:`Fetched.starts_at`); the fence still checks that against the database.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from aiokafka import AIOKafkaConsumer, TopicPartition

from streams.batch.records import HomePartitions, SourceRecord
from streams.sink.rows import BatchRows, batch_rows

#: Records decoded between two yields to the event loop.
DECODE_PART: Final = 500


@dataclass(frozen=True, slots=True)
class Fetched:
    """A fetch: per partition, the position fetched from and the one after; its rows."""

    topic: str
    starts: dict[int, int]
    ends: dict[int, int]
    planned: BatchRows

    def starts_at(self, next_offsets: Mapping[TopicPartition, int]) -> bool:
        """Whether each partition's start is where `next_offsets` says its next batch starts."""
        return all(
            next_offsets.get(TopicPartition(self.topic, partition)) == start
            for partition, start in self.starts.items()
        )


async def fetch_batch(
    consumer: AIOKafkaConsumer,
    expected: Mapping[TopicPartition, int],
    partitions: int,
    *,
    wait_ms: int,
    max_records: int,
) -> Fetched | None:
    """The records of the assigned partitions of `expected`, from the positions it gives.

    Records off their key's partition of `partitions` are dead letters. None when none of
    `expected` is assigned (the group is joining). A partition the fetch did not move and
    brought nothing for is left out.
    """
    owned = {tp: n for tp, n in expected.items() if tp in consumer.assignment()}
    if not owned:
        return None
    for tp, offset in owned.items():
        if await consumer.position(tp) != offset:
            consumer.seek(tp, offset)
    fetched = await consumer.getmany(*owned, timeout_ms=wait_ms, max_records=max_records)
    still = consumer.assignment()
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for tp, start in owned.items():
        if tp in still and ((end := await consumer.position(tp)) != start or fetched.get(tp)):
            starts[tp.partition], ends[tp.partition] = start, end
    records = [
        SourceRecord(r.topic, r.partition, r.offset, r.key, r.value or b"")
        for tp, batch in fetched.items()
        if tp.partition in starts
        for r in batch
    ]
    planned, home = BatchRows(), HomePartitions(partitions)
    for first in range(0, len(records), DECODE_PART):
        batch_rows(records[first : first + DECODE_PART], home, planned)
        await asyncio.sleep(0)
    topic = next(iter(owned)).topic
    return Fetched(topic, starts, ends, planned)
