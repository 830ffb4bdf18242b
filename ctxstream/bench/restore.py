"""``ctxstream bench restore``: what it costs a fresh worker to take a session over.

For each size N, against the broker of ``CTXSTREAM_KAFKA_BOOTSTRAP``, on fresh
topics (``bench-<hex>.*``, one `events` partition, deleted afterwards):

1. append the first N records of the core benchmark's synthetic session
   (:mod:`ctxstream.bench.workload`: tool calls, state deltas, a rolling
   summary every few invocations, so compaction is on and the visible context
   stays bounded) and let a native engine fold them, then stop it;
2. start a fresh native engine with an empty local store, so its state comes
   from the changelog alone, wait until it owns the partition, then append
   the session's next record and wait until the engine has folded and
   committed it.

More in ``ctxstream/bench/README.md`` (restore.py).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaProducer

from ctxstream.bench.report import results_json, write_report
from ctxstream.bench.workload import BENCH_SESSION, bench_session
from ctxstream.cli.common import Subcommands, positive
from projections.retention.log_retention import released_events
from projections.retention.state_codec import decode_state
from schemas.codec import encode
from schemas.heap.gc_meter import GcReading
from schemas.heap.heap_policy import HeapPolicy
from schemas.kafka.admin import delete_topics_of
from schemas.kafka.settings import KafkaSettings
from streams.native_engine.engine import NativeProjector
from streams.projector_settings import ProjectorSettings
from streams.session_table import checkpoint_key
from streams.topics import create_topics

logger = logging.getLogger(__name__)

DEFAULT_SIZES: Final = (100, 1_000, 10_000, 50_000)
TIMEOUT_S: Final = 600.0
POLL_S: Final = 0.01
#: The per-session and cache bounds of the benchmark's workers: 16 GiB.
BENCH_SESSION_MAX_BYTES: Final = 16 * 1024**3


@dataclass(frozen=True, slots=True)
class RestoreBenchResult:
    """One size's figures.

    ``gc`` is what the collector cost during the takeover, under the worker's
    policy, from the fresh engine's start (group join, changelog restore) to
    its first fold's end, as a share of that time
    (:meth:`schemas.heap.gc_meter.GcReading.figures`).

    Attributes:
        released_events: Live events the session's checkpoint released.
        released_id_bytes: Bytes of the released ids' digests in that checkpoint.
        bytes_per_released_event: The one over the other (0.0: nothing released).
    """

    events: int
    restore_s: float
    changelog_s: float
    first_fold_s: float
    state_bytes: int
    dead_letters: int
    gc: dict[str, Any]
    released_events: int = 0
    released_id_bytes: int = 0
    bytes_per_released_event: float = 0.0


async def _append(settings: KafkaSettings, records: Sequence[bytes]) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=settings.kafka_bootstrap, acks="all", enable_idempotence=True
    )
    await producer.start()
    try:
        sent = [
            await producer.send(settings.topic("events"), key=BENCH_SESSION.encode(), value=value)
            for value in records
        ]
        await asyncio.gather(*sent)
    finally:
        await producer.stop()


async def _until(check: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"bench restore: timed out waiting for {what}")
        await asyncio.sleep(POLL_S)


async def measure(
    base: ProjectorSettings, events: int, run_dir: Path, heap: HeapPolicy | None = None
) -> RestoreBenchResult:
    """Build a session of `events` records with one engine, then time a fresh one's takeover.

    `heap`, this process's started collector policy, is steered by both
    engines as a worker's; the figures' ``gc`` needs it.
    """
    prefix = f"bench-{uuid.uuid4().hex[:12]}"
    settings = base.model_copy(
        update={
            "engine": "native",
            "store": "rocksdb",
            "topic_prefix": prefix,
            "app_id": f"{prefix}-projector",
            "events_partitions": 1,
            "metrics_port": 0,
            "data_dir": run_dir / prefix / "first",
            # Every record of the session is kept today (about 5 KB each in memory): the
            # largest size must not reach the per-session bound, or its tail is refused.
            "session_max_bytes": BENCH_SESSION_MAX_BYTES,
            "session_cache_bytes": BENCH_SESSION_MAX_BYTES,
        }
    )
    await create_topics(settings)
    try:
        records = [encode(record.envelope) for record in bench_session(events + 1)]
        await _append(settings, records[:events])
        first = NativeProjector(settings, heap=heap)
        await first.start()
        try:
            await _until(lambda: _handled(first) >= events, "the first fold")
            refused = int(
                first.metrics.registry.get_sample_value("ctxstream_projector_dead_letters_total")
                or 0
            )
        finally:
            await first.stop()

        fresh = NativeProjector(
            settings.model_copy(update={"data_dir": run_dir / prefix / "b"}), heap=heap
        )
        if heap is not None:
            heap.collect()  # the first engine's release, before the takeover is timed
        before = heap.meter.reading() if heap is not None else GcReading()
        window_began = time.monotonic()
        await fresh.start()
        try:
            await _until(lambda: 0 in fresh.partitions.owned(), "the restore")
            changelog_s = fresh.partitions.restored[0].seconds
            entries = fresh.partitions.table_entries()[0]
            appended_at = time.monotonic()
            await _append(settings, records[events:])
            await _until(
                lambda: (fresh.last_batch_at or 0.0) > appended_at, "the first fold after it"
            )
            first_fold_s = (fresh.last_batch_at or appended_at) - appended_at
            taken = heap.meter.reading().since(before) if heap is not None else GcReading()
            window_s = time.monotonic() - window_began
        finally:
            await fresh.stop()
    finally:
        await delete_topics_of(settings)
    released, id_bytes = _released(entries.get(checkpoint_key(BENCH_SESSION)))
    return RestoreBenchResult(
        events=events,
        restore_s=round(changelog_s + first_fold_s, 4),
        changelog_s=round(changelog_s, 4),
        first_fold_s=round(first_fold_s, 4),
        state_bytes=sum(len(key) + len(value) for key, value in entries.items()),
        dead_letters=refused,
        gc=taken.figures(window_s),
        released_events=released,
        released_id_bytes=id_bytes,
        bytes_per_released_event=round(id_bytes / released, 3) if released else 0.0,
    )


def _released(checkpoint: bytes | None) -> tuple[int, int]:
    """Live events a checkpoint released and the bytes of the released ids it keeps."""
    if checkpoint is None:
        return 0, 0
    projection = decode_state(checkpoint)
    return released_events(projection), len(projection.log.released.to_bytes())


def _handled(engine: NativeProjector) -> float:
    """Records the engine has folded or dead-lettered (its metrics)."""
    registry = engine.metrics.registry
    applied = registry.get_sample_value("ctxstream_projector_events_applied_total") or 0.0
    refused = registry.get_sample_value("ctxstream_projector_dead_letters_total") or 0.0
    return applied + refused


async def run_restore_bench(
    base: ProjectorSettings, sizes: Sequence[int] = DEFAULT_SIZES, run_dir: Path | None = None
) -> list[RestoreBenchResult]:
    """Measure every size in the order given."""
    folder = run_dir or Path(".run") / "bench-restore"
    results = []
    heap = base.heap_policy()  # as the worker's
    heap.start()
    try:
        for size in sizes:
            result = await measure(base, size, folder, heap)
            logger.info("bench restore %s", result)
            results.append(result)
    finally:
        heap.stop()
    return results


def report_text(results: Sequence[RestoreBenchResult]) -> str:
    """One line per size, with restore time and state relative to the smallest size."""
    if not results:
        return ""
    base = results[0]
    lines = [
        "events restore_s changelog_s first_fold_s state_bytes restore_x state_x gc_share "
        "released_events id_bytes_per_released_event"
    ]
    lines.extend(
        f"{result.events} {result.restore_s} {result.changelog_s} {result.first_fold_s} "
        f"{result.state_bytes} {result.restore_s / max(base.restore_s, 1e-9):.2f} "
        f"{result.state_bytes / max(base.state_bytes, 1):.2f} {result.gc['share']} "
        f"{result.released_events} {result.bytes_per_released_event}"
        for result in results
    )
    return "".join(f"{line}\n" for line in lines)


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``restore`` to the ``bench`` subcommands."""
    restore = bench_commands.add_parser(
        "restore",
        help="time a fresh native worker's restore of one session from the changelog, by size",
    )
    restore.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    restore.add_argument(
        "--sizes",
        type=positive,
        nargs="+",
        default=[100, 1_000, 10_000, 50_000],
        help="session lengths in events (default 100 1000 10000 50000)",
    )
    restore.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    results = asyncio.run(run_restore_bench(ProjectorSettings(), args.sizes))
    write_report(args.json, results_json(results), report_text(results), sys.stdout)
    return 0
