"""``bench ingest --workers N``: N native projector processes in one group on one backlog.

For each N the benchmark makes a deployment of its own (topics
``<prefix>-w<N>.*``, group ``<prefix>-w<N>-projector``), produces the agents
workload to its `events` topic inside one open transaction
(:mod:`~ctxstream.bench.ingest_gate`), starts a summarizer and N processes of
``python -m ctxstream worker`` (native engine, the workload's apps, state of
their own), and waits until the group is stable with N members and every
partition is restored by the member it is assigned to
(:mod:`~ctxstream.bench.ingest_group`). Then it commits the transaction and
times, from the commit to the moment the group's committed offsets reach the
workload's end in every partition and then the last stable offsets read at
that moment (the summarizer's answers appended meanwhile, as
:mod:`~ctxstream.bench.ingest_answers` waits for them in process). Process
start-up, group joins and restores are before the commit: outside the time.

Each process's own figure is the workload's records on the partitions it
owns over the time until the group's committed offsets reached their
workload's end (without the answers' wait, which the slowest process sets
for all).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from aiokafka import ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from ctxstream.bench.agents.settings import DEFAULT_PREFIX, workload_env
from ctxstream.bench.agents.stream import AgentsWorkload
from ctxstream.bench.ingest_gate import GatedWorkload, produce_gated
from ctxstream.bench.ingest_group import (
    group_offsets,
    restored_owners,
    split_as_assigned,
    stable_assignment,
)
from ctxstream.bench.processes import (
    PROJECTOR,
    projector_env,
    running_summarizer,
    start_worker,
    stop_worker,
)
from schemas.kafka.committed_range import CommittedRangeReader
from streams.projector_settings import ProjectorSettings
from streams.reads.owners import PartitionOwners
from streams.topics import create_topics

logger = logging.getLogger(__name__)

#: How long N workers may take to start, join and restore (2 shared cores: minutes).
READY_TIMEOUT_S: Final = 300.0
CATCH_UP_TIMEOUT_S: Final = 3_600.0
POLL_S: Final = 0.1
#: Bytes one fetch of the answers' count reads.
FETCH_BYTES: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ProcessFigures:
    """One worker process of a run.

    Attributes:
        pid: Its process id.
        partitions: The `events` partitions it owned (restored and claimed).
        events: The workload's records on them.
        seconds: From the commit to the group's committed offsets reaching
            the workload's end on all of them.
        events_per_s: `events` over `seconds`.
    """

    pid: int
    partitions: list[int]
    events: int
    seconds: float
    events_per_s: float


@dataclass(frozen=True, slots=True)
class WorkersFigures:
    """N worker processes on one backlog.

    Attributes:
        events_per_s: The workload's records over `seconds`, all processes together.
        per_process_events_per_s: `events_per_s` over the number of processes.
        seconds: From the commit of the workload's transaction to the group's
            having committed the workload's end and then the answers appended
            by then, on every partition.
        ratio: `events_per_s` over the raw read's (set by the caller).
        summaries_folded: Those answers: committed records past the workload
            when it was folded.
        ready_seconds: From the first process's start to the group's being
            ready (start-up, joins, restores; not in `seconds`).
        topic_prefix: The run's topics (deleted unless kept).
        processes: Each process's figures, in start order.
    """

    events_per_s: float
    per_process_events_per_s: float
    seconds: float
    ratio: float
    summaries_folded: int
    ready_seconds: float
    topic_prefix: str
    processes: list[ProcessFigures]


def workers_deployment(settings: ProjectorSettings, prefix: str, workers: int) -> ProjectorSettings:
    """`settings` for the run of `workers` processes: topics ``<prefix>-w<N>``, its group.

    Raises:
        ValueError: Fewer `events` partitions than workers (one would idle).
    """
    if settings.events_partitions < workers:
        raise ValueError(
            f"{workers} workers need at least {workers} events partitions, "
            f"the deployment has {settings.events_partitions}"
        )
    topic_prefix = f"{prefix}-w{workers}"
    return settings.model_copy(
        update={"topic_prefix": topic_prefix, "app_id": f"{topic_prefix}-projector"}
    )


def worker_env(settings: ProjectorSettings, data_dir: Path) -> dict[str, str]:
    """A native worker process of `settings`' deployment, configured as the in-process engine."""
    extra = {
        **workload_env([DEFAULT_PREFIX]),
        "CTXSTREAM_STORE": settings.store,
        "CTXSTREAM_BATCH_SIZE": str(settings.batch_size),
        "CTXSTREAM_GC_MODE": settings.gc_mode,
    }
    return projector_env(
        settings,
        data_dir=data_dir,
        compaction=settings.compaction.model_dump(exclude_none=True),
        batch_within_s=settings.batch_within_s,
        extra=extra,
    )


