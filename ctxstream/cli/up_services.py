"""The processes of ``ctxstream up``: deploy scripts, child processes, their capped logs.

A service is a ``deploy/<service>/start`` script (the broker, PostgreSQL), whose last
printed line is its address, or a ``python -m`` child (:func:`spawn`) in a session of
its own, with the caller's environment and ``up``'s settings over it. What a child
writes goes to ``<data>/logs/<service>.log`` through ``up``, which caps it
(:func:`copy_capped`): a flood of warnings cannot fill the disk. :func:`ready` polls a
check until the service answers, exits or runs out of time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aiokafka.errors import KafkaError

from ctxstream.bench.processes import stop_worker
from ctxstream.cli.common import fail
from schemas.errors import CtxstreamError
from schemas.log_text import shown

logger = logging.getLogger(__name__)

DEPLOY: Final = Path(__file__).resolve().parents[2] / "deploy"
SCRIPT_STOP_S: Final = 60.0  # deploy/kafka/stop: SIGTERM, up to 30 s, then SIGKILL
READY_POLL_S: Final = 0.25
#: Bytes of a service's log (``<data>/logs/<service>.log``) before it moves to ``<service>.log.1``.
LOG_MAX_BYTES: Final = 64 * 1024**2
LOG_DRAIN_S: Final = 5.0  # a stopped service's pipe is read to its end for at most this long
_COPY_CHUNK: Final = 64 * 1024


class ServiceStartError(CtxstreamError):
    """A service of the deployment did not start; what had started is stopped."""

    def __init__(self, *, service: str, reason: str) -> None:
        super().__init__(f"{service} did not start: {reason}")
        self.service, self.reason = service, reason


class ServiceExitedError(CtxstreamError):
    """A process of the running deployment exited by itself."""

    def __init__(self, *, service: str, status: int, log: Path) -> None:
        super().__init__(f"{service} exited with status {status} ({last_line(log)}; log: {log})")
        self.service, self.status, self.log = service, status, log


@dataclass(frozen=True, slots=True)
class Child:
    """A started service: its name, its process and the log its output goes to."""

    name: str
    process: asyncio.subprocess.Process
    log: Path


async def start_script(service: str, env: Mapping[str, str], logs: Path, timeout_s: float) -> str:
    """``deploy/<service>/start``; the last line it printed (an address).

    Raises:
        ServiceStartError: The script failed; the reason is its last line on stderr.
    """
    status, stdout = await run_script(f"{service}/start", env, logs, timeout_s)
    printed = stdout.strip().splitlines()
    if status != 0 or not printed:
        log = logs / f"{service}-start.log"
        raise ServiceStartError(service=service, reason=f"{last_line(log)} (log: {log})")
    return printed[-1]


async def run_script(
    script: str, env: Mapping[str, str], logs: Path, timeout_s: float
) -> tuple[int, str]:
    """Run ``deploy/<script>`` (stderr to ``<logs>/<name>.log``); its status and stdout.

    Out of time or cancelled, the script is terminated and waited for (status
    124 when out of time).
    """
    log = logs / f"{script.replace('/', '-')}.log"
    with log.open("ab") as stderr:
        process = await asyncio.create_subprocess_exec(
            str(DEPLOY / script),
            env={**os.environ, **env},
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            start_new_session=True,  # a terminal's Ctrl-C does not cut it short
        )
    try:
        stdout, _ = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        return 124, ""
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()
    return process.returncode or 0, stdout.decode(errors="replace")


async def stop_script(script: str, env: Mapping[str, str], logs: Path) -> None:
    """``deploy/<script>``; a failure is one line on stderr (the rest still stops)."""
    status, _ = await run_script(script, env, logs, SCRIPT_STOP_S)
    if status != 0:
        log = logs / f"{script.replace('/', '-')}.log"
        fail("up", f"{script} failed with status {status}: {last_line(log)} (log: {log})")


async def spawn(
    name: str,
    module: list[str],
    env: Mapping[str, str],
    logs: Path,
    stack: contextlib.AsyncExitStack,
) -> Child:
    """``python -m <module...>`` with the caller's environment and `env` over it."""
    log = logs / f"{name}.log"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        *module,
        env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # stopped by `up`, after the services that use it
    )
    assert process.stdout is not None  # noqa: S101 - asked for with PIPE just above
    copying = asyncio.create_task(copy_capped(process.stdout, log, LOG_MAX_BYTES))
    stack.push_async_callback(_copied, copying)  # after the stop below: the rest of its output
    stack.push_async_callback(stop_worker, process)
    logger.debug("started service=%s pid=%d", name, process.pid)
    return Child(name, process, log)


async def copy_capped(output: asyncio.StreamReader, log: Path, max_bytes: int) -> None:
    """Append `output` to `log` until it ends, keeping at most about 2 x `max_bytes` on disk.

    A chunk that would take `log` past `max_bytes` first moves it to
    ``<log>.1`` (replacing the one before) and starts `log` anew: the newest
    output is always kept, and a flood of lines (a worker's warnings) cannot
    fill the disk. ``up`` does the copying, rather than each service rotating
    its own file, so everything a service writes is capped alike: its log
    records, a traceback, a library's own print.
    """
    older = log.with_name(f"{log.name}.1")
    sink = log.open("ab")
    try:
        size = sink.tell()
        while chunk := await output.read(_COPY_CHUNK):
            if size and size + len(chunk) > max_bytes:
                sink.close()
                os.replace(log, older)  # a rename: nothing to wait for
                sink = log.open("ab")
                size = 0
            sink.write(chunk)
            sink.flush()
            size += len(chunk)
    finally:
        sink.close()


async def _copied(copying: asyncio.Task[None]) -> None:
    """Wait for a stopped service's last output to reach its log (a bounded wait)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(copying, LOG_DRAIN_S)


async def ready(
    service: str, check: Callable[[], Awaitable[bool]], child: Child, timeout_s: float
) -> None:
    """Poll `check` until it holds; a broker still settling counts as not yet.

    Raises:
        ServiceStartError: `child` exited, or `check` did not hold within `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        if child.process.returncode is not None:
            reason = f"exited with status {child.process.returncode}: {last_line(child.log)}"
            raise ServiceStartError(service=service, reason=f"{reason} (log: {child.log})")
        try:
            if await check():
                return
        except KafkaError:
            pass  # the broker is still settling: the deadline bounds it
        if time.monotonic() > deadline:
            raise ServiceStartError(
                service=service, reason=f"not ready within {timeout_s:.0f} s (log: {child.log})"
            )
        await asyncio.sleep(READY_POLL_S)


def last_line(log: Path) -> str:
    """The last non-empty line of `log`, bounded; a placeholder when there is none."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return shown(lines[-1], 300) if lines else "no output"
