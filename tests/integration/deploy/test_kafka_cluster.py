"""On a 3-node cluster (RF 3, min ISR 2), acks=all writes keep succeeding and none is lost
when the leader's node is killed; the node rejoins after a restart, never re-formatted."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.conftest import run_deploy

pytestmark = pytest.mark.integration

NODES = (1, 2, 3)
PARTITIONS = 3
RECORDS_PER_PHASE = 500
KEYS = 20
CLUSTER_START_TIMEOUT_S = 300.0  # the script waits up to 90 s; a first run also fetches jars
CLUSTER_STOP_TIMEOUT_S = 90.0  # SIGTERM to every node, up to 30 s of grace, then SIGKILL
NODE_TIMEOUT_S = 120.0  # kill is instant; restart waits up to 90 s for 3 brokers
SEND_TIMEOUT_S = 60.0  # covers a leader failover: broker.session.timeout.ms=6000 plus election
PRODUCER_REQUEST_TIMEOUT_MS = 30_000  # a batch for a dead leader is retried, not expired
RECEIVE_TIMEOUT_S = 60.0
TOPIC_TIMEOUT_S = 30.0  # a new topic's leaders reach every broker's metadata cache
ISR_TIMEOUT_S = 60.0  # a restarted node fetches what it missed and rejoins every ISR
POLL_INTERVAL_S = 0.5


@dataclass(frozen=True)
class Cluster:
    """A running deploy/kafka/cluster and the environment that names it."""

    bootstrap: str
    env: dict[str, str]

    async def kill(self, node: int) -> None:
        """Kill -9 one node."""
        await asyncio.to_thread(self._run, "kill", str(node))

    async def restart(self, node: int) -> None:
        """Start a killed node again with its config and storage; waits for 3 brokers."""
        await asyncio.to_thread(self._run, "restart", str(node))

    def _run(self, *args: str) -> None:
        run_deploy("kafka/cluster", *args, env=self.env, timeout=NODE_TIMEOUT_S)


def _cluster_port_base() -> int:
    """A port base whose six ports (node n: n*10000 + base, + 1) are all free.

    Not 9092, so a developer's own cluster on the default ports is left alone.
    """
    for base in range(9192, 9992, 100):
        if all(_free(n * 10000 + base + k) for n in NODES for k in (0, 1)):
            return base
    raise RuntimeError("no free port base for the 3-node cluster in 9192..9892")


def _free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def cluster(session_run_dir: Path) -> Iterator[Cluster]:
    """A fresh 3-node cluster for this module, stopped and deleted after it."""
    env = {
        "CTXSTREAM_CLUSTER_DIR": str(session_run_dir / "cluster"),
        "CTXSTREAM_CLUSTER_BASE_PORT": str(_cluster_port_base()),
    }
    try:
        bootstrap = run_deploy("kafka/cluster", "start", env=env, timeout=CLUSTER_START_TIMEOUT_S)
        yield Cluster(bootstrap, env)
    finally:
        # Also after a failed start: it kills whatever the start left running.
        run_deploy("kafka/cluster", "stop", "--wipe", env=env, timeout=CLUSTER_STOP_TIMEOUT_S)


async def _partitions(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """The topic's partitions as the metadata describes them (leader, replicas, isr)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return sorted(described["partitions"], key=lambda p: p["partition"])


async def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(
                    topic,
                    num_partitions=PARTITIONS,
                    replication_factor=len(NODES),
                    topic_configs={"min.insync.replicas": "2"},
                )
            ]
        )
    finally:
        await admin.close()


async def _send(producer: AIOKafkaProducer, topic: str, numbers: range) -> None:
    """Sends one record per number (key k<n mod KEYS>) and waits for every acknowledgement."""
    pending = [
        await producer.send(topic, key=f"k{n % KEYS}".encode(), value=str(n).encode())
        for n in numbers
    ]
    await asyncio.wait_for(asyncio.gather(*pending), SEND_TIMEOUT_S)


async def _receive(bootstrap: str, topic: str, count: int) -> list[tuple[bytes, int]]:
    """Every (key, number) of the topic from the start, in partition order, without a group.

    No consumer group: with a node down, the group coordinator's topic may lack replicas.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    received: list[tuple[bytes, int]] = []
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        await consumer.seek_to_beginning()
        deadline = time.monotonic() + RECEIVE_TIMEOUT_S
        while len(received) < count and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                received.extend((r.key, int(r.value)) for r in records)
    finally:
        await consumer.stop()
    return received


async def _wait_full_isr(bootstrap: str, topic: str, timeout_s: float) -> list[dict[str, Any]]:
    """The topic's partitions once each has all nodes in sync, or as they are at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        partitions = await _partitions(bootstrap, topic)
        in_sync = [sorted(p["isr"]) for p in partitions] == [list(NODES)] * PARTITIONS
        if in_sync or time.monotonic() > deadline:
            return partitions
        await asyncio.sleep(POLL_INTERVAL_S)


async def test_acks_all_writes_survive_a_killed_leader(cluster: Cluster, topic: str) -> None:
    await _create_topic(cluster.bootstrap, topic)
    before = await _wait_full_isr(cluster.bootstrap, topic, TOPIC_TIMEOUT_S)
    assert [sorted(p["replicas"]) for p in before] == [list(NODES)] * PARTITIONS
    assert [sorted(p["isr"]) for p in before] == [list(NODES)] * PARTITIONS

    producer = AIOKafkaProducer(
        bootstrap_servers=cluster.bootstrap,
        acks="all",
        enable_idempotence=True,
        request_timeout_ms=PRODUCER_REQUEST_TIMEOUT_MS,
    )
    await producer.start()
    try:
        await _send(producer, topic, range(RECORDS_PER_PHASE))
        victim = before[0]["leader"]
        await cluster.kill(victim)
        await _send(producer, topic, range(RECORDS_PER_PHASE, 2 * RECORDS_PER_PHASE))
    finally:
        await producer.stop()

    during = await _partitions(cluster.bootstrap, topic)
    assert during[0]["leader"] != victim
    assert all(victim not in p["isr"] for p in during)

    received = await _receive(cluster.bootstrap, topic, 2 * RECORDS_PER_PHASE)
    assert sorted(n for _, n in received) == list(range(2 * RECORDS_PER_PHASE))
    for key in {k for k, _ in received}:
        numbers = [n for k, n in received if k == key]
        assert numbers == sorted(numbers), f"records of {key!r} out of order"

    await cluster.restart(victim)
    after = await _wait_full_isr(cluster.bootstrap, topic, ISR_TIMEOUT_S)
    assert [sorted(p["isr"]) for p in after] == [list(NODES)] * PARTITIONS
