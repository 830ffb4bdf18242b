"""``Client.rewind`` as ADK's ``Runner.rewind_async`` (reference §10), on the real broker.

The worker that owns the session computes the rewind's state delta from the
session's stored events; the client appends ADK's rewind event with it. The
oracles: the delta written out by hand from the events the test appended
(§10: keys whose replayed value differs get it, current keys the replay lacks
get None), the core's ADK-recorded ``rewind_state_delta`` for the long
session, and the independent rebuild of the log for the context after.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import pytest

from ctxstream import InvalidArgumentError, InvocationNotFoundError, SyncClient
from ctxstream.bench.workload import bench_session
from projections.contents.contents_request import ContentsRequest
from projections.fold.projection import project
from projections.fold.rebuild import rebuild_contents
from projections.fold.state import rewind_state_delta
from schemas.event import Event
from schemas.keys import SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.events import logged_event, text_event
from tests.support.http_api import ctxstream_command
from tests.support.kafka import read_log
from tests.support.next_agent_oracle import expected_view_request
from tests.support.read_worker import VIEW_AGENT, WORKER_LOG

pytestmark = pytest.mark.integration

READ_TIMEOUT_S = 30.0
VIEW = ContentsRequest(agent_name=VIEW_AGENT)


def _session_key() -> SessionKey:
    return SessionKey(f"acme/support/{unique_topic('u')}/s")


def _logged(deployment: ProjectorSettings, key: SessionKey) -> list[LoggedEvent]:
    """The session's records on `events`, as the worker reads them."""
    log = asyncio.run(read_log(deployment.kafka_bootstrap, deployment.topic("events")))
    return log[key]


def _appended(key: SessionKey, events: list[Event], offsets: Sequence[int]) -> list[LoggedEvent]:
    return [logged_event(key, e, o) for e, o in zip(events, offsets, strict=True)]


def test_rewind_carries_the_state_before_the_invocation_and_drops_it_from_the_context(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    events = [
        text_event("q1", "inv1", 101.0, "first", actions={"stateDelta": {"a": 1, "kept": "x"}}),
        text_event("q2", "inv2", 102.0, "second", actions={"stateDelta": {"a": 2, "b": 5}}),
        text_event("r2", "inv2", 103.0, "answer", author=VIEW_AGENT),
        text_event("q3", "inv3", 104.0, "third", actions={"stateDelta": {"c": 3}}),
    ]
    offsets = client.append_many(key, events)
    before = time.time()
    offset = client.rewind(key, "inv2", min_offset=offsets[-1], timeout_s=READ_TIMEOUT_S)
    contents = client.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)

    log = _logged(deployment, key)
    assert [record.offset for record in log] == [*offsets, offset]
    rewind = log[-1].envelope.event
    assert rewind.author == "user"
    assert rewind.invocation_id.startswith("e-")
    assert rewind.actions.rewind_before_invocation_id == "inv2"
    assert before <= rewind.timestamp <= time.time()
    # Before inv2 only q1 wrote: a back to 1, kept unchanged, b and c were not there.
    assert rewind.actions.state_delta == {"a": 1, "b": None, "c": None}
    assert contents == rebuild_contents([*_appended(key, events, offsets), log[-1]], VIEW)
    assert [part.text for content in contents for part in content.parts or ()] == ["first"]


def test_a_rewind_to_an_invocation_the_session_never_had_appends_nothing(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    offset = client.append(key, text_event("q1", "inv1", 101.0, "first"))
    with pytest.raises(InvocationNotFoundError, match="nowhere") as refused:
        client.rewind(key, "nowhere", min_offset=offset, timeout_s=READ_TIMEOUT_S)
    assert refused.value.invocation_id == "nowhere"
    assert [record.offset for record in _logged(deployment, key)] == [offset]


def test_bad_arguments_are_refused_before_anything_is_sent(client: SyncClient) -> None:
    with pytest.raises(InvalidArgumentError, match=r"^before_invocation_id: empty"):
        client.rewind(_session_key(), "")
    with pytest.raises(InvalidArgumentError, match="session_key"):
        client.rewind("acme/../u1/s1", "inv1")


def test_a_rewind_behind_what_a_long_session_holds_is_computed_from_its_history(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    events = [record.envelope.event for record in bench_session(600)]
    offsets = client.append_many(key, events)
    offset = client.rewind(key, "inv5", min_offset=offsets[-1], timeout_s=READ_TIMEOUT_S)
    contents = client.context(key, min_offset=offset, timeout_s=READ_TIMEOUT_S)

    appended = _appended(key, events, offsets)
    state = project(key, appended).state.read_state()
    rewind = _logged(deployment, key)[-1]
    assert rewind.envelope.event.actions.state_delta == rewind_state_delta(events, state, "inv5")
    records = [*appended, rewind]
    assert contents == rebuild_contents(records, expected_view_request(records, VIEW))
    log = (deployment.data_dir / WORKER_LOG).read_text()
    assert f"session={key} history read: 600 records" in log


def test_the_rewind_command_prints_the_offset_and_fails_in_one_line(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    key = _session_key()
    events = [
        text_event("q1", "inv1", 101.0, "first", actions={"stateDelta": {"a": 1}}),
        text_event("q2", "inv2", 102.0, "second", actions={"stateDelta": {"a": 2}}),
    ]
    offsets = client.append_many(key, events)
    done = ctxstream_command(deployment, "rewind", key, "inv2", "--min-offset", str(offsets[-1]))
    assert done.returncode == 0, done.stderr
    log = _logged(deployment, key)
    assert done.stdout == f"{log[-1].offset}\n"
    assert log[-1].envelope.event.actions.state_delta == {"a": 1}

    unknown = ctxstream_command(deployment, "rewind", key, "nowhere", "--min-offset", "0")
    assert unknown.returncode == 1
    assert unknown.stdout == ""
    assert len(unknown.stderr.splitlines()) == 1
    assert "nowhere" in unknown.stderr
    refused = ctxstream_command(deployment, "rewind", "acme/../u1/s1", "inv1")
    assert refused.returncode == 2
    assert len(refused.stderr.splitlines()) == 1
    assert "session_key" in refused.stderr
    assert len(_logged(deployment, key)) == len(log)  # nothing more was appended
