"""Read sessions' histories from `events` for the batch step, when a projection released them.

A record that needs what its projection released (:mod:`projections.retention.log_retention`)
makes the batch step list its session in ``BatchOutcome.history_needed``. Both engines
then call :meth:`SessionHistory.complete` before they write the batch: it reads each
listed session's records of ``[first_offset, end_offset)`` from its `events` partition
(committed records, the session's key only; a fork's whole line, at most
:data:`MAX_FORK_DEPTH` sessions) and hands them to
:meth:`~streams.batch.BatchProjector.project_history`, so the held-back records commit
with the rest of the batch. A read past ``history_read_timeout_s`` quarantines that
session alone (:meth:`~streams.batch.BatchProjector.refuse_history`).

Where a history starts, its cost and a fork's line: ``streams/README.md``, "Session histories".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from aiokafka import ConsumerRecord

from projections.fold.fork import ForkError, ForkSource, fork_source, inherited
from projections.fold.projection import NO_OFFSET
from schemas.kafka.committed_range import CommittedRangeReader, RangeReadTimeout
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from schemas.log_text import shown
from schemas.logged_event import LoggedEvent
from streams.batch import (
    BatchOutcome,
    BatchProjector,
    DecodedRecord,
    HistoryNeed,
    Inheritance,
    SourceRecord,
    TableReader,
    decode_record,
    inherit,
)
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)

#: Sessions a fork's line may hold: a longer line (or a cycle) is refused.
MAX_FORK_DEPTH: Final = 64


FirstOffsets = Callable[[int, SessionKey], int | None]
"""Where a session's history starts on its partition (`partition`, `session_key`): the offset
of its first record, or one at or below it and past every other record of the partition that
could be its; None when not known here (the read starts at the log start then)."""


def _not_known(partition: int, session_key: SessionKey) -> int | None:
    return None


class ForkLineError(ValueError):
    """A fork's line of sources is longer than :data:`MAX_FORK_DEPTH` (or a cycle)."""


@dataclass(frozen=True, slots=True)
class ReadHistory:
    """A held-back session's history: its own records and what it inherits, or its refusal."""

    records: list[SourceRecord] = field(default_factory=list)
    inheritance: Inheritance | None = None
    refusal: str | None = None


PreparedForks = Callable[[int, SessionKey, int], ReadHistory | None]
"""The history prepared for the new fork whose fork record is (`partition`, `session_key`,
`offset`), taken once; None when none was."""


def _none_prepared(partition: int, session_key: SessionKey, offset: int) -> ReadHistory | None:
    return None


def _prepared_for(need: HistoryNeed, prepared: PreparedForks) -> ReadHistory | None:
    """What `prepared` holds for `need`: only a new session's, its fork record first."""
    if need.first_offset != NO_OFFSET or not need.group:
        return None
    return prepared(need.partition, need.session_key, need.group[0].offset)


