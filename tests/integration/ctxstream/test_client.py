"""``ctxstream.Client`` and ``SyncClient`` against the real broker.

What was appended is read back at the offset the client returned, decoded by the
projector's decoder; what the client refuses leaves the topic as it was.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from ctxstream import Client, InvalidEventError, SyncClient
from schemas.event import Event
from schemas.kafka.settings import KafkaSettings
from schemas.logged_event import LoggedEvent
from tests.conftest import unique_topic
from tests.support.kafka import create_topics_for, end_offsets, read_log

pytestmark = pytest.mark.integration

SESSION = "acme/support/u1/s1"


def _event(serial: int, text: str = "hello") -> dict[str, Any]:
    return {
        "id": f"e{serial}",
        "invocationId": "inv1",
        "author": "user",
        "timestamp": 100.0 + serial,
        "content": {"role": "user", "parts": [{"text": f"{text} {serial}"}]},
    }


async def _deployment(bootstrap: str) -> KafkaSettings:
    return await create_topics_for(
        bootstrap, unique_topic("client"), events_partitions=3, partitions=1
    )


async def _records(bootstrap: str, topic: str) -> dict[int, LoggedEvent]:
    log = await read_log(bootstrap, topic)
    return {record.offset: record for records in log.values() for record in records}


async def test_append_returns_the_offset_of_the_record_it_wrote(kafka_bootstrap: str) -> None:
    settings = await _deployment(kafka_bootstrap)
    async with Client(settings=settings, producer_id="agent-7") as client:
        first = await client.append(SESSION, _event(1))
        second = await client.append(SESSION, Event.model_validate(_event(2)))
    records = await _records(kafka_bootstrap, settings.topic("events"))
    assert second > first
    for offset, serial in ((first, 1), (second, 2)):
        envelope = records[offset].envelope
        assert envelope.session_key == SESSION
        assert envelope.tenant == "acme"
        assert envelope.producer_id == "agent-7"
        assert envelope.idempotency_key == f"{SESSION}/e{serial}"
        assert envelope.event == Event.model_validate(_event(serial))


async def test_append_many_keeps_the_order_and_gives_each_offset(kafka_bootstrap: str) -> None:
    settings = await _deployment(kafka_bootstrap)
    async with Client(settings=settings) as client:
        offsets = await client.append_many(SESSION, [_event(n) for n in range(5)])
    assert offsets == sorted(offsets)
    assert len(set(offsets)) == 5
    records = await _records(kafka_bootstrap, settings.topic("events"))
    assert [records[offset].envelope.event.id for offset in offsets] == [f"e{n}" for n in range(5)]


async def test_an_event_without_id_gets_one_and_its_idempotency_key(kafka_bootstrap: str) -> None:
    settings = await _deployment(kafka_bootstrap)
    event = _event(1)
    del event["id"]
    async with Client(settings=settings) as client:
        offset = await client.append(SESSION, event)
    envelope = (await _records(kafka_bootstrap, settings.topic("events")))[offset].envelope
    assert len(envelope.event.id) == 32
    assert envelope.idempotency_key == f"{SESSION}/{envelope.event.id}"


@pytest.mark.parametrize(
    ("key", "change", "named"),
    [
        ("acme/support/u1", {}, "session_key"),
        ("acme/support/../s1", {}, "session_key"),
        (SESSION, {"timestamp": "yesterday"}, "timestamp"),
        (SESSION, {"author": 7}, "author"),
        (SESSION, {"content": {"role": "user", "parts": [{"text": 5}]}}, "text"),
        (SESSION, {"actions": {"state_delta": {"n": 2**70}}}, "n"),
    ],
)
async def test_a_refused_event_names_its_field_and_sends_nothing(
    kafka_bootstrap: str, key: str, change: dict[str, Any], named: str
) -> None:
    settings = await _deployment(kafka_bootstrap)
    events = settings.topic("events")
    async with Client(settings=settings) as client:
        await client.append(SESSION, _event(0))
        before = await end_offsets(kafka_bootstrap, events)
        with pytest.raises(InvalidEventError, match=named) as refused:
            await client.append_many(key, [_event(1), {**_event(2), **change}])
        assert isinstance(refused.value, ValueError)
        if key == SESSION:  # the first event was fine: the second is the one named
            assert str(refused.value).startswith("events[1]: ")
    assert await end_offsets(kafka_bootstrap, events) == before


async def test_an_unstarted_client_says_so(kafka_bootstrap: str) -> None:
    settings = await _deployment(kafka_bootstrap)
    with pytest.raises(RuntimeError, match="not started"):
        await Client(settings=settings).append(SESSION, _event(1))


def test_the_sync_client_appends_and_returns_offsets(kafka_bootstrap: str) -> None:
    settings = asyncio.run(_deployment(kafka_bootstrap))
    with SyncClient(bootstrap=kafka_bootstrap, topic_prefix=settings.topic_prefix) as client:
        first = client.append(SESSION, _event(1))
        rest = client.append_many(SESSION, [_event(2), _event(3)])
    records = asyncio.run(_records(kafka_bootstrap, settings.topic("events")))
    assert [records[o].envelope.event.id for o in [first, *rest]] == ["e1", "e2", "e3"]
