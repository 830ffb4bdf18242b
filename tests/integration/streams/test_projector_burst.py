"""A 10x burst keeps the worker's memory bounded: a backlog waits on the broker, not in the worker.

The worker runs as a child process, with the memory store. A steady load
(each session's opening event, then one streamed chunk per session every
:data:`ROUND_PAUSE_S`) is folded as it arrives; then ten times that load, for
the same sessions, is appended as fast as the broker takes it, and the worker
catches up. Memory is the worker's resident set: ``VmRSS`` of
``/proc/<pid>/status`` sampled every :data:`SAMPLE_INTERVAL_S`, and its exact
peak ``VmHWM``, reset through ``clear_refs`` at the start of each phase.

What the burst may add to the steady phase's peak:

* the state it grows. The projection ignores a partial (streamed) event, so
  the cached projections grow by the burst's few final events only; but the
  table keeps every folded record's bytes (``c:`` chunks), which the memory
  store holds in the worker's heap: at any moment, the raw bytes of the
  burst's records folded so far (RocksDB would keep them in its write
  buffers, 64 MiB a partition by default, which the test cannot see into).
  That is read from the group's committed offsets: the native engine writes
  its store after the commit, faust writes the table during a batch whose
  offsets it commits within ``commit_interval_s`` of the next batch, so the
  state at time t is at most what is committed by t plus that lag.
* the records between the broker and the fold, at most
  :meth:`~streams.projector_settings.ProjectorSettings.fetched_bytes_bound`
  raw bytes, times :data:`COPIES`: a fetched record is held raw by the
  consumer and as its record object's value in the batch, and the batch's
  table chunks and changelog sends copy it once more until the transaction
  (native) or the delivery wait (faust) ends: at most about one more copy of
  the bytes the bound counts.
* :data:`SLACK_BYTES` for the allocator and the Python heap (arenas not handed
  back, snapshots, the decoded envelopes of one session).

So every sample must satisfy ``rss(t) <= steady peak + state(t) + allowance``
(and the exact peak, ``steady peak + the whole burst + allowance``). An
unbounded buffer breaks the first: it holds the backlog not folded yet,
beyond the state, and that is most of the burst (the burst arrives several
times faster than either engine folds), while the allowance is under half of
it. Sessions are the same in both phases, so nothing grows with their number.
Once caught up, the snapshots must equal a clean fold of the log.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import RecordMetadata

from schemas.codec import MAX_RECORD_BYTES, encode
from schemas.envelope import Envelope
from tests.conftest import unique_topic
from tests.support.events import envelope, event, session_key
from tests.support.kafka import (
    ENGINES,
    clean_fold,
    create_deployment_topics,
    expected_snapshots,
    projector_settings,
    read_log,
    start_worker,
    stop_worker,
    wait_caught_up,
    wait_for_snapshots,
)
from tests.support.process_memory import status_bytes

pytestmark = pytest.mark.integration

Record = tuple[bytes | None, bytes | None]

SESSIONS: Final = 12
PARTITIONS: Final = 4
CHUNK_CHARS: Final = 16_000  # text of one streamed (partial) chunk
STEADY_ROUNDS: Final = 100  # one chunk per session each: 1,200 records, about 19 MB
ROUND_PAUSE_S: Final = 0.08  # about 150 records (2.4 MB) a second: both engines keep up
BURST_FACTOR: Final = 10  # the burst: 12,000 chunks, about 187 MiB, and the final answers
BATCH_SIZE: Final = 500
COPIES: Final = 2
SLACK_BYTES: Final = 32 * 1024**2
SAMPLE_INTERVAL_S: Final = 0.02
CATCH_UP_TIMEOUT_S: Final = 60.0
FIRST_TIMESTAMP: Final = 1_764_480_000.0


# -- the worker's memory ---------------------------------------------------------------


@dataclass
class RssSamples:
    """The process's ``VmRSS`` every :data:`SAMPLE_INTERVAL_S`: (monotonic time, bytes)."""

    pid: int
    taken: list[tuple[float, int]] = field(default_factory=list)

    async def run(self) -> None:
        """Sample until cancelled."""
        while True:
            self.taken.append((time.monotonic(), status_bytes(self.pid, "VmRSS")))
            await asyncio.sleep(SAMPLE_INTERVAL_S)

    def peak(self) -> int:
        """The largest sample."""
        return max(rss for _, rss in self.taken)


