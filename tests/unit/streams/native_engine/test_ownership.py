"""The native engine's partition ownership: restore order and start offsets, claims, releases.

No broker: the consumer, the producers, the changelog restore and the claims
are fakes that write what they were asked into one shared log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any, Final

import pytest
from aiokafka import TopicPartition

from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.keys import SessionKey
from streams.batch import TableWrite
from streams.fork_preparation import ForkPreparations
from streams.native_engine.changelog import Restored
from streams.native_engine.ownership import PartitionOwnership, Rebalance
from streams.native_engine.retries import RequestRetries
from streams.native_engine.store import PartitionStore
from streams.projector_metrics import ProjectorMetrics
from streams.projector_settings import ProjectorSettings
from streams.reads.claim import PartitionClaim, claim_refusal
from streams.reads.gate import ReadGate
from streams.session_table import position_key, request_key
from tests.support.events import request_with

SETTINGS: Final = ProjectorSettings(topic_prefix="t", app_id="own", store="memory")
EVENTS: Final = SETTINGS.topic("events")
PARTITIONS: Final = 4
CLAIM_KEY: Final = b"k" * 32


def _tp(partition: int) -> TopicPartition:
    return TopicPartition(EVENTS, partition)


@dataclass
class FakeConsumer:
    """The group's consumer: its assignment, the group's committed offsets, what it was told."""

    log: list[str]
    assigned: set[int] = field(default_factory=set)
    committed_offsets: dict[int, int] = field(default_factory=dict)

    def assignment(self) -> Set[TopicPartition]:
        return {_tp(partition) for partition in self.assigned}

    async def committed(self, partition: TopicPartition) -> int | None:
        return self.committed_offsets.get(partition.partition)

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self.log.append(f"seek {partition.partition} {offset}")

    def pause(self, *partitions: TopicPartition) -> None:
        self.log.extend(f"pause {tp.partition}" for tp in partitions)

    def resume(self, *partitions: TopicPartition) -> None:
        self.log.extend(f"resume {tp.partition}" for tp in partitions)


@dataclass
class FakeProducer:
    """A partition's producer: its start is the fence."""

    partition: int
    log: list[str]

    async def start(self) -> None:
        self.log.append(f"fence {self.partition}")

    async def stop(self) -> None:
        self.log.append(f"stop {self.partition}")


@dataclass
class FakeTakeover:
    """Producers, restores and claims, logged; a restore may write entries or fail."""

    log: list[str]
    changelog: dict[int, list[TableWrite]] = field(default_factory=dict)
    failing: set[int] = field(default_factory=set)
    claims: list[PartitionClaim] = field(default_factory=list)

    def producer(self, partition: int) -> Any:
        return FakeProducer(partition, self.log)

    async def restore(self, partition: int, store: PartitionStore) -> Restored:
        self.log.append(f"restore {partition}")
        if partition in self.failing:
            raise TimeoutError("the changelog did not answer")
        writes = self.changelog.pop(partition, [])
        store.apply(writes, store.changelog_next + len(writes))
        return Restored(partition, len(writes), wiped=False, seconds=0.0)

    async def claim(self, producer: Any, claim: PartitionClaim) -> None:
        self.log.append(f"claim {claim.partition}")
        self.claims.append(claim)


@dataclass
class Harness:
    """An ownership over fakes, and what it told its collaborators."""

    log: list[str]
    consumer: FakeConsumer
    takeover: FakeTakeover
    gate: ReadGate
    retries: RequestRetries
    ownership: PartitionOwnership
    forgotten: list[set[int]]


def _harness(lock: asyncio.Lock | None = None) -> Harness:
    log: list[str] = []
    takeover = FakeTakeover(log)
    gate = ReadGate()
    retries = RequestRetries(SETTINGS, ProjectorMetrics(), partitions=lambda: PARTITIONS)
    forgotten: list[set[int]] = []
    ownership = PartitionOwnership(
        SETTINGS,
        lock=lock or asyncio.Lock(),
        takeover=takeover,
        gate=gate,
        retries=retries,
        forks=ForkPreparations(SETTINGS),
        forget_sessions=forgotten.append,
        partitions=lambda: PARTITIONS,
        worker_id="worker-a",
    )
    consumer = FakeConsumer(log)
    return Harness(log, consumer, takeover, gate, retries, ownership, forgotten)


async def _assign(harness: Harness, *partitions: int) -> None:
    harness.consumer.assigned |= set(partitions)
    await harness.ownership.on_assigned(harness.consumer, set(partitions))
    await harness.ownership.restore_assigned(harness.consumer)


def _request(session_key: SessionKey, attempt: int = 1) -> CompactionRequest:
    """A request of `session_key`'s (the support vocabulary's, moved to that session)."""
    return request_with(session_key=session_key, attempt=attempt)


async def test_assigned_partitions_wait_paused_then_restore_in_order_fenced_first() -> None:
    harness = _harness()
    harness.consumer.assigned = {2, 0}
    await harness.ownership.on_assigned(harness.consumer, {2, 0})
    assert sorted(harness.log) == ["pause 0", "pause 2"]
    assert [state.phase if state else None for state in map(harness.gate.state, (0, 2))] == [
        "restoring",
        "restoring",
    ]
    assert harness.ownership.owned() == set()
    harness.log.clear()
    harness.ownership.advertise("10.0.0.1:9000", CLAIM_KEY)
    await harness.ownership.restore_assigned(harness.consumer)
    assert harness.log == [
        *("fence 0", "restore 0", "seek 0 0", "claim 0", "resume 0"),
        *("fence 2", "restore 2", "seek 2 0", "claim 2", "resume 2"),
    ]
    assert harness.ownership.owned() == {0, 2}
    assert harness.ownership.restored[2].partition == 2


