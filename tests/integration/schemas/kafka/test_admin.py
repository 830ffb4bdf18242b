"""Topic administration against the broker: ensure, count partitions, refuse, delete."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from schemas.errors import TopicError
from schemas.kafka.admin import TopicSpec, delete_topics_of, ensure_topics, partition_count
from schemas.kafka.settings import KafkaSettings
from tests.conftest import unique_topic

pytestmark = pytest.mark.integration


async def _topics(bootstrap: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def test_a_topic_ensured_is_counted_and_ensured_again_is_left_alone(
    kafka_bootstrap: str,
) -> None:
    name = unique_topic("admin")
    spec = TopicSpec(None, name, 3, 1, {"cleanup.policy": "compact"})

    first = await ensure_topics(kafka_bootstrap, [spec])
    assert (first.created, first.existing) == ((name,), ())
    assert await partition_count(kafka_bootstrap, name, wait_s=10.0) == 3

    again = await ensure_topics(kafka_bootstrap, [spec])
    assert (again.created, again.existing) == ((), (name,))


async def test_a_missing_topic_is_a_topic_error_once_the_wait_is_over(
    kafka_bootstrap: str,
) -> None:
    name = unique_topic("absent")
    started = time.monotonic()
    with pytest.raises(TopicError, match="does not exist") as raised:
        await partition_count(kafka_bootstrap, name, wait_s=0.5)
    assert time.monotonic() - started >= 0.5
    assert raised.value.topic == name
    assert name not in await _topics(kafka_bootstrap)  # counting never creates it


async def test_a_refused_topic_is_a_topic_error_naming_it(kafka_bootstrap: str) -> None:
    name = unique_topic("refused")
    spec = TopicSpec(None, name, 1, 99)  # more replicas than the broker has
    with pytest.raises(TopicError, match="could not be created") as raised:
        await ensure_topics(kafka_bootstrap, [spec])
    assert raised.value.topic == name


async def test_deleting_a_deployment_deletes_its_prefix_only(kafka_bootstrap: str) -> None:
    prefix = unique_topic("deploy")
    ours = [f"{prefix}.events", f"{prefix}-projector-sessions-changelog"]
    theirs = f"{unique_topic('deploy')}.events"
    await ensure_topics(kafka_bootstrap, [TopicSpec(None, n, 1, 1) for n in [*ours, theirs]])

    await delete_topics_of(KafkaSettings(kafka_bootstrap=kafka_bootstrap, topic_prefix=prefix))

    left = await _topics(kafka_bootstrap)
    for _ in range(100):  # deletion is asynchronous: up to 10 s
        if not set(ours) & left:
            break
        await asyncio.sleep(0.1)
        left = await _topics(kafka_bootstrap)
    assert not set(ours) & left
    assert theirs in left
