"""The HTTP API (``ctxstream serve``) over real HTTP, against a real native worker and broker.

One deployment served by one worker process (``python -m ctxstream worker``;
the package's ``deployment``) and one server process (``python -m ctxstream
serve``) for the module; keys are made with ``ctxstream keys create``. Reads
are checked against the plain rebuild
(:func:`projections.fold.rebuild.rebuild_contents`) of what the log holds, and
subscriptions against the records of the `projections` topic.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import secrets
import signal
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import aiohttp
import orjson
import pytest
from aiokafka import AIOKafkaProducer
from hypothesis import HealthCheck, given, settings
from yarl import URL

from ctxstream.api.keys import ApiKeyRecord, key_id_of, secret_matches
from ctxstream.api.positions import parse_position
from ctxstream.api.settings import ServeSettings
from projections.contents.contents_request import ContentsRequest
from projections.contents.snapshot import context_fingerprint
from projections.fold.rebuild import rebuild_contents
from schemas.event import Event, content_to_json, event_to_json
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings
from tests.conftest import free_ports, unique_topic
from tests.support.events import logged_event, summary_event, text_event
from tests.support.http_api import (
    Server,
    SseEvent,
    create_key,
    ctxstream_command,
    sse_events,
    start_server,
)
from tests.support.kafka import (
    latest_snapshots,
    read_log,
    read_topic,
    stop_worker,
    wait_for,
)
from tests.support.next_agent_oracle import expected_view_request
from tests.support.read_worker import VIEW_AGENT
from tests.support.strategies import sessions

pytestmark = pytest.mark.integration

READ_TIMEOUT_S: Final = 30.0  # one batch of a worker sharing two cores with the test
STREAM_TIMEOUT_S: Final = 60.0  # snapshots folded, committed and read by the subscription
REVOKED_WITHIN_S: Final = 15.0  # the server follows the keys topic; "within seconds"
STOP_WITHIN_S: Final = 4.0  # below HTTP_SHUTDOWN_S (5 s): streams end, they are not cancelled
MAX_BODY_BYTES: Final = 1_200_000
GENERATED = settings(
    max_examples=3,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
VIEW = ContentsRequest(agent_name=VIEW_AGENT)


@dataclass(frozen=True)
class Api:
    """The module's deployment (the package's worker-served one), its server and two keys."""

    settings: ProjectorSettings
    server: Server
    keys: dict[str, str]


@pytest.fixture(scope="module")
def api(deployment: ProjectorSettings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """``ctxstream serve`` of the module's deployment, with a key of acme and one of globex."""
    folder = tmp_path_factory.mktemp("http-api")
    keys = {tenant: create_key(deployment, tenant) for tenant in ("acme", "globex")}
    server = start_server(
        deployment, free_ports(1)[0], folder / "serve.log", http_max_body_bytes=str(MAX_BODY_BYTES)
    )
    try:
        yield Api(deployment, server, keys)
    finally:
        stop_worker(server.process)


# -- calling the server -------------------------------------------------------


async def call(
    api: Api,
    method: str,
    path: str,
    *,
    tenant: str | None = "acme",
    key: str | None = None,
    body: Any = None,
    raw: bytes | None = None,
    params: dict[str, str] | None = None,
) -> tuple[int, Any]:
    """One request (path sent as it is, unnormalized); the status and the JSON answered."""
    secret = key if key is not None else (api.keys[tenant] if tenant else None)
    headers = {"Authorization": f"Bearer {secret}"} if secret else {}
    # A large body is streamed from a file-like object, as aiohttp asks.
    data = (
        io.BytesIO(raw) if raw is not None else (orjson.dumps(body) if body is not None else None)
    )
    url = URL(f"{api.server.url}{path}", encoded=True)
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, data=data, params=params, headers=headers) as response,
    ):
        text = await response.read()
        return response.status, orjson.loads(text) if text else None


def _key(tenant: str = "acme") -> SessionKey:
    return SessionKey(f"{tenant}/support/{unique_topic('u')}/s")


def _contents(records: list[LoggedEvent], request: ContentsRequest = VIEW) -> list[Any]:
    return [content_to_json(content) for content in rebuild_contents(records, request)]


def _invocation(invocation: int, first_timestamp: float) -> list[Event]:
    inv = f"inv{invocation}"
    return [
        text_event(f"{inv}-q", inv, first_timestamp, f"question {invocation}"),
        text_event(f"{inv}-a", inv, first_timestamp + 1, f"answer {invocation}", author=VIEW_AGENT),
    ]


async def append_events(api: Api, key: SessionKey, events: list[Event]) -> list[LoggedEvent]:
    """`events` appended in one batch, as they are logged."""
    body = {"events": [event_to_json(event) for event in events]}
    tenant = key.split("/")[0]
    path = f"/v1/sessions/{key}/events:batch"
    status, answer = await call(api, "POST", path, tenant=tenant, body=body)
    assert status == 200, answer
    offsets = answer["offsets"]
    return [logged_event(key, e, o) for e, o in zip(events, offsets, strict=True)]


# -- appends and reads --------------------------------------------------------