class SessionHistory:
    """One reader of `events` for histories, made and used in the engine's event loop."""

    def __init__(self, settings: ProjectorSettings) -> None:
        self._settings = settings
        self._reader: CommittedRangeReader | None = None
        self._one_at_a_time = asyncio.Lock()  # the reader reads one range at a time
        self._told_log_start = False  # an old fork record's source was read from the log start

    async def stop(self) -> None:
        """Close the reader, if one was started."""
        reader, self._reader = self._reader, None
        if reader is not None:
            await reader.stop()

    async def complete(
        self,
        projector: BatchProjector,
        outcome: BatchOutcome,
        read: TableReader,
        first_offsets: FirstOffsets = _not_known,
        prepared: PreparedForks = _none_prepared,
    ) -> None:
        """Fold the sessions `outcome` held back for their histories into `outcome`.

        A session whose history (its own records, or its fork line's) is not
        read within ``history_read_timeout_s``, or whose fork line is too long,
        is quarantined instead (:meth:`BatchProjector.refuse_history`): never raises for it.
        A new fork whose inheritance `prepared` holds (read and folded off the
        folding loop, :mod:`streams.fork_preparation`) takes it as it is.
        """
        while outcome.history_needed:
            needs, outcome.history_needed = outcome.history_needed, []
            for need in needs:
                ready = _prepared_for(need, prepared)
                if ready is None:
                    ready = await self._read_need(need, projector.partitions, first_offsets)
                if ready.refusal is not None:
                    projector.refuse_history(need, ready.refusal, outcome)
                else:
                    projector.project_history(need, ready.records, read, outcome, ready.inheritance)

    async def _read_need(
        self, need: HistoryNeed, partitions: int, first_offsets: FirstOffsets
    ) -> ReadHistory:
        """`need`'s own records and its fork line's inheritance, read and folded here."""
        deadline = time.monotonic() + self._settings.history_read_timeout_s
        try:
            records: list[SourceRecord] = []
            if need.first_offset >= 0:  # else a new session: its first record is here
                records = await self.records(
                    need.partition,
                    need.session_key,
                    need.first_offset,
                    need.end_offset,
                    deadline=deadline,
                )
            head = records[0] if records else need.group[0] if need.group else None
            line = await self.inherited(head, partitions, first_offsets, deadline=deadline)
        except (ForkLineError, RangeReadTimeout) as exc:
            return ReadHistory(refusal=self.refusal(need.session_key, exc))
        if line is None:
            return ReadHistory(records)
        return ReadHistory(records, inherit(self._settings, need.session_key, line))

    def refusal(self, session_key: SessionKey, exc: ForkLineError | RangeReadTimeout) -> str:
        """Why `session_key`'s history is refused after `exc` (a timeout is logged)."""
        if isinstance(exc, ForkLineError):
            return str(exc)
        reason = (
            f"its history on events was not read within history_read_timeout_s="
            f"{self._settings.history_read_timeout_s:g} s ({exc})"
        )
        logger.warning("session=%s %s", session_key, shown(reason, 500))
        return reason

    async def inherited(
        self,
        head: SourceRecord | None,
        partitions: int,
        first_offsets: FirstOffsets = _not_known,
        *,
        deadline: float | None = None,
    ) -> list[LoggedEvent] | None:
        """What the session whose first record is `head` inherits, None when it is no fork.

        Each source of the line is read from where `first_offsets` says its
        history starts, else where the fork record naming it says, else from
        the log start.

        Raises:
            ForkLineError: The fork's line is too long.
            schemas.kafka.committed_range.RangeReadTimeout: The line was not read by
                `deadline` (monotonic; None: ``history_read_timeout_s`` from now).
        """
        raw = await self.line_records(head, partitions, first_offsets, deadline=deadline)
        return None if raw is None else inherited_line(raw)

    async def line_records(
        self,
        head: SourceRecord | None,
        partitions: int,
        first_offsets: FirstOffsets = _not_known,
        *,
        deadline: float | None = None,
    ) -> list[SourceRecord] | None:
        """:meth:`inherited`'s records as read, not decoded (:func:`inherited_line` does that).

        Only each source's first record is decoded here (it names the source
        before it), so a caller can decode the rest in a thread.

        Raises:
            ForkLineError: The fork's line is too long.
            schemas.kafka.committed_range.RangeReadTimeout: The line was not read by `deadline`.
        """
        source = fork_of(head)
        if source is None:
            return None
        if deadline is None:
            deadline = time.monotonic() + self._settings.history_read_timeout_s
        return await self._line(source, partitions, first_offsets, deadline, MAX_FORK_DEPTH)

    async def _line(
        self,
        source: ForkSource,
        partitions: int,
        first_offsets: FirstOffsets,
        deadline: float,
        depth: int,
    ) -> list[SourceRecord]:
        """`source`'s history up to its offset: what it inherited, then its own records."""
        if depth <= 0:
            raise ForkLineError(f"a fork's line holds more than {MAX_FORK_DEPTH} sessions")
        partition = session_partition(source.session_key.encode(), partitions)
        first = self._source_start(partition, source, first_offsets)
        own: list[SourceRecord] = []
        if first <= source.offset:
            own = await self.records(
                partition, source.session_key, first, source.offset + 1, deadline=deadline
            )
        parent = fork_of(own[0]) if own else None
        before = (
            []
            if parent is None
            else await self._line(parent, partitions, first_offsets, deadline, depth - 1)
        )
        return [*before, *own]

    def _source_start(self, partition: int, source: ForkSource, first_offsets: FirstOffsets) -> int:
        """Where `source` is read from: the engine's offset, the fork record's, or the log start."""
        first = first_offsets(partition, source.session_key)
        if first is None:
            first = source.first_offset
        if first is None:
            if not self._told_log_start:
                self._told_log_start = True
                logger.info(
                    "session=%s is read from the log start of partition %d: the fork record "
                    "naming it has no first_offset (written before it existed); logged once",
                    source.session_key,
                    partition,
                )
            return 0
        return max(first, 0)

    async def records(
        self,
        partition: int,
        session_key: SessionKey,
        first_offset: int,
        end_offset: int,
        *,
        deadline: float | None = None,
    ) -> list[SourceRecord]:
        """The session's committed records of ``[first_offset, end_offset)`` on its partition.

        Concurrent calls take turns.

        Raises:
            schemas.kafka.committed_range.RangeReadTimeout: Not read by `deadline`
                (monotonic; None: ``history_read_timeout_s`` from now).
        """
        if deadline is None:
            deadline = time.monotonic() + self._settings.history_read_timeout_s
        async with self._one_at_a_time:
            return await self._read(partition, session_key, first_offset, end_offset, deadline)

    async def _read(
        self,
        partition: int,
        session_key: SessionKey,
        first_offset: int,
        end_offset: int,
        deadline: float,
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

        left = deadline - started
        if left <= 0:
            raise RangeReadTimeout(
                f"partition {partition}: offsets [{first_offset}, {end_offset}) not read: "
                "no time left"
            )
        reader = await self._started()
        await reader.read_range(
            partition,
            first_offset,
            end_offset,
            keep,
            limit=max(end_offset - first_offset, 1),
            timeout_s=left,
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
                security=self._settings.client_security(),
            )
            await reader.start()
            self._reader = reader
        return self._reader


def inherited_line(line: list[SourceRecord]) -> list[LoggedEvent]:
    """What a fork inherits from `line` (:meth:`SessionHistory.line_records`), decoded. Pure.

    O(line): records that do not decode are left out (dead-lettered when they came).
    """
    decoded = (decode_record(record) for record in line)
    return inherited(item.logged for item in decoded if isinstance(item, DecodedRecord))


def fork_of(record: SourceRecord | None) -> ForkSource | None:
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
