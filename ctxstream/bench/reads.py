"""``ctxstream bench reads``: context reads through the client, by session length.

Against the broker of ``CTXSTREAM_KAFKA_BOOTSTRAP``, on fresh topics
(``bench-<hex>.*``, one `events` partition, deleted afterwards); the steps are in
``ctxstream/bench/README.md`` (reads.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final

from ctxstream.bench.core import DECISION_CONFIG
from ctxstream.bench.report import figures_json, percentile, write_report
from ctxstream.bench.restore import BENCH_SESSION_MAX_BYTES
from ctxstream.bench.workload import bench_session
from ctxstream.cli.common import Subcommands, positive
from ctxstream.client import Client
from ctxstream.errors import NoPartitionOwnerError, ReadTimeoutError
from projections.contents.snapshot import context_fingerprint
from schemas.event import Content
from schemas.kafka.admin import delete_topics_of
from schemas.keys import Offset, SessionKey
from streams.native_engine.engine import NativeProjector
from streams.projector_settings import ProjectorSettings
from streams.topics import create_topics

logger = logging.getLogger(__name__)

DEFAULT_SIZES: Final = (100, 50_000)
DEFAULT_READS: Final = 1_000
#: Untimed reads of each session and kind before the timed ones (connections, caches).
WARMUP_READS: Final = 20
#: Events per append call while the sessions are written.
APPEND_CALL_EVENTS: Final = 500
#: How long the engine may take to join its group and fold every session.
FOLD_TIMEOUT_S: Final = 600.0
#: The wait one read-your-writes read asks of the worker while the sessions fold.
FOLD_READ_WAIT_S: Final = 60.0
#: One timed read's bound: far above any read, so a stuck one fails the run.
READ_TIMEOUT_S: Final = 30.0
#: The agent whose context the sessions' snapshots describe (the workload's events are its).
VIEW_AGENT: Final = "agent"


def reads_session(events: int) -> SessionKey:
    """The session key of the size-`events` session: ``bench/app/user/reads-<events>``."""
    return SessionKey(f"bench/app/user/reads-{events}")


@dataclass(frozen=True, slots=True)
class ReadsBenchResult:
    """One size's figures, in milliseconds; `reads` of each kind were timed."""

    events: int
    reads: int
    p50_ms: float
    p99_ms: float
    min_offset_p50_ms: float
    min_offset_p99_ms: float
    context_items: int
    context_fingerprint: str


@dataclass(frozen=True, slots=True)
class ReadsBenchReport:
    """Every size's figures, and the largest size's over the smallest's."""

    results: tuple[ReadsBenchResult, ...]

    def ratio(self, figure: str) -> float:
        """`figure` (a field of the results) at the most events over the same at the fewest."""
        smallest = min(self.results, key=lambda result: result.events)
        largest = max(self.results, key=lambda result: result.events)
        base: float = getattr(smallest, figure)
        return round(float(getattr(largest, figure)) / max(base, 1e-9), 3)

    def to_json(self) -> str:
        """``{"results": [...], "ratio_p50", "ratio_p99", "min_offset_ratio_p50", ...}``."""
        figures = {
            "results": [asdict(result) for result in self.results],
            "ratio_p50": self.ratio("p50_ms"),
            "ratio_p99": self.ratio("p99_ms"),
            "min_offset_ratio_p50": self.ratio("min_offset_p50_ms"),
            "min_offset_ratio_p99": self.ratio("min_offset_p99_ms"),
        }
        return figures_json(figures)


@dataclass(slots=True)
class _Session:
    """A session of the run: its key, last offset, the answer every read must give, timings."""

    events: int
    key: SessionKey
    last_offset: Offset
    answer: list[Content]
    plain_s: list[float]
    min_offset_s: list[float]


def _settings(base: ProjectorSettings, run_dir: Path) -> ProjectorSettings:
    prefix = f"bench-{uuid.uuid4().hex[:12]}"
    return base.model_copy(
        update={
            "engine": "native",
            "store": "rocksdb",
            "topic_prefix": prefix,
            "app_id": f"{prefix}-projector",
            "events_partitions": 1,
            "metrics_port": 0,
            "query_port": 0,
            "data_dir": run_dir / prefix,
            "compaction": DECISION_CONFIG,
            "compaction_overrides": {},
            "view_agent_names": {"bench/app": VIEW_AGENT},
            # No summarizer answers the engine's own requests: a retry emitted while reads
            # are timed would be a batch of work on the same loop, so none falls due.
            "compaction_request_timeout_s": 10 * FOLD_TIMEOUT_S,
            # As bench restore: the largest size must not reach the per-session bound.
            "session_max_bytes": BENCH_SESSION_MAX_BYTES,
            "session_cache_bytes": BENCH_SESSION_MAX_BYTES,
        }
    )


