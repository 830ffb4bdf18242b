"""Session listing and raw history over HTTP and the command line, from the SQL read model.

One deployment of the module's own topics (no worker: appends need none), a ``ctxstream
sink`` process into a fresh schema, and two ``ctxstream serve`` processes: one reading that
schema, one without a DSN. The oracles are what the tests appended: the sessions sorted by
the test (last timestamp, then key, both descending), the events in append order.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson
import pytest

from ctxstream.sessions.cursor import ListingPosition, ListingScope, encode_cursor
from schemas.event import Event, event_to_json
from schemas.kafka.partitioning import session_partition
from streams.projector_settings import ProjectorSettings
from streams.sink.database import connect
from streams.sink.migrate import migrate
from tests.conftest import free_ports, unique_topic
from tests.integration.ctxstream.test_http_api import Api, call
from tests.integration.streams.sink.conftest import drop_schema, fresh_schema_name
from tests.integration.streams.sink.sink_load import sink_settings, start_sink_process
from tests.support.events import text_event
from tests.support.http_api import create_key, ctxstream_command, start_server
from tests.support.kafka import create_deployment_topics, projector_settings, stop_worker

pytestmark = pytest.mark.integration

PARTITIONS: Final = 3
SUNK_WITHIN_S: Final = 60.0
TENANTS: Final = ("acme", "globex", "initech")


@dataclass(frozen=True)
class Served:
    """The module's deployment, its read model's schema and DSN, and its two servers."""

    api: Api
    bare: Api
    """The same deployment served without a DSN."""
    schema: str
    dsn: str


@pytest.fixture(scope="module")
def served(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("http-sessions")
    settings = projector_settings(
        kafka_bootstrap, unique_topic("sessions"), events_partitions=PARTITIONS
    )
    asyncio.run(create_deployment_topics(settings))
    schema = fresh_schema_name()
    asyncio.run(_migrated(postgres_dsn, schema))
    sink = start_sink_process(
        sink_settings(kafka_bootstrap, settings.topic_prefix, postgres_dsn, schema, PARTITIONS),
        folder / "sink.log",
    )
    keys = {tenant: create_key(settings, tenant) for tenant in TENANTS}
    ports = free_ports(2)
    server = start_server(
        settings, ports[0], folder / "serve.log", postgres_dsn=postgres_dsn, sink_schema=schema
    )
    bare = start_server(settings, ports[1], folder / "bare.log", postgres_dsn="")
    try:
        yield Served(Api(settings, server, keys), Api(settings, bare, keys), schema, postgres_dsn)
    finally:
        for process in (server.process, bare.process, sink):
            stop_worker(process)
        drop_schema(postgres_dsn, schema)


async def _migrated(dsn: str, schema: str) -> None:
    conn = await connect(dsn)
    try:
        await migrate(conn, schema)
    finally:
        await conn.close()


def _settings(served: Served) -> ProjectorSettings:
    return served.api.settings


async def _append(api: Api, key: str, event: Event) -> int:
    status, answer = await call(
        api,
        "POST",
        f"/v1/sessions/{key}/events",
        body=event_to_json(event),
        tenant=key.split("/")[0],
    )
    assert status == 200, answer
    offset: int = answer["offset"]
    return offset


async def _sunk(api: Api, tenant: str, written: dict[str, int]) -> None:
    """Wait until the read model holds each session's record at its offset."""
    deadline = time.monotonic() + SUNK_WITHIN_S
    while True:
        status, page = await call(api, "GET", f"/v1/tenants/{tenant}/sessions", tenant=tenant)
        assert status == 200, page
        reached = {p["partition"]: p["next_offset"] for p in page["consistent_as_of"]}
        if all(
            reached.get(session_partition(key.encode(), PARTITIONS), 0) > offset
            for key, offset in written.items()
        ):
            return
        assert time.monotonic() < deadline, f"the sink had not reached {written}: {reached}"
        await asyncio.sleep(0.2)


async def _listing(api: Api, tenant: str, limit: int, **filters: str) -> list[dict[str, Any]]:
    """Every page of a listing, through its cursors."""
    listed: list[dict[str, Any]] = []
    params: dict[str, str] = {"limit": str(limit), **filters}
    while True:
        status, page = await call(
            api, "GET", f"/v1/tenants/{tenant}/sessions", params=params, tenant=tenant
        )
        assert status == 200, page
        assert len(page["sessions"]) <= limit
        listed.extend(page["sessions"])
        if "next_cursor" not in page:
            return listed
        params["cursor"] = page["next_cursor"]


def _newest_first(last: dict[str, float]) -> list[str]:
    """The oracle: keys by last timestamp, then key, both descending (Python's string order)."""
    return sorted(last, key=lambda key: (last[key], key), reverse=True)


