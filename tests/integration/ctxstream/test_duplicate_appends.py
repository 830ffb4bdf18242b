"""A duplicate append answers with the original offset and says so; the fold stays the authority.

Against the real broker and a real native worker (the module's ``deployment``):
an event the session stored already, equal, is not written again, and its
answer is the stored offset with ``duplicate`` true; without a projector to
ask, appends go on and the fold drops copies.
"""

from __future__ import annotations

import time
from typing import Any

import aiohttp
import orjson
import pytest
from yarl import URL

from ctxstream import AppendResult, Client, SyncClient
from schemas.event import Event
from schemas.event_digest import event_digest
from schemas.kafka.partitioning import session_partition
from schemas.kafka.settings import KafkaSettings
from schemas.keys import Offset, SessionKey
from schemas.read_protocol import StoredEvents, read_path
from schemas.read_secret import read_keys
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.kafka import create_topics_for, read_log
from tests.support.read_worker import claims

pytestmark = pytest.mark.integration

READ_TIMEOUT_S = 30.0


def _key() -> str:
    return f"acme/support/{unique_topic('dup')}/s"


def _event(event_id: str, text: str = "hello", timestamp: float = 100.0) -> dict[str, Any]:
    return {
        "id": event_id,
        "invocationId": "inv1",
        "author": "user",
        "timestamp": timestamp,
        "content": {"role": "user", "parts": [{"text": text}]},
    }


async def _stored(client: Client, key: str) -> int:
    """Append event e1 and wait until the session's owner has folded it; its offset."""
    offset = await client.append(key, _event("e1"))
    await client.projection(key, offset, timeout_s=READ_TIMEOUT_S)
    return offset


async def _session_offsets(settings: KafkaSettings, key: str) -> list[int]:
    log = await read_log(settings.kafka_bootstrap, settings.topic("events"))
    return [record.offset for record in log.get(SessionKey(key), [])]


async def test_a_fresh_clients_first_append_is_looked_up_too(
    deployment: ProjectorSettings,
) -> None:
    """A command or a script appends once per client: its one append asks the owner as well."""
    key = _key()
    async with Client(settings=deployment) as client:
        first = await _stored(client, key)
    # A generous lookup time: what is checked is that it asks, not how fast (a busy machine).
    patient = deployment.model_copy(update={"duplicate_lookup_timeout_s": 10.0})
    async with Client(settings=patient) as retry:
        again = await retry.append_result(key, _event("e1"))

    assert again == AppendResult(Offset(first), duplicate=True)
    assert await _session_offsets(deployment, key) == [first]


async def test_a_stored_event_sent_again_answers_its_offset_and_is_not_written(
    deployment: ProjectorSettings,
) -> None:
    key = _key()
    async with Client(settings=deployment) as client:
        first = await client.append_result(key, _event("e1"))
        assert first.duplicate is False
        await client.projection(key, first.offset, timeout_s=READ_TIMEOUT_S)  # folded

        again = await client.append_result(key, _event("e1"))
        assert again == AppendResult(first.offset, duplicate=True)
        assert await client.append(key, _event("e1")) == first.offset  # append: still an int

        batch = await client.append_results(key, [_event("e2", timestamp=101.0), _event("e1")])
        assert batch[0].duplicate is False
        assert batch[1] == AppendResult(first.offset, duplicate=True)

        # The same id with another field is another event: written (ADK stores it too).
        changed = await client.append_result(key, _event("e1", text="changed"))
        assert changed.duplicate is False
        assert changed.offset > batch[0].offset
    assert await _session_offsets(deployment, key) == [
        first.offset,
        batch[0].offset,
        changed.offset,
    ]


async def test_two_events_of_one_id_in_one_call_are_both_written(
    deployment: ProjectorSettings,
) -> None:
    key = _key()
    async with Client(settings=deployment) as client:
        await _stored(client, key)
        results = await client.append_results(key, [_event("e1"), _event("e1")])
    # Not asked about (the id is not unique in the call): written, the fold decides.
    assert [result.duplicate for result in results] == [False, False]
    assert len(await _session_offsets(deployment, key)) == 3


def test_the_sync_client_says_a_duplicate_too(client: SyncClient) -> None:
    key = _key()
    first = client.append_result(key, _event("e1"))
    client.projection(key, first.offset, timeout_s=READ_TIMEOUT_S)
    assert client.append_results(key, [_event("e1")]) == [AppendResult(first.offset, True)]


async def test_without_a_projector_appends_go_on_and_copies_are_written(
    kafka_bootstrap: str,
) -> None:
    settings = await create_topics_for(
        kafka_bootstrap, unique_topic("nodup"), events_partitions=1, partitions=1
    )
    key = _key()
    async with Client(settings=settings) as client:
        began = time.monotonic()
        first = await client.append_result(key, _event("e1"))
        again = await client.append_result(key, _event("e1"))
        spent = time.monotonic() - began
    assert (first.duplicate, again.duplicate) == (False, False)
    assert again.offset > first.offset
    # No owner to ask: the lookup gives up at once, not after its timeout.
    assert spent < settings.duplicate_lookup_timeout_s
    assert await _session_offsets(settings, key) == [first.offset, again.offset]


async def test_with_the_lookup_off_a_copy_is_written_and_the_fold_drops_it(
    deployment: ProjectorSettings,
) -> None:
    key = _key()
    settings = deployment.model_copy(update={"duplicate_lookup_timeout_s": 0.0})
    async with Client(settings=settings) as client:
        first = await _stored(client, key)
        again = await client.append_result(key, _event("e1"))
        assert again.duplicate is False
        assert again.offset > first
        contents = await client.context(
            key, agent="helper", min_offset=again.offset, timeout_s=READ_TIMEOUT_S
        )
    assert [content.parts[0].text for content in contents if content.parts] == ["hello"]


async def test_the_owners_stored_events_route_answers_ids_and_offsets_and_refuses_bad_bodies(
    deployment: ProjectorSettings,
) -> None:
    key = _key()
    async with Client(settings=deployment) as client:
        offset = await _stored(client, key)
    partition = session_partition(key.encode(), deployment.events_partitions)
    claim = (await claims(deployment)).owner(partition)
    assert claim is not None
    url = URL(f"http://{claim.address}{read_path(key, 'stored-events')}", encoded=True)
    stored = event_digest(Event.model_validate(_event("e1")))
    other = event_digest(Event.model_validate(_event("e1", text="other")))
    credential = {"Authorization": read_keys(deployment).authorization}

    async def ask(body: object, headers: dict[str, str]) -> tuple[int, bytes]:
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, data=orjson.dumps(body), headers=headers) as response,
        ):
            return response.status, await response.read()

    status, body = await ask({"digests": {"e1": stored, "e9": stored}}, credential)
    assert status == 200, body
    answer = StoredEvents.model_validate_json(body)
    assert (answer.session_key, answer.stored) == (key, {"e1": offset})
    status, body = await ask({"digests": {"e1": other}}, credential)
    assert StoredEvents.model_validate_json(body).stored == {}
    status, body = await ask({"ids": ["e1"]}, credential)
    assert (status, orjson.loads(body)["error"]) == (400, "invalid-parameter")
    status, _ = await ask({"digests": {"e1": stored}}, {})
    assert status == 401
