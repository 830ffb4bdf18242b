"""``ctxstream sink`` as ``bench sink`` runs it: a child process into a fresh schema, timed.

:func:`time_sink` migrates a new schema, starts ``python -m ctxstream sink`` on it (memory for
every app) through :func:`ctxstream.bench.processes.start_worker`, and times it from the
line its rebalance listener logs on assignment to the moment ``sink_offsets`` holds every end
offset of the topic; then counts the rows of :data:`TABLES` and drops the schema (unless kept).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aiokafka import TopicPartition
from psycopg import sql

from ctxstream.bench.memory_schema import drop_schema
from ctxstream.bench.processes import kafka_env, start_worker, stop_worker
from schemas.kafka.settings import KafkaSettings
from streams.sink.database import Connection, connect
from streams.sink.fence import stored_offsets
from streams.sink.migrate import migrate

#: The tables whose rows the benchmark counts, in the order it reports them.
TABLES: Final = ("event_rows", "memories", "memory_lexemes")
#: What the sink logs once its partitions are assigned and sought: the clock starts.
ASSIGNED: Final = b"sink assigned"
POLL_S: Final = 0.02
CATCH_UP_TIMEOUT_S: Final = 3_600.0


@dataclass(frozen=True, slots=True)
class SinkRun:
    """One sink run: the deployment, the database, its fresh schema, where it logs, the ends."""

    settings: KafkaSettings
    dsn: str
    schema: str
    run_dir: Path
    ends: dict[TopicPartition, int]


def sink_env(run: SinkRun, batch_records: int | None) -> dict[str, str]:
    """The sink's variables: `run`'s deployment and schema, memory for every app."""
    env = {
        **kafka_env(run.settings),
        "CTXSTREAM_POSTGRES_DSN": run.dsn,
        "CTXSTREAM_SINK_SCHEMA": run.schema,
        "CTXSTREAM_MEMORY_APPS": "*",
    }
    if batch_records is not None:
        env["CTXSTREAM_SINK_BATCH_RECORDS"] = str(batch_records)
    return env


async def time_sink(
    run: SinkRun, batch_records: int | None, *, keep: bool = False
) -> tuple[float, dict[str, int]]:
    """Seconds from the sink's assignment to its last commit, and each table's rows."""
    conn = await connect(run.dsn)
    try:
        await migrate(conn, run.schema)
        try:
            seconds = await _timed_run(conn, run, batch_records)
            return seconds, await table_rows(conn, run.schema)
        finally:
            if not keep:
                await drop_schema(conn, run.schema)
    finally:
        await conn.close()


async def _timed_run(conn: Connection, run: SinkRun, batch_records: int | None) -> float:
    log = run.run_dir / f"sink-{run.schema}.log"
    topic = next(iter(run.ends)).topic
    wanted = {tp.partition: end for tp, end in run.ends.items() if end > 0}
    process = await start_worker(
        f"sink-{run.schema}", ["ctxstream", "sink"], sink_env(run, batch_records), run.run_dir
    )
    try:
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        while ASSIGNED not in log.read_bytes():
            _check(process, deadline, log)
            await asyncio.sleep(POLL_S)
        started = time.monotonic()
        while (await stored_offsets(conn, run.schema, topic, wanted)) != wanted:
            _check(process, deadline, log)
            await asyncio.sleep(POLL_S)
        return time.monotonic() - started
    finally:
        await stop_worker(process)


def _check(process: asyncio.subprocess.Process, deadline: float, log: Path) -> None:
    if process.returncode is not None:
        raise RuntimeError(f"the sink exited with {process.returncode}; see {log}")
    if time.monotonic() > deadline:
        raise TimeoutError(f"the sink did not catch up in {CATCH_UP_TIMEOUT_S} s; see {log}")


async def table_rows(conn: Connection, schema: str) -> dict[str, int]:
    """The rows of each of :data:`TABLES` in `schema`."""
    counts: dict[str, int] = {}
    for table in TABLES:
        cursor = await conn.execute(
            sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(schema, table))
        )
        row = await cursor.fetchone()
        counts[table] = int(row[0]) if row is not None else 0
    return counts