async def _populate(api: Api, tenant: str, app: str) -> dict[str, float]:
    """Sessions of `tenant`'s `app` (two users), ties in last activity among them; key -> last."""
    last: dict[str, float] = {}
    written: dict[str, int] = {}
    for n in range(9):
        key = f"{tenant}/{app}/u{n % 2}/s{n}"
        for step in range(1 + n % 3):
            timestamp = float(100 + (n * 7) % 5 + step)  # sessions tie on purpose
            written[key] = await _append(api, key, text_event(f"e{step}", f"i{step}", timestamp))
            last[key] = timestamp
    await _sunk(api, tenant, written)
    return last


async def test_a_listing_pages_newest_first_as_the_sessions_appended_sorted(
    served: Served,
) -> None:
    app = unique_topic("app")
    last = await _populate(served.api, "acme", app)
    assert len(set(last.values())) < len(last)  # ties exercise the key order
    for limit in (1, 2, 4, 50):
        listed = await _listing(served.api, "acme", limit, app=app)
        assert [s["session_key"] for s in listed] == _newest_first(last)
    assert [s["last_activity"] for s in listed] == [last[k] for k in _newest_first(last)]
    one_user = {k: t for k, t in last.items() if k.split("/")[2] == "u1"}
    listed = await _listing(served.api, "acme", 3, app=app, user="u1")
    assert [s["session_key"] for s in listed] == _newest_first(one_user)
    assert {(s["tenant"], s["app"], s["user_id"]) for s in listed} == {("acme", app, "u1")}


async def test_a_tenant_listing_holds_its_own_sessions_only(served: Served) -> None:
    mine = await _populate(served.api, "initech", unique_topic("app"))
    others = await _populate(served.api, "globex", unique_topic("app"))
    listed = await _listing(served.api, "initech", 4)
    assert [s["session_key"] for s in listed] == _newest_first(mine)
    listed = await _listing(served.api, "globex", 50)
    assert set(others) <= {s["session_key"] for s in listed}
    assert all(s["tenant"] == "globex" for s in listed)


async def test_another_tenants_key_reads_nothing_and_a_crafted_cursor_reaches_no_one(
    served: Served,
) -> None:
    app = unique_topic("app")
    acme = await _populate(served.api, "acme", app)
    key = next(iter(acme))
    for path in ("/v1/tenants/acme/sessions", f"/v1/sessions/{key}/events"):
        status, answer = await call(served.api, "GET", path, tenant="globex")
        assert (status, answer["error"]) == (403, "forbidden"), path
    status, page = await call(
        served.api, "GET", "/v1/tenants/acme/sessions", params={"app": app, "limit": "2"}
    )
    assert status == 200, page
    status, answer = await call(
        served.api,
        "GET",
        "/v1/tenants/globex/sessions",
        params={"app": app, "limit": "2", "cursor": page["next_cursor"]},
        tenant="globex",
    )
    assert (status, answer["error"]) == (422, "invalid-argument")
    assert answer["reason"].startswith("cursor:")
    # A cursor made for globex's own listing but pointing at acme's sessions reads globex's.
    crafted = encode_cursor(ListingScope("globex", app=app), ListingPosition(1e300, key))
    status, page = await call(
        served.api,
        "GET",
        "/v1/tenants/globex/sessions",
        params={"app": app, "cursor": crafted},
        tenant="globex",
    )
    assert (status, page["sessions"]) == (200, [])


async def test_a_history_pages_the_appended_events_in_offset_order(served: Served) -> None:
    key = f"acme/{unique_topic('app')}/u1/s1"
    events = [text_event(f"e{n}", f"inv{n // 2}", float(n), f"text {n}") for n in range(7)]
    offsets = [await _append(served.api, key, event) for event in events]
    got: list[dict[str, Any]] = []
    params = {"limit": "3", "min_offset": str(offsets[-1]), "timeout_s": "60"}
    while True:
        status, page = await call(served.api, "GET", f"/v1/sessions/{key}/events", params=params)
        assert status == 200, page
        got.extend(page["events"])
        if "next_after" not in page:
            break
        params = {"limit": "3", "after": str(page["next_after"])}
    assert [e["offset"] for e in got] == offsets
    assert [e["event"] for e in got] == [event_to_json(event) for event in events]
    assert [(e["event_id"], e["invocation_id"], e["status"], e["lossy"]) for e in got] == [
        (event.id, event.invocation_id, "live", False) for event in events
    ]
    partition = session_partition(key.encode(), PARTITIONS)
    assert {e["partition"] for e in got} == {partition}
    after_all = {"after": str(offsets[-1])}
    status, page = await call(served.api, "GET", f"/v1/sessions/{key}/events", params=after_all)
    assert (status, page["events"], "next_after" in page) == (200, [], False)


