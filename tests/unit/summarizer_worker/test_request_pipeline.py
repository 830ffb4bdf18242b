"""The request pipeline's outcomes: every failure kept to its request, with its stage.

The pipeline reads through its `SliceReader` port; here slices come from an
in-memory session (the broker tests in ``tests/integration`` read the real
log), and the summarizer is the extractive one behind a counter that can be
told to fail.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest
from aiokafka.errors import KafkaConnectionError, OffsetOutOfRangeError
from aiokafka.structs import ConsumerRecord

from projections.event_kinds import refused_request_id, summary_request_id
from schemas.codec import decode_dead_letter, decode_envelope, encode
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import MAX_DEAD_LETTER_BYTES, MAX_KEY_BYTES
from schemas.event import Event
from schemas.kafka.timing import BUILT, READ, TAKEN, stamped
from schemas.keys import Offset, TenantId
from schemas.logged_event import LoggedEvent
from summarizer_worker.errors import (
    SliceTooLargeError,
    SummarizerRejectedError,
    SummarizerUnavailableError,
)
from summarizer_worker.extractive import ExtractiveSummarizer
from summarizer_worker.request_outcome import RequestOutcome
from summarizer_worker.request_pipeline import RequestPipeline
from summarizer_worker.session_slice import SessionSlice
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.stage_pause import StagePause
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_room import ELLIPSIS
from tests.support.events import SESSION, request_for, request_with, session

PREFIX = "t"
EVENTS, DEAD_LETTERS, REQUESTS = f"{PREFIX}.events", f"{PREFIX}.dead-letters", "t.requests"
NOW = 900.0
RETRY_ATTEMPTS = 3

Step = Callable[[Sequence[Event]], SummaryResult | None]


@dataclass
class MemorySlices:
    """Slices of one session held in memory; counts the reads."""

    records: list[LoggedEvent]
    log_start: int = 0
    failure: Exception | None = None
    reads: int = 0

    async def read(self, key: bytes, start_offset: Offset) -> SessionSlice:
        self.reads += 1
        if self.failure is not None:
            raise self.failure
        if start_offset < self.log_start:
            raise OffsetOutOfRangeError({})
        stable = Offset(max(r.offset for r in self.records) + 1)
        kept = tuple(
            r
            for r in self.records
            if r.offset >= start_offset and r.envelope.session_key.encode() == key
        )
        return SessionSlice(0, start_offset, stable, kept)


@dataclass
class CountingSummarizer:
    """The extractive summarizer, counted; `steps` replace its answer, one call each."""

    steps: list[Step] = field(default_factory=list)
    windows: list[Sequence[Event]] = field(default_factory=list)

    async def summarize(self, window: Sequence[Event]) -> SummaryResult | None:
        self.windows.append(window)
        if self.steps:
            return self.steps.pop(0)(window)
        return await ExtractiveSummarizer().summarize(window)


def _raise(error: BaseException) -> Step:
    def step(_: Sequence[Event]) -> SummaryResult | None:
        raise error

    return step


def _answer(result: SummaryResult | None) -> Step:
    return lambda _: result


@dataclass
class Harness:
    """A pipeline over `slices` and `summarizer`."""

    slices: MemorySlices
    summarizer: CountingSummarizer
    settings: SummarizerSettings

    def pipeline(self) -> RequestPipeline:
        ids = itertools.count()
        return RequestPipeline(
            self.settings,
            self.summarizer,
            self.slices,
            producer_id="summarizer/test",
            pause=StagePause({}),
            clock=lambda: NOW,
            new_id=lambda: f"id-{next(ids)}",
        )

    async def outcome(self, request: CompactionRequest, offset: int = 7) -> RequestOutcome:
        return await self.pipeline().outcome(request, _record(encode(request), offset))


def _record(value: bytes | None, offset: int = 7, key: bytes | None = None) -> ConsumerRecord:
    return ConsumerRecord(
        topic=REQUESTS,
        partition=0,
        offset=offset,
        timestamp=0,
        timestamp_type=0,
        key=SESSION.encode() if key is None else key,
        value=value,
        checksum=None,
        serialized_key_size=0,
        serialized_value_size=0,
        headers=(),
    )


@pytest.fixture
def harness() -> Harness:
    settings = SummarizerSettings(
        topic_prefix=PREFIX,
        summarizer_retry_attempts=RETRY_ATTEMPTS,
        summarizer_retry_base_s=0.0,
        summarizer_retry_max_s=0.01,
        summarizer_max_summary_chars=600,
    )
    return Harness(MemorySlices(session(2)), CountingSummarizer(), settings)


def _valid(harness: Harness) -> CompactionRequest:
    return request_for(harness.slices.records[:4])


def _refused(outcome: RequestOutcome, request: CompactionRequest, stage: str) -> str:
    """Check `outcome` is a dead letter plus a refusal of `request`; the letter's reason."""
    assert outcome.kind == "refused"
    letter_record, refusal_record = outcome.records
    assert letter_record.topic == DEAD_LETTERS
    letter = decode_dead_letter(letter_record.value)
    assert letter.stage == stage
    assert (letter.source_topic, letter.source_offset) == (REQUESTS, 7)
    assert letter.original_value == encode(request)
    assert (refusal_record.topic, refusal_record.key) == (EVENTS, SESSION.encode())
    refusal = decode_envelope(refusal_record.value)
    assert refused_request_id(refusal.event) == request.request_id
    assert refusal.idempotency_key == f"refused:{request.request_id}"
    return letter.reason


