"""``ctxstream up``: the whole deployment on 127.0.0.1 in one command, until Ctrl-C.

It starts, each once the one before is ready: the Kafka broker (``deploy/kafka/start``),
PostgreSQL (unless ``--no-postgres``), the topics, the projector, the summarizer, the
sink into the migrated target schema (:mod:`ctxstream.cli.up_sink`) and the HTTP API
(:mod:`ctxstream.cli.up_services`, readiness in :mod:`ctxstream.cli.up_ready`);
then prints where each one is, and a status line (:mod:`ctxstream.cli.up_status`)
whenever it changed. SIGINT or SIGTERM stops them in the reverse order; the exit
status is 0. A service that does not start, or a process that exits while the
deployment runs, is one line on stderr, what had started is stopped the same way,
and the exit status is 1. ``cli/README.md`` ("up") has the table of services, their
settings and logs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
import traceback
from collections.abc import Awaitable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TextIO, TypeVar

from aiokafka.errors import KafkaError
from pydantic import ValidationError

from ctxstream.api.settings import ServeSettings
from ctxstream.bench.processes import PROJECTOR, SUMMARIZER
from ctxstream.cli.common import Subcommands, fail, quiet_loggers
from ctxstream.cli.up_ready import (
    HOST,
    answering,
    check_broker_ports,
    check_free,
    claimed,
    free_port,
    stale_workers,
)
from ctxstream.cli.up_services import (
    Child,
    ServiceExitedError,
    ServiceStartError,
    spawn,
    start_script,
    stop_script,
)
from ctxstream.cli.up_sink import log_size, migrate_schema, sink_schema, sink_started
from ctxstream.cli.up_status import StatusCadence, StatusReader
from schemas.errors import CtxstreamError, TopicError
from schemas.kafka.settings import TOPIC_ROLES
from schemas.masked_dsn import masked_dsn
from streams.projector_settings import ProjectorSettings
from streams.topics import create_topics

logger = logging.getLogger(__name__)

DEFAULT_DATA: Final = Path(".run/up")
BROKER_START_S: Final = 360.0  # a first run fetches the broker's jars from Maven Central
POSTGRES_START_S: Final = 600.0  # a first run installs Debian's postgresql-15
STATUS_EVERY_S: Final = 3.0
#: Loggers whose lines would break into the command's own output.
UP_QUIET_LOGGERS: Final = {
    "aiokafka": logging.CRITICAL,
    "streams": logging.WARNING,
    "schemas": logging.WARNING,  # topic creation logs at INFO (schemas.kafka.admin)
}

SINK: Final = ["ctxstream", "sink"]

T = TypeVar("T")


class _Stopped(Exception):
    """SIGINT or SIGTERM came while a service was starting."""


@dataclass(frozen=True, slots=True)
class UpConfig:
    """What ``ctxstream up`` was asked for.

    Attributes:
        data: The folder of the broker's data, the projector's state and every log.
        http_port: The HTTP API's port (None: ``CTXSTREAM_HTTP_PORT``, else 8080).
        postgres: Start PostgreSQL, migrate the sink's schema and start the sink.
    """

    data: Path
    http_port: int | None
    postgres: bool


@dataclass(frozen=True, slots=True)
class _Running:
    """The started deployment: its settings and the processes to watch."""

    settings: ProjectorSettings
    children: tuple[Child, ...]


def add_up_command(commands: Subcommands) -> None:
    """Add ``up`` to the ``ctxstream`` command's subcommands."""
    up = commands.add_parser(
        "up",
        help="bring up broker, PostgreSQL, topics, projector, summarizer, sink and HTTP API "
        "on 127.0.0.1 and print their status until Ctrl-C",
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
        default=True,
        help="start PostgreSQL (deploy/postgres/start) and the sink that writes the SQL read "
        "model into it (default); --no-postgres leaves both out",
    )
    up.set_defaults(run=_up)


