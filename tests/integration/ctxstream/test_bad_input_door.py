"""The generated bad inputs at the front door: each refused with its reason, nothing written.

The records of :mod:`tests.support.bad_records` (seed and count as the broker
test's, :mod:`tests.integration.test_bad_input`) that a caller can send: every
one whose flaw lies in the event itself goes through :meth:`ctxstream.Client.append`
(a Python mapping: random bytes, cut JSON and invalid UTF-8 cannot be one), and a
sample of every class through ``POST /v1/sessions/{key}/events`` as the bytes a
caller would send. The flaws of the envelope (schema version, record key, tenant
field) are the client's own to write, so a caller cannot send them; at the door
their counterpart is another tenant's session and an invalid session key, which
are sent too. Each is refused naming what is wrong, and the `events` topic's end
offsets are the same after as before.
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
import orjson
import pytest
from yarl import URL

from ctxstream import Client
from ctxstream.errors import InvalidEventError
from schemas.creation_mark import creation_event
from schemas.deletion_mark import deletion_event
from schemas.event import event_to_json
from streams.projector_settings import ProjectorSettings
from tests.conftest import free_ports, unique_topic
from tests.support.bad_records import FLAWS, BadRecord, DoorInput, bad_events
from tests.support.http_api import Server, create_key, start_server
from tests.support.kafka import (
    create_deployment_topics,
    end_offsets,
    projector_settings,
    stop_worker,
)

pytestmark = pytest.mark.integration

SEED: Final = 27
COUNT: Final = 10_000
EVENTS_PARTITIONS: Final = 4
#: HTTP requests per flaw class (of the tenant the sample's key belongs to).
HTTP_PER_CLASS: Final = 16
TENANT: Final = "bt0"
OTHER_TENANT: Final = "bt1"
#: The classes whose flaw is in the envelope, which the client writes itself.
ENVELOPE_FLAWS: Final = frozenset({"unknown-schema-version", "mismatched-key"})
#: The classes a Python mapping cannot carry.
NOT_A_MAPPING: Final = frozenset({"random-bytes", "truncated-json", "invalid-utf8"})


@dataclass(frozen=True)
class Door:
    """A deployment with no worker, its HTTP API and a key of two tenants."""

    settings: ProjectorSettings
    server: Server
    keys: dict[str, str]


@pytest.fixture(scope="module")
def door(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    """``ctxstream serve`` over fresh topics; append budgets no sample reaches."""
    folder = tmp_path_factory.mktemp("bad-door")
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("door"),
        data_dir=folder,
        events_partitions=EVENTS_PARTITIONS,
        duplicate_lookup_timeout_s=0.0,
    )
    asyncio.run(create_deployment_topics(settings))
    keys = {tenant: create_key(settings, tenant) for tenant in (TENANT, OTHER_TENANT)}
    server = start_server(
        settings,
        free_ports(1)[0],
        folder / "serve.log",
        http_tenant_append_events_per_s="1000000",
        http_tenant_append_bytes_per_s=str(1 << 30),
    )
    try:
        yield Door(settings, server, keys)
    finally:
        stop_worker(server.process)


def _records() -> list[BadRecord]:
    return bad_events(SEED, COUNT, partitions=EVENTS_PARTITIONS)


def _forged_well_formed() -> list[tuple[str, dict[str, Any], str]]:
    """The pipeline's own records, well formed: the fold would take them, the door must not.

    Each with a phrase of its refusal: a creation record is the client's
    ``create_if_absent`` to write, conditional, so an unconditional one is malformed.
    """
    fork = {
        **good_event_for("fork"),
        "author": "ctxstream",
        "customMetadata": {"ctxstream": {"fork_of": {"session_key": "bt0/a/u/s", "offset": 0}}},
    }
    refusal = {
        **good_event_for("refusal"),
        "author": "ctxstream",
        "customMetadata": {"ctxstream": {"compaction_refused": "r1"}},
    }
    del fork["content"], refusal["content"]
    as_user = {
        **good_event_for("namespace"),
        "customMetadata": {"ctxstream": {"compaction_refused": "r1"}},
    }
    own = "pipeline's own"
    return [
        ("fork", fork, own),
        ("refusal", refusal, own),
        ("deletion", event_to_json(deletion_event(event_id="d1", timestamp=1.0)), own),
        (
            "creation",
            event_to_json(creation_event(event_id="c1", timestamp=1.0, state={})),
            "expected_offset must be -1",
        ),
        ("namespace-by-user", as_user, own),
    ]


def good_event_for(name: str) -> dict[str, Any]:
    """A plain user event whose id names `name`."""
    return {**good_event_plain(), "id": f"forged-{name}"}


def good_event_plain() -> dict[str, Any]:
    """A plain user event of the generator's shape."""
    return {
        "id": "good",
        "invocationId": "inv-good",
        "author": "user",
        "timestamp": 1_764_480_000.0,
        "content": {"role": "user", "parts": [{"text": "a good question"}]},
    }