async def test_a_valid_request_gets_its_summary_event(harness: Harness) -> None:
    request = _valid(harness)
    outcome = await harness.outcome(request)
    assert outcome.kind == "summarized"
    (record,) = outcome.records
    assert (record.topic, record.key) == (EVENTS, SESSION.encode())
    envelope = decode_envelope(record.value)
    assert summary_request_id(envelope.event) == request.request_id
    assert envelope.event.timestamp == NOW
    assert len(harness.summarizer.windows) == 1


async def test_a_summary_is_stamped_when_its_request_was_taken_read_and_answered(
    harness: Harness,
) -> None:
    request = _valid(harness)
    before = time.time()
    outcome = await harness.pipeline().outcome(request, _record(encode(request)), taken_at=5.0)
    after = time.time()
    (record,) = outcome.records
    taken, read, built = (stamped(record.headers, name) for name in (TAKEN, READ, BUILT))
    assert taken == 5.0
    assert read is not None
    assert built is not None
    assert before <= read <= built <= after


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"tenant": TenantId("evil")}, "does not own session"),
        ({"request_id": "r" * 300}, "(300 characters)"),
        ({"event_offsets": (Offset(-1),), "event_ids": ("q0",)}, "offset -1 is negative"),
    ],
    ids=["tenant", "request-id-300-chars", "negative-offset"],
)
async def test_a_request_no_valid_answer_can_name_is_only_dead_lettered_before_anything_runs(
    harness: Harness, changes: dict[str, object], reason: str
) -> None:
    request = request_with(**changes)
    outcome = await harness.outcome(request)
    assert outcome.kind == "dead_lettered"
    (record,) = outcome.records  # no refusal: nothing goes into the session it names
    letter = decode_dead_letter(record.value)
    assert record.topic == DEAD_LETTERS
    assert letter.stage == "validate"
    assert reason in letter.reason
    assert harness.slices.reads == 0
    assert harness.summarizer.windows == []


async def test_a_range_the_log_does_not_hold_is_refused_at_check_without_a_call(
    harness: Harness,
) -> None:
    request = _valid(harness).model_copy(update={"event_ids": ("other", "c0", "r0", "a0")})
    reason = _refused(await harness.outcome(request), request, "check")
    assert "holds event 'q0', the request names 'other'" in reason
    assert harness.summarizer.windows == []


async def test_a_range_below_the_log_start_is_refused_at_read(harness: Harness) -> None:
    harness.slices.log_start = 1_000
    request = _valid(harness)
    reason = _refused(await harness.outcome(request), request, "read")
    assert "is below the log start" in reason


async def test_a_slice_over_its_byte_bound_is_refused_at_read(harness: Harness) -> None:
    harness.slices.failure = SliceTooLargeError(partition=0, start_offset=10, limit_bytes=1024)
    request = _valid(harness)
    reason = _refused(await harness.outcome(request), request, "read")
    assert "exceed 1024 bytes" in reason
    assert harness.summarizer.windows == []


async def test_a_failing_reader_is_the_workers_failure_not_the_requests(
    harness: Harness,
) -> None:
    harness.slices.failure = KafkaConnectionError("broker gone")
    with pytest.raises(KafkaConnectionError):
        await harness.outcome(_valid(harness))