@contextlib.asynccontextmanager
async def running_workers(
    settings: ProjectorSettings, workers: int, run_dir: Path
) -> AsyncIterator[list[asyncio.subprocess.Process]]:
    """`workers` processes of ``ctxstream worker`` on `settings`' deployment, stopped after."""
    processes: list[asyncio.subprocess.Process] = []
    try:
        for index in range(workers):
            name = f"projector-w{workers}-{index}"
            env = worker_env(settings, run_dir / name)
            processes.append(await start_worker(name, PROJECTOR, env, run_dir))
        yield processes
    finally:
        await asyncio.gather(*(stop_worker(process) for process in processes))


def _check_alive(processes: Sequence[asyncio.subprocess.Process], run_dir: Path) -> None:
    for process in processes:
        if process.returncode is not None:
            raise RuntimeError(
                f"worker {process.pid} exited with {process.returncode}: see the logs in {run_dir}"
            )


async def owners_when_ready(
    settings: ProjectorSettings,
    admin: AIOKafkaAdminClient,
    processes: Sequence[asyncio.subprocess.Process],
    run_dir: Path,
) -> dict[int, int]:
    """Each `events` partition's owner process id, once the group is ready to fold.

    Ready: the group is stable with one member per process, each assigned
    partitions, and every partition's newest claim is by the member that
    was assigned it (restored), each claimant one of `processes`.

    Raises:
        RuntimeError: A process exited.
        TimeoutError: Not ready within :data:`READY_TIMEOUT_S`.
    """
    pids = {process.pid for process in processes}
    deadline = time.monotonic() + READY_TIMEOUT_S
    owners = PartitionOwners(settings)
    try:
        while True:
            _check_alive(processes, run_dir)
            assignment = await stable_assignment(admin, settings.app_id, settings.topic("events"))
            if assignment is not None and len(assignment) == len(processes) and all(assignment):
                found = await restored_owners(owners, settings.events_partitions)
                if (
                    found is not None
                    and set(found.values()) == pids
                    and split_as_assigned(found, assignment)
                ):
                    return found
            if time.monotonic() > deadline:
                raise TimeoutError(f"{settings.app_id} not ready in {READY_TIMEOUT_S:g} s")
            await asyncio.sleep(POLL_S)
    finally:
        await owners.close()


@dataclass(frozen=True, slots=True)
class _Progress:
    """When the group's committed offsets reached each partition's workload end, then the LSOs.

    Attributes:
        reached: When each partition's workload end was first seen committed.
        stable: The last stable offsets read once every workload end was.
        done_at: When every one of those was seen committed.
    """

    reached: dict[TopicPartition, float]
    stable: dict[TopicPartition, int]
    done_at: float


async def _stable_offsets(
    reader: CommittedRangeReader, tps: list[TopicPartition]
) -> dict[TopicPartition, int]:
    return {tp: await reader.stable_offset(tp.partition) for tp in tps}


