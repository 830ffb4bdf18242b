"""A tenant's projection snapshots as they are committed, from the compacted `projections` topic.

The projector publishes each session's :class:`~schemas.projection_snapshot.ProjectionSnapshot`
keyed by its session key, in the same Kafka transaction as the work that
caused it. A subscription reads them as a downstream service should: no
consumer group (every partition of ``<prefix>.projections`` is assigned to
it), ``read_committed`` (a snapshot of an aborted transaction never shows),
and yields each snapshot of the tenant's sessions as a :class:`Subscribed`
item, with the partition and offset it was read at; a deleted session's
tombstone as an item whose ``snapshot`` is None and ``deleted`` its key.

More in ``ctxstream/README.md`` (subscription.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass
from typing import Any, Final, assert_never

import orjson
from aiokafka import AIOKafkaConsumer, ConsumerRecord, TopicPartition

from ctxstream.broker_calls import broker_calls
from ctxstream.closing import close_shielded, start_shielded
from ctxstream.errors import InvalidArgumentError, TopicMissingError
from ctxstream.partition_counts import known_partition_count
from ctxstream.subscription_request import (
    FromEnd,
    FromOffsets,
    FromTime,
    StartAt,
    SubscriptionRequest,
)
from schemas.codec import decode_projection_snapshot, encode
from schemas.errors import DecodeError, InvalidSessionKeyError
from schemas.kafka.security import PLAINTEXT, ClientSecurity
from schemas.kafka.settings import KafkaSettings
from schemas.keys import Offset, SessionKey, validate_session_key
from schemas.log_text import shown
from schemas.projection_snapshot import ProjectionSnapshot

logger = logging.getLogger(__name__)

#: How long connecting, finding the topic and placing the reader may take by default.
CONNECT_TIMEOUT_S: Final = 30.0
# A fetch returns as soon as records arrive; the bound only paces an idle loop.
_POLL_MS: Final = 1_000


@dataclass(frozen=True, slots=True)
class Subscribed:
    """One snapshot as a subscriber receives it, and where it was read.

    A deleted session's tombstone comes as `snapshot` None and `deleted` the
    session's key: its projection is gone until an append starts it afresh.
    """

    partition: int
    offset: Offset
    snapshot: ProjectionSnapshot | None
    deleted: SessionKey | None = None

    @property
    def next_offset(self) -> int:
        """What to save for this partition to resume after this snapshot."""
        return self.offset + 1

    def to_json(self) -> bytes:
        """One JSON object: ``partition``, ``offset`` and the ``snapshot`` as it is on the topic.

        A deletion: ``partition``, ``offset`` and ``deleted``, the session's key.
        """
        if self.snapshot is None:
            return orjson.dumps(
                {"partition": self.partition, "offset": self.offset, "deleted": self.deleted}
            )
        return orjson.dumps(
            {
                "partition": self.partition,
                "offset": self.offset,
                "snapshot": orjson.Fragment(encode(self.snapshot)),
            }
        )


def subscription(
    settings: KafkaSettings,
    request: SubscriptionRequest,
    *,
    connect_timeout_s: float = CONNECT_TIMEOUT_S,
) -> AsyncGenerator[Subscribed, None]:
    """The snapshots `request` asks for, on the deployment `settings` name.

    The reader connects at the first iteration, within `connect_timeout_s`,
    and closes when the iteration ends or the generator is closed
    (``contextlib.aclosing``), whatever cancels it
    (:func:`~ctxstream.closing.close_shielded`). :meth:`ctxstream.Client.subscribe` is the
    public way in.

    Raises:
        InvalidArgumentError: `connect_timeout_s` is not positive (now), or the
            request names a partition the topic does not have (at the first
            iteration).
        BrokerUnavailableError: The broker refused or did not answer in time
            (at the first iteration).
        TopicMissingError: The deployment has no `projections` topic (at the
            first iteration).
    """
    if not connect_timeout_s > 0:
        raise InvalidArgumentError(f"connect_timeout_s: {connect_timeout_s!r} is not positive")
    return _snapshots(settings, request, connect_timeout_s)


async def _snapshots(
    settings: KafkaSettings, request: SubscriptionRequest, connect_timeout_s: float
) -> AsyncGenerator[Subscribed, None]:
    topic = settings.topic("projections")
    prefix = f"{request.tenant}/".encode()
    keys = None if request.sessions is None else {key.encode() for key in request.sessions}
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        **settings.client_security(),
        enable_auto_commit=False,
        isolation_level="read_committed",
        # A position the log no longer holds restarts at its beginning: nothing is missed.
        auto_offset_reset="earliest",
    )
    try:
        await _placed(consumer, settings, topic, request.start, connect_timeout_s)
        logger.info(
            "subscribed topic=%s tenant=%s sessions=%s start=%s",
            topic,
            request.tenant,
            "all" if keys is None else len(keys),
            type(request.start).__name__,
        )
        while True:
            fetched = await consumer.getmany(timeout_ms=_POLL_MS)
            for tp, records in fetched.items():
                for record in records:
                    if not _wanted(record.key, prefix, keys):
                        continue
                    deleted = _deleted(record)
                    if deleted is not None:
                        yield Subscribed(tp.partition, Offset(record.offset), None, deleted)
                        continue
                    snapshot = _decoded(record)
                    if snapshot is not None:
                        yield Subscribed(tp.partition, Offset(record.offset), snapshot)
    finally:
        await close_shielded(consumer.stop, what="subscription reader")


def _wanted(key: bytes | None, prefix: bytes, keys: set[bytes] | None) -> bool:
    if key is None:
        return False
    return key.startswith(prefix) if keys is None else key in keys


def _deleted(record: ConsumerRecord[Any, Any]) -> SessionKey | None:
    """The session a tombstone deletes (its key, a wanted one); None for any other record."""
    if record.value is not None or record.key is None:
        return None
    try:
        return validate_session_key(record.key.decode())
    except (UnicodeDecodeError, InvalidSessionKeyError):
        logger.debug("tombstone partition=%d offset=%d", record.partition, record.offset)
        return None


def _decoded(record: ConsumerRecord[Any, Any]) -> ProjectionSnapshot | None:
    """The record's snapshot; None (logged) for a tombstone or a record that cannot be one."""
    if record.value is None:
        logger.debug("tombstone partition=%d offset=%d", record.partition, record.offset)
        return None
    try:
        snapshot = decode_projection_snapshot(record.value)
    except DecodeError as exc:
        logger.warning(
            "skipped undecodable snapshot topic=%s partition=%d offset=%d reason=%s",
            record.topic,
            record.partition,
            record.offset,
            exc.reason,
        )
        return None
    if snapshot.session_key.encode() != record.key:
        # Kept out: trusting the value would show one tenant another's session.
        logger.warning(
            "skipped snapshot under another key topic=%s partition=%d offset=%d key=%s session=%s",
            record.topic,
            record.partition,
            record.offset,
            shown(record.key),
            shown(snapshot.session_key),
        )
        return None
    return snapshot


