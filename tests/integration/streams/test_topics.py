"""`ctxstream topics create` makes the deployment's topics once, with their configs."""

from __future__ import annotations

import uuid

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from schemas.kafka.settings import KafkaSettings
from streams.topics import create_topics, topic_specs

pytestmark = pytest.mark.integration


async def _describe(bootstrap: str, names: list[str]) -> dict[str, dict[str, str]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        responses = await admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, name) for name in names]
        )
        configs: dict[str, dict[str, str]] = {}
        for response in responses:
            for _code, _message, _type, name, entries in response.resources:
                configs[name] = {entry[0]: entry[1] for entry in entries}
        return configs
    finally:
        await admin.close()


async def _partitions(bootstrap: str, names: list[str]) -> dict[str, int]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        described = await admin.describe_topics(names)
        return {topic["topic"]: len(topic["partitions"]) for topic in described}
    finally:
        await admin.close()


async def test_topics_are_created_once_with_their_configs(kafka_bootstrap: str) -> None:
    settings = KafkaSettings(
        kafka_bootstrap=kafka_bootstrap,
        topic_prefix=f"test-{uuid.uuid4().hex[:12]}",
        events_partitions=4,
        partitions=2,
        dead_letters_retention_ms=3 * 24 * 3600 * 1000,
        dead_letters_retention_bytes=64 << 20,
    )
    names = [spec.name for spec in topic_specs(settings)]
    first = await create_topics(settings)
    assert sorted(first.created) == sorted(names)
    assert first.existing == ()

    second = await create_topics(settings)
    assert second.created == ()
    assert sorted(second.existing) == sorted(names)

    partitions = await _partitions(kafka_bootstrap, names)
    assert partitions == {
        f"{settings.topic_prefix}.events": 4,
        f"{settings.topic_prefix}.compaction-requests": 2,
        f"{settings.topic_prefix}.projections": 2,
        f"{settings.topic_prefix}.dead-letters": 2,
        f"{settings.topic_prefix}.partition-owners": 1,
        f"{settings.topic_prefix}.api-keys": 1,
    }
    configs = await _describe(kafka_bootstrap, names)
    assert configs[f"{settings.topic_prefix}.events"]["retention.ms"] == "-1"
    assert configs[f"{settings.topic_prefix}.projections"]["cleanup.policy"] == "compact"
    letters = configs[f"{settings.topic_prefix}.dead-letters"]
    assert letters["retention.ms"] == str(3 * 24 * 3600 * 1000)
    assert letters["retention.bytes"] == str(64 << 20)
    assert letters["cleanup.policy"] == "delete"
    assert configs[f"{settings.topic_prefix}.partition-owners"]["cleanup.policy"] == "compact"
    assert configs[f"{settings.topic_prefix}.api-keys"]["cleanup.policy"] == "compact"