async def _answers(
    reader: CommittedRangeReader, ends: dict[TopicPartition, int], stable: dict[TopicPartition, int]
) -> int:
    """Committed records from each workload end to its stable offset."""
    found = 0

    def count(_record: ConsumerRecord[bytes, bytes]) -> None:
        nonlocal found
        found += 1

    for tp, end in ends.items():
        if stable[tp] > end:
            await reader.read_range(
                tp.partition,
                end,
                stable[tp],
                count,
                limit=stable[tp] - end,
                timeout_s=CATCH_UP_TIMEOUT_S,
                from_log_start=False,
            )
    return found


async def _follow(
    gated: GatedWorkload,
    admin: AIOKafkaAdminClient,
    reader: CommittedRangeReader,
    settings: ProjectorSettings,
    processes: Sequence[asyncio.subprocess.Process],
    run_dir: Path,
) -> _Progress:
    """Poll the group's committed offsets until the workload and then the answers are folded."""
    reached: dict[TopicPartition, float] = {}
    stable: dict[TopicPartition, int] | None = None
    deadline = time.monotonic() + CATCH_UP_TIMEOUT_S
    while True:
        committed = await group_offsets(admin, settings.app_id)
        now = time.monotonic()
        for tp, end in gated.ends.items():
            if tp not in reached and committed.get(tp, -1) >= end:
                reached[tp] = now
        if stable is None and len(reached) == len(gated.ends):
            stable = await _stable_offsets(reader, list(gated.ends))
        if stable is not None and all(committed.get(tp, -1) >= at for tp, at in stable.items()):
            return _Progress(reached, stable, now)
        _check_alive(processes, run_dir)
        if now > deadline:
            raise TimeoutError(f"{settings.app_id} did not catch up")
        await asyncio.sleep(POLL_S)


async def time_workers(
    settings: ProjectorSettings, workers: int, workload: AgentsWorkload, run_dir: Path
) -> WorkersFigures:
    """Run `workers` processes on a fresh copy of `workload` in `settings`' deployment; time them.

    `settings` is the deployment of :func:`workers_deployment`; its topics are
    created here and left for the caller to delete.
    """
    await asyncio.to_thread(run_dir.mkdir, parents=True, exist_ok=True)
    await create_topics(settings)
    gated = await produce_gated(settings, workload)
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_bootstrap)
    reader = CommittedRangeReader(
        bootstrap=settings.kafka_bootstrap, topic=settings.topic("events"), fetch_bytes=FETCH_BYTES
    )
    await admin.start()
    await reader.start()
    try:
        async with (
            running_summarizer(settings, run_dir, f"summarizer-w{workers}"),
            running_workers(settings, workers, run_dir) as processes,
        ):
            starting = time.monotonic()
            owners = await owners_when_ready(settings, admin, processes, run_dir)
            released = await gated.release()
            logger.info("bench ingest workers=%d released the workload", workers)
            progress = await _follow(gated, admin, reader, settings, processes, run_dir)
        answers = await _answers(reader, gated.ends, progress.stable)
    finally:
        await reader.stop()
        await admin.close()
        await gated.close()
    seconds = progress.done_at - released
    rate = gated.total / seconds
    return WorkersFigures(
        events_per_s=round(rate, 1),
        per_process_events_per_s=round(rate / workers, 1),
        seconds=round(seconds, 3),
        ratio=0.0,
        summaries_folded=answers,
        ready_seconds=round(released - starting, 3),
        topic_prefix=settings.topic_prefix,
        processes=[
            _process_figures(process.pid, owners, gated, progress, released)
            for process in processes
        ],
    )


def _process_figures(
    pid: int, owners: dict[int, int], gated: GatedWorkload, progress: _Progress, released: float
) -> ProcessFigures:
    partitions = sorted(partition for partition, owner in owners.items() if owner == pid)
    mine = [tp for tp in gated.ends if tp.partition in partitions]
    events = sum(gated.records[tp] for tp in mine)
    seconds = max((progress.reached[tp] for tp in mine), default=released) - released
    return ProcessFigures(
        pid=pid,
        partitions=partitions,
        events=events,
        seconds=round(seconds, 3),
        events_per_s=round(events / seconds, 1) if seconds > 0 else 0.0,
    )
