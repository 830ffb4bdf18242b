"""A live run of the whole pipeline: agents append sessions, workers compact them, views follow.

``ctxstream demo`` creates a deployment of its own (topics under a fresh
prefix), starts the projector and the summarizer as child processes (the
deterministic extractive summarizer: no network), and appends a few agent
sessions one invocation round at a time. As they happen it prints what a
subscriber of the pipeline sees: every committed summary event on `events`,
and each session's projection snapshot on `projections` when its
invocation count or compaction boundary moves. It ends once every session's
projection has caught up with its last event and its first summary, then
stops the workers, leaves the topics for inspection and names them all as
its last line (``topics     demo-<id>.{events,...}``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from aiokafka import AIOKafkaProducer

from ctxstream.bench.figures import bench_key, workload_rounds
from ctxstream.bench.processes import (
    PROJECTOR,
    SUMMARIZER,
    projector_env,
    start_worker,
    stop_worker,
    summarizer_env,
)
from ctxstream.cli.common import Subcommands, positive
from ctxstream.topic_follower import follow
from schemas.codec import decode_envelope, decode_projection_snapshot
from schemas.codec import encode as encode_record
from schemas.counted import counted
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.kafka.settings import TOPIC_ROLES, KafkaSettings
from schemas.keys import SessionKey
from schemas.projection_snapshot import ProjectionSnapshot
from streams.topics import create_topics

#: Compact every 3 invocations, keeping one of them: a summary within seconds.
COMPACTION: Final = {"compaction_interval": 3, "overlap_size": 1}
ROUND_PAUSE_S: Final = 0.3
POLL_S: Final = 0.1
SUMMARY_PREVIEW_CHARS: Final = 72

Say = Callable[[str], None]


@dataclass
class DemoOutcome:
    """What the demo appended and what the pipeline made of it.

    Attributes:
        prefix: The topic prefix of the demo's deployment.
        appended: The offset of each session's last appended event.
        snapshots: Each session's latest projection snapshot.
        summaries: The committed summary events of each session.
    """

    prefix: str
    appended: dict[SessionKey, int] = field(default_factory=dict)
    snapshots: dict[SessionKey, ProjectionSnapshot] = field(default_factory=dict)
    summaries: dict[SessionKey, int] = field(default_factory=dict)

    def projected(self) -> bool:
        """Every session's projection has caught up with its last appended event."""
        return all(
            (snapshot := self.snapshots.get(key)) is not None and snapshot.last_offset >= offset
            for key, offset in self.appended.items()
        )

    def settled(self) -> bool:
        """Every session summarized at least once, its projection past its last event."""
        return bool(self.appended) and all(
            self.summaries.get(key, 0) >= 1
            and (snapshot := self.snapshots.get(key)) is not None
            and snapshot.last_offset >= offset
            and snapshot.in_flight_request_id is None
            for key, offset in self.appended.items()
        )


async def run_demo(
    settings: KafkaSettings,
    *,
    sessions: int = 3,
    invocations: int = 7,
    run_dir: Path = Path(".run/demo"),
    timeout_s: float = 120.0,
    say: Say = print,
) -> DemoOutcome:
    """Run the pipeline on `settings`' cluster until the demo's sessions settle.

    Raises:
        ValueError: `sessions` or `invocations` is below 1.
        TimeoutError: The sessions did not settle within `timeout_s`.
    """
    if sessions < 1 or invocations < 1:
        raise ValueError(
            f"sessions={sessions}, invocations={invocations}: the demo needs at least 1 of each"
        )
    prefix = f"demo-{uuid.uuid4().hex[:8]}"
    deployment = settings.model_copy(update={"topic_prefix": prefix})
    run_dir = run_dir / prefix
    run_dir.mkdir(parents=True, exist_ok=True)
    await create_topics(deployment)
    say(f"deployment {prefix}: topics {prefix}.*, worker logs in {run_dir}")
    outcome = DemoOutcome(prefix)
    projector = projector_env(
        deployment, data_dir=run_dir / "projector", compaction=COMPACTION, batch_within_s=0.05
    )
    workers = [
        await start_worker("projector", PROJECTOR, projector, run_dir),
        await start_worker("summarizer", SUMMARIZER, summarizer_env(deployment), run_dir),
    ]
    watcher: asyncio.Task[None] | None = None
    deadline = time.monotonic() + timeout_s

    async def until(check: Callable[[], bool], what: str) -> None:
        while not check():
            if watcher is not None and watcher.done():
                watcher.result()  # raises what stopped it
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} not within {timeout_s:.0f} s")
            await asyncio.sleep(POLL_S)

    producer = AIOKafkaProducer(
        bootstrap_servers=deployment.kafka_bootstrap, acks="all", enable_idempotence=True
    )
    try:
        await producer.start()
        keys = [bench_key(n, tenant="demo") for n in range(sessions)]
        for number, envelopes in enumerate(workload_rounds(keys, invocations, stagger=2)):
            await _append(producer, deployment.topic("events"), envelopes, outcome)
            say(f"round {number + 1}: appended {counted(len(envelopes), 'event')}")
            if watcher is None:  # from the beginning: it misses nothing by starting now
                watcher = asyncio.create_task(_watch(deployment, outcome, say))
            await until(outcome.projected, "the round's projections")
            await asyncio.sleep(ROUND_PAUSE_S)
        await until(outcome.settled, "the demo's sessions settled")
    finally:
        await producer.stop()
        if watcher is not None:
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)
        for worker in workers:
            await stop_worker(worker)
    for key in sorted(outcome.appended):
        snapshot = outcome.snapshots[key]
        say(
            f"settled    {key}: {counted(outcome.summaries[key], 'summary', 'summaries')}, "
            f"{counted(snapshot.invocations_total, 'invocation')}, "
            f"{counted(snapshot.context_items, 'context item')} "
            f"(fingerprint {snapshot.context_fingerprint[:12]})"
        )
    say(f"topics     {prefix}.{{{','.join(TOPIC_ROLES)}}}")
    return outcome


