"""The sessions a deployment holds, from the latest snapshot of each on `projections`.

:func:`list_sessions` reads every partition of `projections` from its first
offset up to its end as of the start (a bounded read: records committed
meanwhile are left for the next call), ``read_committed``, without a consumer
group. A session's entry is its last snapshot read; a record that is no
snapshot, or a snapshot under another session's key, is skipped (as a
subscription skips them), and a tombstone drops the session.

Compactions are the summaries the session's snapshots still on the topic
applied, each counted once (as ``ctxstream up``'s status line counts them).
The topic is log-compacted, so once the broker has compacted a segment only
the latest snapshot of each session is left there, and the count is then 1
for a session compacted at least once: ``summary_event_id`` names its latest
summary either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from ctxstream.broker_calls import broker_calls
from ctxstream.errors import TopicMissingError
from ctxstream.subscription import CONNECT_TIMEOUT_S
from schemas.codec import decode_projection_snapshot
from schemas.counted import counted
from schemas.errors import DecodeError, TopicError
from schemas.kafka.admin import partition_count
from schemas.kafka.settings import KafkaSettings
from schemas.keys import parse_session_key
from schemas.projection_snapshot import ProjectionSnapshot

#: How long one fetch waits for records before the read checks its progress again.
FETCH_MS: Final = 500


@dataclass(frozen=True, slots=True)
class SessionEntry:
    """One session as its latest snapshot describes it."""

    snapshot: ProjectionSnapshot
    compactions: int

    def line(self) -> str:
        """``acme/support/u1/s1: last offset 41, 3 invocations, 1 compaction``."""
        snapshot = self.snapshot
        return (
            f"{snapshot.session_key}: last offset {snapshot.last_offset}, "
            f"{counted(snapshot.invocations_total, 'invocation')}, "
            f"{counted(self.compactions, 'compaction')}"
        )

    def json_line(self) -> bytes:
        """The entry as one JSON line."""
        snapshot = self.snapshot
        boundary = snapshot.boundary
        return (
            orjson.dumps(
                {
                    "session_key": snapshot.session_key,
                    "last_offset": snapshot.last_offset,
                    "invocations": snapshot.invocations_total,
                    "invocations_since_compaction": snapshot.invocations_since_compaction,
                    "compactions": self.compactions,
                    "summary_event_id": boundary.summary_event_id if boundary is not None else None,
                }
            )
            + b"\n"
        )


@dataclass
class _Seen:
    latest: dict[str, ProjectionSnapshot] = field(default_factory=dict)
    summaries: dict[str, set[str]] = field(default_factory=dict)

    def note(self, record: ConsumerRecord[Any, Any]) -> None:
        key = record.key.decode(errors="replace") if record.key is not None else None
        if key is None:
            return
        if record.value is None:
            self.latest.pop(key, None)
            self.summaries.pop(key, None)
            return
        try:
            snapshot = decode_projection_snapshot(record.value)
        except DecodeError:
            return  # not a snapshot: the projector's topic, written by someone else
        if snapshot.session_key != key:
            return
        self.latest[key] = snapshot
        if snapshot.boundary is not None:
            self.summaries.setdefault(key, set()).add(snapshot.boundary.summary_event_id)


def _wanted(session_key: str, tenant: str | None, app: str | None) -> bool:
    parts = parse_session_key(session_key)
    return (tenant is None or parts.tenant == tenant) and (app is None or parts.app == app)


async def list_sessions(
    settings: KafkaSettings, *, tenant: str | None = None, app: str | None = None
) -> list[SessionEntry]:
    """The sessions on `settings`' `projections` topic, of `tenant` and `app` when given.

    Sorted by session key.

    Raises:
        TopicMissingError: The deployment has no `projections` topic.
        BrokerUnavailableError: The broker did not answer at the start.
        KafkaError: The broker failed during the read.
    """
    topic, bootstrap = settings.topic("projections"), settings.kafka_bootstrap
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        **settings.client_security(),
        enable_auto_commit=False,
        # Not the default "latest": a reset racing the seek below would skip every record.
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        fetch_max_wait_ms=FETCH_MS,
    )
    try:
        async with broker_calls(bootstrap, CONNECT_TIMEOUT_S):
            try:
                count = await partition_count(bootstrap, topic, security=settings.client_security())
            except TopicError as exc:
                raise TopicMissingError(topic) from exc
            await consumer.start()
            assigned = [TopicPartition(topic, partition) for partition in range(count)]
            consumer.assign(assigned)
            ends = await consumer.end_offsets(assigned)
            await consumer.seek_to_beginning(*assigned)
        seen = _Seen()
        left = {tp for tp, end in ends.items() if end > 0}
        while left:
            fetched = await consumer.getmany(*left, timeout_ms=FETCH_MS)
            for tp, records in fetched.items():
                for record in records:
                    if record.offset < ends[tp]:
                        seen.note(record)
            left = {tp for tp in left if await consumer.position(tp) < ends[tp]}
    finally:
        await consumer.stop()
    return [
        SessionEntry(snapshot, len(seen.summaries.get(key, ())))
        for key, snapshot in sorted(seen.latest.items())
        if _wanted(key, tenant, app)
    ]
