"""The refusal a projector appends to `events` for a request no summary answered in time."""

from __future__ import annotations

import logging
import uuid

from projections.summary_request import refusal_event
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.log_text import shown

logger = logging.getLogger(__name__)


def refusal_envelope(
    request: CompactionRequest, *, app_id: str, timeout_s: float, now: float
) -> Envelope:
    """The refusal of `request` after its last attempt, keyed by its session (logged).

    When the projector folds it, the session stops waiting and decides again
    over a new window (:func:`projections.summary_request.refused_request_id`).
    """
    reason = f"no summary after {request.attempt} attempt(s), {timeout_s:g} s apart"
    logger.warning(
        "compaction request refused session=%s request=%s: %s",
        shown(request.session_key),
        shown(request.request_id),
        reason,
    )
    return Envelope(
        tenant=request.tenant,
        session_key=request.session_key,
        producer_id=f"projector:{app_id}"[:256],
        idempotency_key=f"refused:{request.request_id}",
        event=refusal_event(request.request_id, reason, event_id=uuid.uuid4().hex, timestamp=now),
    )
