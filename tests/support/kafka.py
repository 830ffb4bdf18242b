"""The one Kafka helper module of the broker tests: topics, workloads, appending, reading back,
waiting for committed offsets, and the workers as child processes.

Records are built with :mod:`tests.support.events` (one envelope helper,
``envelope(key, event)``). Two workloads: :func:`scripted_sessions` (the
projector's: interleaved invocations whose prompt tokens grow, so both
triggers fire) and :func:`invocation_events` with :func:`planned_requests`
(the summarizer's: requests decided with the pure core, as the projector
decides them: after each invocation, ``select_post_invocation_window`` over
the session so far, with a stand-in summary for every earlier window, the
window's events mapped to the offsets they were appended at).

Nothing here waits by sleeping for something not to happen: readers read to
the end offsets they saw, waits poll until a positive condition holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError
from aiokafka.structs import ConsumerRecord

from projections.compaction.after_invocation import select_post_invocation_window
from projections.compaction.config import CompactionConfig
from projections.compaction.decision import replay_decisions
from projections.compaction.render import summary_event
from projections.contents.snapshot import to_snapshot
from projections.event_kinds import summary_request_id
from projections.fold.projection import SessionProjection
from projections.retention.state_codec import decode_state
from schemas.codec import (
    decode_compaction_request,
    decode_dead_letter,
    decode_envelope,
    decode_projection_snapshot,
    encode,
)
from schemas.compaction_request import CompactionRequest, compaction_request_id
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from schemas.errors import DecodeError
from schemas.event import Event
from schemas.kafka.settings import KafkaSettings
from schemas.keys import Offset, SessionKey, TenantId, parse_session_key
from schemas.logged_event import LoggedEvent
from schemas.projection_snapshot import ProjectionSnapshot
from streams.faust_engine.projector import build_projector
from streams.native_engine.engine import NativeProjector
from streams.projector_settings import ProjectorSettings
from streams.session_table import decode_chunk, decode_header
from streams.topics import create_topics
from tests.support.events import envelope, session_key

#: Every third invocation summarized, one invocation of overlap.
SLIDING: Final = CompactionConfig(compaction_interval=3, overlap_size=1)
FIRST_TIMESTAMP: Final = 1_764_480_000.0
SEND_TIMEOUT_S: Final = 60.0
POLL_INTERVAL_S: Final = 0.25
READ_TIMEOUT_S: Final = 60.0
WORKER_STOP_TIMEOUT_S: Final = 60.0
REPO: Final = Path(__file__).resolve().parents[2]


# -- settings and topics -------------------------------------------------------


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
    secrets = {"read_secret", "kafka_sasl_username", "kafka_sasl_password"}
    data = settings.model_dump(mode="json", exclude=secrets)
    env: dict[str, str] = {}
    for name, value in data.items():
        text = value if isinstance(value, str) else json.dumps(value)
        env[f"CTXSTREAM_{name.upper()}"] = text
    if settings.read_secret is not None:  # None: the process reads read_secret_file, as this one
        env["CTXSTREAM_READ_SECRET"] = settings.read_secret.get_secret_value()
    if settings.kafka_sasl_username is not None:  # None: PLAINTEXT, as the variable unset
        env["CTXSTREAM_KAFKA_SASL_USERNAME"] = settings.kafka_sasl_username
    if settings.kafka_sasl_password is not None:
        env["CTXSTREAM_KAFKA_SASL_PASSWORD"] = settings.kafka_sasl_password.get_secret_value()
    return env


async def create_deployment_topics(settings: KafkaSettings) -> None:
    """The four topics of the deployment `settings` name."""
    await create_topics(settings)


async def create_topics_for(
    bootstrap: str, prefix: str, *, events_partitions: int, partitions: int
) -> KafkaSettings:
    """The four topics of a test deployment named ``<prefix>.<role>``."""
    settings = KafkaSettings(
        kafka_bootstrap=bootstrap,
        topic_prefix=prefix,
        events_partitions=events_partitions,
        partitions=partitions,
    )
    await create_topics(settings)
    return settings


def topics(prefix: str) -> dict[str, str]:
    """The deployment's topic names by role."""
    settings = KafkaSettings(topic_prefix=prefix)
    return {
        role: settings.topic(role)
        for role in ("events", "compaction-requests", "projections", "dead-letters")
    }


