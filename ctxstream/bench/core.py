"""``ctxstream bench core``: time the pure core on synthetic sessions of growing length.

For each size N the synthetic session of :mod:`ctxstream.bench.workload`
(rolling summaries, so the visible context stays bounded) is folded into a
projection, then three medians are measured with ``time.perf_counter``; the steps are in
``ctxstream/bench/README.md`` (core.py).
"""

from __future__ import annotations

import argparse
import functools
import logging
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ctxstream.bench.gc_figures import BenchGc, add_gc_argument
from ctxstream.bench.report import results_json, write_report
from ctxstream.bench.workload import BENCH_SESSION, bench_session
from ctxstream.cli.common import Subcommands
from projections.compaction.config import CompactionConfig
from projections.compaction.decision import step
from projections.fold.projection import SessionProjection, apply, context_contents, project
from projections.fold.rebuild import rebuild_contents
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings

logger = logging.getLogger(__name__)

DEFAULT_SIZES: Final = (100, 1_000, 10_000, 50_000)
DEFAULT_REPEATS: Final = 5
# One summary cycle of the workload (4 invocations of about ten events, plus
# the summary) and a little more.
CYCLE_POSITIONS: Final = 48
#: What the decision step is timed with: the third new invocation since a summary triggers.
DECISION_CONFIG: Final = CompactionConfig(compaction_interval=3, overlap_size=1)
#: Records folded between two settlings of the heap while a session is built: the worker's
#: default batch.
BUILD_BATCH: Final = 5_000
MICROSECONDS: Final = 1e6


@dataclass(frozen=True, slots=True)
class CoreBenchResult:
    """Median timings, in seconds, for one session length.

    Attributes:
        events: Events in the session.
        build_s: Folding the session's `events` records into its projection,
            :data:`BUILD_BATCH` records at a time with the heap settled after
            each (as the worker's batches); the one figure not a median.
        build_us_per_event: ``build_s`` per event, in microseconds.
        gc: The collector's share of ``build_s`` and one whole collection
            (:func:`ctxstream.bench.gc_figures.gc_figures`).
        read_s: Reading the context from the projection.
        rebuild_s: Assembling the context from the raw records.
        apply_s: Applying one more event.
        decide_s: Applying and deciding the event that triggers the next compaction.
    """

    events: int
    build_s: float
    build_us_per_event: float
    gc: dict[str, Any]
    read_s: float
    rebuild_s: float
    apply_s: float
    decide_s: float


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def measure(
    events: int, *, repeats: int = DEFAULT_REPEATS, gc_choice: str | None = None
) -> CoreBenchResult:
    """The median timings of a synthetic session of `events` events.

    The session is built under the collector's policy `gc_choice` (``--gc``;
    None: the worker's), which stays in force for the timings after it.
    """
    records = bench_session(events + CYCLE_POSITIONS)
    collector = BenchGc(gc_choice, ProjectorSettings())
    collector.start()  # every size and policy starts on the same heap: the records alone
    try:
        collector.begin()
        started = time.perf_counter()
        projection = _build(records[:events], collector)
        build_s = time.perf_counter() - started
        collector.end()
        figures = collector.figures(build_s)
        collector.settle()  # the figures' whole collection unfroze the heap
        result = _timings(records, events, repeats, projection)
    finally:
        collector.stop()
    return CoreBenchResult(
        events=events,
        build_s=round(build_s, 4),
        build_us_per_event=round(build_s * MICROSECONDS / max(events, 1), 2),
        gc=figures,
        **result,
    )


def _build(records: Sequence[LoggedEvent], collector: BenchGc) -> SessionProjection:
    """The projection of `records`, folded :data:`BUILD_BATCH` at a time, settling between."""
    projection = SessionProjection(BENCH_SESSION)
    for start in range(0, len(records), BUILD_BATCH):
        projection = project(BENCH_SESSION, records[start : start + BUILD_BATCH], projection)
        collector.settle()
    return projection