async def _append(
    producer: AIOKafkaProducer, topic: str, envelopes: list[Envelope], outcome: DemoOutcome
) -> None:
    """Append one round, as agents running side by side would."""
    for envelope in envelopes:
        placed = await producer.send_and_wait(
            topic, key=envelope.session_key.encode(), value=encode_record(envelope)
        )
        outcome.appended[envelope.session_key] = placed.offset


async def _watch(settings: KafkaSettings, outcome: DemoOutcome, say: Say) -> None:
    """Print committed summaries and moving snapshots as a subscriber sees them."""
    events = settings.topic("events")
    async for fetched in follow(
        settings, ["events", "projections"], fetch_max_wait_ms=50, poll_ms=200
    ):
        for tp, records in fetched.items():
            for record in records:
                try:
                    if tp.topic == events:
                        _on_event(record.value, record.offset, outcome, say)
                    else:
                        _on_snapshot(decode_projection_snapshot(record.value), outcome, say)
                except DecodeError as exc:
                    say(f"undecodable {tp.topic}[{tp.partition}]@{record.offset}: {exc}")


def _on_event(value: bytes, offset: int, outcome: DemoOutcome, say: Say) -> None:
    envelope = decode_envelope(value)
    compaction = envelope.event.actions.compaction
    if compaction is None:
        return
    key = envelope.session_key
    outcome.summaries[key] = outcome.summaries.get(key, 0) + 1
    parts = compaction.compacted_content.parts or []
    text = " ".join(part.text for part in parts if part.text).replace("\n", " ")
    if len(text) > SUMMARY_PREVIEW_CHARS:
        text = text[: SUMMARY_PREVIEW_CHARS - 1] + "…"
    say(
        f"summary    {key} @{offset}: events "
        f"{_clock(compaction.start_timestamp)}..{_clock(compaction.end_timestamp)} -> {text!r}"
    )


def _on_snapshot(snapshot: ProjectionSnapshot, outcome: DemoOutcome, say: Say) -> None:
    key = snapshot.session_key
    before = outcome.snapshots.get(key)
    outcome.snapshots[key] = snapshot
    if before is not None and (before.invocations_total, before.boundary) == (
        snapshot.invocations_total,
        snapshot.boundary,
    ):
        return
    boundary = snapshot.boundary
    masked = (
        "no summary yet"
        if boundary is None
        else f"summary @{boundary.summary_offset} masks "
        f"{_clock(boundary.start_timestamp)}..{_clock(boundary.end_timestamp)}"
    )
    say(
        f"projection {key} @{snapshot.last_offset}: "
        f"{counted(snapshot.invocations_total, 'invocation')} "
        f"({snapshot.invocations_since_compaction} since compaction), "
        f"{counted(snapshot.context_items, 'context item')}, {masked}"
    )


def _clock(timestamp: float) -> str:
    """An event timestamp as UTC wall-clock time."""
    return time.strftime("%H:%M:%S", time.gmtime(timestamp))


def add_demo_command(commands: Subcommands) -> None:
    """Add ``demo`` to the ``ctxstream`` subcommands."""
    demo = commands.add_parser(
        "demo",
        help="run the whole pipeline live on the broker (CTXSTREAM_KAFKA_BOOTSTRAP): "
        "sessions in, summaries and projections out",
    )
    demo.add_argument("--sessions", type=positive, default=3, help="agent sessions (default 3)")
    demo.add_argument(
        "--invocations", type=positive, default=7, help="invocations per session (default 7)"
    )
    demo.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    def say(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    asyncio.run(
        run_demo(KafkaSettings(), sessions=args.sessions, invocations=args.invocations, say=say)
    )
    return 0
