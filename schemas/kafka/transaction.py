"""One Kafka transaction of a partition's producer, as both exactly-once writers use it.

Each consumed partition has a producer of its own (:func:`partition_producer`),
whose transactional id (:func:`transactional_id`) is stable across restarts,
so the next owner's first call fences the last one. Records are sent as the
block goes; the consumed offsets join the transaction
(:meth:`Transaction.commit_offsets`) while the records land, and before the
commit every record's delivery is awaited, so a record the broker refused
fails the transaction (which aborts, offsets and all) instead of being left
out of it. When the transaction fails (a fenced producer, say), every send
fails with it: the block raises that one error, and the sends' own errors
are marked as seen rather than logged one by one as never retrieved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Final

from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.producer import sender as aiokafka_sender
from aiokafka.structs import RecordMetadata

from schemas.kafka.security import PLAINTEXT, ClientSecurity
from schemas.kafka.timing import Header

Delivery = asyncio.Future[RecordMetadata]

#: Backoff before aiokafka retries a transaction request the coordinator answered
#: CONCURRENT_TRANSACTIONS (the previous transaction's markers not yet written); its
#: default, 100 ms, was the summarizer's p99 in `bench compaction`.
TRANSACTION_RETRY_BACKOFF_MS: Final = 10
#: The wait before aiokafka asks again to add a transaction's first partition
#: when the coordinator answered CONCURRENT_TRANSACTIONS: the producer's previous
#: transaction is committed (its records are readable) but the coordinator has not
#: yet recorded its markers as written, which takes a few milliseconds (KAFKA-5477).
#: aiokafka 0.14 waits a fixed 20 ms there (`aiokafka.producer.sender.BACKOFF_OVERRIDE`,
#: not `retry_backoff_ms`), and both workers begin a partition's next transaction right
#: after the last one: a projector batch after a batch, a summarizer lane's commit after
#: a commit. So a timer, not work, held up every such transaction by up to 20 ms (in
#: `bench compaction` three transactions stand between a trigger and its snapshot).
#: Asking every 2 ms costs the coordinator a few more cheap requests; what a transaction
#: holds and when it commits are unchanged, so exactly-once is untouched.
CONCURRENT_TRANSACTIONS_BACKOFF_S: Final = 0.002


def transactional_id(owner: str, topic: str, partition: int) -> str:
    """``<owner>-<topic>-<partition>``: the producer id of one consumed partition of `owner`."""
    return f"{owner}-{topic}-{partition}"


def partition_producer(
    bootstrap: str,
    *,
    owner: str,
    topic: str,
    partition: int,
    transaction_timeout_ms: int,
    security: ClientSecurity = PLAINTEXT,
) -> AIOKafkaProducer:
    """The transactional, idempotent (acks=all) producer of one consumed partition of `owner`.

    Sets aiokafka's wait after CONCURRENT_TRANSACTIONS for the whole process
    (:data:`CONCURRENT_TRANSACTIONS_BACKOFF_S`): it is a module constant there.
    """
    aiokafka_sender.BACKOFF_OVERRIDE = CONCURRENT_TRANSACTIONS_BACKOFF_S
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        transactional_id=transactional_id(owner, topic, partition),
        enable_idempotence=True,
        acks="all",
        transaction_timeout_ms=transaction_timeout_ms,
        retry_backoff_ms=TRANSACTION_RETRY_BACKOFF_MS,
        **security,
    )


class Transaction:
    """The sends of one open transaction."""

    def __init__(self, producer: AIOKafkaProducer) -> None:
        self._producer = producer
        self.sent: list[Delivery] = []

    async def send(
        self,
        topic: str,
        *,
        key: bytes | None,
        value: bytes | None,
        partition: int | None = None,
        headers: Sequence[Header] = (),
    ) -> Delivery:
        """Send one record inside the transaction, with `headers` (:mod:`~schemas.kafka.timing`).

        Returns its delivery.
        """
        delivery: Delivery = await self._producer.send(
            topic, key=key, value=value, partition=partition, headers=list(headers)
        )
        self.sent.append(delivery)
        return delivery

    async def delivered(self) -> list[RecordMetadata]:
        """Wait until the broker has every record sent so far (in the log, not yet committed)."""
        return list(await asyncio.gather(*self.sent))

    async def commit_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        """Add `group_id`'s `offsets` to the transaction while the records sent so far land.

        Returns once both are done. The offsets' round trips (AddOffsetsToTxn,
        TxnOffsetCommit) run beside the records' produce instead of after it;
        a record the broker refused still fails the transaction, which then
        aborts, its offsets with it (:func:`transaction` commits only after
        every delivery succeeded).
        """
        adding = asyncio.ensure_future(
            self._producer.send_offsets_to_transaction(dict(offsets), group_id)
        )
        try:
            await self.delivered()
        except BaseException:
            _seen([adding])
            raise
        await adding


@contextlib.asynccontextmanager
async def transaction(producer: AIOKafkaProducer) -> AsyncIterator[Transaction]:
    """A transaction of `producer`: committed when the block ends, aborted if it raises."""
    open_transaction = Transaction(producer)
    try:
        async with producer.transaction():
            yield open_transaction
            await open_transaction.delivered()
    except BaseException:
        _seen(open_transaction.sent)
        raise


def _seen(deliveries: Sequence[Delivery]) -> None:
    """Mark the failures of `deliveries` as seen, now or when they end."""

    def retrieve(delivery: Delivery) -> None:
        if not delivery.cancelled():
            delivery.exception()

    for delivery in deliveries:
        if delivery.done():
            retrieve(delivery)
        else:
            delivery.add_done_callback(retrieve)
