"""``ctxstream up``: the whole deployment on 127.0.0.1 in one command, until Ctrl-C.

It starts, in this order, each once the one before is ready:

====================  ==========================================================
the Kafka broker      ``deploy/kafka/start`` (fetches its jars when missing), data
                      in ``<data>/kafka``; ports from ``CTXSTREAM_KAFKA_PORT`` and
                      ``CTXSTREAM_KAFKA_CONTROLLER_PORT``
PostgreSQL            ``deploy/postgres/start``, only with ``--postgres``: nothing
                      in the product reads it yet
the topics            :func:`streams.topics.create_topics`, idempotently
the projector         ``python -m ctxstream worker`` on the native engine; ready
                      once this run's projector (a worker id no claim named
                      before it started) has claimed every `events` partition
                      at its read address, and a context read of a probe
                      session with no records is answered through the read
                      plane
the summarizer        ``python -m summarizer_worker``
the HTTP API          ``python -m ctxstream serve``; ready once ``/openapi.json``
                      answers
====================  ==========================================================

then prints where each one is, and a status line (:mod:`ctxstream.cli.up_status`)
whenever it changed, once a minute otherwise. SIGINT or SIGTERM stops them in the reverse
order: each process gets SIGTERM and is waited for, the broker is stopped by
``deploy/kafka/stop``; the exit status is 0. A service that does not start,
or a process that exits while the deployment runs, is one line on stderr, and
what had started is stopped the same way; the exit status is 1.

The workers and the server inherit the caller's ``CTXSTREAM_*`` settings
(compaction, summarizer backend, HTTP settings, ...), with the broker's
address, the data folders and the ports ``up`` chose put over them. Each runs
in a session of its own, so a terminal's Ctrl-C reaches ``up`` alone and the
order of stopping holds. What each writes goes to ``<data>/logs/<service>.log``
through ``up``, which caps it (:func:`copy_capped`: at most about twice
:data:`LOG_MAX_BYTES` on disk, the newest output kept).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO, TypeVar

import aiohttp
from aiokafka.errors import KafkaError
from pydantic import ValidationError

from ctxstream.api.settings import ServeSettings
from ctxstream.bench.processes import PROJECTOR, SUMMARIZER, stop_worker
from ctxstream.cli.port_holder import holder, is_taken, port_taken, socket_inodes
from ctxstream.cli.up_status import StatusCadence, StatusReader
from ctxstream.errors import ContextReadError
from ctxstream.reads import ContextReads
from schemas.errors import CtxstreamError
from schemas.kafka.settings import TOPIC_ROLES
from schemas.log_text import shown
from schemas.masked_dsn import masked_dsn
from streams.projector_settings import ProjectorSettings
from streams.reads.claim import PartitionClaim
from streams.reads.owners import PartitionOwners
from streams.topics import create_topics

logger = logging.getLogger(__name__)

DEPLOY: Final = Path(__file__).resolve().parents[1] / "deploy"
DEFAULT_DATA: Final = Path(".run/up")
HOST: Final = "127.0.0.1"
BROKER_START_S: Final = 360.0  # a first run fetches the broker's jars from Maven Central
POSTGRES_START_S: Final = 600.0  # a first run installs Debian's postgresql-15
SCRIPT_STOP_S: Final = 60.0  # deploy/kafka/stop: SIGTERM, up to 30 s, then SIGKILL
CLAIMED_S: Final = 120.0  # a cold projector: group join, restore, one claim per partition
SERVING_S: Final = 60.0  # the server's imports, the api-keys topic, its producer
READY_POLL_S: Final = 0.25
#: The session whose context read shows the projector serves reads (it has no records).
PROBE_SESSION: Final = "ctxstream/up/probe/ready"
PROBE_READ_S: Final = 5.0
STATUS_EVERY_S: Final = 3.0
#: The broker's port variables (read by ``deploy/kafka/start``) and their defaults.
BROKER_PORTS: Final = {"CTXSTREAM_KAFKA_PORT": "9092", "CTXSTREAM_KAFKA_CONTROLLER_PORT": "9093"}
#: Bytes of a service's log (``<data>/logs/<service>.log``) before it moves to ``<service>.log.1``.
LOG_MAX_BYTES: Final = 64 * 1024**2
LOG_DRAIN_S: Final = 5.0  # a stopped service's pipe is read to its end for at most this long
_COPY_CHUNK: Final = 64 * 1024
#: Loggers whose lines would break into the command's own output.
QUIET_LOGGERS: Final = {"aiokafka": logging.CRITICAL, "streams": logging.WARNING}

T = TypeVar("T")


class ServiceStartError(CtxstreamError):
    """A service of the deployment did not start; what had started is stopped."""

    def __init__(self, *, service: str, reason: str) -> None:
        super().__init__(f"{service} did not start: {reason}")
        self.service, self.reason = service, reason


class ServiceExitedError(CtxstreamError):
    """A process of the running deployment exited by itself."""

    def __init__(self, *, service: str, status: int, log: Path) -> None:
        super().__init__(f"{service} exited with status {status} ({_last_line(log)}; log: {log})")
        self.service, self.status, self.log = service, status, log


class _Stopped(Exception):
    """SIGINT or SIGTERM came while a service was starting."""


@dataclass(frozen=True, slots=True)
class UpConfig:
    """What ``ctxstream up`` was asked for.

    Attributes:
        data: The folder of the broker's data, the projector's state and every log.
        http_port: The HTTP API's port (None: ``CTXSTREAM_HTTP_PORT``, else 8080).
        postgres: Start PostgreSQL too.
    """

    data: Path
    http_port: int | None
    postgres: bool


@dataclass(frozen=True, slots=True)
class _Child:
    name: str
    process: asyncio.subprocess.Process
    log: Path


@dataclass(frozen=True, slots=True)
class _Running:
    """The started deployment: its settings and the processes to watch."""

    settings: ProjectorSettings
    children: tuple[_Child, ...]


def add_up_command(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``up`` to the ``ctxstream`` command's subcommands."""
    up = commands.add_parser(
        "up",
        help="bring up broker, topics, projector, summarizer and HTTP API on 127.0.0.1 and "
        "print their status until Ctrl-C",
    )
    up.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        metavar="DIR",
        help=f"data and logs of every service (default {DEFAULT_DATA})",
    )
    up.add_argument(
        "--http-port",
        type=int,
        metavar="P",
        help="the HTTP API's port (default: CTXSTREAM_HTTP_PORT, else 8080)",
    )
    up.add_argument(
        "--postgres",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also start PostgreSQL (deploy/postgres/start); off by default: nothing reads it yet",
    )
    up.set_defaults(run=_up)


