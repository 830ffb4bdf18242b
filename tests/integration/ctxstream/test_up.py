"""``ctxstream up`` as its users run it: a process that brings the deployment up and down.

Each test runs ``python -m ctxstream up`` with a data folder and free ports of
its own (its own broker and PostgreSQL, never the session's), reads what it prints, and
checks that nothing it started outlives it: no process whose command line or
environment names the data folder, the broker's java process included.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final

import aiohttp
import orjson
import pytest

from ctxstream import Client
from projections.contents.contents_request import ContentsRequest
from projections.fold.rebuild import rebuild_contents
from schemas.event import Content, content_to_json
from schemas.keys import SessionKey
from tests.conftest import REPO, free_ports
from tests.support.events import text_event
from tests.support.kafka import read_log

pytestmark = pytest.mark.integration

PARTITIONS: Final = 12  # the `events` partitions of a default deployment
CLAIMED: Final = re.compile(r"partition claimed partition=(\d+) address=\S+ worker=(\S+)")
UP_TIMEOUT_S: Final = 300.0  # a cold broker, a cold projector's claims, the server's imports
STOP_TIMEOUT_S: Final = 120.0  # SIGTERM to three processes (30 s each at most), the broker's stop
READ_TIMEOUT_S: Final = 30.0  # one batch of a projector sharing two cores with the test
SESSION: Final = SessionKey("acme/support/u1/s1")
PREFIX: Final = "ctxstream"


@dataclass
class Up:
    """A running ``ctxstream up``: its process, data folder and what it printed so far."""

    process: subprocess.Popen[str]
    data: Path
    out: list[str] = field(default_factory=list)
    err: list[str] = field(default_factory=list)

    def field_of(self, label: str) -> str:
        """The first word after `label` on the line of the service table that starts with it."""
        for line in self.out:
            if line.strip().startswith(label):
                return line.strip().removeprefix(label).split()[0]
        raise AssertionError(f"no {label!r} line in {self.out}")

    def wait_for_line(self, prefix: str, timeout_s: float) -> None:
        """Wait until a line of standard output starts with `prefix`, or the process ends."""
        deadline = time.monotonic() + timeout_s
        while not any(line.startswith(prefix) for line in self.out):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no {prefix!r} line: out={self.out} err={self.err}")
            time.sleep(0.2)

    def wait(self, timeout_s: float = STOP_TIMEOUT_S) -> int:
        """The exit status, once the process and its output ended."""
        status = self.process.wait(timeout_s)
        self._readers_done.wait(10)
        return status

    def __post_init__(self) -> None:
        self._readers_done = threading.Barrier(3)
        for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, lines), daemon=True).start()

    def _read(self, stream: IO[str] | None, lines: list[str]) -> None:
        assert stream is not None
        with stream:
            lines.extend(line.rstrip("\n") for line in stream)
        self._readers_done.wait(10)


def own_env() -> dict[str, str]:
    """This environment without its ``CTXSTREAM_*`` settings (another deployment's)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("CTXSTREAM_")}


def start_up(data: Path, http_port: int, settings: Mapping[str, str] | None = None) -> Up:
    """``python -m ctxstream up --data <data> --http-port <http_port>`` on a broker of its own.

    `settings` (``CTXSTREAM_*`` variables) go over the broker's and PostgreSQL's ports it
    picks.
    """
    kafka_port, controller_port, postgres_port = free_ports(3)
    env = own_env() | {
        "CTXSTREAM_KAFKA_PORT": str(kafka_port),
        "CTXSTREAM_KAFKA_CONTROLLER_PORT": str(controller_port),
        "CTXSTREAM_POSTGRES_PORT": str(postgres_port),
        "CTXSTREAM_KAFKA_FAST": "1",
        "CTXSTREAM_PYTHON": sys.executable,
        **(settings or {}),
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ctxstream",
            "up",
            "--data",
            str(data),
            "--http-port",
            str(http_port),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return Up(process, data)


def processes_naming(data: Path) -> list[str]:
    """Every live process whose command line or environment names `data` (pid: command)."""
    found = []
    needle = str(data).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1][0]
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if state != "Z" and (needle in cmdline or needle in environ):
            command = cmdline.replace(b"\0", b" ").decode(errors="replace")
            found.append(f"{entry.name}: {command}")
    return found


async def append_and_read(bootstrap: str) -> tuple[int, list[Content], list[Content]]:
    """Append a session through the client; its last offset, its context read, the rebuild."""
    events = [
        text_event(f"inv{n}-{role}", f"inv{n}", 1_000.0 + 2 * n + i, f"{role} {n}", author=who)
        for n in range(3)
        for i, (role, who) in enumerate((("question", "user"), ("answer", "root")))
    ]
    async with Client(bootstrap=bootstrap, topic_prefix=PREFIX) as client:
        offsets = await client.append_many(SESSION, events)
        read = await client.context(SESSION, min_offset=offsets[-1], timeout_s=READ_TIMEOUT_S)
    log = await read_log(bootstrap, f"{PREFIX}.events")
    return offsets[-1], read, rebuild_contents(log[SESSION], ContentsRequest(agent_name=""))


async def http_context(url: str, key: str, min_offset: int) -> Any:
    """The session's contents as ``GET /v1/sessions/{key}/context`` answers them."""
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{url}/v1/sessions/{SESSION}/context",
            params={"min_offset": str(min_offset), "timeout_s": str(READ_TIMEOUT_S)},
            headers={"Authorization": f"Bearer {key}"},
        ) as response,
    ):
        assert response.status == 200, await response.text()
        return orjson.loads(await response.read())["contents"]