async def test_the_client_refuses_every_bad_event_naming_it_and_writes_nothing(
    door: Door,
) -> None:
    bootstrap, events = door.settings.kafka_bootstrap, door.settings.topic("events")
    records = [r for r in _records() if r.door is not None and r.door.event is not None]
    before = await end_offsets(bootstrap, events)
    refused: Counter[str] = Counter()
    async with Client(settings=door.settings) as client:
        for record in records:
            entry = record.door
            assert entry is not None
            assert entry.event is not None
            with pytest.raises(InvalidEventError) as caught:
                await client.append(entry.session_key, entry.event)
            reason = str(caught.value)
            assert entry.phrase in reason, (record.flaw, record.variant, reason)
            assert "\n" not in reason
            refused[record.flaw] += 1
            if refused[record.flaw] <= 3:  # one bad event in a batch: none of it is sent
                batch = [good_event_plain(), entry.event, {**good_event_plain(), "id": "g2"}]
                with pytest.raises(InvalidEventError, match=r"^events\[1\]: "):
                    await client.append_many(entry.session_key, batch)
        for name, event, phrase in _forged_well_formed():
            with pytest.raises(InvalidEventError) as caught:
                await client.append(f"{TENANT}/app/u1/s1", event)
            assert phrase in str(caught.value), (name, str(caught.value))
            refused[f"forged-{name}"] += 1
    assert await end_offsets(bootstrap, events) == before
    expressible = set(FLAWS) - ENVELOPE_FLAWS - NOT_A_MAPPING
    assert expressible <= set(refused), refused
    assert sum(refused.values()) == len(records) + len(_forged_well_formed())


async def _post(door: Door, tenant: str, session_key: str, body: bytes) -> tuple[int, Any]:
    """``POST /v1/sessions/{session_key}/events`` with `body` as sent; status and JSON answer."""
    url = URL(f"{door.server.url}/v1/sessions/{session_key}/events", encoded=False)
    headers = {"Authorization": f"Bearer {door.keys[tenant]}", "Content-Type": "application/json"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(url, data=body, headers=headers) as response,
    ):
        return response.status, orjson.loads(await response.read())


def _json_object(body: bytes) -> bool:
    try:
        return isinstance(orjson.loads(body), dict)
    except orjson.JSONDecodeError:
        return False


async def test_the_http_api_refuses_a_sample_of_every_class_and_writes_nothing(
    door: Door,
) -> None:
    bootstrap, events = door.settings.kafka_bootstrap, door.settings.topic("events")
    sample: dict[str, list[DoorInput]] = defaultdict(list)
    for record in _records():
        entry = record.door
        if entry is None or not entry.session_key.startswith(f"{TENANT}/"):
            continue
        if len(sample[record.flaw]) < HTTP_PER_CLASS:
            sample[record.flaw].append(entry)
    assert set(sample) == set(FLAWS) - ENVELOPE_FLAWS
    before = await end_offsets(bootstrap, events)
    for flaw, entries in sample.items():
        for entry in entries:
            status, answer = await _post(door, TENANT, entry.session_key, entry.body)
            if _json_object(entry.body):
                assert (status, answer["error"]) == (422, "invalid-argument"), (flaw, answer)
                assert entry.phrase in answer["reason"], (flaw, answer)
            else:
                assert (status, answer["error"]) == (400, "invalid-json"), (flaw, answer)
                assert "not JSON" in answer["reason"], (flaw, answer)
    for name, event, phrase in _forged_well_formed():
        status, answer = await _post(door, TENANT, f"{TENANT}/app/u1/s1", orjson.dumps(event))
        assert (status, answer["error"]) == (422, "invalid-argument"), (name, answer)
        assert phrase in answer["reason"], (name, answer)
    # The envelope's flaws as a caller meets them: another tenant's session, a bad key.
    good = orjson.dumps(good_event_plain())
    status, answer = await _post(door, OTHER_TENANT, f"{TENANT}/app/u1/s1", good)
    assert (status, answer["error"]) == (403, "forbidden"), answer
    status, answer = await _post(door, TENANT, f"{TENANT}/app/u1/{'p' * 129}", good)
    assert (status, answer["error"]) == (422, "invalid-argument"), answer
    assert "session_key" in answer["reason"], answer
    assert await end_offsets(bootstrap, events) == before
