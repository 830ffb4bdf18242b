"""The status line of ``ctxstream up``: what the broker says the pipeline is doing.

Every figure is read from the broker, so it shows what the deployment holds
whoever wrote it:

* events/s: how fast the `events` topic's end offsets rise (records appended
  by the agents, the summarizer's summaries and the projector's refusals; a
  transaction's commit marker takes an offset too, so it counts one more);
* lag: the projector group's committed offsets behind those ends, summed
  over the partitions (a partition it never committed counts whole);
* sessions: the sessions the `projections` topic holds a snapshot of;
* compactions: the summaries those snapshots applied, each counted once
  (``(session, summary event id)`` of every boundary seen).

More in ``ctxstream/cli/README.md`` (up_status.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Final

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from schemas.codec import decode_projection_snapshot
from schemas.counted import counted
from schemas.errors import DecodeError
from schemas.kafka.settings import KafkaSettings, TopicRole
from streams.topics import topic_specs

#: How long one fetch of `projections` waits for more (the sample reads to the end).
FETCH_MS: Final = 200
#: An unchanged status line is printed again after this long, so a quiet log shows it is alive.
QUIET_REPEAT_S: Final = 60.0


@dataclass(frozen=True, slots=True)
class Status:
    """One sample of the deployment.

    Attributes:
        events_per_s: Records appended to `events` per second since the last sample.
        lag: Records of `events` the projector group has not committed yet.
        sessions: Sessions with a projection snapshot.
        compactions: Summaries applied to those sessions.
    """

    events_per_s: float
    lag: int
    sessions: int
    compactions: int

    def line(self) -> str:
        """The status line, e.g. ``status: 12.5 events/s, lag 0, 3 sessions, 1 compaction``."""
        return (
            f"status: {self.events_per_s:.1f} events/s, lag {self.lag}, "
            f"{counted(self.sessions, 'session')}, {counted(self.compactions, 'compaction')}"
        )


@dataclass
class StatusCadence:
    """When ``up`` prints the status line: when it changed, else once every `quiet_s`.

    Pure: the caller passes the time. A deployment nobody uses then writes a
    line a minute, not one per sample.

    Attributes:
        quiet_s: Seconds between two prints of the same line.
    """

    quiet_s: float = QUIET_REPEAT_S
    _printed: str | None = None
    _printed_at: float = 0.0

    def due(self, line: str, now: float) -> bool:
        """Whether to print `line` at `now` (monotonic seconds); if so, it counts as printed."""
        if line == self._printed and now - self._printed_at < self.quiet_s:
            return False
        self._printed, self._printed_at = line, now
        return True


@dataclass
class _Seen:
    """What the snapshots read so far say."""

    sessions: set[str] = field(default_factory=set)
    summaries: set[tuple[str, str]] = field(default_factory=set)


class StatusReader:
    """Samples a deployment's :class:`Status` with one consumer and one admin client.

    :meth:`start` connects; each :meth:`sample` reads the `projections`
    snapshots written since the last one; :meth:`close` disconnects.
    """

    def __init__(self, settings: KafkaSettings, group_id: str) -> None:
        """A reader of `settings`' deployment and its projector group `group_id`."""
        self._settings = settings
        self._group_id = group_id
        self._consumer = AIOKafkaConsumer(
            bootstrap_servers=settings.kafka_bootstrap,
            **settings.client_security(),
            enable_auto_commit=False,
            # Not "latest": a reset racing the seek to the beginning would skip what is there.
            auto_offset_reset="earliest",
            isolation_level="read_committed",
            fetch_max_wait_ms=FETCH_MS,
        )
        self._admin = AIOKafkaAdminClient(
            bootstrap_servers=settings.kafka_bootstrap, **settings.client_security()
        )
        self._events: list[TopicPartition] = []
        self._projections: list[TopicPartition] = []
        self._seen = _Seen()
        self._last: tuple[float, int] | None = None

    async def start(self) -> None:
        """Connect, and assign every partition of `projections` from its beginning."""
        await self._consumer.start()
        await self._admin.start()
        self._events = self._partitions("events")
        self._projections = self._partitions("projections")
        self._consumer.assign(self._projections)
        await self._consumer.seek_to_beginning(*self._projections)

    def _partitions(self, role: TopicRole) -> list[TopicPartition]:
        (spec,) = (spec for spec in topic_specs(self._settings) if spec.role == role)
        return [TopicPartition(spec.name, p) for p in range(spec.partitions)]

    async def sample(self) -> Status:
        """The deployment now; events/s is 0 at the first sample."""
        ends = await self._consumer.end_offsets(self._events)
        committed = await self._admin.list_consumer_group_offsets(
            self._group_id, partitions=self._events
        )
        lag = 0
        for tp, end in ends.items():
            offset = committed.get(tp)
            lag += max(0, end - (offset.offset if offset is not None and offset.offset >= 0 else 0))
        await self._read_snapshots()
        now, total = time.monotonic(), sum(ends.values())
        rate = 0.0
        if self._last is not None and now > self._last[0]:
            rate = max(0, total - self._last[1]) / (now - self._last[0])
        self._last = (now, total)
        return Status(rate, lag, len(self._seen.sessions), len(self._seen.summaries))

    async def _read_snapshots(self) -> None:
        ends = await self._consumer.end_offsets(self._projections)
        while [tp for tp, end in ends.items() if await self._consumer.position(tp) < end]:
            fetched = await self._consumer.getmany(*self._projections, timeout_ms=FETCH_MS)
            for records in fetched.values():
                for record in records:
                    self._note(record.value)

    def _note(self, value: bytes | None) -> None:
        if value is None:
            return
        try:
            snapshot = decode_projection_snapshot(value)
        except DecodeError:
            return  # the projector's own topic: nothing else writes there
        self._seen.sessions.add(snapshot.session_key)
        if snapshot.boundary is not None:
            self._seen.summaries.add((snapshot.session_key, snapshot.boundary.summary_event_id))

    async def close(self) -> None:
        """Disconnect both clients."""
        try:
            await self._consumer.stop()
        finally:
            await self._admin.close()