async def _placed(
    consumer: AIOKafkaConsumer,
    settings: KafkaSettings,
    topic: str,
    start: StartAt,
    timeout_s: float,
) -> None:
    """Connect, assign every partition of `topic` and seek each where `start` says.

    Raises:
        BrokerUnavailableError: The broker refused or did not answer within `timeout_s`.
        TopicMissingError: `topic` does not exist.
        InvalidArgumentError: `start` names a partition `topic` does not have.
    """
    async with broker_calls(settings.kafka_bootstrap, timeout_s):
        opened = await opened_reader(
            consumer, settings.kafka_bootstrap, topic, start, security=settings.client_security()
        )
    consumer.assign(list(opened.ends))
    for tp, offset in opened.starts.items():
        consumer.seek(tp, offset)


@dataclass(frozen=True, slots=True)
class OpenedReader:
    """A started reader's view of a topic: each partition's end and where reading starts."""

    ends: dict[TopicPartition, int]
    starts: dict[TopicPartition, int]


async def opened_reader(
    consumer: AIOKafkaConsumer,
    bootstrap: str,
    topic: str,
    start: StartAt,
    *,
    security: ClientSecurity = PLAINTEXT,
) -> OpenedReader:
    """Start `consumer` on `topic`: every partition's end offset and the start `start` gives it.

    Nothing is assigned yet. Bound it in time and map the broker's failures
    with :func:`~ctxstream.broker_calls.broker_calls`.

    Raises:
        TopicMissingError: `topic` does not exist.
        InvalidArgumentError: `start` names a partition `topic` does not have.
    """
    count = await known_partition_count(bootstrap, topic, security=security)
    if count == 0:
        raise TopicMissingError(topic)
    await start_shielded(consumer.start, what=f"reader of {topic}")
    # Let the consumer's background task start: stopping it before its first step
    # re-raises the cancellation (aiokafka's NoGroupCoordinator.close).
    await asyncio.sleep(0)
    partitions = [TopicPartition(topic, p) for p in range(count)]
    ends: dict[TopicPartition, int] = await consumer.end_offsets(partitions)
    return OpenedReader(ends, await start_offsets(consumer, topic, start, ends))


async def start_offsets(
    consumer: AIOKafkaConsumer, topic: str, start: StartAt, ends: Mapping[TopicPartition, int]
) -> dict[TopicPartition, int]:
    """The offset of each partition of `ends` a reader starting at `start` reads from.

    Between the partition's beginning and its end: a ``from_offset`` ahead of
    the log (or saved from a topic since made anew) starts at the end.
    """
    match start:
        case FromEnd():
            return dict(ends)
        case FromTime(timestamp_ms=timestamp_ms):
            found = await consumer.offsets_for_times(dict.fromkeys(ends, timestamp_ms))
            # None: nothing written at or after the time yet, so everything to come.
            return {tp: ends[tp] if found.get(tp) is None else found[tp].offset for tp in ends}
        case FromOffsets(by_partition=by_partition, otherwise=otherwise):
            unknown = sorted(set(by_partition) - {tp.partition for tp in ends})
            if unknown:
                raise InvalidArgumentError(
                    f"from_offset: partition {unknown[0]} is not one of the "
                    f"{len(ends)} partitions of {topic!r}"
                )
            beginnings = await consumer.beginning_offsets(list(ends))
            return {
                tp: min(ends[tp], max(beginnings[tp], by_partition.get(tp.partition, otherwise)))
                for tp in ends
            }
        case _:
            assert_never(start)
