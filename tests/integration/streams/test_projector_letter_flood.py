"""N-M5 against a projector worker process on the broker: a session past `session_max_bytes`
letters every later append, and each letter still reaches `dead-letters`, but the worker's log
gets one line for the session's first letter and a count for the rest, not a line each; the
`dead-letters` topic keeps its letters for a bounded time and size, not forever."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from schemas.codec import decode_dead_letter, decode_envelope_sized, encode
from schemas.kafka.partitioning import session_partition
from schemas.keys import SessionKey
from schemas.log_text import shown
from tests.conftest import unique_topic
from tests.support.events import envelope, text_event
from tests.support.kafka import (
    create_deployment_topics,
    projector_settings,
    read_all,
    start_worker,
    stop_worker,
    wait_caught_up,
    wait_for,
)

pytestmark = pytest.mark.integration

PARTITIONS = 2
CATCH_UP_TIMEOUT_S = 120.0
FLOOD = SessionKey("tenant0/flood/u1/s1")
APPENDS = 300
FITTING = 2  # the cap holds this many of the session's records; the rest are dead letters
#: Lines the log may have about the flooded session: its first letter, and a count or two
#: (one per minute of letters; the test's flood takes seconds).
MAX_LINES = 3


async def _topic_config(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        [(_code, _message, _type, _name, entries)] = response.resources
        return {entry[0]: entry[1] for entry in entries}
    finally:
        await admin.close()


async def test_a_flooded_session_letters_every_append_but_logs_a_count(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    records = [
        encode(envelope(FLOOD, text_event(f"e{n}", f"inv{n}", 1_000.0 + n, "y" * 200)))
        for n in range(APPENDS)
    ]
    one = decode_envelope_sized(records[0])[1]
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("flood"),
        data_dir=tmp_path / "data",
        events_partitions=PARTITIONS,
        session_max_bytes=FITTING * one + one // 2,
    )
    await create_deployment_topics(settings)
    letters_topic = settings.topic("dead-letters")
    config = await _topic_config(kafka_bootstrap, letters_topic)
    assert config["retention.ms"] == str(7 * 24 * 3600 * 1000)
    assert config["retention.bytes"] == str(1024**3)

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
    await producer.start()
    try:
        partition = session_partition(FLOOD.encode(), PARTITIONS)
        for value in records:
            await producer.send(
                settings.topic("events"), key=FLOOD.encode(), value=value, partition=partition
            )
        await producer.flush()
    finally:
        await producer.stop()

    log_path = tmp_path / "worker.log"
    worker = start_worker(settings, log_path)
    try:
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)

        async def all_letters() -> bool:
            return len(await read_all(kafka_bootstrap, letters_topic)) >= APPENDS - FITTING

        await wait_for("every dead letter", all_letters, CATCH_UP_TIMEOUT_S)
        letters = [
            decode_dead_letter(r.value) for r in await read_all(kafka_bootstrap, letters_topic)
        ]
        assert worker.poll() is None, "the worker died"
    finally:
        stop_worker(worker)
    # Nothing lost: one letter for each append past the cap, each at stage session-size.
    assert len(letters) == APPENDS - FITTING
    assert {letter.stage for letter in letters} == {"session-size"}
    assert len({letter.source_offset for letter in letters}) == APPENDS - FITTING
    # ...but O(1) lines in the worker's log about them.
    lines = [
        line
        for line in log_path.read_text(errors="replace").splitlines()
        if "dead letter" in line and shown(str(FLOOD)) in line
    ]
    assert 1 <= len(lines) <= MAX_LINES, "\n".join(lines[:10])
    assert "session-size" in lines[0]
    assert "over session_max_bytes" in lines[0]  # the first says why
