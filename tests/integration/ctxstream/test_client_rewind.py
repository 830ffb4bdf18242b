"""``Client.rewind`` and ``SyncClient.rewind`` on the real broker: ADK's rewind event, logged."""

from __future__ import annotations

import asyncio
import time

import pytest

from ctxstream import Client, InvalidArgumentError, SyncClient
from schemas.keys import SessionKey
from tests.conftest import unique_topic
from tests.support.kafka import create_topics_for, end_offsets, read_log

pytestmark = pytest.mark.integration

SESSION = SessionKey("acme/support/u1/s1")


async def test_rewind_appends_adks_rewind_event_and_returns_its_offset(
    kafka_bootstrap: str,
) -> None:
    settings = await create_topics_for(
        kafka_bootstrap, unique_topic("rewind"), events_partitions=2, partitions=1
    )
    before = time.time()
    async with Client(settings=settings) as client:
        first = await client.rewind(SESSION, "inv2")
        second = await client.rewind(SESSION, "inv2")
    log = (await read_log(kafka_bootstrap, settings.topic("events")))[SESSION]
    assert [record.offset for record in log] == [first, second]
    events = [record.envelope.event for record in log]
    for event in events:
        assert event.author == "user"
        assert event.actions.rewind_before_invocation_id == "inv2"
        assert event.invocation_id.startswith("e-")
        assert before <= event.timestamp <= time.time()
        assert event.content is None
    assert events[0].id != events[1].id  # fresh ids: two rewinds are two events
    assert events[0].invocation_id != events[1].invocation_id


def test_sync_rewind_returns_its_offset_and_refuses_bad_arguments_sending_nothing(
    kafka_bootstrap: str,
) -> None:
    settings = asyncio.run(
        create_topics_for(
            kafka_bootstrap, unique_topic("rewind"), events_partitions=1, partitions=1
        )
    )
    events = settings.topic("events")
    with SyncClient(settings=settings) as client:
        with pytest.raises(InvalidArgumentError, match=r"^before_invocation_id: empty"):
            client.rewind(SESSION, "")
        with pytest.raises(InvalidArgumentError, match="session_key"):
            client.rewind("acme/../u1/s1", "inv1")
        assert asyncio.run(end_offsets(kafka_bootstrap, events)) == {0: 0}
        offset = client.rewind(SESSION, "inv1")
    assert asyncio.run(end_offsets(kafka_bootstrap, events)) == {0: offset + 1}
