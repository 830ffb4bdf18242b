"""Context reads through ``ctxstream.Client`` against a real native worker process.

One worker (``python -m ctxstream worker``) serves a deployment of its own; the
client appends generated sessions and reads each back from the worker's memory.
The oracle is the plain rebuild (:func:`projections.fold.rebuild.rebuild_contents`),
written apart from the fold the worker runs, over the records as appended.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from yarl import URL

from ctxstream import (
    Client,
    InvalidArgumentError,
    NoPartitionOwnerError,
    SyncClient,
)
from ctxstream.bench.workload import bench_session
from projections.contents.contents_request import ContentsRequest
from projections.contents.snapshot import context_fingerprint
from projections.fold.rebuild import rebuild_contents
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from schemas.read_protocol import ReadRefusal
from schemas.read_secret import read_keys
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import call, event, logged_event, resp, text_event
from tests.support.kafka import (
    create_deployment_topics,
    latest_snapshots,
    projector_settings,
    running_projector,
    wait_for,
)
from tests.support.next_agent_oracle import expected_view_request
from tests.support.read_worker import CLAIMED_TIMEOUT_S, VIEW_AGENT, claims
from tests.support.strategies import sessions

pytestmark = pytest.mark.integration

READ_TIMEOUT_S = 30.0  # one batch of a worker sharing two cores with the test
#: Reads for another agent, branch or mode, each checked against the rebuild.
OTHER_REQUESTS = (
    ContentsRequest(agent_name="helper", current_branch="root.helper"),
    ContentsRequest(agent_name="root", current_branch="root"),
    ContentsRequest(agent_name="", current_branch=None),
    ContentsRequest(agent_name="root", include_contents="none"),
    ContentsRequest(agent_name="helper", current_branch="root.helper", include_contents="none"),
)
GENERATED = settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _session_key() -> SessionKey:
    return SessionKey(f"acme/support/{unique_topic('u')}/s")


@GENERATED
@given(log=sessions(max_invocations=4))
def test_every_append_is_read_back_as_the_rebuild_of_the_log_so_far(
    client: SyncClient, log: list[LoggedEvent]
) -> None:
    key = _session_key()
    root = ContentsRequest(agent_name=VIEW_AGENT)
    appended: list[LoggedEvent] = []
    for generated in log:
        offset = client.append(key, generated.envelope.event)
        appended.append(logged_event(key, generated.envelope.event, offset))
        # For the agent ADK's router runs next; the app's root until an agent replies.
        expected = rebuild_contents(appended, expected_view_request(appended, root))

        contents = client.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)
        assert contents == expected, f"after offset {offset}"
        snapshot = client.projection(key, offset, timeout_s=READ_TIMEOUT_S)
        assert snapshot.session_key == key
        assert snapshot.last_offset == offset
        assert snapshot.context_items == len(expected)
        assert snapshot.context_fingerprint == context_fingerprint(expected)


@GENERATED
@given(log=sessions(max_invocations=6))
def test_reads_for_other_agents_branches_and_none_mode_equal_the_rebuild(
    client: SyncClient, log: list[LoggedEvent]
) -> None:
    key = _session_key()
    events = [generated.envelope.event for generated in log]
    offsets = client.append_many(key, events)
    appended = [logged_event(key, e, o) for e, o in zip(events, offsets, strict=True)]
    for request in OTHER_REQUESTS:
        contents = client.context(
            key,
            agent=request.agent_name,
            branch=request.current_branch,
            include_contents=request.include_contents,
            min_offset=offsets[-1],
            timeout_s=READ_TIMEOUT_S,
        )
        assert contents == rebuild_contents(appended, request), request


def test_a_tool_using_agents_session_read_without_agent_is_its_own(client: SyncClient) -> None:
    # No root agent is configured for acme/shop: the trial's default settings.
    key = SessionKey(f"acme/shop/{unique_topic('u')}/s")
    agent = "shop_agent"
    events = [
        event("e0", "user", 0.0, [{"text": "where is order 42?"}], inv="i1"),
        event("e1", agent, 1.0, [call("c1", "lookup_order", {"id": 42})], inv="i1"),
        event("e2", agent, 2.0, [resp("c1", "lookup_order")], role="user", inv="i1"),
        event("e3", agent, 3.0, [{"text": "order 42 shipped"}], inv="i1"),
        event("e4", "user", 4.0, [{"text": "thanks"}], inv="i2"),
    ]
    offsets = client.append_many(key, events)
    contents = client.context(key, min_offset=offsets[-1], timeout_s=READ_TIMEOUT_S)
    parts = [part for content in contents for part in content.parts or []]
    assert [
        (c.role, p.function_call.name) for c in contents for p in c.parts or [] if p.function_call
    ] == [("model", "lookup_order")]
    assert [p.function_response.name for p in parts if p.function_response] == ["lookup_order"]
    assert not any(p.text and "For context" in p.text for p in parts)
    appended = [logged_event(key, e, o) for e, o in zip(events, offsets, strict=True)]
    assert contents == rebuild_contents(appended, ContentsRequest(agent_name=agent))
    snapshot = client.projection(key, offsets[-1], timeout_s=READ_TIMEOUT_S)
    assert (snapshot.context_items, snapshot.context_fingerprint) == (
        len(contents),
        context_fingerprint(contents),
    )
    # An explicit agent still wins: for another agent the same calls are quoted.
    quoted = client.context(key, agent="billing_agent", timeout_s=READ_TIMEOUT_S)
    assert quoted == rebuild_contents(appended, ContentsRequest(agent_name="billing_agent"))
    assert not any(p.function_call for c in quoted for p in c.parts or [])


async def ask_the_worker(
    deployment: ProjectorSettings, path: str, parameters: dict[str, str] | None = None
) -> tuple[int, ReadRefusal]:
    """A GET of `path` (encoded) on the worker's read endpoint, with the read credential."""
    owners = await claims(deployment)
    claim = owners.owner(0)
    assert claim is not None
    url = URL(f"http://{claim.address}{path}", encoded=True)
    headers = {"Authorization": read_keys(deployment).authorization}
    async with (
        aiohttp.ClientSession(headers=headers) as http,
        http.get(url, params=parameters) as response,
    ):
        return response.status, ReadRefusal.model_validate_json(await response.read())


