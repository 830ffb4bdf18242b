"""A faust app whose consumers read only committed records of transactional producers.

faust reads with ``isolation_level="read_committed"`` only when its own
``processing_guarantee="exactly_once"`` is on, which ctxstream never uses
(infrastructure notes: open duplicates and crashes on rebalance). But the
summarizer appends summary events to `events` inside Kafka transactions, and a
summarizer killed mid-transaction leaves records that the broker later marks
aborted: a ``read_uncommitted`` projector would apply those summaries anyway.
So the projector's consumer reads committed records only, while faust's
at-least-once machinery stays as it is.

Records of non-transactional producers (agents, faust's own changelogs) are
all committed, so nothing else changes; a transaction left open by a crashed
producer holds readers back at the last stable offset until the restarted
producer aborts it or its transaction timeout expires.
"""

from __future__ import annotations

from typing import Any

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka

ISOLATION_LEVEL = "read_committed"


class _ReadCommittedConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        # aiokafka hands the level to its fetcher when the consumer starts, so
        # setting it before start is the same as passing it to the constructor,
        # which faust does only in exactly-once mode. Pinned versions; the
        # integration test of aborted transactions guards this line.
        consumer._isolation_level = ISOLATION_LEVEL
        return consumer


class _ReadCommittedConsumer(faust_aiokafka.Consumer):
    def _new_consumer_thread(self) -> _ReadCommittedConsumerThread:
        return _ReadCommittedConsumerThread(self, loop=self.loop, beacon=self.beacon)


class _ReadCommittedTransport(faust_aiokafka.Transport):
    Consumer = _ReadCommittedConsumer


class ReadCommittedApp(faust.App):
    """A ``faust.App`` whose consumer reads with ``isolation_level="read_committed"``."""

    def _new_transport(self) -> Any:
        return _ReadCommittedTransport(self.conf.broker_consumer, self)
