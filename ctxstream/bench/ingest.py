"""``ctxstream bench ingest``: the projector's throughput against a plain consumer's.

One run, against the broker of ``CTXSTREAM_KAFKA_BOOTSTRAP``; the steps are in
``ctxstream/bench/README.md`` (ingest.py).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from ctxstream.bench.agents.census import census_lines
from ctxstream.bench.agents.settings import DEFAULT_PREFIX, with_workload_apps
from ctxstream.bench.agents.stream import AgentsWorkload
from ctxstream.bench.ingest_answers import AnswersFolded, requests_decided
from ctxstream.bench.ingest_gate import workload_producer
from ctxstream.bench.ingest_group import group_offsets
from ctxstream.bench.ingest_workers import WorkersFigures, time_workers, workers_deployment
from ctxstream.bench.processes import running_summarizer
from ctxstream.bench.report import figures_json, write_report
from ctxstream.cli.common import Subcommands
from schemas.codec import decode_envelope
from schemas.heap.heap_policy import HeapPolicy
from schemas.kafka.admin import delete_topics_of
from streams.faust_engine.projector import build_projector, projector_app, raw_topic
from streams.native_engine.engine import NativeProjector
from streams.projector_settings import ProjectorSettings
from streams.topics import create_topics

logger = logging.getLogger(__name__)

CATCH_UP_TIMEOUT_S: Final = 3_600.0
POLL_INTERVAL_S: Final = 0.1


@dataclass(frozen=True, slots=True)
class IngestBenchConfig:
    """What to measure.

    Attributes:
        events: Events in the workload.
        sessions: Sessions they are spread over.
        profile: Where to write a cProfile of the projector run, if anywhere.
        workers: Each number of worker processes to run on a backlog of their own
            (:mod:`~ctxstream.bench.ingest_workers`), in order; none by default.
        keep_topics: Leave the run's topics (prefix ``topic_prefix`` in the figures).
    """

    events: int = 200_000
    sessions: int = 2_000
    profile: str | None = None
    workers: tuple[int, ...] = ()
    keep_topics: bool = False


#: The engines the benchmark times, in the order it runs them.
ENGINES: Final = ("native", "faust")


@dataclass(frozen=True, slots=True)
class EngineRun:
    """What one engine's timed run did.

    Attributes:
        seconds: From its first batch to its having committed every end
            offset of the workload and folded every answer appended by then.
        answers: Those answers: records the summarizer appended after the
            workload while the engine folded it.
        requests: Compaction requests it decided (first emissions).
    """

    seconds: float
    answers: int
    requests: int


@dataclass(frozen=True, slots=True)
class EngineFigures:
    """One engine's run: the workload's events over its seconds, what it decided and folded, gc.

    Attributes:
        events_per_s: The workload's events over `seconds` (the summaries it
            also folded are not counted, only timed).
        seconds: See :attr:`EngineRun.seconds`.
        ratio: `events_per_s` over the raw read's.
        requests_decided: Requests it decided.
        summaries_folded: The summarizer's answers it folded within `seconds`.
        gc: The collections during the run, their share of `seconds`
            (:meth:`schemas.heap.gc_meter.GcReading.figures`).
    """

    events_per_s: float
    seconds: float
    ratio: float
    requests_decided: int
    summaries_folded: int
    gc: dict[str, Any]


@dataclass(frozen=True, slots=True)
class IngestBenchResult:
    """The figures of one run."""

    raw_events_per_s: float
    engines: dict[str, EngineFigures]
    native_over_faust: float
    faust_floor_events_per_s: float
    faust_floor_ratio: float
    events: int
    sessions: int
    raw_seconds: float
    faust_floor_seconds: float
    store: str
    batch_size: int
    gc_mode: str
    workload: dict[str, Any] = field(default_factory=dict)
    workers: dict[str, WorkersFigures] = field(default_factory=dict)
    topic_prefix: str = ""


async def produce_workload(
    settings: ProjectorSettings,
    config: IngestBenchConfig,
    workload: AgentsWorkload | None = None,
) -> int:
    """Produce the workload to the settings' `events` topic; returns how many records.

    `workload` is ``config``'s agents workload unless given (then its census
    counts what was produced).
    """
    workload = workload or AgentsWorkload(config.events, config.sessions)
    producer = workload_producer(settings.kafka_bootstrap)
    await producer.start()
    topic = settings.topic("events")
    count = 0
    try:
        pending = []
        for key, value in workload.records():
            pending.append(await producer.send(topic, key=key, value=value))
            count += 1
        await producer.flush()
        await asyncio.gather(*pending)
    finally:
        await producer.stop()
    return count


async def end_offsets(bootstrap: str, topic: str) -> dict[TopicPartition, int]:
    """The end offset of every partition of `topic`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    await asyncio.sleep(0)  # see tests: stopping before the first step re-raises
    try:
        consumer.subscribe([topic])
        partitions = consumer.partitions_for_topic(topic)
        while not partitions:
            await asyncio.sleep(POLL_INTERVAL_S)  # metadata arrives with the next refresh
            partitions = consumer.partitions_for_topic(topic)
        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        return dict(await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


async def _seconds_to_catch_up(
    settings: ProjectorSettings,
    app: Any,
    group: str,
    ends: dict[TopicPartition, int],
    first_batch_at: Callable[[], float | None],
    drained: Callable[[], Awaitable[bool]] | None = None,
) -> float:
    """Start `app`, wait until `group` committed every end offset (then `drained()`), stop it.

    Seconds from its first batch (``first_batch_at()``) to that moment.
    """
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    await admin.start()
    await app.start()
    try:
        deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
        caught_up = False
        while True:
            if not caught_up:
                committed = await group_offsets(admin, group)
                caught_up = all(committed.get(tp, -1) >= end for tp, end in ends.items() if end)
            if caught_up and (drained is None or await drained()):
                done = time.monotonic()
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{group} did not catch up")
            await asyncio.sleep(POLL_INTERVAL_S)
    finally:
        await app.stop()
        await admin.close()
    first = first_batch_at()
    if first is None:
        raise RuntimeError(f"{group} processed no batch")
    return done - first


async def time_projector(
    settings: ProjectorSettings,
    ends: dict[TopicPartition, int],
    produced: int,
    profile: str | None,
    heap: HeapPolicy | None = None,
) -> EngineRun:
    """`settings`' engine from its first batch to its having folded the workload and the answers.

    The workload is the `produced` records ending at `ends`; the answers, the
    summarizer's records after them by the time the workload is committed
    (:class:`~ctxstream.bench.ingest_answers.AnswersFolded`). `heap`, this
    process's started collector policy, is steered by the engine as a worker's is.
    """
    profiler = cProfile.Profile() if profile else None
    if profiler is not None:
        profiler.enable()
    try:
        if settings.engine == "native":
            engine = NativeProjector(settings, heap=heap)
            metrics = engine.metrics
            answers = AnswersFolded(settings.kafka_bootstrap, ends, produced, metrics)
            seconds = await _seconds_to_catch_up(
                settings, engine, settings.app_id, ends, lambda: engine.first_batch_at, answers
            )
        else:
            projector = build_projector(settings, heap)
            metrics = projector.metrics
            answers = AnswersFolded(settings.kafka_bootstrap, ends, produced, metrics)
            seconds = await _seconds_to_catch_up(
                settings,
                projector.app,
                settings.app_id,
                ends,
                lambda: projector.shell.first_batch_at,
                answers,
            )
        return EngineRun(seconds, answers.answers or 0, requests_decided(metrics))
    finally:
        if profiler is not None and profile:
            profiler.disable()
            profiler.dump_stats(profile)
        logger.info(
            "bench ingest engine=%s batches_seconds=%s",
            settings.engine,
            metrics.registry.get_sample_value("ctxstream_projector_batch_seconds_sum"),
        )


async def time_faust_floor(settings: ProjectorSettings, ends: dict[TopicPartition, int]) -> float:
    """Seconds an empty agent on the projector's faust setup takes to commit every end offset.

    The agent takes the `events` topic in batches as the projector's does and
    drops them: what remains is faust's own cost per record (fetching,
    queueing, acking, committing), which no projector on faust can go below.
    """
    group = f"{settings.app_id}-floor"
    app = projector_app(settings, group)
    first: list[float] = []

    @app.agent(raw_topic(app, settings, "events"), concurrency=1, name="floor")
    async def floor(stream: Any) -> None:
        async for _batch in stream.take_events(settings.batch_size, within=settings.batch_within_s):
            if not first:
                first.append(time.monotonic())

    return await _seconds_to_catch_up(
        settings, app, group, ends, lambda: first[0] if first else None
    )


async def time_raw_consumer(bootstrap: str, ends: dict[TopicPartition, int]) -> float:
    """Seconds a plain aiokafka consumer takes to read and decode every record."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        max_partition_fetch_bytes=4 * 1024 * 1024,
    )
    await consumer.start()
    await asyncio.sleep(0)
    try:
        tps = list(ends)
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        remaining = sum(ends.values())
        first: float | None = None
        while remaining > 0:
            batch = await consumer.getmany(timeout_ms=1_000, max_records=10_000)
            for records in batch.values():
                if first is None and records:
                    first = time.monotonic()
                for record in records:
                    decode_envelope(record.value, record_key=record.key)
                remaining -= len(records)
        if first is None:
            raise RuntimeError("the consumer read nothing")
        return time.monotonic() - first
    finally:
        await consumer.stop()


async def run_ingest_bench(
    config: IngestBenchConfig, base: ProjectorSettings | None = None
) -> IngestBenchResult:
    """Produce the workload, then time the projector and the plain consumer on it.

    Each engine folds its own copy of the workload (topics ``<prefix>-<engine>.*``)
    with a summarizer answering its requests, so the summaries one engine's
    requests caused are not in the other's log; the raw read and faust's floor
    read the native engine's copy before it runs. Then each of ``config.workers``
    (:func:`~ctxstream.bench.ingest_workers.time_workers`, topics ``<prefix>-w<N>.*``).
    The topics are deleted at the end unless ``config.keep_topics``.
    """
    prefix = f"bench-{uuid.uuid4().hex[:12]}"
    settings = with_workload_apps(base or ProjectorSettings(), [DEFAULT_PREFIX]).model_copy(
        update={
            "topic_prefix": prefix,
            "app_id": f"{prefix}-projector",
            "data_dir": Path(".run") / prefix,
            "metrics_port": 0,
        }
    )
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # Refused before anything runs: more workers than partitions.
    worker_runs = {n: workers_deployment(settings, prefix, n) for n in config.workers}
    workload = AgentsWorkload(config.events, config.sessions)
    deployments = {
        engine: settings.model_copy(
            update={
                "engine": engine,
                "topic_prefix": f"{prefix}-{engine}",
                "app_id": f"{prefix}-{engine}",
                "data_dir": settings.data_dir / engine,
            }
        )
        for engine in ENGINES
    }
    try:
        ends: dict[str, dict[TopicPartition, int]] = {}
        for engine, deployment in deployments.items():
            await create_topics(deployment)
            count = await produce_workload(deployment, config, workload)
            ends[engine] = await end_offsets(settings.kafka_bootstrap, deployment.topic("events"))
            logger.info("bench ingest produced=%d topic=%s", count, deployment.topic("events"))
        heap = (
            settings.heap_policy()
        )  # as the worker's; the raw consumer runs first, on a small heap
        heap.start()
        try:
            result = await _time_all(config, settings, deployments, ends, count, heap)
        finally:
            heap.stop()
        census = workload.census.figures()
        workers = {}
        for n, deployment in worker_runs.items():
            figures = await time_workers(deployment, n, workload, settings.data_dir / f"w{n}")
            ratio = round(figures.events_per_s / result.raw_events_per_s, 3)
            workers[str(n)] = replace(figures, ratio=ratio)
    finally:
        if not config.keep_topics:
            await delete_topics_of(settings)
    return replace(result, workload=census, workers=workers, topic_prefix=prefix)


async def _time_all(
    config: IngestBenchConfig,
    settings: ProjectorSettings,
    deployments: dict[str, ProjectorSettings],
    ends: dict[str, dict[TopicPartition, int]],
    count: int,
    heap: HeapPolicy,
) -> IngestBenchResult:
    """Time the raw read and faust's floor on the native engine's copy, then each engine."""
    raw_s = await time_raw_consumer(settings.kafka_bootstrap, ends["native"])
    floor_settings = settings.model_copy(
        update={"topic_prefix": deployments["native"].topic_prefix}
    )
    floor_s = await time_faust_floor(floor_settings, ends["native"])
    raw_rate, floor_rate = count / raw_s, count / floor_s
    engines: dict[str, EngineFigures] = {}
    for engine, deployment in deployments.items():
        profile = f"{config.profile}.{engine}" if config.profile else None
        # Each engine starts on the same heap as the first: the previous engine's state
        # collected, whatever is left frozen.
        heap.collect()
        async with running_summarizer(deployment, settings.data_dir, f"summarizer-{engine}"):
            before = heap.meter.reading()
            run = await time_projector(deployment, ends[engine], count, profile, heap)
            collections = heap.meter.reading().since(before)
        rate = count / run.seconds
        engines[engine] = EngineFigures(
            events_per_s=round(rate, 1),
            seconds=round(run.seconds, 3),
            ratio=round(rate / raw_rate, 3),
            requests_decided=run.requests,
            summaries_folded=run.answers,
            gc=collections.figures(run.seconds),
        )
    return IngestBenchResult(
        raw_events_per_s=round(raw_rate, 1),
        engines=engines,
        native_over_faust=round(engines["native"].events_per_s / engines["faust"].events_per_s, 3),
        faust_floor_events_per_s=round(floor_rate, 1),
        faust_floor_ratio=round(floor_rate / raw_rate, 3),
        events=count,
        sessions=config.sessions,
        raw_seconds=round(raw_s, 3),
        faust_floor_seconds=round(floor_s, 3),
        store=settings.table_store,
        batch_size=settings.batch_size,
        gc_mode=heap.mode,
    )


def report_text(result: IngestBenchResult) -> str:
    """Raw, each engine's rate and ratio, native over faust, then faust's floor, one per line."""
    lines = [f"raw_events_per_s {result.raw_events_per_s}"]
    for engine, figures in result.engines.items():
        lines.append(f"{engine}_events_per_s {figures.events_per_s}")
        lines.append(f"{engine}_ratio {figures.ratio}")
        lines.append(f"{engine}_gc_share {figures.gc['share']}")
    lines.append(f"native_over_faust {result.native_over_faust}")
    lines.append(f"faust_floor_events_per_s {result.faust_floor_events_per_s}")
    lines.append(f"faust_floor_ratio {result.faust_floor_ratio}")
    for engine, figures in result.engines.items():
        lines.append(f"{engine}_requests_decided {figures.requests_decided}")
        lines.append(f"{engine}_summaries_folded {figures.summaries_folded}")
    for n, run in result.workers.items():
        lines.append(f"workers_{n}_events_per_s {run.events_per_s}")
        lines.append(f"workers_{n}_per_process_events_per_s {run.per_process_events_per_s}")
        lines.append(f"workers_{n}_ratio {run.ratio}")
    lines.extend(census_lines(result.workload))
    return "".join(f"{line}\n" for line in lines)


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``ingest`` to the ``bench`` subcommands."""
    ingest = bench_commands.add_parser(
        "ingest", help="produce a workload, then time the projector and a plain consumer on it"
    )
    ingest.add_argument("--events", type=int, default=200_000, help="events (default 200000)")
    ingest.add_argument("--sessions", type=int, default=2_000, help="sessions (default 2000)")
    ingest.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    ingest.add_argument(
        "--profile", metavar="FILE", help="also write a cProfile of the projector run here"
    )
    ingest.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=[],
        metavar="N",
        help="also time N native worker processes in one group, for each N given",
    )
    ingest.add_argument(
        "--keep-topics", action="store_true", help="leave the run's topics (for inspection)"
    )
    ingest.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    if any(n < 1 for n in args.workers):
        raise SystemExit("--workers: each N is at least 1")
    config = IngestBenchConfig(
        events=args.events,
        sessions=args.sessions,
        profile=args.profile,
        workers=tuple(args.workers),
        keep_topics=args.keep_topics,
    )
    result = asyncio.run(run_ingest_bench(config))
    write_report(args.json, figures_json(asdict(result)), report_text(result), sys.stdout)
    return 0
