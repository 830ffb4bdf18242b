"""The compaction-request records both engines write and read back, one definition each.

The log line of an emitted request, a stored in-flight request read back from
the table (``r:``), and the refusal appended to `events` for a request no
summary answered in time (through the core's one refusal envelope).
"""

from __future__ import annotations

import logging
import uuid

from projections.compaction.summary_request import refusal_envelope
from schemas.codec import decode_compaction_request
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.keys import SessionKey
from schemas.log_text import shown

logger = logging.getLogger(__name__)


def log_emission(request: CompactionRequest) -> None:
    """Log `request` as sent (at INFO): its session, trigger, offsets, id and attempt."""
    logger.info(
        "compaction request session=%s trigger=%s offsets=%d..%d request=%s attempt=%d",
        shown(request.session_key),
        request.trigger,
        request.start_offset,
        request.end_offset,
        request.request_id,
        request.attempt,
    )


def stored_request(session_key: SessionKey, value: bytes) -> CompactionRequest | None:
    """The in-flight request stored for `session_key`, or None (logged) if it no longer decodes.

    A stored value that no longer decodes never stops a worker: its session is
    quarantined when it is next touched.
    """
    try:
        return decode_compaction_request(value)
    except Exception as exc:  # noqa: BLE001 - one stored value never stops the worker
        logger.error(  # noqa: TRY400 - the message says it; no traceback
            "stored request of session=%s does not decode: %s",
            shown(session_key),
            shown(str(exc)),
        )
        return None


def timed_out_refusal(
    request: CompactionRequest, *, app_id: str, timeout_s: float, now: float
) -> Envelope:
    """The refusal of `request` after its last attempt timed out, keyed by its session (logged)."""
    reason = f"no summary after {request.attempt} attempt(s), {timeout_s:g} s apart"
    logger.warning(
        "compaction request refused session=%s request=%s: %s",
        shown(request.session_key),
        shown(request.request_id),
        reason,
    )
    return refusal_envelope(
        request,
        reason,
        producer_id=f"projector:{app_id}"[:256],
        event_id=uuid.uuid4().hex,
        timestamp=now,
    )
