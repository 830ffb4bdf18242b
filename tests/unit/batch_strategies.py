"""Multi-session logs for the projector's batch step, and the pipeline's answers to its requests.

The sessions themselves come from :func:`tests.support.strategies.sessions` (whole ADK
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

from schemas.envelope import Envelope
from schemas.keys import SessionKey
from streams.projector_settings import ProjectorSettings
from tests.support.events import answer_envelope, envelope, refusal_envelope
from tests.support.strategies import sessions

__all__ = ["KEYS", "PARTITIONS", "SETTINGS", "answer_envelope", "refusal_envelope", "session_logs"]

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


@st.composite
def session_logs(
    draw: st.DrawFn, max_sessions: int = 4, max_invocations: int = 4
) -> dict[SessionKey, list[Envelope]]:
    """Two to `max_sessions` sessions of :data:`KEYS`, each its records in stream order."""
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=2, max_size=max_sessions, unique=True))
    logs: dict[SessionKey, list[Envelope]] = {}
    for key in keys:
        records = draw(sessions(max_invocations, refusals=True))
        logs[key] = [envelope(key, record.envelope.event) for record in records]
    return logs