@GENERATED
@given(log=sessions(max_invocations=3))
def test_every_append_is_read_back_with_read_your_writes_as_the_rebuild(
    api: Api, log: list[LoggedEvent]
) -> None:
    asyncio.run(_append_and_read_each(api, [each.envelope.event for each in log]))


async def _append_and_read_each(api: Api, events: list[Event]) -> None:
    key = _key()
    appended: list[LoggedEvent] = []
    for event in events:
        status, answer = await call(
            api, "POST", f"/v1/sessions/{key}/events", body=event_to_json(event)
        )
        assert status == 200, answer
        offset = answer["offset"]
        appended.append(logged_event(key, event, offset))
        wait = {"min_offset": str(offset), "timeout_s": str(READ_TIMEOUT_S)}

        status, answer = await call(api, "GET", f"/v1/sessions/{key}/context", params=wait)
        assert status == 200, answer
        # Without `agent`: the agent the session's router runs next, as the oracle picks it.
        view = expected_view_request(appended, VIEW)
        assert answer == {"contents": _contents(appended, view)}, f"after offset {offset}"
        status, snapshot = await call(api, "GET", f"/v1/sessions/{key}/projection", params=wait)
        assert status == 200, snapshot
        assert snapshot["session_key"] == key
        assert snapshot["last_offset"] == offset
        expected = rebuild_contents(appended, view)
        assert snapshot["context_fingerprint"] == context_fingerprint(expected)


async def test_a_batch_is_appended_in_order_and_read_for_other_agents(
    api: Api,
) -> None:
    key = _key()
    events = [e for n in (1, 2, 3) for e in _invocation(n, 100.0 + 10 * n)]
    encoded = key.replace("/", "%2F")  # the key as one path segment works as well
    body = {"events": [event_to_json(event) for event in events]}
    status, answer = await call(api, "POST", f"/v1/sessions/{encoded}/events:batch", body=body)
    assert status == 200, answer
    offsets = answer["offsets"]
    assert len(offsets) == len(events)
    assert offsets == sorted(offsets)
    assert len(set(offsets)) == len(offsets)
    log = (await read_log(api.settings.kafka_bootstrap, api.settings.topic("events")))[key]
    assert [(r.offset, r.envelope.event) for r in log] == list(zip(offsets, events, strict=True))

    appended = [logged_event(key, e, o) for e, o in zip(events, offsets, strict=True)]
    for request, params in (
        (VIEW, {}),
        (
            ContentsRequest(agent_name="helper", current_branch="root.helper"),
            {"agent": "helper", "branch": "root.helper"},
        ),
        (
            ContentsRequest(agent_name=VIEW_AGENT, include_contents="none"),
            {"agent": VIEW_AGENT, "include_contents": "none"},
        ),
    ):
        wait = {"min_offset": str(offsets[-1]), "timeout_s": str(READ_TIMEOUT_S), **params}
        status, answer = await call(api, "GET", f"/v1/sessions/{encoded}/context", params=wait)
        assert status == 200, answer
        assert answer == {"contents": _contents(appended, request)}, params
    status, snapshot = await call(
        api, "GET", f"/v1/sessions/{key}/projection", params={"min_offset": str(offsets[-1])}
    )
    assert (status, snapshot["last_offset"], snapshot["invocations_total"]) == (200, offsets[-1], 3)


async def test_a_rewind_changes_the_context_as_the_rebuild_of_the_log_says(
    api: Api,
) -> None:
    key = _key()
    appended = await append_events(
        api, key, [*_invocation(1, 100.0), *_invocation(2, 110.0), *_invocation(3, 120.0)]
    )
    rewind_body = {"before_invocation_id": "inv2", "min_offset": appended[-1].offset}
    status, answer = await call(api, "POST", f"/v1/sessions/{key}/rewind", body=rewind_body)
    assert status == 200, answer
    rewind_offset = answer["offset"]
    assert rewind_offset > appended[-1].offset

    log = (await read_log(api.settings.kafka_bootstrap, api.settings.topic("events")))[key]
    rewind = log[-1].envelope.event
    assert log[-1].offset == rewind_offset
    assert (rewind.author, rewind.actions.rewind_before_invocation_id) == ("user", "inv2")
    assert rewind.invocation_id.startswith("e-")
    wait = {"min_offset": str(rewind_offset), "timeout_s": str(READ_TIMEOUT_S)}
    status, answer = await call(api, "GET", f"/v1/sessions/{key}/context", params=wait)
    assert status == 200, answer
    assert answer == {"contents": _contents(log)}
    # What the rebuild says is that only the first invocation is left.
    assert answer == {"contents": _contents(appended[:2])}
    assert answer != {"contents": _contents(appended)}

    for refused in ({"before_invocation_id": ""}, {"before_invocation_id": 7}, {}, {"x": "inv1"}):
        status, answer = await call(api, "POST", f"/v1/sessions/{key}/rewind", body=refused)
        assert (status, answer["error"]) == (422, "invalid-argument"), refused
    unknown = {"before_invocation_id": "nowhere", "min_offset": rewind_offset}
    status, answer = await call(api, "POST", f"/v1/sessions/{key}/rewind", body=unknown)
    assert (status, answer["error"]) == (404, "invocation-not-found"), answer
    log_after = (await read_log(api.settings.kafka_bootstrap, api.settings.topic("events")))[key]
    assert len(log_after) == len(log)  # nothing refused was appended


