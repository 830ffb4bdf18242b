"""``ctxstream bench append``: the client's append against a plain producer, in one run.

Both send the core benchmark's events (:func:`ctxstream.bench.workload.bench_session`)
to fresh topics of their own on the same cluster:

* ``client_events_per_s``: :meth:`ctxstream.client.Client.append_many` from
  :data:`AGENTS` agents at once, each appending its own session's events in calls of
  :data:`CALL_EVENTS` and waiting for each call's offsets (one caller alone is bound by
  the round trip, not by the client): each event checked by the projector's decoder,
  then sent on an idempotent producer with ``acks=all``, timed until every offset is back;
* ``raw_producer_events_per_s``: a plain aiokafka producer with the same settings sending
  the very bytes the client built, timed the same way.

More in ``ctxstream/bench/README.md`` (append.py).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Final

from aiokafka import AIOKafkaProducer

from ctxstream.appends.event_records import event_record
from ctxstream.appends.writer import APPEND_LINGER_MS
from ctxstream.bench.report import figures_json, write_report
from ctxstream.bench.workload import BENCH_SESSION, bench_session
from ctxstream.cli.common import Subcommands, positive
from ctxstream.client import Client
from schemas.event import event_to_json
from schemas.kafka.admin import delete_topics_of
from schemas.kafka.settings import KafkaSettings
from streams.topics import create_topics

DEFAULT_EVENTS: Final = 20_000
#: Events per append_many call, as an agent appends a turn's events at once.
CALL_EVENTS: Final = 50
#: Agents appending at once, one session each.
AGENTS: Final = 32
PRODUCER_ID: Final = "bench-append"


@dataclass(frozen=True, slots=True)
class AppendBenchResult:
    """Events per second of the client and of the plain producer, measured in one run."""

    events: int
    client_events_per_s: float
    raw_producer_events_per_s: float

    @property
    def ratio(self) -> float:
        """The client's rate over the plain producer's."""
        return self.client_events_per_s / self.raw_producer_events_per_s


async def _raw_seconds(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> float:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        linger_ms=APPEND_LINGER_MS,  # the client's settings
    )
    await producer.start()
    try:
        started = time.perf_counter()
        deliveries = [await producer.send(topic, key=key, value=value) for key, value in records]
        for delivery in deliveries:
            await delivery
        return time.perf_counter() - started
    finally:
        await producer.stop()


async def _client_seconds(
    settings: KafkaSettings, sessions: dict[str, list[dict[str, object]]]
) -> float:
    async with Client(settings=settings, producer_id=PRODUCER_ID) as client:

        async def agent(session: str, events: list[dict[str, object]]) -> None:
            for start in range(0, len(events), CALL_EVENTS):
                await client.append_many(session, events[start : start + CALL_EVENTS])

        # The client's start, as the raw producer's is: its first append reads the claims.
        warm = next(iter(sessions.values()))[0]
        await client.append(f"{next(iter(sessions))}-warm", warm)
        started = time.perf_counter()
        async with asyncio.TaskGroup() as group:
            for session, events in sessions.items():
                group.create_task(agent(session, events))
        return time.perf_counter() - started


async def run_append_bench(base: KafkaSettings, events: int = DEFAULT_EVENTS) -> AppendBenchResult:
    """Measure both on fresh topics, which are deleted afterwards."""
    per_agent = -(-events // AGENTS)
    template = [event_to_json(record.envelope.event) for record in bench_session(per_agent)]
    sessions = {f"{BENCH_SESSION}-{agent}": template for agent in range(AGENTS)}
    records = [
        event_record(session, payload, producer_id=PRODUCER_ID)
        for session, payloads in sessions.items()
        for payload in payloads
    ]
    raw = base.model_copy(update={"topic_prefix": f"bench-append-raw-{uuid.uuid4().hex[:8]}"})
    client = base.model_copy(update={"topic_prefix": f"bench-append-{uuid.uuid4().hex[:8]}"})
    await create_topics(raw)
    await create_topics(client)
    try:
        raw_s = await _raw_seconds(base.kafka_bootstrap, raw.topic("events"), records)
        client_s = await _client_seconds(client, sessions)
    finally:
        await delete_topics_of(raw)
        await delete_topics_of(client)
    sent = len(records)
    return AppendBenchResult(
        events=sent,
        client_events_per_s=round(sent / client_s, 1),
        raw_producer_events_per_s=round(sent / raw_s, 1),
    )


def report_text(result: AppendBenchResult) -> str:
    """One line per figure, and the ratio."""
    return (
        f"client        {result.client_events_per_s:>12,.1f} events/s\n"
        f"raw producer  {result.raw_producer_events_per_s:>12,.1f} events/s\n"
        f"ratio         {result.ratio:>12.3f} (goal: at least 0.5)\n"
    )


def add_parser(bench_commands: Subcommands) -> None:
    """Add ``append`` to the ``bench`` subcommands."""
    append = bench_commands.add_parser(
        "append",
        help="the client's validated acks=all append against a plain producer, in one run",
    )
    append.add_argument("--json", required=True, metavar="FILE", help="write the figures here")
    append.add_argument(
        "--events", type=positive, default=20_000, help="events to append (default 20000)"
    )
    append.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    result = asyncio.run(run_append_bench(KafkaSettings(), args.events))
    write_report(args.json, figures_json(asdict(result)), report_text(result), sys.stdout)
    return 0