def test_up_serves_appends_and_reads_then_stops_everything_on_sigint(data: Path) -> None:
    (http_port,) = free_ports(1)
    up = start_up(data, http_port)
    try:
        up.wait_for_line("status: ", UP_TIMEOUT_S)
        bootstrap = up.field_of("bootstrap")
        url = up.field_of("http api")
        assert url == f"http://127.0.0.1:{http_port}"
        assert processes_naming(data)  # the broker and the workers run with it

        last, read, expected = asyncio.run(append_and_read(bootstrap))
        assert read == expected
        key = subprocess.run(
            [sys.executable, "-m", "ctxstream", "keys", "create", "acme"],
            cwd=REPO,
            env={**own_env(), "CTXSTREAM_KAFKA_BOOTSTRAP": bootstrap},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout.strip()
        contents = asyncio.run(http_context(url, key, last))
        assert contents == [content_to_json(content) for content in expected]
    finally:
        up.process.send_signal(signal.SIGINT)
        status = up.wait()

    assert status == 0, up.err
    assert up.out[-1] == "stopped"
    assert not [line for line in up.out + up.err if "Traceback" in line]
    assert processes_naming(data) == []


def test_up_with_its_http_port_taken_says_so_in_one_line_and_leaves_nothing_running(
    data: Path,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        up = start_up(data, taken.getsockname()[1])
        status = up.wait(UP_TIMEOUT_S + STOP_TIMEOUT_S)

    assert status == 1
    assert len(up.err) == 1, up.err
    assert up.err[0].startswith("ctxstream up: the HTTP API did not start: port ")
    assert f"is taken by pid {os.getpid()} (" in up.err[0]
    assert up.err[0].endswith("; move it: --http-port <another port> (or CTXSTREAM_HTTP_PORT)")
    assert not [line for line in up.out + up.err if "Traceback" in line]
    assert processes_naming(data) == []


def claims_logged(data: Path) -> dict[str, set[int]]:
    """The partitions each projector worker id claimed, as ``<data>/logs/projector.log`` says."""
    claimed: dict[str, set[int]] = {}
    log = (data / "logs" / "projector.log").read_text(errors="replace")
    for partition, worker in CLAIMED.findall(log):
        claimed.setdefault(worker, set()).add(int(partition))
    return claimed


def test_up_restarted_on_a_fixed_read_port_is_ready_only_once_its_projector_claimed(
    data: Path,
) -> None:
    """The previous run's claims name the same address: they must not make the restart ready."""
    http_port, query_port = free_ports(2)
    fixed = {"CTXSTREAM_QUERY_PORT": str(query_port)}
    first = start_up(data, http_port, fixed)
    try:
        first.wait_for_line("status: ", UP_TIMEOUT_S)
    finally:
        first.process.send_signal(signal.SIGINT)
        assert first.wait() == 0, first.err
    before = claims_logged(data)
    assert [set(range(PARTITIONS))] == list(before.values())  # one worker claimed them all

    again = start_up(data, http_port, fixed)
    try:
        again.wait_for_line("ctxstream is up", UP_TIMEOUT_S)
        claimed_when_ready = {
            worker: partitions
            for worker, partitions in claims_logged(data).items()
            if worker not in before
        }
        again.wait_for_line("status: ", UP_TIMEOUT_S)
    finally:
        again.process.send_signal(signal.SIGINT)
        status = again.wait()

    assert status == 0, again.err
    assert list(claimed_when_ready.values()) == [set(range(PARTITIONS))], claimed_when_ready
    assert processes_naming(data) == []


def test_up_with_its_broker_port_taken_names_the_holder_and_the_variable_that_moves_it(
    data: Path,
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        up = start_up(data, free_ports(1)[0], {"CTXSTREAM_KAFKA_PORT": str(port)})
        status = up.wait(UP_TIMEOUT_S + STOP_TIMEOUT_S)

    assert status == 1
    assert len(up.err) == 1, up.err
    assert up.err[0].startswith(
        f"ctxstream up: kafka did not start: port {port} on 127.0.0.1 is taken by "
        f"pid {os.getpid()} ("
    )
    assert up.err[0].endswith("; move it: CTXSTREAM_KAFKA_PORT=<another port>")
    assert processes_naming(data) == []
