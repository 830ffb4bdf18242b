"""The client's producer: checked records sent to `events`, stored duplicates left out.

The one module of :mod:`ctxstream.appends` with I/O. The records are checked
on a thread of their own (:func:`~ctxstream.appends.event_records.checked_records`),
the session's owner is asked which are stored already
(:meth:`ctxstream.reads.ContextReads.stored_offsets`), and the rest are sent on an
idempotent producer with ``acks=all``, keyed by the session: Kafka's default
partitioner, as the projector's :func:`schemas.kafka.partitioning.session_partition`,
so a session's events keep their order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Final

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from ctxstream.appends.event_records import EventInput, checked_records
from ctxstream.appends.results import AppendResult, lookup_digests, merged, unstored
from ctxstream.broker_calls import unreachable
from ctxstream.reads import ContextReads
from schemas.kafka.security import PLAINTEXT, ClientSecurity
from schemas.kafka.settings import KafkaSettings
from schemas.keys import Offset

#: How long the producer holds a batch open for more records before sending it (aiokafka's
#: ``linger_ms``). 0: a call's records are sent at once, in one batch (they are all queued
#: before the producer's sender runs), instead of waiting 5 ms for company that the sender
#: gathers anyway: aiokafka keeps one request in flight per broker, so under load what
#: arrives meanwhile forms the next batch. Measured in one process, alternating (12
#: partitions, a loaded machine): a lone 4-event call p50 6.9 -> 1.5 ms; 32 agents
#: appending 50-event calls 26,300 -> 24,900 events/s, within the runs' spread
#: (22,700-27,700 and 23,100-28,700).
APPEND_LINGER_MS: Final = 0


def events_producer(bootstrap: str, *, security: ClientSecurity = PLAINTEXT) -> AIOKafkaProducer:
    """The client's producer of `events`: idempotent, ``acks=all``, :data:`APPEND_LINGER_MS`.

    Also the producer ``ctxstream bench compaction`` appends with, so that its
    append hop is the client's.
    """
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=APPEND_LINGER_MS,
        **security,
    )


class EventWriter:
    """Sends a session's checked events to the deployment's `events` topic; one producer."""

    def __init__(self, settings: KafkaSettings, reads: ContextReads, producer_id: str) -> None:
        """A writer to the deployment `settings` name, looking duplicates up with `reads`."""
        self._settings = settings
        self._reads = reads
        self._producer_id = producer_id
        self.topic = settings.topic("events")
        self._producer: AIOKafkaProducer | None = None

    async def start(self) -> None:
        """Connect the producer.

        Raises:
            BrokerUnavailableError: No broker at the bootstrap address accepted a connection.
        """
        producer = events_producer(
            self._settings.kafka_bootstrap, security=self._settings.client_security()
        )
        try:
            await producer.start()
        except BaseException as exc:
            await producer.stop()  # a failed start leaves its client open
            if isinstance(exc, KafkaConnectionError):
                raise unreachable(self._settings.kafka_bootstrap) from exc
            raise
        self._producer = producer

    async def stop(self) -> None:
        """Send what is buffered and close the producer."""
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.stop()

    async def write(
        self,
        session_key: str,
        events: Sequence[EventInput],
        *,
        pipeline: bool,
        lookup: bool = True,
        expected_offset: int | None = None,
    ) -> list[AppendResult]:
        """Check `events`, leave out those stored already (with `lookup`), send the rest.

        `expected_offset`: every record is conditional on it (no lookup then: the fold decides).

        Raises:
            InvalidEventError: An event or the key is refused; the message names its index.
            RuntimeError: The writer is not started.
        """
        producer = self._started()
        timeout_s = self._settings.duplicate_lookup_timeout_s
        lookup = lookup and not pipeline and timeout_s > 0 and expected_offset is None
        records = await asyncio.to_thread(
            checked_records,
            session_key,
            events,
            producer_id=self._producer_id,
            pipeline=pipeline,
            digest=lookup,
            expected_offset=expected_offset,
        )
        digests = lookup_digests(records)
        stored = (
            await self._reads.stored_offsets(session_key, digests, timeout_s=timeout_s)
            if digests
            else {}
        )
        deliveries = [
            await producer.send(self.topic, key=record.key, value=record.value)
            for record in unstored(records, stored)
        ]
        written = [await delivery for delivery in deliveries]
        self._reads.note_written((record.partition, record.offset) for record in written)
        return merged(records, stored, [Offset(record.offset) for record in written])

    def _started(self) -> AIOKafkaProducer:
        if self._producer is None:
            raise RuntimeError("the client is not started: use 'async with' or start()")
        return self._producer
