"""From one compaction request to its outcome: read, check, summarize, retry.

A request is read back from `events` (:mod:`summarizer_worker.session_slice`),
checked (:mod:`summarizer_worker.request_status`), summarized and turned into
the records to write. Failures are sorted by whether a retry helps:

* the range lies past the last stable offset (a transaction on `events` is
  open): poll again, briefly, for at most ``summarizer_range_wait_s``;
* the summarizer is unavailable (``retriable``): back off and try again, up
  to ``summarizer_retry_attempts`` calls;
* anything permanent (range not found, a rejected call, retries used up, no
  summary at all): a dead letter with the reason.

A request waiting for its retry holds no read/summarize slot, so other
sessions' requests go on meanwhile. Any other exception is a bug and
propagates.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final, assert_never

from aiokafka.errors import OffsetOutOfRangeError
from aiokafka.structs import ConsumerRecord

from schemas.compaction_request import CompactionRequest
from summarizer_worker.backoff import retry_delay_s
from summarizer_worker.errors import (
    RangeNotFoundError,
    RangeNotStableError,
    SummarizerError,
    SummarizerUnavailableError,
)
from summarizer_worker.request_dead_letter import RequestStage, request_dead_letter
from summarizer_worker.request_outcome import SKIPPED, RequestOutcome
from summarizer_worker.request_status import Answered, Summarize, Superseded, request_status
from summarizer_worker.session_slice import SliceReaders
from summarizer_worker.settings import SummarizerSettings
from summarizer_worker.stage_pause import StagePause
from summarizer_worker.summarizers import Summarizer
from summarizer_worker.summary_envelope import summary_envelope

logger = logging.getLogger(__name__)

#: The first poll of a range past the last stable offset; it doubles up to the
#: maximum. Transactions on `events` (this worker's own summaries among them)
#: last tens of milliseconds, and a poll is one cheap read.
RANGE_POLL_BASE_S: Final = 0.005
RANGE_POLL_MAX_S: Final = 0.5

Clock = Callable[[], float]
NewId = Callable[[], str]


class RequestPipeline:
    """Turns compaction requests into outcomes, with bounded concurrency."""

    def __init__(
        self,
        settings: SummarizerSettings,
        summarizer: Summarizer,
        readers: SliceReaders,
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
            readers: Readers of `events`.
            producer_id: Written into every summary envelope.
            pause: The fault-injection pauses (no-ops in production).
            clock: ADK timestamps (float seconds) of new summary events.
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

    def dead_letter(
        self, record: ConsumerRecord, stage: RequestStage, reason: str
    ) -> RequestOutcome:
        """The outcome that sends `record` to `dead-letters` with `reason`."""
        logger.warning(
            "dead letter topic=%s partition=%d offset=%d stage=%s reason=%s",
            record.topic,
            record.partition,
            record.offset,
            stage,
            reason,
        )
        letter = request_dead_letter(
            reason=reason,
            stage=stage,
            topic=record.topic,
            partition=record.partition,
            offset=record.offset,
            key=record.key,
            value=record.value,
        )
        return RequestOutcome.writing(
            "dead_lettered", topic=self._dead_letters_topic, key=record.key, record=letter
        )

    async def outcome(self, request: CompactionRequest, record: ConsumerRecord) -> RequestOutcome:
        """Handle `request` (read at `record`) until it succeeds or fails for good."""
        range_polls = summarizer_failures = 0
        range_deadline = time.monotonic() + self._settings.summarizer_range_wait_s
        while True:
            try:
                async with self._slots:
                    return await self._attempt(request, record)
            except RangeNotStableError as exc:
                range_polls += 1
                if time.monotonic() >= range_deadline:
                    return self.dead_letter(record, "summarize", f"range not found: {exc}")
                delay_s = retry_delay_s(
                    range_polls, base_s=RANGE_POLL_BASE_S, max_s=RANGE_POLL_MAX_S
                )
                logger.debug(
                    "range not stable request=%s delay_s=%.3f", request.request_id, delay_s
                )
            except SummarizerError as exc:
                summarizer_failures += 1
                if not exc.retriable:
                    return self.dead_letter(record, "summarize", str(exc))
                if summarizer_failures >= self._settings.summarizer_retry_attempts:
                    reason = f"summarizer failed {summarizer_failures} times: {exc}"
                    return self.dead_letter(record, "summarize", reason)
                asked_s = exc.retry_after_s if isinstance(exc, SummarizerUnavailableError) else None
                delay_s = retry_delay_s(
                    summarizer_failures,
                    base_s=self._settings.summarizer_retry_base_s,
                    max_s=self._settings.summarizer_retry_max_s,
                    asked_s=asked_s,
                )
                logger.warning(
                    "summarizer retry request=%s session=%s failures=%d delay_s=%.3f error=%s",
                    request.request_id,
                    request.session_key,
                    summarizer_failures,
                    delay_s,
                    exc,
                )
            except RangeNotFoundError as exc:
                return self.dead_letter(record, "summarize", str(exc))
            await asyncio.sleep(delay_s)

    async def _attempt(self, request: CompactionRequest, record: ConsumerRecord) -> RequestOutcome:
        """One try: read, check, summarize.

        Raises:
            RangeNotStableError: Poll again.
            RangeNotFoundError: Dead-letter it.
            SummarizerError: Retry or dead-letter it, as its ``retriable`` says.
        """
        key = request.session_key.encode()
        try:
            session = await self._readers.read(key, request.start_offset)
        except OffsetOutOfRangeError as exc:
            raise RangeNotFoundError(
                request_id=request.request_id,
                problem=f"offset {request.start_offset} is below the log start",
            ) from exc
        status = request_status(request, session.records, session.stable_offset)
        match status:
            case Answered(summary_offset):
                logger.info(
                    "skipped request=%s session=%s reason=answered summary_offset=%d",
                    request.request_id,
                    request.session_key,
                    summary_offset,
                )
                return SKIPPED
            case Superseded(reason):
                logger.info(
                    "dropped request=%s session=%s reason=%s",
                    request.request_id,
                    request.session_key,
                    reason,
                )
                return SKIPPED
            case Summarize(window):
                pass
            case _:
                assert_never(status)
        await self._pause("render", request.request_id)
        await self._pause("summarize", request.request_id)
        result = await self._summarizer.summarize(window)
        if result is None:  # ADK appends nothing then; the projector may ask again
            return self.dead_letter(record, "summarize", "the summarizer returned no summary")
        envelope = summary_envelope(
            request,
            window,
            result,
            producer_id=self._producer_id,
            event_id=self._new_id(),
            invocation_id=self._new_id(),
            timestamp=self._clock(),
        )
        logger.debug(
            "summarized request=%s session=%s offsets=%d..%d partition=%d events=%d",
            request.request_id,
            request.session_key,
            request.start_offset,
            request.end_offset,
            session.partition,
            len(window),
        )
        return RequestOutcome.writing(
            "summarized", topic=self._events_topic, key=key, record=envelope
        )
