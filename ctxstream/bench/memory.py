"""``ctxstream bench memory``: the latency of memory search over N memories.

1. create a fresh schema with the ``memories`` table
   (:func:`ctxstream.bench.memory_schema.create_memory_schema`) and load the workload's
   memories (:mod:`ctxstream.bench.memory_workload`) with
   :func:`streams.sink.memory_rows.add_memories` (COPY), :data:`LOAD_BATCH` a
   transaction, then ``VACUUM ANALYZE`` both tables (what autovacuum does in a live database);
2. ask :data:`WARMUP_QUERIES` questions untimed, then time ``--queries`` questions, one
   :meth:`ctxstream.memory.MemoryStore.search` each, one after another on one
   connection: the whole call as a caller sees it;
3. drop the schema.

Figures: p50, p95, p99 and max in milliseconds, the load's rate, and
``answered_share``, the share of questions with a memory stating the asked fact
among the results (a check of this workload, not of ranking in general). Goal: p95
under 20 ms at 100,000 memories. More in ``ctxstream/bench/README.md`` (memory.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from itertools import islice
from typing import Final

from psycopg import AsyncConnection, sql

from ctxstream.bench.memory_schema import create_memory_schema, drop_schema
from ctxstream.bench.memory_workload import memories, questions, scope_count
from ctxstream.bench.report import figures_json, percentile, write_report
from ctxstream.cli.common import Subcommands, positive
from ctxstream.memory import MemoryStore
from streams.sink.memory_rows import add_memories

DEFAULT_MEMORIES: Final = 100_000
DEFAULT_QUERIES: Final = 1_000
WARMUP_QUERIES: Final = 50
LOAD_BATCH: Final = 10_000
GOAL_P95_MS: Final = 20.0


@dataclass(frozen=True, slots=True)
class MemoryBenchResult:
    """Search latency over `memories` memories, and what loading them cost."""

    memories: int
    scopes: int
    queries: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    load_memories_per_s: float
    answered_share: float
    goal_p95_ms: float = GOAL_P95_MS


async def run_memory_bench(
    dsn: str, memory_count: int = DEFAULT_MEMORIES, query_count: int = DEFAULT_QUERIES
) -> MemoryBenchResult:
    """Load, search and time in a fresh schema, dropped afterwards."""
    schema = f"bench_memory_{uuid.uuid4().hex[:12]}"
    asked = questions(WARMUP_QUERIES + query_count, memory_count)
    async with await AsyncConnection.connect(dsn, autocommit=True) as connection:
        await create_memory_schema(connection, schema)
        try:
            started = time.perf_counter()
            source = memories(memory_count)
            while batch := list(islice(source, LOAD_BATCH)):
                async with connection.transaction():
                    await add_memories(connection, schema, batch)
            load_s = time.perf_counter() - started
            # What autovacuum does in a live database: statistics, and the GIN
            # indexes' pending lists merged.
            for table in ("memories", "memory_lexemes"):
                await connection.execute(
                    sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(schema, table))
                )
            store = MemoryStore(connection, schema=schema)
            timings: list[float] = []
            answered = 0
            for number, question in enumerate(asked):
                began = time.perf_counter()
                found = await store.search(
                    question.tenant, question.app, question.user_id, question.text
                )
                elapsed_ms = (time.perf_counter() - began) * 1000
                if number >= WARMUP_QUERIES:
                    timings.append(elapsed_ms)
                    answered += any(
                        all(word in entry.text for word in question.answer_words) for entry in found
                    )
        finally:
            await drop_schema(connection, schema)
    return MemoryBenchResult(
        memories=memory_count,
        scopes=scope_count(),
        queries=query_count,
        p50_ms=round(percentile(timings, 0.50), 3),
        p95_ms=round(percentile(timings, 0.95), 3),
        p99_ms=round(percentile(timings, 0.99), 3),
        max_ms=round(max(timings), 3),
        load_memories_per_s=round(memory_count / load_s, 1),
        answered_share=round(answered / query_count, 3),
    )


def report_text(result: MemoryBenchResult) -> str:
    """The latency figures, the goal and the load rate."""
    return (
        f"memories  {result.memories:>10,} in {result.scopes} scopes\n"
        f"p50       {result.p50_ms:>10.2f} ms\n"
        f"p95       {result.p95_ms:>10.2f} ms (goal: under {result.goal_p95_ms:g})\n"
        f"p99       {result.p99_ms:>10.2f} ms\n"
        f"load      {result.load_memories_per_s:>10,.0f} memories/s\n"
        f"answered  {result.answered_share:>10.3f} of {result.queries} questions\n"
    )


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``memory`` to the ``bench`` subcommands."""
    memory = bench_commands.add_parser(
        "memory", help="memory search latency over N memories (PostgreSQL)"
    )
    memory.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    memory.add_argument(
        "--memories",
        type=positive,
        default=DEFAULT_MEMORIES,
        help=f"memories to load (default {DEFAULT_MEMORIES})",
    )
    memory.add_argument(
        "--queries",
        type=positive,
        default=DEFAULT_QUERIES,
        help=f"searches to time (default {DEFAULT_QUERIES})",
    )
    memory.add_argument(
        "--dsn",
        default=None,
        help="the PostgreSQL to use (default: $CTXSTREAM_POSTGRES_DSN); a fresh schema is "
        "created there and dropped",
    )
    memory.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    dsn = args.dsn or os.environ.get("CTXSTREAM_POSTGRES_DSN")
    if not dsn:
        sys.stderr.write("bench memory: give --dsn or set CTXSTREAM_POSTGRES_DSN\n")
        return 2
    result = asyncio.run(run_memory_bench(dsn, args.memories, args.queries))
    write_report(args.json, figures_json(asdict(result)), report_text(result), sys.stdout)
    return 0