# -- workloads ------------------------------------------------------------------


def invocation_rows(
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
            rows = invocation_rows(number, invocation, clock, prompt_tokens=tokens)
            out.extend(envelope(session_key(number), row) for row in rows)
    return out


def invocation_events(index: int, invocation: int) -> list[Event]:
    """One invocation: a question, a tool call and its response, an answer with token usage."""
    base = FIRST_TIMESTAMP + index * 10_000 + invocation * 10
    inv = f"s{index}-inv{invocation}"
    call_id = f"c{index}-{invocation}"
    rows: list[dict[str, Any]] = [
        {
            "author": "user",
            "content": {"role": "user", "parts": [{"text": f"question {invocation} of {index}?"}]},
        },
        {
            "author": "helper",
            "content": {
                "role": "model",
                "parts": [
                    {"function_call": {"id": call_id, "name": "lookup", "args": {"n": invocation}}}
                ],
            },
        },
        {
            "author": "helper",
            "content": {
                "role": "user",
                "parts": [
                    {
                        "function_response": {
                            "id": call_id,
                            "name": "lookup",
                            "response": {"result": f"fact {invocation}"},
                        }
                    }
                ],
            },
        },
        {
            "author": "helper",
            "content": {"role": "model", "parts": [{"text": f"answer {invocation}"}]},
            "usageMetadata": {"promptTokenCount": 100 + invocation, "candidatesTokenCount": 7},
        },
    ]
    return [
        Event.model_validate(
            {"id": f"{inv}-e{n}", "invocationId": inv, "timestamp": base + n, **row}
        )
        for n, row in enumerate(rows)
    ]


def planned_requests(
    key: SessionKey, log: Sequence[LoggedEvent], config: CompactionConfig = SLIDING
) -> list[CompactionRequest]:
    """The requests a projector decides over `log` (one session), one per window.

    After each invocation the post-invocation window is selected over the
    events so far plus a stand-in summary for each earlier window.
    """
    requests: list[CompactionRequest] = []
    seen: list[Event] = []
    offsets = {record.envelope.event.id: record.offset for record in log}
    for position, record in enumerate(log):
        seen.append(record.envelope.event)
        following = log[position + 1] if position + 1 < len(log) else None
        invocation = record.envelope.event.invocation_id
        if following is not None and following.envelope.event.invocation_id == invocation:
            continue
        window = select_post_invocation_window(seen, config)
        if window is None:
            continue
        event_offsets = tuple(offsets[event.id] for event in window.summarized_events)
        request_id = compaction_request_id(key, window.trigger, event_offsets)
        requests.append(
            CompactionRequest(
                request_id=request_id,
                tenant=TenantId(parse_session_key(key).tenant),
                session_key=key,
                trigger=window.trigger,
                event_offsets=event_offsets,
                event_ids=window.event_ids,
                start_timestamp=window.start_timestamp,
                end_timestamp=window.end_timestamp,
                decided_at_offset=record.offset,
            )
        )
        stand_in = summary_event(
            window.events,
            "stand-in",
            event_id=f"stand-in-{request_id}",
            invocation_id=f"stand-in-{request_id}",
            timestamp=record.envelope.event.timestamp + 0.5,
        )
        assert stand_in is not None
        seen.append(stand_in)
    return requests


# -- appending --------------------------------------------------------------------


async def append(
    bootstrap: str,
    topic: str,
    records: Iterable[tuple[bytes | None, bytes | None]],
    *,
    partition: int | None = None,
) -> list[tuple[int, int]]:
    """Produce (key, value) records in order (None: a tombstone); their (partition, offset)s.

    Each record goes to its key's partition, or to `partition` when one is given.
    """
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, max_request_size=2_000_000
    )
    await producer.start()
    try:
        futures = [
            await producer.send(topic, key=key, value=value, partition=partition)
            for key, value in records
        ]
        metadata = await asyncio.wait_for(asyncio.gather(*futures), SEND_TIMEOUT_S)
    finally:
        await producer.stop()
    return [(m.partition, m.offset) for m in metadata]


