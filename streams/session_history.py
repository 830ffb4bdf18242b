"""Read sessions' histories from `events` for the batch step, when a projection released them.

A projection keeps only what its next decisions and reads need
(:mod:`projections.retention`); a record that needs more (a rewind behind
what it holds, a late answer to a call its compaction covered) makes the
batch step list the session in ``BatchOutcome.history_needed``
(:mod:`streams.project_batch`). Both engines then call :meth:`SessionHistory.complete`
before they write the batch: it reads each listed session's records of
``[first_offset, end_offset)`` from its `events` partition (committed
records, the session's key only) and hands them to
:meth:`~streams.project_batch.BatchProjector.project_history`, which folds
the held-back records into the same outcome, so they commit with the rest
of the batch.

The read costs what the partition holds between the session's first record
and its last, other sessions' records included: it is the rare path (a
session's own history, read once, after which the projection releases
again). A range whose start the log's retention deleted is read from the log
start; the batch step then quarantines the session, saying so.

A fork (:mod:`projections.fork`) asks for its history when its fork record
is folded (or when it is restored without a checkpoint): the records it
inherits are its source's up to the fork's offset, read from the source's
partition from the log start (the source's first offset is not known here),
and, when the source is a fork too, its source's before them, and so on up
the line (at most :data:`MAX_FORK_DEPTH` sessions).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Final

from aiokafka import ConsumerRecord

from projections.fork import ForkError, ForkSource, fork_source, inherited
from schemas.committed_range import CommittedRangeReader
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from schemas.partitioning import session_partition
from streams.project_batch import (
    BatchOutcome,
    BatchProjector,
    DecodedRecord,
    SourceRecord,
    TableReader,
    decode_record,
)
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)

#: How long reading one session's history may take before the batch fails (and is retried).
HISTORY_READ_TIMEOUT_S: Final = 300.0
#: Sessions a fork's line may hold: a longer line (or a cycle) is refused.
MAX_FORK_DEPTH: Final = 64


class ForkLineError(ValueError):
    """A fork's line of sources is longer than :data:`MAX_FORK_DEPTH` (or a cycle)."""


class SessionHistory:
    """One reader of `events` for histories, made and used in the engine's event loop."""

    def __init__(self, settings: ProjectorSettings) -> None:
        self._settings = settings
        self._reader: CommittedRangeReader | None = None
        self._one_at_a_time = asyncio.Lock()  # the reader reads one range at a time

    async def stop(self) -> None:
        """Close the reader, if one was started."""
        reader, self._reader = self._reader, None
        if reader is not None:
            await reader.stop()

    async def complete(
        self, projector: BatchProjector, outcome: BatchOutcome, read: TableReader
    ) -> None:
        """Fold the sessions `outcome` held back for their histories into `outcome`.

        Raises:
            schemas.committed_range.RangeReadTimeout: A history was not read
                within :data:`HISTORY_READ_TIMEOUT_S` (the batch is not
                committed and comes again).
        """
        while outcome.history_needed:
            needs, outcome.history_needed = outcome.history_needed, []
            for need in needs:
                records: list[SourceRecord] = []
                if need.first_offset >= 0:  # else a new session: the batch holds its first record
                    records = await self.records(
                        need.partition, need.session_key, need.first_offset, need.end_offset
                    )
                head = records[0] if records else need.group[0] if need.group else None
                try:
                    line = await self.inherited(head, projector.partitions)
                except ForkLineError as exc:
                    projector.refuse_history(need, str(exc), outcome)
                    continue
                projector.project_history(need, records, read, outcome, line)

    async def inherited(
        self, head: SourceRecord | None, partitions: int
    ) -> list[LoggedEvent] | None:
        """What the session whose first record is `head` inherits, None when it is no fork.

        Raises:
            ForkLineError: The fork's line is too long.
        """
        source = _fork_of(head)
        if source is None:
            return None
        return inherited(await self._line(source, partitions, MAX_FORK_DEPTH))

    async def _line(self, source: ForkSource, partitions: int, depth: int) -> list[LoggedEvent]:
        """`source`'s history up to its offset: what it inherited, then its own records."""
        if depth <= 0:
            raise ForkLineError(f"a fork's line holds more than {MAX_FORK_DEPTH} sessions")
        partition = session_partition(source.session_key.encode(), partitions)
        own = await self.records(partition, source.session_key, 0, source.offset + 1)
        decoded = [item for item in map(decode_record, own) if isinstance(item, DecodedRecord)]
        parent = _fork_of(own[0]) if own else None
        before = [] if parent is None else await self._line(parent, partitions, depth - 1)
        return [*before, *(item.logged for item in decoded)]

    async def records(
        self, partition: int, session_key: SessionKey, first_offset: int, end_offset: int
    ) -> list[SourceRecord]:
        """The session's committed records of ``[first_offset, end_offset)`` on its partition.

        Concurrent calls take turns.
        """
        async with self._one_at_a_time:
            return await self._read(partition, session_key, first_offset, end_offset)

    async def _read(
        self, partition: int, session_key: SessionKey, first_offset: int, end_offset: int
    ) -> list[SourceRecord]:
        started = time.monotonic()
        key = session_key.encode()
        found: list[SourceRecord] = []

        def keep(record: ConsumerRecord[Any, Any]) -> None:
            if record.key == key:
                found.append(
                    SourceRecord(
                        record.topic, record.partition, record.offset, key, record.value or b""
                    )
                )

        reader = await self._started()
        await reader.read_range(
            partition,
            first_offset,
            end_offset,
            keep,
            limit=max(end_offset - first_offset, 1),
            timeout_s=HISTORY_READ_TIMEOUT_S,
            from_log_start=True,
        )
        logger.info(
            "session=%s history read: %d records of offsets [%d, %d) in %.3f s",
            session_key,
            len(found),
            first_offset,
            end_offset,
            time.monotonic() - started,
        )
        return found

    async def _started(self) -> CommittedRangeReader:
        if self._reader is None:
            reader = CommittedRangeReader(
                bootstrap=self._settings.kafka_bootstrap,
                topic=self._settings.topic("events"),
                fetch_bytes=self._settings.max_partition_fetch_bytes,
            )
            await reader.start()
            self._reader = reader
        return self._reader


def _fork_of(record: SourceRecord | None) -> ForkSource | None:
    """The source `record` forks from, None when it is none (or not a valid fork record)."""
    if record is None:
        return None
    decoded = decode_record(record)
    if not isinstance(decoded, DecodedRecord):
        return None
    try:
        return fork_source(decoded.logged.envelope)
    except ForkError:
        return None  # folding it refuses it, saying why
