"""The SQL read model in ``ctxstream up``: the target schema migrated, the sink started.

``up`` migrates the target schema (``CTXSTREAM_SINK_SCHEMA``, else ``ctxstream``)
itself, then starts ``ctxstream sink`` as a child like the projector. The sink is
ready once it has checked the schema's version and the topic it holds: it then logs
``sink starting schema=<schema> ...`` (:data:`STARTED`), which :func:`sink_started`
waits for in the part of its log this run wrote, while the process lives.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Final

import psycopg

from ctxstream.cli.up_services import Child, ServiceStartError, ready
from schemas.errors import CtxstreamError
from schemas.masked_dsn import masked_dsn
from streams.sink.database import connect
from streams.sink.migrate import migrate
from streams.sink.replay.plan import stable_schema_name
from streams.sink.replay.switch import adopt_stable
from streams.sink.target_schema import DEFAULT_SCHEMA, target_schema

#: What the sink logs once its schema is checked (``streams.sink.worker``), then its schema.
STARTED: Final = "sink starting schema="
SINK_START_S: Final = 60.0  # the imports, two connections, the schema's check


def sink_schema() -> str:
    """The target schema the sink writes: ``CTXSTREAM_SINK_SCHEMA``, else ``ctxstream``.

    Raises:
        ServiceStartError: The name is not one a target schema may have.
    """
    try:
        return target_schema(os.environ.get("CTXSTREAM_SINK_SCHEMA", DEFAULT_SCHEMA))
    except CtxstreamError as exc:
        raise ServiceStartError(service="sink", reason=str(exc)) from exc


async def migrate_schema(dsn: str, schema: str) -> int:
    """Apply the migrations `schema` lacks in `dsn`'s database; how many were applied.

    The stable views (``CTXSTREAM_STABLE_SCHEMA``, else ``ctxstream_read``) then read
    `schema`, unless a ``db switch`` pointed them at another schema that still exists.

    Raises:
        ServiceStartError: The database could not be reached or a migration failed.
    """
    try:
        conn = await connect(dsn)
        try:
            applied = len(await migrate(conn, schema))
            await adopt_stable(conn, schema, stable=stable_schema_name(os.environ))
            return applied
        finally:
            await conn.close()
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        reason = f"schema {schema!r} in {masked_dsn(dsn)}: {first}"
        raise ServiceStartError(service="the sink's schema", reason=reason) from exc
    except CtxstreamError as exc:
        raise ServiceStartError(service="the sink's schema", reason=str(exc)) from exc


def started(log_text: str, schema: str) -> bool:
    """Whether `log_text` (a sink's log) says the sink of `schema` checked it and started."""
    return re.search(rf"{re.escape(STARTED + schema)}(\s|$)", log_text) is not None


def log_size(log: Path) -> int:
    """The bytes `log` holds now (0 when missing): where this run's part of it begins."""
    try:
        return log.stat().st_size
    except OSError:
        return 0


async def sink_started(sink: Child, schema: str, since: int) -> None:
    """Wait until `sink` has checked `schema` and started, as its log says after byte `since`.

    A previous run's lines, before `since`, never count.

    Raises:
        ServiceStartError: The sink exited (e.g. it refused the schema), or did not start in time.
    """

    async def checked() -> bool:
        try:
            with sink.log.open("rb") as log:
                log.seek(since)
                return started(log.read().decode(errors="replace"), schema)
        except OSError:
            return False

    await ready("sink", checked, sink, SINK_START_S)
