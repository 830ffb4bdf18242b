"""The `events` record that answers a compaction request. Pure: no I/O, no clock.

The summary event has ADK's shape (reference §7.3: author ``"user"``, no
content, ``actions.compaction`` spanning the window's first and last items)
and names the request in its custom metadata, which is how the projector
applies at most one summary per request. Its fresh id, invocation id and
timestamp are the shell's choice.

`empty_summary_envelope` is the same record with an empty text, built from
the request alone before the summarizer is called: if it cannot be built,
the request cannot be answered, and its size says how much text fits
(:mod:`summarizer_worker.summary_room`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from projections.compaction.render import summary_event
from projections.compaction.summary_request import with_summary_request_id
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.event import Event, UsageMetadata
from summarizer_worker.summarizers import SummaryResult

IDEMPOTENCY_PREFIX: Final = "summary:"


def summary_idempotency_key(request_id: str) -> str:
    """The summary envelope's idempotency key: ``summary:<request id>``."""
    return f"{IDEMPOTENCY_PREFIX}{request_id}"


def summary_envelope(
    request: CompactionRequest,
    window: Sequence[Event],
    result: SummaryResult,
    *,
    producer_id: str,
    event_id: str,
    invocation_id: str,
    timestamp: float,
) -> Envelope:
    """The envelope of the summary event that answers `request`.

    Example: a request ``r1`` over events at 100.0 .. 108.0 and the text
    ``"User asked ..."`` -> an event authored ``"user"`` with
    ``actions.compaction = {start 100.0, end 108.0, content "User asked ..."
    (role model)}``, ``custom_metadata.ctxstream.compaction_request_id = "r1"``,
    in an envelope of the request's session keyed ``summary:r1``.

    Args:
        request: The request being answered.
        window: The summarized window (seed first, if any): it sets the range.
        result: The summarizer's text and usage.
        producer_id: Who appends it (the worker).
        event_id: Fresh event id.
        invocation_id: Fresh invocation id.
        timestamp: Creation time, ADK float seconds.

    Raises:
        ValueError: `window` is empty (no summary is appended then), or the
            request id cannot key an envelope.
    """
    event = summary_event(
        window,
        result.text,
        event_id=event_id,
        invocation_id=invocation_id,
        timestamp=timestamp,
        usage_metadata=result.usage,
    )
    if event is None:
        raise ValueError(f"request {request.request_id}: an empty window has no summary")
    return Envelope(
        tenant=request.tenant,
        session_key=request.session_key,
        producer_id=producer_id,
        idempotency_key=summary_idempotency_key(request.request_id),
        event=with_summary_request_id(event, request.request_id),
    )


def empty_summary_envelope(
    request: CompactionRequest,
    *,
    producer_id: str,
    event_id: str,
    invocation_id: str,
    timestamp: float,
    usage: UsageMetadata | None = None,
) -> Envelope:
    """The envelope `summary_envelope` makes for `request`, with an empty summary text.

    Needs no window: a window that matches the request spans exactly its
    ``start_timestamp`` to ``end_timestamp`` (`request_window` checks it),
    which is all the summary event takes from it.

    Raises:
        ValueError: No valid envelope can answer `request` (its tenant does not
            own its session, its id cannot key an envelope).
    """
    range_ends = (
        Event(author="user", timestamp=request.start_timestamp),
        Event(author="user", timestamp=request.end_timestamp),
    )
    return summary_envelope(
        request,
        range_ends,
        # Not a summary: the template whose size leaves the room for one.
        SummaryResult(text="", usage=usage),
        producer_id=producer_id,
        event_id=event_id,
        invocation_id=invocation_id,
        timestamp=timestamp,
    )
