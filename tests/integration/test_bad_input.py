"""Bad input at scale (issue #27, item 3): generated malformed records straight to the topics.

Thousands of malformed records (:mod:`tests.support.bad_records`: every class the
issue names) are written with a raw producer to `events`, across many sessions and
five tenants, interleaved round by round with good records appended by the
``ctxstream`` client, and malformed requests (:mod:`tests.support.bad_requests`)
to `compaction-requests`. The projector (``ctxstream worker``, native engine)
and the summarizer (``ctxstream summarizer``) run as processes over them. Once
both have consumed everything:

* neither process died, and each exits 0 when stopped;
* every bad record is on `dead-letters` exactly once, matched by its source
  topic, partition and offset as the producer placed it, with the stage and a
  reason the generator expects, its key and its bytes (or a prefix, said so);
  no other record is;
* every good record is applied: each session's snapshot equals the pure core's
  fold of the good records alone (:func:`tests.support.kafka.clean_fold`), and its
  context fingerprint the independent rebuild's
  (:func:`projections.fold.rebuild.rebuild_contents`); every request the
  projector emitted has exactly one summary, and nothing was written for a bad
  request.

The good records include hostile but valid ones: orphan responses and
unanswered calls (through the client), and a summary and a refusal naming
requests nobody made (raw): ADK stores those, and the fold applies them as the
rebuild does.

10,000 bad events and 1,000 bad requests take about 10 s here, so the test is in
the normal suite.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.structs import ConsumerRecord

from ctxstream import Client
from projections.contents.snapshot import context_fingerprint
from projections.event_kinds import refused_request_id
from projections.fold.rebuild import rebuild_contents
from schemas.codec import decode_compaction_request, decode_dead_letter, decode_envelope
from schemas.dead_letter import MAX_KEY_BYTES, DeadLetter
from schemas.keys import Offset, SessionKey
from schemas.logged_event import LoggedEvent
from streams.projector_settings import ProjectorSettings
from tests.conftest import unique_topic
from tests.support.bad_records import (
    BadRecord,
    bad_events,
    bad_session,
    envelope_json,
    written_value,
)
from tests.support.bad_requests import bad_requests
from tests.support.hostile_events import hostile_valid_events
from tests.support.kafka import (
    WorkerProcess,
    clean_fold,
    committed_offsets,
    create_deployment_topics,
    expected_snapshots,
    invocation_rows,
    latest_snapshots,
    projector_settings,
    read_all,
    start_worker,
    stop_worker,
    summaries_by_request,
    worker_env,
)
from tests.support.next_agent_oracle import expected_view_request

pytestmark = pytest.mark.integration

SEED: Final = 27
EVENTS_PARTITIONS: Final = 4
PARTITIONS: Final = 2
GOOD_SESSIONS: Final = 40
INVOCATIONS: Final = 4
ROUNDS: Final = 2 * INVOCATIONS  # each round: a slice of bad records, half the sessions' turn
HOSTILE_VALID: Final = 40
FORGED_VALID: Final = 6
SETTLE_TIMEOUT_S: Final = 300.0
POLL_S: Final = 1.0
SEND_TIMEOUT_S: Final = 120.0

Placed = tuple[str, int, int]  # topic, partition, offset


@dataclass(frozen=True)
class Written:
    """What the test wrote: the bad records by where they landed, the valid forgeries."""

    bad: dict[Placed, BadRecord]
    forged_ids: frozenset[str]


async def _produce(
    bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None, int | None]]
) -> list[Placed]:
    """Raw records to their given partitions (None: their key's), in order; where each landed."""
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        max_request_size=2_000_000,
        linger_ms=5,
    )
    await producer.start()
    try:
        futures = [
            await producer.send(topic, key=key, value=value, partition=partition)
            for key, value, partition in records
        ]
        landed = await asyncio.wait_for(asyncio.gather(*futures), SEND_TIMEOUT_S)
    finally:
        await producer.stop()
    return [(topic, m.partition, m.offset) for m in landed]


def _forged_valid(number: int) -> tuple[str, dict[str, Any]]:
    """A well-formed summary or refusal of a request nobody made: (request id, event)."""
    request_id = f"forged-{number}"
    clock = 1_764_490_000.0 + number
    if number % 2:
        return request_id, {
            "id": f"refused:{request_id}",
            "author": "ctxstream",
            "timestamp": clock,
            "customMetadata": {"ctxstream": {"compaction_refused": request_id, "reason": "x"}},
        }
    return request_id, {
        "id": f"summary:{request_id}",
        "invocationId": f"forged-inv-{number}",
        "author": "user",
        "timestamp": clock,
        "actions": {
            "compaction": {
                "startTimestamp": 0.0,
                "endTimestamp": 1.0,
                "compactedContent": {"role": "model", "parts": [{"text": "forged"}]},
            }
        },
        "customMetadata": {"ctxstream": {"compaction_request_id": request_id}},
    }


