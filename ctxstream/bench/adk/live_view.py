"""One-off timing of view=live's read next to the full read, at 10,000 events. Prints only.

The support session of :func:`~ctxstream.bench.adk.workload.adk_session` (ADK's own
token-threshold summaries) is written into a fresh schema by the sink's own transaction
(:func:`~streams.sink.fence.write_batch` with its status step, 40 records a batch, the live
views kept), then read three ways, each followed by ADK's ``_get_contents`` of the agent:
:func:`~ctxstream.sessions.live_rows.live_rows`; every held row of the session; ADK's
``SqliteSessionService.get_session``. Medians of five runs; the contents of the first two
must be equal (the live view's promise), else it says so. The schema is dropped after.

    PYTHONPATH=. CTXSTREAM_POSTGRES_DSN=... python -m ctxstream.bench.adk.live_view [EVENTS]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from google.adk.events.event import Event as AdkEvent
from google.adk.flows.llm_flows.contents import _get_contents
from psycopg import sql

from ctxstream.bench.adk.baselines import load_sqlite
from ctxstream.bench.adk.workload import AGENT_NAME, AdkSession, adk_session
from ctxstream.sessions.live_rows import live_rows
from projections.live_view.kept_view import HELD
from schemas.codec import encode
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey, TenantId
from streams.batch.records import SourceRecord
from streams.sink.database import Connection, connect
from streams.sink.fence import Batch, write_batch
from streams.sink.migrate import migrate
from streams.sink.read_model.batch_memories import MemoryApps
from streams.sink.read_model.history_cache import HistoryCache
from streams.sink.read_model.live_views import LiveViews
from streams.sink.read_model.status_step import StatusStep
from streams.sink.rows import batch_rows

TOPIC = "bench-live.events"
BATCH = 40
RUNS = 5


async def _sink(conn: Connection, schema: str, key: SessionKey, session: AdkSession) -> float:
    """Write the session as the sink does; the seconds it took."""
    history, live = HistoryCache(), LiveViews(lambda _: 0)
    records = []
    for offset, adk in enumerate(session.events):
        event = Event.model_validate(adk.model_dump(by_alias=True, exclude_none=True, mode="json"))
        envelope = Envelope(
            tenant=TenantId("bench"),
            session_key=key,
            producer_id="bench",
            idempotency_key=f"{key}/{adk.id}",
            event=event,
        )
        records.append(SourceRecord(TOPIC, 0, offset, key.encode(), encode(envelope)))
    started = time.perf_counter()
    for first in range(0, len(records), BATCH):
        chunk = records[first : first + BATCH]
        planned = batch_rows(chunk, partitions=1)
        step = StatusStep(history, planned.rows, planned.events, MemoryApps(), live)
        span = Batch(TOPIC, {0: first}, {0: chunk[-1].offset + 1}, planned.rows)
        await write_batch(conn, schema, span, step)
        step.committed()
    return time.perf_counter() - started


async def _all_held(conn: Connection, schema: str, key: str) -> list[dict[str, Any]]:
    cursor = await conn.execute(
        sql.SQL(
            'SELECT event FROM {} WHERE session_key = %s AND status = ANY(%s) ORDER BY "offset"'
        ).format(sql.Identifier(schema, "event_rows")),
        (key, sorted(HELD)),
    )
    return [row[0] for row in await cursor.fetchall()]


async def _timed(read: Callable[[], Awaitable[list[AdkEvent]]]) -> tuple[float, int, list[Any]]:
    """Median seconds of `read` plus ``_get_contents``, the events read, the contents."""
    times, events, contents = [], [], []
    for _ in range(RUNS):
        started = time.perf_counter()
        events = await read()
        contents = _get_contents(None, events, AGENT_NAME)
        times.append(time.perf_counter() - started)
    return statistics.median(times), len(events), contents


async def main(count: int) -> None:
    """Load, time, print, clean up."""
    session = adk_session(count)
    dsn = os.environ["CTXSTREAM_POSTGRES_DSN"]
    schema = f"bench_live_{uuid.uuid4().hex[:12]}"
    key = SessionKey(f"bench/{session.app_name}/{session.user_id}/{session.session_id}")
    conn = await connect(dsn)
    try:
        await migrate(conn, schema)
        sink_s = await _sink(conn, schema, key, session)

        async def live() -> list[AdkEvent]:
            found = await live_rows(conn, schema, key)
            if found is None:
                raise RuntimeError(f"no live view of {key}")
            return [AdkEvent.model_validate(event) for event in found.events]

        async def full() -> list[AdkEvent]:
            return [AdkEvent.model_validate(e) for e in await _all_held(conn, schema, key)]

        with tempfile.TemporaryDirectory() as folder:
            service = await load_sqlite(Path(folder), session)

            async def adk() -> list[AdkEvent]:
                loaded = await service.get_session(
                    app_name=session.app_name,
                    user_id=session.user_id,
                    session_id=session.session_id,
                )
                if loaded is None:
                    raise RuntimeError(f"ADK's SQLite service has no {session.session_id}")
                return list(loaded.events)

            results = {name: await _timed(read) for name, read in [("live", live), ("full", full)]}
            results["adk sqlite"] = await _timed(adk)
        lines = [f"{count} events, sink {sink_s:.2f} s ({len(session.events) // BATCH} batches)"]
        for name, (seconds, events, _) in results.items():
            lines.append(
                f"  {name:<11} get + _get_contents: {seconds * 1000:8.1f} ms ({events} events)"
            )
        same = results["live"][2] == results["full"][2] == results["adk sqlite"][2]
        ratio = results["adk sqlite"][0] / results["live"][0]
        lines.append(f"  same contents: {same}; adk sqlite / live: {ratio:.0f}x")
        sys.stdout.write("\n".join(lines) + "\n")
    finally:
        await conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )
        await conn.close()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000))
