"""Helpers of the projector's broker tests: workloads, producing, reading back, waiting."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError

from projections.compaction_decision import replay_decisions
from projections.projection import SessionProjection, empty_projection
from projections.snapshot import to_snapshot
from schemas.codec import (
    decode_compaction_request,
    decode_envelope,
    decode_projection_snapshot,
    encode,
)
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.event import Event
from schemas.keys import Offset, SessionKey, TenantId, parse_session_key
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import ProjectionSnapshot
from streams.projector_settings import ProjectorSettings
from streams.session_table import decode_chunk, decode_header
from streams.topics import create_topics, topic_name

POLL_INTERVAL_S = 0.25
READ_IDLE_S = 2.0  # a topic read back is complete when nothing arrives for this long
READ_TIMEOUT_S = 60.0
WORKER_STOP_TIMEOUT_S = 60.0
REPO = Path(__file__).resolve().parents[2]


def projector_settings(bootstrap: str, prefix: str, **overrides: Any) -> ProjectorSettings:
    """Settings of a test projector on its own topics (prefix), without a metrics server."""
    values: dict[str, Any] = {
        "kafka_bootstrap": bootstrap,
        "topic_prefix": prefix,
        "app_id": f"{prefix}-projector",
        "events_partitions": 4,
        "partitions": 2,
        "metrics_port": 0,
        "store": "memory",
        "commit_interval_s": 0.5,
        "session_timeout_s": 10.0,  # a killed worker's partitions move on sooner
        "batch_within_s": 0.1,
        "compaction": {
            "compaction_interval": 3,
            "overlap_size": 1,
            "token_threshold": 5_000,
            "event_retention_size": 4,
        },
        # tenant0 uses the default (both triggers); tenant1 only the token threshold,
        # tenant2's support app only the sliding window.
        "compaction_overrides": {
            "tenant1": {"token_threshold": 5_000, "event_retention_size": 4},
            "tenant2/support": {"compaction_interval": 3, "overlap_size": 1},
        },
    }
    values.update(overrides)
    return ProjectorSettings(**values)


def settings_env(settings: ProjectorSettings) -> dict[str, str]:
    """The ``CTXSTREAM_*`` environment that reproduces `settings` in a subprocess."""
    data = settings.model_dump(mode="json")
    env: dict[str, str] = {}
    for name, value in data.items():
        text = value if isinstance(value, str) else json.dumps(value)
        env[f"CTXSTREAM_{name.upper()}"] = text
    return env


async def create_deployment_topics(settings: ProjectorSettings) -> None:
    """The four topics of the test's deployment."""
    await create_topics(settings)


def session_key(number: int) -> SessionKey:
    """The key of scripted session `number`."""
    return SessionKey(f"tenant{number % 3}/support/u{number}/s{number}")


def invocation_events(
    number: int, invocation: int, clock: float, *, prompt_tokens: int
) -> list[dict[str, Any]]:
    """One ADK-shaped invocation: question, a tool call and its answer, a final reply."""
    inv = f"inv{invocation}"
    call_id = f"call-{number}-{invocation}"
    rows: list[dict[str, Any]] = [
        {"author": "user", "content": {"role": "user", "parts": [{"text": f"q{invocation}"}]}},
        {
            "author": "agent",
            "content": {
                "role": "model",
                "parts": [{"functionCall": {"id": call_id, "name": "lookup", "args": {"n": 1}}}],
            },
        },
        {
            "author": "agent",
            "content": {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": call_id, "name": "lookup", "response": {"r": 2}}}
                ],
            },
        },
        {
            "author": "agent",
            "content": {"role": "model", "parts": [{"text": f"answer {invocation}"}]},
            "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": 20},
        },
    ]
    for position, row in enumerate(rows):
        row.update(
            {
                "id": f"s{number}-i{invocation}-e{position}",
                "invocationId": inv,
                "timestamp": clock + position,
            }
        )
    return rows


def envelope(key: SessionKey, event: dict[str, Any] | Event) -> Envelope:
    """An envelope of `event` for session `key`."""
    parsed = event if isinstance(event, Event) else Event.model_validate(event)
    return Envelope(
        tenant=TenantId(parse_session_key(key).tenant),
        session_key=key,
        producer_id="projector-test",
        idempotency_key=f"{key}#{parsed.id}",
        event=parsed,
    )