async def test_a_fork_reads_as_its_source_up_to_the_offset_then_its_own(api: Api) -> None:
    key, fork = _key(), _key()
    appended = await append_events(api, key, [*_invocation(1, 100.0), *_invocation(2, 110.0)])
    body = {"at_offset": appended[1].offset, "new_session_key": fork}
    status, answer = await call(api, "POST", f"/v1/sessions/{key}/fork", body=body)
    assert status == 200, answer
    fork_offset = answer["offset"]
    own = await append_events(api, fork, _invocation(3, 120.0))
    wait = {"min_offset": str(own[-1].offset), "timeout_s": str(READ_TIMEOUT_S)}
    status, answer = await call(api, "GET", f"/v1/sessions/{fork}/context", params=wait)
    assert status == 200, answer
    line = [*appended[:2], *own]
    renumbered = [LoggedEvent(Offset(n), record.envelope) for n, record in enumerate(line)]
    assert answer == {"contents": _contents(renumbered)}
    log = (await read_log(api.settings.kafka_bootstrap, api.settings.topic("events")))[fork]
    assert [record.offset for record in log] == [fork_offset, *(r.offset for r in own)]

    again = await call(api, "POST", f"/v1/sessions/{key}/fork", body=body)
    assert (again[0], again[1]["error"]) == (422, "invalid-argument"), again
    assert "has records already" in again[1]["reason"]
    elsewhere = {"at_offset": 0, "new_session_key": _key("globex")}
    status, answer = await call(api, "POST", f"/v1/sessions/{key}/fork", body=elsewhere)
    assert (status, answer["error"]) == (403, "forbidden"), answer
    for refused in ({"at_offset": -1, "new_session_key": _key()}, {"at_offset": 0}, {}):
        status, answer = await call(api, "POST", f"/v1/sessions/{key}/fork", body=refused)
        assert (status, answer["error"]) == (422, "invalid-argument"), refused


async def test_as_of_reads_the_context_the_session_had_after_that_offset(api: Api) -> None:
    key = _key()
    appended = await append_events(
        api, key, [*_invocation(1, 100.0), *_invocation(2, 110.0), *_invocation(3, 120.0)]
    )
    wait = {"min_offset": str(appended[-1].offset), "timeout_s": str(READ_TIMEOUT_S)}
    status, answer = await call(api, "GET", f"/v1/sessions/{key}/context", params=wait)
    assert status == 200, answer
    for upto in range(len(appended)):
        as_of = {"as_of": str(appended[upto].offset), "timeout_s": str(READ_TIMEOUT_S)}
        status, answer = await call(api, "GET", f"/v1/sessions/{key}/context", params=as_of)
        assert status == 200, answer
        assert answer == {"contents": _contents(appended[: upto + 1])}, upto
    both = {"as_of": "1", "min_offset": "1"}
    status, answer = await call(api, "GET", f"/v1/sessions/{key}/context", params=both)
    assert (status, answer["error"]) == (422, "invalid-argument"), answer
    assert "as_of" in answer["reason"]


async def test_a_summary_expands_to_the_events_it_covers_page_by_page(api: Api) -> None:
    key = _key()
    raw = [*_invocation(1, 100.0), *_invocation(2, 110.0), *_invocation(3, 120.0)]
    summary = summary_event("sum-1", 100.0, 111.0, 130.0)
    appended = await append_events(api, key, [*raw, summary])
    path = f"/v1/sessions/{key}/summaries/sum-1/events"
    pages: list[Any] = []
    token: str | None = None
    while True:
        params = {"page_size": "3", "min_offset": str(appended[-1].offset)}
        params.update({"page_token": token} if token else {})
        status, answer = await call(api, "GET", path, params=params)
        assert status == 200, answer
        pages.append(answer)
        token = answer.get("next_page_token")  # left out on the last page
        if token is None:
            break
    # The summary covers [100, 111]: both events of inv1 and of inv2, none of inv3.
    covered = [record.envelope.event for record in appended[:4]]
    listed = [Event.model_validate(event) for page in pages for event in page["events"]]
    assert listed == covered
    assert [len(page["events"]) for page in pages] == [3, 1]
    status, answer = await call(api, "GET", f"/v1/sessions/{key}/summaries/nowhere/events")
    assert (status, answer["error"]) == (404, "summary-not-found"), answer


# -- subscriptions --------------------------------------------------------------


