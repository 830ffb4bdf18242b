"""Kafka's own tools under ``deploy/kafka/`` read the deployment's topics as they are.

The console consumer shows string keys (session keys) and JSON values (the codec's bytes),
the consumer-groups tool a group's committed offsets and lag, the topics tool the topics'
partitions and configs. Each is checked against what the test wrote or read with aiokafka.
"""

from __future__ import annotations

import asyncio
import subprocess

import orjson
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from schemas.codec import encode
from schemas.kafka.settings import KafkaSettings, TopicRole
from tests.conftest import DEPLOY, unique_topic
from tests.support.events import envelope, session_key, text_event
from tests.support.kafka import append_envelopes, create_topics_for, end_offsets

pytestmark = pytest.mark.integration

TOOL_TIMEOUT_S = 120.0  # a JVM starts per call; the first call may fetch the tools' jar


def _tool(name: str, *args: str) -> str:
    """Run ``deploy/kafka/<name>``; its standard output."""
    result = subprocess.run(
        [str(DEPLOY / "kafka" / name), *args],
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"{name} exited {result.returncode}: {result.stderr[-3000:]}"
    return result.stdout


async def _deployment(bootstrap: str) -> KafkaSettings:
    return await create_topics_for(
        bootstrap, unique_topic("tools"), events_partitions=3, partitions=2
    )


async def test_the_console_consumer_shows_session_keys_and_json_values(
    kafka_bootstrap: str,
) -> None:
    settings = await _deployment(kafka_bootstrap)
    events = settings.topic("events")
    sent = [envelope(session_key(n), text_event(f"e{n}", "inv1", 100.0 + n)) for n in range(4)]
    await append_envelopes(kafka_bootstrap, events, sent)
    output = await asyncio.to_thread(
        _tool,
        "console-consumer",
        *("--bootstrap-server", kafka_bootstrap, "--topic", events, "--from-beginning"),
        *("--max-messages", "4", "--isolation-level", "read_committed"),
        *("--property", "print.key=true", "--property", "key.separator=\t"),
    )
    shown = set()
    for line in output.splitlines():
        key, value = line.split("\t", 1)
        shown.add((key, orjson.dumps(orjson.loads(value), option=orjson.OPT_SORT_KEYS)))
    assert shown == {
        (e.session_key, orjson.dumps(orjson.loads(encode(e)), option=orjson.OPT_SORT_KEYS))
        for e in sent
    }


async def test_the_consumer_groups_tool_shows_committed_offsets_and_lag(
    kafka_bootstrap: str,
) -> None:
    settings = await _deployment(kafka_bootstrap)
    events = settings.topic("events")
    sent = [envelope(session_key(n), text_event(f"e{n}", "inv1", 100.0 + n)) for n in range(12)]
    await append_envelopes(kafka_bootstrap, events, sent)
    ends = await end_offsets(kafka_bootstrap, events)
    committed = {partition: end // 2 for partition, end in ends.items()}
    group = unique_topic("tools-group")
    consumer = AIOKafkaConsumer(
        bootstrap_servers=kafka_bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        offsets = {TopicPartition(events, p): o for p, o in committed.items()}
        consumer.assign(list(offsets))
        await consumer.commit(offsets)
    finally:
        await consumer.stop()
    output = await asyncio.to_thread(
        _tool,
        "consumer-groups",
        "--bootstrap-server",
        kafka_bootstrap,
        "--describe",
        "--group",
        group,
    )
    rows = [line.split() for line in output.splitlines()]
    header = next(row for row in rows if row[:2] == ["GROUP", "TOPIC"])
    column = {name: index for index, name in enumerate(header)}
    described = {
        int(row[column["PARTITION"]]): (
            int(row[column["CURRENT-OFFSET"]]),
            int(row[column["LOG-END-OFFSET"]]),
            int(row[column["LAG"]]),
        )
        for row in rows
        if len(row) > column["LAG"] and row[column["TOPIC"]] == events
    }
    assert described == {p: (committed[p], ends[p], ends[p] - committed[p]) for p in ends}


async def test_the_topics_tool_describes_the_deployment_topics(kafka_bootstrap: str) -> None:
    settings = await _deployment(kafka_bootstrap)
    listed = await asyncio.to_thread(
        _tool, "topics", "--bootstrap-server", kafka_bootstrap, "--list"
    )
    names = {settings.topic(role) for role in ("events", "projections", "dead-letters")}
    assert names <= set(listed.split())
    described_topics: tuple[tuple[TopicRole, int, bool], ...] = (
        ("events", 3, False),
        ("projections", 2, True),
    )
    for role, partitions, compacted in described_topics:
        described = await asyncio.to_thread(
            _tool,
            "topics",
            *("--bootstrap-server", kafka_bootstrap, "--describe", "--topic", settings.topic(role)),
        )
        summary = described.splitlines()[0]
        assert f"PartitionCount: {partitions}" in summary
        assert ("cleanup.policy=compact" in summary) is compacted