@pytest.mark.parametrize(
    "error", [ValueError("invalid literal for int()"), RecursionError("too deep")]
)
async def test_anything_the_summarizer_raises_is_refused_at_summarize(
    harness: Harness, error: Exception
) -> None:
    harness.summarizer.steps = [_raise(error)]
    request = _valid(harness)
    reason = _refused(await harness.outcome(request), request, "summarize")
    assert reason.startswith(type(error).__name__)
    assert len(harness.summarizer.windows) == 1


async def test_no_summary_is_refused(harness: Harness) -> None:
    harness.summarizer.steps = [_answer(None)]
    request = _valid(harness)
    reason = _refused(await harness.outcome(request), request, "summarize")
    assert reason == "the summarizer returned no summary"


async def test_a_rejected_call_is_refused_after_one_call(harness: Harness) -> None:
    rejected = SummarizerRejectedError("request rejected", status=400, excerpt="")
    harness.summarizer.steps = [_raise(rejected)]
    request = _valid(harness)
    reason = _refused(await harness.outcome(request), request, "summarize")
    assert "HTTP 400" in reason
    assert len(harness.summarizer.windows) == 1


async def test_an_unavailable_summarizer_is_called_as_often_as_the_one_retry_loop_allows(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    down = SummarizerUnavailableError(
        "endpoint unavailable", status=503, excerpt="", retry_after_s=0.005
    )
    harness.summarizer.steps = [_raise(down)] * RETRY_ATTEMPTS
    request = _valid(harness)
    with caplog.at_level(logging.WARNING, logger="summarizer_worker.request_pipeline"):
        reason = _refused(await harness.outcome(request), request, "summarize")
    assert reason.startswith(f"summarizer failed {RETRY_ATTEMPTS} times")
    assert len(harness.summarizer.windows) == RETRY_ATTEMPTS
    retries = [r.getMessage() for r in caplog.records if "summarizer retry" in r.getMessage()]
    assert len(retries) == RETRY_ATTEMPTS - 1
    assert all("delay_s=0.005" in line for line in retries)  # Retry-After, within the bound


async def test_a_retry_that_succeeds_gets_the_summary(harness: Harness) -> None:
    down = SummarizerUnavailableError("endpoint unavailable", status=503, excerpt="")
    harness.summarizer.steps = [_raise(down)]
    outcome = await harness.outcome(_valid(harness))
    assert outcome.kind == "summarized"
    assert len(harness.summarizer.windows) == 2


async def test_a_summary_over_the_configured_length_is_clipped_before_the_envelope(
    harness: Harness,
) -> None:
    harness.summarizer.steps = [_answer(SummaryResult(text="word " * 10_000))]
    outcome = await harness.outcome(_valid(harness))
    assert outcome.kind == "summarized"
    (record,) = outcome.records
    compaction = decode_envelope(record.value).event.actions.compaction
    assert compaction is not None
    (part,) = compaction.compacted_content.parts or []
    assert part.text is not None
    assert len(part.text) <= harness.settings.summarizer_max_summary_chars
    assert part.text.endswith(ELLIPSIS)


async def test_a_summary_that_cannot_be_encoded_is_refused_at_envelope(
    harness: Harness,
) -> None:
    harness.summarizer.steps = [_answer(SummaryResult(text="lone \ud800 surrogate"))]
    request = _valid(harness)
    reason = _refused(await harness.outcome(request), request, "envelope")
    assert "surrogate" in reason or "str is not valid UTF-8" in reason


async def test_an_undecodable_record_of_800_kb_gets_a_dead_letter_that_fits(
    harness: Harness,
) -> None:
    value = b'{"request_id": "' + b"x" * 800_000 + b'"'
    huge_key = b"k" * 5_000
    outcome = harness.pipeline().dead_letter(_record(value, key=huge_key), "decode", "not JSON")
    (record,) = outcome.records
    assert len(record.value) <= MAX_DEAD_LETTER_BYTES
    assert record.key == huge_key[:MAX_KEY_BYTES]
    letter = decode_dead_letter(record.value)
    assert (letter.stage, letter.original_size, letter.truncated) == ("decode", len(value), True)
    assert value.startswith(letter.original_value)


async def test_a_tombstone_gets_a_dead_letter(harness: Harness) -> None:
    outcome = harness.pipeline().dead_letter(_record(None), "decode", "not JSON")
    letter = decode_dead_letter(outcome.records[0].value)
    assert (letter.original_value, letter.original_size) == (b"", 0)