async def _stream_until(
    api: Api,
    params: dict[str, Any],
    done: Any,
    *,
    key: str | None = None,
    last_event_id: str | None = None,
) -> list[SseEvent]:
    """The events of a subscription, read until `done(events)` holds; then it is closed."""
    headers = {"Authorization": f"Bearer {key or api.keys['acme']}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    received: list[SseEvent] = []
    timeout = aiohttp.ClientTimeout(total=STREAM_TIMEOUT_S)
    async with (
        aiohttp.ClientSession(timeout=timeout) as http,
        http.get(
            f"{api.server.url}/v1/tenants/acme/projections:subscribe",
            params=params,
            headers=headers,
        ) as response,
    ):
        assert response.status == 200, await response.text()
        assert response.headers["Content-Type"].startswith("text/event-stream")
        async for event in sse_events(response):
            received.append(event)
            if done(received):
                break
    return received


def _placed(events: list[SseEvent]) -> list[tuple[int, int, str, int]]:
    """(partition, offset, session, last offset) of each snapshot event; ids checked on the way."""
    placed = []
    for event in events:
        assert event.event == "snapshot", event
        item = orjson.loads(event.data)
        assert event.id is not None
        assert parse_position(event.id, name="id")[item["partition"]] == item["offset"] + 1
        snapshot = item["snapshot"]
        placed.append(
            (item["partition"], item["offset"], snapshot["session_key"], snapshot["last_offset"])
        )
    return placed


def _reached(targets: Mapping[SessionKey, int]) -> Any:
    def done(events: list[SseEvent]) -> bool:
        latest = {session: last for _, _, session, last in _placed(events)}
        return all(latest.get(session) == last for session, last in targets.items())

    return done


async def test_a_subscription_streams_the_tenants_snapshots_and_resumes_without_repeats_or_gaps(
    api: Api,
) -> None:
    sessions_asked = [_key(), _key()]
    params = {"sessions": sessions_asked, "from_offset": "0"}
    first = {}
    for key in sessions_asked:
        first[key] = (await append_events(api, key, _invocation(1, 100.0)))[-1].offset
    before = await _stream_until(api, params, _reached(first))
    assert before, "no snapshot streamed"
    resume_from = before[-1].id
    assert resume_from is not None

    later = {}
    for key in sessions_asked:
        later[key] = (await append_events(api, key, _invocation(2, 110.0)))[-1].offset
    # The URL still says from_offset=0: the id the client saw last wins, as SSE resumes.
    after = await _stream_until(api, params, _reached(later), last_event_id=resume_from)

    streamed = _placed(before) + _placed(after)
    places = [(partition, offset) for partition, offset, _, _ in streamed]
    assert len(places) == len(set(places)), "a snapshot was streamed twice"
    topic = api.settings.topic("projections")
    records = await read_topic(
        api.settings.kafka_bootstrap,
        topic,
        partitions=api.settings.partitions,
        until=lambda _: True,
        timeout_s=STREAM_TIMEOUT_S,
    )
    wanted = {k.encode() for k in sessions_asked}
    on_topic = sorted((r.partition, r.offset) for r in records if r.key in wanted)
    assert sorted(places) == on_topic, "the two streams together are not the topic's records"
    assert {session for _, _, session, _ in streamed} == set(sessions_asked)


async def test_a_subscription_carries_its_tenants_snapshots_only(api: Api) -> None:
    partitions = api.settings.partitions
    other = _key("globex")
    mine = _key()
    while session_partition(mine.encode(), partitions) != session_partition(
        other.encode(), partitions
    ):
        mine = _key()
    other_offset = (await append_events(api, other, _invocation(1, 100.0)))[-1].offset
    topic = api.settings.topic("projections")

    async def other_projected() -> bool:
        snapshots = await latest_snapshots(api.settings.kafka_bootstrap, topic)
        return other in snapshots and snapshots[other].last_offset == other_offset

    await wait_for("globex's snapshot", other_projected, STREAM_TIMEOUT_S)
    # Written after globex's, on the same partition: streamed only once globex's was passed.
    mine_offset = (await append_events(api, mine, _invocation(1, 100.0)))[-1].offset
    events = await _stream_until(api, {"from_offset": "0"}, _reached({mine: mine_offset}))
    tenants = {session.split("/")[0] for _, _, session, _ in _placed(events)}
    assert tenants == {"acme"}


@pytest.mark.parametrize(
    ("params", "last_event_id", "named"),
    [
        ({"from_offset": "x"}, None, "from_offset"),
        ({}, "0:1,0:2", "Last-Event-ID"),
        ({}, "99:0", "Last-Event-ID"),
        ({"sessions": "acme/support/../s"}, None, "sessions[0]"),
    ],
)
async def test_a_subscription_refuses_bad_starts_and_sessions_with_422(
    api: Api, params: dict[str, str], last_event_id: str | None, named: str
) -> None:
    headers = {"Authorization": f"Bearer {api.keys['acme']}"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = last_event_id
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{api.server.url}/v1/tenants/acme/projections:subscribe",
            params=params,
            headers=headers,
        ) as response,
    ):
        body = await response.json()
    assert (response.status, body["error"]) == (422, "invalid-argument")
    assert body["reason"].startswith(named)


# -- keys -----------------------------------------------------------------------