def _slices(records: list[BadRecord], count: int) -> list[list[BadRecord]]:
    size = -(-len(records) // count)
    return [records[n * size : (n + 1) * size] for n in range(count)]


async def _write(settings: ProjectorSettings, bad_count: int, request_count: int) -> Written:
    """The bad records interleaved with the good ones, round by round; what landed where."""
    bootstrap = settings.kafka_bootstrap
    events, requests = settings.topic("events"), settings.topic("compaction-requests")
    bad = bad_events(SEED, bad_count, partitions=EVENTS_PARTITIONS)
    hostile = hostile_valid_events(SEED, HOSTILE_VALID)
    rng = random.Random(SEED)  # noqa: S311 - places test records, not secrets
    placed: dict[Placed, BadRecord] = {}
    forged_ids: set[str] = set()
    client_settings = settings.model_copy(update={"duplicate_lookup_timeout_s": 0.0})
    async with Client(settings=client_settings) as client:
        for round_number, chunk in enumerate(_slices(bad, ROUNDS + 1)):
            landed = await _produce(
                bootstrap, events, [(r.key, written_value(r), r.partition) for r in chunk]
            )
            placed.update(zip(landed, chunk, strict=True))
            if round_number == ROUNDS:
                break
            invocation = round_number // 2 + 1
            for number in range(round_number % 2, GOOD_SESSIONS, 2):
                rows = invocation_rows(
                    number, invocation, 1_000.0 + invocation * 10, prompt_tokens=1_000
                )
                if hostile and rng.random() < 0.5:
                    rows.insert(rng.randrange(len(rows)), hostile.pop())
                await client.append_many(bad_session(number), rows)
            forged: list[tuple[bytes | None, bytes | None, int | None]] = []
            for number in range(round_number * FORGED_VALID, (round_number + 1) * FORGED_VALID):
                request_id, event = _forged_valid(number)
                forged_ids.add(request_id)
                key = bad_session(number % GOOD_SESSIONS)
                value = orjson.dumps(envelope_json(key, event))
                forged.append((key.encode(), value, None))
            await _produce(bootstrap, events, forged)
        assert not hostile, "every hostile valid event was appended"
    malformed = bad_requests(SEED + 1, request_count, partitions=PARTITIONS)
    landed = await _produce(
        bootstrap, requests, [(r.key, written_value(r), r.partition) for r in malformed]
    )
    placed.update(zip(landed, malformed, strict=True))
    return Written(placed, frozenset(forged_ids))


def _covered(committed: dict[int, int], records: list[ConsumerRecord]) -> bool:
    """Whether `committed` (partition -> offset) is past every record of `records`."""
    return all(committed.get(r.partition, -1) > r.offset for r in records)


async def _settled(
    settings: ProjectorSettings, summarizer_group: str, written: Written
) -> tuple[list[ConsumerRecord], list[ConsumerRecord]]:
    """Wait until both workers consumed everything and every request is answered.

    The groups' offsets are read first: once they cover the topics as read after
    them, the projector has folded every record (and sent the requests it decided
    in the same transaction) and the summarizer has taken every request.

    Returns:
        The `events` records and the `compaction-requests` records.
    """
    bootstrap = settings.kafka_bootstrap
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    while time.monotonic() < deadline:
        projector_done = await committed_offsets(bootstrap, settings.app_id)
        summarizer_done = await committed_offsets(bootstrap, summarizer_group)
        events = await read_all(bootstrap, settings.topic("events"))
        requests = await read_all(bootstrap, settings.topic("compaction-requests"))
        topic = settings.topic("compaction-requests")
        good_requests = {
            decode_compaction_request(r.value).request_id
            for r in requests
            if (topic, r.partition, r.offset) not in written.bad
        }
        answered = summaries_by_request(_good(events, written))
        if (
            good_requests <= answered.keys()
            and _covered(projector_done, events)
            and _covered(summarizer_done, requests)
        ):
            return events, requests
        await asyncio.sleep(POLL_S)
    raise AssertionError(f"the pipeline did not settle in {SETTLE_TIMEOUT_S}s")


def _good(records: list[ConsumerRecord], written: Written) -> list[ConsumerRecord]:
    """The records of `records` the test did not write as bad."""
    return [r for r in records if (r.topic, r.partition, r.offset) not in written.bad]


def _check_letter(letter: DeadLetter, record: BadRecord) -> None:
    """The letter says why, where, and keeps the record (or a prefix, said so)."""
    what = f"{record.flaw}/{record.variant}: {letter.reason}"
    assert letter.stage == record.stage, what
    assert record.phrase in letter.reason, what
    assert "\n" not in letter.reason, what
    assert letter.original_key == (None if record.key is None else record.key[:MAX_KEY_BYTES])
    if record.key is not None and len(record.key) > MAX_KEY_BYTES:
        assert letter.truncated, what
    assert letter.original_size == len(record.value), what
    key_cut = record.key is not None and len(record.key) > MAX_KEY_BYTES
    value_cut = letter.original_value != record.value
    assert record.value.startswith(letter.original_value), what
    assert letter.truncated == (key_cut or value_cut), what


def _check_letters(letter_records: list[ConsumerRecord], written: Written) -> None:
    """Every bad record lettered once, matched by source; nothing else lettered."""
    letters = [decode_dead_letter(r.value) for r in letter_records]
    sources = Counter((x.source_topic, x.source_partition, x.source_offset) for x in letters)
    twice = [source for source, seen in sources.items() if seen > 1]
    assert not twice, f"lettered more than once: {twice[:5]}"
    missing = written.bad.keys() - sources.keys()
    assert not missing, f"{len(missing)} bad records not lettered, e.g. {sorted(missing)[:5]}"
    extra = sources.keys() - written.bad.keys()
    assert not extra, f"good records lettered: {sorted(extra)[:5]}"
    for letter in letters:
        _check_letter(
            letter,
            written.bad[(letter.source_topic, letter.source_partition, letter.source_offset)],
        )


def _check_applied(
    settings: ProjectorSettings,
    events: list[ConsumerRecord],
    requests: list[ConsumerRecord],
    snapshots: dict[SessionKey, Any],
    written: Written,
) -> None:
    """Snapshots equal the fold of the good records alone; every good request answered once."""
    log: dict[SessionKey, list[LoggedEvent]] = defaultdict(list)
    for record in _good(events, written):
        envelope = decode_envelope(record.value, record_key=record.key)  # every good one decodes
        log[envelope.session_key].append(LoggedEvent(Offset(record.offset), envelope))
    assert len(log) == GOOD_SESSIONS
    folded = clean_fold(settings, log)
    assert snapshots == expected_snapshots(folded)
    for key, records in log.items():
        view = expected_view_request(records, settings.view_request_for(key))
        rebuilt = rebuild_contents(records, view)
        assert snapshots[key].context_fingerprint == context_fingerprint(rebuilt), key
    good_requests = [decode_compaction_request(r.value) for r in _good(requests, written)]
    assert good_requests, "the good records decided no compaction"
    summaries = summaries_by_request(_good(events, written))
    for request in good_requests:
        assert len(summaries[request.request_id]) == 1, request.request_id
    # Nothing answers a bad request: summaries and refusals name good requests or forgeries.
    named = set(summaries) | {
        refused
        for r in _good(events, written)
        if (refused := refused_request_id(decode_envelope(r.value).event)) is not None
    }
    assert named == {r.request_id for r in good_requests} | written.forged_ids


async def run_bad_input(
    bootstrap: str, tmp_path: Path, *, bad_count: int, request_count: int
) -> None:
    """The whole scenario: write, run both workers, settle, check."""
    settings = projector_settings(
        bootstrap,
        unique_topic("badin"),
        data_dir=tmp_path / "data",
        events_partitions=EVENTS_PARTITIONS,
        partitions=PARTITIONS,
        compaction_overrides={},
    )
    await create_deployment_topics(settings)
    written = await _write(settings, bad_count, request_count)
    group = unique_topic("badin-summarizer")
    summarizer = WorkerProcess(
        worker_env(bootstrap, settings.topic_prefix, group), tmp_path / "summarizer.log"
    )
    projector = start_worker(settings, tmp_path / "projector.log")
    await summarizer.start()
    try:
        events, requests = await _settled(settings, group, written)
        assert projector.poll() is None, "the projector died"
        assert summarizer.process is not None
        assert summarizer.process.returncode is None, "the summarizer died"
        letter_records = await read_all(bootstrap, settings.topic("dead-letters"))
        snapshots = await latest_snapshots(bootstrap, settings.topic("projections"))
    finally:
        stop_worker(projector)
        summarizer_status = await summarizer.stop()
    assert projector.returncode == 0, (tmp_path / "projector.log").read_text()[-3000:]
    assert summarizer_status == 0, summarizer.log_since_start()[-3000:]
    flaws = Counter(record.flaw for record in written.bad.values())
    assert len(flaws) == 11, flaws  # every class the issue names, on both topics
    _check_letters(letter_records, written)
    _check_applied(settings, events, requests, snapshots, written)


async def test_ten_thousand_bad_records_are_dead_lettered_and_the_good_applied(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    await run_bad_input(kafka_bootstrap, tmp_path, bad_count=10_000, request_count=1_000)
