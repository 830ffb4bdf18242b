"""The HTTP API's budgets over real HTTP: each refused past its limit, the other tenants served.

One deployment served by a native worker whose sessions may hold only a few
records (``SESSION_MAX_BYTES``), and one ``ctxstream serve`` with small
budgets, so that each is reached in a few requests. A noisy tenant at each
limit is answered 429 with ``Retry-After`` (or 413 for a body) naming the
setting, while a quiet tenant's request at the same moment is answered.
Review probes: P1 (raw fork records), P2 (parked reads), P6 (a batch of
200,000 events) and N-M5 (appends past a session's size cap).

Parked reads wait for a record of a transaction left open on partition
:data:`STALLED` (an offset below the partition's end, so not refused as
unwritten, that a ``read_committed`` worker cannot fold until the
transaction ends); every other session of the module is kept off it.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
import orjson
import pytest
from aiokafka import AIOKafkaProducer

from ctxstream.appends.event_records import event_record
from schemas.json_bounds import INT64_MAX
from schemas.kafka.partitioning import session_partition
from streams.projector_settings import ProjectorSettings
from tests.conftest import free_ports, unique_topic
from tests.support.http_api import create_key, start_server
from tests.support.kafka import stop_worker, wait_for
from tests.support.read_worker import serving_worker

pytestmark = pytest.mark.integration

TENANTS: Final = ("acme", "evil", "globex", "hooli", "initech", "umbrella", "bulky")
#: The server's budgets: small, so that each is reached within a few requests.
BUDGETS: Final = {
    "http_tenant_max_reads": "2",
    "http_max_reads": "3",
    "http_tenant_max_subscriptions": "1",
    "http_max_subscriptions": "2",
    "http_max_batch_events": "50",
    "http_max_batch_bytes": "1048576",
    "http_tenant_append_events_per_s": "20",
    "http_tenant_append_bytes_per_s": "100000",
    "http_tenant_forks_per_minute": "2",
    "http_tenant_heavy_read_bytes_per_s": "1024",  # one heavy read, then 64 s of debt
}
#: About six small records of a session fit (each is estimated at ~7 KB).
SESSION_MAX_BYTES: Final = 50_000
#: The deployment's `events` partitions (the test settings' count).
PARTITIONS: Final = 4
#: The partition whose reads are parked; no other session of the module is on it.
STALLED: Final = 0
PARKED_S: Final = 45.0  # a parked read's own timeout_s: it answers 504 then
PROBE_S: Final = 1.0  # a read sent to be refused, which waits this long if it is not
ANSWER_TIMEOUT_S: Final = 30.0  # one read of a worker sharing two cores with the test
CAP_SEEN_WITHIN_S: Final = 60.0  # the letter folded, committed, and read by the server
#: Any one request's bound: a subscription answered 200 where 429 is expected never ends.
CALL_TIMEOUT = aiohttp.ClientTimeout(total=PARKED_S + ANSWER_TIMEOUT_S)


@dataclass(frozen=True)
class Door:
    """Where the module's server answers, and a key of each tenant."""

    url: str
    keys: dict[str, str]
    settings: ProjectorSettings