ROUTES: Final = [
    ("POST", "/v1/sessions/{key}/events", {"author": "user", "timestamp": 1.0}),
    ("POST", "/v1/sessions/{key}/events:batch", {"events": []}),
    ("GET", "/v1/sessions/{key}/context", None),
    ("GET", "/v1/sessions/{key}/projection", None),
    ("POST", "/v1/sessions/{key}/rewind", {"before_invocation_id": "inv1"}),
    ("POST", "/v1/sessions/{key}/fork", {"at_offset": 0, "new_session_key": "acme/a/u/forked"}),
    ("GET", "/v1/sessions/{key}/summaries/s1/events", None),
    ("GET", "/v1/tenants/{tenant}/projections:subscribe", None),
    ("GET", "/v1/sessions/{key}/events", None),
    ("GET", "/v1/tenants/{tenant}/sessions", None),
]


@pytest.fixture(scope="module")
def existing_session(api: Api) -> SessionKey:
    """An acme session with one invocation in it."""
    key = _key()
    asyncio.run(append_events(api, key, _invocation(1, 100.0)))
    return key


def _route(path: str, key: str) -> str:
    return path.format(key=key, tenant=key.split("/")[0])


def _wrong_secret(api: Api) -> str:
    key_id = key_id_of(api.keys["acme"])
    return f"cs_{key_id}_{'A' * 43}"


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
async def test_every_route_refuses_a_missing_or_wrong_key_with_401(
    api: Api, existing_session: SessionKey, method: str, path: str, body: Any
) -> None:
    route = _route(path, existing_session)
    answers = [
        await call(api, method, route, tenant=None, body=body),
        await call(api, method, route, key=_wrong_secret(api), body=body),
        await call(api, method, route, key="not-a-key", body=body),
    ]
    for status, answer in answers:
        assert status == 401
        assert answer["error"] == "unauthorized"
    # A wrong key and a malformed one are told the same: nothing says which keys exist.
    assert answers[1] == answers[2]


async def test_a_wrong_secret_is_answered_after_the_refusal_delay_and_holds_up_no_one(
    api: Api, existing_session: SessionKey
) -> None:
    # A flood of wrong secrets on a few connections gets one answer a second on each,
    # while a real key's request at the same moment is answered at once.
    route = _route("/v1/sessions/{key}/projection", existing_session)
    started = time.monotonic()
    wrong = asyncio.ensure_future(call(api, "GET", route, key=_wrong_secret(api)))
    right = await call(api, "GET", route)
    answered_right = time.monotonic() - started
    status, _ = await wrong
    answered_wrong = time.monotonic() - started
    assert right[0] == 200
    assert status == 401
    assert answered_wrong >= ServeSettings().http_refused_key_delay_s  # held for the delay
    assert answered_right < answered_wrong  # the real key did not wait behind it


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
async def test_every_route_refuses_another_tenants_key_with_403_and_no_hint(
    api: Api, existing_session: SessionKey, method: str, path: str, body: Any
) -> None:
    absent = _key()
    existing = await call(api, method, _route(path, existing_session), tenant="globex", body=body)
    missing = await call(api, method, _route(path, absent), tenant="globex", body=body)
    assert existing[0] == missing[0] == 403
    assert existing[1] == missing[1]  # the same answer whether the session exists or not
    assert existing[1]["error"] == "forbidden"
    text = orjson.dumps(existing[1]).decode()
    user = existing_session.split("/")[2]  # unique to the session (its id part is "s")
    for hint in (existing_session, user, "acme"):
        assert hint not in text


async def test_a_key_reaches_no_other_tenants_sessions_in_a_subscription(
    api: Api, existing_session: SessionKey
) -> None:
    status, answer = await call(
        api,
        "GET",
        "/v1/tenants/globex/projections:subscribe",
        tenant="globex",
        params={"sessions": existing_session, "from_offset": "0"},
    )
    assert (status, answer["error"]) == (403, "forbidden")
    assert existing_session not in orjson.dumps(answer).decode()


async def test_a_revoked_key_is_refused_within_seconds_everywhere(
    api: Api, existing_session: SessionKey
) -> None:
    secret = await asyncio.to_thread(create_key, api.settings, "acme")
    key_id = key_id_of(secret)
    assert key_id is not None
    projection = f"/v1/sessions/{existing_session}/projection"

    async def accepted() -> bool:
        return (await call(api, "GET", projection, key=secret))[0] == 200

    await wait_for("the new key to be accepted", accepted, REVOKED_WITHIN_S)
    revoked = await asyncio.to_thread(ctxstream_command, api.settings, "keys", "revoke", key_id)
    assert revoked.returncode == 0, revoked.stderr
    assert revoked.stdout == f"revoked {key_id}\n"
    started = time.monotonic()

    async def refused() -> bool:
        return (await call(api, "GET", projection, key=secret))[0] == 401

    await wait_for("the revoked key to be refused", refused, REVOKED_WITHIN_S)
    assert time.monotonic() - started < REVOKED_WITHIN_S
    for method, path, body in ROUTES:
        status, answer = await call(
            api, method, _route(path, existing_session), key=secret, body=body
        )
        assert (status, answer["error"]) == (401, "unauthorized"), path
    listed = await asyncio.to_thread(ctxstream_command, api.settings, "keys", "list")
    assert key_id not in listed.stdout
    again = await asyncio.to_thread(ctxstream_command, api.settings, "keys", "revoke", key_id)
    assert again.returncode == 1
    assert again.stderr.count("\n") == 1
    assert f"no live key '{key_id}'" in again.stderr


