"""ADK's own server, ``adk api_server``, driven over HTTP on a session service URI.

The scripted App (``tests/support/adk_runner``, ADK-owned sliding-window
compaction) runs the multi-agent script through ``POST /run``; the session is
then listed and read. Two servers on ``memory://`` (ADK's in-memory service)
give the same responses once ids and timestamps are normalized: the oracle
the lead holds a ``ctxstream://`` server to at merge (:data:`URIS`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from projections.compaction.config import CompactionConfig
from tests.integration.adk.conftest import AdkDeployment, adk_deployment_of
from tests.support.adk_runner.script import MULTI_AGENT_SCRIPT
from tests.support.adk_server import drive, normalized, running_api_server

pytestmark = [pytest.mark.integration]

REFERENCE: Final = "memory://"
#: The drop-in's URI: ``{tenant}`` and the deployment's ``{bootstrap}``/``{prefix}`` filled in.
CTXSTREAM: Final = "ctxstream://{bootstrap}/?tenant={tenant}&prefix={prefix}&view=full"
#: The session service URIs held to ADK's ``memory://``.
URIS: Final[list[str]] = [REFERENCE, CTXSTREAM]
STATE: Final = {"topic": "weather", "user:lang": "en"}


@pytest.fixture(scope="module")
def server_deployment(
    kafka_bootstrap: str, postgres_dsn: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AdkDeployment]:
    """A deployment whose apps ADK's runner compacts (the scripted App's sliding window)."""
    folder = tmp_path_factory.mktemp("api_server")
    compaction = CompactionConfig(owner="adk")
    with adk_deployment_of(kafka_bootstrap, postgres_dsn, folder, compaction=compaction) as found:
        yield found


def _run(root: Path, uri: str, env: dict[str, str] | None = None) -> dict[str, object]:
    root.mkdir()
    with running_api_server(root, uri, env=env) as client:
        return drive(client, MULTI_AGENT_SCRIPT, state=STATE)


@pytest.mark.parametrize("uri", URIS, ids=lambda u: u.split(":", 1)[0])
def test_adk_api_server_answers_as_it_does_on_memory(
    tmp_path: Path, uri: str, request: pytest.FixtureRequest
) -> None:
    reference = _run(tmp_path / "reference", REFERENCE)
    env = None
    if uri == CTXSTREAM:
        deployment: AdkDeployment = request.getfixturevalue("server_deployment")
        tenant = f"srv{uuid.uuid4().hex[:12]}"
        uri = uri.format(bootstrap=deployment.bootstrap, tenant=tenant, prefix=deployment.prefix)
        env = {"CTXSTREAM_POSTGRES_DSN": deployment.dsn, "CTXSTREAM_SINK_SCHEMA": deployment.schema}
    run = _run(tmp_path / "run", uri, env)
    assert normalized(run) == normalized(reference)


def test_adk_api_server_responses_hold_the_conversation(tmp_path: Path) -> None:
    """What the comparison covers: every turn answered, the session listed, its events whole."""
    responses = normalized(_run(tmp_path / "server", REFERENCE))
    assert responses["created"] == {
        "id": "s1",
        "appName": "equivalence",
        "userId": "u1",
        "state": STATE,
        "events": [],
    }
    assert [session["id"] for session in responses["listed"]] == ["s1"]
    turns = responses["turns"]
    assert len(turns) == len(MULTI_AGENT_SCRIPT)
    assert all(turn for turn in turns)
    events = responses["session"]["events"]
    summaries = [e for e in events if "summary_of" in e["actions"]]
    assert len(summaries) == len(MULTI_AGENT_SCRIPT) // 2
    answers = [e for turn in turns for e in turn]
    assert [e for e in events if e["author"] != "user"] == answers
    assert events[0]["content"] == {"parts": [{"text": "hello"}], "role": "user"}
