"""Both exactly-once writers name a partition's producer by one rule."""

from __future__ import annotations

import inspect

from aiokafka.producer import sender as aiokafka_sender

from schemas.kafka.transaction import (
    CONCURRENT_TRANSACTIONS_BACKOFF_S,
    partition_producer,
    transactional_id,
)


def test_each_consumed_partition_has_a_transactional_id_of_its_own() -> None:
    assert [transactional_id("acme-projector", "prod.events", p) for p in (0, 1, 11)] == [
        "acme-projector-prod.events-0",
        "acme-projector-prod.events-1",
        "acme-projector-prod.events-11",
    ]
    assert transactional_id("g", "p.compaction-requests", 3) == "g-p.compaction-requests-3"


async def test_a_partition_producer_shortens_aiokafkas_wait_after_concurrent_transactions() -> None:
    # aiokafka reads this module constant where the coordinator answers a transaction's
    # first AddPartitionsToTxn with CONCURRENT_TRANSACTIONS; an upgrade that moves it would
    # bring the 20 ms wait back silently.
    assert "return BACKOFF_OVERRIDE" in inspect.getsource(
        aiokafka_sender.AddPartitionsToTxnHandler.handle_response
    )
    producer = partition_producer(
        "127.0.0.1:1", owner="g", topic="p.events", partition=0, transaction_timeout_ms=60_000
    )
    assert aiokafka_sender.BACKOFF_OVERRIDE == CONCURRENT_TRANSACTIONS_BACKOFF_S == 0.002
    await producer.stop()
