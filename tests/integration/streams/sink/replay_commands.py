"""The replay tests' command runs: ``python -m ctxstream ...`` as a child of the test's loop.

Run with asyncio's subprocesses, so the readers and sinks of the test go on meanwhile.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass

from streams.sink.settings import SinkSettings
from tests.integration.streams.sink.sink_load import REPO, sink_env


@dataclass(frozen=True, slots=True)
class Ran:
    """A command's exit status, its output, and when it started and ended (monotonic)."""

    returncode: int
    stdout: str
    stderr: str
    started: float
    ended: float


async def ctxstream(settings: SinkSettings, *args: str, timeout_s: float = 180.0) -> Ran:
    """``python -m ctxstream *args`` with `settings`' deployment, DSN and schema."""
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "ctxstream",
        *args,
        cwd=REPO,
        env={**os.environ, **sink_env(settings)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    assert process.returncode is not None
    return Ran(process.returncode, out.decode(), err.decode(), started, time.monotonic())


def lines(ran: Ran) -> list[str]:
    """The stderr lines of `ran` that are not log lines (a refusal is one)."""
    return [line for line in ran.stderr.splitlines() if line.startswith("ctxstream ")]