async def append_envelopes(
    bootstrap: str, topic: str, envelopes: Iterable[Envelope]
) -> list[LoggedEvent]:
    """Append `envelopes` keyed by session, in order; each with the offset it got."""
    envelopes = list(envelopes)
    placed = await append(
        bootstrap, topic, [(e.session_key.encode(), encode(e)) for e in envelopes]
    )
    return [
        LoggedEvent(Offset(offset), e) for (_, offset), e in zip(placed, envelopes, strict=True)
    ]


async def append_requests(
    bootstrap: str,
    topic: str,
    requests: Iterable[CompactionRequest],
    *,
    partition: int | None = None,
) -> list[tuple[int, int]]:
    """Append `requests` keyed by session (to `partition` if given); their (partition, offset)s."""
    return await append(
        bootstrap,
        topic,
        [(r.session_key.encode(), encode(r)) for r in requests],
        partition=partition,
    )


# -- reading back -----------------------------------------------------------------


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
    """Every committed record of `topic` now, in partition then offset order.

    Read ``read_committed``, as the pipeline's consumers read: records of
    aborted transactions (a native projector's or a summarizer's, killed or
    fenced mid-transaction) are left out, and so is an open transaction's
    tail, up to the last stable offset.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
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
        if record.key is None or record.value is None:  # no key, a tombstone: dead letters
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
        start = settings.empty_projection_for(key)
        folded[key] = replay_decisions(key, records, settings.compaction_for(key), start)
    return folded


async def latest_snapshots(bootstrap: str, topic: str) -> dict[SessionKey, ProjectionSnapshot]:
    """The last snapshot of each session on the `projections` topic (a tombstone: none)."""
    latest: dict[SessionKey, ProjectionSnapshot] = {}
    for record in await read_all(bootstrap, topic):
        if record.value is None:  # a deleted session's tombstone
            latest.pop(SessionKey(record.key.decode()), None)
            continue
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


@dataclass(frozen=True)
class StoredOffsets:
    """A session's applied offsets as the table's changelog accounts for them.

    Attributes:
        checkpoint_upto: The last offset the session's checkpoint covers (-1: no checkpoint).
        chunk_offsets: The offsets the chunks after the checkpoint hold, in order.
    """

    checkpoint_upto: int
    chunk_offsets: list[int]


async def changelog_offsets(
    bootstrap: str, settings: ProjectorSettings
) -> dict[SessionKey, StoredOffsets]:
    """Each session's checkpoint and its chunks' offsets since, as the changelog holds them."""
    table: dict[bytes, bytes | None] = {}
    for record in await read_all(bootstrap, f"{settings.app_id}-sessions-changelog"):
        table[record.key] = record.value
    stored: dict[SessionKey, StoredOffsets] = {}
    for key, value in table.items():
        if not key.startswith(b"h:") or value is None:
            continue
        session = SessionKey(key[2:].decode())
        header = decode_header(value)
        numbers = range(header.base, header.chunks)
        chunks = [table.get(b"c:" + key[2:] + b":" + str(n).encode()) for n in numbers]
        assert all(chunk is not None for chunk in chunks), f"{session}: a chunk is missing"
        upto = -1
        if header.base:
            checkpoint = table.get(b"k:" + key[2:])
            assert checkpoint is not None, f"{session}: its checkpoint is missing"
            upto = decode_state(checkpoint).last_offset
        offsets: list[int] = [
            s.offset for chunk in chunks if chunk is not None for s in decode_chunk(chunk)
        ]
        stored[session] = StoredOffsets(upto, offsets)
    return stored


def assert_changelog_holds(
    stored: Mapping[SessionKey, StoredOffsets], log: Mapping[SessionKey, Sequence[LoggedEvent]]
) -> None:
    """Every session's applied records are in the changelog once: checkpoint, then chunks."""
    assert stored.keys() == log.keys()
    for key, records in log.items():
        offsets = [record.offset for record in records]
        held = stored[key]
        assert held.checkpoint_upto == -1 or held.checkpoint_upto in offsets, key
        assert held.chunk_offsets == [o for o in offsets if o > held.checkpoint_upto], key