async def test_a_deleted_session_leaves_the_listing_and_starts_afresh(served: Served) -> None:
    app = unique_topic("app")
    key = f"acme/{app}/u1/s1"
    kept = f"acme/{app}/u1/s2"
    other = await _append(served.api, kept, text_event("k1", "inv1", 1.0))
    first = await _append(served.api, key, text_event("e1", "inv1", 2.0))
    await _sunk(served.api, "acme", {key: first, kept: other})
    assert [s["session_key"] for s in await _listing(served.api, "acme", 10, app=app)] == [
        key,
        kept,
    ]
    status, answer = await call(served.api, "DELETE", f"/v1/sessions/{key}")
    assert status == 200, answer
    params = {"min_offset": str(answer["offset"]), "timeout_s": "60"}
    status, refused = await call(served.api, "GET", f"/v1/sessions/{key}/events", params=params)
    assert (status, refused["error"]) == (404, "session-not-found")
    assert "deleted" in refused["reason"]
    assert [s["session_key"] for s in await _listing(served.api, "acme", 10, app=app)] == [kept]

    fresh = await _append(served.api, key, text_event("e2", "inv2", 3.0, "anew"))
    params = {"min_offset": str(fresh), "timeout_s": "60"}
    status, page = await call(served.api, "GET", f"/v1/sessions/{key}/events", params=params)
    assert status == 200, page
    assert [(e["offset"], e["event_id"]) for e in page["events"]] == [(fresh, "e2")]
    listed = await _listing(served.api, "acme", 10, app=app)
    assert [(s["session_key"], s["created"]) for s in listed] == [(key, 3.0), (kept, 1.0)]


LISTING: Final = "/v1/tenants/acme/sessions"
HISTORY: Final = "/v1/sessions/acme/a/u/s/events"


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        (LISTING, {"limit": "0"}, "limit"),
        (LISTING, {"limit": "501"}, "limit"),
        (LISTING, {"limit": "x"}, "limit"),
        (LISTING, {"cursor": "not a cursor"}, "cursor"),
        (LISTING, {"cursor": base64.urlsafe_b64encode(orjson.dumps({"v": 2})).decode()}, "cursor"),
        (LISTING, {"user": "u1"}, "user"),
        (HISTORY, {"after": "-1"}, "after"),
        (HISTORY, {"limit": "501"}, "limit"),
        (HISTORY, {"timeout_s": "0"}, "timeout_s"),
    ],
)
async def test_a_bad_parameter_is_refused_with_422_naming_it(
    served: Served, path: str, params: dict[str, str], named: str
) -> None:
    status, answer = await call(served.api, "GET", path, params=params)
    assert (status, answer["error"]) == (422, "invalid-argument"), answer
    assert named in answer["reason"]


async def test_a_server_without_a_dsn_answers_503_naming_the_setting(served: Served) -> None:
    for path in (LISTING, HISTORY):
        status, answer = await call(served.bare, "GET", path)
        assert (status, answer["error"]) == (503, "unavailable"), path
        assert "CTXSTREAM_POSTGRES_DSN" in answer["reason"]


async def test_the_commands_list_and_print_what_the_routes_answer(served: Served) -> None:
    app = unique_topic("app")
    last = await _populate(served.api, "acme", app)
    env = {"CTXSTREAM_POSTGRES_DSN": served.dsn, "CTXSTREAM_SINK_SCHEMA": served.schema}
    listed = ctxstream_command(
        _settings(served),
        *("sessions", "--sql", "--tenant", "acme", "--app", app, "--limit", "2", "--all"),
        "--json",
        extra_env=env,
    )
    assert listed.returncode == 0, listed.stderr
    lines = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert [line["session_key"] for line in lines] == _newest_first(last)
    one = ctxstream_command(
        _settings(served),
        "sessions",
        "--sql",
        "--tenant",
        "acme",
        "--app",
        app,
        "--limit",
        "2",
        extra_env=env,
    )
    assert one.returncode == 0, one.stderr
    assert [line.split(":")[0] for line in one.stdout.splitlines()] == _newest_first(last)[:2]
    assert one.stderr.startswith("next page: --cursor ")

    key = _newest_first(last)[0]
    history = ctxstream_command(_settings(served), "history", key, "--json", extra_env=env)
    assert history.returncode == 0, history.stderr
    records = [orjson.loads(line) for line in history.stdout.splitlines()]
    assert [r["event"]["timestamp"] for r in records][-1] == last[key]
    assert [r["event_id"] for r in records] == [f"e{n}" for n in range(len(records))]
    text = ctxstream_command(_settings(served), "history", key, extra_env=env)
    assert text.stdout.splitlines()[0].startswith(f"offset {records[0]['offset']} live: @")
    missing = ctxstream_command(_settings(served), "history", f"acme/{app}/u9/none", extra_env=env)
    assert missing.returncode == 1
    assert "no record" in missing.stderr