def _timings(
    records: Sequence[LoggedEvent], events: int, repeats: int, projection: SessionProjection
) -> dict[str, float]:
    """The medians of reading, rebuilding, applying and deciding after `events` records."""
    request = projection.view.request
    start = projection
    reads: list[float] = []
    applies: list[float] = []
    for record in records[events:]:
        read = functools.partial(context_contents, projection)
        one_more = functools.partial(apply, projection, record)
        reads.extend(_seconds(read) for _ in range(repeats))
        applies.extend(_seconds(one_more) for _ in range(repeats))
        projection = apply(projection, record)
    rebuild = functools.partial(rebuild_contents, records[:events], request)
    rebuilds = [_seconds(rebuild) for _ in range(repeats)]
    return {
        "read_s": statistics.median(reads),
        "rebuild_s": statistics.median(rebuilds),
        "apply_s": statistics.median(applies),
        "decide_s": _decide_seconds(records, events, repeats, start),
    }


def _decide_seconds(
    records: Sequence[LoggedEvent], events: int, repeats: int, projection: SessionProjection
) -> float:
    """Median time of the decision step of the first record after `events` that emits a request.

    `projection` is the projection of the first `events` records.

    Raises:
        ValueError: No record of the sampled cycle triggers a compaction.
    """
    for record in records[events:]:
        if step(projection, record, DECISION_CONFIG).request is not None:
            decide = functools.partial(step, projection, record, DECISION_CONFIG)
            return statistics.median(_seconds(decide) for _ in range(repeats))
        projection = apply(projection, record)
    raise ValueError(f"no compaction decided within {len(records) - events} events of {events}")


def run_core_bench(
    sizes: Sequence[int] = DEFAULT_SIZES,
    *,
    repeats: int = DEFAULT_REPEATS,
    gc_choice: str | None = None,
) -> list[CoreBenchResult]:
    """Measure every size, in the order given, after one discarded warm-up run."""
    # first calls pay for imports and caches
    measure(min(sizes, default=0), repeats=1, gc_choice=gc_choice)
    results: list[CoreBenchResult] = []
    for size in sizes:
        result = measure(size, repeats=repeats, gc_choice=gc_choice)
        logger.info(
            "bench core events=%d build_us_per_event=%.1f gc_share=%.3f read_s=%.6f "
            "rebuild_s=%.6f apply_s=%.6f",
            result.events,
            result.build_us_per_event,
            result.gc["share"],
            result.read_s,
            result.rebuild_s,
            result.apply_s,
        )
        results.append(result)
    return results


def report_table(results: Sequence[CoreBenchResult]) -> str:
    """A plain-text table of the results, with read and apply relative to the smallest size."""
    lines = [
        f"{'events':>8}  {'build_us':>8}  {'gc':>5}  {'read_s':>10}  {'rebuild_s':>10}  "
        f"{'apply_s':>10}  {'decide_s':>10}  {'read x':>7}  {'apply x':>7}  {'decide x':>8}"
    ]
    base = results[0] if results else None
    for result in results:
        read_ratio = result.read_s / base.read_s if base and base.read_s else 0.0
        apply_ratio = result.apply_s / base.apply_s if base and base.apply_s else 0.0
        decide_ratio = result.decide_s / base.decide_s if base and base.decide_s else 0.0
        lines.append(
            f"{result.events:>8}  {result.build_us_per_event:>8.1f}  {result.gc['share']:>5.3f}  "
            f"{result.read_s:>10.6f}  {result.rebuild_s:>10.6f}  "
            f"{result.apply_s:>10.6f}  {result.decide_s:>10.6f}  {read_ratio:>7.2f}  "
            f"{apply_ratio:>7.2f}  {decide_ratio:>8.2f}"
        )
    return "\n".join(lines) + "\n"


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``core`` to the ``bench`` subcommands."""
    core = bench_commands.add_parser(
        "core", help="time reading, rebuilding and applying on synthetic sessions"
    )
    core.add_argument("--json", required=True, metavar="FILE", help="write the results here")
    core.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=[100, 1_000, 10_000, 50_000],
        metavar="N",
        help="session lengths in events (default 100 1000 10000 50000)",
    )
    core.add_argument("--repeats", type=int, default=5, help="samples per position (default 5)")
    add_gc_argument(core)
    core.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    results = run_core_bench(args.sizes, repeats=args.repeats, gc_choice=args.gc)
    write_report(args.json, results_json(results), report_table(results), sys.stdout)
    return 0