async def read_topic(
    bootstrap: str,
    topic: str,
    *,
    partitions: int,
    until: Callable[[list[ConsumerRecord]], bool],
    timeout_s: float,
    isolation_level: str = "read_committed",
) -> list[ConsumerRecord]:
    """Every record of `topic`, read from the start until `until` holds or time runs out.

    Committed records only, unless `isolation_level` is ``read_uncommitted``.

    The read goes on to the end of every partition as it was when `until`
    first held, so what is returned is everything committed by then.
    """
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level=isolation_level,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    await consumer.start()
    records: list[ConsumerRecord] = []
    try:
        assigned = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(assigned)
        await consumer.seek_to_beginning(*assigned)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for batch in batches.values():
                records.extend(batch)
            if until(records):
                ends = await consumer.end_offsets(assigned)
                while any([await consumer.position(tp) < ends[tp] for tp in assigned]):
                    for batch in (await consumer.getmany(timeout_ms=200)).values():
                        records.extend(batch)
                break
    finally:
        await consumer.stop()
    return records


def summaries_by_request(records: Iterable[ConsumerRecord]) -> dict[str, list[LoggedEvent]]:
    """The summary events among `events` records, by the request id they name."""
    found: dict[str, list[LoggedEvent]] = defaultdict(list)
    for record in records:
        logged = LoggedEvent(Offset(record.offset), decode_envelope(record.value))
        request_id = summary_request_id(logged.envelope.event)
        if request_id is not None:
            found[request_id].append(logged)
    return dict(found)


def dead_letters(records: Iterable[ConsumerRecord]) -> list[DeadLetter]:
    """The decoded `dead-letters` records."""
    return [decode_dead_letter(record.value) for record in records]


def answered(
    expected: Iterable[str], dead: Iterable[str] = ()
) -> Callable[[list[ConsumerRecord]], bool]:
    """`until` for `read_topic` on `events`: every expected request has a summary."""
    wanted = set(expected) - set(dead)

    def done(records: list[ConsumerRecord]) -> bool:
        return wanted <= set(summaries_by_request(records))

    return done


# -- offsets and waiting -----------------------------------------------------------


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


