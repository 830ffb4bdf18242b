"""ADK's own server, ``adk api_server``, driven over HTTP on a session service URI.

The scripted App (``tests/support/adk_runner``, ADK-owned sliding-window
compaction) runs the multi-agent script through ``POST /run``; the session is
then listed and read. Two servers on ``memory://`` (ADK's in-memory service)
give the same responses once ids and timestamps are normalized: the oracle
the lead holds a ``ctxstream://`` server to at merge (:data:`URIS`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.support.adk_runner.script import MULTI_AGENT_SCRIPT
from tests.support.adk_server import drive, normalized, running_api_server

pytestmark = [pytest.mark.integration]

REFERENCE: Final = "memory://"
#: The session service URIs held to ADK's ``memory://``; the lead adds ``ctxstream://``.
URIS: Final[list[str]] = [REFERENCE]
STATE: Final = {"topic": "weather", "user:lang": "en"}


def _run(root: Path, uri: str) -> dict[str, object]:
    root.mkdir()
    with running_api_server(root, uri) as client:
        return drive(client, MULTI_AGENT_SCRIPT, state=STATE)


@pytest.mark.parametrize("uri", URIS)
def test_adk_api_server_answers_as_it_does_on_memory(tmp_path: Path, uri: str) -> None:
    reference = _run(tmp_path / "reference", REFERENCE)
    run = _run(tmp_path / "run", uri)
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
