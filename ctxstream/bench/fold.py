"""``ctxstream bench fold``: the batch step's cost per event on the agents workload, no broker.

What the projector pays per event once the bytes are in memory, measured
offline so that a change to the fold can be compared before and after on the
same figures: the workload of ``ctxstream.bench.agents``, the requests the
fold decides answered by the extractive summarizer between batches (untimed)
and their summaries folded in the next batch. The steps are in
``ctxstream/bench/README.md`` (fold.py).
"""

from __future__ import annotations

import argparse
import cProfile
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Final

from ctxstream.bench.agents.census import census_lines
from ctxstream.bench.agents.offline import OfflineFeed
from ctxstream.bench.agents.settings import DEFAULT_PREFIX, with_workload_apps
from ctxstream.bench.agents.stream import AgentsWorkload
from ctxstream.bench.gc_figures import BenchGc, add_gc_argument
from ctxstream.bench.report import figures_json, write_report
from ctxstream.cli.common import Subcommands, positive
from schemas.compaction_request import CompactionRequest
from streams.batch import BatchProjector, SessionCache, SourceRecord
from streams.native_engine.store import MemoryPartitionStore
from streams.projector_settings import ProjectorSettings

DEFAULT_EVENTS: Final = 40_000
DEFAULT_SESSIONS: Final = 400
DEFAULT_BATCH_SIZE: Final = 5_000
MICROSECONDS: Final = 1e6


@dataclass(frozen=True, slots=True)
class FoldBenchConfig:
    """What to fold.

    Attributes:
        events: Events in the workload.
        sessions: Sessions they are spread over.
        batch_size: Records per batch, before the split by partition.
        profile: Where to write a cProfile of the timed calls, if anywhere.
        gc: The collector's policy (``--gc``; None: the worker's).
    """

    events: int = DEFAULT_EVENTS
    sessions: int = DEFAULT_SESSIONS
    batch_size: int = DEFAULT_BATCH_SIZE
    profile: str | None = None
    gc: str | None = None


@dataclass(frozen=True, slots=True)
class FoldBenchResult:
    """The figures of one run.

    Attributes:
        events: Records of the workload (the summaries come on top).
        sessions: Sessions they belong to.
        batch_size: Records per batch.
        partitions: `events` partitions the records are spread over.
        batches: Batches folded.
        applied: Records the fold applied, summaries included (the
            denominator of the rates).
        snapshots: Snapshots encoded.
        requests: Compaction requests decided.
        summaries: Summaries made for them and folded.
        histories: Sessions refolded from their history (a decision needed
            records their projection had released).
        dead_letters: Records and snapshots refused (0 on this workload).
        seconds: Time in ``project``, ``snapshot_records`` and the heap's
            settling after each batch together.
        project_seconds: Time in ``project``.
        snapshot_seconds: Time in ``snapshot_records``.
        us_per_event: ``seconds`` per applied event, in microseconds.
        project_us_per_event: ``project_seconds`` per applied event.
        snapshot_us_per_event: ``snapshot_seconds`` per applied event.
        settle_us_per_event: The heap's settling per applied event.
        gc: The collector's share of ``seconds`` and one whole collection
            (:meth:`ctxstream.bench.gc_figures.BenchGc.figures`).
        workload: What the workload contained
            (:meth:`~ctxstream.bench.agents.census.WorkloadCensus.figures`),
            with ``requests_decided`` and ``summaries_folded``.
    """

    events: int
    sessions: int
    batch_size: int
    partitions: int
    batches: int
    applied: int
    snapshots: int
    requests: int
    summaries: int
    histories: int
    dead_letters: int
    seconds: float
    project_seconds: float
    snapshot_seconds: float
    us_per_event: float
    project_us_per_event: float
    snapshot_us_per_event: float
    settle_us_per_event: float
    workload: dict[str, Any]
    gc: dict[str, Any]