@dataclass
class CommittedSamples:
    """The group's committed `events` offsets, polled: (monotonic time of the poll, offsets)."""

    bootstrap: str
    group: str
    topic: str
    taken: list[tuple[float, dict[int, int]]] = field(default_factory=list)

    async def run(self) -> None:
        """Poll until cancelled."""
        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            while True:
                sent = time.monotonic()
                offsets = await admin.list_consumer_group_offsets(self.group)
                committed = {
                    tp.partition: meta.offset
                    for tp, meta in offsets.items()
                    if tp.topic == self.topic
                }
                self.taken.append((sent, committed))
                await asyncio.sleep(SAMPLE_INTERVAL_S)
        finally:
            await admin.close()

    def at_or_after(self, moment: float) -> dict[int, int] | None:
        """The first offsets polled at `moment` or later; None if none was."""
        for sent, committed in self.taken:
            if sent >= moment:
                return committed
        return None


@contextlib.asynccontextmanager
async def sampling(*samplers: RssSamples | CommittedSamples) -> AsyncIterator[None]:
    """Run `samplers` while the block runs."""
    tasks = [asyncio.create_task(sampler.run()) for sampler in samplers]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


def reset_peak(pid: int) -> None:
    """Restart the process's peak resident set (``VmHWM``) from its current one."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


class PlacedBytes:
    """The raw bytes of appended records below given offsets: the table they make once folded."""

    def __init__(self, placed: Sequence[RecordMetadata], sizes: Sequence[int]) -> None:
        """`placed[i]` is where the record of `sizes[i]` bytes went."""
        by_partition: dict[int, list[tuple[int, int]]] = {}
        for metadata, size in zip(placed, sizes, strict=True):
            by_partition.setdefault(metadata.partition, []).append((metadata.offset, size))
        self._offsets: dict[int, list[int]] = {}
        self._sums: dict[int, list[int]] = {}
        for partition, rows in by_partition.items():
            rows.sort()
            self._offsets[partition] = [offset for offset, _ in rows]
            self._sums[partition] = [0, *itertools.accumulate(size for _, size in rows)]
        self.total = sum(sizes)

    def below(self, committed: Mapping[int, int]) -> int:
        """Bytes of the records at offsets below each partition's `committed` offset."""
        return sum(
            sums[bisect.bisect_left(self._offsets[partition], committed.get(partition, 0))]
            for partition, sums in self._sums.items()
        )


# -- the load ---------------------------------------------------------------------------


def opening(number: int) -> Envelope:
    """Session `number`'s first event: the user's question."""
    question = event(
        f"s{number}-q", "user", FIRST_TIMESTAMP, [{"text": f"question {number}"}], inv="inv1"
    )
    return envelope(session_key(number), question)


def chunk(number: int, index: int) -> Envelope:
    """A streamed chunk of session `number`'s answer: a partial event, which ADK never stores."""
    text = f"{number}:{index}:" + "x" * CHUNK_CHARS
    streamed = event(
        f"s{number}-c{index}",
        "agent",
        FIRST_TIMESTAMP + 1 + index * 0.001,
        [{"text": text}],
        inv="inv1",
        partial=True,
    )
    return envelope(session_key(number), streamed)


def answer(number: int) -> Envelope:
    """Session `number`'s final answer, after every chunk."""
    final = event(f"s{number}-a", "agent", FIRST_TIMESTAMP + 100, [{"text": "done"}], inv="inv1")
    return envelope(session_key(number), final)


def records(envelopes: Sequence[Envelope]) -> list[Record]:
    """(key, value) records of `envelopes`."""
    return [(e.session_key.encode(), encode(e)) for e in envelopes]


def producer(bootstrap: str) -> AIOKafkaProducer:
    """A producer that batches up to 1 MB a partition: the burst arrives at 60-100 MB/s here.

    With aiokafka's 16 KB batches each chunk is a request of its own, and the
    burst arrives no faster than the native engine folds it: no backlog forms.
    """
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        max_request_size=2_000_000,
        max_batch_size=1_000_000,
        linger_ms=5,
    )


async def append_at_once(
    bootstrap: str, topic: str, batch: Sequence[Record]
) -> list[RecordMetadata]:
    """Every record of `batch`, as fast as the broker takes them; where each went."""
    fast = producer(bootstrap)
    await fast.start()
    try:
        sent = [await fast.send(topic, key=key, value=value) for key, value in batch]
        return list(await asyncio.gather(*sent))
    finally:
        await fast.stop()


async def append_steadily(bootstrap: str, topic: str, rounds: range) -> None:
    """One chunk per session every :data:`ROUND_PAUSE_S`, each round's sends acknowledged."""
    steady = producer(bootstrap)
    await steady.start()
    try:
        for index in rounds:
            started = time.monotonic()
            sent = [
                await steady.send(topic, key=key, value=value)
                for key, value in records([chunk(n, index) for n in range(SESSIONS)])
            ]
            await asyncio.gather(*sent)
            await asyncio.sleep(max(0.0, ROUND_PAUSE_S - (time.monotonic() - started)))
    finally:
        await steady.stop()