def scripted_sessions(
    sessions: int, invocations: int, *, first_invocation: int = 1, start_clock: float = 1_000.0
) -> list[Envelope]:
    """Invocations of every session, interleaved one invocation at a time.

    Prompt tokens grow with the invocation and pass 5,000 on some sessions,
    so both the sliding window and the token threshold fire.
    """
    out: list[Envelope] = []
    for invocation in range(first_invocation, first_invocation + invocations):
        for number in range(sessions):
            clock = start_clock + invocation * 10
            tokens = 1_000 + invocation * 300 * (1 + number % 3)
            rows = invocation_events(number, invocation, clock, prompt_tokens=tokens)
            out.extend(envelope(session_key(number), row) for row in rows)
    return out


async def produce(
    bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]]
) -> None:
    """Produce key/value records in order (acks=all, idempotent)."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, max_request_size=2_000_000
    )
    await producer.start()
    try:
        pending = [await producer.send(topic, key=key, value=value) for key, value in records]
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


async def produce_envelopes(bootstrap: str, topic: str, envelopes: Iterable[Envelope]) -> None:
    """Produce envelopes keyed by session."""
    await produce(bootstrap, topic, ((e.session_key.encode(), encode(e)) for e in envelopes))


async def _partitions(consumer: AIOKafkaConsumer, topic: str) -> list[TopicPartition]:
    """The partitions of `topic`, after fetching its metadata; it must exist."""
    consumer.subscribe([topic])
    deadline = time.monotonic() + READ_TIMEOUT_S
    while not (partitions := consumer.partitions_for_topic(topic)):
        if time.monotonic() > deadline:
            raise AssertionError(f"no metadata for topic {topic}")
        await asyncio.sleep(POLL_INTERVAL_S)
    consumer.unsubscribe()
    return [TopicPartition(topic, p) for p in sorted(partitions)]


async def read_all(bootstrap: str, topic: str) -> list[Any]:
    """Every record of `topic` now, in partition then offset order."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    await consumer.start()
    # Let the consumer's background task start: stopping it before its first step
    # re-raises the cancellation (aiokafka's NoGroupCoordinator.close).
    await asyncio.sleep(0)
    try:
        tps = await _partitions(consumer, topic)
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        records: list[Any] = []
        deadline = time.monotonic() + READ_TIMEOUT_S
        while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out reading {topic}")
            batch = await consumer.getmany(timeout_ms=500)
            for messages in batch.values():
                records.extend(messages)
        records.sort(key=lambda r: (r.partition, r.offset))
        return records
    finally:
        await consumer.stop()


async def read_log(bootstrap: str, topic: str) -> dict[SessionKey, list[LoggedEvent]]:
    """The `events` topic by session, offset order, bad records left out."""
    by_session: dict[SessionKey, list[LoggedEvent]] = defaultdict(list)
    for record in await read_all(bootstrap, topic):
        if record.key is None:
            continue
        try:
            env = decode_envelope(record.value, record_key=record.key)
        except DecodeError:
            continue  # a dead letter: the projector leaves it out too
        by_session[env.session_key].append(LoggedEvent(Offset(record.offset), env))
    return dict(by_session)


def clean_fold(
    settings: ProjectorSettings, log: Mapping[SessionKey, list[LoggedEvent]]
) -> dict[SessionKey, tuple[SessionProjection, list[CompactionRequest]]]:
    """Each session folded with the pure core from scratch: projection and requests."""
    folded = {}
    for key, records in log.items():
        start = empty_projection(key, settings.view_request_for(key))
        folded[key] = replay_decisions(key, records, settings.compaction_for(key), start)
    return folded


async def latest_snapshots(bootstrap: str, topic: str) -> dict[SessionKey, ProjectionSnapshot]:
    """The last snapshot of each session on the `projections` topic."""
    latest: dict[SessionKey, ProjectionSnapshot] = {}
    for record in await read_all(bootstrap, topic):
        snapshot = decode_projection_snapshot(record.value)
        latest[snapshot.session_key] = snapshot
    return latest


