"""``adk api_server`` as a subprocess on the scripted agent, driven over HTTP, and its normalizer.

:func:`running_api_server` writes an agents dir holding the scripted App of
:mod:`tests.support.adk_runner` (ADK-owned sliding-window compaction), plus a
``services.yaml`` registering ``ctxstream.adk.SessionService`` for the
``ctxstream`` scheme when the session URI uses it, and starts ``adk api_server``
on a free port with ``--session_service_uri``. :func:`drive` creates a session,
runs a script turn by turn through ``POST /run``, then lists the user's
sessions and gets the session; :func:`normalized` drops what differs between
two servers (ids, timestamps, function-call ids; summaries by the range of
events they cover).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import httpx
from google.adk.events.event import Event

from tests.conftest import free_ports
from tests.support.adk_runner.agents import APP_NAME
from tests.support.adk_runner.normalize import normalized_events

Json = Any

REPO: Final = Path(__file__).resolve().parents[2]
STARTUP_TIMEOUT_S: Final = 90.0
REQUEST_TIMEOUT_S: Final = 60.0
STOP_TIMEOUT_S: Final = 30.0

_AGENT_PACKAGE: Final = '''"""The scripted App, as adk api_server loads it from this agents dir."""

from tests.support.adk_runner.agents import build_app
from tests.support.adk_runner.recorder import Recorder
from tests.support.adk_runner.summarizer import sliding_window

app = build_app(Recorder(), sliding_window({interval}, {overlap}))
'''

_SERVICES_YAML: Final = """services:
  - scheme: ctxstream
    type: session
    class: ctxstream.adk.SessionService
"""


def write_agents_dir(root: Path, session_uri: str, *, interval: int, overlap: int) -> Path:
    """The agents dir: the scripted App's package, and ``services.yaml`` for ``ctxstream://``."""
    agents = root / "agents"
    package = agents / APP_NAME
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import agent\n")
    source = _AGENT_PACKAGE.format(interval=interval, overlap=overlap)
    (package / "agent.py").write_text(source)
    if session_uri.startswith("ctxstream://"):
        (agents / "services.yaml").write_text(_SERVICES_YAML)
    return agents


@contextlib.contextmanager
def running_api_server(
    root: Path,
    session_uri: str,
    *,
    interval: int = 2,
    overlap: int = 1,
    env: Mapping[str, str] | None = None,
) -> Iterator[httpx.Client]:
    """``adk api_server`` on `session_uri` while the block runs; an HTTP client bound to it.

    Raises:
        AssertionError: The server did not answer ``/health`` in time (its log is quoted).
    """
    agents = write_agents_dir(root, session_uri, interval=interval, overlap=overlap)
    (port,) = free_ports(1)
    log_path = root / "api_server.log"
    command = [
        *(sys.executable, "-m", "google.adk.cli", "api_server"),
        *("--host", "127.0.0.1", "--port", str(port)),
        *("--session_service_uri", session_uri, "--artifact_service_uri", "memory://"),
        str(agents),
    ]
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            command,
            cwd=root,
            env={**os.environ, **(env or {}), "PYTHONPATH": path},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=REQUEST_TIMEOUT_S) as client:
            _wait_healthy(client, process, log_path)
            yield client
    finally:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)


def _wait_healthy(client: httpx.Client, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        with contextlib.suppress(httpx.HTTPError):
            if client.get("/health").status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"adk api_server did not start:\n{log.read_text()[-4000:]}")


def drive(
    client: httpx.Client,
    script: Sequence[str],
    *,
    user_id: str = "u1",
    session_id: str = "s1",
    state: Mapping[str, Json] | None = None,
) -> dict[str, Json]:
    """Create the session, run `script` via ``/run``, list and get: every response's JSON."""
    sessions = f"/apps/{APP_NAME}/users/{user_id}/sessions"
    created = _ok(client.post(sessions, json={"sessionId": session_id, "state": dict(state or {})}))
    turns = []
    for message in script:
        body = {
            "appName": APP_NAME,
            "userId": user_id,
            "sessionId": session_id,
            "newMessage": {"role": "user", "parts": [{"text": message}]},
        }
        turns.append(_ok(client.post("/run", json=body)))
    listed = _ok(client.get(sessions))
    got = _ok(client.get(f"{sessions}/{session_id}"))
    return {"created": created, "turns": turns, "listed": listed, "session": got}


def _ok(response: httpx.Response) -> Json:
    assert response.status_code == 200, f"{response.request.url}: {response.text[:2000]}"
    return response.json()


_SESSION_CLOCKS: Final = ("lastUpdateTime", "last_update_time")


def normalized(responses: Mapping[str, Json]) -> dict[str, Json]:
    """`responses` of :func:`drive` without ids, clocks and call ids; summaries by range."""
    full = [Event.model_validate(e) for e in responses["session"].get("events", [])]
    return {
        "created": _session(responses["created"]),
        "turns": [_events(turn, full) for turn in responses["turns"]],
        "listed": [_session(session) for session in responses["listed"]],
        "session": _session(responses["session"]),
    }


def _session(session: Json) -> Json:
    out = {k: v for k, v in session.items() if k not in _SESSION_CLOCKS and k != "events"}
    if "events" in session:
        events = [Event.model_validate(e) for e in session["events"]]
        out["events"] = normalized_events(events, summaries_by_range=False)
    return out


def _events(events: Sequence[Json], history: Sequence[Event]) -> list[Json]:
    """A turn's events, normalized in the session's full history (for summaries' ranges)."""
    ids = {e["id"] for e in events}
    normal = normalized_events(history, summaries_by_range=False)
    turn = [n for n, event in zip(normal, history, strict=True) if event.id in ids]
    assert len(turn) == len(events), "a /run event is not in the session's history"
    return turn