def mib(value: float) -> str:
    """`value` bytes in MiB, for messages."""
    return f"{value / 1024**2:.1f} MiB"


# -- the test -------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
async def test_a_10x_burst_keeps_the_workers_memory_bounded(
    kafka_bootstrap: str, tmp_path: Path, engine: str
) -> None:
    settings = projector_settings(
        kafka_bootstrap,
        unique_topic("burst"),
        engine=engine,
        events_partitions=PARTITIONS,
        store="memory",
        batch_size=BATCH_SIZE,
        inflight_max_bytes=MAX_RECORD_BYTES,  # faust's stream buffer: its least, 64 records
        # Nothing to compact: no request waits for a summarizer that is not running.
        compaction={"compaction_interval": 1000, "overlap_size": 1},
        compaction_overrides={},
    )
    await create_deployment_topics(settings)
    events = settings.topic("events")
    await append_at_once(kafka_bootstrap, events, records([opening(n) for n in range(SESSIONS)]))

    burst_rounds = range(STEADY_ROUNDS, STEADY_ROUNDS * (1 + BURST_FACTOR))
    burst = records([chunk(n, i) for i in burst_rounds for n in range(SESSIONS)])
    burst += records([answer(n) for n in range(SESSIONS)])
    sizes = [len(value or b"") for _, value in burst]

    # faust's consumer is also assigned its leader topic's one partition.
    assigned = PARTITIONS + (1 if engine == "faust" else 0)
    fetched_bound = settings.fetched_bytes_bound(assigned, record_bytes=max(sizes))
    allowance = COPIES * fetched_bound + SLACK_BYTES
    # The table's writes of a batch reach the committed offsets this much later.
    commit_lag_s = 0.0 if engine == "native" else settings.commit_interval_s + 1.0
    assert 2 * allowance < sum(sizes), "the burst must be large against the allowance"

    worker = start_worker(settings, tmp_path / "worker.log")
    try:
        pid = worker.pid
        await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)  # started, the openings folded

        reset_peak(pid)
        steady_rss = RssSamples(pid)
        async with sampling(steady_rss):
            await append_steadily(kafka_bootstrap, events, range(STEADY_ROUNDS))
            await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
        steady_peak = status_bytes(pid, "VmHWM")

        reset_peak(pid)
        burst_rss = RssSamples(pid)
        committed = CommittedSamples(kafka_bootstrap, settings.app_id, events)
        started = time.monotonic()
        async with sampling(burst_rss, committed):
            placed = PlacedBytes(await append_at_once(kafka_bootstrap, events, burst), sizes)
            appended_s = time.monotonic() - started
            await wait_caught_up(settings, CATCH_UP_TIMEOUT_S)
            caught_up_s = time.monotonic() - started
            await asyncio.sleep(commit_lag_s + 2 * SAMPLE_INTERVAL_S)  # polls past the last sample
        burst_peak = status_bytes(pid, "VmHWM")

        # Memory beyond the state at each sample: the state is what is committed by then.
        def state(moment: float) -> int:
            polled = committed.at_or_after(moment + commit_lag_s)
            return placed.total if polled is None else placed.below(polled)

        beyond = [(rss - state(moment), moment) for moment, rss in burst_rss.taken]
        worst, worst_at = max(beyond)
        report = (
            f"{engine}: steady peak {mib(steady_peak)} (sampled {mib(steady_rss.peak())}), "
            f"burst peak {mib(burst_peak)} (sampled {mib(burst_rss.peak())}), at most "
            f"{mib(worst - steady_peak)} beyond the steady peak and the state folded so far "
            f"(at {worst_at - started:.1f} s); burst of {len(burst)} records, "
            f"{mib(placed.total)}, appended in {appended_s:.1f} s, caught up in "
            f"{caught_up_s:.1f} s; fetched bound {mib(fetched_bound)}, allowance {mib(allowance)}"
        )
        print(report)  # noqa: T201 - the figures, shown with -s
        assert worst <= steady_peak + allowance, report
        assert burst_peak <= steady_peak + placed.total + allowance, report

        log = await read_log(kafka_bootstrap, events)
        assert sum(map(len, log.values())) == SESSIONS * (2 + STEADY_ROUNDS * (1 + BURST_FACTOR))
        await wait_for_snapshots(
            settings, expected_snapshots(clean_fold(settings, log)), CATCH_UP_TIMEOUT_S
        )
    finally:
        stop_worker(worker)
    assert worker.returncode == 0
