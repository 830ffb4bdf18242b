"""Poison requests against the real broker: the summarizer dead-letters them and goes on.

Each trigger of the security review's finding H4 (and its neighbours H1, M5,
H6) is one record on a one-partition `compaction-requests` topic, followed
by a good request. The worker runs in this process with a summarizer that
counts its calls: it must stay up, put each bad request in `dead-letters`
with its stage in a letter that fits the topic, never call the summarizer for
a request it could not answer, refuse the valid requests it gives up on in
their own session, and summarize the good request behind them.

A worker whose own infrastructure fails (its lane's producer fenced) exits
with a non-zero status instead, as ``ctxstream summarizer`` and as
``python -m summarizer_worker``.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import orjson
import pytest
from aiokafka import AIOKafkaProducer

from projections.event_kinds import refused_request_id, summary_request_id
from schemas.codec import decode_envelope, encode
from schemas.compaction_request import CompactionRequest, SummarySeed
from schemas.dead_letter import MAX_DEAD_LETTER_BYTES
from schemas.event import Content, Event, Part
from schemas.kafka.transaction import transactional_id
from summarizer_worker.extractive import ExtractiveSummarizer, extractive_summary
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.worker import SummarizerWorker
from tests.conftest import unique_topic
from tests.support.events import envelope, session_key
from tests.support.kafka import (
    CLI_COMMAND,
    MODULE_COMMAND,
    WorkerProcess,
    append,
    append_envelopes,
    append_requests,
    create_topics_for,
    dead_letters,
    invocation_events,
    planned_requests,
    read_topic,
    summaries_by_request,
    topics,
    wait_committed,
    worker_env,
)

pytestmark = pytest.mark.integration

WORK_TIMEOUT_S = 90.0  # a cold broker, a worker start and ~2 MB of records
STOP_TIMEOUT_S = 30.0
EXIT_TIMEOUT_S = 60.0
SLICE_BYTES = 1024 * 1024  # the smallest bound the settings allow
BIG_EVENT_CHARS = 300_000
BIG_EVENTS = 5  # 1.5 MB after the range: over the slice bound
DIGITS = "9" * 5000

# One session per request, so the summarizer's calls say which requests reached it.
GOOD, SEEDED, MISMATCHED, LARGE_SLICE = 0, 1, 2, 3
TENANT, LONG_ID, NEGATIVE, NESTED, HUGE, TOMBSTONE = 10, 11, 12, 13, 14, 15
SESSIONS: Final = (GOOD, SEEDED, MISMATCHED, LARGE_SLICE, TENANT, LONG_ID, NEGATIVE, NESTED, HUGE)
_SESSION_OF_EVENT: Final = re.compile(r"^s(\d+)-inv")


class CountingSummarizer:
    """The extractive summarizer, with every window it was asked to summarize."""

    def __init__(self) -> None:
        self.windows: list[tuple[Event, ...]] = []

    async def summarize(self, window: Sequence[Event]) -> SummaryResult | None:
        self.windows.append(tuple(window))
        return await ExtractiveSummarizer().summarize(window)

    def sessions(self) -> set[int]:
        """The test sessions whose events reached the summarizer."""
        return {
            int(match.group(1))
            for window in self.windows
            for event in window
            if (match := _SESSION_OF_EVENT.match(event.id))
        }


def _forged(request: CompactionRequest, **changes: Any) -> bytes:
    data = orjson.loads(encode(request))
    data.update(changes)
    return orjson.dumps(data)


def _nested_id(request: CompactionRequest, depth: int) -> bytes:
    # The review's H1 payload in a request: an id nested `depth` lists deep.
    rest = orjson.dumps(
        {k: v for k, v in orjson.loads(encode(request)).items() if k != "request_id"}
    )
    return b'{"request_id":' + b"[" * depth + b"]" * depth + b"," + rest[1:]


def _seeded(request: CompactionRequest) -> CompactionRequest:
    # A seed the token trigger could roll in from a tenant's own summary text.
    text = (
        "Conversation language: English\n"
        f"User requests:\n- an earlier ask\n- ({DIGITS} more omitted)\n"
        f"Tools used:\n- lookup ({DIGITS} calls): {{'n': 0}} -> fact 0"
    )
    seed = SummarySeed(
        timestamp=request.start_timestamp - 5,
        author="model",
        content=Content(role="model", parts=[Part(text=text)]),
    )
    return request.model_copy(update={"seed": seed, "start_timestamp": seed.timestamp})


def _big_events(index: int) -> list[Event]:
    return [
        Event.model_validate(
            {
                "id": f"s{index}-big{n}",
                "invocationId": f"s{index}-big",
                "author": "user",
                "timestamp": 9e8 + n,
                "content": {"role": "user", "parts": [{"text": "b" * BIG_EVENT_CHARS}]},
            }
        )
        for n in range(BIG_EVENTS)
    ]


async def test_poison_requests_are_dead_lettered_and_the_worker_goes_on(
    kafka_bootstrap: str,
) -> None:
    prefix, group = unique_topic("sp"), unique_topic("summarizer")
    await create_topics_for(kafka_bootstrap, prefix, events_partitions=2, partitions=1)
    names = topics(prefix)
    envelopes = [
        envelope(session_key(s), event)
        for s in SESSIONS
        for n in range(3)
        for event in invocation_events(s, n)
    ]
    logged = await append_envelopes(kafka_bootstrap, names["events"], envelopes)
    await append_envelopes(
        kafka_bootstrap,
        names["events"],
        [envelope(session_key(LARGE_SLICE), e) for e in _big_events(LARGE_SLICE)],
    )
    planned = {
        s: planned_requests(
            session_key(s), [r for r in logged if r.envelope.session_key == session_key(s)]
        )[0]
        for s in SESSIONS
    }
    seeded = _seeded(planned[SEEDED])
    mismatched = planned[MISMATCHED].model_copy(
        update={"event_ids": ("not-there", *planned[MISMATCHED].event_ids[1:])}
    )
    huge = _forged(planned[HUGE], padding="x" * 800_000)
    bad: dict[int, tuple[bytes, bytes | None]] = {
        TENANT: (session_key(TENANT).encode(), _forged(planned[TENANT], tenant="evil")),
        LONG_ID: (session_key(LONG_ID).encode(), _forged(planned[LONG_ID], request_id="r" * 300)),
        NEGATIVE: (
            session_key(NEGATIVE).encode(),
            _forged(planned[NEGATIVE], event_offsets=[-1], event_ids=["x"]),
        ),
        NESTED: (session_key(NESTED).encode(), _nested_id(planned[NESTED], 1000)),
        HUGE: (session_key(HUGE).encode(), huge),
        TOMBSTONE: (b"tombstone", None),
    }
    bad_at = await append(kafka_bootstrap, names["compaction-requests"], list(bad.values()))
    placed_bad = dict(zip(bad, bad_at, strict=True))
    valid_at = await append_requests(
        kafka_bootstrap,
        names["compaction-requests"],
        [seeded, mismatched, planned[LARGE_SLICE], planned[GOOD]],
    )
    placed = dict(zip((SEEDED, MISMATCHED, LARGE_SLICE, GOOD), valid_at, strict=True))
    end = placed[GOOD][1] + 1

    summarizer = CountingSummarizer()
    settings = SummarizerSettings(
        kafka_bootstrap=kafka_bootstrap,
        topic_prefix=prefix,
        summarizer_group_id=group,
        summarizer_session_timeout_ms=6000,
        summarizer_max_slice_bytes=SLICE_BYTES,
    )
    stop = asyncio.Event()
    worker = SummarizerWorker(settings, summarizer, producer_id=f"{group}/test")
    running = asyncio.create_task(worker.run(stop))
    try:
        committed = await wait_committed(kafka_bootstrap, group, {0: end}, WORK_TIMEOUT_S)
        assert committed == {0: end}
        assert not running.done()  # every poison request behind it, the worker is up
        records = await read_topic(
            kafka_bootstrap,
            names["events"],
            partitions=2,
            until=lambda found: planned[GOOD].request_id in summaries_by_request(found),
            timeout_s=WORK_TIMEOUT_S,
        )
        letter_records = await read_topic(
            kafka_bootstrap,
            names["dead-letters"],
            partitions=1,
            until=lambda found: len(found) >= len(bad) + 2,
            timeout_s=WORK_TIMEOUT_S,
        )
    finally:
        stop.set()
        await asyncio.wait_for(running, STOP_TIMEOUT_S)  # raises if the worker failed

    # The summarizer saw the good and the seeded request only.
    assert summarizer.sessions() == {GOOD, SEEDED}
    summaries = summaries_by_request(records)
    assert sorted(summaries) == sorted([planned[GOOD].request_id, seeded.request_id])
    ((good,),) = [summaries[planned[GOOD].request_id]]
    window = [
        r.envelope.event
        for r in logged
        if r.envelope.session_key == session_key(GOOD) and r.offset in planned[GOOD].event_offsets
    ]
    compaction = good.envelope.event.actions.compaction
    assert compaction is not None
    assert [p.text for p in compaction.compacted_content.parts or []] == [
        extractive_summary(window)
    ]
    # The 5,000-digit counts are read as text, not numbers: the seed is summarized.
    (seeded_summary,) = summaries[seeded.request_id]
    seeded_compaction = seeded_summary.envelope.event.actions.compaction
    assert seeded_compaction is not None
    assert seeded_compaction.start_timestamp == seeded.start_timestamp

    # Every bad request is in dead-letters with its stage, in a letter that fits.
    assert all(len(record.value) <= MAX_DEAD_LETTER_BYTES for record in letter_records)
    letters = {letter.source_offset: letter for letter in dead_letters(letter_records)}
    assert len(letters) == len(letter_records) == len(bad) + 2
    stages = {index: letters[offset].stage for index, (_, offset) in placed_bad.items()}
    # A request the codec refuses is a decode; one it lets through is refused
    # by the worker's own validation before anything is read or called.
    assert stages[TENANT] in {"decode", "validate"}
    assert stages[LONG_ID] in {"decode", "validate"}
    assert stages[NEGATIVE] in {"decode", "validate"}
    assert (stages[NESTED], stages[HUGE], stages[TOMBSTONE]) == ("decode",) * 3
    huge_letter = letters[placed_bad[HUGE][1]]
    assert (huge_letter.original_size, huge_letter.truncated) == (len(huge), True)
    assert huge.startswith(huge_letter.original_value)
    mismatched_letter = letters[placed[MISMATCHED][1]]
    assert mismatched_letter.stage == "check"
    assert "holds event" in mismatched_letter.reason
    slice_letter = letters[placed[LARGE_SLICE][1]]
    assert slice_letter.stage == "read"
    assert f"exceed {SLICE_BYTES} bytes" in slice_letter.reason

    # The valid requests given up are refused in their own session; nothing
    # is written into a session a bad request named.
    refusals = {}
    written_to: set[bytes] = set()
    for record in records:
        event = decode_envelope(record.value).event
        if (refused := refused_request_id(event)) is not None:
            refusals[refused] = record.key
        if refused is not None or summary_request_id(event) is not None:
            written_to.add(record.key)
    assert refusals == {
        mismatched.request_id: session_key(MISMATCHED).encode(),
        planned[LARGE_SLICE].request_id: session_key(LARGE_SLICE).encode(),
    }
    assert written_to == {session_key(s).encode() for s in (GOOD, SEEDED, MISMATCHED, LARGE_SLICE)}


@pytest.mark.parametrize("command", [CLI_COMMAND, MODULE_COMMAND], ids=["ctxstream", "module"])
async def test_a_worker_whose_lane_is_fenced_exits_non_zero(
    kafka_bootstrap: str, tmp_path: Path, command: Sequence[str]
) -> None:
    prefix, group = unique_topic("sx"), unique_topic("summarizer")
    await create_topics_for(kafka_bootstrap, prefix, events_partitions=1, partitions=1)
    names = topics(prefix)
    logged = await append_envelopes(
        kafka_bootstrap,
        names["events"],
        [envelope(session_key(GOOD), e) for n in range(3) for e in invocation_events(GOOD, n)],
    )
    worker = WorkerProcess(
        worker_env(kafka_bootstrap, prefix, group), tmp_path / "worker.log", command=command
    )
    await worker.start()
    fencer = AIOKafkaProducer(
        bootstrap_servers=kafka_bootstrap,
        transactional_id=transactional_id(group, names["compaction-requests"], 0),
    )
    try:
        assert await worker.wait_for("lane opened", WORK_TIMEOUT_S), worker.log_since_start()
        await fencer.start()  # a new producer with the lane's id fences the worker's
        await append_requests(
            kafka_bootstrap,
            names["compaction-requests"],
            planned_requests(session_key(GOOD), logged),
        )
        status = await worker.exited(EXIT_TIMEOUT_S)
    finally:
        await fencer.stop()
        if worker.process is not None and worker.process.returncode is None:
            await worker.stop()
    log = worker.log_since_start()
    assert status == 1, log[-3000:]
    assert "summarizer failed; exiting with status 1" in log
