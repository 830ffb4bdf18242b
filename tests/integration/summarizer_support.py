"""Sessions, compaction requests, worker processes and readers for the summarizer's broker tests.

Requests are decided with the pure core, as the projector decides them: after
each invocation, ``select_post_invocation_window`` over the session so far,
with a stand-in summary for every earlier window (the worker's real summary is
not there yet when the projector moves on), and the window's events mapped to
the offsets they were appended at.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import CoordinatorLoadInProgressError, GroupCoordinatorNotAvailableError
from aiokafka.structs import ConsumerRecord

from projections.compaction import select_post_invocation_window
from projections.compaction_config import CompactionConfig
from projections.render import summary_event
from projections.summary_request import summary_request_id
from schemas.codec import decode_dead_letter, decode_envelope, encode
from schemas.compaction_request import CompactionRequest, compaction_request_id
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import Offset, SessionKey, TenantId, parse_session_key
from schemas.logged_event import LoggedEvent
from streams.settings import KafkaSettings
from streams.topics import create_topics, topic_name

#: Every third invocation summarized, one invocation of overlap.
SLIDING: Final = CompactionConfig(compaction_interval=3, overlap_size=1)
FIRST_TIMESTAMP: Final = 1_764_480_000.0
SEND_TIMEOUT_S: Final = 60.0
WORKER_STOP_TIMEOUT_S: Final = 30.0


def session_key(index: int) -> SessionKey:
    """The key of test session `index`."""
    return SessionKey(f"tenant{index % 3}/support/u{index}/s{index}")


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


def envelope(event: Event, key: SessionKey) -> Envelope:
    """`event` in an envelope of session `key`."""
    return Envelope(
        tenant=parse_session_key(key).tenant,
        session_key=key,
        producer_id="summarizer-test",
        idempotency_key=f"{key}#{event.id}",
        event=event,
    )


async def create_deployment_topics(
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


async def append(
    bootstrap: str,
    topic: str,
    records: Sequence[tuple[bytes, bytes | None]],
    *,
    partition: int | None = None,
) -> list[tuple[int, int]]:
    """Produce (key, value) records in order (None: a tombstone); their (partition, offset)s.

    Each record goes to its key's partition, or to `partition` when one is given.
    """
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True)
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


async def append_events(
    bootstrap: str, topic: str, envelopes: Sequence[Envelope]
) -> list[LoggedEvent]:
    """Append `envelopes` to `events`, in order; each with the offset it got."""
    placed = await append(
        bootstrap, topic, [(e.session_key.encode(), encode(e)) for e in envelopes]
    )
    return [
        LoggedEvent(Offset(offset), e) for (_, offset), e in zip(placed, envelopes, strict=True)
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


#: How the worker is started: ``ctxstream summarizer``, or its module.
CLI_COMMAND: Final = ("streams.cli", "summarizer")
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
        """``kill -CONT`` a paused worker."""
        assert self.process is not None
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


async def committed_offsets(bootstrap: str, group: str) -> dict[int, int]:
    """The group's committed offset per partition."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    except (GroupCoordinatorNotAvailableError, CoordinatorLoadInProgressError):
        return {}  # a fresh broker makes its offsets topic on first use: nothing committed yet
    finally:
        await admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items()}


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


def worker_env(bootstrap: str, prefix: str, group: str, **extra: str) -> dict[str, str]:
    """The environment of a worker of the deployment `prefix`."""
    return {
        "CTXSTREAM_KAFKA_BOOTSTRAP": bootstrap,
        "CTXSTREAM_TOPIC_PREFIX": prefix,
        "CTXSTREAM_SUMMARIZER_GROUP_ID": group,
        "CTXSTREAM_SUMMARIZER_SESSION_TIMEOUT_MS": "6000",
        **extra,
    }


def topics(prefix: str) -> dict[str, str]:
    """The deployment's topic names by role."""
    settings = KafkaSettings(topic_prefix=prefix)
    return {
        role: topic_name(settings, role)
        for role in ("events", "compaction-requests", "projections", "dead-letters")
    }
