"""The HTTP API as its users meet it: ``ctxstream serve`` and ``ctxstream keys`` as processes.

:func:`start_server` runs ``python -m ctxstream serve`` with a deployment's
settings in its environment and waits until it answers;
:func:`ctxstream_command` runs any other ``ctxstream`` command;
:func:`sse_events` reads a ``text/event-stream`` response as a client would.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import aiohttp

from streams.projector_settings import ProjectorSettings
from tests.support.kafka import REPO, settings_env, stop_worker

SERVER_START_TIMEOUT_S: Final = 60.0  # imports, the api-keys topic, the producer
COMMAND_TIMEOUT_S: Final = 60.0


@dataclass(frozen=True)
class Server:
    """A running ``ctxstream serve`` process and where it answers."""

    process: subprocess.Popen[bytes]
    url: str
    log: Path


def ctxstream_command(
    settings: ProjectorSettings, *args: str, extra_env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m ctxstream <args>`` with `settings` in its environment, to its end."""
    env = {**os.environ, **settings_env(settings), **(extra_env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ctxstream", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )


def create_key(settings: ProjectorSettings, tenant: str) -> str:
    """A new key of `tenant`, made by ``ctxstream keys create``; its secret."""
    result = ctxstream_command(settings, "keys", "create", tenant)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def start_server(settings: ProjectorSettings, port: int, log: Path, **extra_env: str) -> Server:
    """``python -m ctxstream serve`` on 127.0.0.1:`port`, once its OpenAPI document answers."""
    env = {
        **os.environ,
        **settings_env(settings),
        "CTXSTREAM_HTTP_PORT": str(port),
        **{f"CTXSTREAM_{name.upper()}": value for name, value in extra_env.items()},
    }
    with log.open("ab") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "ctxstream", "serve"],
            cwd=REPO,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    server = Server(process, f"http://127.0.0.1:{port}", log)
    try:
        asyncio.run(_answering(server))
    except BaseException:
        stop_worker(process)
        raise
    return server


async def _answering(server: Server) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    async with aiohttp.ClientSession() as http:
        while True:
            if server.process.poll() is not None:
                raise AssertionError(f"ctxstream serve exited: {server.log.read_text()[-3000:]}")
            try:
                async with http.get(f"{server.url}/openapi.json") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"ctxstream serve did not answer: {server.log.read_text()}")
            await asyncio.sleep(0.2)


@dataclass(frozen=True)
class SseEvent:
    """One server-sent event: its type, id and data (lines joined by newlines)."""

    event: str | None
    id: str | None
    data: str


async def sse_events(response: aiohttp.ClientResponse) -> AsyncIterator[SseEvent]:
    """The events of a ``text/event-stream`` response, as they arrive (comments skipped)."""
    event: str | None = None
    event_id: str | None = None
    data: list[str] = []
    async for raw in response.content:
        line = raw.decode().rstrip("\r\n")
        if not line:
            if data or event is not None:
                yield SseEvent(event, event_id, "\n".join(data))
            event, event_id, data = None, None, []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "id":
            event_id = value
        elif field == "data":
            data.append(value)