async def requests_on(bootstrap: str, topic: str) -> list[CompactionRequest]:
    """Every request on the `compaction-requests` topic."""
    return [decode_compaction_request(r.value) for r in await read_all(bootstrap, topic)]


def expected_snapshots(
    folded: Mapping[SessionKey, tuple[SessionProjection, list[CompactionRequest]]],
) -> dict[SessionKey, ProjectionSnapshot]:
    """The snapshot of each clean fold."""
    return {key: to_snapshot(projection) for key, (projection, _) in folded.items()}


async def changelog_offsets(
    bootstrap: str, settings: ProjectorSettings
) -> dict[SessionKey, list[int]]:
    """Each session's applied offsets as the table's changelog holds them (chunks 0..n-1)."""
    table: dict[bytes, bytes | None] = {}
    for record in await read_all(bootstrap, f"{settings.app_id}-sessions-changelog"):
        table[record.key] = record.value
    offsets: dict[SessionKey, list[int]] = {}
    for key, value in table.items():
        if not key.startswith(b"h:") or value is None:
            continue
        session = SessionKey(key[2:].decode())
        header = decode_header(value)
        chunks = [table.get(b"c:" + key[2:] + b":" + str(n).encode()) for n in range(header.chunks)]
        offsets[session] = [
            stored.offset for chunk in chunks if chunk is not None for stored in decode_chunk(chunk)
        ]
        assert all(chunk is not None for chunk in chunks), f"{session}: a chunk is missing"
    return offsets


async def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    """The end offset of each partition of `topic`."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    # Let the consumer's background task start: stopping it before its first step
    # re-raises the cancellation (aiokafka's NoGroupCoordinator.close).
    await asyncio.sleep(0)
    try:
        tps = await _partitions(consumer, topic)
        return {tp.partition: offset for tp, offset in (await consumer.end_offsets(tps)).items()}
    finally:
        await consumer.stop()


async def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets on `topic`."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
        return {}  # a fresh broker creates its offsets topic on first use: nothing committed yet
    finally:
        await admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}


async def wait_for(what: str, check: Callable[[], Awaitable[bool]], timeout_s: float) -> None:
    """Poll `check` until it holds; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what}")
        await asyncio.sleep(POLL_INTERVAL_S)


async def wait_for_snapshots(
    settings: ProjectorSettings,
    expected: Mapping[SessionKey, ProjectionSnapshot],
    timeout_s: float,
) -> None:
    """Wait until the `projections` topic's latest snapshots equal `expected`; fail with a diff."""
    topic = topic_name(settings, "projections")
    latest: dict[SessionKey, ProjectionSnapshot] = {}

    async def equal() -> bool:
        nonlocal latest
        latest = await latest_snapshots(settings.kafka_bootstrap, topic)
        return latest == expected

    try:
        await wait_for("snapshots equal to a clean fold", equal, timeout_s)
    except AssertionError as exc:
        missing = sorted(set(expected) - set(latest))
        extra = sorted(set(latest) - set(expected))
        differing = sorted(k for k in set(expected) & set(latest) if expected[k] != latest[k])
        shown = [(expected[k], latest[k]) for k in differing[:2]]
        raise AssertionError(
            f"{exc}: missing={missing[:5]} extra={extra[:5]} "
            f"differing={len(differing)} first={shown}"
        ) from exc


async def wait_caught_up(settings: ProjectorSettings, timeout_s: float) -> None:
    """Wait until the projector's group committed the end of every `events` partition."""
    events = topic_name(settings, "events")
    ends = {p: o for p, o in (await end_offsets(settings.kafka_bootstrap, events)).items() if o}

    async def caught_up() -> bool:
        committed = await committed_offsets(settings.kafka_bootstrap, settings.app_id, events)
        return all(committed.get(p, -1) >= o for p, o in ends.items())

    await wait_for("the projector to commit every events partition's end", caught_up, timeout_s)


def start_worker(settings: ProjectorSettings, log_path: Path) -> subprocess.Popen[bytes]:
    """``python -m streams worker`` with `settings` in its environment, logging to `log_path`."""
    env = {**os.environ, **settings_env(settings)}
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "streams", "worker"],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )


def stop_worker(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL if it does not exit in time."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=WORKER_STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=WORKER_STOP_TIMEOUT_S)
