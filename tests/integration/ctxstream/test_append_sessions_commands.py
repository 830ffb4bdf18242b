"""``ctxstream append`` and ``ctxstream sessions`` as child processes, on the real broker.

``append`` writes to the module's deployment, served by a native worker
process (the package's ``deployment``), and what it printed is checked
against the projector's snapshot of the session; ``sessions`` lists that
deployment, and the package's ``projections`` deployment (filled by the
real projector, with two hostile records on the topic), against the clean
fold of its log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any, Final

import orjson
import pytest

from ctxstream import SyncClient
from streams.projector_settings import ProjectorSettings
from tests.conftest import REPO, free_ports, unique_topic
from tests.support.kafka import settings_env
from tests.support.subscriptions import Projections

pytestmark = pytest.mark.integration

COMMAND_TIMEOUT_S: Final = 60.0
READ_TIMEOUT_S: Final = 30.0  # the worker folding the appended records


def _command(
    settings: ProjectorSettings, *args: str, stdin: str = "", **env: str
) -> subprocess.CompletedProcess[str]:
    """``python -m ctxstream <args>`` on `settings`' deployment, `stdin` as its input."""
    return subprocess.run(
        [sys.executable, "-m", "ctxstream", *args],
        cwd=REPO,
        env={**os.environ, **settings_env(settings), **env},
        input=stdin,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def _event(text: str, invocation: str, author: str = "user") -> dict[str, Any]:
    role = "user" if author == "user" else "model"
    return {
        "id": unique_topic("e"),
        "invocationId": invocation,
        "author": author,
        "timestamp": time.time(),
        "content": {"role": role, "parts": [{"text": text}]},
    }


def _session(tenant: str = "acme") -> str:
    return f"{tenant}/support/{unique_topic('u')}/s1"


def test_append_prints_the_offset_of_one_event_given_as_argument(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    session = _session()
    done = _command(deployment, "append", session, orjson.dumps(_event("hi", "inv1")).decode())
    assert done.returncode == 0, done.stderr
    offset = int(done.stdout)
    snapshot = client.projection(session, min_offset=offset, timeout_s=READ_TIMEOUT_S)
    assert snapshot.last_offset == offset
    assert snapshot.invocations_total == 1


def test_append_reads_json_lines_from_stdin_and_prints_each_offset(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    session = _session()
    events = [_event("hi", "inv1"), _event("hello", "inv1", "root"), _event("more", "inv2")]
    lines = "".join(orjson.dumps(event).decode() + "\n\n" for event in events)
    done = _command(deployment, "append", session, stdin=lines)
    assert done.returncode == 0, done.stderr
    offsets = [int(line) for line in done.stdout.splitlines()]
    assert len(offsets) == 3
    assert offsets == sorted(offsets)
    contents = client.context(session, min_offset=offsets[-1], timeout_s=READ_TIMEOUT_S)
    texts = [part.text for content in contents for part in content.parts or []]
    assert texts[0] == "hi"
    assert texts[-1] == "more"
    # One pretty-printed event on stdin is one event too.
    pretty = orjson.dumps(_event("again", "inv3"), option=orjson.OPT_INDENT_2).decode()
    again = _command(deployment, "append", session, "-", stdin=pretty)
    assert again.returncode == 0, again.stderr
    assert int(again.stdout) > offsets[-1]


def test_append_refuses_bad_input_in_one_line_and_appends_nothing(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    session = _session()
    good = orjson.dumps(_event("hi", "inv1")).decode()
    cases = {
        f"{good}\nnot json\n": "line 2: not JSON",
        "[1, 2]": "not a JSON list",
        "": "no event given",
        f'{good}\n{{"author": "user", "content": 3}}\n': "events[1]",
    }
    for given, said in cases.items():
        done = _command(deployment, "append", session, stdin=given)
        assert done.returncode == 2, (given, done)
        assert done.stdout == ""
        assert done.stderr.startswith("ctxstream append: "), done.stderr
        assert said in done.stderr, (said, done.stderr)
        assert done.stderr.count("\n") == 1, done.stderr
    # The first line of the last case was valid, and was not appended either: all or none.
    marker = _command(deployment, "append", session, good)
    assert marker.returncode == 0, marker.stderr
    snapshot = client.projection(session, min_offset=int(marker.stdout), timeout_s=READ_TIMEOUT_S)
    assert snapshot.invocations_total == 1


def test_append_to_a_broker_that_cannot_be_reached_fails_in_one_line(
    deployment: ProjectorSettings,
) -> None:
    gone = f"127.0.0.1:{free_ports(1)[0]}"
    event = orjson.dumps(_event("hi", "inv1")).decode()
    done = _command(deployment, "append", _session(), event, CTXSTREAM_KAFKA_BOOTSTRAP=gone)
    assert done.returncode == 1, done
    assert done.stderr.startswith(f"ctxstream append: broker {gone} unavailable"), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr


def test_sessions_lists_each_session_with_its_last_offset_and_invocations(
    deployment: ProjectorSettings, client: SyncClient
) -> None:
    tenant = unique_topic("t")
    sessions = {_session(tenant): 2, _session(tenant): 1}
    last: dict[str, int] = {}
    for session, invocations in sessions.items():
        for number in range(invocations):
            last[session] = client.append(session, _event("hi", f"inv{number}"))
        client.projection(session, min_offset=last[session], timeout_s=READ_TIMEOUT_S)
    client.append(_session(), _event("another tenant", "inv1"))

    listed = _command(deployment, "sessions", "--tenant", tenant, "--json")
    assert listed.returncode == 0, listed.stderr
    entries = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert [entry["session_key"] for entry in entries] == sorted(sessions)
    for entry in entries:
        assert entry["last_offset"] == last[entry["session_key"]]
        assert entry["invocations"] == sessions[entry["session_key"]]
        assert entry["compactions"] == 0
        assert entry["summary_event_id"] is None

    text = _command(deployment, "sessions", "--tenant", tenant)
    assert text.returncode == 0, text.stderr
    first, second = sorted(sessions)
    assert text.stdout.splitlines() == [
        f"{first}: last offset {last[first]}, {sessions[first]} "
        f"invocation{'s' if sessions[first] > 1 else ''}, 0 compactions",
        f"{second}: last offset {last[second]}, {sessions[second]} "
        f"invocation{'s' if sessions[second] > 1 else ''}, 0 compactions",
    ]
    none = _command(deployment, "sessions", "--tenant", tenant, "--app", "no-such-app")
    assert (none.returncode, none.stdout, none.stderr) == (0, "", "no sessions\n")


def test_sessions_skips_hostile_records_and_keeps_tenants_apart(projections: Projections) -> None:
    settings = ProjectorSettings(
        kafka_bootstrap=projections.settings.kafka_bootstrap,
        topic_prefix=projections.settings.topic_prefix,
    )
    listed = _command(settings, "sessions", "--tenant", "acme", "--app", "support", "--json")
    assert listed.returncode == 0, listed.stderr
    entries = [orjson.loads(line) for line in listed.stdout.splitlines()]
    # acme's four sessions, not acme-eu's; the record that is no snapshot and other's
    # snapshot under an acme key are skipped.
    assert [entry["session_key"] for entry in entries] == sorted(projections.acme)
    for entry in entries:
        expected = projections.latest[entry["session_key"]]
        assert entry["last_offset"] == expected.last_offset
        assert entry["invocations"] == expected.invocations_total
    everyone = _command(settings, "sessions", "--json")
    assert everyone.returncode == 0, everyone.stderr
    keys = [orjson.loads(line)["session_key"] for line in everyone.stdout.splitlines()]
    assert keys == sorted(projections.latest)


def test_sessions_of_a_deployment_without_topics_fails_in_one_line(
    deployment: ProjectorSettings,
) -> None:
    done = _command(deployment, "sessions", CTXSTREAM_TOPIC_PREFIX=unique_topic("none"))
    assert done.returncode == 1, done
    assert done.stderr.startswith("ctxstream sessions: topic "), done.stderr
    assert "ctxstream topics create" in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