def test_keys_create_prints_the_secret_once_and_stores_only_its_hash(
    api: Api,
) -> None:
    settings = api.settings
    created = ctxstream_command(settings, "keys", "create", "initech")
    assert created.returncode == 0, created.stderr
    secret = created.stdout.strip()
    assert created.stdout == secret + "\n"
    key_id = key_id_of(secret)
    assert key_id is not None
    assert f"created key {key_id} of tenant initech" in created.stderr
    assert secret not in created.stderr

    listed = ctxstream_command(settings, "keys", "list", "--tenant", "initech")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert [row[:2] for row in rows] == [[key_id, "initech"]]
    everyone = ctxstream_command(settings, "keys", "list").stdout
    assert {line.split("\t")[1] for line in everyone.splitlines()} >= {"acme", "globex", "initech"}
    token = secret.rsplit("_", 1)[1]
    assert token not in listed.stdout + everyone

    records = asyncio.run(
        read_topic(
            settings.kafka_bootstrap,
            settings.topic("api-keys"),
            partitions=1,
            until=lambda _: True,
            timeout_s=STREAM_TIMEOUT_S,
        )
    )
    stored = [r.value for r in records if r.key == key_id.encode()]
    assert len(stored) == 1
    assert token.encode() not in stored[0]
    record = ApiKeyRecord.model_validate_json(stored[0])
    assert record.tenant == "initech"
    assert secret_matches(record, secret)
    assert not secret_matches(record, secret[:-1] + ("B" if secret[-1] != "B" else "C"))


async def _store_old_scrypt_key(settings: ProjectorSettings, tenant: str) -> str:
    """A key as version 1 stored it (scrypt, the cost it used), written raw; its secret."""
    key_id = secrets.token_hex(8)
    secret = f"cs_{key_id}_{secrets.token_urlsafe(32)}"
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(
        secret.encode(), salt=salt, n=2**14, r=8, p=1, maxmem=64 * 1024 * 1024, dklen=32
    )
    record = {
        "schema_version": 1,
        "key_id": key_id,
        "tenant": tenant,
        "salt": salt.hex(),
        "digest": digest.hex(),
        "kdf": "scrypt",
        "n": 2**14,
        "r": 8,
        "p": 1,
        "created_at": "2026-01-01T00:00:00+00:00",
    }
    producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_bootstrap, acks="all")
    await producer.start()
    try:
        await producer.send_and_wait(
            settings.topic("api-keys"), key=key_id.encode(), value=orjson.dumps(record), partition=0
        )
    finally:
        await producer.stop()
    return secret


def test_a_flood_of_wrong_secrets_does_not_delay_a_real_keys_first_request(
    api: Api, tmp_path: Path
) -> None:
    """P8: 300 wrong secrets naming a known (old, scrypt) key id, then a fresh key's request."""
    old_secret = asyncio.run(_store_old_scrypt_key(api.settings, "acme"))
    old_id = key_id_of(old_secret)
    fresh = create_key(api.settings, "acme")
    # A server of its own, started after both keys: nothing verified or cached yet.
    server = start_server(api.settings, free_ports(1)[0], tmp_path / "serve.log")
    path = f"/v1/sessions/{_key()}/context"
    try:
        flood, fresh_done, fresh_status = asyncio.run(_flood(server.url, path, old_id, fresh))
        log = server.log.read_text()
    finally:
        stop_worker(server.process)
    statuses = [status for status, _ in flood]
    assert set(statuses) <= {401, 503}, statuses
    assert 503 in statuses  # past the waiting checks' bound, refused at once
    assert fresh_status == 404  # let in: the session read has no records (session-not-found)
    assert fresh_done < max(done for _, done in flood)  # before the flood is over
    # ... and before most of the flood's checked secrets: it did not wait behind them.
    checked = [done for status, done in flood if status == 401]
    assert sum(done > fresh_done for done in checked) > len(checked) / 2, (fresh_done, checked)
    assert "api keys refused count=" in log


async def _flood(
    url: str, path: str, key_id: str | None, fresh: str
) -> tuple[list[tuple[int, float]], float, int]:
    """300 concurrent wrong secrets of `key_id`; `fresh`'s request once the first is answered.

    The flood's statuses and when each was answered, when the fresh one was,
    and its status.
    """
    connector = aiohttp.TCPConnector(limit=400)
    first = asyncio.Event()
    answered: list[tuple[int, float]] = []

    async def wrong(http: aiohttp.ClientSession) -> None:
        headers = {"Authorization": f"Bearer cs_{key_id}_{secrets.token_urlsafe(32)}"}
        async with http.get(URL(f"{url}{path}", encoded=True), headers=headers) as response:
            await response.read()
            answered.append((response.status, time.monotonic()))
        first.set()

    async with aiohttp.ClientSession(connector=connector) as http:
        flood = [asyncio.create_task(wrong(http)) for _ in range(300)]
        await first.wait()
        headers = {"Authorization": f"Bearer {fresh}"}
        params = {"timeout_s": "30"}
        async with http.get(f"{url}{path}", headers=headers, params=params) as response:
            await response.read()
            fresh_status = response.status
        fresh_done = time.monotonic()
        await asyncio.gather(*flood)
    return answered, fresh_done, fresh_status


