"""Small parts of the summarizer worker: backoff, session locks, topic names, partitions."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import TopicPartition

from schemas.keys import SessionKey
from streams.settings import KafkaSettings
from streams.topics import TOPIC_ROLES, topic_name
from summarizer_worker.backoff import retry_delay_s
from summarizer_worker.partition_lane import transactional_id
from summarizer_worker.session_locks import SessionLocks
from summarizer_worker.session_slice import event_partition
from summarizer_worker.settings import SummarizerSettings


def test_the_retry_delay_doubles_up_to_its_bound_and_honours_an_asked_delay() -> None:
    delays = [retry_delay_s(n, base_s=1.0, max_s=60.0) for n in range(1, 9)]
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]
    assert retry_delay_s(1, base_s=1.0, max_s=60.0, asked_s=5.0) == 5.0
    assert retry_delay_s(1, base_s=1.0, max_s=3.0, asked_s=5.0) == 3.0
    assert retry_delay_s(10_000, base_s=1.0, max_s=60.0) == 60.0
    with pytest.raises(ValueError, match="follows a failure"):
        retry_delay_s(0, base_s=1.0, max_s=1.0)


async def test_one_session_waits_for_its_lock_while_another_goes_on() -> None:
    locks = SessionLocks()
    order: list[str] = []
    first_holds = asyncio.Event()
    release = asyncio.Event()

    async def hold(key: str, name: str, *, wait: bool) -> None:
        async with locks.hold(SessionKey(key)):
            order.append(f"{name} in")
            if wait:
                first_holds.set()
                await release.wait()
            order.append(f"{name} out")

    first = asyncio.create_task(hold("t/a/u/s1", "first", wait=True))
    await first_holds.wait()
    same = asyncio.create_task(hold("t/a/u/s1", "same", wait=False))
    other = asyncio.create_task(hold("t/a/u/s2", "other", wait=False))
    await other
    assert order == ["first in", "other in", "other out"]
    assert len(locks) == 1
    release.set()
    await asyncio.gather(first, same)
    assert order[3:] == ["first out", "same in", "same out"]
    assert len(locks) == 0


def test_topic_names_are_the_ones_the_deployment_creates() -> None:
    worker = SummarizerSettings(topic_prefix="acme-prod")
    deployment = KafkaSettings(topic_prefix="acme-prod")
    for role in TOPIC_ROLES:
        assert worker.topic(role) == topic_name(deployment, role)


def test_a_request_partition_has_one_transactional_id_per_group() -> None:
    assert transactional_id("g", TopicPartition("p.compaction-requests", 3)) == (
        "g.p.compaction-requests.3"
    )


def test_a_session_always_maps_to_one_partition_in_range() -> None:
    keys = [f"t/a/u/s{n}".encode() for n in range(200)]
    chosen = [event_partition(key, 12) for key in keys]
    assert chosen == [event_partition(key, 12) for key in keys]
    assert set(chosen) == set(range(12))  # 200 keys spread over every partition
    with pytest.raises(ValueError, match="at least one"):
        event_partition(b"k", 0)