def test_an_offset_not_written_yet_is_refused_at_once_without_the_partitions_end(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    offset = client.append(key, text_event("e1", "inv1", 101.0, "question"))
    assert len(client.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)) == 1
    beyond = offset + 1_000
    with SyncClient(settings=deployment) as fresh:  # no append of its own: it asks the broker
        for reader in (client, fresh):
            reads: list[tuple[str, Callable[[SyncClient], object]]] = [
                ("min_offset", lambda c: c.context(key, min_offset=beyond, timeout_s=30)),
                ("min_offset", lambda c: c.projection(key, beyond, timeout_s=30)),
                ("as_of", lambda c: c.context_as_of(key, beyond, timeout_s=30)),
            ]
            for name, read in reads:
                started = time.monotonic()
                with pytest.raises(InvalidArgumentError, match=f"^{name}: .*{beyond}") as refused:
                    read(reader)
                assert time.monotonic() - started < 30  # refused, not waited for
                assert "has been written to the session's partition" in str(refused.value)
                told = str(refused.value).replace(str(beyond), "")
                assert str(offset + 1) not in told  # the partition's end is not told
        assert len(fresh.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)) == 1


@pytest.mark.parametrize(
    ("key", "named"),
    [
        ("acme/support/../s1", "path step"),
        ("acme/support/u1", "expected 4"),
        ("acme/support/u1/s1/extra", "expected 4"),
        ("../../../etc", "path step"),
        ("acme/support/u1/ s1", "white space"),
    ],
)
def test_a_bad_session_key_is_refused_with_422(
    deployment: ProjectorSettings, client: SyncClient, key: str, named: str
) -> None:
    with pytest.raises(InvalidArgumentError, match="session_key"):
        client.context(key)  # refused before anything is sent

    encoded = "".join(c if c.isalnum() else f"%{ord(c):02X}" for c in key)
    for kind in ("context", "projection"):
        status, refusal = asyncio.run(ask_the_worker(deployment, f"/sessions/{encoded}/{kind}"))
        assert (status, refusal.error) == (422, "invalid-session-key"), refusal
        assert named in refusal.reason


def test_bad_read_parameters_are_refused_with_400(deployment: ProjectorSettings) -> None:
    path = "/sessions/acme%2Fsupport%2Fu1%2Fs1/context"
    for parameters, named in (
        ({"include_contents": "all"}, "include_contents"),
        ({"min_offset": "-1"}, "min_offset"),
        ({"timeout_s": "0"}, "timeout_s"),
        ({"timeout_s": "100000"}, "timeout_s"),
        ({"colour": "blue"}, "colour"),
    ):
        status, refusal = asyncio.run(ask_the_worker(deployment, path, parameters))
        assert (status, refusal.error) == (400, "invalid-parameter"), parameters
        assert named in refusal.reason


async def test_the_faust_engine_advertises_no_reads(kafka_bootstrap: str, tmp_path: Path) -> None:
    faust = projector_settings(
        kafka_bootstrap, unique_topic("faust-reads"), engine="faust", data_dir=tmp_path
    )
    await create_deployment_topics(faust)
    key = _session_key()
    async with running_projector(faust, CLAIMED_TIMEOUT_S), Client(settings=faust) as reader:
        offset = await reader.append(key, text_event("e1", "inv1", 101.0, "question"))

        async def folded() -> bool:
            snapshots = await latest_snapshots(kafka_bootstrap, faust.topic("projections"))
            return key in snapshots and snapshots[key].last_offset == offset

        await wait_for("faust to fold the event", folded, CLAIMED_TIMEOUT_S)
        with pytest.raises(NoPartitionOwnerError, match="no projector serves reads") as none:
            await reader.context(key, min_offset=offset, timeout_s=3.0)
    assert none.value.retriable
    assert "no worker has claimed it" in str(none.value)


def test_a_long_sessions_read_for_another_agent_is_answered_from_its_history(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    """Compaction released most of the session; another agent's contents need all of it."""
    key = _session_key()
    events = [record.envelope.event for record in bench_session(600)]
    offsets = client.append_many(key, events)
    appended = [logged_event(key, e, o) for e, o in zip(events, offsets, strict=True)]
    # The bench's replies are its agent's, who runs next: the view is for it, not the root.
    view = expected_view_request(appended, ContentsRequest(agent_name=VIEW_AGENT))
    assert view.agent_name == "agent"
    contents = client.context(key, min_offset=offsets[-1], timeout_s=READ_TIMEOUT_S)
    assert contents == rebuild_contents(appended, view)
    other = ContentsRequest(agent_name="someone-else")
    assert client.context(key, agent=other.agent_name, timeout_s=READ_TIMEOUT_S) == (
        rebuild_contents(appended, other)
    )
    log = (deployment.data_dir / "worker.log").read_text()
    assert f"session={key} history read: 600 records" in log