async def test_a_misspelt_field_is_refused_with_422_naming_it_and_nothing_is_written(
    api: Api,
) -> None:
    key = _key()
    misspelt = {
        "id": "m1",
        "invocationID": "inv1",
        "author": "user",
        "timestamp": 1.0,
        "content": {"role": "user", "parts": [{"txt": "hi"}]},
    }
    good = event_to_json(text_event("g1", "inv1", 1.0, "hi"))
    for path, body in (
        ("events", misspelt),
        ("events:batch", {"events": [good, misspelt]}),
    ):
        status, answer = await call(api, "POST", f"/v1/sessions/{key}/{path}", body=body)
        assert (status, answer["error"]) == (422, "invalid-argument"), answer
        where = "events[1]" if path == "events:batch" else "events[0]"
        assert answer["reason"] == (
            f"{where}: unknown field(s) invocationID (did you mean invocationId?), "
            "content.parts[0].txt (did you mean text?)"
        )
    log = await read_log(api.settings.kafka_bootstrap, api.settings.topic("events"))
    assert key not in log


async def test_a_duplicate_append_answers_the_original_offset_and_says_so(api: Api) -> None:
    key = _key()
    events = f"/v1/sessions/{key}/events"
    first_event = event_to_json(text_event("d1", "inv1", 1.0, "hi"))
    status, first = await call(api, "POST", events, body=first_event)
    assert (status, first) == (200, {"offset": first["offset"], "duplicate": False}), first
    wait = {"min_offset": str(first["offset"]), "timeout_s": str(READ_TIMEOUT_S)}
    status, _ = await call(api, "GET", f"/v1/sessions/{key}/projection", params=wait)
    assert status == 200

    status, again = await call(api, "POST", events, body=first_event)
    assert (status, again) == (200, {"offset": first["offset"], "duplicate": True})
    second_event = event_to_json(text_event("d2", "inv1", 2.0, "more"))
    status, batch = await call(
        api, "POST", f"{events}:batch", body={"events": [first_event, second_event]}
    )
    assert status == 200, batch
    assert batch["offsets"][0] == first["offset"]
    assert batch["offsets"][1] > first["offset"]
    assert batch["duplicates"] == [True, False]
    log = await read_log(api.settings.kafka_bootstrap, api.settings.topic("events"))
    assert [record.offset for record in log[key]] == [first["offset"], batch["offsets"][1]]


async def test_an_offset_not_written_is_refused_with_422_at_once(api: Api) -> None:
    key = _key()
    status, answer = await call(
        api,
        "POST",
        f"/v1/sessions/{key}/events",
        body=event_to_json(text_event("e1", "inv1", 1.0, "q")),
    )
    assert status == 200, answer
    beyond = answer["offset"] + 1_000_000
    for name in ("min_offset", "as_of"):
        params = {name: str(beyond), "timeout_s": "20"}
        status, refused = await call(api, "GET", f"/v1/sessions/{key}/context", params=params)
        assert (status, refused["error"]) == (422, "invalid-argument"), refused
        assert refused["reason"].startswith(f"{name}: ")


@pytest.mark.parametrize(
    ("args", "status", "named"),
    [
        (("keys", "create", "a/b"), 2, "tenant:"),
        (("keys", "create", ".."), 2, "tenant:"),
        (("keys", "revoke", uuid.uuid4().hex[:16]), 1, "no live key"),
    ],
)
def test_keys_commands_refuse_in_one_line(
    api: Api, args: tuple[str, ...], status: int, named: str
) -> None:
    result = ctxstream_command(api.settings, *args)
    assert result.returncode == status
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert named in result.stderr
    assert "Traceback" not in result.stderr


# -- refusals ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("session_path", "named"),
    [
        ("acme/support/../s1", "path step"),
        ("acme/support/%2E%2E/s1", "path step"),
        ("acme/./u1/s1", "path step"),
        ("acme//u1/s1", "is empty"),
        ("acme/support/u1/%20s1", "white space"),
        ("acme/support/u1/s1%09", "white space"),
        ("acme/support/u1", "expected 4"),
        ("acme/support/u1/s1/extra", "expected 4"),
        ("../../../etc/passwd", "expected 4"),
        ("../../etc/passwd", "path step"),
        ("acme%2Fsupport%2F..%2Fs1", "path step"),
    ],
)
async def test_session_keys_with_path_tricks_are_refused_with_422(
    api: Api, session_path: str, named: str
) -> None:
    for method, tail, body in (
        ("GET", "context", None),
        ("POST", "events", {"author": "user", "timestamp": 1.0}),
        ("POST", "rewind", {"before_invocation_id": "inv1"}),
        ("POST", "fork", {"at_offset": 0, "new_session_key": "acme/a/u/forked"}),
    ):
        status, answer = await call(api, method, f"/v1/sessions/{session_path}/{tail}", body=body)
        assert (status, answer["error"]) == (422, "invalid-argument"), (tail, answer)
        assert answer["reason"].startswith("session_key:")
        assert named in answer["reason"]