def _up(args: argparse.Namespace) -> int:
    quiet_loggers(UP_QUIET_LOGGERS)
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
                fail("up", str(exc))
                return 1
            except Exception as exc:  # noqa: BLE001 - a bug: one line here, the rest in a file
                log = config.data / "logs" / "up-error.log"
                with contextlib.suppress(OSError):
                    log.write_text(traceback.format_exc(), encoding="utf-8")
                fail("up", f"unexpected {type(exc).__name__}: {exc} (traceback: {log})")
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
    check_broker_ports(data / "kafka")
    _say(out, "starting kafka ...")
    stack.push_async_callback(stop_script, "kafka/stop", kafka_env, logs)
    bootstrap = await _unless(stop, start_script("kafka", kafka_env, logs, BROKER_START_S))
    settings = base.model_copy(update={"kafka_bootstrap": bootstrap, "engine": "native"})

    dsn = None
    if config.postgres:
        postgres_env = {"CTXSTREAM_POSTGRES_DIR": str(data / "postgres")}
        _say(out, "starting postgres ...")
        stack.push_async_callback(stop_script, "postgres/stop", postgres_env, logs)
        dsn = await _unless(stop, start_script("postgres", postgres_env, logs, POSTGRES_START_S))

    _say(out, "creating topics ...")
    try:
        await _unless(stop, create_topics(settings))
    except (KafkaError, TopicError) as exc:
        raise ServiceStartError(service="topics", reason=str(exc) or type(exc).__name__) from exc

    query_port = settings.query_port or free_port()
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
    stale = await _unless(stop, stale_workers(settings))
    _say(out, "starting the projector ...")
    projector = await spawn("projector", PROJECTOR, projector_env, logs, stack)
    await _unless(stop, claimed(settings, f"{HOST}:{query_port}", stale, projector))

    _say(out, "starting the summarizer ...")
    summarizer = await spawn("summarizer", SUMMARIZER, common, logs, stack)

    http_port = config.http_port if config.http_port is not None else serve.http_port
    sink, sink_line = None, "  sink        not started (--no-postgres)"
    if dsn is not None:
        schema = sink_schema()
        _say(out, f"migrating schema {schema} ...")
        await _unless(stop, migrate_schema(dsn, schema))
        _say(out, "starting the sink ...")
        sink_env = {**common, "CTXSTREAM_POSTGRES_DSN": dsn, "CTXSTREAM_SINK_SCHEMA": schema}
        since = log_size(logs / "sink.log")
        sink = await spawn("sink", SINK, sink_env, logs, stack)
        await _unless(stop, sink_started(sink, schema, since))
        sink_line = f"  sink        pid {sink.process.pid}, schema {schema} in {masked_dsn(dsn)}"

    _say(out, "starting the HTTP API ...")
    check_free(http_port)
    serve_env = {**common, "CTXSTREAM_HTTP_BIND": HOST, "CTXSTREAM_HTTP_PORT": str(http_port)}
    if sink is not None:  # the session listing and history routes read the sink's schema
        serve_env.update(
            {k: sink_env[k] for k in ("CTXSTREAM_POSTGRES_DSN", "CTXSTREAM_SINK_SCHEMA")}
        )
    server = await spawn("http-api", ["ctxstream", "serve"], serve_env, logs, stack)
    url = f"http://{HOST}:{http_port}"
    await _unless(stop, answering(url, server))

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
        else "  postgres    not started (--no-postgres)",
        sink_line,
        "an API key:   "
        f"CTXSTREAM_KAFKA_BOOTSTRAP={bootstrap} CTXSTREAM_TOPIC_PREFIX={prefix} "
        "ctxstream keys create TENANT",
        "stop everything with Ctrl-C",
        "",
    ]
    _say(out, "\n".join(lines))
    children = (
        (projector, summarizer, server) if sink is None else (projector, summarizer, sink, server)
    )
    return _Running(settings, children)


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


def _say(out: TextIO, text: str) -> None:
    out.write(text + "\n")
    out.flush()
