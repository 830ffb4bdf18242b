"""``ctxstream bench fold``: the batch step's cost per event on the ingest workload, no broker.

What the projector pays per event once the bytes are in memory, measured
offline so that a change to the fold can be compared before and after on the
same figures; the steps are in ``ctxstream/bench/README.md`` (fold.py).
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

from ctxstream.bench.gc_figures import BenchGc, add_gc_argument
from ctxstream.bench.report import figures_json, write_report
from ctxstream.bench.workload import workload
from ctxstream.cli.common import Subcommands, positive
from schemas.kafka.partitioning import session_partition
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
        events: Records generated.
        sessions: Sessions they belong to.
        batch_size: Records per batch.
        partitions: `events` partitions the records are spread over.
        batches: Batches folded.
        applied: Records the fold applied (the denominator of the rates).
        snapshots: Snapshots encoded.
        requests: Compaction requests decided.
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
            (:func:`ctxstream.bench.gc_figures.gc_figures`).
    """

    events: int
    sessions: int
    batch_size: int
    partitions: int
    batches: int
    applied: int
    snapshots: int
    requests: int
    dead_letters: int
    seconds: float
    project_seconds: float
    snapshot_seconds: float
    us_per_event: float
    project_us_per_event: float
    snapshot_us_per_event: float
    settle_us_per_event: float
    gc: dict[str, Any]


def source_records(
    events: int, sessions: int, *, topic: str, partitions: int
) -> list[SourceRecord]:
    """The ingest workload as fetched records: on their keys' partitions, offsets per partition."""
    home: dict[bytes, int] = {}
    next_offset: defaultdict[int, int] = defaultdict(int)
    records: list[SourceRecord] = []
    for key, value in workload(events, sessions):
        partition = home.get(key)
        if partition is None:
            partition = home[key] = session_partition(key, partitions)
        records.append(SourceRecord(topic, partition, next_offset[partition], key, value))
        next_offset[partition] += 1
    return records


def run_fold_bench(
    config: FoldBenchConfig, settings: ProjectorSettings | None = None
) -> FoldBenchResult:
    """Fold the workload batch by batch and time the batch step's calls.

    Raises:
        RuntimeError: A batch needed a session's history (nothing here can read
            it, so the figures would leave work out).
    """
    settings = settings or ProjectorSettings()
    partitions = settings.events_partitions
    records = source_records(
        config.events, config.sessions, topic=settings.topic("events"), partitions=partitions
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
        for start in range(0, len(records), config.batch_size):
            by_partition: defaultdict[int, list[SourceRecord]] = defaultdict(list)
            for record in records[start : start + config.batch_size]:
                by_partition[record.partition].append(record)
            batches += 1
            for partition, batch in by_partition.items():
                store = stores[partition]
                if profiler is not None:
                    profiler.enable()
                collector.begin()
                started = time.perf_counter()
                outcome = projector.project(batch, _reader(store))
                folded = time.perf_counter()
                encoded, failed = outcome.snapshot_records()
                done = time.perf_counter()
                collector.end()
                if profiler is not None:
                    profiler.disable()
                if outcome.history_needed:
                    raise RuntimeError(
                        f"{len(outcome.history_needed)} sessions of partition {partition} "
                        "needed their history"
                    )
                project_s += folded - started
                snapshot_s += done - folded
                applied += outcome.applied
                snapshots += len(encoded)
                requests += len(outcome.requests)
                letters += len(outcome.dead_letters) + len(failed)
                store.apply(outcome.writes, store.changelog_next + 1)
            collector.begin()
            settled = time.perf_counter()
            collector.settle()
            settle_s += time.perf_counter() - settled
            collector.end()
        seconds = project_s + snapshot_s + settle_s
        gc_figures = collector.figures(seconds)
    finally:
        collector.stop()
    if profiler is not None and config.profile:
        profiler.dump_stats(config.profile)
    per_event = MICROSECONDS / max(applied, 1)
    return FoldBenchResult(
        events=len(records),
        sessions=config.sessions,
        batch_size=config.batch_size,
        partitions=partitions,
        batches=batches,
        applied=applied,
        snapshots=snapshots,
        requests=requests,
        dead_letters=letters,
        seconds=round(seconds, 4),
        project_seconds=round(project_s, 4),
        snapshot_seconds=round(snapshot_s, 4),
        us_per_event=round(seconds * per_event, 2),
        project_us_per_event=round(project_s * per_event, 2),
        snapshot_us_per_event=round(snapshot_s * per_event, 2),
        settle_us_per_event=round(settle_s * per_event, 2),
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
        f"dead_letters {result.dead_letters}",
    ]
    return "".join(f"{line}\n" for line in lines)


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``fold`` to the ``bench`` subcommands."""
    fold = bench_commands.add_parser(
        "fold",
        help="time the projector's batch step and snapshots on the ingest workload, no broker",
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
