"""The compaction request a session is waiting on. Pure value type.

Requests are not events of the session's topic: the projector records its
own decision by applying the request to the projection
(:func:`projections.fold.projection.note_request`), and the summary event that
answers it clears it. Nothing here reads a clock: a shell decides that a
request timed out by comparing offsets (the session's ``last_offset`` against
``decided_at_offset``) or its own timer, and then retries with ``attempt + 1``
or forgets the request.
"""

from __future__ import annotations

from dataclasses import dataclass

from schemas.compaction_request import CompactionRequest, CompactionTrigger
from schemas.keys import Offset


@dataclass(frozen=True, slots=True)
class InFlightRequest:
    """What the projection remembers of a request it is waiting on.

    Attributes:
        request_id: The deterministic request id the summary will carry.
        trigger: Which trigger decided it.
        start_offset: First offset the summarizer reads.
        end_offset: Last offset the summarizer reads.
        decided_at_offset: Offset of the event whose application decided it.
        attempt: 1 for the first emission, +1 per retry.
    """

    request_id: str
    trigger: CompactionTrigger
    start_offset: Offset
    end_offset: Offset
    decided_at_offset: Offset
    attempt: int

    @classmethod
    def of(cls, request: CompactionRequest) -> InFlightRequest:
        """The in-flight record of `request`."""
        return cls(
            request.request_id,
            request.trigger,
            request.start_offset,
            request.end_offset,
            request.decided_at_offset,
            request.attempt,
        )
