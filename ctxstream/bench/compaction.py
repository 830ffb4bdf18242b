"""``ctxstream bench compaction``: trigger-to-applied latency of compaction, end to end.

One run, against the broker of ``CTXSTREAM_KAFKA_BOOTSTRAP``, on fresh topics
(``bench-<hex>.*``, deleted afterwards); the steps are in ``ctxstream/bench/README.md``
(compaction.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import RecordMetadata

from ctxstream.appends.writer import events_producer
from ctxstream.bench.agents.census import WorkloadCensus, census_lines
from ctxstream.bench.agents.settings import workload_env
from ctxstream.bench.agents.stream import AgentsWorkload
from ctxstream.bench.compaction_hops import HopFigures, hop_figures, hop_lines
from ctxstream.bench.compaction_observer import Observed, observe
from ctxstream.bench.figures import (
    CompactionFigures,
    agents_sessions,
    bench_key,
    compaction_figures,
    restamped,
    staggered_rounds,
    workload_rounds,
)
from ctxstream.bench.processes import (
    PROJECTOR,
    SUMMARIZER,
    logged_gc,
    projector_env,
    start_worker,
    stop_worker,
    summarizer_env,
)
from ctxstream.bench.report import figures_json, write_report
from ctxstream.cli.common import Subcommands
from projections.event_kinds import summary_request_id
from schemas.codec import decode_envelope
from schemas.codec import encode as encode_record
from schemas.envelope import Envelope
from schemas.kafka.admin import delete_topics_of
from schemas.kafka.partitioning import session_partition
from schemas.kafka.settings import KafkaSettings
from schemas.keys import SessionKey
from streams.topics import create_topics

logger = logging.getLogger(__name__)

WARMUP_SESSIONS: Final = 4
WARMUP_INVOCATIONS: Final = 5
START_TIMEOUT_S: Final = 120.0  # both workers: interpreter, group joins, first summary
POLL_S: Final = 0.05
COMPACTION: Final = {"compaction_interval": 3, "overlap_size": 1}
#: Sessions start up to this many rounds apart (the compaction interval), so
#: their triggers spread over the rounds instead of all firing in one.
STAGGER: Final = 3
#: Tenant prefixes of the measured sessions and of the background load.
MEASURED_PREFIX: Final = "bench"
BACKGROUND_PREFIX: Final = "background"


Arrivals = Literal["spread", "burst"]
"""How the sessions of one round append their invocations."""

Appended = dict[tuple[int, int], tuple[float, float]]
"""(partition, offset) -> when its append began and when the broker acknowledged it."""


@dataclass(frozen=True, slots=True)
class CompactionBenchConfig:
    """What to run.

    Attributes:
        sessions: Sessions in the workload.
        invocations: Invocations per session (one round each).
        round_pause_s: Time from one round's start to the next's (burst: the
            pause after a round's appends).
        arrivals: How a round's sessions append: ``spread`` evenly over the
            round, or ``burst`` all at once.
        batch_within_s: The projector's batch window (``CTXSTREAM_BATCH_WITHIN_S``).
        settle_timeout_s: How long to wait for the last summaries after the
            last round; requests still unanswered then count as missing.
        run_dir: Where the workers' logs and the projector's data go.
    """

    sessions: int = 30
    invocations: int = 12
    round_pause_s: float = 0.5
    batch_within_s: float = 0.02
    arrivals: Arrivals = "spread"
    settle_timeout_s: float = 120.0
    run_dir: Path = Path(".run/bench-compaction")
    engine: Literal["native", "faust"] = "native"
    background_events_per_s: int = 0


@dataclass(frozen=True, slots=True)
class CompactionBenchReport:
    """The figures, with the engine, the background load the run had, the hops and the workload.

    ``gc``: each worker's collector figures from its exit line
    (:func:`~ctxstream.bench.processes.logged_gc`).
    ``workload``: what the measured sessions and the background contained
    (:meth:`~ctxstream.bench.agents.census.WorkloadCensus.figures`), with
    ``requests_decided`` (first emissions seen for them) and
    ``summaries_folded`` (of those, the ones a snapshot showed applied).
    """

    figures: CompactionFigures
    engine: str
    background_events_per_s: float
    hops: Mapping[str, HopFigures]
    workload: dict[str, Any] = field(default_factory=dict)
    gc: dict[str, dict[str, str]] = field(default_factory=dict)


async def run_compaction_bench(
    settings: KafkaSettings, config: CompactionBenchConfig
) -> CompactionBenchReport:
    """Run the benchmark once; its figures."""
    prefix = f"bench-{uuid.uuid4().hex[:12]}"
    deployment = settings.model_copy(update={"topic_prefix": prefix})
    run_dir = config.run_dir / prefix
    run_dir.mkdir(parents=True, exist_ok=True)
    await create_topics(deployment)
    projector = projector_env(
        deployment,
        data_dir=run_dir / "projector",
        compaction=COMPACTION,
        batch_within_s=config.batch_within_s,
        engine=config.engine,
        extra=workload_env([MEASURED_PREFIX, BACKGROUND_PREFIX]),
    )
    workers: list[asyncio.subprocess.Process] = []
    try:
        workers.append(await start_worker("projector", PROJECTOR, projector, run_dir))
        summarizer = summarizer_env(deployment)
        workers.append(await start_worker("summarizer", SUMMARIZER, summarizer, run_dir))
        figures, background, hops, workload = await _measure(deployment, config)
    finally:
        for worker in workers:
            await stop_worker(worker)
        await delete_topics_of(deployment)
    gc = {name: logged_gc(run_dir, name) for name in ("projector", "summarizer")}
    return CompactionBenchReport(figures, config.engine, round(background, 1), hops, workload, gc)


async def _measure(
    settings: KafkaSettings, config: CompactionBenchConfig
) -> tuple[CompactionFigures, float, Mapping[str, HopFigures], dict[str, Any]]:
    """The figures, the background rate reached (events per second), the hops, the census."""
    observed = Observed()
    observer = asyncio.create_task(observe(settings, observed))
    producer = events_producer(
        settings.kafka_bootstrap, security=settings.client_security()
    )  # the client's: its batch wait too
    await producer.start()
    try:
        warmup = [bench_key(n, tenant="warmup") for n in range(WARMUP_SESSIONS)]
        for envelopes in workload_rounds(warmup, WARMUP_INVOCATIONS):
            await _append(producer, settings, restamped(envelopes, time.time()))
        await _until(lambda: bool(observed.applied_keys & set(warmup)), START_TIMEOUT_S, observer)
        logger.info("bench compaction warmed up sessions=%d", len(warmup))
        census = WorkloadCensus()
        sessions = agents_sessions(
            config.sessions, config.invocations, tenant_prefix=MEASURED_PREFIX, census=census
        )
        keys = [session[0][0].session_key for session in sessions]
        appended: Appended = {}
        rounds = staggered_rounds(sessions, stagger=STAGGER)
        load = BackgroundLoad(settings, config)
        background = asyncio.create_task(load.run())
        try:
            for envelopes in rounds:
                appended.update(await _append_round(producer, settings, envelopes, config))
        finally:
            load.stop.set()
            await background
    finally:
        await producer.stop()
    measured = set(keys)

    def settled() -> bool:
        ours = [rid for rid, (key, _) in observed.decided.items() if key in measured]
        # An agents session decides its first request a few invocations in, maybe after the
        # last round: wait for one at least.
        return bool(ours) and all(observed.applied(rid) for rid in ours)

    with contextlib.suppress(TimeoutError):
        await _until(settled, config.settle_timeout_s, observer)
    await asyncio.sleep(1.0)  # a request decided by the last summaries, if any, shows up
    with contextlib.suppress(TimeoutError):
        await _until(settled, config.settle_timeout_s, observer)
    observer.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await observer
    requests = {}
    for rid, (key, offset) in observed.decided.items():
        if key in measured:
            began, acked = appended[
                session_partition(key.encode(), settings.events_partitions), offset
            ]
            requests[rid] = {**observed.points[rid], "append_began": began, "append_acked": acked}
    triggered_at = {rid: points["append_began"] for rid, points in requests.items()}
    applied_at = {
        rid: points["snapshot_seen"]
        for rid, points in requests.items()
        if "snapshot_seen" in points
    }
    committed = await _committed_summaries(settings)
    census.add(load.workload.census)
    workload = census.figures()
    decided = [rid for rid, (key, _) in observed.decided.items() if key not in warmup]
    workload["requests_decided"] = len(decided)
    workload["summaries_folded"] = sum(observed.applied(rid) for rid in decided)
    figures = compaction_figures(triggered_at, applied_at, committed)
    return figures, load.rate(), hop_figures(requests), workload


class BackgroundLoad:
    """Other sessions appended to `events` at a steady rate until :attr:`stop` is set."""

    #: Seconds between two sends of the pacing loop.
    STEP_S: Final = 0.01
    #: Sessions the background workload is spread over.
    SESSIONS: Final = 2_000

    def __init__(self, settings: KafkaSettings, config: CompactionBenchConfig) -> None:
        self._settings = settings
        self._per_s = config.background_events_per_s
        rounds_s = config.invocations * config.round_pause_s
        planned = int(self._per_s * (rounds_s + 60.0))  # more than the rounds take
        self.workload = AgentsWorkload(
            max(planned, self.SESSIONS), self.SESSIONS, tenant_prefix=BACKGROUND_PREFIX
        )
        self.stop = asyncio.Event()
        self.appended = 0
        self.seconds = 0.0

    def rate(self) -> float:
        """Events appended per second while the load ran (0 without load)."""
        return self.appended / self.seconds if self.seconds > 0 else 0.0

    async def run(self) -> None:
        """Append at the configured rate, paced every :attr:`STEP_S`, until stopped."""
        if self._per_s <= 0:
            return
        records = self.workload.records(clock=time.time)  # stamped as appended
        producer = AIOKafkaProducer(
            bootstrap_servers=self._settings.kafka_bootstrap,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
        )
        await producer.start()
        topic = self._settings.topic("events")
        started = time.monotonic()
        pending: list[asyncio.Future[Any]] = []
        try:
            while not self.stop.is_set():
                due = int((time.monotonic() - started) * self._per_s) - self.appended
                for key, value in itertools.islice(records, max(0, due)):
                    pending.append(await producer.send(topic, key=key, value=value))
                    self.appended += 1
                await asyncio.sleep(self.STEP_S)
            await asyncio.gather(*pending)
        finally:
            self.seconds = time.monotonic() - started
            await producer.stop()
        logger.info(
            "bench compaction background appended=%d seconds=%.1f rate=%.0f",
            self.appended,
            self.seconds,
            self.rate(),
        )


async def _append_round(
    producer: AIOKafkaProducer,
    settings: KafkaSettings,
    envelopes: Sequence[Envelope],
    config: CompactionBenchConfig,
) -> Appended:
    """Append one round as `config.arrivals` says; returns once the round's time is up."""
    if config.arrivals == "burst":
        burst = await _append(producer, settings, restamped(envelopes, time.time()))
        await asyncio.sleep(config.round_pause_s)
        return burst
    by_session: dict[SessionKey, list[Envelope]] = {}
    for envelope in envelopes:
        by_session.setdefault(envelope.session_key, []).append(envelope)
    slot_s = config.round_pause_s / max(1, len(by_session))
    start = time.monotonic()
    appends = []
    for number, invocation in enumerate(by_session.values()):
        await asyncio.sleep(max(0.0, start + number * slot_s - time.monotonic()))
        live = restamped(invocation, time.time())  # stamped as an agent appending now stamps it
        appends.append(asyncio.create_task(_append(producer, settings, live)))
    appended: Appended = {}
    for placed in await asyncio.gather(*appends):
        appended.update(placed)
    await asyncio.sleep(max(0.0, start + config.round_pause_s - time.monotonic()))
    return appended


async def _append(
    producer: AIOKafkaProducer, settings: KafkaSettings, envelopes: Iterable[Envelope]
) -> Appended:
    """Append `envelopes`; when each append began and was acknowledged, by (partition, offset)."""
    topic = settings.topic("events")
    began: list[float] = []
    acked: dict[asyncio.Future[RecordMetadata], float] = {}
    futures: list[asyncio.Future[RecordMetadata]] = []
    for envelope in envelopes:
        began.append(time.time())
        future = await producer.send(
            topic, key=envelope.session_key.encode(), value=encode_record(envelope)
        )
        future.add_done_callback(lambda done: acked.setdefault(done, time.time()))
        futures.append(future)
    placed = await asyncio.gather(*futures)
    return {
        (m.partition, m.offset): (at, acked[future])
        for m, at, future in zip(placed, began, futures, strict=True)
    }


async def _until(check: Any, timeout_s: float, observer: asyncio.Task[None]) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if observer.done():
            observer.result()  # raises what stopped it
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done after {timeout_s}s")
        await asyncio.sleep(POLL_S)


async def _committed_summaries(settings: KafkaSettings) -> Mapping[str, int]:
    """Committed summary events per request id, read back from `events`."""
    topic = settings.topic("events")
    consumer = AIOKafkaConsumer(
        bootstrap_servers=settings.kafka_bootstrap,
        enable_auto_commit=False,
        isolation_level="read_committed",
    )
    await consumer.start()
    counts: Counter[str] = Counter()
    try:
        partitions = [TopicPartition(topic, p) for p in range(settings.events_partitions)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)
        while any([await consumer.position(tp) < ends[tp] for tp in partitions]):
            for records in (await consumer.getmany(timeout_ms=200)).values():
                for record in records:
                    request_id = summary_request_id(decode_envelope(record.value).event)
                    if request_id is not None:
                        counts[request_id] += 1
    finally:
        await consumer.stop()
    return counts


def report_json(report: CompactionBenchReport) -> str:
    """The figures as JSON: the engine, the background rate reached, the hops, workload and gc."""
    shown: dict[str, Any] = {k: v for k, v in asdict(report.figures).items() if k != "requests"}
    shown["engine"] = report.engine
    shown["background_events_per_s"] = report.background_events_per_s
    shown["hops"] = {name: asdict(hop) for name, hop in report.hops.items()}
    shown["workload"] = report.workload
    shown["gc"] = report.gc
    return figures_json(shown)


def report_text(report: CompactionBenchReport) -> str:
    """One line of figures for the terminal, one per hop, then the workload's counts."""
    figures = report.figures
    workload = "".join(f"{line}\n" for line in census_lines(report.workload))
    return (
        f"engine={report.engine} background_events_per_s={report.background_events_per_s} "
        f"requests={figures.requests} p50_ms={figures.p50_ms} p99_ms={figures.p99_ms} "
        f"summaries_per_s={figures.summaries_per_s} duplicates={figures.duplicates} "
        f"missing={figures.missing} "
        + " ".join(f"{name}_gc_cpu_share={gc.get('cpu_share')}" for name, gc in report.gc.items())
        + f"\n{hop_lines(report.hops)}{workload}"
    )


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``compaction`` to the ``bench`` subcommands."""
    compaction = bench_commands.add_parser(
        "compaction",
        help="time compaction end to end: trigger appended to summary applied (extractive)",
    )
    compaction.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    compaction.add_argument(
        "--sessions",
        type=int,
        default=30,
        help="sessions (default 30: about 240 events/s, within one projector's reach here)",
    )
    compaction.add_argument(
        "--invocations", type=int, default=12, help="invocations per session (default 12)"
    )
    compaction.add_argument(
        "--round-pause-s", type=float, default=0.5, help="pause between rounds (default 0.5)"
    )
    compaction.add_argument(
        "--batch-within-s", type=float, default=0.02, help="the projector's batch window"
    )
    compaction.add_argument(
        "--arrivals",
        choices=["spread", "burst"],
        default="spread",
        help="spread: a round's sessions append evenly spaced over the round, as independent "
        "agents would (default); burst: all at the same instant (a stress case)",
    )
    compaction.add_argument(
        "--engine", choices=["native", "faust"], default="native", help="the projector's engine"
    )
    compaction.add_argument(
        "--background-events-per-s",
        type=int,
        default=0,
        help="other sessions appended to the same topic at this rate meanwhile (default 0)",
    )
    compaction.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    config = CompactionBenchConfig(
        sessions=args.sessions,
        invocations=args.invocations,
        round_pause_s=args.round_pause_s,
        batch_within_s=args.batch_within_s,
        arrivals=args.arrivals,
        engine=args.engine,
        background_events_per_s=args.background_events_per_s,
    )
    report = asyncio.run(run_compaction_bench(KafkaSettings(), config))
    write_report(args.json, report_json(report), report_text(report), sys.stdout)
    return 0
