"""The fold benchmark's batches: the workload, with the summarizer's answers joining them. Pure.

No broker and no worker: :class:`OfflineFeed` cuts the workload's records into
batches as the projector would fetch them (each record on its key's
partition, offsets counted per partition) and, when told which requests a
batch decided (:meth:`OfflineFeed.answer`), puts the answer the summarizer
worker would write at the head of the next batch: the request's window read
back from the session's records (:func:`summarizer_worker.request_window.request_window`),
summarized by the worker's extractive summarizer, in the envelope the worker
writes (:func:`summarizer_worker.summary_envelope.summary_envelope`), so the
fold decides requests and folds their summaries as the pipeline does.
:meth:`OfflineFeed.complete` serves a session's history to the batch step
when its projection released records a decision needs, as the engines read
it from `events` (:mod:`streams.session_history`).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from schemas.codec import decode_envelope, encode
from schemas.compaction_request import CompactionRequest
from schemas.kafka.partitioning import session_partition
from schemas.keys import Offset
from schemas.logged_event import LoggedEvent
from streams.batch import BatchOutcome, BatchProjector, SourceRecord
from streams.batch.stored import TableReader
from summarizer_worker.extractive import extractive_summary
from summarizer_worker.request_window import request_window
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_envelope import summary_envelope

PRODUCER_ID: Final = "bench-summarizer"
#: A summary's timestamp is this long after the newest event of its session: before the
#: next one (a second apart), as the worker's clock puts it between the two.
SUMMARY_DELAY_S: Final = 0.001


def summary_record(
    request: CompactionRequest, records: Mapping[Offset, LoggedEvent], *, timestamp: float
) -> bytes:
    """The summary event answering `request`, encoded, as the extractive worker writes it.

    Args:
        request: The request to answer.
        records: The session's records, by offset (the window's at least).
        timestamp: The summary event's timestamp.

    Raises:
        RangeNotFoundError: The records do not hold the request's window.
        ValueError: The window is empty.
    """
    window = request_window(request, records)
    text = extractive_summary(window)
    if text is None:
        raise ValueError(f"request {request.request_id}: an empty window has no summary")
    envelope = summary_envelope(
        request,
        window,
        SummaryResult(text=text),
        producer_id=PRODUCER_ID,
        event_id=f"summary-{request.request_id}",
        invocation_id=f"summary-{request.request_id}",
        timestamp=timestamp,
    )
    return encode(envelope)


class OfflineFeed:
    """The records of `records` in batches of `batch_size`, answers first in the next batch."""

    def __init__(
        self,
        records: Iterable[tuple[bytes, bytes]],
        *,
        topic: str,
        partitions: int,
        batch_size: int,
    ) -> None:
        """A feed of `records` (key, value) on `topic`'s `partitions`."""
        self._records = iter(records)
        self._topic = topic
        self._partitions = partitions
        self._batch_size = batch_size
        self._answers: list[tuple[bytes, bytes]] = []
        self._home: dict[bytes, int] = {}
        self._next_offset: defaultdict[int, int] = defaultdict(int)
        self._values: defaultdict[bytes, dict[int, bytes]] = defaultdict(dict)
        self._newest: dict[bytes, int] = {}
        self.summaries = 0
        """Answers made so far."""
        self.histories = 0
        """Session histories served so far."""

    def batches(self) -> Iterator[list[SourceRecord]]:
        """The batches, until the records and the answers are all out.

        Answers told after a batch lead the next one; it is then filled up
        with records to `batch_size` (a batch of answers only, if more).
        """
        while True:
            batch = [self._place(key, value) for key, value in self._answers]
            self._answers = []
            room = max(0, self._batch_size - len(batch))
            batch.extend(
                self._place(key, value) for key, value in itertools.islice(self._records, room)
            )
            if not batch:
                return
            yield batch

    def answer(self, requests: Iterable[CompactionRequest]) -> None:
        """Make the answers to `requests`, for the next batch.

        Raises:
            RangeNotFoundError: A request names records the feed did not hand out.
        """
        for request in requests:
            key = request.session_key.encode()
            values = self._values[key]
            records = {
                Offset(offset): LoggedEvent(Offset(offset), decode_envelope(values[offset]))
                for offset in request.event_offsets
                if offset in values
            }
            newest = decode_envelope(values[self._newest[key]]).event.timestamp
            self._answers.append(
                (key, summary_record(request, records, timestamp=newest + SUMMARY_DELAY_S))
            )
            self.summaries += 1

    def complete(self, projector: BatchProjector, outcome: BatchOutcome, read: TableReader) -> None:
        """Fold the sessions `outcome` held back for their histories, as the engines do."""
        while outcome.history_needed:
            needs, outcome.history_needed = outcome.history_needed, []
            for need in needs:
                key = need.session_key.encode()
                partition = self._home[key]
                history = [
                    SourceRecord(self._topic, partition, offset, key, value)
                    for offset, value in self._values[key].items()
                    if need.first_offset <= offset < need.end_offset
                ]
                self.histories += 1
                projector.project_history(need, history, read, outcome)

    def _place(self, key: bytes, value: bytes) -> SourceRecord:
        """`value` on its key's partition, at that partition's next offset."""
        partition = self._home.get(key)
        if partition is None:
            partition = self._home[key] = session_partition(key, self._partitions)
        offset = self._next_offset[partition]
        self._next_offset[partition] = offset + 1
        self._values[key][offset] = value
        self._newest[key] = offset
        return SourceRecord(self._topic, partition, offset, key, value)
