"""``ctxstream sink --into SCHEMA --from-offset 0 --until-caught-up``: a read model rebuilt.

:func:`run_rebuild` migrates the schema named by ``--into``, refuses a rebuild from 0 of a
schema that already went past 0, then runs the ordinary sink (:class:`Sink`) of that schema;
with `until_caught_up` it stops the sink once the schema's stored offsets reach the log's
end offsets as read when it started. ``streams/sink/README.md``, "Replay and switch".
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from psycopg import sql

from schemas.errors import CtxstreamError
from streams.sink.database import Connection, connect
from streams.sink.fence import stored_offsets
from streams.sink.migrate import check_schema, migrate
from streams.sink.replay.errors import ReplayError
from streams.sink.replay.log_ends import log_end_offsets
from streams.sink.replay.plan import RECORD_TABLE
from streams.sink.replay.positions import lagging, rebuild_refusal
from streams.sink.replay.switch import has_relation
from streams.sink.settings import SinkSettings
from streams.sink.worker import FAILED, Sink

logger = logging.getLogger(__name__)

_POLL_S: Final = 0.2


@dataclass(frozen=True, slots=True)
class Rebuild:
    """How a sink run is a rebuild: each option off is the ordinary sink's behaviour."""

    migrate: bool = False
    """Apply the migrations the schema lacks first (``--into``; a new schema is created)."""
    from_offset: int | None = None
    """0: refuse a schema whose stored offsets went past 0 (only 0 is accepted)."""
    until_caught_up: bool = False
    """Stop once every partition reaches the log's end offsets as of the start."""


async def rebuild(settings: SinkSettings, plan: Rebuild, stop: asyncio.Event) -> None:
    """Prepare and check `settings`' schema as `plan` says, then sink until `stop` or caught up.

    Raises:
        ReplayError: the schema is a stable schema, or went past offset 0 (`from_offset`).
        MigrationError, SchemaVersionError, TargetSchemaError, DatabaseError, TopicError:
            as the migration and the sink raise them.
    """
    schema, topic = settings.sink_schema, settings.topic("events")
    conn = await connect(settings.postgres_dsn.get_secret_value())
    try:
        if plan.migrate:
            await _refuse_stable_schema(conn, schema)
            await migrate(conn, schema)
        if plan.from_offset is not None:
            await check_schema(conn, schema)
            if refusal := rebuild_refusal(schema, topic, await _all_offsets(conn, schema, topic)):
                raise ReplayError(refusal)
        bar = (
            await log_end_offsets(
                settings.kafka_bootstrap, topic, security=settings.client_security()
            )
            if plan.until_caught_up
            else None
        )
        sink = asyncio.create_task(Sink(settings).run(stop))
        watch = (
            None if bar is None else asyncio.create_task(_stop_at(conn, schema, topic, bar, stop))
        )
        try:
            await sink
        finally:
            if watch is not None:
                watch.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watch
    finally:
        await conn.close()


def run_rebuild(settings: SinkSettings, plan: Rebuild) -> int:
    """:func:`rebuild` until caught up, SIGTERM or SIGINT: 0 then, :data:`FAILED` on a failure.

    Raises:
        CtxstreamError: the rebuild or the sink refused to run; the message says why.
    """

    async def serve() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await rebuild(settings, plan, stop)

    try:
        asyncio.run(serve())
    except CtxstreamError:
        raise
    except Exception:
        logger.exception("rebuild failed; exiting with status %d", FAILED)
        return FAILED
    return 0


async def _stop_at(
    conn: Connection, schema: str, topic: str, bar: Mapping[int, int], stop: asyncio.Event
) -> None:
    """Set `stop` once `schema`'s stored offsets of `topic` reach `bar` everywhere."""
    while True:
        if not lagging(await stored_offsets(conn, schema, topic, bar), bar):
            break
        await asyncio.sleep(_POLL_S)
    logger.info("schema %s caught up with %s at %s; stopping", schema, topic, dict(bar))
    stop.set()


async def _all_offsets(conn: Connection, schema: str, topic: str) -> dict[int, int]:
    cursor = await conn.execute(
        sql.SQL("SELECT partition, next_offset FROM {} WHERE topic = %s").format(
            sql.Identifier(schema, "sink_offsets")
        ),
        (topic,),
    )
    return {int(p): int(n) for p, n in await cursor.fetchall()}


async def _refuse_stable_schema(conn: Connection, schema: str) -> None:
    """A stable schema (holding the switch's record) never becomes a target."""
    if await has_relation(conn, schema, RECORD_TABLE):
        raise ReplayError(
            f"schema {schema!r} is a stable schema (it holds {RECORD_TABLE}): "
            "rebuild into another schema, then `ctxstream db switch` to it"
        )