async def test_errors_are_json_bodies_with_their_status(
    api: Api, existing_session: SessionKey
) -> None:
    session = f"/v1/sessions/{existing_session}"
    cases = [
        (
            await call(
                api,
                "GET",
                f"{session}/context",
                params={"min_offset": str(2**40), "timeout_s": "1"},
            ),
            422,
            "invalid-argument",
        ),
        (
            await call(api, "GET", f"{session}/context", params={"include_contents": "all"}),
            422,
            "invalid-argument",
        ),
        (
            await call(api, "GET", f"{session}/projection", params={"timeout_s": "0"}),
            422,
            "invalid-argument",
        ),
        (await call(api, "POST", f"{session}/events", raw=b'{"id": '), 400, "invalid-json"),
        (
            await call(api, "POST", f"{session}/events", body={"author": "user"}),
            422,
            "invalid-argument",
        ),
        (
            await call(api, "POST", f"{session}/events", body=["not", "an", "event"]),
            422,
            "invalid-argument",
        ),
        (
            await call(api, "POST", f"{session}/events:batch", body={"events": {}}),
            422,
            "invalid-argument",
        ),
        (
            await call(api, "POST", f"{session}/events", raw=b" " * (MAX_BODY_BYTES + 1)),
            413,
            "too-large",
        ),
        (await call(api, "GET", "/v1/nowhere"), 404, "not-found"),
        (await call(api, "PUT", f"{session}/events"), 405, "method-not-allowed"),
    ]
    for (status, answer), expected_status, code in cases:
        assert (status, answer["error"]) == (expected_status, code), answer
        assert set(answer) == {"error", "reason"}
        assert "Traceback" not in answer["reason"]
    not_written = cases[0][0][1]["reason"]
    assert not_written.startswith(f"min_offset: no record at offset {2**40} has been written")
    refused_event = cases[4][0][1]["reason"]
    assert "timestamp" in refused_event


def test_the_openapi_document_lists_every_route(api: Api) -> None:
    status, document = asyncio.run(call(api, "GET", "/openapi.json", tenant=None))
    assert status == 200
    assert set(document["paths"]) == {
        "/v1/sessions/{session_key}",
        "/v1/sessions/{session_key}/events",
        "/v1/sessions/{session_key}/events:batch",
        "/v1/sessions/{session_key}/context",
        "/v1/sessions/{session_key}/projection",
        "/v1/sessions/{session_key}/rewind",
        "/v1/sessions/{session_key}/fork",
        "/v1/sessions/{session_key}/summaries/{summary_id}/events",
        "/v1/tenants/{tenant}/projections:subscribe",
        "/v1/tenants/{tenant}/sessions",
        "/healthz",
        "/metrics",
    }
    assert set(document["paths"]["/v1/sessions/{session_key}"]) == {"delete"}
    assert "Event" in document["components"]["schemas"]
    docs = asyncio.run(_get_text(f"{api.server.url}/docs"))
    assert "swagger" in docs.lower()


async def _get_text(url: str) -> str:
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        assert response.status == 200
        return await response.text()


async def test_stopping_the_server_ends_its_open_subscriptions_at_once(
    api: Api, tmp_path: Path
) -> None:
    server = await asyncio.to_thread(
        start_server, api.settings, free_ports(1)[0], tmp_path / "serve.log"
    )
    headers = {"Authorization": f"Bearer {api.keys['acme']}"}
    url = f"{server.url}/v1/tenants/acme/projections:subscribe"
    try:
        async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
            assert response.status == 200
            started = time.monotonic()
            server.process.send_signal(signal.SIGTERM)
            rest = await asyncio.wait_for(response.content.read(), STOP_WITHIN_S)
            assert rest == b""  # the stream ended: nothing was pending
        assert await asyncio.to_thread(server.process.wait, STOP_WITHIN_S) == 0
        assert time.monotonic() - started < STOP_WITHIN_S
    finally:
        stop_worker(server.process)
    log = server.log.read_text()
    assert "Traceback" not in log
    assert "graceful shutdown exceeded" not in log


def test_serve_without_a_broker_stops_with_one_clear_line(api: Api) -> None:
    result = ctxstream_command(
        api.settings,
        "serve",
        extra_env={"CTXSTREAM_KAFKA_BOOTSTRAP": f"127.0.0.1:{free_ports(1)[0]}"},
    )
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith("ctxstream serve: broker 127.0.0.1:")
    assert "Traceback" not in result.stderr


def test_the_server_logged_no_traceback(api: Api) -> None:
    """Run last: every refusal and every closed stream above was an answer, not a crash."""
    log = api.server.log.read_text()
    assert "Traceback" not in log
    assert " ERROR " not in log