@pytest.mark.parametrize(
    ("committed", "stored", "start"),
    [(None, None, 0), (7, None, 7), (None, 12, 12), (7, 12, 12), (20, 12, 20)],
)
async def test_a_partition_starts_at_the_larger_of_the_groups_offset_and_its_states(
    committed: int | None, stored: int | None, start: int
) -> None:
    harness = _harness()
    if committed is not None:
        harness.consumer.committed_offsets[1] = committed
    if stored is not None:
        harness.takeover.changelog[1] = [TableWrite(1, position_key(1), str(stored).encode())]
    await _assign(harness, 1)
    assert f"seek 1 {start}" in harness.log
    owned = harness.ownership.get(1)
    assert owned is not None
    assert owned.next_offset == start
    state = harness.gate.state(1)
    assert state is not None
    assert (state.phase, state.position) == ("committed", start)


async def test_a_partition_revoked_before_its_restore_is_not_taken_over() -> None:
    harness = _harness()
    harness.consumer.assigned = {0, 1}
    await harness.ownership.on_assigned(harness.consumer, {0, 1})
    harness.consumer.assigned = {1}  # 0 moved on before the loop came to restore it
    await harness.ownership.restore_assigned(harness.consumer)
    assert harness.ownership.owned() == {1}
    assert [line for line in harness.log if line.split()[1] == "0"] == ["pause 0"]
    assert harness.gate.state(0) is None


async def test_a_failed_restore_stops_the_partitions_producer_and_takes_nothing() -> None:
    harness = _harness()
    harness.takeover.failing = {1}
    with pytest.raises(TimeoutError):
        await _assign(harness, 0, 1)
    assert harness.log[-3:] == ["fence 1", "restore 1", "stop 1"]
    assert harness.ownership.owned() == {0}
    assert "resume 1" not in harness.log


async def test_a_restored_partitions_stored_requests_are_in_flight() -> None:
    harness = _harness()
    key = SessionKey("acme/app/u/s")
    harness.takeover.changelog[3] = [TableWrite(3, request_key(key), encode(_request(key)))]
    await _assign(harness, 3)
    (pending,) = harness.retries.pending.due(
        10**12, timeout_s=1.0, max_attempts=5
    ).retries  # learned: due one timeout later
    assert pending.session_key == key


async def test_claims_name_the_advertised_endpoint_and_only_once_it_is_known() -> None:
    harness = _harness()
    await _assign(harness, 0)
    assert harness.takeover.claims == []  # no read endpoint yet: nothing to claim
    harness.ownership.advertise("10.0.0.1:9000", CLAIM_KEY)
    await _assign(harness, 1)
    (claim,) = harness.takeover.claims
    assert (claim.partition, claim.address, claim.worker_id, claim.app_id) == (
        1,
        "10.0.0.1:9000",
        "worker-a",
        "own",
    )
    assert claim.events_partitions == PARTITIONS
    assert claim_refusal(CLAIM_KEY, claim) is None
    assert claim_refusal(b"x" * 32, claim) is not None


async def test_a_revocation_releases_only_the_revoked_partitions() -> None:
    harness = _harness()
    await _assign(harness, 0, 1, 2)
    key = SessionKey("acme/app/u/s")
    harness.retries.pending.learned(_request(key), 1, now=0.0)
    harness.log.clear()
    await harness.ownership.revoked({1, 2, 3})
    assert harness.log == ["stop 1", "stop 2"]
    assert harness.ownership.owned() == {0}
    assert harness.forgotten == [{1, 2, 3}]
    assert len(harness.retries.pending) == 0
    assert [harness.gate.state(p) is None for p in range(3)] == [False, True, True]
    assert harness.ownership.transaction(1) is None


async def test_a_revocation_waits_for_the_running_batch() -> None:
    lock = asyncio.Lock()  # the engine's, held by a batch below
    harness = _harness(lock)
    await _assign(harness, 0)
    async with lock:
        revoking = asyncio.create_task(harness.ownership.revoked({0}))
        await asyncio.sleep(0.01)
        assert harness.ownership.owned() == {0}
    await revoking
    assert harness.ownership.owned() == set()


async def test_a_partition_that_returns_finds_its_memory_store_and_restores_its_tail() -> None:
    harness = _harness()
    harness.takeover.changelog[0] = [TableWrite(0, b"h:a", b"1")]
    await _assign(harness, 0)
    await harness.ownership.revoked({0})
    harness.takeover.changelog[0] = [TableWrite(0, b"h:b", b"2")]
    await _assign(harness, 0)
    assert harness.ownership.table_entries() == {0: {b"h:a": b"1", b"h:b": b"2"}}
    assert harness.ownership.restored[0].records == 1


async def test_a_partition_owned_already_is_not_paused_again_when_assigned() -> None:
    harness = _harness()
    await _assign(harness, 0)
    harness.log.clear()
    await harness.ownership.on_assigned(harness.consumer, {0, 1})
    assert harness.log == ["pause 1"]


async def test_the_listener_passes_on_only_the_events_topics_partitions() -> None:
    harness = _harness()
    listener = Rebalance(harness.ownership, harness.consumer, EVENTS)
    await listener.on_partitions_assigned([_tp(2), TopicPartition("other", 3)])
    assert harness.log == ["pause 2"]
    await listener.on_partitions_revoked([_tp(2), TopicPartition("other", 3)])
    assert harness.forgotten == [{2}]
