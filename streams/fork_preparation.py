"""A new fork's inheritance, read and folded off the folding loop before its partition folds it.

Folding a fork record inline needs its source's records and their fold (O(the
source)), under the lock with which the native engine folds every partition it owns.
So the engine stops a partition's batch before a new fork's record whose inheritance
is not prepared (:meth:`ForkPreparations.first_unprepared`), pauses the partition,
and :meth:`ForkPreparations.start` reads the line and folds it in a paced thread
(:class:`~streams.reads.heavy.Pacer`); the batch step then takes the result
(:meth:`ForkPreparations.take`), so what commits is the same as inline. At most one
preparation runs and two results are kept per partition.

Why, and how results are dropped: ``streams/README.md``, "New forks off the folding loop".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from projections.fold.projection import NO_OFFSET
from projections.fold.time_travel import ReadStopped, StopCheck
from schemas.kafka.committed_range import RangeReadTimeout
from schemas.keys import SessionKey
from streams.batch import Inheritance, SourceRecord, TableReader, inherit, stored_header
from streams.projector_settings import ProjectorSettings
from streams.reads.heavy import Pacer
from streams.session_history import (
    FirstOffsets,
    ForkLineError,
    ReadHistory,
    SessionHistory,
    fork_of,
    inherited_line,
)

logger = logging.getLogger(__name__)

#: The bytes every fork record's value holds (its custom metadata's key).
_FORK_MARK = b'"fork_of"'


@dataclass(frozen=True, slots=True)
class ForkRecord:
    """A record that starts a new fork: where it is on its partition, and its session."""

    partition: int
    session_key: SessionKey
    offset: int


class ForkPreparations:
    """The native engine's preparations of new forks' inheritances, one per partition at most."""

    def __init__(self, settings: ProjectorSettings) -> None:
        """Preparations with their own history reader (reads of the folding loop never wait)."""
        self._settings = settings
        self._history = SessionHistory(settings)
        self._pacer = Pacer()
        self._running: dict[int, asyncio.Task[None]] = {}
        # None: the preparation failed unexpectedly; the batch step reads inline (and fails so).
        self._ready: dict[ForkRecord, ReadHistory | None] = {}
        self._stops: dict[int, threading.Event] = {}

    def first_unprepared(
        self, partition: int, records: Sequence[SourceRecord], read: TableReader
    ) -> int | None:
        """The index in `records` of the first that starts a new fork not prepared, if any.

        A record starts a new fork when it is a fork record and its session
        has no record applied before it (none stored, none earlier in `records`).
        """
        seen: set[bytes | None] = set()
        for index, record in enumerate(records):
            if record.key in seen or _FORK_MARK not in record.value:
                seen.add(record.key)
                continue
            seen.add(record.key)
            if fork_of(record) is None:
                continue
            key = _session_key(record)
            if stored_header(key, partition, read).last_offset != NO_OFFSET:
                continue
            if ForkRecord(partition, key, record.offset) not in self._ready:
                return index
        return None

    def preparing(self, partition: int) -> bool:
        """Whether a preparation of `partition` runs."""
        return partition in self._running

    def start(
        self,
        record: SourceRecord,
        partitions: int,
        first_offsets: FirstOffsets,
        done: Callable[[], None],
    ) -> None:
        """Prepare the fork `record` starts, then call `done` (not when cancelled)."""
        fork = ForkRecord(record.partition, _session_key(record), record.offset)

        stop = self._stops[fork.partition] = threading.Event()

        async def prepare() -> None:
            ready: ReadHistory | None = None
            try:
                ready = await self._prepare(fork, record, partitions, first_offsets, stop)
            except Exception:
                logger.exception("fork=%s not prepared: folded inline", fork.session_key)
            finally:
                self._running.pop(fork.partition, None)
                self._stops.pop(fork.partition, None)
            self._ready[fork] = ready
            done()

        self._running[fork.partition] = asyncio.create_task(
            prepare(), name=f"fork-preparation-{fork.partition}"
        )

    async def _prepare(
        self,
        fork: ForkRecord,
        record: SourceRecord,
        partitions: int,
        first_offsets: FirstOffsets,
        stop: threading.Event,
    ) -> ReadHistory:
        """The fork's inheritance as the inline path reads and folds it, or its refusal."""
        try:
            raw = await self._history.line_records(record, partitions, first_offsets)
        except (ForkLineError, RangeReadTimeout) as exc:
            return ReadHistory(refusal=self._history.refusal(fork.session_key, exc))
        if raw is None:
            return ReadHistory()
        inheritance = await asyncio.to_thread(
            paced_inheritance, self._settings, self._pacer, fork.session_key, raw, stop
        )
        logger.info(
            "fork=%s prepared: %d inherited records at offset %d of partition %d",
            fork.session_key,
            len(raw),
            fork.offset,
            fork.partition,
        )
        return ReadHistory(inheritance=inheritance)

    def take(self, partition: int, session_key: SessionKey, offset: int) -> ReadHistory | None:
        """The prepared history of the fork record at `offset` of `partition`, once."""
        return self._ready.pop(ForkRecord(partition, session_key, offset), None)

    def committed(self, partition: int, position: int) -> None:
        """`partition` committed up to `position`: a result for a record below it is dropped."""
        for fork in [f for f in self._ready if f.partition == partition and f.offset < position]:
            del self._ready[fork]

    async def revoked(self, partitions: set[int]) -> None:
        """Forget `partitions`' results and cancel their preparations."""
        for fork in [fork for fork in self._ready if fork.partition in partitions]:
            del self._ready[fork]
        for partition in partitions:
            stop = self._stops.pop(partition, None)
            if stop is not None:
                stop.set()  # the fold's thread ends at its next record
            task = self._running.pop(partition, None)
            if task is not None:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task

    async def stop(self) -> None:
        """Cancel every preparation and close the reader."""
        await self.revoked(set(self._running) | {fork.partition for fork in self._ready})
        await self._history.stop()


def paced_inheritance(
    settings: ProjectorSettings,
    pacer: Pacer,
    key: SessionKey,
    line: list[SourceRecord],
    stop: threading.Event,
) -> Inheritance:
    """`line` decoded and folded (:func:`~streams.batch.inherit`) in `pacer`'s turns.

    For a thread off the loop: the records as :meth:`SessionHistory.line_records` read them.

    Raises:
        ReadStopped: `stop` was set (the preparation was cancelled).
    """

    def fold(check: StopCheck) -> Inheritance:
        def between() -> None:
            if check():
                raise ReadStopped(f"fork {key} no longer prepared")

        return inherit(settings, key, inherited_line(line), between)

    return pacer.paced(fold, stop.is_set)


def _session_key(record: SourceRecord) -> SessionKey:
    """The session of `record`, a fork record that decoded (its key is its session's)."""
    return SessionKey((record.key or b"").decode(errors="replace"))
