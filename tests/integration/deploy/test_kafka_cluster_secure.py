"""`deploy/kafka/cluster start --secure`: three nodes that authenticate and authorize.

The full matrix of each principal is `test_kafka_secure.py`'s, on one node; here the
rules must hold across the replicated cluster (replication and the transaction log run
as the broker's own principal, min ISR 2), and a node killed and restarted comes back
secure and in sync.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError

from tests.conftest import ServiceError, run_deploy, unique_topic
from tests.integration.deploy.test_kafka_cluster import (
    CLUSTER_START_TIMEOUT_S,
    CLUSTER_STOP_TIMEOUT_S,
    ISR_TIMEOUT_S,
    NODE_TIMEOUT_S,
    NODES,
    POLL_INTERVAL_S,
    _cluster_port_base,
)
from tests.integration.deploy.test_kafka_secure import (
    ALLOWED,
    SecureBroker,
    _produce,
    _transact,
    open_client,
)

pytestmark = pytest.mark.integration

REFUSED: Final = "TopicAuthorizationFailedError"


@pytest.fixture(scope="module")
def secure_cluster(session_run_dir: Path) -> Iterator[tuple[SecureBroker, dict[str, str]]]:
    """A fresh secure 3-node cluster for this module, stopped and deleted after it."""
    folder = session_run_dir / "cluster-secure"
    prefix = unique_topic("secure-cluster")
    env = {
        "CTXSTREAM_CLUSTER_DIR": str(folder),
        "CTXSTREAM_CLUSTER_BASE_PORT": str(_cluster_port_base()),
        "CTXSTREAM_TOPIC_PREFIX": prefix,
        "CTXSTREAM_APP_ID": f"{prefix}-projector",
        "CTXSTREAM_SUMMARIZER_GROUP_ID": f"{prefix}-summarizer",
    }
    try:
        bootstrap = run_deploy(
            "kafka/cluster", "start", "--secure", env=env, timeout=CLUSTER_START_TIMEOUT_S
        )
        yield (
            SecureBroker(
                bootstrap=bootstrap,
                credentials=folder / "credentials",
                prefix=prefix,
                projector_app_id=env["CTXSTREAM_APP_ID"],
                summarizer_group_id=env["CTXSTREAM_SUMMARIZER_GROUP_ID"],
            ),
            env,
        )
    finally:
        run_deploy("kafka/cluster", "stop", "--wipe", env=env, timeout=CLUSTER_STOP_TIMEOUT_S)


async def _isr(cluster: SecureBroker, topic: str) -> list[list[int]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap, **cluster.sasl("admin"))
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    return [sorted(p["isr"]) for p in described["partitions"]]


async def _wait_in_sync(cluster: SecureBroker, topic: str) -> list[list[int]]:
    """The topic's ISRs once every node is in sync, or as they are at the deadline."""
    deadline = time.monotonic() + ISR_TIMEOUT_S
    while True:
        isr = await _isr(cluster, topic)
        if isr == [list(NODES)] or time.monotonic() > deadline:
            return isr
        await asyncio.sleep(POLL_INTERVAL_S)


def test_the_rules_hold_across_the_cluster_and_after_a_restart(
    secure_cluster: tuple[SecureBroker, dict[str, str]],
) -> None:
    cluster, env = secure_cluster
    events, letters = cluster.topic("events"), cluster.topic("dead-letters")
    tids = cluster.transactional_ids()

    async def make_topics() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=cluster.bootstrap, **cluster.sasl("admin"))
        await admin.start()
        try:
            await admin.create_topics([NewTopic(t, 1, len(NODES)) for t in (events, letters)])
        finally:
            await admin.close()

    async def probe() -> dict[str, str]:
        return {
            "http-api appends": await _produce(cluster, "http-api", events),
            "sink appends": await _produce(cluster, "sink", events),
            "sink letters": await _produce(cluster, "sink", letters),
            "summarizer transacts": await _transact(
                cluster, "summarizer", tids["summarizer"], events, cluster.summarizer_group_id
            ),
            "summarizer as the projector": await _transact(
                cluster, "summarizer", tids["projector"], events, cluster.summarizer_group_id
            ),
        }

    expected = {
        "http-api appends": ALLOWED,
        "sink appends": REFUSED,
        "sink letters": ALLOWED,
        "summarizer transacts": ALLOWED,
        "summarizer as the projector": "TransactionalIdAuthorizationFailed",
    }
    asyncio.run(make_topics())
    assert asyncio.run(_wait_in_sync(cluster, events)) == [list(NODES)]
    assert asyncio.run(probe()) == expected

    run_deploy("kafka/cluster", "kill", "2", env=env, timeout=NODE_TIMEOUT_S)
    run_deploy("kafka/cluster", "restart", "2", env=env, timeout=NODE_TIMEOUT_S)
    # Node 2 replicated as the broker's principal again: it is back in every ISR.
    assert asyncio.run(_wait_in_sync(cluster, events)) == [list(NODES)]
    assert asyncio.run(probe()) == expected


def test_the_cluster_refuses_clients_without_sasl_and_open_starts(
    secure_cluster: tuple[SecureBroker, dict[str, str]],
) -> None:
    cluster, env = secure_cluster
    with pytest.raises(KafkaConnectionError):
        asyncio.run(open_client(cluster.bootstrap))
    with pytest.raises(ServiceError, match="formatted with --secure"):
        run_deploy("kafka/cluster", "start", env=env, timeout=CLUSTER_START_TIMEOUT_S)