async def committed_offsets(bootstrap: str, group: str, topic: str | None = None) -> dict[int, int]:
    """The group's committed offset per partition (of `topic` only, when given)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
        return {}  # a fresh broker makes its offsets topic on first use: nothing committed yet
    finally:
        await admin.close()
    return {
        tp.partition: meta.offset
        for tp, meta in offsets.items()
        if topic is None or tp.topic == topic
    }


async def wait_committed(
    bootstrap: str, group: str, ends: Mapping[int, int], timeout_s: float
) -> dict[int, int]:
    """Wait until the group has committed at least `ends` (partition -> offset); the last seen."""
    deadline = time.monotonic() + timeout_s
    seen: dict[int, int] = {}
    while time.monotonic() < deadline:
        seen = await committed_offsets(bootstrap, group)
        if all(seen.get(p, -1) >= end for p, end in ends.items()):
            break
        await asyncio.sleep(0.1)
    return seen


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
    topic = settings.topic("projections")
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
    events = settings.topic("events")
    ends = {p: o for p, o in (await end_offsets(settings.kafka_bootstrap, events)).items() if o}

    async def caught_up() -> bool:
        committed = await committed_offsets(settings.kafka_bootstrap, settings.app_id, events)
        return all(committed.get(p, -1) >= o for p, o in ends.items())

    await wait_for("the projector to commit every events partition's end", caught_up, timeout_s)


# -- workers --------------------------------------------------------------------

#: The projector engines the engine-parametrized tests run on.
ENGINES: Final = ("native", "faust")


@contextlib.asynccontextmanager
async def running_projector(settings: ProjectorSettings, timeout_s: float) -> AsyncIterator[None]:
    """The projector of `settings` on its engine, in this event loop, while the block runs.

    Raises:
        Exception: The engine failed (the native engine's failure ends its task).
    """
    if settings.engine == "native":
        engine = NativeProjector(settings)
        await asyncio.wait_for(engine.start(), timeout_s)
        try:
            yield
        finally:
            await engine.stop()
        return
    projector = build_projector(settings)
    await asyncio.wait_for(projector.app.start(), timeout_s)
    try:
        yield
    finally:
        await projector.app.stop()


def start_worker(settings: ProjectorSettings, log_path: Path) -> subprocess.Popen[bytes]:
    """``python -m ctxstream worker`` with `settings` in its environment, logging to `log_path`."""
    env = {**os.environ, **settings_env(settings)}
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "ctxstream", "worker"],
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


#: How the worker is started: ``ctxstream summarizer``, or its module.
CLI_COMMAND: Final = ("ctxstream", "summarizer")
MODULE_COMMAND: Final = ("summarizer_worker",)


@dataclass
class WorkerProcess:
    """``ctxstream summarizer`` (or `command`) as a child process, its log in a file."""

    env: Mapping[str, str]
    log_path: Path
    process: asyncio.subprocess.Process | None = None
    command: Sequence[str] = CLI_COMMAND
    _log_offset: int = 0

    async def start(self) -> None:
        """Start (or restart) the worker; the log is appended to."""
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                *self.command,
                env={**os.environ, **self.env},
                stdout=log,
                stderr=log,
            )

    def log_since_start(self) -> str:
        """What the worker logged since its latest start."""
        with self.log_path.open("rb") as log:
            log.seek(self._log_offset)
            return log.read().decode(errors="replace")

    async def wait_for(self, text: str, timeout_s: float, *, count: int = 1) -> bool:
        """Wait until the log since the latest start holds `text` `count` times; in time?"""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.log_since_start().count(text) >= count:
                return True
            if self.process is not None and self.process.returncode is not None:
                return False
            await asyncio.sleep(0.002)
        return False

    async def kill(self) -> None:
        """``kill -9`` the worker and reap it."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        await asyncio.wait_for(self.process.wait(), WORKER_STOP_TIMEOUT_S)

    def pause(self) -> None:
        """``kill -STOP`` the worker: it keeps its sockets but runs no code until `resume`."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """``kill -CONT`` a paused worker (nothing, once it has exited)."""
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGCONT)

    async def exited(self, timeout_s: float) -> int | None:
        """The exit status once the worker exits by itself within `timeout_s`, else None."""
        assert self.process is not None
        try:
            return await asyncio.wait_for(self.process.wait(), timeout_s)
        except TimeoutError:
            return None

    async def stop(self) -> int:
        """Stop the worker cleanly (SIGTERM); its exit status. Kills it if it hangs."""
        assert self.process is not None
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), WORKER_STOP_TIMEOUT_S)
            except TimeoutError:
                self.process.kill()
                await asyncio.wait_for(self.process.wait(), WORKER_STOP_TIMEOUT_S)
        assert self.process.returncode is not None
        return self.process.returncode


def worker_env(bootstrap: str, prefix: str, group: str, **extra: str) -> dict[str, str]:
    """The environment of a worker of the deployment `prefix`."""
    return {
        "CTXSTREAM_KAFKA_BOOTSTRAP": bootstrap,
        "CTXSTREAM_TOPIC_PREFIX": prefix,
        "CTXSTREAM_SUMMARIZER_GROUP_ID": group,
        "CTXSTREAM_SUMMARIZER_SESSION_TIMEOUT_MS": "6000",
        **extra,
    }
