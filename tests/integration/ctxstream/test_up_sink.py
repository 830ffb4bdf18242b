"""``ctxstream up`` with its PostgreSQL and sink: an appended event reaches the SQL read model.

The run has a broker and a PostgreSQL cluster of its own (``test_up.start_up``).
The DSN, password included, is asked of ``deploy/postgres/start`` again (it is
idempotent: with the cluster running it only prints the DSN), not read from
``up``, which prints it masked. The row is read from the ``events`` view of the
target schema, polled for a bounded time; after Ctrl-C the sink's process must be
gone with everything else ``up`` started.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Final

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from ctxstream import Client
from tests.conftest import DEPLOY, free_ports
from tests.integration.ctxstream.test_up import (
    PREFIX,
    SESSION,
    STOP_TIMEOUT_S,
    UP_TIMEOUT_S,
    own_env,
    processes_naming,
    start_up,
)
from tests.support.events import text_event

pytestmark = pytest.mark.integration

ROW_TIMEOUT_S: Final = 60.0  # one fetch of a sink sharing two cores with the test
SINK_LINE: Final = re.compile(r"^\s*sink\s+pid (\d+), schema ctxstream in (\S+)$")
EVENT_ID: Final = "up-sink-e1"


def cluster_dsn(data: Path, port: int) -> str:
    """The DSN of the cluster ``up`` started in `data`, as ``deploy/postgres/start`` prints it."""
    done = subprocess.run(
        [str(DEPLOY / "postgres" / "start")],
        env=own_env()
        | {"CTXSTREAM_POSTGRES_DIR": str(data / "postgres"), "CTXSTREAM_POSTGRES_PORT": str(port)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


async def append_one(bootstrap: str) -> int:
    """Append one event to :data:`SESSION`; its offset."""
    async with Client(bootstrap=bootstrap, topic_prefix=PREFIX) as client:
        return await client.append(SESSION, text_event(EVENT_ID, "inv1", 1_000.0, "hello"))


def stored_rows(dsn: str, deadline_s: float) -> list[tuple[str, int, str]]:
    """The ``ctxstream.events`` rows of :data:`SESSION`, polled until there is one or time is up."""
    deadline = time.monotonic() + deadline_s
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            rows = conn.execute(
                'SELECT event_id, "offset", author FROM ctxstream.events WHERE session_key = %s',
                (SESSION,),
            ).fetchall()
            if rows or time.monotonic() > deadline:
                return [(str(a), int(b), str(c)) for a, b, c in rows]
            time.sleep(0.5)


def alive(pid: int) -> bool:
    """Whether process `pid` exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
    except OSError:
        return False
    return state != "Z"


def test_up_starts_the_sink_an_appended_event_reaches_postgres_and_ctrl_c_stops_it(
    data: Path,
) -> None:
    http_port, postgres_port = free_ports(2)
    up = start_up(data, http_port, {"CTXSTREAM_POSTGRES_PORT": str(postgres_port)})
    try:
        up.wait_for_line("status: ", UP_TIMEOUT_S)
        (match,) = [m for line in up.out if (m := SINK_LINE.match(line))]
        sink_pid, shown_dsn = int(match[1]), match[2]
        cmdline = Path(f"/proc/{sink_pid}/cmdline").read_bytes().split(b"\0")
        assert cmdline[1:4] == [b"-m", b"ctxstream", b"sink"], cmdline

        dsn = cluster_dsn(data, postgres_port)
        password = conninfo_to_dict(dsn)["password"]
        assert isinstance(password, str)
        assert password
        assert password not in "\n".join(up.out + up.err)
        assert shown_dsn == dsn.replace(f":{password}@", ":***@")
        assert f"127.0.0.1:{postgres_port}/" in dsn

        offset = asyncio.run(append_one(up.field_of("bootstrap")))
        rows = stored_rows(dsn, ROW_TIMEOUT_S)
        assert rows == [(EVENT_ID, offset, "user")]
    finally:
        up.process.send_signal(signal.SIGINT)
        status = up.wait(STOP_TIMEOUT_S)

    assert status == 0, up.err
    assert up.out[-1] == "stopped"
    assert not alive(sink_pid)
    assert not [line for line in up.out + up.err if "Traceback" in line]
    assert processes_naming(data) == []


def test_up_whose_sink_dies_says_so_in_one_line_and_stops_everything(data: Path) -> None:
    up = start_up(data, free_ports(1)[0])
    try:
        up.wait_for_line("status: ", UP_TIMEOUT_S)
        (match,) = [m for line in up.out if (m := SINK_LINE.match(line))]
        os.kill(int(match[1]), signal.SIGKILL)
        status = up.wait(UP_TIMEOUT_S)
    finally:
        if up.process.poll() is None:
            up.process.send_signal(signal.SIGINT)
            up.wait(STOP_TIMEOUT_S)

    assert status == 1
    assert len(up.err) == 1, up.err
    assert up.err[0].startswith(f"ctxstream up: sink exited with status {-signal.SIGKILL} (")
    assert up.err[0].endswith(f"log: {data.resolve() / 'logs' / 'sink.log'})")
    assert processes_naming(data) == []
