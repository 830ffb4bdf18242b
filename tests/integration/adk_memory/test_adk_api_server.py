"""``adk api_server`` takes ``--memory_service_uri ctxstream://`` through examples/adk's registry.

ADK's own server as a subprocess, given the example's folder (its ``services.yaml`` and
``services.py``), sessions in ADK's ``memory://``: a turn of the example's agents, then
ADK's ``PATCH .../memory`` endpoint adds the session to memory. The oracle is ADK's
``InMemoryMemoryService`` given the session the server returns: a search of the drop-in
finds the same memories.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import httpx
import pytest
from google.adk.memory import InMemoryMemoryService
from google.adk.sessions import Session

from ctxstream.adk import MemoryService
from ctxstream.cli.up_ready import free_port
from tests.integration.adk_memory.conftest import MemoryDeployment, found

REPO: Final = Path(__file__).resolve().parents[3]
START_TIMEOUT_S: Final = 90.0


@pytest.fixture(scope="module")
def api_server(memory_deployment: MemoryDeployment) -> Iterator[str]:
    """``adk api_server examples/adk`` with the deployment's memory; its base URL."""
    port = free_port()
    env = {
        **os.environ,
        "CTXSTREAM_POSTGRES_DSN": memory_deployment.dsn,
        "CTXSTREAM_SINK_SCHEMA": memory_deployment.schema,
    }
    command = [sys.executable, "-m", "google.adk.cli", "api_server", str(REPO / "examples/adk")]
    command += ["--port", str(port), "--session_service_uri", "memory://"]
    command += ["--memory_service_uri", memory_deployment.uri]
    log = memory_deployment.folder / "api_server.log"
    with log.open("ab") as out:
        server = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if httpx.get(f"{url}/list-apps", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"adk api_server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)


async def test_adk_api_server_adds_a_session_to_the_ctxstream_memory(
    api_server: str, memory_service: MemoryService
) -> None:
    base = f"{api_server}/apps/adk/users/u1"
    async with httpx.AsyncClient(timeout=60) as http:
        created = await http.post(f"{base}/sessions/s1", json={})
        assert created.status_code == 200, created.text
        message = {"role": "user", "parts": [{"text": "What is the weather in Oslo"}]}
        body = {"app_name": "adk", "user_id": "u1", "session_id": "s1", "new_message": message}
        ran = await http.post(f"{api_server}/run", json=body)
        assert ran.status_code == 200, ran.text
        patched = await http.patch(f"{base}/memory", json={"session_id": "s1"})
        assert patched.status_code == 200, patched.text
        session = Session.model_validate((await http.get(f"{base}/sessions/s1")).json())

    oracle = InMemoryMemoryService()
    await oracle.add_session_to_memory(session)
    expected = await found(oracle, "adk", "u1", "weather Oslo")
    assert {text for *_, text in expected} == {
        "What is the weather in Oslo",
        "The weather in Oslo: snow, -3 C.",
    }
    assert await found(memory_service, "adk", "u1", "weather Oslo") == expected
