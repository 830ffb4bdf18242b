"""What a worker's refusal of a read means to the client: route again, or raise. Pure but logs.

A ``not-owner`` refusal is a routing failure (the client asks elsewhere): its
reason comes back as a string. Every other refusal raises the project's error
of it (``timeout`` -> :class:`~ctxstream.errors.ReadTimeoutError`, ``busy`` ->
:class:`~ctxstream.errors.OverBudgetError`, ...). Reasons name no worker's
address (they reach the HTTP API's callers), nor a partition's position; the
log names the worker.
"""

from __future__ import annotations

import logging

from ctxstream.errors import (
    ContextReadError,
    InvocationNotFoundError,
    OverBudgetError,
    ReadTimeoutError,
    SessionNotFoundError,
    SummaryNotFoundError,
)
from schemas.keys import SessionKey
from schemas.log_text import shown
from schemas.read_protocol import ExpandQuery, ProjectionQuery, ReadRefusal, RewindQuery

logger = logging.getLogger(__name__)


def routing_failure(
    session_key: SessionKey, address: str, refusal: ReadRefusal, query: ProjectionQuery
) -> str:
    """The failure of a routing refusal; raises for every other refusal.

    Raises:
        ReadTimeoutError: The worker had not folded the awaited offset in time.
        InvocationNotFoundError: A rewind's invocation is not stored.
        SessionNotFoundError: The session has no records.
        SummaryNotFoundError: An expansion's summary is not the session's.
        OverBudgetError: The worker is busy; retry after the time it names.
        ContextReadError: The credential or the read was refused.
    """
    match refusal.error:
        case "not-owner":
            logger.info(
                "read refused session=%s partition=%s worker=%s owner=%s",
                shown(session_key),
                refusal.partition,
                shown(address),
                shown(refusal.owner),
            )
            return "the worker asked no longer owns the partition"
        case "timeout":
            name, offset = query.awaited() or ("the partition", None)
            waited = name if offset is None else f"{name} {offset}"
            logger.info(
                "read timed out session=%s worker=%s reason=%s",
                shown(session_key),
                shown(address),
                shown(refusal.reason, 300),
            )
            raise ReadTimeoutError(
                session_key=session_key,
                reason=f"{waited} was not reached within {query.timeout_s:.3g} s "
                "(the projector is behind)",
            )
        case "invocation-not-found":
            raise InvocationNotFoundError(
                session_key=session_key,
                invocation_id=(
                    query.before_invocation_id if isinstance(query, RewindQuery) else ""
                ),
                reason=refusal.reason,
            )
        case "session-not-found":
            raise SessionNotFoundError(session_key=session_key, reason=refusal.reason)
        case "summary-not-found":
            raise SummaryNotFoundError(
                session_key=session_key,
                summary_event_id=query.summary_id if isinstance(query, ExpandQuery) else "",
                reason=refusal.reason,
            )
        case "busy":
            raise OverBudgetError(
                refusal.retry_after_s or 1,
                f"read of session {session_key!r}: {refusal.reason}",
                budget="projector-reads",
            )
        case "unauthorized":
            logger.error("read credential refused worker=%s", shown(address))
            raise ContextReadError(
                session_key=session_key,
                reason="the projector refused this process's read credential: give every "
                "process of the deployment the same CTXSTREAM_READ_SECRET (or "
                "CTXSTREAM_READ_SECRET_FILE)",
            )
        case "invalid-session-key" | "invalid-parameter" | "unreadable":
            raise ContextReadError(
                session_key=session_key,
                reason=f"the projector refused the read ({refusal.error}): {refusal.reason}",
            )