def run_fold_bench(
    config: FoldBenchConfig, settings: ProjectorSettings | None = None
) -> FoldBenchResult:
    """Fold the workload batch by batch and time the batch step's calls.

    The workload's apps are configured on `settings` (their compaction and
    view agents); the requests a batch decides are answered before the next,
    and a session whose fold needs its history is given it from memory, as
    the engine reads it from `events`: the refold is timed with the batch.
    """
    settings = with_workload_apps(settings or ProjectorSettings(), [DEFAULT_PREFIX])
    partitions = settings.events_partitions
    workload = AgentsWorkload(config.events, config.sessions)
    feed = OfflineFeed(
        workload.records(),
        topic=settings.topic("events"),
        partitions=partitions,
        batch_size=config.batch_size,
    )
    stores: defaultdict[int, MemoryPartitionStore] = defaultdict(MemoryPartitionStore)
    projector = BatchProjector(
        settings, SessionCache(settings.session_cache_bytes), partitions=partitions
    )
    profiler = cProfile.Profile() if config.profile else None
    project_s = snapshot_s = settle_s = 0.0
    batches = applied = snapshots = requests = letters = 0
    collector = BenchGc(config.gc, settings)
    collector.start()
    try:
        for batch_records in feed.batches():
            by_partition: defaultdict[int, list[SourceRecord]] = defaultdict(list)
            for record in batch_records:
                by_partition[record.partition].append(record)
            batches += 1
            decided: list[CompactionRequest] = []
            for partition, batch in by_partition.items():
                store = stores[partition]
                if profiler is not None:
                    profiler.enable()
                collector.begin()
                started = time.perf_counter()
                outcome = projector.project(batch, _reader(store))
                feed.complete(projector, outcome, _reader(store))  # the history a decision needs
                folded = time.perf_counter()
                encoded, failed = outcome.snapshot_records()
                done = time.perf_counter()
                collector.end()
                if profiler is not None:
                    profiler.disable()
                project_s += folded - started
                snapshot_s += done - folded
                applied += outcome.applied
                snapshots += len(encoded)
                requests += len(outcome.requests)
                decided.extend(request for request, _ in outcome.requests)
                letters += len(outcome.dead_letters) + len(failed)
                store.apply(outcome.writes, store.changelog_next + 1)
            collector.begin()
            settled = time.perf_counter()
            collector.settle()
            settle_s += time.perf_counter() - settled
            collector.end()
            feed.answer(decided)  # untimed, as the summarizer works beside the projector
        seconds = project_s + snapshot_s + settle_s
        gc_figures = collector.figures(seconds)
    finally:
        collector.stop()
    if profiler is not None and config.profile:
        profiler.dump_stats(config.profile)
    per_event = MICROSECONDS / max(applied, 1)
    figures = workload.census.figures()
    figures.update(requests_decided=requests, summaries_folded=feed.summaries)
    return FoldBenchResult(
        events=workload.events,
        sessions=config.sessions,
        batch_size=config.batch_size,
        partitions=partitions,
        batches=batches,
        applied=applied,
        snapshots=snapshots,
        requests=requests,
        summaries=feed.summaries,
        histories=feed.histories,
        dead_letters=letters,
        seconds=round(seconds, 4),
        project_seconds=round(project_s, 4),
        snapshot_seconds=round(snapshot_s, 4),
        us_per_event=round(seconds * per_event, 2),
        project_us_per_event=round(project_s * per_event, 2),
        snapshot_us_per_event=round(snapshot_s * per_event, 2),
        settle_us_per_event=round(settle_s * per_event, 2),
        workload=figures,
        gc=gc_figures,
    )


def _reader(store: MemoryPartitionStore) -> Callable[[int, bytes], bytes | None]:
    def read(_partition: int, key: bytes) -> bytes | None:
        return store.get(key)

    return read


def report_text(result: FoldBenchResult) -> str:
    """The per-event figures, then the counts, one ``name value`` per line."""
    lines = [
        f"us_per_event {result.us_per_event}",
        f"project_us_per_event {result.project_us_per_event}",
        f"snapshot_us_per_event {result.snapshot_us_per_event}",
        f"settle_us_per_event {result.settle_us_per_event}",
        f"gc_policy {result.gc['policy']}",
        f"gc_share {result.gc['share']}",
        f"gc_collections {'/'.join(str(count) for count in result.gc['collections'])}",
        f"gc_whole_s {result.gc['whole_s']} (heap_objects {result.gc['heap_objects']})",
        f"applied {result.applied}",
        f"batches {result.batches}",
        f"snapshots {result.snapshots}",
        f"requests {result.requests}",
        f"summaries {result.summaries}",
        f"histories {result.histories}",
        f"dead_letters {result.dead_letters}",
        *census_lines(result.workload),
    ]
    return "".join(f"{line}\n" for line in lines)


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``fold`` to the ``bench`` subcommands."""
    fold = bench_commands.add_parser(
        "fold",
        help="time the projector's batch step and snapshots on the agents workload, no broker",
    )
    fold.add_argument("--events", type=positive, default=40_000, help="events (default 40000)")
    fold.add_argument("--sessions", type=positive, default=400, help="sessions (default 400)")
    fold.add_argument(
        "--batch-size", type=positive, default=5_000, help="records per batch (default 5000)"
    )
    fold.add_argument("--json", metavar="FILE", help="also write the figures here")
    fold.add_argument(
        "--profile", metavar="FILE", help="also write a cProfile of the timed calls here"
    )
    add_gc_argument(fold)
    fold.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    config = FoldBenchConfig(
        events=args.events,
        sessions=args.sessions,
        batch_size=args.batch_size,
        profile=args.profile,
        gc=args.gc,
    )
    result = run_fold_bench(config)
    write_report(args.json, figures_json(asdict(result)), report_text(result), sys.stdout)
    return 0
