"""10,000 envelopes over 200 sessions go through a real topic and come back equal, each
session's events in the order they were produced."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from schemas.codec import decode_envelope, encode
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey, TenantId
from tests.conftest import unique_topic

pytestmark = pytest.mark.integration

SESSIONS = 200
EVENTS_PER_SESSION = 50  # 10,000 envelopes in all
PARTITIONS = 12
SEND_TIMEOUT_S = 60.0  # 10,000 small records on a cold single broker
RECEIVE_TIMEOUT_S = 60.0  # includes joining the group and the first fetch


def _envelope(session: int, number: int) -> Envelope:
    tenant = TenantId(f"tenant{session % 4}")
    key = SessionKey(f"{tenant}/support/u{session % 17}/s{session}")
    return Envelope(
        tenant=tenant,
        session_key=key,
        producer_id="roundtrip-test",
        idempotency_key=f"{key}#e{number}",
        event=Event.model_validate(
            {
                "id": f"e{number}",
                "invocationId": f"inv{number // 2}",
                "author": "user" if number % 2 == 0 else "support_agent",
                "timestamp": 1_764_480_000.0 + number * 0.25,
                "content": {
                    "role": "user" if number % 2 == 0 else "model",
                    "parts": [{"text": f"message {number} of session {session} — ünïcode ok"}],
                },
                "actions": {"stateDelta": {"turn": number}} if number % 5 == 0 else {},
            }
        ),
    )


async def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(topic, PARTITIONS, replication_factor=1)])
    finally:
        await admin.close()


async def test_envelopes_round_trip_in_session_order(kafka_bootstrap: str, topic: str) -> None:
    # Interleaved as live traffic would be: event n of every session, then event n + 1.
    produced = [_envelope(s, n) for n in range(EVENTS_PER_SESSION) for s in range(SESSIONS)]
    await _create_topic(kafka_bootstrap, topic)

    producer = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap, acks="all", enable_idempotence=True, linger_ms=5
    )
    await producer.start()
    try:
        pending = [
            await producer.send(topic, key=e.session_key.encode(), value=encode(e))
            for e in produced
        ]
        await asyncio.wait_for(asyncio.gather(*pending), SEND_TIMEOUT_S)
    finally:
        await producer.stop()

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=unique_topic("group"),
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    received: dict[str, list[Envelope]] = defaultdict(list)
    partitions_seen: dict[str, set[int]] = defaultdict(set)
    count = 0
    await consumer.start()
    try:
        deadline = time.monotonic() + RECEIVE_TIMEOUT_S
        while count < len(produced) and time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=1000)
            for records in batches.values():
                for record in records:
                    envelope = decode_envelope(record.value, record_key=record.key)
                    received[envelope.session_key].append(envelope)
                    partitions_seen[envelope.session_key].add(record.partition)
                    count += 1
    finally:
        await consumer.stop()

    expected: dict[str, list[Envelope]] = defaultdict(list)
    for envelope in produced:
        expected[envelope.session_key].append(envelope)
    assert count == len(produced)
    assert len(received) == SESSIONS
    for key, envelopes in expected.items():
        assert received[key] == envelopes, f"session {key} differs or is out of order"
        assert len(partitions_seen[key]) == 1, f"session {key} spread over partitions"
    assert len({p for seen in partitions_seen.values() for p in seen}) > 1