def _up(args: argparse.Namespace) -> int:
    for name, level in QUIET_LOGGERS.items():
        logging.getLogger(name).setLevel(max(level, logging.getLogger().level))
    config = UpConfig(data=args.data, http_port=args.http_port, postgres=args.postgres)
    try:
        return asyncio.run(run_up(config, sys.stdout))
    except KeyboardInterrupt:  # before the handlers were installed: nothing had started
        return 0


async def run_up(config: UpConfig, out: TextIO) -> int:
    """Bring the deployment up, report its status until SIGINT or SIGTERM, then stop it.

    Returns:
        0 after a signal, 1 when a service did not start or a process exited.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        async with contextlib.AsyncExitStack() as stack:
            try:
                running = await _start(config, stack, stop, out)
                await _report(running, stop, out)
            except _Stopped:
                pass
            except CtxstreamError as exc:
                _fail(str(exc))
                return 1
            except Exception as exc:  # noqa: BLE001 - a bug: one line here, the rest in a file
                log = config.data / "logs" / "up-error.log"
                with contextlib.suppress(OSError):
                    log.write_text(traceback.format_exc(), encoding="utf-8")
                _fail(f"unexpected {type(exc).__name__}: {exc} (traceback: {log})")
                return 1
            finally:
                _say(out, "stopping ...")
        _say(out, "stopped")
        return 0
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)


async def _start(
    config: UpConfig, stack: contextlib.AsyncExitStack, stop: asyncio.Event, out: TextIO
) -> _Running:
    """Start every service, each stop pushed on `stack` as soon as its start begins."""
    data = config.data.resolve()
    logs = data / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    os.chmod(data, 0o700)  # the broker's data and the logs: the owner's only
    try:
        base, serve = ProjectorSettings(), ServeSettings()
    except ValidationError as exc:
        raise ServiceStartError(service="settings", reason=str(exc)) from exc

    kafka_env = {"CTXSTREAM_KAFKA_DATA": str(data / "kafka"), "CTXSTREAM_PYTHON": sys.executable}
    _check_broker_ports(data / "kafka")
    _say(out, "starting kafka ...")
    stack.push_async_callback(_stop_script, "kafka/stop", kafka_env, logs)
    bootstrap = await _unless(stop, _start_script("kafka", kafka_env, logs, BROKER_START_S))
    settings = base.model_copy(update={"kafka_bootstrap": bootstrap, "engine": "native"})

    dsn = None
    if config.postgres:
        postgres_env = {"CTXSTREAM_POSTGRES_DIR": str(data / "postgres")}
        _say(out, "starting postgres ...")
        stack.push_async_callback(_stop_script, "postgres/stop", postgres_env, logs)
        dsn = await _unless(stop, _start_script("postgres", postgres_env, logs, POSTGRES_START_S))

    _say(out, "creating topics ...")
    try:
        await _unless(stop, create_topics(settings))
    except (KafkaError, RuntimeError) as exc:
        raise ServiceStartError(service="topics", reason=str(exc) or type(exc).__name__) from exc

    query_port = settings.query_port or _free_port()
    # Off unless asked for: the default port (6066) may be another deployment's.
    metrics_port = base.metrics_port if "CTXSTREAM_METRICS_PORT" in os.environ else 0
    common = {"CTXSTREAM_KAFKA_BOOTSTRAP": bootstrap}
    projector_env = {
        **common,
        "CTXSTREAM_ENGINE": "native",
        "CTXSTREAM_DATA_DIR": str(data / "projector"),
        "CTXSTREAM_QUERY_BIND": HOST,
        "CTXSTREAM_QUERY_PORT": str(query_port),
        "CTXSTREAM_METRICS_PORT": str(metrics_port),
    }
    stale = await _unless(stop, _stale_workers(settings))
    _say(out, "starting the projector ...")
    projector = await _spawn("projector", PROJECTOR, projector_env, logs, stack)
    await _unless(stop, _claimed(settings, f"{HOST}:{query_port}", stale, projector))

    _say(out, "starting the summarizer ...")
    summarizer = await _spawn("summarizer", SUMMARIZER, common, logs, stack)

    http_port = config.http_port if config.http_port is not None else serve.http_port
    _say(out, "starting the HTTP API ...")
    _check_free(http_port)
    serve_env = {**common, "CTXSTREAM_HTTP_BIND": HOST, "CTXSTREAM_HTTP_PORT": str(http_port)}
    server = await _spawn("http-api", ["ctxstream", "serve"], serve_env, logs, stack)
    url = f"http://{HOST}:{http_port}"
    await _unless(stop, _answering(url, server))

    prefix = settings.topic_prefix
    roles = ",".join(TOPIC_ROLES)
    lines = [
        "",
        f"ctxstream is up (data and logs in {data}):",
        f"  bootstrap   {bootstrap}   (kafka, pid file {data / 'kafka' / 'kafka.pid'})",
        f"  topics      {prefix}.{{{roles}}}",
        f"  projector   pid {projector.process.pid}, group {settings.app_id}, "
        f"reads on {HOST}:{query_port}",
        f"  summarizer  pid {summarizer.process.pid}",
        f"  http api    {url}   (pid {server.process.pid}; OpenAPI pages at {url}/docs)",
        metrics_line(metrics_port, settings.metrics_bind),
        f"  postgres    {masked_dsn(dsn)}   (password: the cluster folder's password file)"
        if dsn
        else "  postgres    not started: nothing reads it yet",
        "an API key:   "
        f"CTXSTREAM_KAFKA_BOOTSTRAP={bootstrap} CTXSTREAM_TOPIC_PREFIX={prefix} "
        "ctxstream keys create TENANT",
        "stop everything with Ctrl-C",
        "",
    ]
    _say(out, "\n".join(lines))
    return _Running(settings, (projector, summarizer, server))


def metrics_line(port: int, bind: str) -> str:
    """The banner's line of the projector's metrics: their URL, or how to turn them on."""
    if port == 0:
        return "  metrics     off (CTXSTREAM_METRICS_PORT=<port> serves the projector's /metrics)"
    return f"  metrics     http://{bind}:{port}/metrics   (the projector's)"


async def _report(running: _Running, stop: asyncio.Event, out: TextIO) -> None:
    """Sample the status every :data:`STATUS_EVERY_S` until a signal; print it when it changed.

    An unchanged line is printed again once a minute (:class:`StatusCadence`).

    Raises:
        ServiceExitedError: A process exited by itself.
    """
    reader = StatusReader(running.settings, running.settings.app_id)
    try:
        try:
            await reader.start()
        except KafkaError as exc:
            reason = str(exc) or type(exc).__name__
            raise ServiceStartError(service="the status reader", reason=reason) from exc
        terminal, cadence = out.isatty(), StatusCadence()
        while not stop.is_set():
            for child in running.children:
                if child.process.returncode is not None:
                    raise ServiceExitedError(
                        service=child.name, status=child.process.returncode, log=child.log
                    )
            try:
                line = (await asyncio.wait_for(reader.sample(), STATUS_EVERY_S * 3)).line()
            except (KafkaError, TimeoutError) as exc:
                line = f"status: the broker did not answer ({type(exc).__name__})"
            if cadence.due(line, time.monotonic()):
                if terminal:  # one line rewritten in place
                    out.write(f"\r\x1b[2K{line}")
                    out.flush()
                else:
                    _say(out, line)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), STATUS_EVERY_S)
        if terminal:
            out.write("\n")
    finally:
        await reader.close()


async def _unless(stop: asyncio.Event, step: Awaitable[T]) -> T:
    """`step`'s result, unless a signal comes first: then it is cancelled and :class:`_Stopped`."""
    task = asyncio.ensure_future(step)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([task, stopped], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise _Stopped
    return task.result()


async def _start_script(service: str, env: Mapping[str, str], logs: Path, timeout_s: float) -> str:
    """``deploy/<service>/start``; the last line it printed (an address).

    Raises:
        ServiceStartError: The script failed; the reason is its last line on stderr.
    """
    status, stdout = await _run_script(f"{service}/start", env, logs, timeout_s)
    printed = stdout.strip().splitlines()
    if status != 0 or not printed:
        log = logs / f"{service}-start.log"
        raise ServiceStartError(service=service, reason=f"{_last_line(log)} (log: {log})")
    return printed[-1]


async def _run_script(
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


async def _stop_script(script: str, env: Mapping[str, str], logs: Path) -> None:
    """``deploy/<script>``; a failure is one line on stderr (the rest still stops)."""
    status, _ = await _run_script(script, env, logs, SCRIPT_STOP_S)
    if status != 0:
        log = logs / f"{script.replace('/', '-')}.log"
        _fail(f"{script} failed with status {status}: {_last_line(log)} (log: {log})")


async def _spawn(
    name: str,
    module: list[str],
    env: Mapping[str, str],
    logs: Path,
    stack: contextlib.AsyncExitStack,
) -> _Child:
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
    return _Child(name, process, log)


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


async def _stale_workers(settings: ProjectorSettings) -> frozenset[str]:
    """The worker ids of the claims on `partition-owners` before this run's projector starts.

    A previous run's projector left its claims there, at the same address when
    ``CTXSTREAM_QUERY_PORT`` is fixed: none of them may count as this run's.
    """
    owners = PartitionOwners(settings)
    try:
        await owners.refresh()
        return frozenset(
            claim.worker_id
            for p in range(settings.events_partitions)
            if (claim := owners.owner(p)) is not None
        )
    except KafkaError as exc:
        reason = str(exc) or type(exc).__name__
        raise ServiceStartError(service="projector", reason=f"claims unreadable: {reason}") from exc
    finally:
        await owners.close()


def claims_ready(
    claims: Sequence[PartitionClaim | None], address: str, stale: frozenset[str]
) -> bool:
    """Whether one projector of this run, reachable at `address`, has claimed every partition.

    Every claim must name `address` and one worker id, and that id must not be
    among the `stale` ones (the claims read before this run's projector
    started): worker ids are unique per engine run, so such a claim is this
    run's.
    """
    workers = {claim.worker_id for claim in claims if claim is not None}
    return (
        all(claim is not None and claim.address == address for claim in claims)
        and len(workers) == 1
        and workers.isdisjoint(stale)
    )


async def _claimed(
    settings: ProjectorSettings, address: str, stale: frozenset[str], projector: _Child
) -> None:
    """Wait until this run's projector owns every `events` partition and answers a read.

    Raises:
        ServiceStartError: The projector exited, or was not ready in time.
    """
    owners = PartitionOwners(settings)
    reads = ContextReads(settings)

    async def claimed() -> bool:
        await owners.refresh()
        claims = [owners.owner(p) for p in range(settings.events_partitions)]
        return claims_ready(claims, address, stale)

    async def answering() -> bool:
        try:
            await reads.context(
                PROBE_SESSION,
                agent=None,
                branch=None,
                include_contents="none",
                min_offset=None,
                timeout_s=PROBE_READ_S,
            )
        except LookupError:
            pass  # a session with no records, said so: the read plane answered
        except ContextReadError:
            return False
        return True

    try:
        await _ready("projector", claimed, projector, CLAIMED_S)
        await _ready("projector", answering, projector, SERVING_S)
    finally:
        await owners.close()
        await reads.close()


async def _answering(url: str, server: _Child) -> None:
    """Wait until the server's OpenAPI document answers.

    Raises:
        ServiceStartError: The server exited, or did not answer in time.
    """
    async with aiohttp.ClientSession() as http:

        async def answers() -> bool:
            try:
                async with http.get(f"{url}/openapi.json") as response:
                    return response.status == 200
            except aiohttp.ClientError:
                return False

        await _ready("the HTTP API", answers, server, SERVING_S)


async def _ready(
    service: str, check: Callable[[], Awaitable[bool]], child: _Child, timeout_s: float
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if child.process.returncode is not None:
            reason = f"exited with status {child.process.returncode}: {_last_line(child.log)}"
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


def _check_free(port: int) -> None:
    """Raise :class:`ServiceStartError` unless `port` can be bound on 127.0.0.1 now."""
    if is_taken(port):
        reason = port_taken(port, "--http-port <another port> (or CTXSTREAM_HTTP_PORT)")
        raise ServiceStartError(service="the HTTP API", reason=reason)


def _check_broker_ports(kafka_data: Path) -> None:
    """Refuse a broker port another process holds, naming it and the variable that moves it.

    The broker of `kafka_data` itself (left running by a run that did not
    stop it) may hold them: ``deploy/kafka/start`` then only prints its address.

    Raises:
        ServiceStartError: A port is taken by another process.
    """
    ours = _pid_in(kafka_data / "kafka.pid")
    for variable, default in BROKER_PORTS.items():
        text = os.environ.get(variable, default)
        if not text.isdigit() or not 0 < int(text) < 65_536:
            continue  # deploy/kafka/start refuses it, naming the variable
        port = int(text)
        if not is_taken(port):
            continue
        held = holder(socket_inodes(port))
        if ours is not None and held is not None and held[0] == ours:
            continue
        reason = port_taken(port, f"{variable}=<another port>")
        raise ServiceStartError(service="kafka", reason=reason)


def _pid_in(pid_file: Path) -> int | None:
    try:
        text = pid_file.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _last_line(log: Path) -> str:
    """The last non-empty line of `log`, bounded; a placeholder when there is none."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        lines = []
    return shown(lines[-1], 300) if lines else "no output"


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()


def _fail(message: str) -> None:
    sys.stderr.write(f"ctxstream up: {shown(message, 1_000)}\n")
    sys.stderr.flush()
