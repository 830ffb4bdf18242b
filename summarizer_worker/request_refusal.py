"""The `events` record that refuses a compaction request the worker gave up on. Pure.

Without it a refused request would stay in flight in the projector forever:
the session never compacts again and the request is re-sent with no cap
(review M2). The refusal is an event of the request's own session (keyed by
it, so it lands in the session's partition after the range), which the
projector folds to stop waiting and decide again over a new window. It is
written only for a request whose tenant owns its session: a request that
could not name its session legitimately gets a dead letter and nothing else.
"""

from __future__ import annotations

from typing import Final

from projections.summary_request import MAX_REFUSAL_REASON_CHARS, refusal_event
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.log_text import shown

IDEMPOTENCY_PREFIX: Final = "refused:"


def refusal_idempotency_key(request_id: str) -> str:
    """The refusal envelope's idempotency key: ``refused:<request id>``."""
    return f"{IDEMPOTENCY_PREFIX}{request_id}"


def refusal_envelope(
    request: CompactionRequest,
    reason: str,
    *,
    producer_id: str,
    event_id: str,
    timestamp: float,
) -> Envelope:
    """The envelope of the event that refuses `request` for `reason`.

    Example: request ``r1`` of ``acme/app/u/s`` refused with ``"HTTP 400"``
    -> an event authored ``"ctxstream"`` without content whose
    ``custom_metadata.ctxstream`` is ``{"compaction_refused": "r1", "reason":
    "HTTP 400"}``, in an envelope of ``acme/app/u/s`` keyed ``refused:r1``.

    Args:
        request: The request given up on (validated: its tenant owns its session).
        reason: Why; escaped to one line and cut to the event's limit.
        producer_id: Who appends it (the worker).
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
        idempotency_key=refusal_idempotency_key(request.request_id),
        event=refusal_event(request.request_id, kept, event_id=event_id, timestamp=timestamp),
    )
