"""One partition of `compaction-requests`: its transactional producer and its commits.

Exactly once, per request partition: the partition's producer
(:func:`schemas.kafka.transaction.partition_producer`) fences the previous
owner when it starts, and the outputs of finished requests are written with
the partition's committable offset in one transaction
(:func:`schemas.kafka.transaction.transaction`). The offset moves over
contiguous finished requests only (:class:`~summarizer_worker.offset_ledger.OffsetLedger`),
while outputs are written as soon as their request finishes. Every
transaction carries all outputs that finished while the previous one
committed. Why this is exactly once, and what a crash in between rewrites:
``summarizer_worker/README.md``, "Exactly once".
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from aiokafka import TopicPartition
from aiokafka.structs import RecordMetadata

from schemas.kafka.transaction import partition_producer, transaction
from summarizer_worker.offset_ledger import OffsetLedger
from summarizer_worker.request_outcome import RequestOutcome
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.stage_pause import StagePause

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _Finished:
    offset: int
    outcome: RequestOutcome
    request_id: str
    written: asyncio.Future[list[RecordMetadata]]


class PartitionLane:
    """Writes the outcomes of one request partition's requests, with its offset, transactionally."""

    def __init__(self, tp: TopicPartition, settings: SummarizerSettings, pause: StagePause) -> None:
        """The lane of `tp`; `start` starts it."""
        self.tp = tp
        self.ledger = OffsetLedger()
        self._group_id = settings.summarizer_group_id
        self._pause = pause
        self._producer = partition_producer(
            settings.kafka_bootstrap,
            owner=settings.summarizer_group_id,
            topic=tp.topic,
            partition=tp.partition,
            transaction_timeout_ms=settings.summarizer_transaction_timeout_ms,
            security=settings.client_security(),
        )
        self._finished: list[_Finished] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._committer: asyncio.Task[None] | None = None
        self._opened = asyncio.Event()
        self.handlers: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Start the committer, which first starts the producer (fencing any previous owner).

        Outcomes may be handed in at once; they are written once the producer
        is ready.
        """
        self._committer = asyncio.create_task(self._commit_loop(), name=f"commit-{self.tp}")

    async def opened(self) -> None:
        """Return once the producer has started, so every previous owner is fenced.

        A request is read only after this: a previous owner that had not
        noticed losing the partition can commit nothing after it, so the
        check for a summary that answers the request sees all there will be.
        """
        await self._opened.wait()

    def failure(self) -> BaseException | None:
        """The error that ended the lane's committer, if a transaction failed."""
        task = self._committer
        if task is None or not task.done() or task.cancelled():
            return None
        return task.exception()

    async def finish(
        self, offset: int, outcome: RequestOutcome, request_id: str
    ) -> list[RecordMetadata]:
        """Write `outcome` for the request at `offset`; once committed, where its records are."""
        written: asyncio.Future[list[RecordMetadata]] = asyncio.get_running_loop().create_future()
        self._finished.append(_Finished(offset, outcome, request_id, written))
        self._wake.set()
        return await written

    async def close(self) -> None:
        """Stop taking outcomes, let the running transaction end, close the producer.

        Requests not committed by then are read again by the partition's next
        owner. A running transaction that fails (its producer was fenced by
        the partition's next owner, say) is not raised here: `failure` tells.
        """
        self._closing = True
        for handler in list(self.handlers):
            handler.cancel()
        await asyncio.gather(*self.handlers, return_exceptions=True)
        self._wake.set()
        if self._committer is not None:
            await asyncio.gather(self._committer, return_exceptions=True)
        await self._producer.stop()
        logger.info("lane closed topic=%s partition=%d", self.tp.topic, self.tp.partition)

    async def _commit_loop(self) -> None:
        await self._producer.start()
        self._opened.set()
        logger.info("lane opened topic=%s partition=%d", self.tp.topic, self.tp.partition)
        while True:
            await self._wake.wait()
            self._wake.clear()
            if self._closing:
                return
            batch, self._finished = self._finished, []
            if not batch:
                continue
            try:
                await self._commit(batch)
            except BaseException as exc:
                # The worker stops on this; whoever awaits these learns why.
                for finished in batch:
                    if not finished.written.done():
                        finished.written.set_exception(exc)
                raise

    async def _commit(self, batch: list[_Finished]) -> None:
        """One transaction: the batch's outputs and the partition's committable offset."""
        for finished in batch:
            self.ledger.finish(finished.offset)
        offset = self.ledger.committable()
        records = [record for finished in batch for record in finished.outcome.records]
        placed: list[RecordMetadata] = []
        if records or offset is not None:
            async with transaction(self._producer) as open_transaction:
                for record in records:
                    await open_transaction.send(
                        record.topic, key=record.key, value=record.value, headers=record.headers
                    )
                if offset is not None:  # joins while the sends land; committed after both
                    await open_transaction.commit_offsets({self.tp: offset}, self._group_id)
                placed = await open_transaction.delivered()
                for finished in batch:
                    if finished.outcome.records:  # the summary is in the log, not yet committed
                        await self._pause("transaction", finished.request_id)
        logger.debug(
            "committed partition=%d requests=%d records=%d offset=%s",
            self.tp.partition,
            len(batch),
            len(records),
            offset,
        )
        start = 0
        for finished in batch:
            end = start + len(finished.outcome.records)
            if not finished.written.done():
                finished.written.set_result(placed[start:end])
            start = end
