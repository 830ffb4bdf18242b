"""The projector's records to its topics, through faust's producer, as raw bytes.

Each send hands its record to the producer and returns the delivery future:
the caller awaits them all before it lets faust ack the records that caused
them (see :mod:`streams.faust_engine.projector`). Encoding is ours
(:mod:`schemas.codec`); what is sent and when is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemas.codec import encode
from schemas.compaction_request import CompactionRequest
from schemas.dead_letter import DeadLetter
from schemas.envelope import Envelope
from streams.batch import BatchOutcome
from streams.request_records import log_emission


@dataclass(frozen=True, slots=True)
class SentOutputs:
    """A batch's snapshots and dead letters, handed to the producer.

    Attributes:
        deliveries: Their delivery futures.
        snapshots: How many snapshots were sent.
        letters: The dead letters sent: the batch's, then its snapshots' failures.
    """

    deliveries: list[Any]
    snapshots: int
    letters: list[DeadLetter]


class OutputSender:
    """Sends requests, refusals, snapshots and dead letters to the deployment's topics."""

    def __init__(self, *, events: Any, requests: Any, snapshots: Any, dead_letters: Any) -> None:
        """Send through these faust topics (raw keys and values)."""
        self._events = events
        self._requests = requests
        self._snapshots = snapshots
        self._dead_letters = dead_letters

    async def send_request(self, request: CompactionRequest) -> Any:
        """Log `request` as sent and send it to `compaction-requests`, keyed by its session."""
        log_emission(request)
        return await self._requests.send(key=request.session_key.encode(), value=encode(request))

    async def send_refusal(
        self, request: CompactionRequest, refusal: Envelope, partition: int
    ) -> Any:
        """Append `refusal` of `request` to its session's `events` partition."""
        return await self._events.send(
            key=request.session_key.encode(), value=encode(refusal), partition=partition
        )

    async def send_outputs(self, outcome: BatchOutcome) -> SentOutputs:
        """Send the batch's snapshots (assembled here) and dead letters."""
        snapshots, failed = outcome.snapshot_records()
        deliveries: list[Any] = [
            await self._snapshots.send(key=key, value=value) for key, value in snapshots
        ]
        letters = [*outcome.dead_letters, *failed]
        for letter in letters:
            delivery = await self._dead_letters.send(key=letter.record_key(), value=encode(letter))
            deliveries.append(delivery)
        return SentOutputs(deliveries, len(snapshots), letters)
