"""Marks the pipeline writes: a summary's request id, a refusal of a request. Pure.

The summarizer worker writes the id of the request a summary answers into the
summary event it appends (ADK keeps ``custom_metadata`` as free-form JSON, so
the event stays ADK-shaped); whoever gives up on a request appends a refusal.
The readers of both marks, and their keys, are in :mod:`projections.event_kinds`.

Example: a summary and request ``"9f2c"`` -> the summary with
``{"customMetadata": {"ctxstream": {"compaction_request_id": "9f2c"}}}``.
"""

from __future__ import annotations

from typing import Any, Final

from projections.event_kinds import (
    METADATA_NAMESPACE,
    REFUSAL_AUTHOR,
    REFUSED_KEY,
    REQUEST_ID_KEY,
)
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.log_text import shown


def with_summary_request_id(event: Event, request_id: str) -> Event:
    """A copy of `event` that names `request_id`; other custom metadata is kept.

    Raises:
        ValueError: `request_id` is empty.
    """
    if not request_id:
        raise ValueError("a compaction request id must not be empty")
    metadata: dict[str, Any] = dict(event.custom_metadata or {})
    previous = metadata.get(METADATA_NAMESPACE)
    ours: dict[str, Any] = dict(previous) if isinstance(previous, dict) else {}
    ours[REQUEST_ID_KEY] = request_id
    metadata[METADATA_NAMESPACE] = ours
    return event.model_copy(update={"custom_metadata": metadata})


REFUSAL_REASON_KEY: Final = "reason"
#: Characters of a refusal's reason kept in the event.
MAX_REFUSAL_REASON_CHARS: Final = 500


def refusal_event(request_id: str, reason: str, *, event_id: str, timestamp: float) -> Event:
    """The event that refuses `request_id` for `reason` (cut to :data:`MAX_REFUSAL_REASON_CHARS`).

    Raises:
        ValueError: `request_id` is empty.
    """
    if not request_id:
        raise ValueError("a compaction request id must not be empty")
    ours = {REFUSED_KEY: request_id, REFUSAL_REASON_KEY: reason[:MAX_REFUSAL_REASON_CHARS]}
    return pipeline_event(ours, event_id=event_id, timestamp=timestamp)


def pipeline_event(ours: dict[str, Any], *, event_id: str, timestamp: float) -> Event:
    """A bookkeeping event of the pipeline: author ``ctxstream``, no content, `ours` as metadata.

    `ours` goes under the pipeline's custom-metadata namespace; such an event
    is never part of the context (a refusal, a fork record).
    """
    return Event(
        id=event_id,
        author=REFUSAL_AUTHOR,
        timestamp=timestamp,
        custom_metadata={METADATA_NAMESPACE: ours},
    )


#: Prefix of a refusal envelope's idempotency key.
REFUSAL_IDEMPOTENCY_PREFIX: Final = "refused:"


def refusal_envelope(
    request: CompactionRequest,
    reason: str,
    *,
    producer_id: str,
    event_id: str,
    timestamp: float,
) -> Envelope:
    """The envelope of the event that refuses `request` for `reason`.

    Written by whoever gives up on a request: the summarizer (a valid request
    it cannot summarize for good) and the projector (a request no summary
    answered after its last attempt). It is an event of the request's own
    session, keyed by it, which the projector folds to stop waiting and decide
    again over a new window.

    Example: request ``r1`` of ``acme/app/u/s`` refused with ``"HTTP 400"``
    -> an event authored ``"ctxstream"`` without content whose
    ``custom_metadata.ctxstream`` is ``{"compaction_refused": "r1", "reason":
    "HTTP 400"}``, in an envelope of ``acme/app/u/s`` keyed ``refused:r1``.

    Args:
        request: The request given up on (validated: its tenant owns its session).
        reason: Why; escaped to one line and cut to the event's limit.
        producer_id: Who appends it.
        event_id: Fresh event id.
        timestamp: Creation time, ADK float seconds.

    Raises:
        ValueError: The request cannot key an envelope (it was not validated).
    """
    # shown() adds "..." after a cut: keep the result within the event's limit.
    kept = shown(reason, MAX_REFUSAL_REASON_CHARS - 3) or "no reason given"
    return Envelope(
        tenant=request.tenant,
        session_key=request.session_key,
        producer_id=producer_id,
        idempotency_key=f"{REFUSAL_IDEMPOTENCY_PREFIX}{request.request_id}",
        event=refusal_event(request.request_id, kept, event_id=event_id, timestamp=timestamp),
    )
