"""From one compaction request to its outcome: validate, read, check, summarize, retry.

A request is validated (:mod:`summarizer_worker.request_validity`) and its
answer built with an empty text (:mod:`summarizer_worker.summary_room`)
before anything is read or called; then it is read back from `events`
(:mod:`summarizer_worker.session_slice`), checked
(:mod:`summarizer_worker.request_status`), summarized and clipped. A range
not yet stable is polled again, an unavailable summarizer is retried with
backoff (the one retry loop around a call), and anything else fails the
request for good at its step (:mod:`summarizer_worker.request_stage`): a
dead letter and, where the request names its session legitimately, a
refusal event. Only a Kafka error of the readers leaves `outcome`. The
whole sorting: ``summarizer_worker/README.md``, "One request".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, assert_never

from aiokafka.errors import KafkaError, OffsetOutOfRangeError
from aiokafka.structs import ConsumerRecord

from projections.compaction.summary_request import refusal_envelope
from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import MAX_KEY_BYTES, build_dead_letter
from schemas.errors import CtxstreamError
from schemas.event import Event
from schemas.kafka.timing import BUILT, READ, TAKEN, Header, stamp
from schemas.keys import Offset
from schemas.letter_log import LetterLog
from schemas.log_text import shown
from summarizer_worker.backoff import retry_delay_s
from summarizer_worker.errors import (
    RangeNotFoundError,
    RangeNotStableError,
    RequestFailedError,
    RequestStage,
    SummarizerError,
    SummarizerUnavailableError,
)
from summarizer_worker.inherited_events import inherited_records, inherited_starts
from summarizer_worker.request_outcome import SKIPPED, OutputRecord, RequestOutcome
from summarizer_worker.request_stage import at_stage, failure_reason
from summarizer_worker.request_status import (
    AlreadyRefused,
    AlreadySummarized,
    Summarize,
    Superseded,
    request_status,
)
from summarizer_worker.request_validity import request_problem
from summarizer_worker.session_slice import SessionSlice, SliceReader
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.stage_pause import StagePause
from summarizer_worker.summarizers import Summarizer, SummaryResult
from summarizer_worker.summary_envelope import empty_summary_envelope, summary_envelope
from summarizer_worker.summary_room import (
    MAX_SUMMARY_RECORD_BYTES,
    MIN_TEXT_ROOM_BYTES,
    fit_summary_text,
    text_room_bytes,
)

logger = logging.getLogger(__name__)

#: The first poll of a range past the last stable offset; it doubles up to the
#: maximum. Transactions on `events` (this worker's own summaries among them)
#: last tens of milliseconds, and a poll is one cheap read.
RANGE_POLL_BASE_S: Final = 0.005
RANGE_POLL_MAX_S: Final = 0.5

Clock = Callable[[], float]
NewId = Callable[[], str]


@dataclass(frozen=True, slots=True)
class _Answer:
    """The fixed parts of a request's summary event, chosen before the call."""

    event_id: str
    invocation_id: str
    text_room_bytes: int


