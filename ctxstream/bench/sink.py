"""``ctxstream bench sink``: the sink's throughput against a plain consumer's, in one run.

1. produce ``--events`` events of ``--sessions`` sessions (the ingest workload,
   :func:`ctxstream.bench.ingest.produce_workload`) to fresh topics (``bench-<hex>.*``);
2. each round, in turn (the order alternates, so noise falls on both): the plain
   aiokafka read-and-decode of the topic (:func:`ctxstream.bench.ingest.time_raw_consumer`),
   and ``ctxstream sink`` as a child process (:mod:`ctxstream.bench.sink_process`) into a
   fresh schema with memory for every app, from its group's assignment to the committed
   end offsets in ``sink_offsets``;
3. count each table's rows: ``rows_per_s`` is a table's rows over the sink's seconds.

The figures are each round's and their medians; the goal (issue #24): the sink at least
half as fast as the plain read. The schemas are dropped unless ``--keep``. More in
``ctxstream/bench/README.md`` (sink.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from ctxstream.bench.ingest import IngestBenchConfig, end_offsets, produce_workload
from ctxstream.bench.ingest import time_raw_consumer as time_raw
from ctxstream.bench.report import figures_json, write_report
from ctxstream.bench.sink_process import TABLES, SinkRun, time_sink
from ctxstream.cli.common import Subcommands, positive
from streams.projector_settings import ProjectorSettings
from streams.topics import create_topics

DEFAULT_EVENTS: Final = 200_000
DEFAULT_SESSIONS: Final = 2_000
GOAL_RATIO: Final = 0.5


@dataclass(frozen=True, slots=True)
class SinkBenchConfig:
    """What to measure: the workload's size, the rounds, and whether to keep the schemas."""

    events: int = DEFAULT_EVENTS
    sessions: int = DEFAULT_SESSIONS
    rounds: int = 1
    keep: bool = False
    batch_records: int | None = None


@dataclass(frozen=True, slots=True)
class RoundFigures:
    """One round: which ran first, both rates, and the sink's rows."""

    first: str
    raw_events_per_s: float
    raw_seconds: float
    sink_events_per_s: float
    sink_seconds: float
    ratio: float
    schema: str
    rows: dict[str, int]
    rows_per_s: dict[str, float]


@dataclass(frozen=True, slots=True)
class SinkBenchResult:
    """The medians over the rounds, and every round."""

    sink_events_per_s: float
    raw_events_per_s: float
    ratio: float
    rows_per_s: dict[str, float]
    events: int
    sessions: int
    topic: str
    goal_ratio: float = GOAL_RATIO
    rounds: list[RoundFigures] = field(default_factory=list)


async def run_sink_bench(config: SinkBenchConfig, dsn: str) -> SinkBenchResult:
    """Produce the workload once, then time the raw read and the sink each round."""
    prefix = f"bench-{uuid.uuid4().hex[:12]}"
    settings = ProjectorSettings().model_copy(update={"topic_prefix": prefix})
    await create_topics(settings)
    count = await produce_workload(
        settings, IngestBenchConfig(events=config.events, sessions=config.sessions)
    )
    topic = settings.topic("events")
    ends = await end_offsets(settings.kafka_bootstrap, topic)
    run_dir = Path(".run") / prefix
    run_dir.mkdir(parents=True, exist_ok=True)
    rounds: list[RoundFigures] = []
    for number in range(config.rounds):
        run = SinkRun(settings, dsn, f"bench_sink_{prefix[6:]}_{number}", run_dir, ends)
        sink_first = number % 2 == 1
        if sink_first:
            sink_s, rows = await time_sink(run, config.batch_records, keep=config.keep)
        raw_s = await time_raw(settings.kafka_bootstrap, ends)
        if not sink_first:
            sink_s, rows = await time_sink(run, config.batch_records, keep=config.keep)
        rounds.append(_round("sink" if sink_first else "raw", count, raw_s, sink_s, run, rows))
    return SinkBenchResult(
        sink_events_per_s=_median(r.sink_events_per_s for r in rounds),
        raw_events_per_s=_median(r.raw_events_per_s for r in rounds),
        ratio=round(statistics.median(r.ratio for r in rounds), 3),
        rows_per_s={t: _median(r.rows_per_s[t] for r in rounds) for t in TABLES},
        events=count,
        sessions=config.sessions,
        topic=topic,
        rounds=rounds,
    )


def _median(values: Iterable[float]) -> float:
    return round(statistics.median(values), 1)


def _round(
    first: str, count: int, raw_s: float, sink_s: float, run: SinkRun, rows: dict[str, int]
) -> RoundFigures:
    raw_rate, sink_rate = count / raw_s, count / sink_s
    return RoundFigures(
        first=first,
        raw_events_per_s=round(raw_rate, 1),
        raw_seconds=round(raw_s, 3),
        sink_events_per_s=round(sink_rate, 1),
        sink_seconds=round(sink_s, 3),
        ratio=round(sink_rate / raw_rate, 3),
        schema=run.schema,
        rows=rows,
        rows_per_s={table: round(n / sink_s, 1) for table, n in rows.items()},
    )


def report_text(result: SinkBenchResult) -> str:
    """One line per round, then the medians and the goal."""
    lines = [f"{'round':<6}{'first':<6}{'raw/s':>10}{'sink/s':>10}{'ratio':>7}  rows/s"]
    for number, r in enumerate(result.rounds):
        per_table = " ".join(f"{t}={r.rows_per_s[t]:,.1f}" for t in TABLES)
        lines.append(
            f"{number:<6}{r.first:<6}{r.raw_events_per_s:>10,.0f}{r.sink_events_per_s:>10,.0f}"
            f"{r.ratio:>7.3f}  {per_table}"
        )
    lines.append(
        f"median raw_events_per_s {result.raw_events_per_s} sink_events_per_s "
        f"{result.sink_events_per_s} ratio {result.ratio} (goal: at least {result.goal_ratio})"
    )
    return "".join(f"{line}\n" for line in lines)


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``sink`` to the ``bench`` subcommands."""
    parser = bench_commands.add_parser(
        "sink", help="the sink into PostgreSQL against a plain consumer, on one workload"
    )
    parser.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    parser.add_argument("--events", type=positive, default=DEFAULT_EVENTS, help="events")
    parser.add_argument("--sessions", type=positive, default=DEFAULT_SESSIONS, help="sessions")
    parser.add_argument("--rounds", type=positive, default=1, help="raw and sink runs, each")
    parser.add_argument(
        "--batch-records", type=positive, default=None, help="the sink's sink_batch_records"
    )
    parser.add_argument("--keep", action="store_true", help="keep the schemas (named in --json)")
    parser.add_argument("--dsn", default=None, help="default: $CTXSTREAM_POSTGRES_DSN")
    parser.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    dsn = args.dsn or os.environ.get("CTXSTREAM_POSTGRES_DSN")
    if not dsn:
        sys.stderr.write("bench sink: give --dsn or set CTXSTREAM_POSTGRES_DSN\n")
        return 2
    config = SinkBenchConfig(
        events=args.events,
        sessions=args.sessions,
        rounds=args.rounds,
        keep=args.keep,
        batch_records=args.batch_records,
    )
    result = asyncio.run(run_sink_bench(config, dsn))
    write_report(args.json, figures_json(asdict(result)), report_text(result), sys.stdout)
    return 0