async def _append(client: Client, events: int) -> _Session:
    key = reads_session(events)
    session = [record.envelope.event for record in bench_session(events, session_key=key)]
    offsets: list[Offset] = []
    for start in range(0, len(session), APPEND_CALL_EVENTS):
        offsets.extend(await client.append_many(key, session[start : start + APPEND_CALL_EVENTS]))
    return _Session(events, key, offsets[-1], [], [], [])


async def _folded(client: Client, session: _Session) -> None:
    """Wait until the session's last record is folded; keep what a read answers then."""
    deadline = time.monotonic() + FOLD_TIMEOUT_S
    while True:
        try:
            session.answer = await client.context(
                session.key, min_offset=session.last_offset, timeout_s=FOLD_READ_WAIT_S
            )
        except (ReadTimeoutError, NoPartitionOwnerError):
            if time.monotonic() > deadline:
                raise
            continue
        return


async def _timed(client: Client, session: _Session, *, min_offset: bool) -> float:
    """One read's seconds; raises when its answer differs from the session's folded one."""
    offset = session.last_offset if min_offset else None
    started = time.perf_counter()
    contents = await client.context(session.key, min_offset=offset, timeout_s=READ_TIMEOUT_S)
    elapsed = time.perf_counter() - started
    if contents != session.answer:
        raise RuntimeError(f"bench reads: session {session.key} answered another context")
    return elapsed


def _result(session: _Session) -> ReadsBenchResult:
    def ms(seconds: float) -> float:
        return round(seconds * 1000, 3)

    return ReadsBenchResult(
        events=session.events,
        reads=len(session.plain_s),
        p50_ms=ms(statistics.median(session.plain_s)),
        p99_ms=ms(percentile(session.plain_s, 0.99)),
        min_offset_p50_ms=ms(statistics.median(session.min_offset_s)),
        min_offset_p99_ms=ms(percentile(session.min_offset_s, 0.99)),
        context_items=len(session.answer),
        context_fingerprint=context_fingerprint(session.answer),
    )


async def run_reads_bench(
    base: ProjectorSettings,
    sizes: Sequence[int] = DEFAULT_SIZES,
    reads: int = DEFAULT_READS,
    run_dir: Path | None = None,
) -> ReadsBenchReport:
    """Fold a session of every size (each once), then time `reads` reads of each kind."""
    settings = _settings(base, run_dir or Path(".run") / "bench-reads")
    await create_topics(settings)
    try:
        engine = NativeProjector(settings)
        await engine.start()
        try:
            async with Client(settings=settings, producer_id="bench-reads") as client:
                sessions = [await _append(client, size) for size in dict.fromkeys(sizes)]
                for session in sessions:
                    await _folded(client, session)
                    logger.info(
                        "bench reads folded session=%s events=%d context_items=%d",
                        session.key,
                        session.events,
                        len(session.answer),
                    )
                for _ in range(WARMUP_READS):
                    for session in sessions:
                        await _timed(client, session, min_offset=False)
                        await _timed(client, session, min_offset=True)
                for _ in range(reads):
                    for session in sessions:
                        session.plain_s.append(await _timed(client, session, min_offset=False))
                        session.min_offset_s.append(await _timed(client, session, min_offset=True))
        finally:
            await engine.stop()
    finally:
        await delete_topics_of(settings)
    report = ReadsBenchReport(tuple(_result(session) for session in sessions))
    for result in report.results:
        logger.info("bench reads %s", result)
    return report


def report_text(report: ReadsBenchReport) -> str:
    """One line per size, then the ratios of the most events over the fewest."""
    lines = ["events reads p50_ms p99_ms min_offset_p50_ms min_offset_p99_ms context_items"]
    lines.extend(
        f"{result.events} {result.reads} {result.p50_ms} {result.p99_ms} "
        f"{result.min_offset_p50_ms} {result.min_offset_p99_ms} {result.context_items}"
        for result in report.results
    )
    lines.append(
        f"ratio p50 {report.ratio('p50_ms'):.2f} p99 {report.ratio('p99_ms'):.2f} "
        f"min_offset p50 {report.ratio('min_offset_p50_ms'):.2f} "
        f"p99 {report.ratio('min_offset_p99_ms'):.2f} (goal: p50 within 2x)"
    )
    return "".join(f"{line}\n" for line in lines)


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``reads`` to the ``bench`` subcommands."""
    reads = bench_commands.add_parser(
        "reads",
        help="time context reads through the client from an in-process worker, by session length",
    )
    reads.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    reads.add_argument(
        "--sizes",
        type=positive,
        nargs="+",
        default=[100, 50_000],
        help="session lengths in events (default 100 50000)",
    )
    reads.add_argument(
        "--reads",
        type=positive,
        default=1_000,
        help="timed reads per size and kind (default 1000)",
    )
    reads.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    report = asyncio.run(run_reads_bench(ProjectorSettings(), args.sizes, args.reads))
    write_report(args.json, report.to_json(), report_text(report), sys.stdout)
    return 0
