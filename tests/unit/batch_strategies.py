"""Multi-session logs for the projector's batch step, and the pipeline's answers to its requests.

The sessions themselves come from :func:`tests.strategies.sessions` (whole ADK
invocations, summaries, rewinds, producer retries, streaming chunks and
refusals), re-keyed to a few sessions of several tenants and apps, so the
per-tenant and per-app compaction configs and view agents of :data:`SETTINGS`
all take part. The answers are built the way the summarizer worker builds
them (:func:`summarizer_worker.summary_envelope.summary_envelope` over the
request's range ends, as :func:`~summarizer_worker.summary_envelope.empty_summary_envelope`
does) and the refusals the way the pipeline writes them
(:func:`projections.summary_request.refusal_event`).
"""

from __future__ import annotations

from typing import Final

from hypothesis import strategies as st

from projections.summary_request import refusal_event
from schemas.compaction_request import CompactionRequest
from schemas.envelope import Envelope
from schemas.event import Event
from schemas.keys import SessionKey, TenantId, parse_session_key
from streams.projector_settings import ProjectorSettings
from summarizer_worker.summarizers import SummaryResult
from summarizer_worker.summary_envelope import summary_envelope
from tests.strategies import sessions

PARTITIONS: Final = 2
"""Partitions of the `events` topic: the keys below share them."""

KEYS: Final = tuple(
    SessionKey(key)
    for key in (
        "acme/support/u1/s1",
        "acme/support/u2/s2",
        "acme/sales/u1/s3",
        "beta/support/u3/s4",
        "gamma/support/u4/s5",
        "gamma/billing/u5/s6",
    )
)

SETTINGS: Final = ProjectorSettings(
    # Small triggers, so that decisions happen often: the generated events report
    # 10 to 5,000 prompt tokens on about half of the model responses.
    compaction={
        "compaction_interval": 2,
        "overlap_size": 1,
        "token_threshold": 2_000,
        "event_retention_size": 2,
    },
    compaction_overrides={
        "beta": {"compaction_interval": 3, "overlap_size": 0},  # sliding window only
        "gamma/support": {"token_threshold": 1_000, "event_retention_size": 1},  # tokens only
    },
    view_agent_names={"acme/support": "root", "beta/support": "helper"},
)


def envelope_of(key: SessionKey, event: Event) -> Envelope:
    """`event` as a record of session `key`, as an agent runner appends it."""
    return Envelope(
        tenant=TenantId(parse_session_key(key).tenant),
        session_key=key,
        producer_id="agent-runner",
        idempotency_key=f"{key}/{event.id}",
        event=event,
    )


@st.composite
def session_logs(
    draw: st.DrawFn, max_sessions: int = 4, max_invocations: int = 4
) -> dict[SessionKey, list[Envelope]]:
    """Two to `max_sessions` sessions of :data:`KEYS`, each its records in stream order."""
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=2, max_size=max_sessions, unique=True))
    logs: dict[SessionKey, list[Envelope]] = {}
    for key in keys:
        records = draw(sessions(max_invocations, refusals=True))
        logs[key] = [envelope_of(key, record.envelope.event) for record in records]
    return logs


def answer_envelope(request: CompactionRequest, serial: int, timestamp: float) -> Envelope:
    """The summary the summarizer worker appends to answer `request`."""
    range_ends = (
        Event(author="user", timestamp=request.start_timestamp),
        Event(author="user", timestamp=request.end_timestamp),
    )
    return summary_envelope(
        request,
        range_ends,
        SummaryResult(text=f"summary {serial} of {len(request.event_offsets)} events"),
        producer_id="summarizer",
        event_id=f"summary-{serial}",
        invocation_id=f"cmp-summary-{serial}",
        timestamp=timestamp,
    )


def refusal_envelope(request: CompactionRequest, serial: int, timestamp: float) -> Envelope:
    """The refusal the pipeline appends when it gives `request` up."""
    return Envelope(
        tenant=request.tenant,
        session_key=request.session_key,
        producer_id="projector",
        idempotency_key=f"refusal:{request.request_id}",
        event=refusal_event(
            request.request_id, "gave up", event_id=f"refusal-{serial}", timestamp=timestamp
        ),
    )