class RequestPipeline:
    """Turns compaction requests into outcomes, with bounded concurrency."""

    def __init__(
        self,
        settings: SummarizerSettings,
        summarizer: Summarizer,
        readers: SliceReader,
        *,
        producer_id: str,
        pause: StagePause,
        clock: Clock,
        new_id: NewId,
    ) -> None:
        """A pipeline reading through `readers` and summarizing with `summarizer`.

        Args:
            settings: The worker's settings.
            summarizer: The backend.
            readers: Reads sessions' slices of `events`.
            producer_id: Written into every summary and refusal envelope.
            pause: The fault-injection pauses (no-ops in production).
            clock: ADK timestamps (float seconds) of new events.
            new_id: Fresh event and invocation ids.
        """
        self._settings = settings
        self._summarizer = summarizer
        self._readers = readers
        self._producer_id = producer_id
        self._pause = pause
        self._clock = clock
        self._new_id = new_id
        self._slots = asyncio.Semaphore(settings.summarizer_concurrency)
        self._events_topic = settings.topic("events")
        self._dead_letters_topic = settings.topic("dead-letters")
        # First letter of a session and stage logged, the rest counted: a flood stays small.
        self._letters = LetterLog(logger)

    def dead_letter(
        self, record: ConsumerRecord, stage: RequestStage, reason: str
    ) -> RequestOutcome:
        """The outcome that sends `record` to `dead-letters` with `stage` and `reason`, only."""
        return RequestOutcome("dead_lettered", (self._dead_letter_record(record, stage, reason),))

    def _dead_letter_record(
        self, record: ConsumerRecord, stage: RequestStage, reason: str
    ) -> OutputRecord:
        letter = build_dead_letter(
            reason=reason,
            stage=stage,
            source_topic=record.topic,
            source_partition=record.partition,
            source_offset=record.offset,
            key=record.key,
            value=record.value or b"",  # a tombstone has no value
        )
        self._letters.letter(letter)
        # The letter caps the key it keeps; the record's own key must fit as well.
        key = None if record.key is None else record.key[:MAX_KEY_BYTES]
        return OutputRecord.encoded(self._dead_letters_topic, key, letter)

    def refusal(
        self,
        request: CompactionRequest,
        record: ConsumerRecord,
        stage: RequestStage,
        reason: str,
    ) -> RequestOutcome:
        """The outcome of a valid request given up for good: its dead letter and its refusal.

        `request` must have passed validation: the refusal is written into its
        session. Should the refusal not build all the same, the dead letter
        goes alone.
        """
        letter = self._dead_letter_record(record, stage, reason)
        refusal = self._refusal_record(request, f"{stage}: {reason}")
        if refusal is None:
            return RequestOutcome("dead_lettered", (letter,))
        logger.info(
            "refused request=%s session=%s stage=%s",
            shown(request.request_id),
            shown(request.session_key),
            stage,
        )
        return RequestOutcome("refused", (letter, refusal))

    def withdrawal(self, request: CompactionRequest, reason: str) -> RequestOutcome:
        """The outcome of a request a rewind or another summary made stale: its refusal alone.

        The refusal lets the projector stop waiting on the request (its fold
        clears the request in flight) instead of waiting for its timeout; no
        dead letter, since the request was not at fault.
        """
        logger.info(
            "dropped request=%s session=%s reason=%s",
            shown(request.request_id),
            shown(request.session_key),
            shown(reason),
        )
        refusal = self._refusal_record(request, f"superseded: {reason}")
        return SKIPPED if refusal is None else RequestOutcome("withdrawn", (refusal,))

    def _refusal_record(self, request: CompactionRequest, reason: str) -> OutputRecord | None:
        """The refusal event of `request` for `reason`, or None (logged) if it cannot build."""
        try:
            envelope = refusal_envelope(
                request,
                reason,
                producer_id=self._producer_id,
                event_id=self._new_id(),
                timestamp=self._clock(),
            )
            return OutputRecord.encoded(self._events_topic, request.session_key.encode(), envelope)
        except Exception as exc:  # noqa: BLE001 - what goes with it is still written
            logger.warning(
                "refusal not written request=%s reason=%s",
                shown(request.request_id),
                failure_reason(exc),
            )
            return None

    async def outcome(
        self, request: CompactionRequest, record: ConsumerRecord, *, taken_at: float | None = None
    ) -> RequestOutcome:
        """Handle `request` (read at `record`) until it is answered, skipped or given up.

        Whatever the request makes a step raise ends in its dead letter (and
        refusal): nothing it contains stops the worker. A summary carries the
        timing stamps (:mod:`schemas.kafka.timing`): `taken_at`, when the
        consumer returned `record` (now, if not given), when the slice was
        read and when the summary was built.

        Raises:
            aiokafka.errors.KafkaError: A reader of `events` failed: the
                worker's own infrastructure, not the request's fault.
        """
        try:
            answer = self._plan(request)
        except RequestFailedError as exc:
            # Nothing is written into a session the request could not name legitimately.
            return self.dead_letter(record, exc.stage, exc.reason)
        try:
            with at_stage("handle", passing=(KafkaError,)):
                taken = time.time() if taken_at is None else taken_at
                return await self._answer(request, answer, stamp(TAKEN, taken))
        except RequestFailedError as exc:
            cause = exc.__cause__
            if cause is not None and not isinstance(cause, CtxstreamError):
                # Not one of ours: a parser or a library raised on what the request held.
                logger.debug("request failed request=%s", shown(request.request_id), exc_info=cause)
            return self.refusal(request, record, exc.stage, exc.reason)

    def _plan(self, request: CompactionRequest) -> _Answer:
        """Validate `request` and build its answer with an empty text, before any read or call.

        Raises:
            RequestFailedError: At ``validate``: no valid answer can name the request.
        """
        with at_stage("validate"):
            if (problem := request_problem(request)) is not None:
                raise RequestFailedError(stage="validate", reason=problem)
            event_id, invocation_id = self._new_id(), self._new_id()
            empty = empty_summary_envelope(
                request,
                producer_id=self._producer_id,
                event_id=event_id,
                invocation_id=invocation_id,
                timestamp=self._clock(),
            )
            return _Answer(event_id, invocation_id, text_room_bytes(empty))

    async def _answer(
        self, request: CompactionRequest, answer: _Answer, taken: Header
    ) -> RequestOutcome:
        """Attempt `request` until it succeeds; retry what a retry may help.

        Raises:
            RequestFailedError: Given up for good, at the step that failed.
        """
        if answer.text_room_bytes < MIN_TEXT_ROOM_BYTES:
            raise RequestFailedError(
                stage="envelope",
                reason=f"the summary event leaves {answer.text_room_bytes} bytes for its "
                f"text, below {MIN_TEXT_ROOM_BYTES}",
            )
        range_polls = summarizer_failures = 0
        range_deadline = time.monotonic() + self._settings.summarizer_range_wait_s
        while True:
            try:
                async with self._slots:
                    return await self._attempt(request, answer, taken)
            except RangeNotStableError as exc:
                range_polls += 1
                if time.monotonic() >= range_deadline:
                    raise RequestFailedError(
                        stage="read", reason=f"range not found: {failure_reason(exc)}"
                    ) from exc
                delay_s = retry_delay_s(
                    range_polls, base_s=RANGE_POLL_BASE_S, max_s=RANGE_POLL_MAX_S
                )
                logger.debug(
                    "range not stable request=%s delay_s=%.3f", shown(request.request_id), delay_s
                )
            except SummarizerError as exc:
                summarizer_failures += 1
                if not exc.retriable:
                    raise RequestFailedError(stage="summarize", reason=failure_reason(exc)) from exc
                if summarizer_failures >= self._settings.summarizer_retry_attempts:
                    reason = f"summarizer failed {summarizer_failures} times: {failure_reason(exc)}"
                    raise RequestFailedError(stage="summarize", reason=reason) from exc
                asked_s = exc.retry_after_s if isinstance(exc, SummarizerUnavailableError) else None
                delay_s = retry_delay_s(
                    summarizer_failures,
                    base_s=self._settings.summarizer_retry_base_s,
                    max_s=self._settings.summarizer_retry_max_s,
                    asked_s=asked_s,
                )
                logger.warning(
                    "summarizer retry request=%s session=%s failures=%d delay_s=%.3f error=%s",
                    shown(request.request_id),
                    shown(request.session_key),
                    summarizer_failures,
                    delay_s,
                    failure_reason(exc),
                )
            await asyncio.sleep(delay_s)

    async def _attempt(
        self, request: CompactionRequest, answer: _Answer, taken: Header
    ) -> RequestOutcome:
        """One try: read, check, summarize, build the summary record (stamped `taken`).

        Raises:
            RangeNotStableError: Poll again.
            SummarizerError: Retry or give up, as its ``retriable`` says.
            RequestFailedError: Give up, at the step that failed.
        """
        key = request.session_key.encode()
        with at_stage("read", passing=(KafkaError,)):
            session = await self._read(key, request.read_offset, request)
            slices = {
                source: (await self._read(source.encode(), start, request)).records
                for source, start in inherited_starts(request).items()
            }
        read = stamp(READ, time.time())
        with at_stage("check"):
            records = [*inherited_records(request, slices), *session.records]
            status = request_status(request, records, session.stable_offset)
        match status:
            case AlreadySummarized(summary_offset):
                logger.info(
                    "skipped request=%s session=%s reason=answered summary_offset=%d",
                    shown(request.request_id),
                    shown(request.session_key),
                    summary_offset,
                )
                return SKIPPED
            case AlreadyRefused(refusal_offset):
                logger.info(
                    "skipped request=%s session=%s reason=refused refusal_offset=%d",
                    shown(request.request_id),
                    shown(request.session_key),
                    refusal_offset,
                )
                return SKIPPED
            case Superseded(reason):
                return self.withdrawal(request, reason)
            case Summarize(window):
                pass
            case _:
                assert_never(status)
        await self._pause("render", request.request_id)
        await self._pause("summarize", request.request_id)
        with at_stage("summarize"):
            result = await self._summarizer.summarize(window)
        if result is None:  # ADK appends nothing then; the projector decides again
            raise RequestFailedError(stage="summarize", reason="the summarizer returned no summary")
        with at_stage("envelope"):
            value = self._summary_record(request, window, result, answer)
        logger.debug(
            "summarized request=%s session=%s offsets=%d..%d partition=%d events=%d",
            shown(request.request_id),
            shown(request.session_key),
            request.start_offset,
            request.end_offset,
            session.partition,
            len(window),
        )
        stamps = (taken, read, stamp(BUILT, time.time()))
        summary = OutputRecord(self._events_topic, key, value, headers=stamps)
        return RequestOutcome("summarized", (summary,))

    async def _read(self, key: bytes, start: Offset, request: CompactionRequest) -> SessionSlice:
        """The slice of the session keyed `key` from `start` on.

        Raises:
            RangeNotFoundError: `start` is below the log start.
        """
        try:
            return await self._readers.read(key, start)
        except OffsetOutOfRangeError as exc:
            raise RangeNotFoundError(
                request_id=shown(request.request_id),
                problem=f"offset {start} is below the log start",
            ) from exc

    def _summary_record(
        self,
        request: CompactionRequest,
        window: tuple[Event, ...],
        result: SummaryResult,
        answer: _Answer,
    ) -> bytes:
        """The encoded summary event, its text clipped to the configured length and the room.

        Raises:
            RequestFailedError: The event leaves no room for any text, or is
                over the bound all the same.
        """
        timestamp = self._clock()
        # The room again, now exactly: the usage and the timestamp are known.
        empty = empty_summary_envelope(
            request,
            producer_id=self._producer_id,
            event_id=answer.event_id,
            invocation_id=answer.invocation_id,
            timestamp=timestamp,
            usage=result.usage,
        )
        text = fit_summary_text(
            result.text,
            max_chars=self._settings.summarizer_max_summary_chars,
            room_bytes=text_room_bytes(empty),
        )
        if not text.strip():
            raise RequestFailedError(stage="envelope", reason="no room for the summary's text")
        if text != result.text:
            logger.info(
                "summary clipped request=%s chars=%d kept=%d",
                shown(request.request_id),
                len(result.text),
                len(text),
            )
        envelope = summary_envelope(
            request,
            window,
            SummaryResult(text=text, usage=result.usage),
            producer_id=self._producer_id,
            event_id=answer.event_id,
            invocation_id=answer.invocation_id,
            timestamp=timestamp,
        )
        value = encode(envelope)
        if len(value) > MAX_SUMMARY_RECORD_BYTES:
            raise RequestFailedError(
                stage="envelope",
                reason=f"the summary event takes {len(value)} bytes, "
                f"over {MAX_SUMMARY_RECORD_BYTES}",
            )
        return value