@pytest.fixture(scope="module")
def door(kafka_bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    """``ctxstream serve`` with :data:`BUDGETS` over a worker with a tiny session cap."""
    folder = tmp_path_factory.mktemp("budgets")
    with serving_worker(
        kafka_bootstrap, folder, "budgets", session_max_bytes=SESSION_MAX_BYTES
    ) as deployment:
        assert deployment.events_partitions == PARTITIONS
        keys = {tenant: create_key(deployment, tenant) for tenant in TENANTS}
        server = start_server(deployment, free_ports(1)[0], folder / "serve.log", **BUDGETS)
        try:
            yield Door(server.url, keys, deployment)
        finally:
            stop_worker(server.process)


@dataclass(frozen=True)
class Answer:
    """A status, its headers and the JSON body."""

    status: int
    headers: dict[str, str]
    body: Any


async def call(
    door: Door,
    tenant: str,
    method: str,
    path: str,
    *,
    body: Any = None,
    raw: bytes | None = None,
    params: dict[str, str] | None = None,
) -> Answer:
    """One request of `tenant`'s; what was answered."""
    headers = {"Authorization": f"Bearer {door.keys[tenant]}"}
    # A large body is streamed from a file-like object, as aiohttp asks.
    data = (
        io.BytesIO(raw) if raw is not None else (orjson.dumps(body) if body is not None else None)
    )
    async with (
        aiohttp.ClientSession(timeout=CALL_TIMEOUT) as http,
        http.request(
            method, f"{door.url}{path}", data=data, params=params, headers=headers
        ) as response,
    ):
        text = await response.read()
        return Answer(response.status, dict(response.headers), orjson.loads(text) if text else None)


def _key(tenant: str, *, stalled: bool = False) -> str:
    """A new session key of `tenant`'s, on partition :data:`STALLED` or (by default) off it."""
    while True:
        key = f"{tenant}/support/{unique_topic('u')}/s"
        on_stalled = session_partition(key.encode(), PARTITIONS) == STALLED
        if on_stalled == stalled:
            return key


def _event(text: str = "hello", **fields: Any) -> dict[str, Any]:
    return {
        "author": "user",
        "timestamp": time.time(),
        "content": {"role": "user", "parts": [{"text": text}]},
        **fields,
    }


def _refused(answer: Answer, status: int, setting: str) -> None:
    assert answer.status == status, answer
    assert setting in answer.body["reason"], answer.body
    if status == 429:
        assert answer.body["error"] == "over-budget"
        assert int(answer.headers["Retry-After"]) >= 1


async def _served(door: Door, tenant: str) -> None:
    """`tenant` appends and reads its write back (read-your-writes)."""
    key = _key(tenant)
    appended = await call(door, tenant, "POST", f"/v1/sessions/{key}/events", body=_event())
    assert appended.status == 200, appended
    params = {"min_offset": str(appended.body["offset"]), "timeout_s": str(ANSWER_TIMEOUT_S)}
    read = await call(door, tenant, "GET", f"/v1/sessions/{key}/projection", params=params)
    assert read.status == 200, read
    assert read.body["last_offset"] == appended.body["offset"]


@contextlib.asynccontextmanager
async def _stalled(door: Door) -> AsyncIterator[int]:
    """Partition :data:`STALLED` held by an open transaction; the offset of its record."""
    producer = AIOKafkaProducer(
        bootstrap_servers=door.settings.kafka_bootstrap,
        transactional_id=unique_topic("open-transaction"),
    )
    await producer.start()
    try:
        await producer.begin_transaction()
        key, value = event_record(_key("evil", stalled=True), _event(), producer_id="stall")
        written = await producer.send_and_wait(door.settings.topic("events"), value, key=key)
        assert written.partition == STALLED
        yield written.offset
    finally:
        with contextlib.suppress(Exception):
            await producer.abort_transaction()
        await producer.stop()


def _park(
    door: Door, tenant: str, offset: int, timeout_s: float = PARKED_S
) -> asyncio.Task[Answer]:
    """A read of `tenant`'s on the stalled partition that waits for `offset`, for `timeout_s`."""
    params = {"min_offset": str(offset), "timeout_s": str(timeout_s)}
    path = f"/v1/sessions/{_key(tenant, stalled=True)}/context"
    return asyncio.create_task(call(door, tenant, "GET", path, params=params))


async def _refused_read(door: Door, tenant: str, offset: int, setting: str) -> Answer:
    """Read as `tenant` until the reads parked before are held and this one is refused."""
    refused: list[Answer] = []

    async def is_refused() -> bool:
        refused.append(await _park(door, tenant, offset, PROBE_S))
        return refused[-1].status == 429

    try:
        await wait_for(f"a read of {tenant} refused", is_refused, ANSWER_TIMEOUT_S)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the last answer: {refused[-1]}") from exc
    _refused(refused[-1], 429, setting)
    return refused[-1]


async def test_parked_reads_spend_their_tenants_slots_and_the_servers(door: Door) -> None:
    """P2: a tenant's parked reads are refused past its budget; another tenant still reads."""
    async with _stalled(door) as offset:
        parked = [_park(door, "evil", offset) for _ in range(2)]
        try:
            await _refused_read(door, "evil", offset, "HTTP_TENANT_MAX_READS")
        except AssertionError as exc:
            ended = [task.result() for task in parked if task.done()]
            raise AssertionError(f"{exc}; parked reads that ended: {ended}") from exc
        await _served(door, "acme")  # at the same moment
        parked.append(_park(door, "globex", offset))  # the server's third and last
        await asyncio.sleep(1.0)  # it holds its slot before anyone asks for another
        assert not parked[-1].done(), parked[-1].result()
        await _refused_read(door, "hooli", offset, "HTTP_MAX_READS")
        answers = await asyncio.gather(*parked)
        assert [answer.status for answer in answers] == [504, 504, 504]
    await _served(door, "hooli")  # the slots came back


@contextlib.asynccontextmanager
async def _subscribed(door: Door, tenant: str) -> AsyncIterator[int]:
    """A subscription of `tenant`'s held open while the block runs; its status."""
    headers = {"Authorization": f"Bearer {door.keys[tenant]}"}
    url = f"{door.url}/v1/tenants/{tenant}/projections:subscribe"
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
        if response.status != 200:
            await response.read()
        yield response.status


async def test_subscriptions_per_tenant_and_per_server(door: Door) -> None:
    async with _subscribed(door, "evil") as first:
        assert first == 200
        second = await call(door, "evil", "GET", "/v1/tenants/evil/projections:subscribe")
        _refused(second, 429, "HTTP_TENANT_MAX_SUBSCRIPTIONS")
        async with _subscribed(door, "acme") as quiet:
            assert quiet == 200  # another tenant at the same moment
            third = await call(door, "globex", "GET", "/v1/tenants/globex/projections:subscribe")
            _refused(third, 429, "HTTP_MAX_SUBSCRIPTIONS")
    statuses: list[int] = []

    async def opens_again() -> bool:
        async with _subscribed(door, "evil") as status:
            statuses.append(status)
        return status == 200

    # The closed subscriptions gave their slots back once the server saw them go.
    await wait_for("evil's slot back", opens_again, ANSWER_TIMEOUT_S)


async def test_a_batch_over_its_events_or_bytes_is_413(door: Door) -> None:
    path = f"/v1/sessions/{_key('evil')}/events:batch"
    answer = await call(door, "evil", "POST", path, body={"events": [_event()] * 51})
    _refused(answer, 413, "HTTP_MAX_BATCH_EVENTS")
    huge = orjson.dumps({"events": [_event("x" * 100_000) for _ in range(11)]})
    answer = await call(door, "evil", "POST", path, raw=huge)
    _refused(answer, 413, "HTTP_MAX_BATCH_BYTES")


async def test_a_batch_of_200000_events_is_refused_at_once_and_others_served(door: Door) -> None:
    """P6: refused 413 as its body arrives, never validated; another tenant is served meanwhile."""
    body = orjson.dumps({"events": [{"author": "user", "timestamp": 1}] * 200_000})
    path = f"/v1/sessions/{_key('evil')}/events:batch"
    big, _ = await asyncio.gather(call(door, "evil", "POST", path, raw=body), _served(door, "acme"))
    _refused(big, 413, "HTTP_MAX_BATCH_BYTES")


async def test_appended_events_past_the_tenants_rate_are_429(door: Door) -> None:
    path = f"/v1/sessions/{_key('hooli')}/events:batch"
    burst = await call(door, "hooli", "POST", path, body={"events": [_event()] * 50})
    assert burst.status == 200, burst
    # Another session: the first is over its size cap now.
    path = f"/v1/sessions/{_key('hooli')}/events:batch"
    again = await call(door, "hooli", "POST", path, body={"events": [_event()] * 50})
    _refused(again, 429, "HTTP_TENANT_APPEND_EVENTS_PER_S")
    await _served(door, "acme")


async def test_appended_bytes_past_the_tenants_rate_are_429(door: Door) -> None:
    big = _event("x" * 600_000)
    first = await call(door, "initech", "POST", f"/v1/sessions/{_key('initech')}/events", body=big)
    assert first.status == 200, first
    # Another session: the first may be over its size cap by now.
    again = await call(door, "initech", "POST", f"/v1/sessions/{_key('initech')}/events", body=big)
    _refused(again, 429, "HTTP_TENANT_APPEND_BYTES_PER_S")
    await _served(door, "acme")


async def _fork(door: Door, tenant: str) -> Answer:
    source = _key(tenant)
    appended = await call(door, tenant, "POST", f"/v1/sessions/{source}/events", body=_event())
    assert appended.status == 200, appended
    asked = {"at_offset": appended.body["offset"], "new_session_key": _key(tenant)}
    return await call(door, tenant, "POST", f"/v1/sessions/{source}/fork", body=asked)


async def test_forks_past_the_tenants_rate_are_429(door: Door) -> None:
    for _ in range(2):
        forked = await _fork(door, "umbrella")
        assert forked.status == 200, forked
    _refused(await _fork(door, "umbrella"), 429, "HTTP_TENANT_FORKS_PER_MINUTE")
    forked = await _fork(door, "acme")  # another tenant's, at the same moment
    assert forked.status == 200, forked


FORK_OF_ACME: Final = {
    "id": "f9",
    "author": "ctxstream",
    "timestamp": 1,
    "customMetadata": {"ctxstream": {"fork_of": {"session_key": "acme/app/u1/s1", "offset": 0}}},
}


@pytest.mark.parametrize(
    "event",
    [
        FORK_OF_ACME,
        {
            **FORK_OF_ACME,
            "customMetadata": {
                "ctxstream": {"fork_of": {"session_key": "evil/app/u1/s1", "offset": INT64_MAX}}
            },
        },
        {**FORK_OF_ACME, "author": "user"},
        {"author": "ctxstream", "timestamp": 1},
    ],
    ids=["another-tenants-source", "offset-int64-max", "user-authored", "bookkeeping-author"],
)
async def test_raw_fork_and_bookkeeping_records_are_refused(
    door: Door, event: dict[str, Any]
) -> None:
    """P1: the append routes refuse the pipeline's own records (forks go through /fork)."""
    key = "evil/app/u1/f9"
    one = await call(door, "evil", "POST", f"/v1/sessions/{key}/events", body=event)
    assert one.status == 422, one
    assert "ctxstream" in one.body["reason"], one.body
    batch = {"events": [_event(), event]}
    many = await call(door, "evil", "POST", f"/v1/sessions/{key}/events:batch", body=batch)
    assert many.status == 422, many
    assert many.body["reason"].startswith("events[1]: "), many.body


async def test_appends_past_a_sessions_size_cap_are_409(door: Door) -> None:
    """N-M5: once the projector dead-letters a session for its size, the door refuses it."""
    key = _key("bulky")
    path = f"/v1/sessions/{key}/events"
    filled = await call(door, "bulky", "POST", f"{path}:batch", body={"events": [_event()] * 20})
    assert filled.status == 200, filled
    answers: list[Answer] = []

    async def refused() -> bool:
        answers.append(await call(door, "bulky", "POST", path, body=_event()))
        assert answers[-1].status in (200, 409), answers[-1]
        return answers[-1].status == 409

    await wait_for("an append refused for the session's size", refused, CAP_SEEN_WITHIN_S)
    assert answers[-1].body["error"] == "session-over-size-cap"
    assert "SESSION_MAX_BYTES" in answers[-1].body["reason"]
    assert key in answers[-1].body["reason"]
    rewind = await call(
        door, "bulky", "POST", f"/v1/sessions/{key}/rewind", body={"before_invocation_id": "i"}
    )
    assert rewind.status == 409, rewind
    await _served(door, "bulky")  # another session of the same tenant


async def test_heavy_reads_are_paid_for_in_answer_bytes(door: Door) -> None:
    """An as-of read costs its answer's bytes (64 KiB at least): past the rate, 429."""
    key = _key("umbrella")
    appended = await call(door, "umbrella", "POST", f"/v1/sessions/{key}/events", body=_event())
    assert appended.status == 200, appended
    path = f"/v1/sessions/{key}/context"
    params = {"as_of": str(appended.body["offset"]), "timeout_s": str(ANSWER_TIMEOUT_S)}
    first = await call(door, "umbrella", "GET", path, params=params)
    assert first.status == 200, first
    assert [c["parts"][0]["text"] for c in first.body["contents"]] == ["hello"]
    again = await call(door, "umbrella", "GET", path, params=params)
    _refused(again, 429, "HTTP_TENANT_HEAVY_READ_BYTES_PER_S")
    assert int(again.headers["Retry-After"]) > 30  # 64 KiB owed at 1 KiB/s
    await _served(door, "acme")  # another tenant at the same moment
